/**
 * The CPython interpreter in this process, and JS handles of Python
 * objects.
 *
 * One interpreter per process, started by the first `loadPython()` and
 * never finalized (release callbacks of imported data may run until exit).
 * The JS thread holds the GIL only inside each shim call.
 *
 * Ownership: a `PyObject` holds one strong reference, dropped by
 * `dispose()` (or `using`); a FinalizationRegistry drops it for handles
 * that were never disposed (a safety net: the decref runs on the JS thread
 * with the GIL).
 */
import { type Pointer } from "bun:ffi";
import { InvalidArgumentError, ReleasedError, Status } from "../core/errors.ts";
import { internalConstruction } from "../core/args.ts";

/** Only the bridge's modules construct Python and PyObject. */
export const pythonToken = Symbol("Python");
import { bootstrapCode } from "./bootstrap.ts";
import { PythonError, PythonUnavailableError } from "./errors.ts";
import { locatePython, type LocateOptions } from "./locate.ts";
import { ErrorText, cString, libraryForShim, openShim, readShimCounters, shimPath, type Shim, type ShimCounters } from "./shim.ts";
import { nativeArray, nativeArrayOf } from "../core/ffi/native_arrays.ts";

/** Options of `loadPython`: where libpython is, and extra `sys.path` folders. */
export type LoadPythonOptions = LocateOptions & {
  /** Folders put at the front of sys.path (e.g. a pip `--target` folder). */
  sysPath?: string[];
};

const collected = new FinalizationRegistry<{ shim: Shim; address: number }>(({ shim, address }) => shim.abdpy_decref(address as Pointer));

/** A strong reference to a Python object. */
export class PyObject implements Disposable {
  #address: number;
  readonly #python: Python;

  /** Not for users (use Python.eval, fromPython, toPython): adopts one new reference. */
  constructor(token: symbol, python: Python, address: number) {
    internalConstruction("PyObject", token, pythonToken, "use Python.eval, or fromPython's and toPython's results");
    this.#python = python;
    this.#address = address;
    collected.register(this, { shim: shimOf(python), address }, this);
  }

