/**
 * Interleaved rounds. Every group (one shape or one comparison) has
 * contenders that each time a block of `k` cycles and return its ns. All
 * groups are warmed up (and `k` calibrated, or, where it is fixed, blocks
 * repeated until the JIT has compiled the paths) before anything is recorded;
 * then each round runs every contender of every group once, groups and
 * contenders in reversed order every other round, so neither a fixed
 * position in a round nor "measured first" favours anyone.
 */
import { Samples, now } from "./stats.ts";

/** A block's time, and optionally the time of named parts of it (also per
 * block of k cycles). */
export type Outcome = number | { ns: number; parts: Record<string, number> };

export type Contender = { name: string; run(k: number): Outcome | Promise<Outcome> };

export type Group = {
  id: string;
  contenders: Contender[];
  /** Upper bound of k (slot capacity); `fixedK` skips the calibration. */
  kMax: number;
  fixedK?: number;
  k?: number;
  /** Samples by contender name, and by "name.part". */
  samples: Map<string, Samples>;
};

export type RunOptions = {
  rounds: number; minRounds: number; blockNs: number; budgetNs: number;
  /** The most time the warm-up of a fixed-k group takes (default 2 s). */
  warmNs?: number;
  log?: (line: string) => void;
};

/** Cycles each contender of a fixed-k group runs in the warm-up, unless
 * `warmNs` ends it first. */
const warmCycles = 2000;

export function group(id: string, contenders: Contender[], kMax: number, fixedK?: number): Group {
  return { id, contenders, kMax, fixedK, samples: new Map() };
}

function record(g: Group, name: string, outcome: Outcome, k: number): void {
  const add = (key: string, ns: number) => {
    let s = g.samples.get(key);
    if (!s) g.samples.set(key, (s = new Samples()));
    s.add(ns, k);
  };
  if (typeof outcome === "number") add(name, outcome);
  else {
    add(name, outcome.ns);
    for (const [part, ns] of Object.entries(outcome.parts)) add(`${name}.${part}`, ns);
  }
}

const total = (o: Outcome) => (typeof o === "number" ? o : o.ns);

/** Warm-up and calibration: every contender runs blocks of k = 1, 2, 4, ...
 * until the slowest contender's block reaches `blockNs` (or k reaches
 * kMax), so the JIT has compiled every path before the first sample; then
 * k is set from the slowest contender's per-cycle time, taken as its best
 * over the passes after the first (k = 1 compiles; one slow pass, such as
 * the first calls into the embedded Python of the first group warmed, a
 * GC, or another job on the machine, must not shrink k far below what
 * `blockNs` asks for: it once gave a 1-column export block of 6 cycles,
 * ~8 us instead of ~1 ms). */
async function warm(g: Group, blockNs: number, warmNs: number): Promise<void> {
  if (g.fixedK !== undefined) {
    // A fixed k is small (64 or 8 IPC round trips, one stream): one block would
    // leave every contender's code in the JIT's first tiers, and the
    // rounds would then measure its warm-up (a 1-column IPC round trip of
    // ours took 18 us over its first 2,000 cycles and 7-8 us after).
    // Blocks run until each contender has done `warmCycles` cycles, or
    // `warmNs` has passed (the heavy shapes, whose loops warm faster).
    g.k = g.fixedK;
    const started = now();
    for (let cycles = 0, passes = 0; passes < 3 || (cycles < warmCycles && now() - started < warmNs); passes++, cycles += g.k) {
      for (const c of g.contenders) await c.run(g.k);
      await turn();
    }
    return;
  }
  const best = new Map<Contender, number>();
  const slowestBest = () => Math.max(...best.values());
  for (let k = 1, passes = 0; ; k = Math.min(g.kMax, k * 2), passes++) {
    for (const c of g.contenders) {
      const perCycle = total(await c.run(k)) / k;
      if (passes >= 1) best.set(c, Math.min(best.get(c) ?? Infinity, perCycle));
    }
    await turn();
    if (passes >= 3 && (k * slowestBest() >= blockNs || k === g.kMax)) break;
  }
  g.k = Math.max(1, Math.min(g.kMax, Math.round(blockNs / Math.max(slowestBest(), 1))));
}

/** One turn of the event loop (untimed, before every block): what the
 * library defers to the event loop (release wake-ups from other threads,
 * async hand-offs) runs there rather than piling up across blocks. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

export async function runGroups(groups: Group[], options: RunOptions): Promise<number> {
  const started = now();
  for (const g of groups) await warm(g, options.blockNs, options.warmNs ?? 2e9);
  options.log?.(`warmed up ${groups.length} groups in ${((now() - started) / 1e9).toFixed(1)} s`);
  const measuring = now();
  let round = 0;
  for (; round < options.rounds; round++) {
    if (round >= options.minRounds && now() - measuring > options.budgetNs) break;
    const forward = round % 2 === 0;
    const order = forward ? groups : [...groups].reverse();
    for (const g of order) {
      const contenders = forward ? g.contenders : [...g.contenders].reverse();
      for (const c of contenders) {
        await turn();
        record(g, c.name, await c.run(g.k!), g.k!);
      }
    }
  }
  options.log?.(`${round} rounds in ${((now() - measuring) / 1e9).toFixed(1)} s`);
  return round;
}
