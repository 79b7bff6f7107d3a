/**
 * Real producers' and consumers' quirks:
 * - Polars exports a Null column with n_buffers = 1 (one NULL buffer), as
 *   Arrow C++ did before 2021 and still accepts: imported, at every level.
 * - DuckDB ignores the validity bitmap of a dictionary column whose
 *   null_count is -1: every exported node carries its exact null count,
 *   sliced columns and dictionaries included.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { toArrayBuffer, type Pointer } from "bun:ffi";
import { Dictionary, Field, Int32, Int8, Null, RecordBatch, Schema, Struct, Utf8, Vector, makeData, vectorFromArray } from "apache-arrow";
import { exportArray, importRecordBatch } from "../../ts/index.ts";
import { ImportedArray, type ValidationLevelName } from "../../ts/raw.ts";
import { CArray, CDeviceArray, CSchema } from "../../ts/raw.ts";
import { disposeProduced, produceArray, producerClean } from "../helpers/producer.ts";
import { expectSettled } from "../helpers/settled.ts";

afterEach(async () => {
  await expectSettled();
  expect(producerClean()).toEqual({ live: 0, doubles: 0 });
});

describe("Polars: a Null column with one NULL buffer", () => {
  for (const validation of ["none", "minimal", "default", "full"] as ValidationLevelName[]) {
    test(`imports and converts at ${validation}`, () => {
      const produced = produceArray({
        format: "+s", name: "", length: 3, nullCount: 0, buffers: [null],
        children: [{ format: "n", name: "nothing", length: 3, nullCount: 3, nBuffers: 1, buffers: [null] }],
      });
      try {
        using imported = ImportedArray.fromArray(produced.schema, produced.array, { validation });
        expect(imported.root.child(0).nBuffers).toBe(0); // described without its ignored buffer
        const batch = importRecordBatch(imported);
        expect(batch.schema.fields[0].type).toBeInstanceOf(Null);
        expect(batch.getChildAt(0)!.length).toBe(3);
        expect(batch.getChildAt(0)!.nullCount).toBe(3);
      } finally {
        disposeProduced(produced);
      }
    });
  }
});

/** Unset bits of the C node's validity over its own [offset, offset + length). */
function cNulls(array: CArray): number {
  const address = array.bufferAddress(0);
  if (!address) return 0;
  const bytes = new Uint8Array(toArrayBuffer(address as Pointer, 0, Math.ceil((array.offset + array.length) / 8)));
  let nulls = 0;
  for (let i = array.offset; i < array.offset + array.length; i++) if ((bytes[i >> 3] & (1 << (i & 7))) === 0) nulls++;
  return nulls;
}

/** Every node of an exported tree: [path, null_count, counted nulls]. Null
 * and union nodes carry no bitmap and are left out. */
function nullCounts(schema: CSchema, array: CArray, path = "root"): [string, number, number][] {
  const format = schema.format ?? "";
  const own: [string, number, number][] = format === "n" || format.startsWith("+u") || format === "+r" ? [] : [[path, array.nullCount, cNulls(array)]];
  const children = array.children.flatMap((child, i) => nullCounts(schema.child(i), child, `${path}/${schema.child(i).name}`));
  const dictionary = array.dictionary ? nullCounts(schema.dictionary!, array.dictionary, `${path}/dictionary`) : [];
  return [...own, ...children, ...dictionary];
}

function exportedNullCounts(source: Vector | RecordBatch): [string, number, number][] {
  using exported = exportArray(source);
  return nullCounts(CSchema.at(exported.schema), CDeviceArray.at(exported.array).array);
}

describe("exported null counts are exact (DuckDB reads a dictionary's bitmap only with one)", () => {
  test("sliced columns: apache-arrow's unknown count is counted, never -1", () => {
    const words = vectorFromArray(["a", null, "b", null, null, "c", "d", null, "e"], new Utf8());
    const sliced = words.slice(1, 7);
    expect((sliced.data[0] as unknown as { _nullCount: number })._nullCount).toBeLessThan(0); // unknown to apache-arrow
    const counts = exportedNullCounts(sliced);
    expect(counts).toEqual([["root", 3, 3]]);
  });

  test("sliced dictionary columns and their dictionaries", () => {
    const dictionary = vectorFromArray(["x", "y", "z"], new Utf8());
    const indices = makeData({
      type: new Dictionary(new Utf8(), new Int8()), length: 8, nullCount: -1,
      nullBitmap: Uint8Array.of(0b1011_0110), data: Int8Array.of(0, 1, 2, 0, 1, 2, 0, 1), dictionary,
    });
    const vector = new Vector([indices]);
    for (const [begin, end] of [[0, 8], [1, 6], [3, 8]]) {
      const counts = exportedNullCounts(vector.slice(begin, end));
      for (const [path, exported, counted] of counts) {
        expect(exported, path).toBe(counted);
      }
      expect(counts[0][1]).toBe([...vector.slice(begin, end)].filter((v) => v === null).length);
    }
  });

  test("sliced record batches: every column, struct children included", () => {
    const inner = new Struct([new Field("v", new Int32(), true)]);
    const fields = [new Field("a", new Int32(), true), new Field("s", inner, true)];
    const a = vectorFromArray([1, null, 3, null, 5, 6, null, 8], new Int32());
    const v = vectorFromArray([null, 2, null, 4, 5, null, 7, 8], new Int32());
    const s = makeData({ type: inner, length: 8, nullBitmap: Uint8Array.of(0b1101_1011), children: [v.data[0]] });
    const data = makeData({ type: new Struct(fields), length: 8, children: [a.data[0], s] });
    const batch = new RecordBatch(new Schema(fields), data);
    for (const [begin, end] of [[0, 8], [2, 7], [3, 4]]) {
      const counts = exportedNullCounts(batch.slice(begin, end));
      expect(counts.length).toBe(4);
      for (const [path, exported, counted] of counts) {
        expect(exported, path).toBeGreaterThanOrEqual(0);
        expect(exported, path).toBe(counted);
      }
    }
  });
});
