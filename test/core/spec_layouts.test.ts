/**
 * Layouts the spec allows and Arrow C++ accepts, which look degenerate:
 * fixed-size binary of width 0, fixed-size list of size 0, zero-length
 * arrays with an offset and NULL buffers, and pre-1.0 unions carrying a
 * leading NULL validity buffer. Each imports at every validation level and
 * converts to the apache-arrow value it means; what the producer moved in
 * is released exactly once.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { FixedSizeBinary, FixedSizeList, Type } from "apache-arrow";
import { importVector } from "../../ts/index.ts";
import { ImportedArray } from "../../ts/raw.ts";
import { disposeProduced, produceArray, producerClean, type NodeSpec } from "../helpers/producer.ts";
import { withCode } from "../helpers/errors.ts";
import { expectSettled } from "../helpers/settled.ts";

afterEach(async () => {
  await expectSettled();
  expect(producerClean()).toEqual({ live: 0, doubles: 0 });
});

const levels = ["none", "minimal", "default", "full"] as const;

/** Imports `spec` at `validation` and returns the converted values as JSON-able data. */
function convert(spec: NodeSpec, validation: (typeof levels)[number]): { typeId: Type; type: unknown; values: unknown[] } {
  const produced = produceArray(spec);
  try {
    using imported = ImportedArray.fromArray(produced.schema, produced.array, { validation });
    const vector = importVector(imported);
    return { typeId: vector.type.typeId, type: vector.type, values: [...vector].map((v) => (v instanceof Uint8Array ? [...v] : v?.toArray ? [...v.toArray()] : v)) };
  } finally {
    disposeProduced(produced);
  }
}

describe("degenerate layouts the spec allows", () => {
  for (const validation of levels) {
    test(`w:0: three empty values (${validation})`, () => {
      const out = convert({ format: "w:0", length: 3, nullCount: 1, buffers: [Uint8Array.of(0b101), null] }, validation);
      expect(out.typeId).toBe(Type.FixedSizeBinary);
      expect((out.type as FixedSizeBinary).byteWidth).toBe(0);
      expect(out.values).toEqual([[], null, []]);
    });

    test(`+w:0: three empty lists over an empty child (${validation})`, () => {
      const out = convert({
        format: "+w:0", length: 3, nullCount: 0, buffers: [null],
        children: [{ format: "i", name: "item", length: 0, nullCount: 0, buffers: [null, null] }],
      }, validation);
      expect(out.typeId).toBe(Type.FixedSizeList);
      expect((out.type as FixedSizeList).listSize).toBe(0);
      expect(out.values).toEqual([[], [], []]);
    });

    test(`a zero-length int32 array at offset 7 with NULL buffers is empty (${validation})`, () => {
      const out = convert({ format: "i", length: 0, offset: 7, nullCount: 0, buffers: [null, null] }, validation);
      expect(out.typeId).toBe(Type.Int);
      expect(out.values).toEqual([]);
    });

    test(`a pre-1.0 dense union (NULL validity, type ids, offsets) reads as a 2-buffer one (${validation})`, () => {
      const out = convert({
        format: "+ud:0,1", length: 3, nullCount: 0, buffers: [null, Int8Array.of(1, 0, 1), Int32Array.of(0, 0, 1)],
        children: [
          { format: "i", name: "a", length: 1, nullCount: 0, buffers: [null, Int32Array.of(7)] },
          { format: "u", name: "b", length: 2, nullCount: 0, buffers: [null, Int32Array.of(0, 1, 3), new TextEncoder().encode("xyz")] },
        ],
      }, validation);
      expect(out.typeId).toBe(Type.Union);
      expect(out.values).toEqual(["x", 7, "yz"]);
    });

    test(`a pre-1.0 sparse union (NULL validity, type ids) reads as a 1-buffer one (${validation})`, () => {
      const out = convert({
        format: "+us:0", length: 2, nullCount: 0, buffers: [null, Int8Array.of(0, 0)],
        children: [{ format: "i", name: "a", length: 2, nullCount: 0, buffers: [null, Int32Array.of(4, 5)] }],
      }, validation);
      expect(out.values).toEqual([4, 5]);
    });
  }

  test("a pre-1.0 union whose validity buffer is not NULL is refused, naming the buffer", () => {
    const produced = produceArray({
      format: "+ud:0", length: 1, nullCount: 0, buffers: [Uint8Array.of(1), Int8Array.of(0), Int32Array.of(0)],
      children: [{ format: "i", name: "a", length: 1, nullCount: 0, buffers: [null, Int32Array.of(7)] }],
    });
    try {
      let error: unknown = null;
      try {
        ImportedArray.fromArray(produced.schema, produced.array, { validation: "minimal" });
      } catch (e) {
        error = e;
      }
      expect(error).toEqual(withCode("invalid_layout"));
      expect((error as Error).message).toContain("n_buffers is 3, the pre-1.0 union layout, but its validity buffer (buffer 0) is not NULL");
    } finally {
      disposeProduced(produced);
    }
  });
});
