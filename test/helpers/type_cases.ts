/**
 * One apache-arrow vector of every type of the C Data Interface's format
 * table that apache-arrow can represent, with nulls, each with the format
 * string it must have. Shared by the import and export tests.
 */
import {
  Binary, BinaryView, Bool, Data, DateDay, DateMillisecond, Decimal, Dictionary, DurationMicrosecond,
  DurationMillisecond, DurationNanosecond, DurationSecond, Field, FixedSizeBinary, FixedSizeList, Float16, Float32,
  Float64, Int16, Int32, Int64, Int8, IntervalDayTime, IntervalMonthDayNano, IntervalYearMonth, LargeBinary, LargeList,
  LargeUtf8, List, Map_, Null, Struct, TimeMicrosecond, TimeMillisecond, TimeNanosecond, TimeSecond, Timestamp, TimeUnit,
  Uint16, Uint32, Uint64, Uint8, Union, UnionMode, Utf8, Utf8View, Vector, makeData, vectorFromArray,
} from "apache-arrow";
import { bits } from "./producer.ts";

const encoder = new TextEncoder();

/** 16-byte views over `strings` (inline up to 12 bytes, else in one
 * variadic buffer). */
export function viewData(type: BinaryView | Utf8View, strings: (string | null)[]): Data {
  const views = new Uint8Array(strings.length * 16);
  const dv = new DataView(views.buffer);
  const chunks: Uint8Array[] = [];
  let dataLength = 0;
  strings.forEach((s, i) => {
    if (s === null) return;
    const bytes = encoder.encode(s);
    dv.setInt32(i * 16, bytes.length, true);
    if (bytes.length <= 12) {
      views.set(bytes, i * 16 + 4);
    } else {
      views.set(bytes.subarray(0, 4), i * 16 + 4);
      dv.setInt32(i * 16 + 8, 0, true);
      dv.setInt32(i * 16 + 12, dataLength, true);
      chunks.push(bytes);
      dataLength += bytes.length;
    }
  });
  const variadic = new Uint8Array(dataLength);
  let at = 0;
  for (const c of chunks) { variadic.set(c, at); at += c.length; }
  return makeData({ type, length: strings.length, nullBitmap: bits(strings.map((s) => s !== null)), views, variadicBuffers: [variadic] } as never);
}

export type TypeCase = { format: string; make: () => Vector };

const strings = ["alpha", null, "", "a string longer than twelve bytes", "ß∂ƒ", "tail value number six", null, "x"];
const entries = new Field("entries", new Struct([new Field("key", new Utf8(), false), new Field("value", new Int32(), true)]), false);

