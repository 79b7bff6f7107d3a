/**
 * How deep the address probe looks at an import's schema and array
 * (zig/validate/probe_policy.zig, docs/validation.md): the roots at
 * validation "minimal" and "default", every node at "full". A tree whose
 * inner pointers are wrong gets a typed error at "full" naming the node;
 * the side that failed is left live (not safe to release), the other is
 * released, as an import owns what it is given.
 */
import { describe, expect, test } from "bun:test";
import { toArrayBuffer } from "bun:ffi";
import { Table, makeVector } from "apache-arrow";
import { exportArray, importRecordBatch } from "../../ts/index.ts";
import { CDeviceArray, CSchema, ImportedArray } from "../../ts/raw.ts";
import { ArrowArrayLayout, ArrowSchemaLayout } from "../../ts/core/abi/layout.ts";
import { nonZeroCounters } from "../../ts/diagnostics.ts";
import { collectUntil } from "../helpers/gc.ts";
import { withCode } from "../helpers/errors.ts";

const batch = () => new Table({ x: makeVector(Int32Array.of(1, 2, 3)) }).batches[0];

/** A batch's structs moved out of their export slot (so that the probe
 * reads them as any caller's), and a word of a child patched meanwhile:
 * `patch` returns the struct address and byte offset of that word. */
function movedWithPatch(patch: (schema: CSchema, array: CDeviceArray) => [address: number, offset: number]) {
  const h = exportArray(batch());
  const schema = CSchema.at(h.schema).move();
  const array = CDeviceArray.at(h.array).move();
  h.release();
  const [address, offset] = patch(schema, array);
  const word = new BigUint64Array(toArrayBuffer(address as never, offset, 8));
  const saved = word[0];
  word[0] = 8n; // the first page: never mapped
  return {
    schema, array,
    restore() {
      word[0] = saved;
    },
  };
}

describe("at validation full, every node is probed", () => {
  test("a child schema with an unreadable format: the schema side is named, left live, the array released", () => {
    const t = movedWithPatch((schema) => [Number(schema.child(0).address), ArrowSchemaLayout.fields.format]);
    expect(() => importRecordBatch(t.schema.address, t.array.address, { validation: "full" })).toThrow(withCode("invalid_argument"));
    expect(t.array.released).toBe(true);
    expect(t.schema.released).toBe(false);
    t.restore();
    t.schema.dispose();
    t.array.dispose();
  });

  test("the message names the call, the parameter and the node", () => {
    const t = movedWithPatch((schema) => [Number(schema.child(0).address), ArrowSchemaLayout.fields.format]);
    expect(() => ImportedArray.fromDeviceArray(t.schema.address, t.array.address, { validation: "full" })).toThrow(
      /^ImportedArray\.fromDeviceArray: schema: child 0 at depth 1: 0x[0-9a-f]+ is not a live ArrowSchema: its format 0x8 is not a readable/);
    t.restore();
    t.schema.dispose();
    t.array.dispose();
  });

  test("a child array with an unreadable buffer pointer array: the array side is named, left live, the schema released", () => {
    const t = movedWithPatch((_, array) => [Number(array.array.child(0).address), ArrowArrayLayout.fields.buffers]);
    expect(() => importRecordBatch(t.schema.address, t.array.address, { validation: "full" })).toThrow(
      /^importRecordBatch: arrayPtr: child 0 at depth 1: 0x[0-9a-f]+ is not a live ArrowArray: its 2 buffers at 0x8 are not readable memory/);
    expect(t.schema.released).toBe(true);
    expect(t.array.released).toBe(false);
    t.restore();
    t.array.dispose();
    t.schema.dispose();
  });

  test("a good tree imports at every level, through the probe", () => {
    for (const validation of ["none", "minimal", "default", "full"] as const) {
      const h = exportArray(batch());
      const schema = CSchema.at(h.schema).move();
      const array = CDeviceArray.at(h.array).move();
      h.release();
      expect(importRecordBatch(schema.address, array.address, { validation }).getChild("x")?.toArray()).toEqual(Int32Array.of(1, 2, 3));
      expect([schema.released, array.released]).toEqual([true, true]);
      schema.dispose();
      array.dispose();
    }
  });
});

test("nothing is left live", async () => {
  expect(await collectUntil(() => Object.keys(nonZeroCounters()).length === 0)).toBe(true);
});
