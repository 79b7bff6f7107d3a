/**
 * Samples and their summary. A sample is one timed block of `k` cycles
 * (k >= 1, chosen per group so a block takes a fraction of a millisecond):
 * per cycle, the median is the median over blocks of block/k, and the mean
 * is every block's time over every cycle (GC pauses and all).
 */
/** min and max: the fastest and slowest block, per cycle. */
export type Summary = { median: number; mean: number; p10: number; p90: number; min: number; max: number; blocks: number; cycles: number };

/** The largest slowest / fastest ratio among `summaries` (NaN when none
 * has samples): how far a row's samples spread. */
export function spreadOf(...summaries: (Summary | undefined)[]): number {
  let worst = NaN;
  for (const s of summaries) {
    if (!s || !(s.min > 0) || !Number.isFinite(s.max)) continue;
    const r = s.max / s.min;
    if (!(r <= worst)) worst = r;
  }
  return worst;
}

/** A row whose fastest and slowest samples differ by more than this is
 * flagged as unsteady: its verdict is not to be trusted from one run. */
export const unsteadySpread = 3;

export class Samples {
  #perCycle: number[] = [];
  #total = 0;
  #cycles = 0;
  add(ns: number, k: number): void {
    this.#perCycle.push(ns / k);
    this.#total += ns;
    this.#cycles += k;
  }
  get count(): number {
    return this.#perCycle.length;
  }
  summary(): Summary {
    const sorted = Float64Array.from(this.#perCycle).sort();
    const at = (q: number) => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]);
    return { median: at(0.5), mean: this.#cycles === 0 ? NaN : this.#total / this.#cycles, p10: at(0.1), p90: at(0.9), min: at(0), max: sorted.length === 0 ? NaN : sorted[sorted.length - 1], blocks: sorted.length, cycles: this.#cycles };
  }
}

export const now = () => Bun.nanoseconds();
