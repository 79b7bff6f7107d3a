// The after-each check of the suite (test/helpers/settled.ts) fails on
// what a test leaves, naming it, and lets pass only an import that
// apache-arrow views alone hold (what a stale stack word can keep), with
// the export it holds when it imported this library's own, and the
// fakes' device memory it holds (device test files).
import { expect, test } from "bun:test";
import { tableFromArrays, type RecordBatch } from "apache-arrow";
import { exportArray, importRecordBatch } from "../../ts/index.ts";
import { ImportedArray } from "../../ts/raw.ts";
import { collectUntil } from "../helpers/gc.ts";
import { nonZeroCounters } from "../helpers/leaks.ts";
import { disposeProduced, produceArray, producerClean } from "../helpers/producer.ts";
import { expectSettled } from "../helpers/settled.ts";
import { fakeLeftovers } from "../helpers/fake_leftovers.ts";

const batch = () => tableFromArrays({ id: Int32Array.of(1, 2, 3) }).batches[0]!;

test("an export left live fails the check, which names it", async () => {
  const left = exportArray(batch());
  try {
    await expect(expectSettled({}, { rounds: 3 })).rejects.toThrow(/live_array_exports/);
  } finally {
    left.release();
  }
  await expectSettled();
});

test("a count of `others` above zero fails the check, which names it", async () => {
  await expect(expectSettled({ planted: () => 2n }, { rounds: 2 })).rejects.toThrow(/planted/);
  await expectSettled({ planted: () => 0n }, { rounds: 2 });
});

test("an import that only its views hold passes; its release follows the views", async () => {
  const produced = produceArray({ format: "+s", name: "", length: 3, nullCount: 0, buffers: [null], children: [{ format: "i", name: "x", length: 3, nullCount: 0, buffers: [null, Int32Array.of(4, 5, 6)] }] });
  let held: RecordBatch | null = importRecordBatch(produced.schema.address, produced.array.address, { as: "array" });
  expect([...held.getChildAt(0)!]).toEqual([4, 5, 6]);
  const left = nonZeroCounters();
  expect(left.live_owners).toBe(1);
  expect(left.live_imported_views).toBeGreaterThanOrEqual(1);
  expect(Object.keys(left).sort()).toEqual(["imported_bytes_held", "live_imported_views", "live_owners"]);
  await expectSettled();
  held = null;
  expect(await collectUntil(() => Object.keys(nonZeroCounters()).length === 0, 300)).toBe(true);
  expect(producerClean()).toEqual({ live: 0, doubles: 0 });
  disposeProduced(produced);
});

test("a peer's batch that an import only its views hold holds passes, one per import; more fail, and none passes without such an import", async () => {
  const produced = produceArray({ format: "+s", name: "", length: 3, nullCount: 0, buffers: [null], children: [{ format: "i", name: "x", length: 3, nullCount: 0, buffers: [null, Int32Array.of(4, 5, 6)] }] });
  // Read again after the checks: the batch stays reachable through them.
  const kept: { batch: RecordBatch | null } = { batch: importRecordBatch(produced.schema.address, produced.array.address, { as: "array" }) };
  expect([...kept.batch!.getChildAt(0)!]).toEqual([4, 5, 6]);
  const left = await expectSettled({}, { heldByImports: { peerBatches: () => 1n } });
  expect(left.live_owners).toBe(1);
  await expect(expectSettled({}, { rounds: 3, heldByImports: { peerBatches: () => 2n } })).rejects.toThrow(/peerBatches/);
  expect(kept.batch!.numRows).toBe(3);
  kept.batch = null;
  expect(await collectUntil(() => Object.keys(nonZeroCounters()).length === 0, 300)).toBe(true);
  await expect(expectSettled({}, { rounds: 3, heldByImports: { peerBatches: () => 1n } })).rejects.toThrow(/peerBatches/);
  disposeProduced(produced);
});

test("an import of the library's own export that only its views hold passes with that export; more exports than imports fail", async () => {
  const exported = exportArray(batch());
  const imported = ImportedArray.fromDeviceArray(exported.schema, exported.array);
  let held: RecordBatch | null = importRecordBatch(imported);
  imported.releaseToGC();
  exported.release(); // the slot: its structs were moved into the import
  expect([...held.getChildAt(0)!]).toEqual([1, 2, 3]);
  const left = nonZeroCounters();
  expect(left.live_owners).toBe(1);
  expect(left.live_array_exports).toBe(1);
  await expectSettled();
  // Two exports for one import: not what one import can hold.
  const extra = exportArray(batch());
  try {
    await expect(expectSettled({}, { rounds: 3 })).rejects.toThrow(/live_array_exports/);
  } finally {
    extra.release();
  }
  held = null;
  expect(await collectUntil(() => Object.keys(nonZeroCounters()).length === 0, 300)).toBe(true);
});

test("the fakes may hold only what the imports that views alone hold can hold", () => {
  // Nothing was left to views: any count of a fake is a leak.
  expect(fakeLeftovers({ cuda: { pinned: 1 } }, {})).toEqual({ "cuda.pinned": 1 });
  // One view-held import: its producer's host-visible batch (memory,
  // events, streams), and device memory as the library's own.
  const left = { live_owners: 1, live_imported_views: 1, live_device_allocations: 1 };
  expect(fakeLeftovers({ cuda: { pinned: 10, events: 2, streams: 2, produced: 1 } }, left)).toEqual({});
  expect(fakeLeftovers({ cuda: { device: 2, registrations: 1 } }, left)).toEqual({ "cuda.device": 1, "cuda.registrations": 1 });
  // The device allowance is one for every kind together.
  expect(fakeLeftovers({ cuda: { device: 1 }, rocm: { device: 1 } }, left)).toEqual({ "rocm.device": 1 });
});
