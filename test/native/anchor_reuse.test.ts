/**
 * native/owner_stamp.ts: a disposed handle's anchor (the 8-byte
 * ArrayBuffer holding a handle's reference) is armed again by the next
 * handle of its JS thread instead of a new one being made. The re-armed
 * anchor is that handle's safety net as a new one would be (dropped
 * undisposed, the producer's release runs once at collection), and
 * nothing of the disposed handle (its lazily converted batches included)
 * keeps the next handle's memory alive.
 */
import { afterEach, describe, expect, test } from "bun:test";
import type { RecordBatch } from "apache-arrow";
import { importRecordBatch } from "../../ts/index.ts";
import { ImportedArray } from "../../ts/raw.ts";
import { lastAnchorAddress } from "../../ts/native/owner_stamp.ts";
import { counters } from "../helpers/leaks.ts";
import { collectUntil } from "../helpers/gc.ts";
import { disposeProduced, produceDevice, producerClean } from "../helpers/producer.ts";
import { withCode } from "../helpers/errors.ts";
import { expectSettled } from "../helpers/settled.ts";

afterEach(async () => {
  await expectSettled();
});

/** A C-produced struct<a: int32, b: float64> of 3 rows (3 producer nodes). */
function produced() {
  return produceDevice({ format: "+s", length: 3, buffers: [null], children: [
    { format: "i", name: "a", length: 3, buffers: [null, new Int32Array([1, 2, 3])] },
    { format: "g", name: "b", length: 3, buffers: [null, new Float64Array([0.5, 1.5, 2.5])] },
  ] });
}

/** Imports a fresh C batch; its landing structs are freed at once (the
 * import moved the tree out). */
function importFresh(): ImportedArray {
  const p = produced();
  const imported = ImportedArray.fromDeviceArray(p.schema.address, p.array.address);
  disposeProduced(p);
  return imported;
}

describe("a disposed handle's anchor", () => {
  test("is armed again by the next handle, which it still releases once when that handle is dropped undisposed", async () => {
    const before = producerClean();
    const first = importFresh();
    const anchor = lastAnchorAddress();
    first.dispose();
    expect(producerClean().live).toBe(before.live);
    (() => {
      const second = importFresh();
      expect(lastAnchorAddress()).toBe(anchor);
      expect(second.root.child(0).buffer(1)).toEqual(Int32Array.of(1, 2, 3));
      // Dropped without dispose(): only its anchor's deallocator ends it.
    })();
    expect(producerClean().live).toBe(before.live + 3);
    expect(await collectUntil(() => producerClean().live === before.live)).toBe(true);
    expect(producerClean().doubles).toBe(before.doubles);
    expect(counters().live_owners).toBe(0);
    expect(counters().live_imported_views).toBe(0);
    // The next handle gets a new anchor: the collected one went with its ArrayBuffer.
    const third = importFresh();
    expect(lastAnchorAddress()).not.toBe(0);
    third.dispose();
  });

  test("is not kept alive by a batch converted from the disposed handle, so the next handle's memory goes when it is dropped", async () => {
    const before = producerClean();
    const box: { batch: RecordBatch | null } = { batch: null };
    const first = importFresh();
    const anchor = lastAnchorAddress();
    box.batch = importRecordBatch(first); // lazy: links the handle's anchor until dispose
    first.dispose();
    (() => {
      importFresh();
      expect(lastAnchorAddress()).toBe(anchor);
    })();
    expect(producerClean().live).toBe(before.live + 3);
    expect(await collectUntil(() => producerClean().live === before.live)).toBe(true);
    expect(producerClean().doubles).toBe(before.doubles);
    // The disposed handle's batch still refuses reads, and still exists.
    expect(() => box.batch!.getChild("a")!.get(0)).toThrow(withCode("released"));
    box.batch = null;
  });

  test("handles disposed in a row take anchors in turn: each import and dispose releases its producer at once", () => {
    const before = producerClean();
    const anchors = new Set<number>();
    for (let i = 0; i < 50; i++) {
      const imported = importFresh();
      anchors.add(lastAnchorAddress());
      expect(importRecordBatch(imported).getChild("b")!.get(2)).toBe(2.5);
      imported.dispose();
      expect(producerClean().live).toBe(before.live);
    }
    // One disposed at a time: the same anchor each time after the first.
    expect(anchors.size).toBeLessThanOrEqual(2);
    expect(counters().live_imported_views).toBe(0);
  });
});
