/**
 * Driver for count.sh / jitprof.sh: C streams of 1000 batches (the bench's
 * row 7 shape: struct<a: int32, b: float64 nullable>, 1000 rows), read
 * `N` batches after a 10,000-batch warm-up. Modes:
 *   direct      StreamBatchConverter.next (what recordBatches does per batch)
 *   read        direct, then both columns' values and validity read once
 *               (a batch makes its views on first read: convert/lazy_data.ts)
 *   pulled      the pull alone (nextPulled + releasePulled)
 *   views       the pull + its buffer views (pulledViews)
 *   floor       the JS floor of bench/compare (C pull, views, Data, batch)
 *   floorPull   the floor's C pull alone
 */
import { floor } from "../compare/floor.ts";
import { repeatSources, streamFloor } from "../compare/cases.ts";
import { ImportedStream, type StructPointer } from "../../ts/index.ts";
import { StreamBatchConverter } from "../../ts/convert/import.ts";
import { pulledViews } from "../../ts/lifetime/imported.ts";
import { pulledBatch, releasePulled } from "../../ts/lifetime/imported_stream.ts";
import { drive } from "./driver.ts";

const rows = 1000;
const batches = 1000;
const slot = floor.bf_stream_slot()!;
const sources = repeatSources(rows, slot);
const jsFloor = streamFloor(rows, slot, sources.open);
const array = floor.bf_device_array_slots(1)!;
const addresses = new Float64Array(8);
let sink = 0;

const modes: Record<string, () => void> = {
  direct() {
    sources.open(batches);
    const stream = ImportedStream.fromArrayStream(slot as StructPointer<"ArrowArrayStream">);
    const converter = new StreamBatchConverter({});
    for (let batch = converter.next(stream); batch !== null; batch = converter.next(stream)) sink += batch.numRows;
    stream.release();
  },
  read() {
    sources.open(batches);
    const stream = ImportedStream.fromArrayStream(slot as StructPointer<"ArrowArrayStream">);
    const converter = new StreamBatchConverter({});
    for (let batch = converter.next(stream); batch !== null; batch = converter.next(stream)) {
      for (const column of batch.data.children) sink += column.values.length + (column.nullBitmap?.length ?? 0);
    }
    stream.release();
  },
  pulled() {
    sources.open(batches);
    const stream = ImportedStream.fromArrayStream(slot as StructPointer<"ArrowArrayStream">);
    const pulled = pulledBatch();
    while (stream.nextPulled(pulled)) releasePulled(pulled.owner);
    stream.release();
  },
  views() {
    sources.open(batches);
    const stream = ImportedStream.fromArrayStream(slot as StructPointer<"ArrowArrayStream">);
    const pulled = pulledBatch();
    while (stream.nextPulled(pulled)) {
      sink += pulledViews(pulled.owner, pulled.words)!.length;
      releasePulled(pulled.owner);
    }
    stream.release();
  },
  floorPull() {
    sources.open(batches);
    while (floor.bf_stream_pull(slot, array, addresses, addresses.length) >= 0) sink++;
  },
  floor() {
    jsFloor.run(batches);
  },
};

drive(modes, batches, 10_000);
if (sink < 0) console.log(sink);
