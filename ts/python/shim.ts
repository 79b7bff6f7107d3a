/**
 * The one dlopen table of libarrow_device_python (native/abd_python.c), the
 * shim that hosts CPython: it lives beside libarrow_device and is opened
 * only when `bun-arrow-device/python` is imported and used. Every call into
 * Python goes through it, and it takes the GIL itself.
 */
import { FFIType, suffix } from "bun:ffi";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { libraryPath } from "../core/ffi/library.ts";
import { openLibrary, type NativeLibrary } from "../core/ffi/bun_ffi.ts";
import { PythonUnavailableError } from "./errors.ts";

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

/** The CPython shim's file: $ARROW_DEVICE_PYTHON_SHIM, else beside libarrow_device. */
export function shimPath(): string {
  return process.env[shimEnvVar] || join(dirname(libraryPath()), `libarrow_device_python.${suffix}`);
}

let opened: Shim | null = null;

/** Opens the shim once (never closed: capsule destructors and release
 * callbacks may call into it until the process exits). */
export function openShim(): Shim {
  if (opened) return opened;
  const path = shimPath();
  if (!existsSync(path)) {
    throw new PythonUnavailableError(`the Python shim is not built: build it with \`bash scripts/setup.sh\` (or set ${shimEnvVar})`, [`${path}: no such file`]);
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
  const out = new Uint8Array(bytes.length + 1);
  out.set(bytes);
  return out;
}

/** An error buffer for the shim's `err, capacity` arguments, and its text. */
export class ErrorText {
  readonly bytes = new Uint8Array(4096);
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
  const words = new Float64Array(shimCounterNames.length);
  shim.abdpy_counters(words, words.length);
  return Object.fromEntries(shimCounterNames.map((name, i) => [name, words[i]])) as ShimCounters;
}
