/**
 * apache-arrow -> C, every type (arrow/export.ts): the C structs carry the
 * right formats, flags, names and metadata; the buffers are the JS memory
 * itself; and importing them back gives the same values. Sliced data, data
 * with offsets at every nesting level (apache-arrow's convention: values
 * already sliced, Data.offset only for bitmaps), data whose offset has no
 * memory before it (re-based: only the bitmap is copied), empty arrays,
 * schemas alone, and the errors.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { ptr } from "bun:ffi";
import {
  Bool, Data, Dictionary, Field, FixedSizeList, Int32, Int64, List, Map_, RecordBatch, Schema, Struct, Table, Union,
  UnionMode, Utf8, Vector, makeData, vectorFromArray,
} from "apache-arrow";
import { CDeviceArray, CSchema } from "../../ts/raw.ts";
import { exportArray, exportBatches, exportSchema, importRecordBatch, importVector } from "../../ts/index.ts";
import { ImportedArray } from "../../ts/raw.ts";
import { nonZeroCounters } from "../helpers/leaks.ts";
import { compareBatches, compareVectors, unsharedBuffers } from "../helpers/arrow_compare.ts";
import { bits } from "../helpers/producer.ts";
import { typeCases } from "../helpers/type_cases.ts";
import { withCode } from "../helpers/errors.ts";
import { expectSettled } from "../helpers/settled.ts";

afterEach(async () => {
  await expectSettled();
});

/** Exports `vector`'s single chunk, imports it back (validated fully) and
 * returns the value differences and the buffers not shared with the JS
 * original. */
function roundTrip(vector: Vector, where: string, options: { shared?: boolean } = {}) {
  using exported = exportArray(vector);
  using imported = ImportedArray.fromDeviceArray(exported.schema, exported.array, { validation: "full" });
  const back = importVector(imported);
  return {
    problems: compareVectors(back, vector, where),
    unshared: options.shared === false ? [] : unsharedBuffers(back.data[0], vector.data[0], where),
    back,
  };
}

describe("export: every type", () => {
  for (const [name, { format, make }] of Object.entries(typeCases)) {
    test(`${name} (${format}): C structs, shared buffers, same values`, () => {
      const vector = make();
      using exported = exportArray(vector);
      const schema = CSchema.at(exported.schema);
      const device = CDeviceArray.at(exported.array);
      expect(schema.format).toBe(format);
      expect(schema.nullable).toBe(true);
      expect(device.array.length).toBe(vector.length);
      expect(device.deviceTypeName).toBe("CPU");
      const type = vector.type;
      if (type.typeId === -1) expect((schema.flags & 1) !== 0).toBe((type as Dictionary).isOrdered);
      if (type instanceof Map_) expect((schema.flags & 4) !== 0).toBe(type.keysSorted);
      const { problems, unshared } = roundTrip(vector, name);
      expect(problems).toEqual([]);
      expect(unshared).toEqual([]);
    });

    test(`${name} (${format}): sliced [2, n-1) and empty`, () => {
      const vector = make();
      const sliced = vector.slice(2, vector.length - 1);
      const { problems, unshared } = roundTrip(sliced, `${name} sliced`);
      expect(problems).toEqual([]);
      expect(unshared).toEqual([]);
      const empty = roundTrip(vector.slice(1, 1), `${name} empty`);
      expect(empty.problems).toEqual([]);
      expect(empty.back.length).toBe(0);
    });
  }
});

