/**
 * What imports reuse and what each holds: a handle holds one
 * anchor view (its tables are a JS copy, whose array a dispose gives to
 * the next import of its shape); repeated imports of one schema
 * share one apache-arrow Schema, found by the exact schema bytes; every
 * batch of a stream shares the stream's Schema; the table-reading build
 * path gives the same Data as the RawArray path.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { ptr } from "bun:ffi";
import {
  Dictionary, Field, Float64, Int32, RecordBatch, Schema, Struct, Utf8, makeData, vectorFromArray, type Data,
} from "apache-arrow";
import { DeviceType } from "../../ts/core/abi/layout.ts";
import { ExportedStream, exportArray, importRecordBatch, importTable, recordBatches, importVector } from "../../ts/index.ts";
import { ImportedArray, ImportedStream } from "../../ts/raw.ts";
import { counters } from "../helpers/leaks.ts";
import { streamPeer } from "../helpers/fixtures.ts";
import { collectUntil } from "../helpers/gc.ts";
import { handleViews, pullTransient, schemaKeyOf, schemaMatchesKey } from "../../ts/native/batch_source.ts";
import { snapshotIsSpare } from "../../ts/native/import_snapshot.ts";
import { withCode } from "../helpers/errors.ts";
import { expectSettled } from "../helpers/settled.ts";

afterEach(async () => {
  await expectSettled({}, { heldByImports: { producedLive: () => streamPeer.sp_produced_live() } });
  streamPeer.sp_reset_counts();
});

function int32Column(values: number[], nullAt = -1): Data<Int32> {
  const validity = new Uint8Array(Math.ceil(values.length / 8)).fill(0xff);
  if (nullAt >= 0) validity[nullAt >> 3] &= ~(1 << (nullAt & 7));
  return makeData({ type: new Int32(), length: values.length, nullCount: nullAt >= 0 ? 1 : 0, nullBitmap: validity, data: Int32Array.from(values) });
}

function batchOf(fields: Field[], columns: Data[], metadata?: Map<string, string>): RecordBatch {
  return new RecordBatch(new Schema(fields, metadata), makeData({ type: new Struct(fields), length: columns[0].length, children: columns }));
}

/** Exports `batch` and converts its import; the handle is disposed. */
function roundTrip(batch: RecordBatch): RecordBatch {
  const exported = exportArray(batch);
  try {
    using imported = ImportedArray.fromDeviceArray(exported.schema, exported.array);
    const back = importRecordBatch(imported);
    // Read while the import is alive (dispose detaches the views).
    expect(back.numRows).toBe(batch.numRows);
    return back;
  } finally {
    exported.release();
  }
}

