/**
 * Live-object counters of the native library plus the JS-side keepalive
 * count, for tests and for users chasing leaks. Every test ends with all of
 * them at zero.
 */
import { counterNames, type CounterName } from "../core/abi/layout.ts";
import { native } from "../core/ffi/library.ts";
import { drainReleased, retainedCount } from "./keepalive.ts";
import { nativeArray } from "../core/ffi/native_arrays.ts";

/** Every live-object counter by name (see `counters()`). */
export type Counters = Record<CounterName, number> & {
  /** Exports whose JS buffers the keepalive registry still holds. */
  js_retained_exports: number;
};

// Passed as the typed array itself: Bun may move a small typed array's
// storage, so a `ptr()` taken earlier can go stale.
const scratch = nativeArray(Float64Array, counterNames.length);

/** Drains finished releases, then reads every counter. */
export function counters(): Counters {
  drainReleased();
  const n = native.abd_counters_read(scratch, scratch.length);
  const out = { js_retained_exports: retainedCount() } as Counters;
  for (let i = 0; i < n; i++) out[counterNames[i]] = scratch[i];
  return out;
}

/** The counters that are not zero (an empty object means nothing leaked). */
export function nonZeroCounters(): Partial<Counters> {
  const all = counters();
  return Object.fromEntries(Object.entries(all).filter(([, v]) => v !== 0)) as Partial<Counters>;
}
