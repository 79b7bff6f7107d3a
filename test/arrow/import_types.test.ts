/**
 * C -> apache-arrow, every type of the C Data Interface's format table:
 * arrays produced by a C producer (test/fixtures/c_producer.c, buffers in
 * malloc'd memory) are imported and converted, compared slot by slot with
 * apache-arrow's own vector of the same values, and their buffers must be
 * the producer's memory itself. Each type also goes through a C offset
 * (null_count -1), and nested types through offsets at every level.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { ptr } from "bun:ffi";
import {
  Bool, Data, DataType, Dictionary, Field, FixedSizeList, Int16, Int32, Int64, LargeList, List, Struct, Union,
  UnionMode, Utf8, Vector, makeData, vectorFromArray,
} from "apache-arrow";
import { importRecordBatch, importVector, importData, importDataType, importSchema, importTable } from "../../ts/index.ts";
import { UnknownDeviceError } from "../../ts/core/errors.ts";
import { ImportedArray } from "../../ts/raw.ts";
import { typeSignature } from "../../ts/arrow/types.ts";
import { compareVectors } from "../helpers/arrow_compare.ts";
import { typeCases as cases } from "../helpers/type_cases.ts";
import { collectUntil } from "../helpers/gc.ts";
import {
  bits, disposeProduced, produceArray, produceDevice, producerBuffer, producerClean, specFromData, type NodeSpec,
} from "../helpers/producer.ts";
import { withCode } from "../helpers/errors.ts";
import { expectSettled } from "../helpers/settled.ts";

afterEach(async () => {
  await expectSettled();
  expect(producerClean()).toEqual({ live: 0, doubles: 0 });
});

/** Imports `spec` (C producer memory) and converts it; runs `check`
 * while the import is alive, then disposes everything. */
function withImported<T>(spec: NodeSpec, check: (imported: ImportedArray) => T, options = {}): T {
  const produced = produceArray(spec);
  try {
    using imported = ImportedArray.fromArray(produced.schema, produced.array, options);
    expect(produced.schema.released && produced.array.released).toBe(true);
    return check(imported);
  } finally {
    disposeProduced(produced);
  }
}

/** apache-arrow's non-empty buffers of a root at offset 0, each with the
 * index of the C buffer it must be a view of. */
function sharedBuffers(data: Data): [NodeJS.ArrayBufferView, number][] {
  const out: [NodeJS.ArrayBufferView, number][] = [];
  const add = (view: NodeJS.ArrayBufferView | undefined, index: number) => { if (view && view.byteLength > 0) out.push([view, index]); };
  if (DataType.isUnion(data.type)) {
    add(data.typeIds, 0);
    add(data.valueOffsets, 1);
    return out;
  }
  add(data.nullBitmap, 0);
  add(data.valueOffsets, 1);
  add(data.values, data.valueOffsets ? 2 : 1);
  data.variadicBuffers.forEach((v, i) => add(v, 2 + i));
  return out;
}

describe("import: every type of the format table, from C memory", () => {
  for (const [name, { format, make }] of Object.entries(cases)) {
    test(`${name} (${format})`, () => {
      const vector = make();
      expect(vector.data).toHaveLength(1);
      const data = vector.data[0];
      const spec = specFromData(data, name, true);
      const produced = produceArray(spec);
      const rootNode = produced.nodes[0];
      try {
        using imported = ImportedArray.fromArray(produced.schema, produced.array, { validation: "full" });
        expect(imported.root.format).toBe(format);
        const back = importVector(imported);
        expect(typeSignature(back.type)).toBe(typeSignature(vector.type));
        expect(compareVectors(back, vector, name)).toEqual([]);
        // Zero-copy: every apache-arrow buffer is the producer's memory.
        const shared = sharedBuffers(back.data[0]);
        expect(shared.length).toBeGreaterThan(name === "null" ? -1 : 0);
        for (const [view, cIndex] of shared) expect<number>(ptr(view)).toBe(producerBuffer(rootNode, cIndex));
      } finally {
        disposeProduced(produced);
      }
    });

    test(`${name} (${format}) at C offset 2, null_count unknown`, () => {
      const vector = make();
      const data = vector.data[0];
      const length = data.length - 3;
      const spec = specFromData(data, name, true, { offset: 2, length });
      withImported(spec, (imported) => {
        expect(imported.root.nullCount).toBe(data.nullCount > 0 && !DataType.isUnion(vector.type) && data.typeId !== 1 ? -1 : imported.root.nullCount);
        const back = importVector(imported);
        expect(compareVectors(back, vector.slice(2, 2 + length), `${name} sliced`)).toEqual([]);
      });
    });
  }
});

