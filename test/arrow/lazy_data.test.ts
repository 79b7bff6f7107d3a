/**
 * arrow/lazy_data.ts: a planned batch (importRecordBatch,
 * a stream's batches) defers its buffer views until the first read. One
 * view (the anchor) holds the memory until then; the first read of any
 * buffer makes every view of the batch, over the producer's own memory;
 * the release runs exactly once after the batch and every typed array
 * taken from it are gone; a disposed import reads as detached, never as
 * freed memory.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { ptr } from "bun:ffi";
import {
  Bool, Data, Field, Float64, Int32, LargeUtf8, RecordBatch, Schema, Struct, Table, Utf8, makeData, vectorFromArray,
} from "apache-arrow";
import { ExportedStream, exportArray, importRecordBatch, recordBatches, importData, importTable, importVector } from "../../ts/index.ts";
import { ReleasedError } from "../../ts/core/errors.ts";
import { ImportedArray, ImportedStream } from "../../ts/raw.ts";
import { counters } from "../helpers/leaks.ts";
import { StreamRead } from "../../ts/arrow/stream_import.ts";
import { streamPeer } from "../helpers/fixtures.ts";
import { collectUntil } from "../helpers/gc.ts";
import { disposeProduced, produceDevice, producerClean } from "../helpers/producer.ts";
import { withCode } from "../helpers/errors.ts";
import { expectSettled } from "../helpers/settled.ts";

type Source = NonNullable<ReturnType<typeof streamPeer.sp_repeat_new>>;
const sources: Source[] = [];

afterEach(async () => {
  expect(await collectUntil(() => sources.every((source) => streamPeer.sp_repeat_live_batches(source) === 0n), 200)).toBe(true);
  for (const source of sources.splice(0)) streamPeer.sp_repeat_free(source);
  await expectSettled();
});

/** A C stream of `batches` batches of struct<a: int32, b: float64 (every
 * 4th null)>, each over the same `rows`-row buffers. */
function repeatStream(batches: number, rows: number): { source: Source; stream: ImportedStream } {
  const source = streamPeer.sp_repeat_new(batches, rows)!;
  sources.push(source);
  using slot = new ExportedStream("stream", "C stream slot");
  streamPeer.sp_repeat_stream(source, slot.stream);
  return { source, stream: ImportedStream.fromArrayStream(slot.stream) };
}

/** A batch of every kind the plan builds: int32 with a null, float64,
 * boolean, utf8, large utf8, and a struct of an int32 and a utf8. */
function mixedBatch(): RecordBatch {
  const inner = new Struct([new Field("x", new Int32(), true), new Field("y", new Utf8(), true)]);
  const columns = {
    i: vectorFromArray([1, null, 3, 4, 5], new Int32()),
    f: vectorFromArray([0.5, 1.5, 2.5, 3.5, 4.5], new Float64()),
    b: vectorFromArray([true, false, null, true, true], new Bool()),
    s: vectorFromArray(["a", "bb", null, "", "ccc"], new Utf8()),
    l: vectorFromArray(["L1", "L22", "L333", null, "L5"], new LargeUtf8()),
    n: vectorFromArray([{ x: 1, y: "p" }, { x: 2, y: null }, null, { x: 4, y: "q" }, { x: 5, y: "r" }], inner),
  };
  return new Table(columns).batches[0];
}

/** Every buffer property of `data` and its children, in order. */
function buffersOf(data: Data): unknown[] {
  return [data.valueOffsets, data.values, data.nullBitmap, ...data.children.flatMap(buffersOf)];
}

function address(view: unknown): number {
  return view === undefined || (view as ArrayBufferView).byteLength === 0 ? 0 : Number(ptr(view as Uint8Array));
}

