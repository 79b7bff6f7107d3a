/**
 * ADBC drivers: finding one (a path, or a name resolved through ADBC driver
 * manifests), loading it through the native library (zig/adbc/driver.zig:
 * dlopen, the entry point at revision 1.1.0 else 1.0.0, the function table
 * checked), and calling its functions (zig/adbc/call.zig: the object's
 * guard, then the call). Every AdbcError a call returns becomes an
 * `AdbcError` (ts/core/errors.ts) after the native side read and released
 * it once.
 *
 * Ownership: a `Driver` is held by the Databases made with it (`retain` /
 * `release`); the last release calls the driver's own release.
 */
import { ptr, read, toArrayBuffer, type Pointer } from "bun:ffi";
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { isAbsolute, join } from "node:path";
import { adbcStructLayouts, AdbcVersion, type AdbcDriverField } from "../core/abi/adbc_layout.ts";
import { argumentError } from "../core/args.ts";
import { AdbcError, AdbcStatus, InvalidArgumentError, Status, errorFor } from "../core/errors.ts";
import { lastError, native } from "../core/ffi/library.ts";
import { JsWorkTag, onJsWork } from "../native/js_queue.ts";
import { nativeArray } from "../core/ffi/native_arrays.ts";

/** Arguments of a driver call: addresses and integers (exact to 2^53). */
const words = nativeArray(Float64Array, 9);
void words.buffer;
const wordsAddress = ptr(words);
const sizeOut = nativeArray(Float64Array, 1);
void sizeOut.buffer;
const sizeOutAddress = ptr(sizeOut);

/** A NUL-terminated UTF-8 copy of `text` with a stable address; the caller
 * keeps the array reachable for as long as C may read it. */
export function cString(fn: string, param: string, text: unknown): Uint8Array {
  if (typeof text !== "string") throw argumentError(fn, param, "a string", text);
  if (text.includes("\0")) throw argumentError(fn, param, "a string without NUL characters", text);
  const bytes = new TextEncoder().encode(`${text}\0`);
  void bytes.buffer;
  return bytes;
}

/** The address of `bytes` (which must stay reachable during the call). */
export function addressOf(bytes: Uint8Array): number {
  return bytes.byteLength === 0 ? 0 : ptr(bytes);
}

const versionNames: Record<number, string> = { [AdbcVersion.v1_0_0]: "1.0.0", [AdbcVersion.v1_1_0]: "1.1.0" };

/** A loaded ADBC driver: its function table and the revision it accepted. */
export class Driver {
  /** The native Driver (its AdbcDriver table at offset 0). */
  readonly address: Pointer;
  /** "1.1.0" or "1.0.0". */
  readonly version: string;
  private readonly functions = new Map<AdbcDriverField, Pointer>();
  private holders = 1;

  /** Loads the driver; with `loaded`, takes over a hold on that native
   * driver (one another JS thread loaded, held by abd_adbc_object_borrow). */
  constructor(readonly path: string, readonly entrypoint: string | null, loaded: Pointer | null = null) {
    if (loaded !== null) {
      this.address = loaded;
    } else {
      const pathBytes = cString("Database", "driver", path);
      const entryBytes = entrypoint === null ? null : cString("Database", "entrypoint", entrypoint);
      const out = nativeArray(Float64Array, 1);
      const status = native.abd_adbc_driver_load(pathBytes, entryBytes, out);
      if (status !== 0) throw errorFor(status, lastError());
      this.address = read.ptr(ptr(out), 0) as Pointer;
    }
    this.version = versionNames[native.abd_adbc_driver_version(this.address)] ?? "1.0.0";
    const fields = adbcStructLayouts.AdbcDriver.fields;
    for (const name of Object.keys(fields) as AdbcDriverField[]) {
      if (name === "private_data" || name === "private_manager") continue;
      const fn = read.ptr(this.address, fields[name]);
      if (fn) this.functions.set(name, fn as Pointer);
    }
  }

  /** True when the driver provides `name`. */
  has(name: AdbcDriverField): boolean {
    return this.functions.has(name);
  }

  retain(): void {
    this.holders++;
  }

  /** Drops one holder; the last drops this thread's hold on the native
   * driver (the driver's release runs after every thread's). */
  release(): void {
    if (--this.holders === 0) native.abd_adbc_driver_unload(this.address);
  }

  /** Calls `name` with `args` under `guard` (0: none). Returns its
   * AdbcStatusCode when it is one of `accept`; throws an AdbcError for
   * any other failure (from `error`, which is left reset), an
   * AdbcError "not_implemented" when the driver lacks the function, and a
   * WrongThreadError when the guard is held. */
  call(guard: Pointer | null, name: AdbcDriverField, args: readonly number[], error: Pointer, accept: readonly number[] = []): number {
    const fn = this.functions.get(name);
    if (fn === undefined) return this.missing(name, accept);
    for (let i = 0; i < args.length; i++) words[i] = args[i]!;
    const status = native.abd_adbc_call(guard, fn, wordsAddress, args.length);
    return this.outcome(name, status, error, accept);
  }

