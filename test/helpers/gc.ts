/**
 * GC-driven assertions: loop Bun.gc(true) a bounded number of times until
 * a condition holds, letting the event loop run in between (threadsafe
 * callbacks and finalizers run there).
 *
 * Each collection runs from a timer or an immediate callback, alternately,
 * never from an async function's continuation: a continuation is a
 * microtask job, run under the frame of JSC's microtask drain, and a stale
 * word in that frame can keep one dropped object marked at every round
 * (oven-sh/bun#43217 found such a word). This suite saw that pattern: an
 * import owner that survived 200 rounds, then went during the next test.
 */
import { drainReleased } from "../../ts/diagnostics.ts";

/** Overwrites a stretch of the native stack with unrelated values, so that
 * conservative stack scanning does not find stale pointers to objects a
 * test has dropped (JSC scans the stack conservatively). */
function scrubStack(depth: number): number {
  const filler = [depth, depth + 1, depth + 2, depth + 3, depth + 4, depth + 5, depth + 6, depth + 7];
  return depth > 0 ? scrubStack(depth - 1) + filler.length : filler.length;
}

/** One full collection, from a timer callback (`round` even) or an
 * immediate callback (odd): two different native frames under it. */
function collectOnce(round: number): Promise<void> {
  return new Promise((resolve) => {
    const collect = () => {
      scrubStack(200);
      Bun.gc(true);
      resolve();
    };
    if (round % 2 === 0) setTimeout(collect, 1);
    else setImmediate(collect);
  });
}

/** Runs `work` from a timer callback and settles with its result or its
 * error. Objects a test means to drop are best made here: the collections
 * of `collectUntil` run from timers too and scrub the stack under them, so
 * no stale word of the test's own (async) frame keeps them marked. */
export function runFromTimer<T>(work: () => T): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    setTimeout(() => {
      try {
        resolve(work());
      } catch (error) {
        reject(error);
      }
    }, 0);
  });
}

export async function collectUntil(condition: () => boolean, rounds = 50): Promise<boolean> {
  for (let i = 0; i < rounds; i++) {
    drainReleased();
    if (condition()) return true;
    await collectOnce(i);
    // An event-loop turn after the collection: finalizers and threadsafe
    // callbacks it queued run here.
    await Bun.sleep(1);
  }
  drainReleased();
  return condition();
}
