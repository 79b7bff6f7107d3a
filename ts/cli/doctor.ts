/**
 * `bun-arrow-device doctor`: checks that a native library matches the C
 * header it is used with: every function the header declares (the
 * `abd_*` prototypes of lib/include/arrow_device.h) must be exported by
 * the library. A mismatch means a stale or foreign build (another version,
 * another platform package) and is reported by name.
 */
import { FFIType } from "bun:ffi";
import { existsSync } from "node:fs";
import { headerPath } from "./package_root.ts";
import { openLibrary } from "../core/ffi/bun_ffi.ts";
import { readBounded } from "./files.ts";

/** The most of a header `doctor` reads (arrow_device.h is far smaller). */
export const headerLimitBytes = 4 * 2 ** 20;

/** The header shipped with the package. */
export const defaultHeaderPath = headerPath();

/** The function names `header` declares: lines that start a declaration
 * (not comments, not typedefs) and name an `abd_*` function. */
export function declaredFunctions(header: string): string[] {
  const names = new Set<string>();
  for (const line of header.split("\n")) {
    if (!/^[A-Za-z_]/.test(line) || line.startsWith("typedef") || line.startsWith("#")) continue;
    const match = /\b(abd_[A-Za-z0-9_]+)\s*\(/.exec(line);
    if (match) names.add(match[1]);
  }
  return [...names];
}

/** Whether the library at `path` exports `name`; an Error when `path`
 * cannot be loaded as a library at all (not a shared object, unreadable). */
function exports(path: string, name: string): boolean {
  try {
    // Declared with no arguments and never called: only the lookup matters.
    openLibrary(path, { [name]: { args: [], returns: FFIType.void } }).close();
    return true;
  } catch (error) {
    const message = (error as Error).message;
    if (message.startsWith("Failed to open library")) throw new Error(`cannot load ${path} as a library: ${message.replace(/^Failed to open library "[^"]*": /, "")}`);
    return false;
  }
}

export type DoctorReport = { library: string; header: string; declared: number; missing: string[] };

export function doctor(library: string, header: string): DoctorReport {
  if (!existsSync(header)) throw new Error(`no header at ${header}`);
  if (!existsSync(library)) throw new Error(`no library at ${library}`);
  const declared = declaredFunctions(readBounded(header, headerLimitBytes, "header"));
  if (declared.length === 0) throw new Error(`${header} declares no abd_* function: is it arrow_device.h?`);
  return { library, header, declared: declared.length, missing: declared.filter((name) => !exports(library, name)) };
}