describe("import: fields, schemas, metadata", () => {
  test("names (empty, repeated, NULL), nullability, field and schema metadata, extension keys", () => {
    const int = (name: string | null, flags: number, metadata?: [string, string][]): NodeSpec => ({
      format: "i", name, flags, length: 2, buffers: [null, new Int32Array([1, 2])], metadata,
    });
    const spec: NodeSpec = {
      format: "+s", name: "", length: 2, buffers: [null],
      metadata: [["schema key", "schema value"], ["empty", ""]],
      children: [
        int("dup", 2, [["k", "v"], ["k2", ""]]),
        int("dup", 0),
        int("", 2),
        int(null, 0),
        int("uuid", 2, [["ARROW:extension:name", "arrow.uuid"], ["ARROW:extension:metadata", "{}"]]),
      ],
    };
    withImported(spec, (imported) => {
      const batch = importRecordBatch(imported);
      expect(batch.schema.fields.map((f) => f.name)).toEqual(["dup", "dup", "", "", "uuid"]);
      expect(batch.schema.fields.map((f) => f.nullable)).toEqual([true, false, true, false, true]);
      expect([...batch.schema.metadata]).toEqual([["schema key", "schema value"], ["empty", ""]]);
      expect([...batch.schema.fields[0].metadata]).toEqual([["k", "v"], ["k2", ""]]);
      expect(batch.schema.fields[1].metadata.size).toBe(0);
      expect(batch.schema.fields[4].metadata.get("ARROW:extension:name")).toBe("arrow.uuid");
      expect(batch.schema.fields[4].metadata.get("ARROW:extension:metadata")).toBe("{}");
      expect(batch.numCols).toBe(5);
      expect([...batch.getChildAt(1)!]).toEqual([1, 2]);
      expect(importSchema(imported.root).fields).toHaveLength(5);
    });
  });

  test("importRecordBatch needs a struct root; importDataType and importData work on any node", () => {
    withImported({ format: "+l", name: "l", length: 1, buffers: [null, new Int32Array([0, 2])], children: [{ format: "i", name: "item", length: 2, buffers: [null, new Int32Array([7, 8])] }] }, (imported) => {
      expect(() => importRecordBatch(imported)).toThrow(withCode("invalid_argument"));
      expect(() => importRecordBatch(imported)).toThrow('needs a struct root, but the root is "l" (+l)');
      expect(String(importDataType(imported.root))).toBe("List<Int32>");
      const child = importData(imported.root.child(0));
      expect([...new Vector([child])]).toEqual([7, 8]);
    });
  });

  test("importTable joins batches; dictionary types are shared; mismatched schemas are refused", () => {
    const batchSpec = (values: string[], format = "c"): NodeSpec => ({
      format: "+s", length: values.length, buffers: [null],
      children: [{
        format, name: "d", length: values.length, buffers: [null, new Int8Array(values.map((_, i) => i))],
        dictionary: specFromData(vectorFromArray(values, new Utf8()).data[0], null),
      }],
    });
    const a = produceArray(batchSpec(["x", "y"]));
    const b = produceArray(batchSpec(["p", "q", "r"]));
    const c = produceArray(batchSpec(["m"], "s"));
    try {
      using ia = ImportedArray.fromArray(a.schema, a.array);
      using ib = ImportedArray.fromArray(b.schema, b.array);
      using ic = ImportedArray.fromArray(c.schema, c.array);
      const table = importTable([ia, ib]);
      expect(table.numRows).toBe(5);
      expect([...table.getChild("d")!]).toEqual(["x", "y", "p", "q", "r"]);
      // One dictionary type for the whole column (apache-arrow compares ids).
      expect(table.batches[1].schema.fields[0].type).toBe(table.schema.fields[0].type);
      expect(() => importTable([ia, ic])).toThrow("batch 1 has schema");
      expect(importTable([]).numRows).toBe(0);
    } finally {
      for (const p of [a, b, c]) disposeProduced(p);
    }
  });
});

