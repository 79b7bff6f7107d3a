/**
 * bench/compare.ts (`bun run bench`) runs end to end: its smallest mode
 * (--smoke: 1e3 and 1e4 rows, two rounds) prints every row of the
 * performance target table with a verdict and writes the same figures as
 * JSON, with pyarrow and without it. No timing is asserted: the figures of a smoke run
 * mean nothing, only their presence and shape are checked.
 */
import { describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { testRoot } from "../helpers/paths.ts";

const root = resolve(testRoot, "..");

type Target = { row: number; measure: string; value: number; holds: boolean | null };
type Cycle = { small: { mean: number; cycles: number }; large: { mean: number; cycles: number } };
type OwnProcess = Record<"ours" | "read", { small: number; large: number; figures: Record<string, Cycle> }>;
type Result = { meta: { mode: string; pyarrow: string }; targets: Target[]; ownProcess: OwnProcess; groups: Record<string, { k: number; samples: Record<string, { median: number; mean: number; cycles: number }> }> };

function runSmoke(env: Record<string, string> = {}): { exitCode: number | null; stdout: string; stderr: string; result: Result } {
  const dir = mkdtempSync(join(tmpdir(), "bench-smoke-"));
  try {
    const file = join(dir, "figures.json");
    const child = Bun.spawnSync([process.execPath, join(root, "bench", "compare.ts"), "--smoke", "--json", file], {
      cwd: root, env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe",
    });
    const stdout = child.stdout.toString();
    const stderr = child.stderr.toString();
    if (child.exitCode !== 0) throw new Error(`bench/compare.ts --smoke exited ${child.exitCode}:\n${stdout}\n${stderr}`);
    return { exitCode: child.exitCode, stdout, stderr, result: JSON.parse(readFileSync(file, "utf8")) as Result };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The nine target rows: (row, how many lines the script prints for it;
 * rows 4, 5, 6, 7 and 9 also with every column read). */
const rowLines: [number, number][] = [[1, 1], [2, 2], [3, 1], [4, 4], [5, 4], [6, 2], [7, 2], [8, 4], [9, 4]];

function expectEveryRow(run: ReturnType<typeof runSmoke>): void {
  const { stdout, result } = run;
  expect(result.targets.map((t) => t.row)).toEqual(rowLines.flatMap(([row, n]) => Array<number>(n).fill(row)));
  const printed = stdout.slice(stdout.indexOf("TARGETS\n"));
  for (const t of result.targets) {
    const line = printed.split("\n").find((l) => l.includes(t.measure));
    expect(line, t.measure).toBeDefined();
    expect(line!.trimStart().startsWith(String(t.row))).toBe(true);
    expect(line).toMatch(t.holds === null ? / n\/a$/ : t.holds ? / HOLDS$/ : / FAILS$/);
  }
  expect(stdout).not.toContain("still alive after the run");
}

describe("bench/compare.ts --smoke", () => {
  test("with pyarrow: every target row has a figure and a verdict; every shape has every contender", () => {
    const run = runSmoke();
    expect(run.stdout).not.toContain("pyarrow is unavailable");
    expectEveryRow(run);
    expect(run.result.meta.mode).toBe("smoke");
    expect(run.result.meta.pyarrow).toMatch(/^\d+\.\d+\.\d+/);
    for (const t of run.result.targets) {
      expect(Number.isFinite(t.value), t.measure).toBe(true);
      expect(typeof t.holds, t.measure).toBe("boolean");
    }
    for (const columns of [1, 10, 100, 1000]) {
      for (const rows of [1000, 10000]) {
        expect(Object.keys(run.result.groups[`export ${columns} x ${rows}`].samples).sort()).toEqual(["C floor", "ours", "pyarrow", "pyarrow.release"]);
        expect(Object.keys(run.result.groups[`import ${columns} x ${rows}`].samples).sort()).toEqual(["JS floor", "ours", "ours, read", "ours, read.construct", "ours, read.cycle", "ours.construct", "ours.cycle", "pyarrow", "pyarrow.cycle"]);
      }
    }
    expect(Object.keys(run.result.groups["export nested x 1000"].samples).sort()).toEqual(["ours", "pyarrow", "pyarrow.release"]);
    expect(Object.keys(run.result.groups["stream 2 columns x 1000 rows"].samples).sort()).toEqual(["JS floor", "ours", "ours, read", "pyarrow"]);
    // Row 8's producer role runs the C floor producer beside ours (each of
    // its blocks checks the sum the consumer added up) and prints its ceiling.
    expect(Object.keys(run.result.groups["async producer 1000 rows"].samples).sort()).toEqual(["C floor d16", "C floor d4", "C floor sync", "async d16", "async d4", "sync"]);
    for (const depth of [4, 16]) {
      const line = run.stdout.split("\n").find((l) => l.includes(`async / sync throughput, producer, depth ${depth},`));
      expect(line).toMatch(/C floor producer \S+ \S+\/batch \(its sync .*\); ceiling \d+\.\d+x/);
    }
    // Row 6 ran in two processes of its own: ours beside pyarrow, ours
    // reading every column beside the JS floor, each at both row counts.
    const own = run.result.ownProcess;
    expect(Object.keys(own.ours.figures).sort()).toEqual(["ours", "pyarrow"]);
    expect(Object.keys(own.read.figures).sort()).toEqual(["floor", "ours"]);
    for (const variant of [own.ours, own.read]) {
      expect([variant.small, variant.large]).toEqual([1000, 10000]);
      for (const f of Object.values(variant.figures)) for (const at of [f.small, f.large]) expect(at.cycles).toBeGreaterThanOrEqual(2);
    }
    const [row6, row6Read] = run.result.targets.filter((t) => t.row === 6);
    expect(row6.value).toBeCloseTo(own.ours.figures.ours.large.mean / own.ours.figures.ours.small.mean, 6);
    expect(row6Read.value).toBeCloseTo(own.read.figures.ours.large.mean / own.read.figures.ours.small.mean, 6);
    for (const group of Object.values(run.result.groups)) {
      for (const s of Object.values(group.samples)) {
        expect(s.cycles).toBeGreaterThanOrEqual(2 * group.k); // two rounds, nothing skipped
        expect(s.median).toBeGreaterThan(0);
        expect(s.mean).toBeGreaterThan(0);
      }
    }
  }, 60_000);

  test("without pyarrow: says why, still runs our side and the floors, pyarrow rows n/a", () => {
    const run = runSmoke({ ARROW_DEVICE_LIBPYTHON: join(root, "build", "no-such-libpython.so") });
    expect(run.stdout).toStartWith("pyarrow is unavailable, so only our side and the floors run: pyarrow could not be loaded: ");
    expectEveryRow(run);
    expect(run.result.meta.pyarrow).toBe("unavailable");
    const againstPyarrow = new Set([1, 2, 4, 7]);
    for (const t of run.result.targets) expect(t.holds === null, t.measure).toBe(againstPyarrow.has(t.row));
    expect(Object.keys(run.result.groups["export 1 x 1000"].samples).sort()).toEqual(["C floor", "ours"]);
    expect(run.result.groups["import nested x 1000"]).toBeUndefined();
    expect(Object.keys(run.result.ownProcess.ours.figures)).toEqual(["ours"]); // its child found no pyarrow either
  }, 60_000);
});