describe("lazy Data of an imported batch", () => {
  test("a batch holds no view of its own until its first read, which makes every view at once over the producer's memory", () => {
    const source = mixedBatch();
    using exported = exportArray(source);
    using imported = ImportedArray.fromDeviceArray(exported.schema, exported.array);
    expect(counters().live_imported_views).toBe(1); // the handle's anchor
    const batch = importRecordBatch(imported);
    // The handle's anchor (8 bytes, no buffer) holds the batch's deferred
    // views too: no view of the batch's own.
    expect(counters().live_imported_views).toBe(1);
    for (const data of batch.data.children) expect(data).toBeInstanceOf(Data);
    // The first read of any buffer (here the last column's) makes them all.
    const last = batch.data.children[5];
    expect(last.children[0].values[3]).toBe(4);
    const made = counters().live_imported_views;
    const viewed = batch.data.children.flatMap(buffersOf).filter((view) => address(view) !== 0).length;
    // One view per buffer with bytes (distinct addresses), besides the
    // handle's anchor.
    expect(made - 1).toBe(viewed);
    for (const column of batch.data.children) column.values;
    expect(counters().live_imported_views).toBe(made); // nothing more to make
    // Zero-copy: every buffer is the exported column's own memory.
    for (const [i, column] of batch.data.children.entries()) {
      const theirs = buffersOf(source.data.children[i]).map(address);
      const ours = buffersOf(column).map(address);
      // A column without nulls may be exported without its bitmap.
      expect(ours.map((a, k) => (a === 0 ? theirs[k] === 0 || theirs[k] !== 0 : a === theirs[k]))).toEqual(ours.map(() => true));
    }
    // The same values as the eager conversion of the same import.
    for (let i = 0; i < 6; i++) {
      const eager = importVector(imported, {}).data[0].children[i];
      expect(batch.data.children[i].nullCount).toBe(eager.nullCount);
      expect(buffersOf(batch.data.children[i]).map(address)).toEqual(buffersOf(eager).map(address));
      expect(JSON.stringify([...new Table({ c: batch.getChildAt(i)! }).getChild("c")!])).toBe(JSON.stringify([...source.getChildAt(i)!]));
    }
  });

  test("batches converted again from one handle share its deferred views; dispose ends them all", () => {
    using exported = exportArray(mixedBatch());
    const imported = ImportedArray.fromDeviceArray(exported.schema, exported.array);
    const batches = Array.from({ length: 50 }, () => importRecordBatch(imported));
    expect(counters().live_imported_views).toBe(1); // the handle's anchor, which holds the shared set
    expect(batches[0].getChild("i")!.get(2)).toBe(3);
    const made = counters().live_imported_views;
    expect(batches[49].getChild("f")!.get(1)).toBe(1.5);
    expect(ptr(batches[49].data.children[1].values)).toBe(ptr(batches[0].data.children[1].values));
    expect(counters().live_imported_views).toBe(made); // no new views
    imported.dispose();
    expect(counters().live_owners).toBe(0);
    expect(() => batches[49].data.children[2].values).toThrow(withCode("released"));
  });

  test("a wide batch nobody reads costs no view beyond the handle's anchor", () => {
    const columns: Record<string, ReturnType<typeof vectorFromArray>> = {};
    for (let i = 0; i < 50; i++) columns[`c${i}`] = vectorFromArray([i, i + 1, null], new Int32());
    using exported = exportArray(new Table(columns).batches[0]);
    using imported = ImportedArray.fromDeviceArray(exported.schema, exported.array);
    const batch = importRecordBatch(imported);
    expect(batch.numCols).toBe(50);
    expect(batch.numRows).toBe(3);
    expect(counters().live_imported_views).toBe(1); // the handle's anchor
    expect(batch.getChild("c49")!.get(1)).toBe(50);
    expect(counters().live_imported_views).toBe(1 + 100); // + all 100 buffers
  });

  test("batches of 200 and 4,000 columns (a handle's tables past the first scratch array, and past its largest) import zero-copy, one after another", () => {
    for (const width of [200, 4000, 200, 40]) {
      const columns: Record<string, ReturnType<typeof vectorFromArray>> = {};
      for (let i = 0; i < width; i++) columns[`c${i}`] = vectorFromArray([i, null, i + 2], new Int32());
      const source = new Table(columns).batches[0];
      using exported = exportArray(source);
      using imported = ImportedArray.fromDeviceArray(exported.schema, exported.array);
      expect(imported.nodeCount).toBe(width + 1);
      const batch = importRecordBatch(imported);
      expect([batch.numCols, batch.numRows]).toEqual([width, 3]);
      const last = batch.data.children[width - 1]!;
      expect([...batch.getChild(`c${width - 1}`)!]).toEqual([width - 1, null, width + 1]);
      expect(ptr(last.values)).toBe(ptr(source.data.children[width - 1]!.values));
    }
  });

  test("disposed before the first read: every buffer read is a ReleasedError (no view of the producer's memory is made), and exports refuse it", () => {
    using exported = exportArray(mixedBatch());
    const imported = ImportedArray.fromDeviceArray(exported.schema, exported.array);
    const batch = importRecordBatch(imported);
    imported.dispose();
    expect(counters().live_owners).toBe(0);
    expect(counters().live_imported_views).toBe(0);
    const int32 = batch.data.children[0];
    expect(() => int32.values).toThrow(withCode("released"));
    expect(() => int32.nullBitmap).toThrow(withCode("released"));
    expect(() => batch.data.children[3].valueOffsets).toThrow(withCode("released"));
    expect(counters().live_imported_views).toBe(0); // nothing made after the end
    expect(() => exportArray(batch)).toThrow(withCode("released"));
  });

  test("disposed after the first read: the views made are detached, and the Data refuse reads", () => {
    using exported = exportArray(mixedBatch());
    const imported = ImportedArray.fromDeviceArray(exported.schema, exported.array);
    const batch = importRecordBatch(imported);
    const values = batch.data.children[1].values as Float64Array;
    expect(values[2]).toBe(2.5);
    imported.dispose();
    expect(counters().live_owners).toBe(0);
    expect(values.byteLength).toBe(0);
    expect(() => batch.data.children[0].values).toThrow(withCode("released"));
  });

  test("after dispose, a read of what was converted from the handle is a ReleasedError that says how to learn where it was disposed (read before or not)", () => {
    for (const readFirst of [false, true]) {
      using exported = exportArray(mixedBatch());
      const imported = ImportedArray.fromDeviceArray(exported.schema, exported.array);
      const batch = importRecordBatch(imported);
      const rows = batch.numRows;
      expect(rows).toBeGreaterThan(0);
      if (readFirst) expect(batch.toArray().length).toBe(rows);
      const vector = importVector(imported);
      const column = importData(imported.root.child(0));
      const table = importTable([imported]);
      const child = batch.getChildAt(0)!;
      expect([vector.length, column.length, table.numRows]).toEqual([rows, rows, rows]);
      imported.dispose();
      const reads: [string, () => unknown][] = [
        ["batch.getChildAt(0).toArray()", () => batch.getChildAt(0)!.toArray()],
        ["a child taken before", () => child.get(0)],
        ["[...batch][0].toJSON()", () => [...batch][0]!.toJSON()],
        ["vector", () => vector.data[0]!.nullBitmap],
        ["importData", () => column.values],
        ["table.getChildAt(0).toArray()", () => table.getChildAt(0)!.toArray()],
        ["exportArray(batch)", () => exportArray(batch)],
        ["a write to a column's values", () => { (batch.data.children[0] as { values: unknown }).values = new Uint8Array(0); }],
        ["a nested struct child's values", () => batch.data.children[5]!.children[0]!.values],
      ];
      for (const [what, read] of reads) {
        let error: unknown = null;
        try {
          read();
        } catch (caught) {
          error = caught;
        }
        expect({ what, code: (error as { code?: string } | null)?.code }).toEqual({ what, code: "released" });
        // (Debug mode names the line instead: test/core/debug_mode.test.ts.)
        expect((error as Error).message).toContain("was converted from an ImportedArray that was disposed (ARROW_DEVICE_DEBUG=1 records where), which released its memory");
        expect((error as Error).message).toContain("call releaseToGC() instead of dispose()");
      }
      // The lengths are not the memory: they stay.
      expect([batch.numRows, vector.length, column.length, table.numRows]).toEqual([rows, rows, rows, rows]);
    }
    expect(counters().live_owners).toBe(0);
  });

  test("disposing a handle whose batch nobody read makes no view of it, even when the batch is read after", () => {
    using exported = exportArray(mixedBatch());
    const imported = ImportedArray.fromDeviceArray(exported.schema, exported.array);
    const batch = importRecordBatch(imported);
    imported.dispose();
    expect(counters().live_imported_views).toBe(0);
    expect(() => batch.getChild("i")!.get(0)).toThrow(withCode("released"));
    expect(counters().live_imported_views).toBe(0);
    expect(counters().live_owners).toBe(0);
  });

  test("releaseToGC leaves converted objects whole: their memory is the GC's", () => {
    using exported = exportArray(mixedBatch());
    const imported = ImportedArray.fromDeviceArray(exported.schema, exported.array);
    const batch = importRecordBatch(imported);
    const rows = batch.numRows;
    imported.releaseToGC();
    imported.dispose();
    expect(batch.numRows).toBe(rows);
    expect(batch.getChild("i")!.get(0)).toBe(mixedBatch().getChild("i")!.get(0));
  });

  test("writing a buffer property fills the batch first, then replaces only that property", () => {
    using exported = exportArray(mixedBatch());
    using imported = ImportedArray.fromDeviceArray(exported.schema, exported.array);
    const batch = importRecordBatch(imported);
    const own = new Int32Array([9, 9, 9, 9, 9]);
    (batch.data.children[0] as { values: Int32Array }).values = own;
    expect(batch.data.children[0].values).toBe(own);
    expect(batch.getChild("i")!.get(0)).toBe(9);
    expect(batch.getChild("f")!.get(1)).toBe(1.5); // the producer's, made by the write
    expect(counters().live_imported_views).toBeGreaterThan(1);
  });

  test("an unread batch holds the producer's memory until collected, then releases it exactly once", async () => {
    using exported = exportArray(mixedBatch());
    const box: { batch: RecordBatch | null } = { batch: importRecordBatch(exported.schema, exported.array) };
    expect(counters().live_owners).toBe(1);
    // The handle's anchor, which its releaseToGC left to the batch's
    // deferred views: the only view until the first read.
    expect(counters().live_imported_views).toBe(1);
    for (let i = 0; i < 5; i++) {
      Bun.gc(true);
      expect(counters().live_owners).toBe(1);
    }
    expect(box.batch!.getChild("s")!.get(1)).toBe("bb");
    box.batch = null;
    expect(await collectUntil(() => counters().live_owners === 0)).toBe(true);
    expect(counters().live_imported_views).toBe(0);
  });

  test("batches converted from a handle released to the GC share its anchor: the C producer's release runs once, after the last batch", async () => {
    const spec = { format: "+s", length: 3, buffers: [null], children: [
      { format: "i", name: "a", length: 3, buffers: [null, new Int32Array([1, 2, 3])] },
      { format: "g", name: "b", length: 3, buffers: [null, new Float64Array([0.5, 1.5, 2.5])] },
    ] };
    const before = producerClean();
    const box: { first: RecordBatch | null; second: RecordBatch | null } = { first: null, second: null };
    const produced = produceDevice(spec);
    (() => {
      const imported = ImportedArray.fromDeviceArray(produced.schema.address, produced.array.address);
      box.first = importRecordBatch(imported);
      box.second = importRecordBatch(imported);
      imported.releaseToGC();
    })();
    disposeProduced(produced); // the landing structs only: the import moved the tree out
    // One view: the handle's anchor, left to the batches' deferred views.
    expect(counters().live_imported_views).toBe(1);
    expect(producerClean().live).toBe(before.live + 3);
    for (let i = 0; i < 5; i++) {
      Bun.gc(true);
      expect(producerClean().live).toBe(before.live + 3); // both batches alive, neither read
    }
    box.first = null;
    for (let i = 0; i < 5; i++) {
      Bun.gc(true);
      expect(producerClean().live).toBe(before.live + 3); // the second still holds it
    }
    expect(box.second!.getChild("b")!.get(2)).toBe(2.5); // read after the handle is gone
    box.second = null;
    expect(await collectUntil(() => producerClean().live === before.live)).toBe(true);
    expect(producerClean().doubles).toBe(before.doubles);
    expect(counters().live_imported_views).toBe(0);
    expect(counters().live_owners).toBe(0);
  });

  test("a typed array read from a batch keeps the memory after the batch is gone", async () => {
    const { source, stream } = repeatStream(3, 64);
    const box: { values: Int32Array | null } = { values: null };
    (() => {
      const batches = [...recordBatches(stream)];
      expect(batches.length).toBe(3);
      box.values = batches[2].getChild("a")!.data[0].values as Int32Array;
    })();
    expect(await collectUntil(() => streamPeer.sp_repeat_live_batches(source) === 1n, 200)).toBe(true);
    for (let i = 0; i < 5; i++) {
      Bun.gc(true);
      expect(streamPeer.sp_repeat_live_batches(source)).toBe(1n);
    }
    expect(box.values![63]).toBe(63);
    box.values = null;
    expect(await collectUntil(() => streamPeer.sp_repeat_live_batches(source) === 0n, 200)).toBe(true);
  });

  test("a stream's unread batches hold one view each, and each is released once collected", async () => {
    const { source, stream } = repeatStream(5, 64);
    const box: { batches: RecordBatch[] } = { batches: [] };
    (() => {
      box.batches = [...recordBatches(stream)];
    })();
    expect(box.batches.length).toBe(5);
    expect(streamPeer.sp_repeat_live_batches(source)).toBe(5n);
    expect(counters().live_imported_views).toBe(5);
    expect(box.batches[4].getChild("b")!.get(5)).toBe(2.5);
    expect(box.batches[4].getChild("b")!.get(3)).toBeNull();
    expect(counters().live_imported_views).toBeGreaterThan(5);
    box.batches.splice(0, 3);
    expect(await collectUntil(() => streamPeer.sp_repeat_live_batches(source) === 2n, 200)).toBe(true);
    box.batches = [];
    expect(await collectUntil(() => streamPeer.sp_repeat_live_batches(source) === 0n, 200)).toBe(true);
  });

  test("a stream read batch by batch builds eagerly once a lazy batch was read before the next pull", () => {
    // Views each batch adds when pulled: 1 (lazy: its anchor) or 3 (eager:
    // a's values, b's validity and values; no anchor).
    const pulledViews = (read: boolean): number[] => {
      const { stream } = repeatStream(40, 64);
      const reader = StreamRead.open("recordBatches", stream, {}, false, false);
      const added: number[] = [];
      const held: RecordBatch[] = [];
      for (;;) {
        const before = counters().live_imported_views;
        const batch = reader.next();
        if (batch === null) break;
        added.push(counters().live_imported_views - before);
        held.push(batch);
        if (read) expect(batch.getChild("a")!.get(5)).toBe(5);
      }
      expect(held.length).toBe(40);
      expect(held.every((batch) => batch.getChild("b")!.get(5) === 2.5)).toBe(true);
      stream.release();
      return added.slice(1); // the first goes through a handle
    };
    // Batch 1 is lazy; once it was read, every later batch is eager.
    expect(pulledViews(true)).toEqual([1, ...Array<number>(38).fill(3)]);
    // Nothing read before the next pull: every batch stays lazy.
    expect(pulledViews(false)).toEqual(Array<number>(39).fill(1));
  });

  test("a lazily built batch exported again holds its producer after the import is disposed", () => {
    using exported = exportArray(mixedBatch());
    const imported = ImportedArray.fromDeviceArray(exported.schema, exported.array);
    const batch = importRecordBatch(imported);
    using again = exportArray(batch);
    imported.dispose();
    expect(counters().live_owners).toBe(1); // held by the new export
    using reimported = ImportedArray.fromDeviceArray(again.schema, again.array);
    const back = importRecordBatch(reimported);
    expect([...back.getChild("l")!]).toEqual(["L1", "L22", "L333", null, "L5"]);
    expect(back.getChild("n")!.get(1)!.toJSON()).toEqual({ x: 2, y: null });
  });

  test("a batch's Data behave as apache-arrow's: slices, nulls, concatenation into a Table", () => {
    using exported = exportArray(mixedBatch());
    using imported = ImportedArray.fromDeviceArray(exported.schema, exported.array);
    const batch = importRecordBatch(imported);
    const sliced = batch.slice(1, 4);
    expect([...sliced.getChild("i")!]).toEqual([null, 3, 4]);
    expect(sliced.getChild("i")!.nullCount).toBe(1);
    expect([...sliced.getChild("b")!]).toEqual([false, null, true]);
    const table = new Table([batch, batch]);
    expect(table.numRows).toBe(10);
    expect([...table.getChild("s")!].slice(3, 7)).toEqual(["", "ccc", "a", "bb"]);
    expect(new RecordBatch(new Schema(batch.schema.fields), batch.data).getChild("f")!.get(4)).toBe(4.5);
    expect(makeData({ type: new Int32(), length: 2, data: batch.data.children[0].values.subarray(2, 4) }).values[1]).toBe(4);
  });
});

describe("the handle's own reads after dispose", () => {
  test("say how to learn where dispose() ran, with converted objects or without", () => {
    using exported = exportArray(mixedBatch());
    const imported = ImportedArray.fromDeviceArray(exported.schema, exported.array);
    const raw = imported.root.child(0);
    importRecordBatch(imported);
    imported.dispose();
    expect(() => raw.buffer(1)).toThrow(withCode("released"));
    expect(() => imported.root).toThrow("this imported array was disposed (ARROW_DEVICE_DEBUG=1 records where); its memory is released");
    using again = exportArray(mixedBatch());
    const plain = ImportedArray.fromDeviceArray(again.schema, again.array);
    plain.dispose();
    expect(() => plain.root).toThrow("this imported array was disposed (ARROW_DEVICE_DEBUG=1 records where); its memory is released");
  });
});
