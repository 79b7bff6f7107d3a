/**
 * Export fixed cost: `exportArray(batch)` + `handle.release()` per batch,
 * for a few shapes, interleaved (A/B/A/B, order alternating per round) in
 * one process. Without arguments it times this checkout alone; with
 * `--against <checkout>` it also times another checkout's ts/index.ts
 * (its own library) in the same rounds, for before/after comparisons.
 *
 *   node_modules/.bin/bun bench/export_fixed.ts [--against /work/main] [--rounds N]
 *
 * Prints, per shape and variant: median and mean ns per cycle (GC included
 * in the mean), and ns per non-NULL C buffer. `--cpu` times with the
 * process's CPU time instead of wall time (steadier on a loaded machine;
 * it counts GC threads too).
 */
import { Dictionary, Field, Int32, List, RecordBatch, Schema, Struct, Utf8, makeData, vectorFromArray, type Data } from "apache-arrow";
import { resolve } from "node:path";

const args = process.argv.slice(2);
const against = args.includes("--against") ? args[args.indexOf("--against") + 1] : undefined;
const rounds = args.includes("--rounds") ? Number(args[args.indexOf("--rounds") + 1]) : 40;
const perRound = args.includes("--cpu") ? 2000 : 200;
const cpu = args.includes("--cpu");
const now = cpu ? () => { const u = process.cpuUsage(); return (u.user + u.system) * 1000; } : () => Bun.nanoseconds();

type Lib = { exportArray: (b: RecordBatch) => { release(): void } };
const variants: { name: string; lib: Lib }[] = [{ name: "this", lib: await import("../ts/index.ts") as unknown as Lib }];
if (against) variants.push({ name: "against", lib: await import(resolve(against, "ts/index.ts")) as unknown as Lib });

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

const shapes: { name: string; batch: RecordBatch; buffers: number }[] = [
  { name: "1 col int32 1e3", batch: batchOf([int32Column(1000)]), buffers: 2 },
  { name: "100 cols int32 1e3", batch: batchOf(Array.from({ length: 100 }, () => int32Column(1000))), buffers: 200 },
  { name: "1000 cols int32 1e3", batch: batchOf(Array.from({ length: 1000 }, () => int32Column(1000))), buffers: 2000 },
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
function time(lib: Lib, batch: RecordBatch, n: number): number {
  const t0 = now();
  for (let i = 0; i < n; i++) lib.exportArray(batch).release();
  return (now() - t0) / n;
}
// warm-up
for (const s of shapes) for (const v of variants) time(v.lib, s.batch, 500);
for (let r = 0; r < rounds; r++) {
  for (const s of shapes) {
    const order = r % 2 ? [...variants].reverse() : variants;
    for (const v of order) {
      const key = `${s.name}|${v.name}`;
      const n = s.buffers > 1000 ? perRound / 10 : perRound;
      (samples.get(key) ?? samples.set(key, []).get(key)!).push(time(v.lib, s.batch, n));
    }
  }
}
const median = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); return s[s.length >> 1]; };
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
console.log("shape                  variant   median ns   mean ns   median ns/buf  mean ns/buf");
for (const s of shapes) for (const v of variants) {
  const xs = samples.get(`${s.name}|${v.name}`)!;
  console.log(`${s.name.padEnd(22)} ${v.name.padEnd(8)} ${median(xs).toFixed(0).padStart(10)} ${mean(xs).toFixed(0).padStart(9)} ${(median(xs) / s.buffers).toFixed(1).padStart(14)} ${(mean(xs) / s.buffers).toFixed(1).padStart(12)}`);
}
