/**
 * Export fixed cost: `exportArray(batch)` + `handle.release()` per batch,
 * for a few shapes, interleaved (A/B/A/B, order alternating per round) in
 * one process. Without arguments it times this checkout alone; with
 * `--against <checkout>` it also times another checkout's ts/index.ts
 * (its own library) in the same rounds, for before/after comparisons.
 *
 *   bun run bench -- --section export-fixed-cost [--against <checkout>] [--rounds N]
 *
 * Prints, per shape and variant: median and mean ns per cycle (GC included
 * in the mean), and ns per non-NULL C buffer. `--cpu` times with the
 * process's CPU time instead of wall time (steadier on a loaded machine;
 * it counts GC threads too).
 *
 * `--floors` adds, in the same rounds, what bounds this checkout's cost
 * from below (flat shapes):
 *   native   the two native calls alone (abd_export_slot_from_image from
 *            the batch's array image + abd_export_slot_free): no JS work;
 *   handle   the leanest safe handle: a keepalive id, the two native calls
 *            and the handle (one object, deferred safety net), with no
 *            argument checks and no memo validation;
 *   C floor  test/fixtures/bench_floor.c filling the same structs in one
 *            FFI call, no allocation (bench/compare's floor).
 */
import { Dictionary, Field, Int32, List, RecordBatch, Schema, Struct, Utf8, makeData, vectorFromArray, type Data } from "apache-arrow";
import { resolve } from "node:path";
import type { Pointer } from "bun:ffi";

const args = process.argv.slice(2);
const against = args.includes("--against") ? args[args.indexOf("--against") + 1] : undefined;
const rounds = args.includes("--rounds") ? Number(args[args.indexOf("--rounds") + 1]) : 40;
const perRound = args.includes("--cpu") ? 2000 : 200;
const cpu = args.includes("--cpu");
const now = cpu ? () => { const u = process.cpuUsage(); return (u.user + u.system) * 1000; } : () => Bun.nanoseconds();

type Lib = { exportArray: (b: RecordBatch) => { release(): void } };
/** A variant times `n` cycles of one shape; null where it does not apply. */
type Variant = { name: string; run: (shape: Shape, n: number) => number | null };
const libVariant = (name: string, lib: Lib): Variant => ({ name, run: (shape, n) => time(lib, shape.batch, n) });
const variants: Variant[] = [libVariant("this", await import("../ts/index.ts") as unknown as Lib)];
if (against) variants.push(libVariant("against", await import(resolve(against, "ts/index.ts")) as unknown as Lib));

function int32Column(rows: number): Data {
  const values = new Int32Array(rows).map((_, i) => i);
  const validity = new Uint8Array(Math.ceil(rows / 8)).fill(0xff);
  for (let i = 0; i < rows; i += 7) validity[i >> 3] &= ~(1 << (i & 7));
  let nulls = 0;
  for (let i = 0; i < rows; i++) if (!(validity[i >> 3] & (1 << (i & 7)))) nulls++;
  return makeData({ type: new Int32(), length: rows, nullCount: nulls, nullBitmap: validity, data: values });
}

function batchOf(columns: Data[]): RecordBatch {
  const fields = columns.map((c, i) => new Field(`c${i}`, c.type, true));
  const data = makeData({ type: new Struct(fields), length: columns[0].length, children: columns });
  return new RecordBatch(new Schema(fields), data);
}

function nested(rows: number): RecordBatch {
  const strings = vectorFromArray(Array.from({ length: rows }, (_, i) => (i % 5 ? `s${i}` : null)), new Utf8()).data[0];
  const dict = vectorFromArray(Array.from({ length: rows }, (_, i) => ["a", "b", "c"][i % 3]), new Dictionary(new Utf8(), new Int32())).data[0];
  const lists = vectorFromArray(Array.from({ length: rows }, (_, i) => [i, i + 1]), new List(new Field("item", new Int32(), true))).data[0];
  const inner = makeData({ type: new Struct([new Field("x", new Int32(), true), new Field("s", new Utf8(), true)]), length: rows, children: [int32Column(rows), strings] });
  return batchOf([inner, lists, dict, strings]);
}

type Shape = { name: string; batch: RecordBatch; buffers: number; columns?: number };
const shapes: Shape[] = [
  { name: "1 col int32 1e3", batch: batchOf([int32Column(1000)]), buffers: 2, columns: 1 },
  { name: "100 cols int32 1e3", batch: batchOf(Array.from({ length: 100 }, () => int32Column(1000))), buffers: 200, columns: 100 },
  { name: "1000 cols int32 1e3", batch: batchOf(Array.from({ length: 1000 }, () => int32Column(1000))), buffers: 2000, columns: 1000 },
];
const nestedBatch = nested(1000);
shapes.push({ name: "nested 1e3", batch: nestedBatch, buffers: countBuffers(nestedBatch.data) - 1 });