describe("export: offsets at every nesting level", () => {
  test("struct of sliced children in a sliced struct", () => {
    const ints = vectorFromArray(Array.from({ length: 12 }, (_, i) => (i % 4 === 0 ? null : i)), new Int32());
    const strs = vectorFromArray(Array.from({ length: 12 }, (_, i) => (i === 6 ? null : `v${i}`)), new Utf8());
    const innerType = new Struct([new Field("s", new Utf8(), true)]);
    const inner = makeData({ type: innerType, length: 9, nullBitmap: bits(Array.from({ length: 9 }, (_, i) => i !== 2)), children: [strs.slice(3, 12).data[0]] });
    const outerType = new Struct([new Field("i", new Int32(), true), new Field("inner", innerType, true)]);
    const outer = makeData({ type: outerType, length: 8, nullBitmap: bits(Array.from({ length: 8 }, (_, i) => i !== 5)), children: [ints.slice(2, 10).data[0], inner.slice(1, 8)] });
    const vector = new Vector([outer]).slice(3, 7);
    const { problems, unshared } = roundTrip(vector, "nested struct");
    expect(problems).toEqual([]);
    expect(unshared).toEqual([]);
  });

  test("list of a sliced struct, fixed-size list of a sliced child, map, unions with sliced children", () => {
    const values = vectorFromArray([0n, 1n, 2n, null, 4n, 5n, 6n, 7n, 8n, 9n], new Int64());
    const rowType = new Struct([new Field("x", new Int64(), true)]);
    const rows = makeData({ type: rowType, length: 8, children: [values.slice(2, 10).data[0]] });
    const lists = makeData({ type: new List(new Field("item", rowType, true)), length: 4, nullBitmap: bits([true, false, true, true]), valueOffsets: new Int32Array([0, 2, 2, 3, 5]), child: rows.slice(1, 7) });
    expect(roundTrip(new Vector([lists]).slice(1, 4), "list of struct").problems).toEqual([]);

    const fsl = makeData({ type: new FixedSizeList(2, new Field("item", new Int64(), true)), length: 4, child: values.slice(1, 9).data[0] });
    const fslBack = roundTrip(new Vector([fsl]).slice(1, 3), "fixed-size list");
    expect(fslBack.problems).toEqual([]);
    expect(fslBack.unshared).toEqual([]);

    const sparseType = new Union(UnionMode.Sparse, [2, 7], [new Field("a", new Int32(), true), new Field("b", new Utf8(), true)]);
    const as = vectorFromArray([1, 2, 3, 4, 5, 6, 7, 8], new Int32());
    const bs = vectorFromArray(["a", "b", "c", "d", "e", "f", "g", "h"], new Utf8());
    const sparse = makeData({ type: sparseType, length: 6, typeIds: new Int8Array([2, 7, 7, 2, 7, 2]), children: [as.slice(2, 8).data[0], bs.slice(1, 7).data[0]] });
    const sparseBack = roundTrip(new Vector([sparse]).slice(1, 5), "sparse union");
    expect(sparseBack.problems).toEqual([]);
    expect(sparseBack.unshared).toEqual([]);

    const denseType = new Union(UnionMode.Dense, [2, 7], [new Field("a", new Int32(), true), new Field("b", new Utf8(), true)]);
    const dense = makeData({ type: denseType, length: 5, typeIds: new Int8Array([7, 2, 2, 7, 2]), valueOffsets: new Int32Array([0, 0, 1, 1, 2]), children: [as.slice(3, 8).data[0], bs.slice(2, 6).data[0]] });
    expect(roundTrip(new Vector([dense]).slice(2, 5), "dense union").problems).toEqual([]);

    const map = vectorFromArray([new Map([["k", 1]]), new Map([["l", 2], ["m", 3]]), null, new Map()], new Map_(new Field("entries", new Struct<{ key: Utf8; value: Int32 }>([new Field("key", new Utf8(), false), new Field("value", new Int32(), true)]), false)));
    expect(roundTrip(map.slice(1, 4), "map").problems).toEqual([]);

    const words = vectorFromArray(["skip", "zero", "one", "two"], new Utf8());
    const coded = makeData({ type: new Dictionary(new Utf8(), new Int32()), length: 5, data: new Int32Array([2, 0, 1, 1, 0]), dictionary: words.slice(1, 4) });
    expect(roundTrip(new Vector([coded]).slice(1, 4), "dictionary").problems).toEqual([]);
  });

  test("an offset without memory before it is re-based: values shared, only the bitmap copied", () => {
    // apache-arrow convention: `data` holds the 4 values of this array; the
    // offset applies to the bitmap only, and no value precedes slot 0.
    const validity = bits([true, true, true, false, true, false, true]);
    const ints = makeData({ type: new Int32(), offset: 3, length: 4, nullCount: 2, nullBitmap: validity, data: new Int32Array([30, 40, 50, 60]) });
    using exported = exportArray(ints);
    const device = CDeviceArray.at(exported.array);
    expect(device.array.offset).toBe(0);
    expect(device.array.bufferAddress(1)).toBe(ptr(ints.values));
    expect(device.array.bufferAddress(0)).not.toBe(ptr(validity)); // shifted copy
    using imported = ImportedArray.fromDeviceArray(exported.schema, exported.array, { validation: "full" });
    expect([...importVector(imported)]).toEqual([null, 40, null, 60]);

    const flags = makeData({ type: new Bool(), offset: 5, length: 3, nullCount: 0, data: bits([false, false, false, false, false, true, false, true]).subarray(0) });
    expect(roundTrip(new Vector([flags]), "bool at offset 5", { shared: false }).problems).toEqual([]);
    const aligned = makeData({ type: new Int32(), offset: 8, length: 2, nullCount: 1, nullBitmap: bits([...Array(8).fill(false), true, false]), data: new Int32Array([1, 2]) });
    const back = roundTrip(new Vector([aligned]), "offset 8", { shared: false });
    expect(back.problems).toEqual([]);
  });
});

