/**
 * The one-call export path (zig/export/batch.zig, native/exported.ts):
 * pooled native slots, schema templates cached per apache-arrow object, the
 * keepalive id handed back by the release call, and the GC safety net of a
 * handle dropped without release(). Exact counts; bounded GC loops.
 */
import { expect, test } from "bun:test";
import { CString, ptr, read, type Pointer } from "bun:ffi";
import { Field, Int32, RecordBatch, Schema, Struct, Utf8, makeData, vectorFromArray } from "apache-arrow";
import { ArrowArrayLayout, ArrowSchemaLayout, Flags } from "../../ts/core/abi/layout.ts";
import { counters } from "../helpers/leaks.ts";
import { exportArray, exportSchema, importRecordBatch, importVector, type ExportedArray } from "../../ts/index.ts";
import { ImportedArray } from "../../ts/raw.ts";
import { collectUntil } from "../helpers/gc.ts";
import { drainReleased, releasesQueued } from "../../ts/native/keepalive.ts";
import { withCode } from "../helpers/errors.ts";

/** A two-column batch whose values start at `base` (distinct per batch). */
function batchFrom(base: number): RecordBatch {
  const fields = [new Field("n", new Int32(), true), new Field("s", new Utf8(), true)];
  return new RecordBatch(new Schema(fields), makeData({
    type: new Struct(fields),
    length: 3,
    children: [
      vectorFromArray([base, base + 1, null], new Int32()).data[0],
      vectorFromArray([`v${base}`, null, `w${base}`], new Utf8()).data[0],
    ],
  }));
}

function valuesOf(handle: ExportedArray<"device_array">): unknown[] {
  using imported = ImportedArray.fromDeviceArray(handle.schema, handle.array);
  const batch = importRecordBatch(imported);
  return [...batch.getChildAt(0)!, ...batch.getChildAt(1)!];
}

function liveExports() {
  const c = counters();
  return { arrays: c.live_array_exports, schemas: c.live_schema_exports, retained: c.js_retained_exports };
}

test("live exports never share a slot; a slot comes back only after release(), with the new export's trees", () => {
  const before = liveExports();
  const batches = Array.from({ length: 40 }, (_, i) => batchFrom(i * 10));
  const handles = batches.map((b) => exportArray(b));
  const addresses = new Set(handles.map((h) => Number(h.schema)));
  expect(addresses.size).toBe(40);
  // Release every other one: their slots may be handed out again.
  const released = new Set<number>();
  for (let i = 0; i < 40; i += 2) {
    released.add(Number(handles[i].schema));
    handles[i].release();
  }
  const again = batches.slice(0, 20).map((b) => exportArray(b));
  const live = [...handles.filter((h) => !h.released), ...again];
  expect(new Set(live.map((h) => Number(h.schema))).size).toBe(live.length);
  // Only released slots were reused, never a live one.
  const oldLive = new Set(handles.filter((h) => !h.released).map((h) => Number(h.schema)));
  for (const h of again) expect(oldLive.has(Number(h.schema))).toBe(false);
  expect(again.some((h) => released.has(Number(h.schema)))).toBe(true); // the pool at work
  // Every live handle still holds its own batch's trees.
  for (let i = 1; i < 40; i += 2) expect(valuesOf(handles[i])).toEqual([i * 10, i * 10 + 1, null, `v${i * 10}`, null, `w${i * 10}`]);
  again.forEach((h, i) => expect(valuesOf(h)).toEqual([i * 10, i * 10 + 1, null, `v${i * 10}`, null, `w${i * 10}`]));
  for (const h of live) h.release();
  expect(liveExports()).toEqual(before);
});

test("trees a consumer moved out outlive the handle and the reuse of its slot", () => {
  const before = liveExports();
  const first = exportArray(batchFrom(100));
  const slot = Number(first.schema);
  const imported = ImportedArray.fromDeviceArray(first.schema, first.array); // moves both out
  first.release(); // frees (pools) the slot; nothing left in it to release
  const second = exportArray(batchFrom(200));
  expect(Number(second.schema)).toBe(slot); // the same memory, a new export
  const batch = importRecordBatch(imported);
  expect([...batch.getChildAt(0)!, ...batch.getChildAt(1)!]).toEqual([100, 101, null, "v100", null, "w100"]);
  expect(valuesOf(second)).toEqual([200, 201, null, "v200", null, "w200"]);
  second.release();
  expect(liveExports().arrays).toBe(before.arrays + 1); // the moved tree, still imported
  imported.dispose();
  expect(liveExports()).toEqual(before);
});