/** Every type of the format table apache-arrow can represent. */
export const typeCases: Record<string, TypeCase> = {
  null: { format: "n", make: () => vectorFromArray([null, null, null, null, null, null], new Null()) },
  boolean: { format: "b", make: () => vectorFromArray([true, false, null, true, true, false, null, true, false, true], new Bool()) },
  int8: { format: "c", make: () => vectorFromArray([1, -2, null, 127, -128, 5, 6], new Int8()) },
  uint8: { format: "C", make: () => vectorFromArray([1, 2, null, 255, 0, 5, 6], new Uint8()) },
  int16: { format: "s", make: () => vectorFromArray([1, -2, null, 32767, -32768, 5, 6], new Int16()) },
  uint16: { format: "S", make: () => vectorFromArray([1, 2, null, 65535, 0, 5, 6], new Uint16()) },
  int32: { format: "i", make: () => vectorFromArray([1, -2, null, 2147483647, -2147483648, 5, 6], new Int32()) },
  uint32: { format: "I", make: () => vectorFromArray([1, 2, null, 4294967295, 0, 5, 6], new Uint32()) },
  int64: { format: "l", make: () => vectorFromArray([1n, -2n, null, 9223372036854775807n, -9223372036854775808n, 5n, 6n], new Int64()) },
  uint64: { format: "L", make: () => vectorFromArray([1n, 2n, null, 18446744073709551615n, 0n, 5n, 6n], new Uint64()) },
  float16: { format: "e", make: () => vectorFromArray([1.5, -2, null, 65504, 0.099975586, 5, 6], new Float16()) },
  float32: { format: "f", make: () => vectorFromArray([1.5, -2, null, 3.4e38, Number.NaN, 5, 6], new Float32()) },
  float64: { format: "g", make: () => vectorFromArray([1.5, -2, null, 1.7e308, -0, Number.NaN, 6], new Float64()) },
  binary: { format: "z", make: () => vectorFromArray(strings.map((s) => (s === null ? null : encoder.encode(s))), new Binary()) },
  large_binary: { format: "Z", make: () => vectorFromArray(strings.map((s) => (s === null ? null : encoder.encode(s))), new LargeBinary()) },
  binary_view: { format: "vz", make: () => new Vector([viewData(new BinaryView(), strings)]) },
  utf8: { format: "u", make: () => vectorFromArray(strings, new Utf8()) },
  large_utf8: { format: "U", make: () => vectorFromArray(strings, new LargeUtf8()) },
  utf8_view: { format: "vu", make: () => new Vector([viewData(new Utf8View(), strings)]) },
  decimal32: {
    format: "d:9,2,32",
    make: () => new Vector([makeData({ type: new Decimal(2, 9, 32), length: 6, nullBitmap: bits([true, true, false, true, true, true]), data: new Uint32Array([1, 999999999, 0, 3, 0xffffffff, 7]) })]),
  },
  decimal64: {
    format: "d:18,3,64",
    make: () => new Vector([makeData({ type: new Decimal(3, 18, 64), length: 5, nullBitmap: bits([true, false, true, true, true]), data: new Uint32Array([1, 0, 2, 0, 0xffffffff, 0xffffffff, 4, 1, 5, 0]) })]),
  },
  decimal128: {
    format: "d:38,10",
    make: () => new Vector([makeData({ type: new Decimal(10, 38, 128), length: 5, nullBitmap: bits([true, true, true, false, true]), data: Uint32Array.from({ length: 20 }, (_, i) => i * 7919) })]),
  },
  decimal256: {
    format: "d:76,-3,256",
    make: () => new Vector([makeData({ type: new Decimal(-3, 76, 256), length: 5, nullBitmap: bits([true, true, false, true, true]), data: Uint32Array.from({ length: 40 }, (_, i) => i * 104729) })]),
  },
  fixed_size_binary: {
    format: "w:3",
    make: () => vectorFromArray([new Uint8Array([1, 2, 3]), null, new Uint8Array([4, 5, 6]), new Uint8Array([7, 8, 9]), new Uint8Array([0, 0, 1]), null], new FixedSizeBinary(3)),
  },
  date32: { format: "tdD", make: () => new Vector([makeData({ type: new DateDay(), length: 6, nullBitmap: bits([true, false, true, true, true, true]), data: new Int32Array([0, 1, -1, 19000, 365, 7]) })]) },
  date64: { format: "tdm", make: () => new Vector([makeData({ type: new DateMillisecond(), length: 5, nullBitmap: bits([true, true, false, true, true]), data: new BigInt64Array([0n, 86400000n, 3n, -86400000n, 1700000000000n]) })]) },
  time32s: { format: "tts", make: () => new Vector([makeData({ type: new TimeSecond(), length: 5, nullBitmap: bits([true, true, false, true, true]), data: new Int32Array([0, 1, 2, 86399, 5]) })]) },
  time32ms: { format: "ttm", make: () => new Vector([makeData({ type: new TimeMillisecond(), length: 5, nullBitmap: bits([true, true, true, false, true]), data: new Int32Array([0, 1, 2, 86399999, 5]) })]) },
  time64us: { format: "ttu", make: () => new Vector([makeData({ type: new TimeMicrosecond(), length: 5, nullBitmap: bits([false, true, true, true, true]), data: new BigInt64Array([0n, 1n, 2n, 86399999999n, 5n]) })]) },
  time64ns: { format: "ttn", make: () => new Vector([makeData({ type: new TimeNanosecond(), length: 5, nullBitmap: bits([true, true, true, true, false]), data: new BigInt64Array([0n, 1n, 2n, 86399999999999n, 5n]) })]) },
  timestamp_s: { format: "tss:", make: () => new Vector([makeData({ type: new Timestamp(TimeUnit.SECOND), length: 5, nullBitmap: bits([true, true, false, true, true]), data: new BigInt64Array([0n, 1n, 2n, -3n, 1700000000n]) })]) },
  timestamp_ms_utc: { format: "tsm:UTC", make: () => new Vector([makeData({ type: new Timestamp(TimeUnit.MILLISECOND, "UTC"), length: 5, nullBitmap: bits([true, false, true, true, true]), data: new BigInt64Array([0n, 1n, 2n, -3n, 1700000000000n]) })]) },
  timestamp_us_paris: { format: "tsu:Europe/Paris", make: () => new Vector([makeData({ type: new Timestamp(TimeUnit.MICROSECOND, "Europe/Paris"), length: 5, nullBitmap: bits([true, true, true, true, false]), data: new BigInt64Array([0n, 1n, 2n, -3n, 4n]) })]) },
  timestamp_ns_offset: { format: "tsn:+07:30", make: () => new Vector([makeData({ type: new Timestamp(TimeUnit.NANOSECOND, "+07:30"), length: 5, nullBitmap: bits([true, true, true, true, true]), data: new BigInt64Array([0n, 1n, 2n, -3n, 4n]) })]) },
  duration_s: { format: "tDs", make: () => vectorFromArray([1n, 2n, null, -4n, 5n], new DurationSecond()) },
  duration_ms: { format: "tDm", make: () => vectorFromArray([1n, null, 3n, -4n, 5n], new DurationMillisecond()) },
  duration_us: { format: "tDu", make: () => vectorFromArray([null, 2n, 3n, -4n, 5n], new DurationMicrosecond()) },
  duration_ns: { format: "tDn", make: () => vectorFromArray([1n, 2n, 3n, -4n, null], new DurationNanosecond()) },
  interval_months: { format: "tiM", make: () => new Vector([makeData({ type: new IntervalYearMonth(), length: 5, nullBitmap: bits([true, false, true, true, true]), data: new Int32Array([1, 2, -3, 12, 0]) })]) },
  interval_day_time: { format: "tiD", make: () => new Vector([makeData({ type: new IntervalDayTime(), length: 4, nullBitmap: bits([true, true, false, true]), data: new Int32Array([1, 1000, 2, -5, 0, 0, 7, 86399999]) })]) },
  interval_month_day_nano: {
    format: "tin",
    make: () => new Vector([makeData({ type: new IntervalMonthDayNano(), length: 4, nullBitmap: bits([true, true, true, false]), data: new Int32Array([1, 2, 3, 0, -1, -2, -3, -1, 12, 31, 100, 0, 0, 0, 0, 0]) })]),
  },
  list: { format: "+l", make: () => vectorFromArray([[1, 2], null, [], [3], [4, 5, 6], [7]], new List(new Field("item", new Int32(), true))) },
  large_list: { format: "+L", make: () => vectorFromArray([["a"], null, [], ["b", null], ["c"], ["d", "e"]], new LargeList(new Field("item", new Utf8(), true))) },
  fixed_size_list: { format: "+w:2", make: () => vectorFromArray([[1, 2], null, [3, null], [5, 6], [7, 8], [9, 10]], new FixedSizeList(2, new Field("item", new Int16(), true))) },
  struct: {
    format: "+s",
    make: () => vectorFromArray(
      [{ a: 1, b: "x" }, null, { a: null, b: "y" }, { a: 4, b: null }, { a: 5, b: "z" }, { a: 6, b: "w" }],
      new Struct([new Field("a", new Int32(), true), new Field("b", new Utf8(), true)]),
    ),
  },
  map: {
    format: "+m",
    make: () => vectorFromArray([new Map([["a", 1], ["b", 2]]), null, new Map(), new Map([["c", null]]), new Map([["d", 4]]), new Map([["e", 5]])], new Map_(entries, false)),
  },
  map_keys_sorted: {
    format: "+m",
    make: () => vectorFromArray([new Map([["a", 1], ["b", 2]]), new Map([["c", 3]]), new Map(), new Map([["d", 4]]), new Map([["e", 5]])], new Map_(entries.clone(), true)),
  },
  dense_union: {
    format: "+ud:4,9",
    make: () => {
      const type = new Union(UnionMode.Dense, [4, 9], [new Field("i", new Int32(), true), new Field("s", new Utf8(), true)]);
      const ints = vectorFromArray([10, null, 30], new Int32()).data[0];
      const strs = vectorFromArray(["p", "q", null, "r"], new Utf8()).data[0];
      return new Vector([makeData({ type, length: 7, typeIds: new Int8Array([4, 9, 9, 4, 9, 4, 9]), valueOffsets: new Int32Array([0, 0, 1, 1, 2, 2, 3]), children: [ints, strs] })]);
    },
  },
  sparse_union: {
    format: "+us:1,5",
    make: () => {
      const type = new Union(UnionMode.Sparse, [1, 5], [new Field("f", new Float64(), true), new Field("b", new Bool(), true)]);
      const floats = vectorFromArray([1.5, 0, null, 4.5, 0, 6.5], new Float64()).data[0];
      const bools = vectorFromArray([false, true, false, false, null, false], new Bool()).data[0];
      return new Vector([makeData({ type, length: 6, typeIds: new Int8Array([1, 5, 1, 1, 5, 1]), children: [floats, bools] })]);
    },
  },
  dictionary: {
    format: "c",
    make: () => vectorFromArray(["b", "a", null, "b", "c", "a", "c"], new Dictionary(new Utf8(), new Int8(), null, false)),
  },
  dictionary_ordered_uint32: {
    format: "I",
    make: () => vectorFromArray(["lo", "hi", "hi", null, "lo", "mid"], new Dictionary(new Utf8(), new Uint32(), null, true)),
  },
  nested_dictionary: {
    format: "s",
    make: () => {
      const inner = new Dictionary(new Utf8(), new Int8(), null, false);
      const innerValues = vectorFromArray(["x", "y", "x", null, "z"], inner).data[0];
      const lists = makeData({ type: new List(new Field("item", inner, true)), length: 3, valueOffsets: new Int32Array([0, 2, 2, 5]), child: innerValues });
      const outer = new Dictionary(lists.type, new Int16(), null, false);
      return new Vector([makeData({ type: outer, length: 5, data: new Int16Array([2, 0, 1, 0, 2]), nullBitmap: bits([true, true, true, false, true]), dictionary: new Vector([lists]) })]);
    },
  },
};

