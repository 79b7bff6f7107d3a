/**
 * Conversion of hostile but default-validated trees (default validation
 * reads O(1) values per node, so list views, run ends and middle offsets
 * are unproven): every failure is a typed error naming the node's path,
 * found before anything is allocated or looped over; never a plain
 * RangeError / TypeError, never a hang, never garbage values. What was
 * moved in is still released exactly once.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { ArrowDeviceError, importVector } from "../../ts/index.ts";
import { InvalidLayoutError, OutOfMemoryError } from "../../ts/core/errors.ts";
import { ImportedArray } from "../../ts/raw.ts";
import { disposeProduced, produceArray, producerClean, type NodeSpec } from "../helpers/producer.ts";
import { withCode } from "../helpers/errors.ts";
import { expectSettled } from "../helpers/settled.ts";

afterEach(async () => {
  await expectSettled();
  expect(producerClean()).toEqual({ live: 0, doubles: 0 });
});

const int32 = (name: string, values: number[]): NodeSpec => ({ format: "i", name, length: values.length, nullCount: 0, buffers: [null, Int32Array.from(values)] });

/** Imports `spec` at default validation and converts it with
 * materialization; returns what the conversion threw. */
function convertError(spec: NodeSpec): unknown {
  const produced = produceArray(spec);
  try {
    using imported = ImportedArray.fromArray(produced.schema, produced.array);
    try {
      importVector(imported, { materialize: true });
    } catch (error) {
      return error;
    }
    return null;
  } finally {
    disposeProduced(produced);
  }
}

describe("materialization checks sizes before allocating or looping", () => {
  test("a large list-view whose middle offset is 2^40: InvalidLayoutError naming the node, not garbage", () => {
    const spec: NodeSpec = {
      format: "+s", name: "", length: 3, nullCount: 0, buffers: [null],
      children: [{
        format: "+vL", name: "lv", length: 3, nullCount: 0,
        buffers: [null, BigInt64Array.of(0n, 2n ** 40n, 1n), BigInt64Array.of(1n, 1n, 1n)], children: [int32("item", [1, 2, 3, 4])],
      }],
    };
    const error = convertError(spec);
    expect(error).toEqual(withCode("invalid_layout"));
    expect((error as Error).message).toContain(`"" (+s) > "lv" (+vL): list view 1 (offset 1099511627776, size 1) is out of the child's 4 values`);
  });

  test("a list-view whose sizes claim 2^30 values each: refused at once, no 2^30-step loop", () => {
    const spec: NodeSpec = {
      format: "+vl", name: "lv", length: 3, nullCount: 0,
      buffers: [null, Int32Array.of(0, 2 ** 30, 1), Int32Array.of(1, 2 ** 30, 2 ** 30)], children: [int32("item", [1, 2, 3, 4])],
    };
    const error = convertError(spec);
    expect(error).toEqual(withCode("invalid_layout"));
    expect((error as Error).message).toContain("list view 1 (offset 1073741824, size 1073741824) is out of the child's 4 values");
  });

  test("a run-end encoded array of 2^32 slots: OutOfMemoryError naming the node, not a RangeError", () => {
    const spec: NodeSpec = {
      format: "+r", name: "runs", length: 2 ** 32, nullCount: 0, buffers: [],
      children: [
        { format: "l", name: "run_ends", length: 1, nullCount: 0, buffers: [null, BigInt64Array.of(2n ** 32n)] },
        int32("values", [7]),
      ],
    };
    const error = convertError(spec);
    expect(error).toEqual(withCode("out_of_memory"));
    expect((error as Error).message).toContain(`"runs" (+r): materializing would copy 4294967296 values`);
  });
});

describe("conversion errors are typed", () => {
  test("a plain error inside a node's conversion becomes a typed error with the node's path", async () => {
    const { typedConversion } = await import("../../ts/arrow/types.ts");
    const produced = produceArray({ format: "+s", name: "", length: 1, nullCount: 0, buffers: [null], children: [int32("x", [5])] });
    try {
      using imported = ImportedArray.fromArray(produced.schema, produced.array);
      const child = imported.root.child(0);
      const range = (() => { try { typedConversion(child, () => new Int32Array(new ArrayBuffer(4), 2, 1)); } catch (e) { return e; } })();
      expect(range).toEqual(withCode("invalid_layout"));
      expect((range as Error).message).toStartWith(`"" (+s) > "x" (i): cannot convert (`);
      const memory = (() => { try { typedConversion(child, () => new Int32Array(2 ** 40)); } catch (e) { return e; } })();
      expect(memory).toEqual(withCode("out_of_memory"));
      const typeError = (() => { try { typedConversion(child, () => (null as unknown as { x: number }).x); } catch (e) { return e; } })();
      expect(typeError).toBeInstanceOf(ArrowDeviceError);
      const typed = new InvalidLayoutError(4, "mine");
      expect((() => { try { typedConversion(child, () => { throw typed; }); } catch (e) { return e; } })()).toBe(typed);
    } finally {
      disposeProduced(produced);
    }
  });
});