describe("import: validation levels", () => {
  for (const name of ["utf8", "large_binary", "utf8_view", "binary_view", "dictionary", "list"]) {
    test(`${name} validated at "minimal" (value sizes unknown natively) converts the same`, () => {
      const vector = cases[name].make();
      withImported(specFromData(vector.data[0], name), (imported) => {
        // The value bytes (of the root, or of the dictionary / list child).
        const strings = name === "dictionary" ? imported.root.dictionary! : name === "list" ? imported.root.child(0) : imported.root;
        if (name !== "list") expect(strings.bufferSize(2)).toBe(-1);
        expect(compareVectors(importVector(imported), vector, name)).toEqual([]);
        if (name !== "list") expect(strings.byteLength(2)).toBeGreaterThan(0);
      }, { validation: "minimal" });
    });
  }
});

describe("import: conveniences with a GC-driven lifetime", () => {
  function importAndRead(): { values: unknown[]; address: number; producerAddress: number } {
    const p = produceArray({ format: "i", name: "v", length: 3, buffers: [null, new Int32Array([7, 8, 9])] });
    const vector = importVector(p.schema, p.array, { validation: "full" });
    const out = { values: [...vector], address: ptr(vector.data[0].values), producerAddress: producerBuffer(p.nodes[0], 1) };
    disposeProduced(p); // only the landing structs: the vector owns the data now
    return out;
  }

  test("importVector: moved in, zero-copy, released once the vector is collected", async () => {
    const { values, address, producerAddress } = importAndRead();
    expect(values).toEqual([7, 8, 9]);
    expect(address).toBe(producerAddress);
    expect(await collectUntil(() => producerClean().live === 0, 300)).toBe(true);
  });

  test("importVector of a bad tree still releases it; conversion errors dispose at once", () => {
    const bad = produceArray({ format: "+r", name: "r", length: 1, buffers: [], children: [
      { format: "i", name: "run_ends", flags: 0, length: 1, buffers: [null, new Int32Array([1])] },
      { format: "i", name: "values", length: 1, buffers: [null, new Int32Array([5])] },
    ] });
    expect(() => importVector(bad.schema, bad.array)).toThrow(withCode("unsupported"));
    expect(producerClean().live).toBe(0); // released at once, not at GC time
    disposeProduced(bad);
    const device = produceDevice({ format: "+s", length: 0, buffers: [null] });
    expect(importRecordBatch(device.schema, device.array).numRows).toBe(0);
    disposeProduced(device);
  });
});

