/**
 * The one module that owns the dlopen table of libarrow_device.
 *
 * It finds lib/<platform>/libarrow_device.<ext> (or the path in the
 * ARROW_DEVICE_LIBRARY environment variable), opens it once, checks the TS
 * struct layout against the library's manifest, and exposes `native` (the
 * symbols) and `check` (status -> typed error). The library is never
 * closed: release callbacks and GC deallocators may call into it until the
 * process exits.
 */
import { suffix, CString } from "bun:ffi";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { LibraryLoadError, errorFor } from "../errors.ts";
import { openLibrary } from "./bun_ffi.ts";
import { coreSymbols } from "./symbols_core.ts";
import { ownerSymbols } from "./symbols_owners.ts";
import { deviceSymbols } from "./symbols_device.ts";
import { streamSymbols } from "./symbols_streams.ts";
import { asyncSymbols } from "./symbols_async.ts";
import { importSymbols } from "./symbols_import.ts";
import { deviceStreamSymbols } from "./symbols_device_streams.ts";

/** Every symbol area, merged. Add new areas here. */
const symbols = {
  ...coreSymbols,
  ...ownerSymbols,
  ...deviceSymbols,
  ...streamSymbols,
  ...asyncSymbols,
  ...importSymbols,
  ...deviceStreamSymbols,
};

/** The environment variable that names the library file to load instead of
 * lib/<platform>/libarrow_device.<ext>. */
export const libraryEnvVar = "ARROW_DEVICE_LIBRARY";
export const buildCommand = "bash scripts/setup.sh";

/** The platform id, lib/<platform-id>: Bun's process.platform-process.arch,
 * plus the C library on Linux (linux-x64-gnu, linux-arm64-musl,
 * darwin-arm64, win32-x64, ...). */
export function platformDir(): string {
  const base = `${process.platform}-${process.arch}`;
  if (process.platform !== "linux") return base;
  // Node's report names the glibc version; on musl there is none.
  const header = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header;
  return `${base}-${header?.glibcVersionRuntime ? "gnu" : "musl"}`;
}

/** The library's file name on this OS. */
export function libraryFileName(): string {
  return process.platform === "win32" ? `arrow_device.${suffix}` : `libarrow_device.${suffix}`;
}

export function defaultLibraryPath(): string {
  const root = resolve(import.meta.dir, "..", "..");
  return join(root, "lib", platformDir(), libraryFileName());
}

/** The library file this process loads: $ARROW_DEVICE_LIBRARY, else
 * lib/<platform>/libarrow_device.<ext> in this package. */
export function libraryPath(): string {
  return process.env[libraryEnvVar] || defaultLibraryPath();
}

function open() {
  const path = libraryPath();
  const from = process.env[libraryEnvVar] ? `${libraryEnvVar}=${path}` : path;
  if (!existsSync(path)) {
    throw new LibraryLoadError(
      `libarrow_device is not built for ${platformDir()}: looked for ${from}. Build it with \`${buildCommand}\` (or point ${libraryEnvVar} at a built library).`,
      path,
    );
  }
  try {
    return openLibrary(path, symbols);
  } catch (cause) {
    throw new LibraryLoadError(
      `could not load ${from} on ${platformDir()}: ${(cause as Error).message}. It may be built for another platform or be out of date; rebuild it with \`${buildCommand}\`.`,
      path,
    );
  }
}

const library = open();

/** The native symbols. Internal: the public API wraps them. */
export const native = library.symbols;

/** The library's last error message on this thread. */
export function lastError(): string {
  const message = native.abd_last_error();
  return message ? new CString(message).toString() : "";
}

/** Throws the typed error for a non-zero status. */
export function check(status: number): void {
  if (status !== 0) throw errorFor(status, lastError());
}

export function manifestText(): string {
  return new CString(native.abd_layout_manifest()).toString();
}
