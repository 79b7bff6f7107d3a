/**
 * GC-driven assertions: loop Bun.gc(true) a bounded number of times until
 * a condition holds, letting the event loop run in between (threadsafe
 * callbacks and finalizers run there).
 */
import { drainReleased } from "../../ts/diagnostics.ts";

/** Overwrites a stretch of the native stack with unrelated values, so that
 * conservative stack scanning does not find stale pointers to objects a
 * test has dropped (JSC scans the stack conservatively). */
function scrubStack(depth: number): number {
  const filler = [depth, depth + 1, depth + 2, depth + 3, depth + 4, depth + 5, depth + 6, depth + 7];
  return depth > 0 ? scrubStack(depth - 1) + filler.length : filler.length;
}

export async function collectUntil(condition: () => boolean, rounds = 50): Promise<boolean> {
  for (let i = 0; i < rounds; i++) {
    drainReleased();
    if (condition()) return true;
    scrubStack(200);
    Bun.gc(true);
    await Bun.sleep(1);
  }
  drainReleased();
  return condition();
}
