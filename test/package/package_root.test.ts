/**
 * The CLI's package root (ts/cli/package_root.ts): found by walking up to
 * the package.json named bun-arrow-device, whether the code runs from the
 * sources (ts/cli/) or from the compiled package (dist/js/cli/ inside
 * node_modules), past package.json files of other names.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { findPackageRoot, headerPath, packageRoot, packageVersion } from "../../ts/cli/package_root.ts";
import { testRoot } from "../helpers/paths.ts";

const root = resolve(testRoot, "..");
const work = realpathSync(mkdtempSync(join(tmpdir(), "abd-package-root-")));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe("package root", () => {
  test("from the sources: this checkout, its version and its header", () => {
    expect(packageRoot()).toBe(root);
    expect(packageVersion()).toBe((JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string }).version);
    expect(headerPath()).toBe(join(root, "lib", "include", "arrow_device.h"));
  });

  test("from an installed package's dist/js/cli/: the package folder, not dist/ or the app", () => {
    const pkg = join(work, "app", "node_modules", "bun-arrow-device");
    const cliDir = join(pkg, "dist", "js", "cli");
    mkdirSync(cliDir, { recursive: true });
    writeFileSync(join(work, "app", "package.json"), JSON.stringify({ name: "some-app", version: "9.9.9" }));
    writeFileSync(join(pkg, "package.json"), JSON.stringify({ name: "bun-arrow-device", version: "1.2.3" }));
    // A package.json of another name on the way up is passed over.
    writeFileSync(join(pkg, "dist", "package.json"), JSON.stringify({ type: "module" }));
    expect(findPackageRoot(cliDir)).toBe(pkg);
    expect(findPackageRoot(join(work, "app"))).toBeNull();
  });
});
