/**
 * Interleaved rounds. Every group (one shape or one comparison) has
 * contenders that each time a block of `k` cycles and return its ns. All
 * groups are warmed up (and each contender's `k` calibrated, or, where it
 * is fixed, blocks repeated until the JIT has compiled the paths) before
 * anything is recorded; then each round runs every contender of every
 * group once, groups and contenders in reversed order every other round,
 * so neither a fixed position in a round nor "measured first" favours
 * anyone.
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
  /** Cycles per block, by contender name (each calibrated apart, or every
   * one `fixedK`). */
  k: Map<string, number>;
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
  return { id, contenders, kMax, fixedK, k: new Map(), samples: new Map() };
}

/** The group's k as printed: one number, or the range over its contenders. */
export function kLabel(g: Group): string {
  const ks = [...g.k.values()];
  if (ks.length === 0) return "-";
  const low = Math.min(...ks), high = Math.max(...ks);
  return low === high ? String(low) : `${low}-${high}`;
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

/** Warm-up and calibration. Each contender of a group of calibrated k
 * runs blocks whose k doubles while its block is under `blockNs`, pass
 * after pass (every contender one block), until each has run `warmCycles`
 * cycles (or a tenth of `warmNs` has passed: the heavy shapes, whose loops
 * warm faster), so the JIT has compiled every path; only then is its k set,
 * from its best per-cycle time over three more passes. Each contender gets
 * its own k, so each of its blocks takes about `blockNs`: a block's first
 * cycle runs after other code, with cold caches (the first of a block of
 * 1-column round trips takes ten times the others), and a contender whose
 * blocks were much shorter than the slowest one's would be timed mostly on
 * that first cycle. Calibrating on the first few passes (a few cycles each,
 * in the JIT's first tiers) once gave ours 73 us for a 1-column import that
 * takes 2 us warm. */
async function warm(g: Group, blockNs: number, warmNs: number): Promise<void> {
  if (g.fixedK !== undefined) {
    // A fixed k is small (64 or 8 IPC round trips, one stream): one block would
    // leave every contender's code in the JIT's first tiers, and the
    // rounds would then measure its warm-up (a 1-column IPC round trip of
    // ours took 18 us over its first 2,000 cycles and 7-8 us after).
    // Blocks run until each contender has done `warmCycles` cycles, or
    // `warmNs` has passed (the heavy shapes, whose loops warm faster).
    const k = g.fixedK;
    for (const c of g.contenders) g.k.set(c.name, k);
    const started = now();
    for (let cycles = 0, passes = 0; passes < 3 || (cycles < warmCycles && now() - started < warmNs); passes++, cycles += k) {
      for (const c of g.contenders) await c.run(k);
      await turn();
    }
    return;
  }
  const started = now();
  const k = new Map(g.contenders.map((c) => [c, 1]));
  const cycles = new Map(g.contenders.map((c) => [c, 0]));
  const fewest = () => Math.min(...cycles.values());
  for (let passes = 0; passes < 3 || (fewest() < warmCycles && now() - started < warmNs / 10); passes++) {
    for (const c of g.contenders) {
      const kc = k.get(c)!;
      const ns = total(await c.run(kc));
      cycles.set(c, cycles.get(c)! + kc);
      if (ns < blockNs) k.set(c, Math.min(g.kMax, kc * 2));
    }
    await turn();
  }
  const best = new Map<Contender, number>();
  for (let pass = 0; pass < 3; pass++) {
    for (const c of g.contenders) best.set(c, Math.min(best.get(c) ?? Infinity, total(await c.run(k.get(c)!)) / k.get(c)!));
    await turn();
  }
  for (const c of g.contenders) g.k.set(c.name, Math.max(1, Math.min(g.kMax, Math.round(blockNs / Math.max(best.get(c)!, 1)))));
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
        const k = g.k.get(c.name)!;
        record(g, c.name, await c.run(k), k);
      }
    }
  }
  options.log?.(`${round} rounds in ${((now() - measuring) / 1e9).toFixed(1)} s`);
  return round;
}
