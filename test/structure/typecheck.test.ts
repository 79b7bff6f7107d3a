/**
 * The TypeScript layer type-checks, so that types cannot silently rot: the
 * TypeScript that package.json pins runs `tsc --noEmit -p tsconfig.json`
 * (strict; ts/, test/, bench/ and examples/) in a subprocess, under Bun,
 * and any error fails this test with tsc's own output.
 *
 * Incremental: tsc keeps what it learned in build/typecheck.tsbuildinfo
 * (git-ignored; it records a hash of every input, its own version
 * included), so an unchanged tree checks in about a second and a cold one
 * in a few.
 */
import { describe, expect, test } from "bun:test";
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { testRoot } from "../helpers/paths.ts";

const root = resolve(testRoot, "..");
const tsc = join(root, "node_modules", "typescript", "bin", "tsc");

/** Runs tsc; its output goes through a file, not a pipe: a Bun process
 * that exits right after writing to a pipe can lose the tail of it. */
function runTsc(...args: string[]): { exitCode: number; output: string } {
  const dir = mkdtempSync(join(tmpdir(), "typecheck-"));
  const outputPath = join(dir, "tsc.txt");
  const fd = openSync(outputPath, "w");
  try {
    const result = Bun.spawnSync([process.execPath, tsc, "-p", "tsconfig.json", "--pretty", "false", ...args], {
      cwd: root,
      stdout: fd,
      stderr: fd,
    });
    return { exitCode: result.exitCode, output: readFileSync(outputPath, "utf8").trim() };
  } finally {
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  }
}

function versionOf(packageJson: string): string {
  return (JSON.parse(readFileSync(packageJson, "utf8")) as { version: string }).version;
}

describe("type check", () => {
  test("the installed TypeScript is the one package.json pins", () => {
    const pinned = (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { devDependencies: Record<string, string> })
      .devDependencies.typescript;
    expect(pinned).toMatch(/^\d+\.\d+\.\d+$/); // exact, no range
    expect(versionOf(join(root, "node_modules", "typescript", "package.json"))).toBe(pinned);
  });

  test("tsconfig.json covers ts/, test/, bench/ and examples/", () => {
    const listed = runTsc("--listFilesOnly");
    expect(listed.exitCode).toBe(0);
    const ours = listed.output.split("\n").map((path) => relative(root, path.trim())).filter((path) => !path.startsWith("node_modules"));
    for (const file of ["ts/index.ts", "ts/core/ffi/bun_ffi.ts", "test/structure/typecheck.test.ts", "bench/async.ts", "examples/demo.ts"]) {
      expect(ours).toContain(file);
    }
  });

  test("typed addresses: a swapped or mismatched struct address fails tsc, structPointer compiles", () => {
    // test/typecheck/typed_addresses.ts, with its @ts-expect-error
    // directives blanked (line numbers kept), checked on its own: exactly
    // the lines they marked fail, each for a typed address.
    const source = readFileSync(join(root, "test", "typecheck", "typed_addresses.ts"), "utf8").split("\n");
    const marked = source.flatMap((line, i) => (line.trim().startsWith("// @ts-expect-error") ? [i + 2] : []));
    expect(marked.length).toBeGreaterThanOrEqual(9);
    const dir = join(root, "build", "typecheck-cases");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "typed_addresses.ts"), source.map((line) => (line.trim().startsWith("// @ts-expect-error") ? "//" : line)).join("\n"));
    writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ extends: "../../tsconfig.json", include: [], files: ["./typed_addresses.ts"] }));
    const checked = runTsc("--noEmit", "-p", join("build", "typecheck-cases", "tsconfig.json"));
    const errors = checked.output.split("\n").filter((line) => /^build\/typecheck-cases\/typed_addresses\.ts\(\d+,\d+\): error/.test(line));
    const lines = [...new Set(errors.map((line) => Number(/\((\d+),/.exec(line)![1])))];
    expect(lines).toEqual(marked);
    for (const line of errors) expect(line).toMatch(/StructPointer|StructRef|TS2769/);
  }, 120_000);

  test("tsc --noEmit -p tsconfig.json reports no error", () => {
    const checked = runTsc("--noEmit", "--incremental", "--tsBuildInfoFile", join("build", "typecheck.tsbuildinfo"));
    // On failure the diff shows every error, one per line, as tsc prints it.
    expect(checked).toEqual({ exitCode: 0, output: "" });
  }, 120_000);
});