describe("what a handle holds", () => {
  test("buffers at distinct addresses get one view each in any address order; buffers starting at one address share one", () => {
    // Columns over three separate int32 arrays, laid out in the batch in
    // descending address order (not the order a producer allocating
    // forwards gives), then a batch whose first and last columns are the
    // same memory.
    const arrays = [0, 1, 2].map((i) => Int32Array.from({ length: 64 }, (_, k) => k * 10 + i));
    const descending = [...arrays].sort((x, y) => ptr(y) - ptr(x));
    const column = (values: Int32Array) => makeData({ type: new Int32(), length: values.length, nullCount: 0, data: values });
    const fields = (n: number) => Array.from({ length: n }, (_, i) => new Field(`c${i}`, new Int32(), false));
    const cases = [
      { columns: descending, distinct: 3 },
      { columns: [descending[1], descending[0], descending[1]], distinct: 2 },
    ];
    for (const { columns, distinct } of cases) {
      const exported = exportArray(batchOf(fields(columns.length), columns.map(column)));
      const imported = ImportedArray.fromDeviceArray(exported.schema, exported.array);
      imported.prefetchAll();
      expect(counters().live_imported_views).toBe(1 + distinct); // the anchor + one per distinct start address
      const views = handleViews(imported);
      const byColumn = columns.map((_, c) => views[2 + 2 * c]!); // root validity, then (validity, values) per column
      expect(new Set(byColumn).size).toBe(distinct);
      for (const [c, view] of byColumn.entries()) {
        expect(ptr(new Uint8Array(view))).toBe(ptr(columns[c])); // zero-copy: the exported array's own memory
        expect(new Int32Array(view)[5]).toBe(columns[c][5]);
      }
      if (distinct === 2) expect(byColumn[0]).toBe(byColumn[2]); // one ArrayBuffer for one start address
      imported.dispose();
      exported.release();
      expect(counters().live_imported_views).toBe(0);
    }
  });

  test("a buffer viewed later (size unknown at \"minimal\") shares the region of a view made at its address before", () => {
    // c1's string bytes are c0's int32 memory: one start address. At
    // "minimal" validation the bytes' size is not computed, so prefetchAll
    // views c0 only and conversion views c1's bytes afterwards.
    const ints = Int32Array.from([0x44434241, 0x48474645]); // little-endian "ABCD", "EFGH"
    const bytes = new Uint8Array(ints.buffer, 0, 8);
    const strings = makeData({ type: new Utf8(), length: 2, nullCount: 0, valueOffsets: Int32Array.from([0, 4, 8]), data: bytes });
    const ints0 = makeData({ type: new Int32(), length: 2, nullCount: 0, data: ints });
    const batch = batchOf([new Field("c0", new Int32(), false), new Field("c1", new Utf8(), false)], [ints0, strings]);
    const exported = exportArray(batch);
    const imported = ImportedArray.fromDeviceArray(exported.schema, exported.array, { validation: "minimal" });
    imported.prefetchAll();
    const viewed = counters().live_imported_views;
    const back = importRecordBatch(imported);
    expect(back.getChild("c1")!.toArray()).toEqual(["ABCD", "EFGH"]);
    const c0 = back.getChild("c0")!.data[0].values as Int32Array;
    const c1 = back.getChild("c1")!.data[0].values as Uint8Array;
    expect(c1.buffer).toBe(c0.buffer); // one ArrayBuffer for the one start address
    expect(viewed).toBe(3); // the anchor, c0's values and c1's offsets (sizes known)
    expect(counters().live_imported_views).toBe(viewed); // c1's bytes took no new view
    imported.dispose();
    exported.release();
    expect(counters().live_imported_views).toBe(0);
  });

  test("an import holds one anchor view until its buffers are viewed; dispose releases everything at once", () => {
    const batch = batchOf([new Field("a", new Int32(), true)], [int32Column([1, 2, 3, 4], 1)]);
    const exported = exportArray(batch);
    const imported = ImportedArray.fromDeviceArray(exported.schema, exported.array);
    expect(counters().live_owners).toBe(1);
    expect(counters().live_imported_views).toBe(1); // the anchor only
    const back = importRecordBatch(imported);
    // Nothing more: the views wait for the first read, held meanwhile by
    // the handle's anchor (arrow/lazy_data.ts).
    expect(counters().live_imported_views).toBe(1);
    expect(back.getChild("a")!.toArray()[3]).toBe(4);
    // + the column's validity and values (the root has no validity).
    expect(counters().live_imported_views).toBe(3);
    imported.dispose();
    expect(counters().live_imported_views).toBe(0);
    expect(counters().live_owners).toBe(0);
    expect(() => back.getChild("a")!.data[0].values).toThrow("was converted from an ImportedArray that was disposed"); // refused, not freed memory
    exported.release();
  });

  test("a handle dropped without dispose is released once its anchor is collected", async () => {
    const exported = exportArray(batchOf([new Field("a", new Int32(), true)], [int32Column([7, 8])]));
    (() => {
      const imported = ImportedArray.fromDeviceArray(exported.schema, exported.array);
      expect(imported.root.child(0).buffer(1)[1]).toBe(8);
    })();
    expect(await collectUntil(() => counters().live_owners === 0)).toBe(true);
    expect(counters().live_imported_views).toBe(0);
    exported.release();
  });

  test("importRecordBatch's batch keeps the producer's data until it is collected; the handle's anchor goes at once", async () => {
    const exported = exportArray(batchOf([new Field("a", new Int32(), true)], [int32Column([5, 6, 7])]));
    const box: { batch: RecordBatch | null } = { batch: importRecordBatch(exported.schema, exported.array) };
    expect(counters().live_imported_views).toBe(1); // the values (no nulls: no validity view)
    expect(box.batch!.getChild("a")!.get(2)).toBe(7);
    box.batch = null;
    expect(await collectUntil(() => counters().live_owners === 0)).toBe(true);
    exported.release();
  });
});

