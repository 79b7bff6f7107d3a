/**
 * The one module that owns the dlopen table of libarrow_device.
 *
 * It finds the library (ARROW_DEVICE_LIBRARY, else the platform package
 * `@bun-arrow-device/<platform-id>`, else lib/<platform-id>/ of a
 * development checkout; docs/packaging.md), opens it once, checks the TS
 * struct layout against the library's manifest, and exposes `native` (the
 * symbols) and `check` (status -> typed error). The library is never
 * closed: release callbacks and GC deallocators may call into it until the
 * process exits.
 */
import { CString } from "bun:ffi";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { LibraryLoadError, errorFor } from "../errors.ts";
import { openLibrary } from "./bun_ffi.ts";
import { libraryFileName, platformId, platformPackage, unsupportedPlatform } from "./platform.ts";
import { platformPackageLibrary } from "./platform_package.ts";
import { coreSymbols } from "./symbols_core.ts";
import { ownerSymbols } from "./symbols_owners.ts";
import { deviceSymbols } from "./symbols_device.ts";
import { streamSymbols } from "./symbols_streams.ts";
import { asyncSymbols } from "./symbols_async.ts";
import { importSymbols } from "./symbols_import.ts";
import { deviceStreamSymbols } from "./symbols_device_streams.ts";
import { exportSymbols } from "./symbols_export.ts";
import { adbcSymbols } from "./symbols_adbc.ts";

/** Every symbol area, merged. Add new areas here. */
const symbols = {
  ...coreSymbols,
  ...ownerSymbols,
  ...deviceSymbols,
  ...streamSymbols,
  ...asyncSymbols,
  ...importSymbols,
  ...deviceStreamSymbols,
  ...exportSymbols,
  ...adbcSymbols,
};

/** The environment variable that names the library file to load instead
 * of the one the loader would find. */
export const libraryEnvVar = "ARROW_DEVICE_LIBRARY";

/** Where the loaded library came from. */
export type LibrarySource = "env" | "package" | "checkout";

/** Places to look, in order (docs/packaging.md): ARROW_DEVICE_LIBRARY, the
 * platform package, then lib/<platform-id>/ of a development checkout
 * (this module is ts/core/ffi/ there, or dist/js/ffi/ once compiled). */
function candidates(id: string): { path: string; source: LibrarySource }[] {
  const fromEnv = process.env[libraryEnvVar];
  if (fromEnv) return [{ path: fromEnv, source: "env" }];
  const found: { path: string; source: LibrarySource }[] = [];
  const fromPackage = platformPackageLibrary(id);
  if (fromPackage) found.push({ path: fromPackage, source: "package" });
  const file = libraryFileName();
  // lib/<os>-<arch>/ is where builds before per-libc ids installed it.
  const dirs = [...new Set([id, `${process.platform}-${process.arch}`])];
  // This module sits at ts/core/ffi/ in a checkout and dist/js/core/ffi/ in the package.
  for (const root of [resolve(import.meta.dir, "..", "..", ".."), resolve(import.meta.dir, "..", "..", "..", "..")]) {
    for (const dir of dirs) found.push({ path: join(root, "lib", dir, file), source: "checkout" });
  }
  return found;
}

/** The first candidate that exists, or a LibraryLoadError naming them all. */
function choose(): { path: string; source: LibrarySource } {
  const all = candidates(id);
  const hit = all.find((candidate) => existsSync(candidate.path) || candidate.path.startsWith("/$bunfs/"));
  if (hit) return hit;
  const fromEnv = all[0]?.source === "env";
  const tried = fromEnv
    ? [`${libraryEnvVar}=${all[0]!.path}`]
    : [`${platformPackage(id)} (not installed)`, ...all.map((candidate) => candidate.path)];
  const unsupported = fromEnv ? undefined : unsupportedPlatform(id);
  const advice = fromEnv
    ? `point ${libraryEnvVar} at an existing libarrow_device library file, or unset it`
    : unsupported !== undefined
    ? `${unsupported}; set ${libraryEnvVar} to a library built for this platform`
    : `install ${platformPackage(id)} (an optional dependency of bun-arrow-device: an install with --no-optional, or copied from another platform, lacks it), set ${libraryEnvVar}, or in a development checkout build it with \`${buildCommand}\``;
  throw new LibraryLoadError(`no libarrow_device library for ${id}: tried ${tried.join(", ")}; ${advice}.`, all.at(-1)?.path ?? "", tried, id);
}

/** The build command of a development checkout. */
const buildCommand = "bash scripts/setup.sh";

const id = platformId();
const chosen = choose();

/** The library file this process loads: $ARROW_DEVICE_LIBRARY, else the
 * platform package's, else lib/<platform-id>/ of a development checkout. */
export function libraryPath(): string {
  return chosen.path;
}

/** Where `libraryPath()` came from: the environment variable, the
 * platform package, or a development checkout. */
export function librarySource(): LibrarySource {
  return chosen.source;
}

function open() {
  const { path, source } = chosen;
  const from = source === "env" ? `${libraryEnvVar}=${path}` : path;
  try {
    return openLibrary(path, symbols);
  } catch (cause) {
    throw new LibraryLoadError(
      `could not load ${from} on ${id}: ${(cause as Error).message}. It may be built for another platform or be out of date; ${source === "checkout" ? `rebuild it with \`${buildCommand}\`` : "reinstall bun-arrow-device"}.`,
      path,
      [from],
      id,
    );
  }
}

const library = open();

/** The native symbols. Internal: the public API wraps them. */
export const native = library.symbols;

/** This JS thread's context number (zig/core/js_context.zig): each JS thread
 * (the main thread, every Worker) that loads the library gets its own, so
 * that its callbacks are called for it alone. Opened before any module
 * registers a callback. The main thread's exports may be imported on
 * other JS threads; a Worker's may not (zig/core/js_context.zig). */
export const jsContext: number = native.abd_js_context_open(Bun.isMainThread);
if (jsContext === 0) {
  throw new LibraryLoadError(
    `could not load ${chosen.path} on ${id}: this process already loaded bun-arrow-device on 1023 JS threads (Workers included), the most one process can serve; reuse Workers instead of starting new ones`,
    chosen.path,
    [chosen.path],
    id,
  );
}

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