describe("export: record batches, schemas, errors", () => {
  test("a RecordBatch exports as a struct with the schema's metadata; repeated names keep their own types", () => {
    const fields = [new Field("x", new Int32(), false, new Map([["unit", "m"]])), new Field("x", new Utf8(), true)];
    const data = makeData({
      type: new Struct(fields), length: 2,
      children: [vectorFromArray([1, 2], new Int32()).data[0], vectorFromArray(["a", null], new Utf8()).data[0]],
    });
    const batch = new RecordBatch(new Schema(fields, new Map([["origin", "test"]])), data);
    using exported = exportArray(batch);
    const schema = CSchema.at(exported.schema);
    expect(schema.format).toBe("+s");
    expect(schema.metadata).toEqual(new Map([["origin", "test"]]));
    expect(schema.children.map((c) => [c.name, c.format, c.nullable])).toEqual([["x", "i", false], ["x", "u", true]]);
    expect(schema.child(0).metadata).toEqual(new Map([["unit", "m"]]));
    using imported = ImportedArray.fromDeviceArray(exported.schema, exported.array);
    expect(compareBatches(importRecordBatch(imported), batch, "repeated names")).toEqual([]);
  });

  test("exportSchema: DataType, Field and Schema", () => {
    using fromType = exportSchema(new Dictionary(new Utf8(), new Int32(), null, true));
    const t = CSchema.at(fromType.schema);
    expect([t.format, t.flags & 1, t.dictionary!.format]).toEqual(["i", 1, "u"]);
    using fromField = exportSchema(new Field("m", new Map_(new Field("entries", new Struct<{ key: Utf8; value: Int32 }>([new Field("key", new Utf8(), false), new Field("value", new Int32(), true)]), false), true), false));
    const f = CSchema.at(fromField.schema);
    expect([f.format, f.name, f.flags]).toEqual(["+m", "m", 4]);
    expect(f.child(0).children.map((c) => c.name)).toEqual(["key", "value"]);
    using fromSchema = exportSchema(new Schema([new Field("a", new Int64(), true)], new Map([["k", "v"]])));
    const s = CSchema.at(fromSchema.schema);
    expect([s.format, s.nChildren, s.metadata.get("k"), s.child(0).format]).toEqual(["+s", 1, "v", "l"]);
    expect(() => exportSchema(42 as never)).toThrow(withCode("invalid_argument"));
  });

  test("exportBatches: one handle per batch of a table", () => {
    const table = new Table({ n: vectorFromArray([1, 2, 3], new Int32()) });
    const more = table.concat(new Table({ n: vectorFromArray([4], new Int32()) }));
    const handles = exportBatches(more.batches);
    expect(handles).toHaveLength(2);
    expect(handles.map((h) => CDeviceArray.at(h.array).array.length)).toEqual([3, 1]);
    for (const h of handles) h.release();
  });

  test("the ArrowArray kind, and what cannot be one C array", () => {
    using exported = exportArray(vectorFromArray([1, 2], new Int32()), { as: "array" });
    using imported = ImportedArray.fromArray(exported.schema, exported.array);
    expect([...importVector(imported)]).toEqual([1, 2]);
    const chunked = new Vector([vectorFromArray([1], new Int32()).data[0], vectorFromArray([2], new Int32()).data[0]]);
    expect(() => exportArray(chunked)).toThrow("a Vector with 2 chunks cannot be one C array");
    const dictionary = new Vector([vectorFromArray(["a"], new Utf8()).data[0], vectorFromArray(["b"], new Utf8()).data[0]]);
    const coded = makeData({ type: new Dictionary(new Utf8(), new Int32()), length: 1, data: new Int32Array([1]), dictionary });
    expect(() => exportArray(coded)).toThrow(withCode("unsupported"));
    expect(() => exportArray({} as Data)).toThrow(withCode("invalid_argument"));
  });

  test("a batch whose children are Vectors (apache-arrow's object form given Vectors) is refused, naming the child", () => {
    const column = vectorFromArray([1, 2], new Int32());
    const batch = new RecordBatch({ a: column.data[0], b: column } as never);
    let error: unknown = null;
    try {
      exportArray(batch);
    } catch (caught) {
      error = caught;
    }
    expect((error as { code?: string }).code).toBe("invalid_argument");
    expect((error as Error).message).toContain("child 1 of a Struct<{a:Int32, b:Int32}> array is a Vector, not an apache-arrow Data (for a Vector, pass vector.data[0])");
  });
});

describe("import of shared buffers", () => {
  test("buffers at the same address share one ArrayBuffer and one owner reference", () => {
    const column = vectorFromArray([1, null, 3, 4], new Int32()).data[0];
    const fields = [new Field("a", new Int32(), true), new Field("b", new Int32(), true), new Field("c", new Int32(), true)];
    const batch = new RecordBatch(new Schema(fields), makeData({ type: new Struct(fields), length: 4, children: [column, column, column] }));
    using exported = exportArray(batch);
    using imported = ImportedArray.fromDeviceArray(exported.schema, exported.array);
    const back = importRecordBatch(imported);
    // The handle's anchor, plus one view for the shared validity and one
    // for the shared values: 3, not 1 + 6.
    expect(nonZeroCounters().live_imported_views).toBe(3);
    const [a, b, c] = back.data.children;
    expect(a.values.buffer).toBe(b.values.buffer);
    expect(b.nullBitmap!.buffer).toBe(c.nullBitmap!.buffer);
    expect(ptr(c.values)).toBe(ptr(column.values));
    expect([...back.getChildAt(2)!]).toEqual([1, null, 3, 4]);
  });
});