test("one cached schema template builds independent trees, each released once", () => {
  const before = liveExports();
  const batch = batchFrom(7);
  const a = exportArray(batch);
  const b = exportArray(batch);
  const c = exportSchema(batch.schema);
  const privateData = (h: ExportedArray) => read.ptr(h.schema, ArrowSchemaLayout.fields.private_data);
  const format = (h: ExportedArray) => read.ptr(h.schema, ArrowSchemaLayout.fields.format);
  expect(new Set([privateData(a), privateData(b), privateData(c)]).size).toBe(3);
  expect(new Set([format(a), format(b), format(c)]).size).toBe(3);
  expect(liveExports().schemas).toBe(before.schemas + 3);
  a.release();
  expect(liveExports().schemas).toBe(before.schemas + 2);
  expect(valuesOf(b)).toEqual([7, 8, null, "v7", null, "w7"]); // moved out and released by the import
  expect(liveExports().schemas).toBe(before.schemas + 1);
  b.release();
  c.release();
  c.release(); // idempotent
  expect(liveExports()).toEqual(before);
});

test("the same schema exported under another field name gets its own tree", () => {
  const data = vectorFromArray([1, 2], new Int32()).data[0];
  const named = exportArray(data, { field: new Field("named", new Int32(), false) });
  const unnamed = exportArray(data);
  const name = (h: ExportedArray) => new CString(read.ptr(h.schema, ArrowSchemaLayout.fields.name) as Pointer).toString();
  const flags = (h: ExportedArray) => read.i64(h.schema, ArrowSchemaLayout.fields.flags);
  expect(name(named)).toBe("named");
  expect(flags(named)).toBe(0n);
  expect(name(unnamed)).toBe("");
  expect(flags(unnamed)).toBe(BigInt(Flags.NULLABLE));
  named.release();
  unnamed.release();
});

function dropExports(n: number): void {
  for (let i = 0; i < n; i++) exportArray(batchFrom(i)); // never released
}

test("handles dropped without release() are released by the GC: every tree once, every buffer let go", async () => {
  const before = liveExports();
  dropExports(300);
  expect(liveExports()).toEqual({ arrays: before.arrays + 300, schemas: before.schemas + 300, retained: before.retained + 300 });
  expect(await collectUntil(() => liveExports().arrays === before.arrays && liveExports().schemas === before.schemas, 200)).toBe(true);
  expect(liveExports()).toEqual(before);
});

test("disposing the import of this thread's own export hands the export's id straight back, queueing nothing", () => {
  drainReleased(); // an empty queue: what follows is this test's
  const before = liveExports();
  const handle = exportArray(batchFrom(1));
  using imported = ImportedArray.fromDeviceArray(handle.schema, handle.array);
  handle.release();
  imported.dispose(); // its anchor held the last reference: the moved tree is released in that call
  expect(releasesQueued()).toBe(0);
  expect(liveExports()).toEqual(before);
});

test("a consumer's release of a moved tree from a view's deallocator lets its buffers go through the queue", () => {
  drainReleased();
  const before = liveExports();
  const handle = exportArray(batchFrom(1));
  using imported = ImportedArray.fromDeviceArray(handle.schema, handle.array);
  const batch = importRecordBatch(imported);
  expect([...batch.getChildAt(0)!]).toEqual([1, 2, null]); // the views now hold references too
  handle.release();
  imported.dispose(); // the last reference ends as a view is detached: its id goes through the queue
  expect(releasesQueued()).toBe(1);
  exportArray(batchFrom(2)).release(); // drains whatever is still queued
  expect(releasesQueued()).toBe(0);
  expect(liveExports()).toEqual(before);
});

/** The C address of buffer `buffer` of child `child` of an exported struct. */
function childBufferAddress(handle: ExportedArray, child: number, buffer: number): number {
  const children = read.ptr(handle.array, ArrowArrayLayout.fields.children);
  const array = read.ptr(children as unknown as Pointer, child * 8);
  const buffers = read.ptr(array as unknown as Pointer, ArrowArrayLayout.fields.buffers);
  return read.ptr(buffers as unknown as Pointer, buffer * 8);
}

test("a batch exported again points at the same JS memory; a view detached since is refused, not pointed at", () => {
  const batch = batchFrom(7);
  const values = batch.data.children[0].values as Int32Array;
  const first = exportArray(batch);
  const address = childBufferAddress(first, 0, 1);
  first.release();
  const second = exportArray(batch);
  expect(childBufferAddress(second, 0, 1)).toBe(address);
  expect(address).toBe(ptr(values));
  expect(valuesOf(second)).toEqual([7, 8, null, "v7", null, "w7"]);
  second.release();
  (values.buffer as ArrayBuffer).transfer(); // detaches `values`
  expect(() => exportArray(batch)).toThrow(withCode("released"));
});