describe("snapshot arrays", () => {
  test("a disposed handle's tables take the next import's snapshot; it still reports its shape, and its batch refuses reads", () => {
    const narrow = batchOf([new Field("a", new Int32(), true)], [int32Column([1, 2, 3], 1)]);
    const wide = batchOf([new Field("x", new Int32(), true), new Field("y", new Int32(), false)], [int32Column([4, 5, 6]), int32Column([7, 8, 9])]);
    // Two imports of one shape in a row: after the first one's dispose,
    // the second is written into the array the first gave back.
    const first = exportArray(narrow);
    const firstHandle = ImportedArray.fromDeviceArray(first.schema, first.array);
    const firstBatch = importRecordBatch(firstHandle);
    firstHandle.dispose();
    expect(firstHandle.nodeCount).toBe(2);
    expect(firstHandle.bufferCount).toBe(3);
    expect(firstHandle.deviceType).toBe(DeviceType.CPU);
    expect(firstHandle.hostReadable).toBe(true);
    expect(firstHandle.byteLength).toBe(12 + 1);
    const second = exportArray(narrow);
    const secondHandle = ImportedArray.fromDeviceArray(second.schema, second.array);
    expect(snapshotIsSpare()).toBe(true);
    // Then another shape, while the second is live: its own tables.
    const third = exportArray(wide);
    const thirdHandle = ImportedArray.fromDeviceArray(third.schema, third.array);
    const secondBatch = importRecordBatch(secondHandle);
    const thirdBatch = importRecordBatch(thirdHandle);
    expect([...secondBatch.getChild("a")!]).toEqual([1, null, 3]);
    expect([...thirdBatch.getChild("y")!]).toEqual([7, 8, 9]);
    // The first handle still reports what it was, and its batch refuses.
    expect(firstHandle.nodeCount).toBe(2);
    expect(() => firstBatch.getChild("a")!.data[0].values).toThrow("was converted from an ImportedArray that was disposed");
    secondHandle.dispose();
    thirdHandle.dispose();
    expect(() => secondBatch.getChild("a")!.data[0].values).toThrow("was converted from an ImportedArray that was disposed");
    for (const handle of [first, second, third]) handle.release();
  });
});