function countBuffers(data: Data): number {
  // non-NULL buffers of the exported tree, counted the way the C tree has them
  let n = 0;
  if (data.nullBitmap && data.nullBitmap.byteLength && data.nullCount > 0) n++;
  if (data.valueOffsets) n++;
  if (data.values && data.type.typeId !== 13 /* Struct */) n++;
  for (const c of data.children) n += countBuffers(c);
  if (data.dictionary) n += countBuffers(data.dictionary.data[0]);
  return n;
}

// --only <text>: the shapes whose name contains it.
if (args.includes("--only")) {
  const only = args[args.indexOf("--only") + 1];
  shapes.splice(0, shapes.length, ...shapes.filter((s) => s.name.includes(only)));
}
const samples = new Map<string, number[]>();
const warmup = 500;
function time(lib: Lib, batch: RecordBatch, n: number): number {
  const t0 = now();
  for (let i = 0; i < n; i++) lib.exportArray(batch).release();
  return (now() - t0) / n;
}

if (args.includes("--floors")) {
  const { templateOf } = await import("../ts/arrow/schema_plan.ts");
  const { arrayImageOf } = await import("../ts/arrow/array_plan.ts");
  const { native } = await import("../ts/core/ffi/library.ts");
  const { adoptExportSlot } = await import("../ts/native/exported.ts");
  const { retainForNative } = await import("../ts/native/keepalive.ts");
  const { Columns, SlotPool, deviceArraySize, floor, schemaSize } = await import("./compare/floor.ts");
  const { exportArray } = await import("../ts/index.ts");
  const pool = new SlotPool(Math.max(perRound, warmup));
  /** The template and array image this checkout exports `shape` from. */
  const native2 = (shape: Shape) => {
    const ours = exportArray(shape.batch);
    ours.release();
    exportArray(shape.batch).release(); // the memo's first reuse makes its image
    return { template: templateOf(shape.batch.schema) as Pointer, image: arrayImageOf(shape.batch.data) as Pointer };
  };
  const made = new Map(shapes.map((s) => [s, s.columns === undefined ? null : native2(s)]));
  const columns = new Map(shapes.map((s) => [s, s.columns === undefined ? null : new Columns(s.columns, 1000, false)]));
  variants.push({
    name: "native",
    run: (shape, n) => {
      const m = made.get(shape);
      if (!m) return null;
      const t0 = now();
      for (let i = 0; i < n; i++) native.abd_export_slot_free(native.abd_export_slot_from_image(m.template, m.image, 0, 2), 2);
      return (now() - t0) / n;
    },
  });
  variants.push({
    name: "handle",
    run: (shape, n) => {
      const m = made.get(shape);
      if (!m) return null;
      const kept = [shape.batch];
      const t0 = now();
      for (let i = 0; i < n; i++) {
        const id = retainForNative(kept);
        adoptExportSlot("device_array", native.abd_export_slot_from_image(m.template, m.image, id, 2) as number).release();
      }
      return (now() - t0) / n;
    },
  });
  variants.push({
    name: "C floor",
    run: (shape, n) => {
      const c = columns.get(shape);
      if (!c) return null;
      const t0 = now();
      for (let i = 0; i < n; i++) floor.bf_fill(c.data, (pool.schemas + i * schemaSize) as Pointer, (pool.arrays + i * deviceArraySize) as Pointer);
      pool.releaseAll(n);
      return (now() - t0) / n;
    },
  });
}

// warm-up
for (const s of shapes) for (const v of variants) v.run(s, warmup);
for (let r = 0; r < rounds; r++) {
  for (const s of shapes) {
    const order = r % 2 ? [...variants].reverse() : variants;
    for (const v of order) {
      const key = `${s.name}|${v.name}`;
      const n = s.buffers > 1000 ? perRound / 10 : perRound;
      const ns = v.run(s, n);
      if (ns !== null) (samples.get(key) ?? samples.set(key, []).get(key)!).push(ns);
    }
  }
}
const median = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); return s[s.length >> 1]; };
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
console.log("shape                  variant   median ns   mean ns   median ns/buf  mean ns/buf");
for (const s of shapes) for (const v of variants) {
  const xs = samples.get(`${s.name}|${v.name}`);
  if (!xs) continue;
  console.log(`${s.name.padEnd(22)} ${v.name.padEnd(8)} ${median(xs).toFixed(0).padStart(10)} ${mean(xs).toFixed(0).padStart(9)} ${(median(xs) / s.buffers).toFixed(1).padStart(14)} ${(mean(xs) / s.buffers).toFixed(1).padStart(12)}`);
}