test("a column exported again after setValid exports its new bitmap and null count", () => {
  const column = makeData({ type: new Int32(), length: 3, nullCount: 0, data: new Int32Array([1, 2, 3]) });
  const nullCountAt = (handle: ExportedArray) => Number(read.i64(handle.array, ArrowArrayLayout.fields.null_count));
  const bitmapAt = (handle: ExportedArray) => read.ptr(read.ptr(handle.array, ArrowArrayLayout.fields.buffers) as unknown as Pointer, 0);
  const first = exportArray(column);
  expect(nullCountAt(first)).toBe(0);
  expect(bitmapAt(first)).toBe(0);
  first.release();
  column.setValid(1, false); // a new bitmap, one null
  const second = exportArray(column);
  expect(nullCountAt(second)).toBe(1);
  expect(bitmapAt(second)).toBe(ptr(column.nullBitmap!));
  expect(valuesOfColumn(second)).toEqual([1, null, 3]);
  second.release();
  column.setValid(2, false); // the same bitmap, two nulls
  const third = exportArray(column);
  expect(nullCountAt(third)).toBe(2);
  expect(valuesOfColumn(third)).toEqual([1, null, null]);
  third.release();
});

function valuesOfColumn(handle: ExportedArray<"device_array">): unknown[] {
  using imported = ImportedArray.fromDeviceArray(handle.schema, handle.array);
  return [...importVector(imported)];
}

test("a batch of flat columns exported again reuses its plan only while the struct and every column are unchanged", () => {
  const fields = [new Field("a", new Int32(), true), new Field("b", new Int32(), true)];
  const column = (values: number[]) => makeData({ type: new Int32(), length: 3, nullCount: 0, data: new Int32Array(values) });
  const batch = new RecordBatch(new Schema(fields), makeData({ type: new Struct(fields), length: 3, children: [column([1, 2, 3]), column([4, 5, 6])] }));
  const data = batch.data; // (the constructor may make its own struct Data)
  const nullCountAt = (handle: ExportedArray) => Number(read.i64(handle.array, ArrowArrayLayout.fields.null_count));
  const retainedBefore = counters().js_retained_exports;
  const first = exportArray(batch);
  const second = exportArray(batch); // from the memo, while the first is live
  expect(counters().js_retained_exports).toBe(retainedBefore + 2); // one keepalive entry per export
  for (const handle of [first, second]) {
    expect(childBufferAddress(handle, 0, 1)).toBe(ptr(data.children[0].values));
    expect(childBufferAddress(handle, 1, 1)).toBe(ptr(data.children[1].values));
    expect(valuesOfColumns(handle)).toEqual([1, 2, 3, 4, 5, 6]);
  }
  first.release();
  second.release();
  expect(counters().js_retained_exports).toBe(retainedBefore);
  // A column replaced in place: the new column's memory.
  data.children[1] = column([7, 8, 9]);
  const third = exportArray(batch);
  expect(valuesOfColumns(third)).toEqual([1, 2, 3, 7, 8, 9]);
  expect(childBufferAddress(third, 1, 1)).toBe(ptr(data.children[1].values));
  third.release();
  // A column given a null: its new bitmap and null count.
  data.children[0].setValid(0, false);
  const fourth = exportArray(batch);
  expect(valuesOfColumns(fourth)).toEqual([null, 2, 3, 7, 8, 9]);
  fourth.release();
  // The struct itself given a null: its bitmap and null count.
  data.setValid(2, false);
  const fifth = exportArray(batch);
  expect(nullCountAt(fifth)).toBe(1);
  expect(read.ptr(read.ptr(fifth.array, ArrowArrayLayout.fields.buffers) as unknown as Pointer, 0)).toBe(ptr(data.nullBitmap!));
  fifth.release();
  // A column's memory detached since: refused, not pointed at.
  (data.children[0].values.buffer as ArrayBuffer).transfer();
  expect(() => exportArray(batch)).toThrow(withCode("released"));
});

function valuesOfColumns(handle: ExportedArray<"device_array">): unknown[] {
  using imported = ImportedArray.fromDeviceArray(handle.schema, handle.array);
  const batch = importRecordBatch(imported);
  return [...batch.getChildAt(0)!, ...batch.getChildAt(1)!];
}
