/**
 * Finding libpython: an explicit path (option or ARROW_DEVICE_LIBPYTHON),
 * else what the `python3` on PATH (or `options.python`) reports through
 * sysconfig. Nothing is loaded here; the result says what to dlopen and
 * which sys.path entries that Python uses (so a virtual environment's
 * packages are seen by the embedded interpreter too).
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { PythonUnavailableError } from "./errors.ts";
import { argumentError, isPlainObject, stringArg } from "../core/args.ts";

/** The environment variable naming the libpython file to load. */
export const libpythonEnvVar = "ARROW_DEVICE_LIBPYTHON";

/** Where to find libpython (see `locatePython`). */
export type LocateOptions = {
  /** A libpython file to load (wins over everything else). */
  libpython?: string;
  /** The Python executable to ask through sysconfig (default "python3" on PATH). */
  python?: string;
};

/** A libpython found by `locatePython`. */
export type LocatedPython = {
  /** The libpython file to dlopen. */
  libpython: string;
  /** sys.path of the Python that was asked (empty for an explicit file). */
  sysPath: string[];
  /** How it was found, for messages. */
  via: string;
};

type SysconfigReport = {
  version: string;
  shared: number | null;
  ldlibrary: string | null;
  instsoname: string | null;
  libdir: string | null;
  multiarch: string | null;
  base_prefix: string;
  path: string[];
};

const askScript = [
  "import json, sys, sysconfig",
  "v = sysconfig.get_config_var",
  "print(json.dumps({'version': sys.version.split()[0], 'shared': v('Py_ENABLE_SHARED'), 'ldlibrary': v('LDLIBRARY'),",
  "  'instsoname': v('INSTSONAME'), 'libdir': v('LIBDIR'), 'multiarch': v('MULTIARCH'),",
  "  'base_prefix': sys.base_prefix, 'path': [p for p in sys.path if p]}))",
].join("\n");

function ask(python: string, tried: string[]): SysconfigReport | null {
  const executable = Bun.which(python);
  if (!executable) {
    tried.push(`${python}: not found on PATH`);
    return null;
  }
  const run = Bun.spawnSync([executable, "-c", askScript], { stdout: "pipe", stderr: "pipe" });
  if (run.exitCode !== 0) {
    tried.push(`${executable} -c <sysconfig query>: exit ${run.exitCode}: ${run.stderr.toString().trim().split("\n").pop() ?? ""}`);
    return null;
  }
  try {
    return JSON.parse(run.stdout.toString()) as SysconfigReport;
  } catch {
    tried.push(`${executable}: unreadable sysconfig report: ${run.stdout.toString().slice(0, 200)}`);
    return null;
  }
}

function isStatic(name: string): boolean {
  return name.endsWith(".a");
}

/** The libpython candidates a sysconfig report points at, in order. */
function candidates(report: SysconfigReport): string[] {
  const names = [report.instsoname, report.ldlibrary].filter((n): n is string => !!n && !isStatic(n));
  const dirs = [report.libdir, report.libdir && report.multiarch ? join(report.libdir, report.multiarch) : null, join(report.base_prefix, "lib")]
    .filter((d): d is string => !!d);
  const out: string[] = [];
  for (const name of names) for (const dir of dirs) {
    const path = join(dir, name);
    if (!out.includes(path)) out.push(path);
  }
  return out;
}

/** Where libpython is; throws PythonUnavailableError listing what was tried. */
export function locatePython(options: LocateOptions = {}): LocatedPython {
  // Not restricted to its own keys: loadPython passes its options on.
  if (!isPlainObject(options)) throw argumentError("locatePython", "options", "an options object or undefined", options);
  stringArg("locatePython", "options.libpython", options.libpython, true);
  stringArg("locatePython", "options.python", options.python, true);
  const tried: string[] = [];
  const explicit = options.libpython ?? process.env[libpythonEnvVar];
  if (explicit) {
    const via = options.libpython ? "options.libpython" : libpythonEnvVar;
    if (existsSync(explicit)) return { libpython: explicit, sysPath: [], via: `${via}=${explicit}` };
    tried.push(`${via}=${explicit}: no such file`);
    throw new PythonUnavailableError(`libpython not found: ${via} names a file that does not exist`, tried);
  }
  const python = options.python ?? "python3";
  const report = ask(python, tried);
  if (!report) throw new PythonUnavailableError(`libpython not found: set ${libpythonEnvVar} to a libpython shared library, or put a python3 built with a shared library on PATH`, tried);
  for (const path of candidates(report)) {
    if (existsSync(path)) return { libpython: path, sysPath: report.path, via: `${python} ${report.version} (sysconfig)` };
    tried.push(`${path}: no such file`);
  }
  const staticOnly = report.shared !== 1 && (report.ldlibrary === null || isStatic(report.ldlibrary));
  if (staticOnly) {
    tried.push(`${python} ${report.version}: Py_ENABLE_SHARED=${report.shared}, LDLIBRARY=${report.ldlibrary}, LIBDIR=${report.libdir}`);
    throw new PythonUnavailableError(
      `${python} ${report.version} was built without a shared libpython (static-only), which cannot be loaded into Bun: install one (e.g. Debian's libpython3.X), or set ${libpythonEnvVar}`,
      tried,
    );
  }
  tried.push(`${python} ${report.version}: Py_ENABLE_SHARED=${report.shared}, LDLIBRARY=${report.ldlibrary}, INSTSONAME=${report.instsoname}, LIBDIR=${report.libdir}`);
  throw new PythonUnavailableError(`libpython not found for ${python} ${report.version}: set ${libpythonEnvVar} to its shared library`, tried);
}