describe("schemas shared across imports", () => {
  const fields = [new Field("a", new Int32(), true), new Field("b", new Float64(), false), new Field("s", new Utf8(), true)];
  const columns = (): Data[] => [int32Column([1, 2, 3], 0), makeData({ type: new Float64(), length: 3, data: Float64Array.from([0.5, 1.5, 2.5]) }), vectorFromArray(["x", "yy", null], new Utf8()).data[0]];

  test("two imports of the same schema share one apache-arrow Schema", () => {
    const first = roundTrip(batchOf(fields, columns()));
    const second = roundTrip(batchOf(fields, columns()));
    expect(second.schema).toBe(first.schema);
    expect(second.schema.fields.map((f) => `${f.name}:${f.type}:${f.nullable}`)).toEqual(["a:Int32:true", "b:Float64:false", "s:Utf8:true"]);
  });

  test("any difference in names, nullability, metadata or types gives a Schema of its own", () => {
    const base = roundTrip(batchOf(fields, columns()));
    const renamed = roundTrip(batchOf([new Field("A", new Int32(), true), fields[1], fields[2]], columns()));
    expect(renamed.schema).not.toBe(base.schema);
    expect(renamed.schema.fields[0].name).toBe("A");
    const nullable = roundTrip(batchOf([fields[0], new Field("b", new Float64(), true), fields[2]], columns()));
    expect(nullable.schema).not.toBe(base.schema);
    expect(nullable.schema.fields[1].nullable).toBe(true);
    const tagged = roundTrip(batchOf(fields, columns(), new Map([["k", "v"]])));
    expect(tagged.schema).not.toBe(base.schema);
    expect(tagged.schema.metadata.get("k")).toBe("v");
    const fieldTagged = roundTrip(batchOf([new Field("a", new Int32(), true, new Map([["k", "v"]])), fields[1], fields[2]], columns()));
    expect(fieldTagged.schema).not.toBe(base.schema);
    expect(fieldTagged.schema.fields[0].metadata.get("k")).toBe("v");
    const fewer = roundTrip(batchOf(fields.slice(0, 2), columns().slice(0, 2)));
    expect(fewer.schema).not.toBe(base.schema);
    expect(fewer.schema.fields.length).toBe(2);
    // Same bytes again: the first Schema.
    expect(roundTrip(batchOf(fields, columns())).schema).toBe(base.schema);
  });

  test("nested children count: struct<a> and struct<a, b> of equal formats differ", () => {
    const inner1 = new Struct([new Field("x", new Int32(), true)]);
    const inner2 = new Struct([new Field("x", new Int32(), true), new Field("y", new Int32(), true)]);
    const one = roundTrip(batchOf([new Field("n", inner1, true)], [makeData({ type: inner1, length: 2, children: [int32Column([1, 2])] })]));
    const two = roundTrip(batchOf([new Field("n", inner2, true)], [makeData({ type: inner2, length: 2, children: [int32Column([1, 2]), int32Column([3, 4])] })]));
    expect(two.schema).not.toBe(one.schema);
    expect((two.schema.fields[0].type as Struct).children.length).toBe(2);
  });

  test("later imports of a shared schema (built through its cached plan) keep their own values, nulls, lengths and memory", () => {
    const make = (a: number[], nullAt: number, s: (string | null)[]) =>
      batchOf(fields, [int32Column(a, nullAt), makeData({ type: new Float64(), length: a.length, data: Float64Array.from(a, (x) => x / 2) }), vectorFromArray(s, new Utf8()).data[0]]);
    const first = roundTrip(make([1, 2, 3], 0, ["x", "yy", null]));
    for (const [a, nullAt, s] of [[[7, 8, 9, 10], 3, ["p", null, "qq", "r"]], [[4, 5], -1, ["", "z"]], [[], -1, []]] as [number[], number, (string | null)[]][]) {
      const batch = make(a, nullAt, s);
      const exported = exportArray(batch);
      using imported = ImportedArray.fromDeviceArray(exported.schema, exported.array);
      const back = importRecordBatch(imported);
      expect(back.schema).toBe(first.schema);
      expect(back.numRows).toBe(a.length);
      expect(back.getChild("a")!.toArray().length).toBe(a.length);
      expect([...back.getChild("a")!]).toEqual(a.map((x, i) => (i === nullAt ? null : x)));
      expect(back.getChild("a")!.nullCount).toBe(nullAt >= 0 ? 1 : 0);
      expect([...back.getChild("b")!]).toEqual(a.map((x) => x / 2));
      expect([...back.getChild("s")!]).toEqual(s);
      if (a.length > 0) {
        // Zero-copy: the column's values are the producer's own bytes.
        const values = back.getChild("a")!.data[0].values;
        expect(ptr(values)).toBe(ptr(imported.root.child(0).buffer(1)));
        expect(values.byteLength).toBe(a.length * 4);
      }
      exported.release();
    }
  });

  test("dictionary-encoded schemas are never shared (apache-arrow gives each its own ids)", () => {
    const type = new Dictionary(new Utf8(), new Int32());
    const make = () => batchOf([new Field("d", type, true)], [vectorFromArray(["p", "q", "p"], type).data[0]]);
    const first = roundTrip(make());
    const second = roundTrip(make());
    expect(second.schema).not.toBe(first.schema);
    expect(String(second.schema.fields[0].type)).toBe(String(first.schema.fields[0].type));
  });

  test("schemas imported in turn (A, B, A, B, ...) each keep their own Schema, whichever import came last", () => {
    const other = [new Field("a", new Int32(), true), new Field("b", new Float64(), false), new Field("t", new Utf8(), true)];
    const a = roundTrip(batchOf(fields, columns())).schema;
    const b = roundTrip(batchOf(other, columns())).schema;
    expect(b).not.toBe(a);
    for (let i = 0; i < 3; i++) {
      expect(roundTrip(batchOf(fields, columns())).schema).toBe(a);
      expect(roundTrip(batchOf(fields, columns())).schema).toBe(a);
      expect(roundTrip(batchOf(other, columns())).schema).toBe(b);
    }
    expect(b.fields[2].name).toBe("t");
    expect(a.fields[2].name).toBe("s");
  });

  test("a dictionary-encoded schema right after a cached one is built on its own, and the cached one is found again after it", () => {
    const base = roundTrip(batchOf(fields, columns())).schema;
    const type = new Dictionary(new Utf8(), new Int32());
    const dictionary = roundTrip(batchOf([new Field("d", type, true)], [vectorFromArray(["p", "q", "p"], type).data[0]]));
    expect(dictionary.schema).not.toBe(base);
    expect(String(dictionary.schema.fields[0].type)).toBe(String(type));
    expect(roundTrip(batchOf(fields, columns())).schema).toBe(base);
  });

  test("one schema converted with and without { materialize: true } gets an entry for each option", () => {
    const batch = batchOf(fields, columns());
    const exported = exportArray(batch);
    const convert = (options: { materialize?: boolean }) => {
      const again = exportArray(batch);
      try {
        using imported = ImportedArray.fromDeviceArray(again.schema, again.array);
        return importRecordBatch(imported, options).schema;
      } finally {
        again.release();
      }
    };
    const plain = convert({});
    const materialized = convert({ materialize: true });
    expect(materialized).not.toBe(plain);
    expect(convert({ materialize: true })).toBe(materialized);
    expect(convert({})).toBe(plain);
    exported.release();
  });

  test("schemaMatchesKey refuses anything but an Int32Array before the native call", () => {
    const exported = exportArray(batchOf(fields, columns()));
    using imported = ImportedArray.fromDeviceArray(exported.schema, exported.array);
    const key = schemaKeyOf(imported)!.slice();
    expect(schemaMatchesKey(imported, key)).toBe("same");
    expect(schemaMatchesKey(imported, key.subarray(0, key.length - 1))).toBe("different");
    expect(schemaMatchesKey(imported, new Int32Array(0))).toBe("different");
    for (const bad of [null, undefined, 5, "key", {}, new Uint8Array(key.buffer), Array.from(key)]) {
      expect(() => schemaMatchesKey(imported, bad as unknown as Int32Array)).toThrow(withCode("invalid_argument"));
    }
    exported.release();
  });

  test("the table-reading path and the RawArray path (a child handle's window) build the same values", () => {
    const batch = batchOf(fields, columns());
    const exported = exportArray(batch);
    using imported = ImportedArray.fromDeviceArray(exported.schema, exported.array);
    const whole = importRecordBatch(imported);
    using child = imported.child(2);
    using sliced = imported.slice(1, 2);
    expect(importVector(child).toArray()).toEqual(["x", "yy", null]);
    expect(whole.getChild("s")!.toArray()).toEqual(["x", "yy", null]);
    expect([...importRecordBatch(sliced).getChild("a")!]).toEqual([2, 3]);
    expect([...whole.getChild("a")!]).toEqual([null, 2, 3]);
    exported.release();
  });
});

