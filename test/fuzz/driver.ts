/**
 * The fuzz driver: runs cases in worker processes (worker.ts), chunk by
 * chunk, and turns what they report into one FuzzReport.
 *
 * - A worker that dies (a signal, a non-zero exit) names the case it was
 *   in: a crash, reported with seed and case number; the chunk goes on
 *   from the next case in a fresh worker.
 * - A worker that outlives its time limit is killed: the case it was in
 *   is a hang.
 * - Library outcomes carry their own problems (untyped errors, releases
 *   not exactly once).
 * - Every honest CPU case also goes to an Arrow C++ worker
 *   (ImportDeviceArray, then Validate and ValidateFull), and every level's
 *   verdict is compared with it: `full` must agree with ValidateFull
 *   (accept exactly what it accepts); `none`, `minimal` and `default` check
 *   less, so they may accept what ValidateFull rejects, but may reject
 *   nothing it accepts. `default` is also compared with Validate, the
 *   O(1)-per-node check: what Validate rejects, `default` must reject.
 *   Differences that follow the documented level differences
 *   (differences.ts) are counted apart; the rest are disagreements. The
 *   levels must nest too: a tree one level rejects, every stricter level
 *   rejects. Arrow C++ crashing on a case is counted, not a finding: it is
 *   the reference, not the code under test.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ArrowOutcome, LibraryOutcome } from "./cases.ts";
import { documentedDifference } from "./differences.ts";
import { generateCase } from "./generate.ts";

export type FuzzOptions = {
  seed: number;
  cases: number;
  /** First case number (default 0). */
  from?: number;
  /** Cases per worker process (default 2000). */
  chunk?: number;
  /** A worker is killed (its case is a hang) after this long per case on
   * average, with at least `minWorkerMs` (defaults 200 ms, 60 s). */
  perCaseMs?: number;
  minWorkerMs?: number;
  /** Compare with Arrow C++ (default true). */
  arrow?: boolean;
  /** Progress lines. */
  log?: (line: string) => void;
};

export type Finding = { kind: "crash" | "hang" | "problem" | "disagreement"; seed: number; index: number; detail: string; mutations: string[] };

const levelOrder = ["none", "minimal", "default", "full"] as const;

/** One level's comparison with Arrow C++. */
export type LevelComparison = { compared: number; agreements: number; documented: number; disagreements: number };

export type FuzzReport = {
  seed: number;
  from: number;
  cases: number;
  /** Cases not run: a metadata blob claims more memory than could be given. */
  notRunnable: number;
  /** Cases run at `minimal` only (a buffer would have to be too large). */
  minimalOnly: number;
  /** Imports at each level, and how many of them were accepted. */
  imports: Record<string, { run: number; accepted: number }>;
  crashes: number;
  hangs: number;
  problems: number;
  /** Cases compared with Arrow C++, and `full` agreeing with ValidateFull. */
  compared: number;
  agreements: number;
  /** Every level against Arrow C++ (`default` against Validate too, as
   * "default/Validate"). */
  levels: Record<string, LevelComparison>;
  documented: Record<string, number>;
  disagreements: number;
  arrowCrashes: number;
  seconds: number;
  findings: Finding[];
};

const workerPath = join(import.meta.dir, "worker.ts");

type WorkerRun = { done: Map<number, string>; culprit: number | null; timedOut: boolean; exit: string; stderr: string };

type WorkerMode = "library" | "arrow" | "selftest";

