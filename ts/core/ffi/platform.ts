/**
 * Which prebuilt library this process needs: the platform id (CONTRACT:
 * `<os>-<arch>[-<libc>]`, e.g. linux-x64-gnu, darwin-arm64, win32-x64),
 * the library's file name on this OS, and the npm package that carries it.
 * Pure functions of the running process; no file is opened here except to
 * tell musl from glibc.
 */
import { existsSync, readdirSync } from "node:fs";
import { argumentError, stringArg } from "../args.ts";

/** The C library of a Linux process: "gnu" (glibc) or "musl". */
export type Libc = "gnu" | "musl";

/** Detects the running process's libc. glibc reports its version in
 * `process.report`; otherwise a musl dynamic loader in /lib means musl
 * (Alpine); with neither, glibc is assumed. */
function detectLibc(): Libc {
  const report = (process as { report?: { getReport?: () => unknown } }).report?.getReport?.() as
    | { header?: { glibcVersionRuntime?: string } }
    | undefined;
  if (report?.header?.glibcVersionRuntime) return "gnu";
  try {
    if (readdirSync("/lib").some((name) => name.startsWith("ld-musl-"))) return "musl";
  } catch {
    // No /lib (not Linux, or a minimal container): fall through.
  }
  return existsSync("/etc/alpine-release") ? "musl" : "gnu";
}

/** This process's platform id: linux-<arch>-<libc>, or <os>-<arch>. */
export function platformId(platform: string = process.platform, arch: string = process.arch, libc: () => Libc = detectLibc): string {
  stringArg("platformId", "platform", platform);
  stringArg("platformId", "arch", arch);
  if (typeof libc !== "function") throw argumentError("platformId", "libc", "a function returning \"gnu\" or \"musl\", or undefined", libc);
  return platform === "linux" ? `${platform}-${arch}-${libc()}` : `${platform}-${arch}`;
}

/** The library's file name on `platform`. */
export function libraryFileName(platform: string = process.platform): string {
  if (platform === "win32") return "arrow_device.dll";
  return platform === "darwin" ? "libarrow_device.dylib" : "libarrow_device.so";
}

/** The npm package that carries the library for `id`. */
export function platformPackage(id: string): string {
  return `@bun-arrow-device/${id}`;
}

/** Every platform id a package is published for. win32-x64 is not one:
 * the library's platform code is POSIX (docs/building.md). */
export const platformIds = [
  "linux-x64-gnu", "linux-x64-musl", "linux-arm64-gnu", "linux-arm64-musl", "darwin-x64", "darwin-arm64",
] as const;

/** Why no prebuilt library exists for `id`, or undefined when one is
 * published: the loader's error on such a platform says this first. */
export function unsupportedPlatform(id: string): string | undefined {
  if ((platformIds as readonly string[]).includes(id)) return undefined;
  const why = id.startsWith("win32-") ? "Windows is not supported yet (the library's platform code is POSIX threads, dlopen and clock_gettime)" : "no package is published for it";
  return `bun-arrow-device has no prebuilt library for ${id}: ${why}. Prebuilt: ${platformIds.join(", ")}`;
}
