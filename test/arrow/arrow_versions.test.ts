/**
 * The apache-arrow range of package.json's peerDependencies is the one the
 * code really supports: every apache-arrow export ts/ uses exists in its
 * lowest version, the release below lacks some, and a representative set
 * of conversion tests (every type out, every type in, whole tables through
 * streams) passes against the lowest and the highest version.
 *
 * Each version is installed by `setup.sh --test` into
 * .toolchain/apache-arrow-<version>/ (scripts/toolchain.env names them).
 * The tests run in a child `bun test` over a copy of ts/ and test/ whose
 * node_modules is that version's, so that every `from "apache-arrow"`
 * (the library's and the tests') loads it; lib/ and build/ are this
 * checkout's.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { exportArray } from "../../ts/index.ts";
import { supportedArrowRange } from "../../ts/core/args.ts";
import { arrowVersionProblem } from "../../ts/arrow/arrow_module.ts";
import { testRoot } from "../helpers/paths.ts";
import { withCode } from "../helpers/errors.ts";

const root = resolve(testRoot, "..");
const pinned = Object.fromEntries(
  readFileSync(join(root, "scripts", "toolchain.env"), "utf8").split("\n")
    .map((line) => /^(APACHE_ARROW_\w+)=(\S+)/.exec(line)).filter((m) => m !== null).map((m) => [m[1]!, m[2]!]),
) as Record<string, string>;
const lowest = pinned.APACHE_ARROW_LOWEST!;
const highest = pinned.APACHE_ARROW_HIGHEST!;
const below = pinned.APACHE_ARROW_BELOW!;
const subset = ["test/arrow/export_types.test.ts", "test/arrow/import_types.test.ts", "test/arrow/table.test.ts"];
const made: string[] = [];
afterAll(() => { for (const dir of made) rmSync(dir, { recursive: true, force: true }); });

function installed(version: string): string {
  const dir = join(root, ".toolchain", `apache-arrow-${version}`);
  if (!existsSync(join(dir, "node_modules", "apache-arrow", "package.json"))) {
    throw new Error(`apache-arrow ${version} is not installed in ${dir}; run bash scripts/setup.sh --test`);
  }
  return dir;
}

/** The value names ts/ imports from "apache-arrow" (type-only ones aside). */
function usedExports(): string[] {
  const names = new Set<string>();
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (path.endsWith(".ts")) {
        for (const m of readFileSync(path, "utf8").matchAll(/import\s*\{([^}]*)\}\s*from\s*"apache-arrow"/g)) {
          for (const part of m[1]!.split(",")) {
            const name = part.trim();
            if (name && !name.startsWith("type ")) names.add(name.split(/\s+as\s+/)[0]!);
          }
        }
      }
    }
  };
  walk(join(root, "ts"));
  // The names read through the version-checked module (ts/arrow/arrow_module.ts).
  for (const m of readFileSync(join(root, "ts", "arrow", "arrow_module.ts"), "utf8").matchAll(/= arrow\.(\w+);/g)) names.add(m[1]!);
  return [...names].sort();
}

function exportsOf(version: string): Record<string, unknown> {
  return require(join(installed(version), "node_modules", "apache-arrow", "Arrow.node.js")) as Record<string, unknown>;
}

/** A copy of ts/ and test/ whose node_modules is `version`'s. */
function mirror(version: string): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), `abd-arrow-${version}-`)));
  made.push(dir);
  cpSync(join(root, "ts"), join(dir, "ts"), { recursive: true });
  cpSync(join(root, "test"), join(dir, "test"), { recursive: true });
  cpSync(join(root, "tsconfig.json"), join(dir, "tsconfig.json"));
  symlinkSync(join(root, "lib"), join(dir, "lib"));
  symlinkSync(join(root, "build"), join(dir, "build"));
  symlinkSync(join(installed(version), "node_modules"), join(dir, "node_modules"));
  return dir;
}

function runIn(dir: string, cmd: string[]): { exitCode: number; output: string } {
  const proc = Bun.spawnSync(cmd, { cwd: dir, env: { ...process.env, ARROW_DEVICE_LIBRARY: undefined } });
  return { exitCode: proc.exitCode, output: proc.stdout.toString() + proc.stderr.toString() };
}

