/**
 * The apache-arrow batches bench/compare exports, and the buffer count of
 * an exported C tree (the "per buffer" divisor).
 *
 * Flat shapes: `columns` nullable int32 columns (every 7th slot null) that
 * all share one column's memory: export reads addresses, never data, so
 * sharing changes nothing but memory (1e7 rows x 1000 columns would need
 * 40 GB). Nested: struct<s: struct<a: int32, b: float64>, l: list<int32>,
 * u: utf8, d: dictionary<int32, utf8>>, every child with nulls.
 */
import { read, type Pointer } from "bun:ffi";
import {
  Dictionary, Field, Float64, Int32, List, RecordBatch, Schema, Struct, Utf8, makeData, vectorFromArray, type Data,
} from "apache-arrow";

const columnCache = new Map<number, Data<Int32>>();

/** One nullable int32 column of `rows` rows (cached: shapes share it). */
function intColumn(rows: number): Data<Int32> {
  const cached = columnCache.get(rows);
  if (cached) return cached;
  const values = new Int32Array(rows);
  for (let i = 0; i < rows; i++) values[i] = i;
  const validity = new Uint8Array(Math.ceil(rows / 8) + 1).fill(0xff);
  let nulls = 0;
  for (let i = 0; i < rows; i += 7) { validity[i >> 3] &= ~(1 << (i & 7)); nulls++; }
  const data = makeData({ type: new Int32(), length: rows, nullCount: nulls, nullBitmap: validity, data: values });
  columnCache.set(rows, data);
  return data;
}

export function flatBatch(columns: number, rows: number, distinct = false): RecordBatch {
  const shared = intColumn(rows);
  const fields = Array.from({ length: columns }, (_, i) => new Field(`c${i}`, new Int32(), true));
  // Distinct: each column its own copy of the memory (what a round trip
  // through an import must wrap column by column, as real data is).
  const column = () => (distinct ? makeData({ type: shared.type, length: rows, nullCount: shared.nullCount, nullBitmap: shared.nullBitmap!.slice(), data: shared.values.slice() }) : shared);
  const data = makeData({ type: new Struct(fields), length: rows, children: fields.map(column) });
  return new RecordBatch(new Schema(fields), data);
}

export function nestedBatch(rows: number): RecordBatch {
  const nullEvery = <T>(f: (i: number) => T) => Array.from({ length: rows }, (_, i) => (i % 7 === 3 ? null : f(i)));
  const a = vectorFromArray(nullEvery((i) => i), new Int32()).data[0];
  const b = vectorFromArray(nullEvery((i) => i / 2), new Float64()).data[0];
  const sFields = [new Field("a", new Int32(), true), new Field("b", new Float64(), true)];
  const s = makeData({ type: new Struct(sFields), length: rows, nullCount: 0, children: [a, b] as Data[] });
  const l = vectorFromArray(nullEvery((i) => [i, i + 1, i + 2].slice(0, i % 4)), new List(new Field("item", new Int32(), true))).data[0];
  const u = vectorFromArray(nullEvery((i) => `value ${i}`), new Utf8()).data[0];
  const d = vectorFromArray(nullEvery((i) => `k${i % 16}`), new Dictionary(new Utf8(), new Int32())).data[0];
  const fields = [new Field("s", s.type, false), new Field("l", l.type, true), new Field("u", u.type, true), new Field("d", d.type, true)];
  const data = makeData({ type: new Struct(fields), length: rows, children: [s, l, u, d] as Data[] });
  return new RecordBatch(new Schema(fields), data);
}

/** Non-NULL buffers of a C ArrowArray tree (children and dictionaries). */
export function countBuffers(array: number): number {
  const at = array as Pointer;
  const nBuffers = Number(read.i64(at, 24));
  const nChildren = Number(read.i64(at, 32));
  const buffers = read.ptr(at, 40);
  const children = read.ptr(at, 48);
  const dictionary = read.ptr(at, 56);
  let count = 0;
  for (let i = 0; i < nBuffers; i++) if (read.ptr(buffers as Pointer, i * 8) !== 0) count++;
  for (let i = 0; i < nChildren; i++) count += countBuffers(read.ptr(children as Pointer, i * 8));
  if (dictionary !== 0) count += countBuffers(dictionary);
  return count;
}