  /** `call` of a Cancel function: without the guard (a call of the
   * connection `lock` may be running), never after the connection was
   * closed (then a ReleasedError). */
  callCancel(lock: Pointer, name: "ConnectionCancel" | "StatementCancel", handle: Pointer, error: Pointer): void {
    const fn = this.functions.get(name);
    if (fn === undefined) {
      this.missing(name, []);
      return;
    }
    words[0] = handle;
    words[1] = error;
    this.outcome(name, native.abd_adbc_call_cancel(lock, fn, wordsAddress, 2), error, []);
  }

  /** `call` for the Set*OptionDouble shape. */
  callDouble(guard: Pointer, name: AdbcDriverField, handle: Pointer, key: Uint8Array, value: number, error: Pointer): void {
    const fn = this.functions.get(name);
    if (fn === undefined) {
      this.missing(name, []);
      return;
    }
    this.outcome(name, native.abd_adbc_call_double(guard, fn, handle, key, value, error), error, []);
  }

  /** Starts `name` on a thread of its own (zig/adbc/call.zig); the promise
   * settles as `call` returns or throws. */
  callAsync(guard: Pointer, name: AdbcDriverField, args: readonly number[], error: Pointer): Promise<number> {
    const fn = this.functions.get(name);
    if (fn === undefined) return Promise.reject(this.notImplemented(name));
    for (let i = 0; i < args.length; i++) words[i] = args[i]!;
    const key = nextKey++;
    const job = native.abd_adbc_call_async(guard, fn, wordsAddress, args.length, key);
    if (!job) return Promise.reject(errorFor(native.abd_last_status(), lastError()));
    // A timer keeps the event loop alive while the native thread runs.
    const keepAlive = setTimeout(() => {}, 2 ** 31 - 1);
    return new Promise<number>((resolve, reject) => {
      pending.set(key, (status) => {
        clearTimeout(keepAlive);
        try {
          resolve(this.outcome(name, status, error, []));
        } catch (failure) {
          reject(failure);
        }
      });
    });
  }

  private missing(name: AdbcDriverField, accept: readonly number[]): number {
    if (accept.includes(AdbcStatus.not_implemented)) return AdbcStatus.not_implemented;
    throw this.notImplemented(name);
  }

  private notImplemented(name: AdbcDriverField): AdbcError {
    return new AdbcError(AdbcStatus.not_implemented, `${name}: the ADBC driver ${this.path} does not implement it (revision ${this.version})`, null, null, new Map());
  }

  private outcome(name: AdbcDriverField, status: number, error: Pointer, accept: readonly number[]): number {
    if (status === -1) throw errorFor(native.abd_last_status(), lastError());
    if (status === 0) return 0;
    const failure = this.takeError(name, status, error);
    if (accept.includes(status)) return status;
    throw failure;
  }

  /** Reads and releases the AdbcError at `error` (the driver filled it for
   * a call that returned `status`). */
  takeError(name: string, status: number, error: Pointer): AdbcError {
    const blob = native.abd_adbc_error_take(this.address, error, sizeOutAddress);
    return decodeError(name, status, blob, sizeOut[0]!);
  }
}

/** The AdbcError of `status` from an encoded error (zig/adbc/call.zig
 * encodeError) at `blob` (`size` bytes, freed here; null when memory was
 * short); `name` is the ADBC function that failed. */
export function decodeError(name: string, status: number, blob: Pointer | null, size: number): AdbcError {
  if (!blob) return new AdbcError(status, `${name} failed with ADBC status ${status}`, null, null, new Map());
  const bytes = new Uint8Array(toArrayBuffer(blob, 0, size).slice(0));
  native.abd_free(blob);
  const view = new DataView(bytes.buffer);
  const decoder = new TextDecoder();
  let at = 0;
  const chunk = (): Uint8Array => {
    const n = view.getUint32(at, true);
    const out = bytes.subarray(at + 4, at + 4 + n);
    at += 4 + n;
    return out;
  };
  const message = decoder.decode(chunk());
  const vendor = view.getInt32(at, true);
  const hasVendor = bytes[at + 4] === 1;
  at += 5;
  const state = bytes.subarray(at, at + 5);
  at += 5;
  const sqlstate = state.every((b) => b === 0) ? null : decoder.decode(state);
  const count = view.getUint32(at, true);
  at += 4;
  const details = new Map<string, Uint8Array>();
  for (let i = 0; i < count; i++) {
    const key = decoder.decode(chunk());
    details.set(key, chunk().slice());
  }
  const statusName = Object.entries(AdbcStatus).find(([, v]) => v === status)?.[0] ?? `status ${status}`;
  const text = `${name}: ${message || `failed (ADBC ${statusName})`}`;
  return new AdbcError(status, text, sqlstate, hasVendor ? vendor : null, details);
}

