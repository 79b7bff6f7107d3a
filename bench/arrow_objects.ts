/**
 * What the apache-arrow objects of an import cost on their own, against
 * bench/compare's JS floor of the same import (a view per buffer: one
 * toArrayBuffer with a C deallocator, a typed array, transfer(0)), for the
 * "every column read" import and construction targets: once every view is made,
 * the floor is spent, and the objects come on top.
 *
 *   bun run bench -- --section arrow-objects [columns=10] [rounds=200]
 *
 * Per batch of `columns` int32 columns x 1000 rows with validity, over
 * typed arrays made once (no views made here), interleaved with the floor:
 *   makeData    apache-arrow's public constructors: makeData per column,
 *               makeData of the struct, new RecordBatch(schema, data)
 *   lean        the least any library can build: new Data(...) directly
 *               and a RecordBatch made without its constructor (as the
 *               floor of bench/compare's stream-per-batch target builds its batches)
 * Prints medians per batch and each one's ratio to the floor.
 */
import { Data, Field, Int32, RecordBatch, Schema, Struct, makeData } from "apache-arrow";
import { Columns } from "./compare/floor.ts";
import { jsFloor } from "./compare/cases.ts";

const columnCount = Number(process.argv[2] ?? 10);
const rounds = Number(process.argv[3] ?? 200);
const rows = 1000;
const perBlock = 50;

const columns = new Columns(columnCount, rows, true);
const floorContender = jsFloor(columns);
const fields = Array.from({ length: columnCount }, (_, i) => new Field(`c${i}`, new Int32(), true));
const schema = new Schema(fields);
const type = new Struct(fields);
const values = Array.from({ length: columnCount }, () => new Int32Array(rows));
const bitmaps = Array.from({ length: columnCount }, () => new Uint8Array(rows / 8));
let sink = 0;

function publicConstructors(): void {
  const children: Data[] = [];
  for (let i = 0; i < columnCount; i++) children.push(makeData({ type: fields[i].type, length: rows, nullCount: 0, data: values[i], nullBitmap: bitmaps[i] }));
  sink += new RecordBatch(schema, makeData({ type, length: rows, nullCount: 0, children })).numRows;
}

function lean(): void {
  const children: Data[] = [];
  for (let i = 0; i < columnCount; i++) children.push(new Data(fields[i].type, 0, rows, 0, [undefined, values[i], bitmaps[i]] as never));
  const batch = Object.create(RecordBatch.prototype) as { schema: Schema; data: Data; _metadata: Map<string, string>; numRows: number };
  batch.schema = schema;
  batch.data = new Data(type, 0, rows, 0, [undefined, undefined, undefined] as never, children);
  batch._metadata = new Map();
  sink += batch.numRows;
}

const contenders: [string, (k: number) => number][] = [
  ["JS floor", (k) => floorContender.run(k) as number],
  ["makeData", (k) => time(publicConstructors, k)],
  ["lean", (k) => time(lean, k)],
];

function time(f: () => void, k: number): number {
  const t = Bun.nanoseconds();
  for (let i = 0; i < k; i++) f();
  return Bun.nanoseconds() - t;
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
const samples = new Map<string, number[]>(contenders.map(([name]) => [name, []]));
for (let round = 0; round < rounds + 20; round++) {
  const order = round % 2 === 0 ? contenders : [...contenders].reverse();
  for (const [name, run] of order) {
    await turn();
    const ns = run(perBlock) / perBlock;
    if (round >= 20) samples.get(name)!.push(ns); // the first 20 rounds warm up
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const floorNs = median(samples.get("JS floor")!);
console.log(`${columnCount} columns x ${rows} rows, ${rounds} rounds of ${perBlock} batches, medians per batch:`);
for (const [name] of contenders) {
  const ns = median(samples.get(name)!);
  console.log(`  ${name.padEnd(9)} ${(ns / 1e3).toFixed(2).padStart(7)} us  (${(ns / (columnCount * 2)).toFixed(0)} ns/buffer)  ${(ns / floorNs).toFixed(2)}x the floor`);
}
columns.free();
if (sink < 0) console.log(sink);
