/**
 * The fuzzer in the test command: a fixed seed,
 * bounded to well under a minute on a 2-core machine. Longer runs:
 * `bun run fuzz --cases 1000000` (docs/fuzzing.md).
 *
 * Every case runs in a worker process (test/fuzz/worker.ts) so that a crash
 * is caught and named by its seed and case number; every buffer ends
 * against a PROT_NONE page; imports run at every level (`none`, `minimal`,
 * `default`, `full`); errors must be typed; the producer counts every
 * release (exactly once); and every level is compared with Arrow C++ on
 * every honest CPU case: `full` accepts exactly what ValidateFull accepts,
 * no level rejects what ValidateFull accepts, and `default` rejects what
 * Validate rejects, outside the documented differences
 * (test/fuzz/differences.ts, docs/validation.md).
 */
import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runAll, runFuzz } from "../fuzz/driver.ts";
import { generateCase } from "../fuzz/generate.ts";

const seed = 20261123;
/** FUZZ_CASES overrides the count (scripts/sanitize.sh runs fewer). */
const cases = Number(process.env.FUZZ_CASES ?? 6000);

describe("fuzzer", () => {
  test("the harness catches a read past a guarded buffer as a crash and a stuck case as a hang, naming each case", async () => {
    const dir = mkdtempSync(join(tmpdir(), "fuzz-selftest-"));
    try {
      const caught: [number, boolean, string][] = [];
      const onCrash = (index: number, hang: boolean, detail: string) => caught.push([index, hang, detail]);
      // Generous limits: a loaded machine must not turn a slow start into a hang.
      const results = await runAll("selftest", 1, [0, 1, 2, 3, 5, 6, 8], dir, { perCaseMs: 1000, minWorkerMs: 60_000 }, onCrash);
      expect(caught.map(([index, hang]) => [index, hang])).toEqual([[3, false], [8, false]]);
      expect(caught[0][2]).toContain("SIGSEGV");
      expect([...results.keys()].sort()).toEqual([0, 1, 2, 5, 6]);
      // A case that never returns is killed at the limit and named.
      caught.length = 0;
      expect((await runAll("selftest", 1, [4], dir, { perCaseMs: 100, minWorkerMs: 3000 }, onCrash)).size).toBe(0);
      expect(caught.map(([index, hang]) => [index, hang])).toEqual([[4, true]]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  test("cases are reproducible from their seed and number, and cover every base type", () => {
    expect(JSON.stringify(generateCase(seed, 123))).toBe(JSON.stringify(generateCase(seed, 123)));
    const bases = new Set(Array.from({ length: 2000 }, (_, i) => generateCase(seed, i).mutations[0]));
    expect(bases.size).toBeGreaterThanOrEqual(55);
  });

  test(`${cases} cases: no crash, no hang, typed errors, releases exactly once, Arrow C++ agrees at every level`, async () => {
    const report = await runFuzz({ seed, cases, chunk: 2000 });
    const summary = report.findings.map((f) => `${f.kind} at seed ${f.seed} case ${f.index}: ${f.detail} [${f.mutations.join("; ")}]`);
    expect(summary).toEqual([]);
    expect(report.crashes + report.hangs + report.problems + report.disagreements).toBe(0);
    // The comparison really ran, on valid and invalid trees alike.
    expect(report.compared).toBeGreaterThan(cases / 4);
    expect(report.imports.full.accepted).toBeGreaterThan(cases / 10);
    expect(report.imports.full.run - report.imports.full.accepted).toBeGreaterThan(cases / 10);
    // Every level was compared on every compared case, trees it rejects included.
    for (const level of ["none", "minimal", "default", "full", "default/Validate"]) {
      expect(report.levels[level]?.compared, level).toBe(report.compared);
      expect(report.levels[level].disagreements, level).toBe(0);
    }
    expect(report.imports.default.run - report.imports.default.accepted).toBeGreaterThan(cases / 10);
  }, 300_000);
});