let nextKey = 1;
/** Background calls waiting for their result, by key. */
const pending = new Map<number, (status: number) => void>();

/** Settles the background call `key` (js_queue tag adbc_call_done). */
export function finishAsyncCall(key: number, job: Pointer): void {
  const status = native.abd_adbc_job_finish(job);
  const settle = pending.get(key);
  pending.delete(key);
  settle?.(status);
}

onJsWork(JsWorkTag.adbc_call_done, (key, job) => {
  finishAsyncCall(key, job as Pointer);
  return false;
});

/** A native error struct for calls of `driver`, reset and ready. Free it with abd_free. */
export function newErrorStruct(driver: Driver): Pointer {
  const address = native.abd_alloc_zeroed(adbcStructLayouts.AdbcError.size);
  if (!address) throw errorFor(Status.out_of_memory, "out of memory for an AdbcError");
  native.abd_adbc_error_reset(driver.address, address);
  return address;
}

// ---------------------------------------------------------------------------
// Finding a driver
// ---------------------------------------------------------------------------

/** The directories searched for `<name>.toml` driver manifests, in order:
 * ADBC_CONFIG_PATH (colon-separated), the user's configuration directory
 * ($XDG_CONFIG_HOME/adbc/drivers, else ~/.config/adbc/drivers), then
 * /etc/adbc/drivers. */
export function manifestDirectories(): string[] {
  const dirs: string[] = [];
  const fromEnv = process.env.ADBC_CONFIG_PATH;
  if (fromEnv) dirs.push(...fromEnv.split(":").filter((d) => d.length > 0));
  const xdg = process.env.XDG_CONFIG_HOME;
  dirs.push(join(xdg && xdg.length > 0 ? xdg : join(homedir(), ".config"), "adbc", "drivers"));
  dirs.push("/etc/adbc/drivers");
  return dirs;
}

/** The platform key of a manifest's [Driver.shared] table. */
function platformTuple(): string {
  const os = process.platform === "darwin" ? "osx" : process.platform === "win32" ? "windows" : process.platform;
  const arch = process.arch === "x64" ? "amd64" : process.arch === "arm64" ? "arm64" : process.arch;
  return `${os}_${arch}`;
}

/** Reads the keys this loader uses from a manifest: Driver.entrypoint and
 * Driver.shared (a string, or a table by platform). A small reader of the
 * TOML subset manifests use: [tables] and key = 'string' / "string". */
function readManifest(file: string): { shared: string | null; entrypoint: string | null } {
  let table = "";
  let shared: string | null = null;
  let entrypoint: string | null = null;
  const tuple = platformTuple();
  for (const raw of readFileSync(file, "utf8").split("\n")) {
    const line = raw.replace(/\s+#.*$/, "").trim();
    if (line.length === 0 || line.startsWith("#")) continue;
    const header = /^\[\s*([^\]]+?)\s*\]$/.exec(line);
    if (header) {
      table = header[1]!;
      continue;
    }
    const pair = /^([A-Za-z0-9_.-]+)\s*=\s*(?:'([^']*)'|"((?:[^"\\]|\\.)*)")$/.exec(line);
    if (!pair) continue;
    const key = table ? `${table}.${pair[1]}` : pair[1]!;
    const value = pair[2] ?? JSON.parse(`"${pair[3]}"`) as string;
    if (key === "Driver.entrypoint") entrypoint = value;
    else if (key === "Driver.shared") shared = value;
    else if (key === `Driver.shared.${tuple}`) shared = value;
  }
  return { shared, entrypoint };
}

/** `driver` as a library path and entry point: a path (absolute, or with a
 * "/") is loaded as it is (a ".toml" one read as a manifest); a bare name
 * is looked up as `<name>.toml` in `manifestDirectories()`, else handed to
 * dlopen as it is (which searches LD_LIBRARY_PATH). */
export function resolveDriver(fn: string, driver: string, entrypoint: string | null): { path: string; entrypoint: string | null } {
  const fromManifest = (file: string): { path: string; entrypoint: string | null } => {
    const manifest = readManifest(file);
    if (manifest.shared === null) throw new InvalidArgumentError(Status.invalid_argument, `${fn}: the ADBC driver manifest ${file} has no Driver.shared path for ${platformTuple()}`);
    return { path: manifest.shared, entrypoint: entrypoint ?? manifest.entrypoint };
  };
  if (driver.endsWith(".toml")) return fromManifest(driver);
  if (isAbsolute(driver) || driver.includes("/")) return { path: driver, entrypoint };
  for (const dir of manifestDirectories()) {
    const file = join(dir, `${driver}.toml`);
    if (existsSync(file)) return fromManifest(file);
  }
  return { path: driver, entrypoint };
}
