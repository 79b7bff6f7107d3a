/**
 * Raw C structs a user holds: read in place, moved (bitwise, source marked
 * released), children moved out one by one before the parent is released,
 * released exactly once; the FinalizationRegistry only as a safety net.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { ptr } from "bun:ffi";
import { Field, Int32, RecordBatch, Schema, Struct, Utf8, makeData, vectorFromArray } from "apache-arrow";
import { join } from "node:path";
import { CArray, CDeviceArray, CSchema } from "../../ts/raw.ts";
import { exportArray, importVector } from "../../ts/index.ts";
import { InvalidArgumentError } from "../../ts/core/errors.ts";
import { ImportedArray } from "../../ts/raw.ts";
import { nonZeroCounters } from "../helpers/leaks.ts";
import { fx } from "../helpers/fixtures.ts";
import { collectUntil } from "../helpers/gc.ts";
import { bits, disposeProduced, produceArray, produceDevice, producerClean, type NodeSpec } from "../helpers/producer.ts";
import { testRoot } from "../helpers/paths.ts";
import { withCode } from "../helpers/errors.ts";
import { expectSettled } from "../helpers/settled.ts";

afterEach(async () => {
  await expectSettled({ producerLive: () => producerClean().live });
  expect(producerClean()).toEqual({ live: 0, doubles: 0 });
  fx.fx_reset_counts();
});

const three: NodeSpec = {
  format: "+s", name: "root", length: 2, buffers: [null], metadata: [["origin", "c"]],
  children: [
    { format: "i", name: "a", length: 2, buffers: [null, new Int32Array([1, 2])] },
    { format: "u", name: "b", flags: 0, length: 2, nullCount: 1, buffers: [bits([true, false]), new Int32Array([0, 1, 1]), new Uint8Array([120])] },
    { format: "c", name: "c", length: 2, buffers: [null, new Int8Array([1, 0])], dictionary: { format: "u", length: 2, buffers: [null, new Int32Array([0, 1, 2]), new Uint8Array([112, 113])] } },
  ],
};

describe("reading C structs in place", () => {
  test("schema, array and device array fields, children and dictionary", () => {
    const p = produceDevice(three, 1, -1);
    try {
      const { schema, array } = p;
      expect(schema.format).toBe("+s");
      expect(schema.name).toBe("root");
      expect(schema.metadata).toEqual(new Map([["origin", "c"]]));
      expect(schema.nChildren).toBe(3);
      expect(schema.children.map((c) => c.name)).toEqual(["a", "b", "c"]);
      expect(schema.child(1).nullable).toBe(false);
      expect(schema.child(2).dictionary!.format).toBe("u");
      expect(schema.dictionary).toBeNull();
      expect(() => schema.child(3)).toThrow(withCode("out_of_range"));
      expect(array.deviceType).toBe(1);
      expect(array.deviceTypeName).toBe("CPU");
      expect(array.deviceId).toBe(-1);
      expect(array.syncEvent).toBe(0);
      const a = array.array;
      expect([a.length, a.nullCount, a.offset, a.nBuffers, a.nChildren]).toEqual([2, 0, 0, 1, 3]);
      expect(a.child(1).nullCount).toBe(1);
      expect(a.child(1).bufferAddresses).toHaveLength(3);
      expect(a.child(1).bufferAddress(0)).not.toBe(0);
      expect(a.child(0).bufferAddress(0)).toBe(0);
      expect(a.child(2).dictionary!.length).toBe(2);
      expect(a.released || schema.released).toBe(false);
    } finally {
      disposeProduced(p);
    }
  });

  test("a borrowed view (CArray.at) reads the caller's struct and never frees it", () => {
    const p = produceArray(three);
    const view = CArray.at(p.array.address);
    expect(view.owned).toBe(false);
    expect(view.nChildren).toBe(3);
    view.dispose(); // releases what it holds; the memory stays the caller's
    expect(p.array.released).toBe(true);
    expect(p.array.nChildren).toBe(3); // still readable: not freed
    disposeProduced(p);
  });
});

describe("moving", () => {
  test("move() copies bitwise into a new owned struct and marks the source released", () => {
    const p = produceArray(three);
    const schema = p.schema.move();
    const array = p.array.move();
    expect(p.schema.released && p.array.released).toBe(true);
    expect(schema.owned && !schema.released && !array.released).toBe(true);
    expect(schema.name).toBe("root");
    expect(array.nChildren).toBe(3);
    expect(fx.fx_array_releases()).toBe(0n);
    // The moved pair imports like the original.
    using imported = ImportedArray.fromArray(schema, array);
    expect(importVector(imported).length).toBe(2);
    schema.dispose();
    array.dispose();
    disposeProduced(p);
  });

  test("a move refuses a released source and a live destination, changing nothing", () => {
    const p = produceArray(three);
    const q = produceArray(three);
    expect(() => p.array.move(q.array)).toThrow(new InvalidArgumentError(1, "destination array holds a live struct (its release is not NULL); release it first"));
    expect(p.array.released).toBe(false);
    const moved = p.array.move();
    expect(() => p.array.move()).toThrow(withCode("released"));
    const d = produceDevice(three);
    const target = CDeviceArray.allocate();
    d.array.move(target);
    expect(target.deviceTypeName).toBe("CPU");
    expect(d.array.released).toBe(true);
    for (const s of [moved, target]) s.dispose();
    for (const x of [p, q, d]) disposeProduced(x);
  });

  test("children move out one by one; the parent is released next and skips them", () => {
    const p = produceArray(three);
    const childSchema = p.schema.moveChild(1);
    const childArray = p.array.moveChild(1);
    const other = p.array.moveChild(2);
    expect(() => p.array.moveChild(1)).toThrow("array child 1 was already moved out or released");
    expect(() => p.array.moveChild(3)).toThrow(withCode("out_of_range"));
    expect(() => p.array.child(0).release()).toThrow("only a base ArrowArray may be released");
    p.array.release();
    p.schema.release();
    // Root and child 0 released; the moved children live on.
    expect(fx.fx_array_releases()).toBe(2n);
    expect(childArray.released || other.released).toBe(false);
    expect(p.array.child(0).released).toBe(true); // its base is gone
    // A moved-out child is a base struct of its own: import it.
    using imported = ImportedArray.fromArray(childSchema, childArray);
    expect([...importVector(imported)]).toEqual(["x", null]);
    imported.dispose();
    other.release();
    other.release(); // idempotent
    expect(fx.fx_array_releases()).toBe(5n); // + child 1, child 2 and its dictionary
    for (const s of [childSchema, childArray, other]) s.dispose();
    disposeProduced(p);
  });

  test("moving a child out of this library's own export, then importing it", () => {
    const batch = new RecordBatch(new Schema([new Field("n", new Int32(), true), new Field("s", new Utf8(), true)]), makeData({
      type: new Struct([new Field("n", new Int32(), true), new Field("s", new Utf8(), true)]),
      length: 3,
      children: [vectorFromArray([1, 2, 3], new Int32()).data[0], vectorFromArray(["p", null, "r"], new Utf8()).data[0]],
    }));
    const exported = exportArray(batch, { as: "array" });
    const root = CArray.at(exported.array);
    const schemaRoot = CSchema.at(exported.schema);
    const s = schemaRoot.moveChild(1);
    const a = root.moveChild(1);
    exported.release(); // releases the parents; the moved child keeps its JS buffers alive
    expect(nonZeroCounters().live_array_exports).toBe(1);
    using imported = ImportedArray.fromArray(s, a);
    const back = importVector(imported);
    expect([...back]).toEqual(["p", null, "r"]);
    // Zero-copy through export, child move-out and import.
    expect(ptr(back.data[0].values)).toBe(ptr(batch.getChildAt(1)!.data[0].values));
    expect(ptr(back.data[0].valueOffsets)).toBe(ptr(batch.getChildAt(1)!.data[0].valueOffsets));
    imported.dispose();
    s.dispose();
    a.dispose();
  });
});

describe("safety net and debug mode", () => {
  function dropOwned() {
    const p = produceArray(three);
    void p; // never disposed
  }

  test("an owned struct dropped without dispose() is released when collected", async () => {
    dropOwned();
    expect(producerClean().live).toBeGreaterThan(0);
    expect(await collectUntil(() => producerClean().live === 0, 200)).toBe(true);
    expect(producerClean().doubles).toBe(0);
  });

  test("debug mode warns about handles collected without dispose()", () => {
    const script = `
      const lib = {
        ...(await import(${JSON.stringify(join(testRoot, "..", "ts", "index.ts"))})),
        ...(await import(${JSON.stringify(join(testRoot, "..", "ts", "raw.ts"))})),
        ...(await import(${JSON.stringify(join(testRoot, "..", "ts", "diagnostics.ts"))})),
      };
      const arrow = await import("apache-arrow");
      (() => { lib.CSchema.allocate(); lib.CArray.allocate(); })();
      (() => {
        const exported = lib.exportArray(arrow.vectorFromArray([1, 2], new arrow.Int32()));
        lib.ImportedArray.fromDeviceArray(exported.schema, exported.array); // never disposed
        exported.release();
      })();
      for (let i = 0; i < 500 && (i < 50 || lib.counters().live_owners > 0 || lib.counters().live_array_exports > 0); i++) { Bun.gc(true); await Bun.sleep(2); }
      const c = lib.counters();
      console.log(JSON.stringify({ owners: c.live_owners, exports: c.live_array_exports }));
    `;
    const run = Bun.spawnSync([process.execPath, "-e", script], { cwd: join(testRoot, ".."), env: { ...process.env, ARROW_DEVICE_DEBUG: "1" } });
    const stderr = run.stderr.toString();
    expect(stderr).toContain("owned ArrowSchema was garbage-collected without dispose()");
    expect(stderr).toContain("owned ArrowArray was garbage-collected without dispose()");
    expect(stderr).toContain("ImportedArray was garbage-collected without dispose()");
    // The GC released the import's memory all the same (views hold it natively).
    expect(JSON.parse(run.stdout.toString())).toEqual({ owners: 0, exports: 0 });
  });
});
