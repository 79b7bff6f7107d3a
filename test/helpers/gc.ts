/**
 * GC-driven assertions: loop Bun.gc(true) a bounded number of times until
 * a condition holds, letting the event loop run in between (threadsafe
 * callbacks and finalizers run there).
 */
import { drainReleased } from "../../ts/index.ts";

export async function collectUntil(condition: () => boolean, rounds = 50): Promise<boolean> {
  for (let i = 0; i < rounds; i++) {
    drainReleased();
    if (condition()) return true;
    Bun.gc(true);
    await Bun.sleep(1);
  }
  drainReleased();
  return condition();
}
