/**
 * Array images (zig/export/array.zig `Image`, arrow/export_memo.ts `Batch`):
 * a batch of flat columns exported again is copied from a native image of
 * its memoized plan. The copies must be the trees the plan builds (same
 * buffer addresses, same schema), a batch that changed must not reuse a
 * stale image, and an image lives exactly as long as its memo (counted
 * natively). Exact counts; bounded GC loops.
 */
import { expect, test } from "bun:test";
import { CString, ptr, read, type Pointer } from "bun:ffi";
import { Field, Float64, Int32, RecordBatch, Schema, Struct, makeData, type Data } from "apache-arrow";
import { ArrowArrayLayout, ArrowDeviceArrayLayout, ArrowSchemaLayout } from "../../ts/core/abi/layout.ts";
import { counters } from "../helpers/leaks.ts";
import { native } from "../../ts/core/ffi/library.ts";
import { exportArray, importRecordBatch, type ExportedArray } from "../../ts/index.ts";
import { ImportedArray } from "../../ts/raw.ts";
import { collectUntil } from "../helpers/gc.ts";

const imagesLive = () => native.abd_array_images_live();

/** An int32 column with a null every third row, and a float64 column
 * without nulls: both flat, so the batch's plan is memoized. */
function flatBatch(base: number): RecordBatch {
  const validity = new Uint8Array([0b11011011, 0b11111110]);
  const ints = makeData({ type: new Int32(), length: 9, nullCount: 3, nullBitmap: validity, data: new Int32Array(9).map((_, i) => base + i) });
  const floats = makeData({ type: new Float64(), length: 9, nullCount: 0, data: new Float64Array(9).map((_, i) => base + i / 2) });
  const fields = [new Field("ints", new Int32(), true), new Field("floats", new Float64(), false)];
  return new RecordBatch(new Schema(fields), makeData({ type: new Struct(fields), length: 9, children: [ints, floats] }));
}

/** Every field of the exported array tree that C reads, recursively (the
 * struct addresses themselves differ per export). */
function treeOf(array: Pointer): unknown {
  const nBuffers = Number(read.i64(array, ArrowArrayLayout.fields.n_buffers));
  const nChildren = Number(read.i64(array, ArrowArrayLayout.fields.n_children));
  const buffers = read.ptr(array, ArrowArrayLayout.fields.buffers) as unknown as Pointer;
  const children = read.ptr(array, ArrowArrayLayout.fields.children) as unknown as Pointer;
  return {
    length: read.i64(array, ArrowArrayLayout.fields.length),
    nullCount: read.i64(array, ArrowArrayLayout.fields.null_count),
    offset: read.i64(array, ArrowArrayLayout.fields.offset),
    buffers: Array.from({ length: nBuffers }, (_, i) => read.ptr(buffers, i * 8)),
    children: Array.from({ length: nChildren }, (_, i) => treeOf(read.ptr(children, i * 8) as unknown as Pointer)),
    dictionary: read.ptr(array, ArrowArrayLayout.fields.dictionary),
    releaseSet: read.ptr(array, ArrowArrayLayout.fields.release) !== 0,
  };
}

function schemaOf(schema: Pointer): unknown {
  const nChildren = Number(read.i64(schema, ArrowSchemaLayout.fields.n_children));
  const children = read.ptr(schema, ArrowSchemaLayout.fields.children) as unknown as Pointer;
  const name = read.ptr(schema, ArrowSchemaLayout.fields.name);
  return {
    format: new CString(read.ptr(schema, ArrowSchemaLayout.fields.format) as unknown as Pointer).toString(),
    name: name === 0 ? null : new CString(name as unknown as Pointer).toString(),
    flags: read.i64(schema, ArrowSchemaLayout.fields.flags),
    children: Array.from({ length: nChildren }, (_, i) => schemaOf(read.ptr(children, i * 8) as unknown as Pointer)),
  };
}

/** What flatBatch(base) holds, column after column. */
function valuesOfBatch(base: number): unknown[] {
  const ints = Array.from({ length: 9 }, (_, i) => (i % 3 === 2 ? null : base + i));
  return [...ints, ...Array.from({ length: 9 }, (_, i) => base + i / 2)];
}

/** Imports the handle's trees (moving them out) and reads them back. */
function valuesOf(handle: ExportedArray<"array" | "device_array">): unknown[] {
  using imported = handle.kind === "array"
    ? ImportedArray.fromArray(handle.schema, (handle as ExportedArray<"array">).array)
    : ImportedArray.fromDeviceArray(handle.schema, (handle as ExportedArray<"device_array">).array);
  const batch = importRecordBatch(imported);
  return batch.schema.fields.flatMap((_, i) => [...batch.getChildAt(i)!]);
}

