/**
 * The loader: finds the library, explains what is missing, maps status
 * codes to typed errors with the library's own message.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { cpSync, existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { ArrowDeviceError } from "../../ts/index.ts";
import { ReleasedError } from "../../ts/core/errors.ts";
import { structPointer, ImportedArray, Status } from "../../ts/raw.ts";
import { libraryPath, librarySource, platformId } from "../../ts/diagnostics.ts";
import { check, native } from "../../ts/core/ffi/library.ts";
import { libraryFileName, platformPackage } from "../../ts/core/ffi/platform.ts";
import { errorFor, statusName, type StatusName } from "../../ts/core/errors.ts";
import { testRoot } from "../helpers/paths.ts";
import { withCode } from "../helpers/errors.ts";

const bun = process.execPath;
const root = resolve(testRoot, "..");

/** Imports `<tsDir>/index.ts` in a child and prints what loaded (or the
 * error), with `env` on top of this process's environment. */
function runLoader(tsDir: string, env: Record<string, string | undefined>): string {
  const script = `import("${join(tsDir, "index.ts")}").then(async () => { const d = await import("${join(tsDir, "diagnostics.ts")}"); console.log("loaded " + d.librarySource() + " " + d.libraryPath()); }, (e) => { console.log(e.name + ": " + e.message); console.log("tried=" + JSON.stringify(e.tried) + " platformId=" + e.platformId); })`;
  const proc = Bun.spawnSync([bun, "-e", script], { env: { ...process.env, ...env } });
  return proc.stdout.toString() + proc.stderr.toString();
}

/** A copy of ts/ in a fresh folder, with node_modules linking apache-arrow
 * and no lib/: what an installed package looks like to the loader. */
const made: string[] = [];
afterAll(() => { for (const dir of made) rmSync(dir, { recursive: true, force: true }); });

function installedCopy(): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "abd-loader-")));
  made.push(dir);
  cpSync(join(root, "ts"), join(dir, "ts"), { recursive: true });
  mkdirSync(join(dir, "node_modules"));
  symlinkSync(join(root, "node_modules", "apache-arrow"), join(dir, "node_modules", "apache-arrow"));
  return dir;
}

/** Installs a fake platform package for this platform into `dir` whose
 * library is `library`. */
function installPlatformPackage(dir: string, library: string): void {
  const pkg = join(dir, "node_modules", ...platformPackage(platformId()).split("/"));
  mkdirSync(pkg, { recursive: true });
  cpSync(library, join(pkg, libraryFileName()));
  writeFileSync(join(pkg, "package.json"), JSON.stringify({ name: platformPackage(platformId()), version: "0.0.0", type: "module", main: "index.js" }));
  writeFileSync(join(pkg, "index.js"), `import path from "./${libraryFileName()}" with { type: "file" };\nexport default path;\n`);
}