describe("import: offsets at every nesting level", () => {
  // Data the C producer holds with offsets on parents and children alike;
  // the expected values are apache-arrow's own slices of the same data.
  test("struct (offset 2) of int32 (offset 3), utf8 (offset 1), struct (offset 1) of bool (offset 5)", () => {
    const n = 4;
    const k = 2;
    const ints = vectorFromArray(Array.from({ length: 3 + k + n }, (_, i) => (i % 3 === 0 ? null : i * 11)), new Int32());
    const strs = vectorFromArray(Array.from({ length: 1 + k + n }, (_, i) => (i === 4 ? null : `s${i}`)), new Utf8());
    const flags = vectorFromArray(Array.from({ length: 5 + 1 + k + n }, (_, i) => (i === 7 ? null : i % 2 === 0)), new Bool());
    const innerBits = bits([true, false, true, true, true, false, true, true]);
    const outerBits = bits([true, true, true, false, true, true]);
    const innerType = new Struct([new Field("flag", new Bool(), true)]);
    const outerType = new Struct([new Field("i", new Int32(), true), new Field("s", new Utf8(), true), new Field("inner", innerType, true)]);
    // Expected: each child sliced by its own C offset, then the whole struct by k.
    const inner = makeData({ type: innerType, length: 1 + k + n, nullBitmap: innerBits, children: [flags.slice(5, 5 + 1 + k + n).data[0]] });
    const outer = makeData({ type: outerType, length: k + n, nullBitmap: outerBits, children: [ints.slice(3, 3 + k + n).data[0], strs.slice(1, 1 + k + n).data[0], inner.slice(1, k + n)] });
    const expected = new Vector([outer]).slice(k, k + n);
    const spec: NodeSpec = {
      format: "+s", name: "outer", length: n, offset: k, nullCount: -1, buffers: [outerBits],
      children: [
        // Exact C null count (slots 3 and 6 of [3, 9)); apache-arrow sees
        // only [5, 9) of it and must count again.
        { ...specFromData(ints.data[0], "i", true, { offset: 3, length: k + n }), nullCount: 2 },
        specFromData(strs.data[0], "s", true, { offset: 1, length: k + n }),
        {
          format: "+s", name: "inner", length: k + n, offset: 1, nullCount: -1, buffers: [innerBits],
          children: [specFromData(flags.data[0], "flag", true, { offset: 5, length: 1 + k + n })],
        },
      ],
    };
    const produced = produceArray(spec);
    try {
      using imported = ImportedArray.fromArray(produced.schema, produced.array, { validation: "full" });
      const back = importVector(imported);
      expect(compareVectors(back, expected, "nested struct")).toEqual([]);
      // Zero-copy with the offsets applied apache-arrow's way.
      const i = back.data[0].children[0];
      expect<number>(ptr(i.values)).toBe(producerBuffer(produced.nodes[1], 1) + (3 + k) * 4);
      expect(i.offset).toBe(3 + k);
      expect(i.nullCount).toBe(1);
      expect(i.nullCount).toBe(expected.data[0].children[0].nullCount);
      expect<number>(ptr(i.nullBitmap!)).toBe(producerBuffer(produced.nodes[1], 0));
      const s = back.data[0].children[1];
      expect<number>(ptr(s.valueOffsets)).toBe(producerBuffer(produced.nodes[2], 1) + (1 + k) * 4);
      expect<number>(ptr(s.values)).toBe(producerBuffer(produced.nodes[2], 2));
      const flag = back.data[0].children[2].children[0];
      expect(flag.offset).toBe(5 + 1 + k);
      expect<number>(ptr(flag.values)).toBe(producerBuffer(produced.nodes[4], 1));
    } finally {
      disposeProduced(produced);
    }
  });

  test("list (offset 1) of struct (offset 2) of int64 (offset 1); fixed-size list (offset 1) of int16 (offset 3)", () => {
    const values = vectorFromArray([0n, 1n, 2n, 3n, null, 5n, 6n, 7n, 8n], new Int64());
    const structType = new Struct([new Field("x", new Int64(), true)]);
    const rows = makeData({ type: structType, length: 8, children: [values.slice(1, 9).data[0]] });
    const listType = new List(new Field("item", structType, true));
    const offsets = new Int32Array([0, 1, 3, 3, 6]);
    const lists = makeData({ type: listType, length: 4, valueOffsets: offsets, nullBitmap: bits([true, true, false, true]), child: rows.slice(2, 6) });
    const expectedList = new Vector([lists]).slice(1, 4);
    const listSpec: NodeSpec = {
      format: "+l", name: "l", length: 3, offset: 1, buffers: [bits([true, true, false, true]), offsets], nullCount: 1,
      children: [{ format: "+s", name: "item", length: 6, offset: 2, buffers: [null], children: [specFromData(values.data[0], "x", true, { offset: 1, length: 8 })] }],
    };
    withImported(listSpec, (imported) => {
      expect(compareVectors(importVector(imported), expectedList, "list of struct")).toEqual([]);
    }, { validation: "full" });

    const shorts = vectorFromArray(Array.from({ length: 3 + 2 * 4 }, (_, i) => (i === 6 ? null : i)), new Int16());
    const fslType = new FixedSizeList(2, new Field("item", new Int16(), true));
    const fsl = makeData({ type: fslType, length: 4, nullBitmap: bits([true, false, true, true]), child: shorts.slice(3, 11).data[0] });
    const fslSpec: NodeSpec = {
      format: "+w:2", name: "f", length: 3, offset: 1, nullCount: -1, buffers: [bits([true, false, true, true])],
      children: [specFromData(shorts.data[0], "item", true, { offset: 3, length: 8 })],
    };
    withImported(fslSpec, (imported) => {
      const back = importVector(imported);
      expect(compareVectors(back, new Vector([fsl]).slice(1, 4), "fixed-size list")).toEqual([]);
      expect(back.data[0].children[0].length).toBe(6);
    }, { validation: "full" });
  });

  test("unions with offsets on the union and its children; dictionary indices and dictionary both offset", () => {
    const type = new Union(UnionMode.Sparse, [3, 8], [new Field("a", new Int32(), true), new Field("b", new Utf8(), true)]);
    const as = vectorFromArray([9, 9, 1, 2, 3, 4, 5, 6], new Int32());
    const bs = vectorFromArray(["z", "p", "q", "r", "s", "t", "u"], new Utf8());
    const ids = new Int8Array([3, 8, 3, 8, 8, 3]);
    const sparse = makeData({ type, length: 6, typeIds: ids, children: [as.slice(2, 8).data[0], bs.slice(1, 7).data[0]] });
    const sparseSpec: NodeSpec = {
      format: "+us:3,8", length: 4, offset: 2, buffers: [ids],
      children: [specFromData(as.data[0], "a", true, { offset: 2, length: 6 }), specFromData(bs.data[0], "b", true, { offset: 1, length: 6 })],
    };
    withImported(sparseSpec, (imported) => {
      expect(compareVectors(importVector(imported), new Vector([sparse]).slice(2, 6), "sparse union")).toEqual([]);
    }, { validation: "full" });

    const denseType = new Union(UnionMode.Dense, [3, 8], [new Field("a", new Int32(), true), new Field("b", new Utf8(), true)]);
    const denseIds = new Int8Array([8, 3, 8, 3, 3]);
    const denseOffsets = new Int32Array([0, 0, 1, 1, 2]);
    const dense = makeData({ type: denseType, length: 5, typeIds: denseIds, valueOffsets: denseOffsets, children: [as.slice(1, 8).data[0], bs.slice(2, 7).data[0]] });
    const denseSpec: NodeSpec = {
      format: "+ud:3,8", length: 4, offset: 1, buffers: [denseIds, denseOffsets],
      children: [specFromData(as.data[0], "a", true, { offset: 1, length: 7 }), specFromData(bs.data[0], "b", true, { offset: 2, length: 5 })],
    };
    withImported(denseSpec, (imported) => {
      expect(compareVectors(importVector(imported), new Vector([dense]).slice(1, 5), "dense union")).toEqual([]);
    }, { validation: "full" });

    const words = vectorFromArray(["unused", "zero", "one", "two"], new Utf8());
    const dictType = new Dictionary(new Utf8(), new Int32(), null, false);
    const indices = new Int32Array([2, 0, 1, 2, 0, 1]);
    const coded = makeData({ type: dictType, length: 6, data: indices, nullBitmap: bits([true, true, false, true, true, true]), dictionary: words.slice(1, 4) });
    const dictSpec: NodeSpec = {
      format: "i", name: "d", length: 3, offset: 3, nullCount: -1, buffers: [bits([true, true, false, true, true, true]), indices],
      dictionary: specFromData(words.data[0], null, true, { offset: 1, length: 3 }),
    };
    withImported(dictSpec, (imported) => {
      expect(compareVectors(importVector(imported), new Vector([coded]).slice(3, 6), "dictionary")).toEqual([]);
    }, { validation: "full" });
  });
});

