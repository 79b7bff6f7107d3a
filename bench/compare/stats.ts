/**
 * Samples and their summary. A sample is one timed block of `k` cycles
 * (k >= 1, chosen per group so a block takes a fraction of a millisecond):
 * per cycle, the median is the median over blocks of block/k, and the mean
 * is every block's time over every cycle (GC pauses and all).
 */
export type Summary = { median: number; mean: number; p10: number; p90: number; blocks: number; cycles: number };

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
    return { median: at(0.5), mean: this.#cycles === 0 ? NaN : this.#total / this.#cycles, p10: at(0.1), p90: at(0.9), blocks: sorted.length, cycles: this.#cycles };
  }
}

export const now = () => Bun.nanoseconds();