async function runWorker(mode: WorkerMode, seed: number, indices: number[], dir: string, limitMs: number): Promise<WorkerRun> {
  const list = join(dir, `${mode}.list`);
  const out = join(dir, `${mode}.out`);
  writeFileSync(list, indices.join("\n"));
  rmSync(out, { force: true });
  const child = Bun.spawn([process.execPath, workerPath, "--mode", mode, "--seed", String(seed), "--list", list, "--out", out], {
    stdout: "ignore", stderr: "pipe", timeout: limitMs, killSignal: "SIGKILL",
  });
  const stderr = await new Response(child.stderr).text();
  const code = await child.exited;
  const done = new Map<number, string>();
  let started: number | null = null;
  let text = "";
  try {
    text = readFileSync(out, "utf8");
  } catch {
    // The worker died before writing anything.
  }
  for (const line of text.split("\n")) {
    if (line.startsWith("start ")) started = Number(line.slice(6));
    else if (line.startsWith("done ")) {
      const space = line.indexOf(" ", 5);
      const index = Number(line.slice(5, space));
      done.set(index, line.slice(space + 1));
      if (started === index) started = null;
    }
  }
  const timedOut = child.signalCode === "SIGKILL";
  const clean = code === 0 && child.signalCode === null;
  const culprit = clean ? null : started ?? indices.find((i) => !done.has(i)) ?? null;
  const exit = child.signalCode ? `signal ${child.signalCode}` : `exit code ${code}`;
  return { done, culprit, timedOut, exit, stderr };
}

/** The first lines of a crash report worth keeping. */
function crashSummary(stderr: string): string {
  const lines = stderr.split("\n").filter((l) => /panic|error|fault|Error|assert|reached unreachable/.test(l));
  return lines.slice(0, 3).join(" | ").slice(0, 400);
}

/** Runs `indices` in workers until each has a result or is a crash/hang. */
export async function runAll(mode: WorkerMode, seed: number, indices: number[], dir: string, options: Required<Pick<FuzzOptions, "perCaseMs" | "minWorkerMs">>,
  onCrash: (index: number, hang: boolean, detail: string) => void): Promise<Map<number, string>> {
  const results = new Map<number, string>();
  let pending = indices;
  while (pending.length > 0) {
    const run = await runWorker(mode, seed, pending, dir, Math.max(options.minWorkerMs, pending.length * options.perCaseMs));
    for (const [i, r] of run.done) results.set(i, r);
    if (run.culprit === null) break;
    onCrash(run.culprit, run.timedOut, run.timedOut ? `no result within the time limit (${run.exit})` : `${run.exit}: ${crashSummary(run.stderr)}`);
    const at = pending.indexOf(run.culprit);
    pending = pending.slice(at + 1).filter((i) => !results.has(i));
  }
  return results;
}