describe("import: list-view and run-end encoded (no apache-arrow type)", () => {
  // list-view<int32>: views out of order, overlapping, with a null slot and
  // a parent offset; the child has its own offset.
  const listViewSpec = (format: "+vl" | "+vL"): NodeSpec => {
    const cast = (values: number[]) => (format === "+vl" ? Int32Array.from(values) : BigInt64Array.from(values, BigInt)) as ArrayBufferView;
    return {
      format, name: "lv", length: 4, offset: 1, nullCount: 1,
      // Null slots still keep offset + size within the child (Columnar.rst).
      buffers: [bits([true, true, false, true, true]), cast([0, 3, 2, 0, 1]), cast([0, 2, 1, 3, 0])],
      children: [specFromData(vectorFromArray([-1, 10, 20, 30, null, 50], new Int32()).data[0], "item", true, { offset: 1, length: 5 })],
    };
  };

  for (const format of ["+vl", "+vL"] as const) {
    test(`${format}: raw views read in place; conversion refuses by default, materializes on request`, () => {
      withImported(listViewSpec(format), (imported) => {
        const root = imported.root;
        expect(root.typeId).toBe(format === "+vl" ? "list_view" : "large_list_view");
        expect(root.offset).toBe(1);
        const offsets = Array.from(root.buffer(1) as ArrayLike<number | bigint>, Number);
        const sizes = Array.from(root.buffer(2) as ArrayLike<number | bigint>, Number);
        expect(offsets).toEqual([0, 3, 2, 0, 1]);
        expect(sizes).toEqual([0, 2, 1, 3, 0]);
        expect(Array.from(root.child(0).buffer(1) as Int32Array)).toEqual([-1, 10, 20, 30, 0, 50]);
        const what = format === "+vl" ? "a list-view" : "a large list-view";
        expect(() => importVector(imported)).toThrow(withCode("unsupported"));
        expect(() => importVector(imported)).toThrow(`"lv" (${format}) is ${what}, which apache-arrow 21 cannot represent`);
        const back = importVector(imported, { materialize: true });
        expect(String(back.type)).toBe(format === "+vl" ? "List<Int32>" : "LargeList<Int32>");
        // The child's logical values are [10, 20, 30, null, 50]; slots 1..4
        // view [3, 5), null, [0, 3) and nothing.
        expect([...back].map((v) => (v === null ? null : [...v]))).toEqual([[null, 50], null, [10, 20, 30], []]);
      }, { validation: "full" });
    });
  }

  test("a list-view whose ranges are back to back shares its child (no copy)", () => {
    const spec: NodeSpec = {
      format: "+vl", name: "lv", length: 3, buffers: [null, new Int32Array([1, 3, 3]), new Int32Array([2, 0, 2])],
      children: [specFromData(vectorFromArray([0, 1, 2, 3, 4], new Int32()).data[0], "item")],
    };
    const produced = produceArray(spec);
    try {
      using imported = ImportedArray.fromArray(produced.schema, produced.array);
      const back = importVector(imported, { materialize: true });
      expect([...back].map((v) => [...v!])).toEqual([[1, 2], [], [3, 4]]);
      expect<number>(ptr(back.data[0].children[0].values)).toBe(producerBuffer(produced.nodes[1], 1) + 4);
    } finally {
      disposeProduced(produced);
    }
  });

  test("run-end encoded: raw views, default refusal, materialized values (with offsets, in a struct)", () => {
    const ree = (offset: number, length: number): NodeSpec => ({
      format: "+r", name: "runs", length, offset, buffers: [],
      children: [
        { format: "i", name: "run_ends", flags: 0, length: 4, buffers: [null, new Int32Array([2, 3, 7, 9])] },
        specFromData(vectorFromArray(["a", null, "c", "d"], new Utf8()).data[0], "values"),
      ],
    });
    withImported(ree(1, 7), (imported) => {
      const root = imported.root;
      expect(root.typeId).toBe("run_end_encoded");
      expect(root.nBuffers).toBe(0);
      expect(Array.from(root.child(0).buffer(1) as Int32Array)).toEqual([2, 3, 7, 9]);
      expect(() => importVector(imported)).toThrow('"runs" (+r) is run-end encoded, which apache-arrow 21 cannot represent');
      const back = importVector(imported, { materialize: true });
      expect(String(back.type)).toBe("Utf8");
      expect([...back]).toEqual(["a", null, "c", "c", "c", "c", "d"]);
    }, { validation: "full" });
    // In a struct with an offset: the parent's offset reaches the runs.
    const struct: NodeSpec = { format: "+s", length: 3, offset: 2, buffers: [null], children: [ree(1, 8)] };
    withImported(struct, (imported) => {
      const batch = importRecordBatch(imported, { materialize: true });
      expect([...batch.getChildAt(0)!]).toEqual(["c", "c", "c"]);
      expect(() => importRecordBatch(imported)).toThrow(withCode("unsupported"));
    }, { validation: "full" });
  });
});

