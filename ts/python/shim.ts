/**
 * The one dlopen table of libarrow_device_python (native/abd_python.c), the
 * shim that hosts CPython: it lives beside libarrow_device and is opened
 * only when `bun-arrow-device/python` is imported and used. Every call into
 * Python goes through it, and it takes the GIL itself.
 */
import { FFIType, suffix } from "bun:ffi";
import { existsSync, readFileSync } from "node:fs";
import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import { libraryPath } from "../core/ffi/library.ts";
import { platformId, platformPackage } from "../core/ffi/platform.ts";
import { openLibrary, type NativeLibrary } from "../core/ffi/bun_ffi.ts";
import { PythonUnavailableError } from "./errors.ts";
import { nativeArray } from "../core/ffi/native_arrays.ts";

const { ptr, i32, i64, usize, void: none } = FFIType;

const shimSymbols = {
  abdpy_load: { args: [ptr, ptr, ptr, usize], returns: i32 },
  abdpy_bootstrap: { args: [ptr, ptr, usize], returns: i32 },
  abdpy_run: { args: [ptr, i32, ptr, ptr, usize], returns: ptr },
  abdpy_call: { args: [ptr, ptr, i32, ptr, usize], returns: ptr },
  abdpy_main_dict: { args: [], returns: ptr },
  abdpy_new_dict: { args: [], returns: ptr },
  abdpy_dict_set: { args: [ptr, ptr, ptr, ptr, usize], returns: i32 },
  abdpy_dict_get: { args: [ptr, ptr], returns: ptr },
  abdpy_decref: { args: [ptr], returns: none },
  abdpy_str: { args: [ptr, ptr, usize], returns: i64 },
  abdpy_import: { args: [ptr, i32, ptr, ptr, ptr, usize], returns: i32 },
  abdpy_source_array: { args: [ptr, ptr, i32, ptr, usize], returns: ptr },
  abdpy_source_table: { args: [ptr, ptr, i64, ptr, usize], returns: ptr },
  abdpy_source_stream: { args: [ptr, ptr, usize], returns: ptr },
  abdpy_source_schema: { args: [ptr, ptr, usize], returns: ptr },
  abdpy_counters: { args: [ptr, i32], returns: i32 },
} as const;

export type Shim = NativeLibrary<typeof shimSymbols>["symbols"];

/** The environment variable naming the shim file to load instead of the
 * one beside libarrow_device. */
export const shimEnvVar = "ARROW_DEVICE_PYTHON_SHIM";

/** The shim's file name on this platform. */
const shimFile = `libarrow_device_python.${suffix}`;

/** The CPython shim's file: $ARROW_DEVICE_PYTHON_SHIM, else beside
 * libarrow_device (a checkout, an installed platform package), else the
 * platform package's "./python" path: what `bun build --compile` embeds
 * (a /$bunfs/ path, which Bun's dlopen extracts as it does the library). */
export function shimPath(): string {
  const fromEnv = process.env[shimEnvVar];
  if (fromEnv) return fromEnv;
  const beside = join(dirname(libraryPath()), shimFile);
  if (existsSync(beside)) return beside;
  return platformPackageShim(platformId()) ?? beside;
}

/** The shim path the platform package for `id` carries, if installed
 * (literal names, so that bundlers see them; see platform_package.ts). */
function platformPackageShim(id: string): string | undefined {
  let module: { default: string } | undefined;
  try {
    switch (id) {
      case "linux-x64-gnu": module = require("@bun-arrow-device/linux-x64-gnu/python"); break;
      case "linux-x64-musl": module = require("@bun-arrow-device/linux-x64-musl/python"); break;
      case "linux-arm64-gnu": module = require("@bun-arrow-device/linux-arm64-gnu/python"); break;
      case "linux-arm64-musl": module = require("@bun-arrow-device/linux-arm64-musl/python"); break;
      case "darwin-x64": module = require("@bun-arrow-device/darwin-x64/python"); break;
      case "darwin-arm64": module = require("@bun-arrow-device/darwin-arm64/python"); break;
      default: return undefined;
    }
  } catch {
    return undefined;
  }
  const path = module?.default;
  if (typeof path !== "string" || path === "") return undefined;
  return isAbsolute(path) || path.startsWith("/$bunfs/") ? path : resolve(import.meta.dir, path);
}

