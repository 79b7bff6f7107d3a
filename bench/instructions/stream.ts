/**
 * Driver for count.sh / jitprof.sh: C streams of 1000 batches (the bench's
 * row 7 shape: struct<a: int32, b: float64 nullable>, 1000 rows), read
 * `N` batches after a 10,000-batch warm-up. Modes:
 *   direct      StreamBatchConverter.next (what recordBatches does per batch)
 *   pulled      the pull alone (nextPulled + releasePulled)
 *   views       the pull + its buffer views (pulledViews)
 *   floor       the JS floor of bench/compare (C pull, views, Data, batch)
 *   floorPull   the floor's C pull alone
 */
import type { Pointer } from "bun:ffi";
import { toArrayBuffer } from "bun:ffi";
import { Data, Field, Float64, Int32, RecordBatch, Schema, Struct } from "apache-arrow";
import { floor } from "../compare/floor.ts";
import { streamPeer } from "../../test/helpers/fixtures.ts";
import { ImportedStream } from "../../ts/index.ts";
import { StreamBatchConverter } from "../../ts/convert/import.ts";
import { pulledViews } from "../../ts/lifetime/imported.ts";
import { pulledBatch, releasePulled } from "../../ts/lifetime/imported_stream.ts";

const mode = process.argv[2];
const iterations = Number(process.argv[3]);
const rows = 1000;
const batches = 1000;
const slot = floor.bf_stream_slot()!;
const sources: Pointer[] = [];
let sink = 0;

/** Opens a new C stream of `batches` batches in `slot` (freeing the
 * sources no batch of which is alive). */
function openSource(): void {
  for (let i = sources.length - 1; i >= 0; i--) {
    if (Number(streamPeer.sp_repeat_live_batches(sources[i])) === 0) streamPeer.sp_repeat_free(sources.splice(i, 1)[0]);
  }
  const source = streamPeer.sp_repeat_new(batches, rows)!;
  sources.push(source);
  streamPeer.sp_repeat_stream(source, slot);
}

const fields = [new Field("a", new Int32(), false), new Field("b", new Float64(), true)];
const schema = new Schema(fields);
const struct = new Struct(fields);
const array = floor.bf_device_array_slots(1)!;
const addresses = new Float64Array(8);
const deallocator = floor.bf_view_deallocator()!;

const modes: Record<string, () => void> = {
  direct() {
    openSource();
    const stream = ImportedStream.fromArrayStream(slot);
    const converter = new StreamBatchConverter({});
    for (let batch = converter.next(stream); batch !== null; batch = converter.next(stream)) sink += batch.numRows;
    stream.release();
  },
  pulled() {
    openSource();
    const stream = ImportedStream.fromArrayStream(slot);
    const pulled = pulledBatch();
    while (stream.nextPulled(pulled)) releasePulled(pulled.owner);
    stream.release();
  },
  views() {
    openSource();
    const stream = ImportedStream.fromArrayStream(slot);
    const pulled = pulledBatch();
    while (stream.nextPulled(pulled)) {
      sink += pulledViews(pulled.owner, pulled.words)!.length;
      releasePulled(pulled.owner);
    }
    stream.release();
  },
  floorPull() {
    openSource();
    while (floor.bf_stream_pull(slot, array, addresses, addresses.length) >= 0) sink++;
  },
  floor() {
    openSource();
    while (floor.bf_stream_pull(slot, array, addresses, addresses.length) >= 0) {
      floor.bf_views_add(3);
      const a = new Int32Array(toArrayBuffer(addresses[1] as Pointer, 0, rows * 4, array, deallocator));
      const valid = new Uint8Array(toArrayBuffer(addresses[2] as Pointer, 0, rows / 8, array, deallocator));
      const b = new Float64Array(toArrayBuffer(addresses[3] as Pointer, 0, rows * 8, array, deallocator));
      const children = [new Data(fields[0].type, 0, rows, 0, [undefined, a, undefined] as never), new Data(fields[1].type, 0, rows, 250, [undefined, b, valid] as never)];
      const batch = Object.create(RecordBatch.prototype) as { schema: Schema; data: Data; _metadata: Map<string, string>; numRows: number };
      batch.schema = schema;
      batch.data = new Data(struct, 0, rows, 0, [undefined, undefined, undefined] as never, children);
      batch._metadata = new Map();
      sink += batch.numRows;
    }
  },
};

if (!(mode in modes)) throw new Error(`mode must be one of ${Object.keys(modes).join(", ")}`);
const run = (n: number) => { for (let i = 0; i < n / batches; i++) modes[mode](); };
run(10_000);
run(iterations);
if (sink < 0) console.log(sink);