describe("import: device memory the host cannot read", () => {
  const spec = (): NodeSpec => ({ format: "+s", length: 3, buffers: [null], children: [{ format: "i", name: "x", length: 3, buffers: [null, 0x1000] }] });

  test("CUDA memory: raw views describe it, conversion names the device", () => {
    const produced = produceDevice(spec(), 2, 1);
    try {
      using imported = ImportedArray.fromDeviceArray(produced.schema, produced.array, { validation: "full" });
      expect(imported.deviceTypeName).toBe("CUDA");
      expect(imported.root.child(0).bufferAddress(1)).toBe(0x1000);
      expect(imported.root.child(0).bufferSize(1)).toBe(12);
      expect(() => importRecordBatch(imported)).toThrow(withCode("unsupported"));
      expect(() => importRecordBatch(imported)).toThrow("CUDA memory (device 1), which the host cannot read");
      expect(() => imported.root.child(0).buffer(1)).toThrow("CUDA");
    } finally {
      disposeProduced(produced);
    }
  });

  test("an unknown device type imports as opaque raw data; conversion is UnknownDeviceError", () => {
    const produced = produceDevice(spec(), 99, 0);
    try {
      using imported = ImportedArray.fromDeviceArray(produced.schema, produced.array, { validation: "full" });
      expect(imported.deviceTypeName).toBe("unknown(99)");
      expect(imported.root.child(0).describe()).toMatchObject({ format: "i", length: 3 });
      expect(() => importRecordBatch(imported)).toThrow(withCode("unknown_device"));
      expect(() => importVector(imported)).toThrow("device type 99, which this library does not know");
    } finally {
      disposeProduced(produced);
    }
  });
});