  /** The `PyObject*`; valid until `dispose()`. */
  get address(): number {
    if (this.#address === 0) throw new ReleasedError(Status.released, "this Python object handle was disposed");
    return this.#address;
  }

  /** True once the reference was dropped (`dispose()`); the object is then unusable. */
  get disposed(): boolean {
    return this.#address === 0;
  }

  /** The interpreter this object belongs to. */
  get python(): Python {
    return this.#python;
  }

  /** `str(obj)`. */
  toString(): string {
    // The whole text, however long: asked again with room for it when
    // the first buffer is too small (str() may change between calls, so
    // until it fits).
    const shim = shimOf(this.#python);
    const address = this.address as Pointer;
    let bytes: Uint8Array = new ErrorText().bytes;
    for (;;) {
      const size = Number(shim.abdpy_str(address, bytes, bytes.length));
      if (size < 0) {
        const end = bytes.indexOf(0);
        throw new PythonError("str() failed", new TextDecoder().decode(bytes.subarray(0, end < 0 ? bytes.length : end)));
      }
      if (size <= bytes.length) return new TextDecoder().decode(bytes.subarray(0, size));
      bytes = nativeArray(Uint8Array, size);
    }
  }

  /** `obj.name`. */
  attr(name: string): PyObject {
    return this.#python.eval("_abd_obj." + checkIdentifier(name), { _abd_obj: this });
  }

  /** `obj(*args)`. */
  call(...args: PyObject[]): PyObject {
    const shim = shimOf(this.#python);
    const addresses = nativeArrayOf(BigUint64Array, args.map((a) => BigInt(a.address)));
    const error = new ErrorText();
    const result = shim.abdpy_call(this.address as Pointer, addresses.length > 0 ? addresses : null, args.length, error.bytes, error.bytes.length);
    if (result === null) throw new PythonError("calling a Python object failed", error.text);
    return new PyObject(pythonToken, this.#python, result);
  }

  /** Drops the reference. Idempotent. */
  dispose(): void {
    if (this.#address === 0) return;
    collected.unregister(this);
    const address = this.#address;
    this.#address = 0;
    shimOf(this.#python).abdpy_decref(address as Pointer);
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}

function checkIdentifier(name: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new InvalidArgumentError(Status.invalid_argument, `"${name}" is not a Python identifier`);
  return name;
}

/** Values bound as globals of `__main__` for one `exec`/`eval` call. */
export type PythonVariables = Record<string, PyObject>;

/** Set by Python's static block: the interpreter's shim. */
let shimOf: (python: Python) => Shim;

/** Set by Python's static block: its private constructor. */
let startPython: (shim: Shim, libpython: string, via: string) => Python;

/** The shim library `python` runs through (for this layer's modules). */
export function pythonShim(python: Python): Shim {
  return shimOf(python);
}

/** The interpreter: run code in `__main__`, hold objects. */
export class Python {
  /** The libpython file loaded, and how it was found. */
  readonly libpython: string;
  /** How the libpython file was found (option, environment variable, or the python3 on PATH). */
  readonly via: string;
  readonly #shim: Shim;
  /** `__main__`'s namespace (a borrowed-forever reference). */
  readonly #main: number;

  /** `loadPython()` makes it. */
  private constructor(token: symbol, shim: Shim, libpython: string, via: string) {
    internalConstruction("Python", token, pythonToken, "use loadPython()");
    this.#shim = shim;
    this.libpython = libpython;
    this.via = via;
    const main = shim.abdpy_main_dict();
    if (main === null) throw new PythonUnavailableError("Python has no __main__ module", [libpython]);
    this.#main = main;
  }

  // The shim is this layer's (python/exchange.ts reads it through
  // `pythonShim`), not a member of the public class; `loadPython` is the
  // one maker.
  static {
    shimOf = (python) => python.#shim;
    startPython = (shim, libpython, via) => new Python(pythonToken, shim, libpython, via);
  }

  #withVariables<T>(variables: PythonVariables, run: () => T): T {
    const names = Object.keys(variables);
    const error = new ErrorText();
    for (const name of names) {
      checkIdentifier(name);
      const value = variables[name];
      if (!(value instanceof PyObject)) throw new InvalidArgumentError(Status.invalid_argument, `variable "${name}" is not a PyObject (convert JS data with toPython first)`);
      if (this.#shim.abdpy_dict_set(this.#main as Pointer, cString(name), value.address as Pointer, error.bytes, error.bytes.length) !== 0) {
        throw new PythonError(`binding "${name}"`, error.text);
      }
    }
    try {
      return run();
    } finally {
      // Unbound again, so __main__ keeps no reference to what was passed.
      for (const name of names) this.#shim.abdpy_dict_set(this.#main as Pointer, cString(name), null, error.bytes, error.bytes.length);
    }
  }

  #run(code: string, evaluate: boolean): number {
    if (typeof code !== "string") throw new InvalidArgumentError(Status.invalid_argument, `Python code must be a string, got ${typeof code}`);
    const error = new ErrorText();
    const result = this.#shim.abdpy_run(cString(code), evaluate ? 1 : 0, this.#main as Pointer, error.bytes, error.bytes.length);
    if (result === null) throw new PythonError(evaluate ? "Python eval failed" : "Python exec failed", error.text);
    return result;
  }

  /** Runs statements in `__main__` (with `variables` bound meanwhile). */
  exec(code: string, variables: PythonVariables = {}): void {
    this.#withVariables(variables, () => this.#shim.abdpy_decref(this.#run(code, false) as Pointer));
  }

  /** Evaluates an expression in `__main__`; its value as a new handle. */
  eval(expression: string, variables: PythonVariables = {}): PyObject {
    return this.#withVariables(variables, () => new PyObject(pythonToken, this, this.#run(expression, true)));
  }

  /** `import name` (the module object). */
  import(name: string): PyObject {
    if (!/^[A-Za-z_][A-Za-z0-9_.]*$/.test(name)) throw new InvalidArgumentError(Status.invalid_argument, `"${name}" is not a module name`);
    return this.eval(`__import__("importlib").import_module("${name}")`);
  }

  /** Puts `folders` at the front of sys.path (those not there yet). */
  addSysPath(folders: string[]): void {
    if (folders.length === 0) return;
    this.exec(`import sys\nfor _abd_p in reversed(${JSON.stringify(folders)}):\n    if _abd_p not in sys.path: sys.path.insert(0, _abd_p)\ndel _abd_p`);
  }

  /** The shim's counters: capsules made, freed and released by their
   * destructor, live sources and streams, imports, producer releases run
   * under the GIL. */
  counters(): ShimCounters {
    return readShimCounters(this.#shim);
  }
}

let python: Python | null = null;

/**
 * Starts (once) and returns the interpreter. libpython is found as
 * `locatePython` says; the sys.path of the Python that was asked is added
 * (so its packages and virtual environment are seen), then
 * `options.sysPath`. Throws PythonUnavailableError saying what was tried.
 * Later calls return the same interpreter (adding `options.sysPath`).
 */
export function loadPython(options: LoadPythonOptions = {}): Python {
  if (python) {
    python.addSysPath(options.sysPath ?? []);
    return python;
  }
  const located = locatePython(options);
  const shim = openShim();
  const error = new ErrorText();
  if (shim.abdpy_load(cString(located.libpython), cString(libraryForShim()), error.bytes, error.bytes.length) !== 0) {
    throw new PythonUnavailableError(`could not load ${located.libpython} (found through ${located.via}): ${error.text}`, [located.libpython, shimPath()]);
  }
  if (shim.abdpy_bootstrap(cString(bootstrapCode), error.bytes, error.bytes.length) !== 0) {
    throw new PythonError("the bun_arrow_device bootstrap failed", error.text);
  }
  const started = startPython(shim, located.libpython, located.via);
  started.addSysPath([...(options.sysPath ?? []), ...located.sysPath]);
  python = started;
  return started;
}

/** The interpreter if `loadPython` ran, else null. */
export function loadedPython(): Python | null {
  return python;
}
