/**
 * The package layout, without packing (fast): the committed
 * npm/<platform-id>/ files are what scripts/pack.ts generates, one per
 * platform id of the contract, with the os/cpu/libc fields package
 * managers select by; the main package's publish manifest lists each as
 * an optional dependency and ships no build inputs.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { mainManifest, platformFields, platformPackageFiles } from "../scripts/pack.ts";
import { platformIds, platformPackage } from "../ts/ffi/platform.ts";

const root = resolve(import.meta.dir, "..");
const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string; files: string[] };

describe("platform packages", () => {
  test("npm/ holds exactly the contract's platform ids", () => {
    expect(readdirSync(join(root, "npm")).sort()).toEqual([...platformIds].sort());
    expect([...platformIds].sort()).toEqual(["darwin-arm64", "darwin-x64", "linux-arm64-gnu", "linux-arm64-musl", "linux-x64-gnu", "linux-x64-musl", "win32-x64"]);
  });

  for (const id of platformIds) {
    test(`npm/${id} is what scripts/pack.ts generates`, () => {
      for (const [name, text] of Object.entries(platformPackageFiles(id, manifest.version))) {
        expect({ name, text: readFileSync(join(root, "npm", id, name), "utf8") }).toEqual({ name, text });
      }
    });
  }

  test("os, cpu and libc fields follow the platform id", () => {
    expect(platformFields("linux-x64-gnu")).toEqual({ os: "linux", cpu: "x64", libc: "glibc" });
    expect(platformFields("linux-arm64-musl")).toEqual({ os: "linux", cpu: "arm64", libc: "musl" });
    expect(platformFields("darwin-arm64")).toEqual({ os: "darwin", cpu: "arm64" });
    expect(platformFields("win32-x64")).toEqual({ os: "win32", cpu: "x64" });
    const win = JSON.parse(platformPackageFiles("win32-x64", "1.2.3")["package.json"]!) as { files: string[]; libc?: string[] };
    expect(win.files).toContain("arrow_device.dll");
    expect(win.libc).toBeUndefined();
  });
});

describe("the main package", () => {
  test("its publish manifest picks a platform package through optionalDependencies, pinned to its version", () => {
    const published = mainManifest() as { optionalDependencies: Record<string, string>; devDependencies?: unknown; scripts?: unknown };
    expect(published.optionalDependencies).toEqual(Object.fromEntries(platformIds.map((id) => [platformPackage(id), manifest.version])));
    expect(published.devDependencies).toBeUndefined();
    expect(published.scripts).toBeUndefined();
  });

  test('"files" ships what users need and no build inputs (zig/, scripts/, build.zig, ts/)', () => {
    expect(manifest.files).toContain("dist/js");
    expect(manifest.files).toContain("lib/include");
    for (const input of ["zig", "scripts", "build.zig", "ts", "lib", "test", "bench"]) expect(manifest.files).not.toContain(input);
  });
});
