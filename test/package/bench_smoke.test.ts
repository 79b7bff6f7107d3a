/**
 * bench/run.ts (`bun run bench`) lists and runs its sections, and its
 * default section, bench/compare.ts, runs end to end: its smallest mode
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
import { plan, sections } from "../../bench/run.ts";

const root = resolve(testRoot, "..");

type Target = { group: string; measure: string; value: number; holds: boolean | null; spread: number };
type Cycle = { small: { mean: number; cycles: number }; large: { mean: number; cycles: number } };
type OwnProcess = Record<"ours" | "read", { small: number; large: number; figures: Record<string, Cycle> }>;
type Result = { meta: { mode: string; pyarrow: string }; targets: Target[]; ownProcess: OwnProcess; groups: Record<string, { k: Record<string, number>; samples: Record<string, { median: number; mean: number; cycles: number }> }> };

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

/** The targets: (group, how many lines the script prints for it; most
 * also with every column read). */
const groupLines: [string, number][] = [
  ["export per buffer", 3], ["export fixed cost", 1], ["import + construct", 4], ["construction", 4],
  ["full cycle", 2], ["stream per batch", 2], ["async hand-off", 4], ["IPC round trip", 4],
];

function expectEveryRow(run: ReturnType<typeof runSmoke>): void {
  const { stdout, result } = run;
  expect(result.targets.map((t) => t.group)).toEqual(groupLines.flatMap(([group, n]) => Array<string>(n).fill(group)));
  const printed = stdout.slice(stdout.indexOf("TARGETS\n"));
  for (const t of result.targets) {
    const line = printed.split("\n").find((l) => l.includes(t.measure));
    expect(line, t.measure).toBeDefined();
    expect(line!.trimStart().startsWith(t.group)).toBe(true);
    // The verdict, flagged when the row's samples spread over 3x.
    const flag = t.spread > 3 ? " \\(UNSTEADY\\)" : "";
    expect(line).toMatch(new RegExp(`${t.holds === null ? " n/a" : t.holds ? " HOLDS" : " FAILS"}${flag}$`));
    expect(line).toContain(` ${t.spread.toFixed(2)}x `);
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
    // The consumer role runs a C floor consumer beside ours; the IPC
    // groups their floors in their own rounds.
    expect(Object.keys(run.result.groups["async consumer 1000 rows"].samples).sort()).toEqual(["C floor d16", "C floor d4", "async d16", "async d4", "async d4, no view", "sync"]);
    for (const columns of [1, 100]) expect(Object.keys(run.result.groups[`ipc ${columns} columns x 1000 rows`].samples)).toContain("floors");
    for (const t of run.result.targets) expect(t.spread, t.measure).toBeGreaterThanOrEqual(1);
    for (const depth of [4, 16]) {
      const consumer = run.stdout.split("\n").find((l) => l.includes(`async / sync throughput, consumer, depth ${depth},`));
      expect(consumer).toMatch(/C floor consumer \S+ \S+\/batch, ours \d+\.\d+x of it/);
      // The first depth also prints ours without its one view per batch.
      if (depth === 4) expect(consumer).toMatch(/without the view \S+ \S+\/batch, \d+\.\d+x/);
      else expect(consumer).not.toContain("without the view");
      const line = run.stdout.split("\n").find((l) => l.includes(`async producer / C floor producer, time per batch, depth ${depth},`));
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
    const [cycle, cycleRead] = run.result.targets.filter((t) => t.group === "full cycle");
    expect(cycle.value).toBeCloseTo(own.ours.figures.ours.large.mean / own.ours.figures.ours.small.mean, 6);
    expect(cycleRead.value).toBeCloseTo(own.read.figures.ours.large.mean / own.read.figures.ours.small.mean, 6);
    for (const group of Object.values(run.result.groups)) {
      for (const [name, s] of Object.entries(group.samples)) {
        // Each contender has its own k; a part ("ours.construct") is timed
        // in its contender's blocks.
        const k = group.k[name.split(".")[0]];
        expect(k, name).toBeGreaterThanOrEqual(1);
        expect(s.cycles).toBeGreaterThanOrEqual(2 * k); // two rounds, nothing skipped
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
    // Unread stream batches are compared with pyarrow; read ones with the JS floor.
    const againstPyarrow = (t: { group: string; measure: string }) =>
      ["export per buffer", "import + construct"].includes(t.group) || (t.group === "stream per batch" && !t.measure.endsWith("every column read"));
    for (const t of run.result.targets) expect(t.holds === null, t.measure).toBe(againstPyarrow(t));
    expect(Object.keys(run.result.groups["export 1 x 1000"].samples).sort()).toEqual(["C floor", "ours"]);
    expect(run.result.groups["import nested x 1000"]).toBeUndefined();
    expect(Object.keys(run.result.ownProcess.ours.figures)).toEqual(["ours"]); // its child found no pyarrow either
  }, 60_000);
});

describe("bun run bench (bench/run.ts)", () => {
  const bench = (args: string[]) => Bun.spawnSync([process.execPath, join(root, "bench", "run.ts"), ...args], { cwd: root, stdout: "pipe", stderr: "pipe" });

  test("package.json's bench script is the entry point, and every section's script exists", () => {
    expect(JSON.parse(readFileSync(join(root, "package.json"), "utf8")).scripts.bench).toBe("bun bench/run.ts");
    for (const section of sections) expect(Bun.file(join(root, "bench", section.script)).size).toBeGreaterThan(0);
    expect(new Set(sections.map((s) => s.name)).size).toBe(sections.length);
  });

  test("--list names every section; an unknown section is a usage error (exit 2)", () => {
    const list = bench(["--list"]);
    expect(list.exitCode).toBe(0);
    expect(list.stdout.toString().trim().split("\n").map((line) => line.split(/\s+/)[0])).toEqual(sections.map((s) => s.name));
    const wrong = bench(["--section", "row-3"]);
    expect(wrong.exitCode).toBe(2);
    expect(wrong.stderr.toString()).toStartWith('bench: no section "row-3"\nusage: bun run bench');
  });

  test("the plan: compare by default; --quick adds each section's short arguments; other arguments pass through", () => {
    expect(plan([])).toEqual({ runs: [{ section: sections[0]!, args: [] }] });
    expect(plan(["--quick", "--json", "x.json"])).toEqual({ runs: [{ section: sections[0]!, args: ["--quick", "--json", "x.json"] }] });
    const probe = sections.find((s) => s.name === "address-probe")!;
    const reexport = sections.find((s) => s.name === "reexport")!;
    expect(plan(["--section", "address-probe,reexport", "--quick"])).toEqual({ runs: [{ section: probe, args: ["--rounds", "3"] }, { section: reexport, args: [] }] });
    expect("runs" in plan(["--all"]) && (plan(["--all"]) as { runs: unknown[] }).runs.length).toBe(sections.length);
    expect(plan(["--section"])).toEqual({ error: "--section needs a section name" });
  });

  test("one section runs through the entry point", () => {
    const run = bench(["--section", "address-probe", "--quick"]);
    expect(run.stderr.toString()).toBe("");
    expect(run.exitCode).toBe(0);
    expect(run.stdout.toString()).toContain("C producer: import + dispose, 10 column(s) x 1000");
  }, 120_000);
});
