/**
 * Timing primitives shared by the CLI's `bench` and the repository's
 * bench/*.ts scripts: medians (and the spread) of repeated runs after a
 * warm-up, and throughput in GB/s.
 */

/** The median of `samples` (the upper one for an even count). */
export function median(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** Nanoseconds per run of `repeats` runs: the median, the fastest and the slowest. */
export type Timing = { medianNs: number; minNs: number; maxNs: number };

/** Host-clock nanoseconds of each of `repeats` runs of `run`, after one
 * warm-up run. */
export function wallSamples(repeats: number, run: () => void): number[] {
  run();
  const samples: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const t0 = Bun.nanoseconds();
    run();
    samples.push(Bun.nanoseconds() - t0);
  }
  return samples;
}

/** Times `repeats` runs of `run`, after one warm-up run. */
export function timeRuns(repeats: number, run: () => void): Timing {
  const samples = wallSamples(repeats, run);
  return { medianNs: median(samples), minNs: Math.min(...samples), maxNs: Math.max(...samples) };
}

/** Median nanoseconds of `repeats` runs of `run`, after one warm-up run. */
export function timeMedian(repeats: number, run: () => void): number {
  return timeRuns(repeats, run).medianNs;
}

/** Decimal gigabytes per second of `bytes` moved in `ns` nanoseconds. */
export function gbPerSecond(bytes: number, ns: number): number {
  return bytes / ns;
}

/** 1536 -> "1.5 KiB", 2 ** 20 -> "1 MiB". */
export function sizeLabel(bytes: number): string {
  if (bytes >= 2 ** 30) return `${+(bytes / 2 ** 30).toFixed(1)} GiB`;
  if (bytes >= 2 ** 20) return `${+(bytes / 2 ** 20).toFixed(1)} MiB`;
  if (bytes >= 1024) return `${+(bytes / 1024).toFixed(1)} KiB`;
  return `${bytes} B`;
}

/** 850 -> "850 ns", 12_400 -> "12.4 µs", 1.5e9 -> "1.5 s": three significant digits. */
export function timeLabel(ns: number): string {
  const [scale, unit] = ns >= 1e9 ? [1e9, "s"] : ns >= 1e6 ? [1e6, "ms"] : ns >= 1e3 ? [1e3, "µs"] : [1, "ns"];
  return `${+(ns / scale).toPrecision(3)} ${unit}`;
}
