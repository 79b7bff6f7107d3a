/**
 * Row 6 (the full cycle's MEAN at large rows over small rows) measured in
 * processes of its own.
 *
 * Why not in bench/compare.ts's process: a mean counts every collection
 * that lands in a contender's cycles, and JSC starts collections on what
 * the whole process allocated, external ArrayBuffers included. Beside
 * ours, that process runs the JS floor and the "every column read"
 * variant, which wrap 400 MB of external ArrayBuffers per cycle at 10 x
 * 1e7, and every other group; the collections they start land in our
 * cycles as much as in theirs (measured: 4.7x to 21x there, 0.98x alone).
 * So each variant runs here in a child process with nothing else:
 *
 *   ours:  ours (import + RecordBatch + dispose, nothing read) and
 *          pyarrow, interleaved, at 10 x small and 10 x large rows;
 *   read:  ours with every column's values and validity read once, and
 *          the JS floor (a view per buffer, as reading makes them).
 *
 * `bun bench/compare/own_process.ts --variant ours|read --mode M --json F`
 * is the child; `row6InOwnProcesses(mode)` spawns one per variant.
 */
import { readFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { importGroup, type Context, type Shape } from "./cases.ts";
import { SlotPool } from "./floor.ts";
import { openPyarrow } from "./pyarrow.ts";
import { runGroups } from "./runner.ts";
import type { Summary } from "./stats.ts";

export type Variant = "ours" | "read";
export type Mode = "smoke" | "quick" | "full";

/** The contenders each variant keeps, and the sample each full-cycle figure
 * reads (a cycle: the C produce + what the contender does). */
export const variants: Record<Variant, { keep: string[]; figures: Record<string, string> }> = {
  ours: { keep: ["ours", "pyarrow"], figures: { ours: "ours.cycle", pyarrow: "pyarrow.cycle" } },
  read: { keep: ["ours, read", "JS floor"], figures: { ours: "ours, read.cycle", floor: "JS floor" } },
};

/** Rows, rounds and time per mode (bench/compare.ts's row counts). The
 * budget ends the rounds, not their count: a mean is only as steady as the
 * number of collections in it (150 rounds of 0.25 ms blocks saw two or
 * three of ours, and the row moved between 0.66 and 2.6). */
const settings: Record<Mode, { small: number; large: number; rounds: number; minRounds: number; blockNs: number; budgetNs: number; kMax: number }> = {
  smoke: { small: 1e3, large: 1e4, rounds: 2, minRounds: 2, blockNs: 30e3, budgetNs: 1e9, kMax: 64 },
  quick: { small: 1e3, large: 1e7, rounds: Infinity, minRounds: 8, blockNs: 250e3, budgetNs: 4e9, kMax: 4096 },
  full: { small: 1e3, large: 1e7, rounds: Infinity, minRounds: 30, blockNs: 1e6, budgetNs: 12e9, kMax: 8192 },
};

/** One variant's figures: by rows, by figure name, the summary. */
export type OwnProcessResult = { variant: Variant; small: number; large: number; rounds: number; figures: Record<string, { small: Summary; large: Summary }> };

/** The child: runs `variant` alone and returns its figures. */
export async function runVariant(variant: Variant, mode: Mode): Promise<OwnProcessResult> {
  const s = settings[mode];
  const { pyarrow: py } = openPyarrow();
  const pool = new SlotPool(s.kMax);
  const ctx: Context = { py, pool, cleanups: [] };
  try {
    const shape = (rows: number): Shape => ({ id: `10 x ${rows}`, columns: 10, rows, nested: false });
    const groups = [shape(s.small), shape(s.large)].map((sh) => {
      const g = importGroup(sh, ctx)!;
      g.contenders = g.contenders.filter((c) => variants[variant].keep.includes(c.name));
      return g;
    });
    const rounds = await runGroups(groups, s);
    const figures: OwnProcessResult["figures"] = {};
    for (const [name, sample] of Object.entries(variants[variant].figures)) {
      const [small, large] = groups.map((g) => g.samples.get(sample)?.summary());
      if (small && large) figures[name] = { small, large };
    }
    return { variant, small: s.small, large: s.large, rounds, figures };
  } finally {
    for (const cleanup of ctx.cleanups.reverse()) cleanup();
    pool.free();
  }
}

/** Runs each variant in a child process of its own, one after the other
 * (so neither's collections reach the other). Throws with the child's
 * output if one fails. */
export function row6InOwnProcesses(mode: Mode, log?: (line: string) => void): Record<Variant, OwnProcessResult> {
  const dir = mkdtempSync(join(tmpdir(), "bench-row6-"));
  try {
    const out = {} as Record<Variant, OwnProcessResult>;
    for (const variant of Object.keys(variants) as Variant[]) {
      const file = join(dir, `${variant}.json`);
      const child = Bun.spawnSync([process.execPath, import.meta.path, "--variant", variant, "--mode", mode, "--json", file], { stdout: "pipe", stderr: "pipe" });
      if (child.exitCode !== 0) throw new Error(`the full cycle (${variant}) in its own process exited ${child.exitCode}:\n${child.stdout.toString()}\n${child.stderr.toString()}`);
      out[variant] = JSON.parse(readFileSync(file, "utf8")) as OwnProcessResult;
      log?.(`the full cycle (${variant}) in its own process: ${out[variant].rounds} rounds`);
    }
    return out;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const value = (flag: string) => {
    const at = args.indexOf(flag);
    if (at < 0 || !args[at + 1]) throw new Error(`${flag} is required`);
    return args[at + 1];
  };
  const variant = value("--variant") as Variant;
  const mode = value("--mode") as Mode;
  if (!(variant in variants)) throw new Error(`--variant must be ${Object.keys(variants).join(" or ")}, not ${variant}`);
  if (!(mode in settings)) throw new Error(`--mode must be ${Object.keys(settings).join(", ")}, not ${mode}`);
  const result = await runVariant(variant, mode);
  await Bun.write(value("--json"), JSON.stringify(result, null, 2) + "\n");
}
