/**
 * The import's address probe (zig/validate/probe.zig) checks a schema and
 * its array in one native call, and skips the struct memory of the export
 * slot this library adopted last while its handle is live (it allocated
 * that memory and built those trees): only its two releases are read.
 * What each path refuses is still named per parameter, with the same
 * typed errors.
 */
import { describe, expect, test } from "bun:test";
import { Table, makeVector } from "apache-arrow";
import { exportArray, importRecordBatch } from "../../ts/index.ts";
import { ReleasedError } from "../../ts/core/errors.ts";
import { ImportedArray } from "../../ts/raw.ts";
import { CDeviceArray, CSchema } from "../../ts/raw.ts";
import { isLiveExportPair } from "../../ts/native/live_export.ts";
import { takePair, takenPair } from "../../ts/native/c_structs.ts";
import { nonZeroCounters } from "../helpers/leaks.ts";
import { collectUntil } from "../helpers/gc.ts";
import { withCode } from "../helpers/errors.ts";

const batch = () => new Table({ x: makeVector(Int32Array.of(1, 2, 3)) }).batches[0];

describe("the last export's slot", () => {
  test("is known live until its handle is released, for its own kind and order only", () => {
    const h = exportArray(batch());
    const [schema, array] = [Number(h.schema), Number(h.array)];
    expect(isLiveExportPair(schema, array, "ArrowDeviceArray")).toBe(true);
    expect(isLiveExportPair(schema, array, "ArrowArray")).toBe(false);
    expect(isLiveExportPair(array, schema, "ArrowDeviceArray")).toBe(false);
    expect(isLiveExportPair(schema, schema, "ArrowDeviceArray")).toBe(false);
    h.release();
    expect(isLiveExportPair(schema, array, "ArrowDeviceArray")).toBe(false);
    const plain = exportArray(batch(), { as: "array" });
    expect(isLiveExportPair(Number(plain.schema), Number(plain.array), "ArrowArray")).toBe(true);
    plain.release();
  });

  test("is forgotten once its handle joins the safety net (which may free it without release())", async () => {
    const h = exportArray(batch());
    await Promise.resolve();
    await Promise.resolve();
    expect(isLiveExportPair(Number(h.schema), Number(h.array), "ArrowDeviceArray")).toBe(false);
    // Still imported, through the probe.
    expect(importRecordBatch(h.schema, h.array).getChild("x")?.toArray()).toEqual(Int32Array.of(1, 2, 3));
    h.release();
  });

  test("is imported at once; a struct moved out of it is ReleasedError, naming the parameter", () => {
    const h = exportArray(batch());
    const imported = ImportedArray.fromDeviceArray(h.schema, h.array);
    expect(imported.root.child(0).buffer(1)).toEqual(Int32Array.of(1, 2, 3));
    imported.dispose();
    h.release();

    const moved = exportArray(batch());
    CDeviceArray.at(moved.array).move().dispose();
    expect(() => ImportedArray.fromDeviceArray(moved.schema, moved.array)).toThrow(withCode("released"));
    const last = exportArray(batch());
    expect(() => ImportedArray.fromDeviceArray(last.schema, moved.array)).toThrow(/^ImportedArray\.fromDeviceArray: deviceArray: array is released/);
    last.release();
    moved.release();

    const schemaMoved = exportArray(batch());
    CSchema.at(schemaMoved.schema).move().dispose();
    expect(() => ImportedArray.fromDeviceArray(schemaMoved.schema, schemaMoved.array)).toThrow(/^ImportedArray\.fromDeviceArray: schema: .*released/);
    expect(CDeviceArray.at(schemaMoved.array).released).toBe(true); // moved in, so released by the refusal
    schemaMoved.release();
  });
});

describe("a pair checked in one call", () => {
  test("names the parameter that failed, and releases the good struct", () => {
    const h = exportArray(batch());
    const other = exportArray(batch()); // the last export: h is probed
    expect(() => ImportedArray.fromDeviceArray(h.schema, 4096 as never)).toThrow(
      "ImportedArray.fromDeviceArray: deviceArray: 0x1000 is not readable memory for an ArrowDeviceArray (128 bytes)");
    expect(CSchema.at(h.schema).released).toBe(true);
    expect(() => importRecordBatch(8 as never, h.array)).toThrow(withCode("invalid_argument"));
    h.release();
    other.release();
  });
});

describe("the import's allocation-free take", () => {
  test("takes a good pair (the last export's, or one it probes), and nothing else, releasing nothing either way", () => {
    const h = exportArray(batch());
    const last = exportArray(batch());
    for (const [pair, kind] of [[h, "ArrowDeviceArray"], [last, "ArrowDeviceArray"]] as const) {
      expect(takePair(pair.schema, pair.array, kind, "roots")).toBe(true);
      expect([takenPair.schema, takenPair.array]).toEqual([Number(pair.schema), Number(pair.array)]);
    }
    // NULL, a wrong kind, an unreadable address, a released struct, a
    // non-address: the general path's to report; all still live.
    expect(takePair(null, h.array, "ArrowDeviceArray", "roots")).toBe(false);
    expect(takePair(h.schema, 4096, "ArrowDeviceArray", "tree")).toBe(false);
    expect(takePair(h.schema, h.array, "ArrowDeviceArray", "tree")).toBe(true);
    expect(takePair("0x10", h.array, "ArrowDeviceArray", "roots")).toBe(false);
    expect(CSchema.at(h.schema).released).toBe(false);
    expect(CDeviceArray.at(h.array).released).toBe(false);
    CDeviceArray.at(h.array).move().dispose();
    expect(takePair(h.schema, h.array, "ArrowDeviceArray", "roots")).toBe(false);
    expect(CSchema.at(h.schema).released).toBe(false);
    // The import takes the fast way for good input and the general one for
    // the rest: the same results as before.
    const imported = ImportedArray.fromDeviceArray(last.schema, last.array, undefined);
    expect(imported.root.child(0).buffer(1)).toEqual(Int32Array.of(1, 2, 3));
    imported.dispose();
    expect(() => ImportedArray.fromDeviceArray(h.schema, h.array, { validation: "nope" as never })).toThrow(withCode("released"));
    expect(CSchema.at(h.schema).released).toBe(true);
    h.release();
    last.release();
  });
});

test("nothing is left live", async () => {
  expect(await collectUntil(() => Object.keys(nonZeroCounters()).length === 0)).toBe(true);
});
