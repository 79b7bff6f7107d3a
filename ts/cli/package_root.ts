/**
 * Where this package's own files are, for the CLI: the package root (the
 * folder of the package.json whose name is bun-arrow-device), its version
 * and its C header. One answer whether the CLI runs from the sources
 * (ts/cli/) or from the compiled package (dist/js/cli/ in node_modules):
 * the root is found by walking up from this module, not by counting
 * folders.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";

/** The package's name, as its package.json spells it. */
const packageName = "bun-arrow-device";

function readManifest(path: string): { name?: unknown; version?: unknown } | null {
  if (!existsSync(path)) return null;
  try {
    return JSON.parse(readFileSync(path, "utf8")) as { name?: unknown; version?: unknown };
  } catch {
    return null;
  }
}

/** The nearest folder at or above `start` whose package.json is this
 * package's, or null (a bundle or a compiled executable has none). */
export function findPackageRoot(start: string = import.meta.dir): string | null {
  for (let dir = start; ; dir = dirname(dir)) {
    if (readManifest(join(dir, "package.json"))?.name === packageName) return dir;
    if (dirname(dir) === dir) return null;
  }
}

const root = findPackageRoot();

/** The package root, or null where the package's files are not on disk. */
export function packageRoot(): string | null {
  return root;
}

/** This package's version (package.json), which is also its library's;
 * "unknown" only where no package.json travels with the code (a bundle). */
export function packageVersion(): string {
  const version = root === null ? undefined : readManifest(join(root, "package.json"))?.version;
  return typeof version === "string" ? version : "unknown";
}

/** The C header the package ships (lib/include/arrow_device.h). */
export function headerPath(): string {
  return join(root ?? import.meta.dir, "lib", "include", "arrow_device.h");
}
