/**
 * Per-test leak accounting. Live counts (the library's counters, the test
 * producers' live structs, Arrow C++'s held objects) and event counts
 * (releases a test peer saw) are global to the process. A test's checks
 * compare them with a baseline taken just before that test (test/helpers/isolation.ts, preloaded for every test),
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

/** A source's counts: `live` ones settle to zero when every test cleans
 * up (the baseline waits for that), `events` only grow until reset. */
type Source = { read: () => Counts; live: boolean };

const sources = new Map<string, Source>();
const baselines = new Map<string, Counts>();

/** Registers a source of live counts (by name, once); its baseline is
 * taken now, then before every test. */
export function trackLive(name: string, read: () => Counts): void {
  if (sources.has(name)) return;
  sources.set(name, { read, live: true });
  baselines.set(name, read());
}

/** Registers a source of event counts (releases seen, and so on), counted
 * from before every test like live counts, but never waited for. */
export function trackEvents(name: string, read: () => Counts): void {
  if (sources.has(name)) return;
  sources.set(name, { read, live: false });
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

type Key<T> = keyof T & string;

/**
 * A test fixture library's symbols, with its counts counted from the
 * baseline: each function named in `live` or `events` returns what this
 * test made (a BigInt, as the raw symbol does), and each reset named in
 * `resets` also zeroes the baseline of the counts it zeroes. Other
 * symbols are as they are.
 */
export function fromBaseline<T extends object>(name: string, symbols: T, counts: { live?: Key<T>[]; events?: Key<T>[]; resets?: Partial<Record<Key<T>, Key<T>[]>> }): T {
  const call = (key: string) => (symbols as Record<string, () => unknown>)[key]!();
  const raw = (key: string) => Number(call(key));
  const out: Record<string, unknown> = { ...(symbols as Record<string, unknown>) };
  const groups: [string, string[], typeof trackLive][] = [[`${name} live`, counts.live ?? [], trackLive], [`${name} events`, counts.events ?? [], trackEvents]];
  for (const [source, keys, track] of groups) {
    if (keys.length === 0) continue;
    track(source, () => Object.fromEntries(keys.map((key) => [key, raw(key)])));
    for (const key of keys) out[key] = () => BigInt(leakedSince(source, { [key]: raw(key) })[key] ?? 0);
  }
  for (const [reset, keys] of Object.entries(counts.resets ?? {}) as [string, string[]][]) {
    out[reset] = () => {
      call(reset);
      for (const [source] of groups) zeroBaseline(source, keys);
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

function liveAtBaseline(): boolean {
  for (const [name, { read, live }] of sources) {
    if (!live) continue;
    const base = baselines.get(name)!;
    const now = read();
    for (const key of Object.keys(now)) if (now[key] !== (base[key] ?? 0)) return false;
  }
  return true;
}

function liveAllZero(): boolean {
  for (const { read, live } of sources.values()) if (live && Object.values(read()).some((v) => v !== 0)) return false;
  return true;
}

/**
 * Before each test: when a live count moved since the last baseline (an
 * earlier test left something, or its late releases are still coming),
 * collects (a bounded number of rounds) until every live count is zero.
 * Then every count as it stands is the new baseline.
 */
export async function takeBaseline(rounds = 20): Promise<void> {
  if (!liveAtBaseline()) await collectUntil(liveAllZero, rounds);
  for (const [name, { read }] of sources) baselines.set(name, read());
}

/**
 * Whether what a test left is only imports still viewed from JS: owners
 * whose memory apache-arrow views hold, and what such an owner holds in
 * turn when it imported this library's own export (a round trip): that
 * export's structs and keepalive, and the device memory and event of a
 * device batch, at most one of each per owner. JSC scans the stack and
 * registers conservatively, so a Table a test dropped can stay marked by
 * a stale word for many collections; its views end, and its owner with
 * them (and what it holds), once that word is overwritten (the next
 * test's baseline counts them until then, and their release does not
 * fail it). A leak of the library (an owner no view holds, an export no
 * owner can hold, a stream, a handle) is never this.
 */
export function onlyViewHeldImports(left: Partial<Counters>): boolean {
  const allowed = new Set(["live_owners", "live_imported_views", "imported_bytes_held"]);
  const heldByOwners = new Set(["live_array_exports", "live_schema_exports", "js_retained_exports", "live_device_allocations", "live_device_events"]);
  const owners = left.live_owners ?? 0;
  const views = left.live_imported_views ?? 0;
  const entries = Object.entries(left) as [string, number][];
  return entries.length > 0 && owners > 0 && views >= owners &&
    entries.every(([key, value]) => allowed.has(key) || (heldByOwners.has(key) && value > 0 && value <= owners));
}