export async function runFuzz(options: FuzzOptions): Promise<FuzzReport> {
  const started = performance.now();
  const seed = options.seed;
  const from = options.from ?? 0;
  const chunk = options.chunk ?? 2000;
  const limits = { perCaseMs: options.perCaseMs ?? 200, minWorkerMs: options.minWorkerMs ?? 60_000 };
  const useArrow = options.arrow ?? true;
  const report: FuzzReport = {
    seed, from, cases: options.cases, notRunnable: 0, minimalOnly: 0, imports: {}, crashes: 0, hangs: 0, problems: 0,
    compared: 0, agreements: 0, levels: {}, documented: {}, disagreements: 0, arrowCrashes: 0, seconds: 0, findings: [],
  };
  const find = (kind: Finding["kind"], index: number, detail: string) => {
    if (report.findings.length < 200) report.findings.push({ kind, seed, index, detail, mutations: generateCase(seed, index).mutations });
  };
  /**
   * One level against one Arrow C++ verdict. `full` must accept exactly
   * what ValidateFull accepts; a weaker level may accept more but reject
   * nothing ValidateFull accepts; `default/Validate`: what Validate
   * rejects, `default` rejects.
   */
  const compareLevel = (level: string, mine: string, arrow: string, index: number) => {
    const counts = (report.levels[level] ??= { compared: 0, agreements: 0, documented: 0, disagreements: 0 });
    counts.compared++;
    const agree = level === "full" ? (mine === "ok") === (arrow === "ok")
      : level === "default/Validate" ? mine !== "ok" || arrow === "ok"
      : mine === "ok" || arrow !== "ok";
    if (agree) {
      counts.agreements++;
      if (level === "full") report.agreements++;
      return;
    }
    const documented = documentedDifference(mine, arrow);
    if (documented) {
      counts.documented++;
      report.documented[documented] = (report.documented[documented] ?? 0) + 1;
      return;
    }
    counts.disagreements++;
    report.disagreements++;
    find("disagreement", index, `library ${level}: ${mine.slice(0, 200)} / Arrow C++ ${level === "default/Validate" ? "Validate" : "ValidateFull"}: ${arrow.slice(0, 200)}`);
  };
  const libraryDir = mkdtempSync(join(tmpdir(), "fuzz-library-"));
  const arrowDir = mkdtempSync(join(tmpdir(), "fuzz-arrow-"));
  let arrowRun: Promise<void> = Promise.resolve();
  try {
    for (let begin = from; begin < from + options.cases; begin += chunk) {
      const indices = Array.from({ length: Math.min(chunk, from + options.cases - begin) }, (_, k) => begin + k);
      const results = await runAll("library", seed, indices, libraryDir, limits, (index, hang, detail) => {
        if (hang) report.hangs++;
        else report.crashes++;
        find(hang ? "hang" : "crash", index, detail);
      });
      // Our verdicts at every level, for the comparison.
      const ours = new Map<number, Map<string, string>>();
      for (const [index, text] of results) {
        const outcomes = JSON.parse(text) as LibraryOutcome[];
        if (outcomes.length === 0) report.notRunnable++;
        if (outcomes.length === 1) report.minimalOnly++;
        for (const o of outcomes) {
          const counts = (report.imports[o.level] ??= { run: 0, accepted: 0 });
          counts.run++;
          if (o.verdict === "ok") counts.accepted++;
          for (const p of o.problems) {
            report.problems++;
            find("problem", index, `${o.level}: ${p}`);
          }
        }
        const verdicts = new Map(outcomes.map((o) => [o.level as string, o.verdict]));
        // The levels nest: what one rejects, every stricter one rejects.
        // `none` and `minimal` do not compare: `none` reads the values that
        // size buffers (last offsets, variadic sizes), `minimal` no buffer.
        for (let a = 0; a < levelOrder.length; a++) {
          for (let b = a + 1; b < levelOrder.length; b++) {
            if (levelOrder[a] === "none" && levelOrder[b] === "minimal") continue;
            const weaker = verdicts.get(levelOrder[a]);
            const stricter = verdicts.get(levelOrder[b]);
            if (weaker !== undefined && weaker !== "ok" && stricter === "ok") {
              report.problems++;
              find("problem", index, `${levelOrder[a]} rejects (${weaker.slice(0, 200)}) but ${levelOrder[b]} accepts`);
            }
          }
        }
        if (verdicts.size === levelOrder.length) ours.set(index, verdicts);
      }
      // The progress line counts what the report counts: it is written once
      // the chunk's Arrow C++ comparison is in.
      const progress = () => options.log?.(`cases ${indices[0]}..${indices[indices.length - 1]}: ${report.crashes} crashes, ${report.hangs} hangs, ${report.problems} problems, ${report.disagreements} disagreements, ${report.compared} compared (${Math.round((performance.now() - started) / 1000)} s)`);
      if (!useArrow) {
        progress();
        continue;
      }
      await arrowRun; // one Arrow C++ worker at a time, beside the next library chunk
      const toCompare = [...ours.keys()];
      arrowRun = runAll("arrow", seed, toCompare, arrowDir, limits, () => { report.arrowCrashes++; }).then((arrow) => {
        for (const [index, text] of arrow) {
          const verdict = JSON.parse(text) as ArrowOutcome | null;
          if (verdict === null) continue;
          report.compared++;
          const mine = ours.get(index)!;
          for (const level of levelOrder) compareLevel(level, mine.get(level)!, verdict.full, index);
          compareLevel("default/Validate", mine.get("default")!, verdict.quick, index);
        }
        progress();
      });
    }
    await arrowRun;
  } finally {
    rmSync(libraryDir, { recursive: true, force: true });
    rmSync(arrowDir, { recursive: true, force: true });
  }
  report.seconds = Math.round((performance.now() - started) / 100) / 10;
  return report;
}
