/**
 * Per-test leak accounting. Live counts (the library's counters, the test
 * producers' live structs, Arrow C++'s held objects) are global to the
 * process. A test's leak check compares them with a baseline taken just
 * before that test (test/helpers/isolation.ts, preloaded for every test),
 * so what one test left behind fails that test only, never the next test
 * or the next file.
 *
 * `nonZeroCounters()` and `counters()` here have the meaning of the
 * diagnostics functions of the same names, counted from the baseline;
 * tests import them from here.
 */
import { counters as processCounters, type Counters } from "../../ts/diagnostics.ts";
import { collectUntil } from "./gc.ts";

type Counts = Record<string, number>;

const sources = new Map<string, () => Counts>();
const baselines = new Map<string, Counts>();

/** Registers a source of live counts (by name, once); its baseline is
 * taken now, then before every test. */
export function trackLive(name: string, read: () => Counts): void {
  if (sources.has(name)) return;
  sources.set(name, read);
  baselines.set(name, read());
}

/** Each count of `name` minus its baseline (0 when the baseline is
 * unknown). */
export function sinceBaseline(name: string, now: Counts): Counts {
  const base = baselines.get(name) ?? {};
  return Object.fromEntries(Object.entries(now).map(([key, value]) => [key, value - (base[key] ?? 0)]));
}

/**
 * What this test left: each count above its baseline, and any count below
 * zero (a release counted twice). A count below a non-zero baseline is an
 * earlier test's leftover going away, not this test's doing.
 */
export function leakedSince(name: string, now: Counts): Counts {
  const base = baselines.get(name) ?? {};
  const out: Counts = {};
  for (const [key, value] of Object.entries(now)) {
    if (value < 0) out[key] = value;
    else if (value > (base[key] ?? 0)) out[key] = value - (base[key] ?? 0);
  }
  return out;
}

/** Sets the baseline of some counts of `name` to zero (after a reset of
 * the counts themselves). */
function zeroBaseline(name: string, keys: string[]): void {
  const base = baselines.get(name);
  if (base) for (const key of keys) base[key] = 0;
}

/**
 * A test fixture library's symbols, with its live counts counted from the
 * baseline: each function named in `live` returns what this test left (a
 * BigInt, as the raw symbol does), and each reset named in `resets` also
 * zeroes the baseline of the counts it zeroes. Other symbols are as is.
 */
export function fromBaseline<T extends object>(name: string, symbols: T, live: (keyof T & string)[], resets: Partial<Record<keyof T & string, (keyof T & string)[]>> = {}): T {
  const call = (key: string) => (symbols as Record<string, () => unknown>)[key]!();
  const raw = (key: string) => Number(call(key));
  trackLive(name, () => Object.fromEntries(live.map((key) => [key, raw(key)])));
  const out: Record<string, unknown> = { ...(symbols as Record<string, unknown>) };
  for (const key of live) out[key] = () => BigInt(leakedSince(name, { [key]: raw(key) })[key] ?? 0);
  for (const [reset, keys] of Object.entries(resets) as [string, string[]][]) {
    out[reset] = () => {
      call(reset);
      zeroBaseline(name, keys);
    };
  }
  return out as T;
}

trackLive("library", () => processCounters());

/** The library's counters as this test changed them (diagnostics'
 * `counters()` minus the baseline). */
export function counters(): Counters {
  return sinceBaseline("library", processCounters()) as Counters;
}

/** The library's counters that this test left above the baseline (an
 * empty object means this test leaked nothing). */
export function nonZeroCounters(): Partial<Counters> {
  return leakedSince("library", processCounters()) as Partial<Counters>;
}

function atBaseline(): boolean {
  for (const [name, read] of sources) {
    const base = baselines.get(name)!;
    const now = read();
    for (const key of Object.keys(now)) if (now[key] !== (base[key] ?? 0)) return false;
  }
  return true;
}

function allZero(): boolean {
  for (const read of sources.values()) if (Object.values(read()).some((v) => v !== 0)) return false;
  return true;
}

/**
 * Before each test: when a count moved since the last baseline (an earlier
 * test left something, or its late releases are still coming), collects
 * (a bounded number of rounds) until everything is zero, then takes what
 * is left as the new baseline.
 */
export async function takeBaseline(rounds = 20): Promise<void> {
  if (atBaseline()) return;
  await collectUntil(allZero, rounds);
  for (const [name, read] of sources) baselines.set(name, read());
}
