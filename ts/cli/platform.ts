/**
 * What the CLI reports about this machine: the platform id (the names of
 * the native packages: linux-x64-gnu, darwin-arm64, ...), the
 * CPU, and the versions of the pieces in play.
 */
import { existsSync, readFileSync } from "node:fs";
import { cpus, release, totalmem, type } from "node:os";
import { packageRoot } from "./package_root.ts";

/** The platform id, as the library's loader names it (ts/core/ffi/platform.ts). */
export { platformId } from "../core/ffi/platform.ts";
import { platformId } from "../core/ffi/platform.ts";

/** The machine a benchmark ran on. */
export type MachineInfo = {
  os: string;
  osRelease: string;
  platform: string;
  cpuModel: string;
  cpuCores: number;
  memoryBytes: number;
};

export function machineInfo(): MachineInfo {
  const cores = cpus();
  return {
    os: type(),
    osRelease: release(),
    platform: platformId(),
    cpuModel: cores[0]?.model.trim() || "unknown",
    cpuCores: cores.length,
    memoryBytes: totalmem(),
  };
}

/** This package's version (package.json), which is also its library's. */
export { packageVersion } from "./package_root.ts";


/** The apache-arrow version this process resolves, or "not installed". */
export function apacheArrowVersion(): string {
  try {
    // Resolved as this package resolves it: from its root, or beside this module in a bundle.
    const entry = Bun.resolveSync("apache-arrow/package.json", packageRoot() ?? import.meta.dir);
    return readVersion(entry) ?? "unknown";
  } catch {
    return "not installed";
  }
}

function readVersion(path: string): string | null {
  if (!existsSync(path)) return null;
  const parsed: unknown = JSON.parse(readFileSync(path, "utf8"));
  const version = (parsed as { version?: unknown }).version;
  return typeof version === "string" ? version : null;
}
