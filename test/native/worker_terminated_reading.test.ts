// A Worker terminated while it reads a main-thread stream batch by batch
// on its own JS thread: each pull hands JS the batch's own reference,
// which a Worker ended before it turned that into views (or gave it back)
// could not release. Its thread's end releases it (zig/import/owner.zig,
// `releaseHanded`), so nothing of the stream outlives the Workers.
import { expect, test } from "bun:test";
import { tableFromArrays, type RecordBatch } from "apache-arrow";
import { exportStream } from "../../ts/index.ts";
import { counters } from "../helpers/leaks.ts";
import { collectUntil } from "../helpers/gc.ts";

const fixtures = new URL("../fixtures/workers/", import.meta.url);

/** Endless batches of 3 int32 rows. */
function* batches(): Generator<RecordBatch> {
  for (let i = 0; ; i++) yield tableFromArrays({ id: Int32Array.of(i, i + 1, i + 2) }).batches[0];
}

test("3 Workers terminated mid-read leave nothing retained, exported or imported", async () => {
  const watched = ["js_retained_exports", "live_array_exports", "live_schema_exports", "live_owners", "imported_bytes_held", "live_stream_exports"] as const;
  const snapshot = () => Object.fromEntries(watched.map((k) => [k, counters()[k]]));
  // What earlier tests left settles first (unchanged over a few rounds).
  let last = "";
  await collectUntil(() => {
    const now = JSON.stringify(snapshot());
    const same = now === last;
    last = now;
    return same;
  });
  const before = snapshot();
  const schema = tableFromArrays({ id: Int32Array.of(0) }).schema;
  for (let n = 0; n < 3; n++) {
    const worker = new Worker(new URL("read_until_ended.ts", fixtures));
    const out = exportStream(batches(), { schema });
    await new Promise<void>((resolve, reject) => {
      worker.onmessage = () => resolve();
      worker.onerror = (event) => reject(new Error(event.message));
      worker.postMessage({ address: Number(out.stream) });
    });
    await new Promise((resolve) => setTimeout(resolve, 50)); // reading now
    await new Promise<void>((resolve) => {
      worker.addEventListener("close", () => resolve());
      worker.terminate();
    });
    out[Symbol.dispose]();
  }
  await collectUntil(() => JSON.stringify(snapshot()) === JSON.stringify(before), 200);
  expect(snapshot()).toEqual(before);
}, 60_000);