describe("library loader", () => {
  test("this checkout loads its own build, for a platform id with the libc", () => {
    expect(platformId()).toMatch(new RegExp(`^${process.platform}-${process.arch}(-(gnu|musl))?$`));
    expect(librarySource()).toBe("checkout");
    expect(existsSync(libraryPath())).toBe(true);
    expect(libraryPath()).toStartWith(join(root, "lib"));
  });

  test("platform ids and file names follow the contract", () => {
    expect(platformId("linux", "x64", () => "gnu")).toBe("linux-x64-gnu");
    expect(platformId("linux", "arm64", () => "musl")).toBe("linux-arm64-musl");
    expect(platformId("darwin", "arm64", () => { throw new Error("libc is not asked for outside Linux"); })).toBe("darwin-arm64");
    expect(platformId("win32", "x64")).toBe("win32-x64");
    expect([libraryFileName("linux"), libraryFileName("darwin"), libraryFileName("win32")]).toEqual(["libarrow_device.so", "libarrow_device.dylib", "arrow_device.dll"]);
    expect(platformPackage("linux-arm64-gnu")).toBe("@bun-arrow-device/linux-arm64-gnu");
  });

  test("with no platform package and no checkout build, a LibraryLoadError names the platform id and every place tried", () => {
    const dir = installedCopy();
    const out = runLoader(join(dir, "ts"), { ARROW_DEVICE_LIBRARY: undefined });
    const id = platformId();
    expect(out).toContain(`LibraryLoadError: no libarrow_device library for ${id}`);
    expect(out).toContain(`${platformPackage(id)} (not installed)`);
    expect(out).toContain(join(dir, "lib", id, libraryFileName()));
    expect(out).toContain(`platformId=${id}`);
    expect(out).toContain("ARROW_DEVICE_LIBRARY");
  });

  test("the platform package is found, before a checkout build", () => {
    const dir = installedCopy();
    installPlatformPackage(dir, libraryPath());
    // A checkout build that is not a library: loading it would fail.
    mkdirSync(join(dir, "lib", platformId()), { recursive: true });
    writeFileSync(join(dir, "lib", platformId(), libraryFileName()), "not a library");
    const out = runLoader(join(dir, "ts"), { ARROW_DEVICE_LIBRARY: undefined });
    expect(out).toContain(`loaded package ${join(dir, "node_modules", ...platformPackage(platformId()).split("/"), libraryFileName())}`);
  });

  test("ARROW_DEVICE_LIBRARY overrides the platform package", () => {
    const dir = installedCopy();
    installPlatformPackage(dir, libraryPath());
    const copy = join(dir, "override.so");
    cpSync(libraryPath(), copy);
    expect(runLoader(join(dir, "ts"), { ARROW_DEVICE_LIBRARY: copy })).toContain(`loaded env ${copy}`);
  });

  test("a missing ARROW_DEVICE_LIBRARY file names the file and says to fix or unset it", () => {
    const out = runLoader(join(root, "ts"), { ARROW_DEVICE_LIBRARY: "/nonexistent/libarrow_device.so" });
    expect(out).toContain("LibraryLoadError");
    expect(out).toContain("ARROW_DEVICE_LIBRARY=/nonexistent/libarrow_device.so");
    expect(out).toContain("or unset it");
  });

  test("a file that is not a library for this platform is explained, not a crash", () => {
    const dir = mkdtempSync(join(tmpdir(), "abd-"));
    made.push(dir);
    const fake = join(dir, "libarrow_device.so");
    writeFileSync(fake, "this is not an ELF file");
    const out = runLoader(join(root, "ts"), { ARROW_DEVICE_LIBRARY: fake });
    expect(out).toContain("LibraryLoadError");
    expect(out).toContain(fake);
    expect(out).toContain("another platform");
  });
});

describe("status codes become typed errors", () => {
  test("each status maps to its class and keeps the code", () => {
    for (const [name, code] of Object.entries(Status)) {
      if (code === 0) continue;
      const error = errorFor(code, "why");
      expect(error).toBeInstanceOf(ArrowDeviceError);
      expect(error.code).toBe(name as StatusName);
      expect(error.status).toBe(code);
      expect(statusName(code)).toBe(name as StatusName);
    }
  });

  test("the message comes from the library's last error", () => {
    expect(() => ImportedArray.fromDeviceArray(null, null)).toThrow(withCode("invalid_argument"));
    try {
      ImportedArray.fromDeviceArray(null, null);
    } catch (error) {
      expect((error as Error).message).toBe("schema pointer is NULL");
    }
  });

  test("check() passes on ok and throws the typed error otherwise", () => {
    expect(() => check(0)).not.toThrow();
    const slot = native.abd_alloc_zeroed(72 + 128)!;
    // Both structs released (zeroed): importing them is a ReleasedError.
    expect(() => ImportedArray.fromDeviceArray(structPointer("ArrowSchema", slot), structPointer("ArrowDeviceArray", slot + 72))).toThrow(withCode("released"));
    native.abd_free(slot);
  });
});