describe("the apache-arrow range", () => {
  test("package.json's peer range starts at the lowest supported version and holds the highest", () => {
    const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { peerDependencies: Record<string, string>; devDependencies: Record<string, string> };
    const major = Number(lowest.split(".")[0]);
    expect(manifest.peerDependencies["apache-arrow"]).toBe(`>=${lowest} <${major + 1}`);
    expect(Bun.semver.satisfies(highest, manifest.peerDependencies["apache-arrow"]!)).toBe(true);
    expect(Bun.semver.satisfies(below, manifest.peerDependencies["apache-arrow"]!)).toBe(false);
    expect(Bun.semver.satisfies(manifest.devDependencies["apache-arrow"]!, manifest.peerDependencies["apache-arrow"]!)).toBe(true);
  });

  test("every apache-arrow export ts/ uses is in the lowest version; the release below lacks some", () => {
    const used = usedExports();
    expect(used).toContain("BinaryView");
    expect(used.filter((name) => exportsOf(lowest)[name] === undefined)).toEqual([]);
    expect(used.filter((name) => exportsOf(below)[name] === undefined)).toEqual(["BinaryView", "LargeList", "Utf8View"]);
  });

  for (const version of [...new Set([lowest, highest])]) {
    test(`conversion tests pass against apache-arrow ${version}${version === lowest ? " (lowest)" : ""}${version === highest ? " (highest)" : ""}`, () => {
      const dir = mirror(version);
      const resolved = runIn(join(dir, "ts"), [process.execPath, "-e", 'console.log(require.resolve("apache-arrow"))']);
      expect(resolved.output.trim()).toStartWith(realpathSync(join(installed(version), "node_modules", "apache-arrow")));
      const result = runIn(dir, [process.execPath, "test", "--timeout", "60000", ...subset]);
      const counts = { pass: /(\d+) pass/.exec(result.output)?.[1], fail: /(\d+) fail/.exec(result.output)?.[1] };
      if (result.exitCode !== 0) console.error(result.output.slice(-4000));
      expect({ exitCode: result.exitCode, fail: counts.fail }).toEqual({ exitCode: 0, fail: "0" });
      expect(Number(counts.pass)).toBeGreaterThan(100);
    }, 180_000);
  }

  test("the range the code checks at load is package.json's peer range", () => {
    const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { peerDependencies: Record<string, string> };
    expect(supportedArrowRange).toBe(manifest.peerDependencies["apache-arrow"]!);
  });

  test(`with apache-arrow ${below}, loading the library throws an UnsupportedError naming this package and the supported range`, () => {
    const dir = mirror(below);
    const script = `await import("${join(dir, "ts", "index.ts")}").then(() => console.log("loaded"), (e) => console.log(e.name + ": " + e.message))`;
    const result = runIn(dir, [process.execPath, "-e", script]);
    expect(result.output.trim()).toBe(`UnsupportedError: bun-arrow-device needs apache-arrow ${supportedArrowRange} (its peer dependency), but this app loads apache-arrow ${below} (it lacks BinaryView, LargeList, Utf8View): install a version in that range, e.g. \`bun add apache-arrow@${lowest}\``);
    expect(result.exitCode).toBe(0);
  });

  test("a version outside the range is refused even when it has every export; one inside is not", () => {
    const all = { BinaryView: 1, LargeList: 1, Utf8View: 1 };
    expect(arrowVersionProblem("22.0.0", all)).toStartWith(`bun-arrow-device needs apache-arrow ${supportedArrowRange} (its peer dependency), but this app loads apache-arrow 22.0.0: install`);
    expect(arrowVersionProblem(highest, all)).toBeNull();
    expect(arrowVersionProblem(null, { ...all, Utf8View: undefined })).toContain("an apache-arrow of unknown version (it lacks Utf8View)");
  });

  test(`a RecordBatch of another apache-arrow copy (${below}) is refused with an error that says so`, () => {
    const other = exportsOf(below) as { tableFromArrays: (columns: Record<string, Int32Array>) => { batches: unknown[] } };
    const batch = other.tableFromArrays({ x: Int32Array.of(1, 2) }).batches[0];
    expect(() => exportArray(batch as never)).toThrow(withCode("invalid_argument"));
    expect(() => exportArray(batch as never)).toThrow(`exportArray: source must be an apache-arrow Data, Vector, RecordBatch or Table, not a RecordBatch from another copy of apache-arrow (the app needs one, in ${supportedArrowRange})`);
  });
});