describe("streams", () => {
  function cStream(batches: number, rows: number): ExportedStream<"device_stream"> {
    const slot = new ExportedStream("device_stream", "C stream slot");
    streamPeer.sp_int_stream(1, batches, rows, -1, null, DeviceType.CPU, DeviceType.CPU, slot.stream);
    return slot;
  }

  test("every batch of recordBatches has the stream's one Schema, and its own data", () => {
    using slot = cStream(4, 3);
    const batches = [...recordBatches(ImportedStream.fromDeviceArrayStream(slot.stream))];
    expect(batches.length).toBe(4);
    for (const batch of batches) expect(batch.schema).toBe(batches[0].schema);
    expect(batches.map((b) => b.getChild("a")!.get(0))).toEqual([0, 1000, 2000, 3000]);
  });

  test("recordBatches' batches hold only their buffer views and, not read when pulled, one anchor each (each batch's handle is transient: no anchor)", async () => {
    using slot = cStream(4, 3);
    const box: { batches: RecordBatch[] } = { batches: [...recordBatches(ImportedStream.fromDeviceArrayStream(slot.stream))] };
    const views = new Set<ArrayBufferLike>();
    for (const batch of box.batches) {
      for (const data of batch.data.children) {
        for (const buffer of [data.values, data.nullBitmap, data.valueOffsets]) if (buffer && buffer.byteLength > 0) views.add(buffer.buffer);
      }
    }
    expect(views.size).toBeGreaterThanOrEqual(4);
    expect(counters().live_owners).toBe(4);
    // Read after every pull: each batch was built lazily (lazy_data.ts).
    expect(counters().live_imported_views).toBe(views.size + 4);
    views.clear();
    box.batches = [];
    expect(await collectUntil(() => counters().live_owners === 0)).toBe(true);
    expect(counters().live_imported_views).toBe(0);
  });

  test("a transient batch handle holds no view and gives its reference back exactly once", () => {
    using slot = cStream(2, 3);
    const stream = ImportedStream.fromDeviceArrayStream(slot.stream);
    const batch = pullTransient(stream)!;
    expect(counters().live_imported_views).toBe(0);
    expect(counters().live_owners).toBe(1);
    batch.dispose();
    expect(counters().live_owners).toBe(0);
    batch.dispose(); // idempotent: the reference is given back once
    batch.releaseToGC();
    expect(counters().live_owners).toBe(0);
    stream.release();
  });

  test("importTable's batches share the stream's Schema", () => {
    using slot = cStream(3, 2);
    const table = importTable(ImportedStream.fromDeviceArrayStream(slot.stream));
    expect(table.batches.length).toBe(3);
    for (const batch of table.batches) expect(batch.schema).toBe(table.schema);
    expect([...table.getChild("a")!]).toEqual([0, 1, 1000, 1001, 2000, 2001]);
  });
});
