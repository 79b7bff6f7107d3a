/**
 * Releases in a loop that never yields must not grow
 * memory. Every release queues its keepalive id natively; the library
 * posts at most one wake (a Bun threadsafe callback, queued as a task that
 * runs only when the event loop turns) until that wake has run
 * (zig/export/keepalive.zig); a wake per release would hold a task per
 * release until the loop ends.
 *
 * Stated bound: RSS grows by less than 40 MB over 1e6 export + import +
 * release cycles run without yielding, and the loop posts at most one
 * wake. Run time is not asserted (a loaded machine can take several times
 * an idle one's: hence the test's timeout).
 */
import { afterEach, expect, test } from "bun:test";
import { makeVector } from "apache-arrow";
import { exportArray } from "../../ts/index.ts";
import { ImportedArray } from "../../ts/raw.ts";
import { releaseWakesPosted, retainedCount } from "../../ts/native/keepalive.ts";
import { collectUntil } from "../helpers/gc.ts";
import { expectSettled } from "../helpers/settled.ts";

const cycles = 1_000_000;
const rssGrowthBoundBytes = 40 * 2 ** 20;

afterEach(async () => {
  await expectSettled();
});

test(`${cycles} export + import + release cycles without yielding: RSS grows < 40 MB, one wake posted`, async () => {
  const vector = makeVector(Int32Array.from({ length: 16 }, (_, i) => i));
  const cycle = () => {
    const exported = exportArray(vector);
    const imported = ImportedArray.fromDeviceArray(exported.schema, exported.array);
    imported.dispose(); // the consumer's release: queues the keepalive id
    exported.release();
  };
  // Counted from here: retainedCount is the process's count, which an
  // earlier file's leftover would offset.
  const retainedBefore = retainedCount();
  for (let i = 0; i < 1000; i++) cycle(); // warm up
  await Bun.sleep(1); // let any wake already posted run
  Bun.gc(true);
  const wakesBefore = releaseWakesPosted();
  const rssBefore = process.memoryUsage().rss;
  for (let i = 0; i < cycles; i++) cycle();
  Bun.gc(true); // JS garbage goes; queued Bun tasks (what used to grow) would not
  const growth = process.memoryUsage().rss - rssBefore;
  const wakes = releaseWakesPosted() - wakesBefore;
  expect(wakes).toBeLessThanOrEqual(1);
  expect(growth).toBeLessThan(rssGrowthBoundBytes);
  // The one wake runs once the loop yields, and drains what is left.
  expect(await collectUntil(() => retainedCount() <= retainedBefore)).toBe(true);
}, 600_000);
