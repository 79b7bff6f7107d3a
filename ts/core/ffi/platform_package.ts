/**
 * The library file of the installed platform package, if any.
 *
 * Each `@bun-arrow-device/<platform-id>` package (npm/<platform-id>/)
 * default-exports its library's path, through
 * `import path from "./libarrow_device.so" with { type: "file" }`: a path
 * into node_modules when run as is, an asset copied beside the bundle by
 * `bun build`, and a file embedded in the executable by
 * `bun build --compile`. Each package is required by a literal name so
 * that bundlers see it; inside `try`, a package that is not installed (the
 * other platforms') is left out of a bundle rather than failing it.
 */
import { isAbsolute, resolve } from "node:path";

type PlatformModule = { default: string };

/** The package's module for `id`, or undefined when it is not installed. */
function load(id: string): PlatformModule | undefined {
  try {
    switch (id) {
      case "linux-x64-gnu": return require("@bun-arrow-device/linux-x64-gnu") as PlatformModule;
      case "linux-x64-musl": return require("@bun-arrow-device/linux-x64-musl") as PlatformModule;
      case "linux-arm64-gnu": return require("@bun-arrow-device/linux-arm64-gnu") as PlatformModule;
      case "linux-arm64-musl": return require("@bun-arrow-device/linux-arm64-musl") as PlatformModule;
      case "darwin-x64": return require("@bun-arrow-device/darwin-x64") as PlatformModule;
      case "darwin-arm64": return require("@bun-arrow-device/darwin-arm64") as PlatformModule;
      default: return undefined;
    }
  } catch {
    return undefined;
  }
}

/** The absolute path of the library that the platform package for `id`
 * carries, or undefined when that package is not installed. A bundle's
 * asset path is relative to the bundle, i.e. to this module once bundled. */
export function platformPackageLibrary(id: string): string | undefined {
  const path = load(id)?.default;
  if (typeof path !== "string" || path === "") return undefined;
  return isAbsolute(path) || path.startsWith("/$bunfs/") || /^[A-Za-z]:[\\/]/.test(path) ? path : resolve(import.meta.dir, path);
}