/** What to do when the shim is missing, for where this runs: a checkout
 * builds it; an app ships the platform package's file. */
function missingShimAdvice(path: string): string {
  if (existsSync(join(dirname(libraryPath()), "..", "..", "build.zig"))) return `the Python shim is not built: build it with \`bash scripts/setup.sh\` (or set ${shimEnvVar})`;
  return `the Python shim ${shimFile} was not found (looked at ${path}): it ships in ${platformPackage(platformId())}, beside its library; install that package (bun build and bun build --compile then carry the shim when the app imports bun-arrow-device/python), or ship ${shimFile} with the app and set ${shimEnvVar} to its path`;
}

/** The main library as the shim's own dlopen can open it (abdpy_load):
 * its path; in a compiled app, whose /$bunfs/ path only Bun can read, the
 * file Bun's dlopen extracted it to (Linux: its mapping in
 * /proc/self/maps), else its soname, which the dynamic loader matches
 * against the library already loaded. */
export function libraryForShim(): string {
  const path = libraryPath();
  if (!path.startsWith("/$bunfs/")) return path;
  if (existsSync("/proc/self/maps")) {
    const mapped = readFileSync("/proc/self/maps", "utf8").split("\n").map((line) => line.slice(line.indexOf("/"))).filter((file) => file.startsWith("/"));
    const named = mapped.find((file) => basename(file) === basename(path)) ?? mapped.find((file) => /libarrow_device(?!_python)[^/]*$/.test(file) && !file.startsWith("/$bunfs/"));
    if (named !== undefined) return named;
  }
  return `libarrow_device.${suffix}`;
}

let opened: Shim | null = null;

/** Opens the shim once (never closed: capsule destructors and release
 * callbacks may call into it until the process exits). */
export function openShim(): Shim {
  if (opened) return opened;
  const path = shimPath();
  if (!path.startsWith("/$bunfs/") && !existsSync(path)) {
    throw new PythonUnavailableError(missingShimAdvice(path), [`${path}: no such file`]);
  }
  try {
    opened = openLibrary(path, shimSymbols).symbols;
  } catch (cause) {
    throw new PythonUnavailableError(`could not load the Python shim: ${(cause as Error).message}`, [path]);
  }
  return opened;
}

/** A UTF-8, NUL-terminated copy of `text` for a `const char*` argument. */
export function cString(text: string): Uint8Array<ArrayBuffer> {
  const bytes = new TextEncoder().encode(text);
  const out = nativeArray(Uint8Array, bytes.length + 1);
  out.set(bytes);
  return out;
}

/** An error buffer for the shim's `err, capacity` arguments, and its text. */
export class ErrorText {
  readonly bytes = nativeArray(Uint8Array, 4096);
  get text(): string {
    const end = this.bytes.indexOf(0);
    return new TextDecoder().decode(this.bytes.subarray(0, end < 0 ? this.bytes.length : end));
  }
}

/** Names of the shim's counters, in its order (abdpy_counters). */
const shimCounterNames = [
  "capsulesMade", "capsulesFreed", "capsulesReleased", "sourcesLive", "imports", "wrappedReleases", "streamsLive",
] as const;
/** The shim's counters: capsules made, freed and released by their destructor, live sources, imports, releases taken under the GIL, live streams. */
export type ShimCounters = Record<(typeof shimCounterNames)[number], number>;

export function readShimCounters(shim: Shim): ShimCounters {
  const words = nativeArray(Float64Array, shimCounterNames.length);
  shim.abdpy_counters(words, words.length);
  return Object.fromEntries(shimCounterNames.map((name, i) => [name, words[i]])) as ShimCounters;
}