test("a batch exported again is copied from one image per memo: the plan's trees, the same buffer addresses and schema", () => {
  const batch = flatBatch(10);
  const before = imagesLive();
  const live = counters();
  const planned = exportArray(batch); // plans (and memoizes the plan)
  expect(imagesLive()).toBe(before); // a batch exported once pays for no image
  const copies = [exportArray(batch), exportArray(batch, { as: "array" }), exportArray(batch)];
  expect(imagesLive()).toBe(before + 1); // made at the first reuse, then reused
  const exported = counters();
  expect(exported.live_array_exports).toBe(live.live_array_exports + 4);
  expect(exported.live_schema_exports).toBe(live.live_schema_exports + 4);
  expect(exported.js_retained_exports).toBe(live.js_retained_exports + 4); // one keepalive id per export
  const tree = treeOf(planned.array);
  const children = batch.data.children as Data[];
  expect((tree as { children: { buffers: number[] }[] }).children.map((c) => c.buffers)).toEqual([
    [ptr(children[0].nullBitmap!), ptr(children[0].values)],
    [0, ptr(children[1].values)],
  ]);
  const schema = schemaOf(planned.schema);
  expect(schema).toEqual({
    format: "+s", name: "", flags: 0n,
    children: [{ format: "i", name: "ints", flags: 2n, children: [] }, { format: "g", name: "floats", flags: 0n, children: [] }],
  });
  for (const copy of copies) {
    expect(treeOf(copy.array)).toEqual(tree);
    expect(schemaOf(copy.schema)).toEqual(schema);
  }
  // Device fields of a copy: a CPU device array.
  expect(read.i64(copies[0].array, ArrowDeviceArrayLayout.fields.device_id)).toBe(-1n);
  expect(read.i32(copies[0].array, ArrowDeviceArrayLayout.fields.device_type)).toBe(1);
  // Each copy is its own tree: distinct private data, released once each
  // (the import moves it out and its dispose() releases it).
  const privateData = new Set([planned, ...copies].map((h) => read.ptr(h.array, ArrowArrayLayout.fields.private_data)));
  expect(privateData.size).toBe(4);
  for (const handle of [planned, ...copies]) {
    expect(valuesOf(handle)).toEqual(valuesOfBatch(10));
    handle.release();
  }
  const after = counters();
  expect(after.live_array_exports).toBe(live.live_array_exports);
  expect(after.live_schema_exports).toBe(live.live_schema_exports);
  expect(after.js_retained_exports).toBe(live.js_retained_exports);
});

test("a copy moved out by a consumer outlives its handle and the image's next copies", () => {
  const batch = flatBatch(20);
  exportArray(batch).release();
  const handle = exportArray(batch); // from the image
  const imported = ImportedArray.fromDeviceArray(handle.schema, handle.array); // moves both trees out
  handle.release();
  const retained = counters().js_retained_exports;
  for (let i = 0; i < 3; i++) exportArray(batch).release();
  expect(counters().js_retained_exports).toBe(retained); // the moved tree still holds its buffers
  const moved = importRecordBatch(imported);
  expect(moved.schema.fields.flatMap((_, i) => [...moved.getChildAt(i)!])).toEqual(valuesOfBatch(20));
  imported.dispose(); // the consumer's release: the id goes through the queue
  expect(counters().js_retained_exports).toBe(retained - 1);
});

test("a batch whose columns or bitmaps changed does not reuse its stale image", () => {
  const batch = flatBatch(30);
  const data = batch.data;
  exportArray(batch).release();
  exportArray(batch).release(); // the image is made
  // A column replaced in place: its new memory, not the image's.
  const replacement = makeData({ type: new Float64(), length: 9, nullCount: 0, data: new Float64Array(9).fill(7.5) });
  data.children[1] = replacement;
  for (let i = 0; i < 3; i++) {
    using handle = exportArray(batch);
    const tree = treeOf(handle.array) as { children: { buffers: number[] }[] };
    expect(tree.children[1].buffers[1]).toBe(ptr(replacement.values));
    expect(valuesOf(handle).slice(9)).toEqual(Array(9).fill(7.5));
  }
  // A null set in a column after its image was made: the new null count.
  data.children[0].setValid(1, false);
  for (let i = 0; i < 3; i++) {
    using handle = exportArray(batch);
    const tree = treeOf(handle.array) as { children: { nullCount: bigint }[] };
    expect(tree.children[0].nullCount).toBe(4n);
    expect(valuesOf(handle)[1]).toBeNull();
  }
  // The struct given a null: its own bitmap.
  data.setValid(8, false);
  for (let i = 0; i < 3; i++) {
    using handle = exportArray(batch);
    const tree = treeOf(handle.array) as { nullCount: bigint; buffers: number[] };
    expect(tree.nullCount).toBe(1n);
    expect(tree.buffers[0]).toBe(ptr(data.nullBitmap!));
  }
});

/** Exports `n` distinct batches twice each (making one image each) and
 * drops them; returns nothing that keeps them reachable. */
function imagesOfDroppedBatches(n: number): void {
  for (let i = 0; i < n; i++) {
    const batch = flatBatch(100 + i);
    exportArray(batch).release();
    exportArray(batch).release();
  }
}

/** Lets the images of memos that earlier tests dropped go first, so that
 * a count taken next moves only with this test's images (as far as the GC
 * allows: hence the `<=` below). */
async function settleImages(): Promise<number> {
  let last = imagesLive();
  await collectUntil(() => {
    const now = imagesLive();
    const settled = now === last;
    last = now;
    return settled && now === imagesLive();
  }, 10);
  return imagesLive();
}

test("an image is freed natively when its memo dies with its batch", async () => {
  const before = await settleImages();
  imagesOfDroppedBatches(50);
  expect(imagesLive()).toBe(before + 50);
  expect(await collectUntil(() => imagesLive() <= before, 200)).toBe(true);
});

test("exports copied from an image outlive it: the image may be freed while they are live", async () => {
  const before = await settleImages();
  const handles = (() => {
    const batch = flatBatch(40);
    exportArray(batch).release();
    return [exportArray(batch), exportArray(batch)];
  })();
  expect(imagesLive()).toBe(before + 1);
  // The batch is unreachable but the exports keep its buffers (keepalive),
  // not its memo: the image goes, the copies stay valid.
  expect(await collectUntil(() => imagesLive() <= before, 200)).toBe(true);
  for (const handle of handles) {
    expect(valuesOf(handle)).toEqual(valuesOfBatch(40));
    handle.release();
  }
});
