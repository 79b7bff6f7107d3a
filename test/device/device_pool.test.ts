/**
 * The memory pool (zig/device/pool.zig): small `toDevice` copies are
 * ranges of shared device blocks, and a block is reused or freed only
 * after every export over it ended, whichever thread ends it, whatever
 * trims meanwhile. `toHost` results of pooled arrays are ranges of pinned
 * blocks, held until the result's release.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { makeVector } from "apache-arrow";
import { fake, expectFakesSettled, isFake, stagingPool } from "../helpers/device.ts";
import { peer } from "../helpers/fixtures.ts";
import { ImportedArray } from "../../ts/raw.ts";
import { deviceRuntime, toDevice, type DeviceKind } from "../../ts/device.ts";
import { counters } from "../helpers/leaks.ts";
import { expectSettled } from "../helpers/settled.ts";

if (!isFake) throw new Error("test/device/device_pool.test.ts needs the fake drivers");

const kinds: DeviceKind[] = ["cuda", "rocm"];

afterEach(async () => {
  peer.peer_reset_counts();
  expectFakesSettled(kinds, await expectSettled());
});

const values = (seed: number) => Float64Array.from({ length: 512 }, (_, i) => seed * 1000 + i);

/** The device address of the values buffer of a toDevice'd Float64 vector. */
function valuesAddress(imported: ImportedArray): number {
  return imported.root.bufferAddress(1);
}

function expectValues(imported: ImportedArray, seed: number) {
  using host = imported.toHost();
  const data = host.root.buffer(1);
  expect(Array.from(new Float64Array(data.buffer, data.byteOffset, data.byteLength / 8))).toEqual(Array.from(values(seed)));
}

for (const kind of kinds) {
  describe(`${kind} (fake driver): the device memory pool`, () => {
    test("exports share one block; a trim while any lives frees nothing under it; the last release empties it", () => {
      const d = fake(kind);
      stagingPool(kind, true);
      const handles = [0, 1, 2].map((seed) => toDevice(makeVector(values(seed)), { device: kind }));
      d.drain();
      expect(stagingPool(kind).poolDeviceBlocks).toBe(1);
      expect(counters().live_device_allocations).toBe(3); // one range per export
      const imports = handles.map((h) => ImportedArray.fromDeviceArray(h.schema, h.array));
      for (const h of handles) h.release(); // the imports hold the exports
      const addresses = imports.map(valuesAddress);
      // Ranges of one block, one after the other.
      expect(addresses[1] - addresses[0]).toBe(addresses[2] - addresses[1]);
      expect(addresses[2] - addresses[0]).toBeLessThan(stagingPool(kind).poolBlockBytes);
      imports[0].dispose();
      imports[1].dispose();
      expect(stagingPool(kind, true).poolDeviceBlocks).toBe(1);
      expect(stagingPool(kind).poolDeviceBlocks).toBe(1); // the trim freed no block with a live range
      expect(d.rawLiveAllocations(0)).toBe(1);
      expectValues(imports[2], 2); // its bytes are intact on the device
      imports[2].dispose();
      expect(counters().live_device_allocations).toBe(0);
      expect(stagingPool(kind, true).poolFreed).toBeGreaterThanOrEqual(1);
      expect(d.rawLiveAllocations(0)).toBe(0);
    });

    test("an empty block is reused from its start, and not before it is empty", () => {
      stagingPool(kind, true);
      const first = toDevice(makeVector(values(1)), { device: kind });
      const a = ImportedArray.fromDeviceArray(first.schema, first.array);
      first.release();
      const second = toDevice(makeVector(values(2)), { device: kind });
      const b = ImportedArray.fromDeviceArray(second.schema, second.array);
      second.release();
      const start = valuesAddress(a);
      expect(valuesAddress(b)).not.toBe(start);
      a.dispose(); // the block still has b's range: a's bytes are not handed out again
      const third = toDevice(makeVector(values(3)), { device: kind });
      const c = ImportedArray.fromDeviceArray(third.schema, third.array);
      third.release();
      expect(valuesAddress(c)).not.toBe(start);
      expectValues(b, 2);
      b.dispose();
      c.dispose(); // now empty
      const fourth = toDevice(makeVector(values(4)), { device: kind });
      const e = ImportedArray.fromDeviceArray(fourth.schema, fourth.array);
      fourth.release();
      expect(valuesAddress(e)).toBe(start);
      expectValues(e, 4);
      e.dispose();
    });

    test("an export released by its consumer on another thread ends its range there; the block is reused afterwards", () => {
      stagingPool(kind, true);
      const handle = toDevice(makeVector(values(5)), { device: kind });
      const probe = ImportedArray.fromDeviceArray(handle.schema, handle.array);
      const start = valuesAddress(probe);
      // Moved back out to a C consumer, which releases it on its own thread.
      probe.dispose();
      const again = toDevice(makeVector(values(6)), { device: kind });
      expect(counters().live_device_allocations).toBe(1);
      peer.peer_intercept_array(again.array);
      const held = peer.peer_take(again.schema, again.array)!;
      again.release(); // moved: nothing left here
      expect(counters().live_device_allocations).toBe(1);
      peer.peer_release_held_on_thread(held);
      expect(peer.peer_intercepted_array_releases()).toBe(1n);
      expect(counters().live_device_allocations).toBe(0);
      const next = toDevice(makeVector(values(7)), { device: kind });
      const n = ImportedArray.fromDeviceArray(next.schema, next.array);
      next.release();
      expect(valuesAddress(n)).toBe(start);
      expectValues(n, 7);
      n.dispose();
    });

    test("an export taken and released by a Worker ends its range on the Worker's thread", async () => {
      stagingPool(kind, true);
      const handle = toDevice(makeVector(values(9)), { device: kind });
      const probe = ImportedArray.fromDeviceArray(handle.schema, handle.array);
      const start = valuesAddress(probe);
      probe.dispose();
      const sent = toDevice(makeVector(values(10)), { device: kind });
      const worker = new Worker(new URL("../fixtures/workers/device_range.ts", import.meta.url));
      try {
        const answer = new Promise<{ values: number[] }>((resolve) => {
          worker.onmessage = (event) => resolve(event.data);
        });
        worker.postMessage({ schema: sent.schema, array: sent.array });
        expect((await answer).values).toEqual(Array.from(values(10)));
      } finally {
        worker.terminate();
      }
      sent.release(); // moved out by the Worker: nothing left here
      expect(counters().live_device_allocations).toBe(0);
      const next = toDevice(makeVector(values(11)), { device: kind });
      const n = ImportedArray.fromDeviceArray(next.schema, next.array);
      next.release();
      expect(valuesAddress(n)).toBe(start); // the block emptied: reused from its start
      n.dispose();
    });

    test("a toHost result of a pooled array lives in a pinned range until its release, past the device array's", () => {
      stagingPool(kind, true);
      const handle = toDevice(makeVector(values(8)), { device: kind });
      const imported = ImportedArray.fromDeviceArray(handle.schema, handle.array);
      handle.release();
      const host = imported.toHost();
      imported.dispose(); // the device range ends; the result is the host's
      expect(counters().live_device_allocations).toBe(0);
      expect(stagingPool(kind, true).poolPinnedBlocks).toBe(1); // the result's block survives the trim
      expect(stagingPool(kind).poolPinnedBlocks).toBe(1);
      const data = host.root.buffer(1);
      expect(Array.from(new Float64Array(data.buffer, data.byteOffset, data.byteLength / 8))).toEqual(Array.from(values(8)));
      host.dispose();
      expect(stagingPool(kind, true).poolPinnedBlocks).toBe(1); // counted before this trim
      expect(stagingPool(kind).poolPinnedBlocks).toBe(0);
    });

    test("a staging range is not handed out again while the copy out of it is queued", () => {
      const d = fake(kind);
      stagingPool(kind, true);
      const stale = d.staleSources();
      d.pause(true); // no copy runs until resumed
      const handles = [1, 2, 3].map((seed) => toDevice(makeVector(values(seed)), { device: kind }));
      d.pause(false);
      d.drain();
      // The fake hashes a pinned source at the call and again when the
      // copy reads it: no batch's bytes were overwritten by the next one.
      expect(d.staleSources()).toBe(stale);
      const imports = handles.map((h) => ImportedArray.fromDeviceArray(h.schema, h.array));
      for (const h of handles) h.release();
      imports.forEach((imported, i) => expectValues(imported, i + 1));
      for (const imported of imports) imported.dispose();
    });

    test("a completed copy's event is kept for the next copy, never a live one; a trim destroys the kept ones", () => {
      const d = fake(kind);
      stagingPool(kind, true);
      const first = toDevice(makeVector(values(1)), { device: kind });
      const second = toDevice(makeVector(values(2)), { device: kind }); // the first's event is live: a new one
      expect(d.liveEvents()).toBe(2);
      expect(stagingPool(kind).cachedEvents).toBe(0);
      first.release(); // waits for its event, then keeps it
      expect(stagingPool(kind).cachedEvents).toBe(1);
      expect(counters().live_device_events).toBe(1);
      d.resetCalls();
      const third = toDevice(makeVector(values(3)), { device: kind });
      expect(Object.keys(d.calls()).filter((name) => /EventCreate/.test(name))).toEqual([]);
      expect(stagingPool(kind).cachedEvents).toBe(0);
      const imported = ImportedArray.fromDeviceArray(third.schema, third.array);
      third.release();
      expectValues(imported, 3); // waits on the reused event, recorded after this copy
      imported.dispose();
      second.release();
      expect(stagingPool(kind).cachedEvents).toBe(2);
      expect(d.rawLiveEvents()).toBe(2);
      stagingPool(kind, true);
      expect(d.rawLiveEvents()).toBe(0);
    });

    test("batches larger than a pool range get their own allocation", () => {
      stagingPool(kind, true);
      const big = new Float64Array(200_000); // 1.6 MB
      const handle = toDevice(makeVector(big), { device: kind });
      fake(kind).drain();
      expect(stagingPool(kind).poolDeviceBlocks).toBe(0);
      expect(fake(kind).rawLiveAllocations(0)).toBe(1);
      handle.release();
      expect(fake(kind).rawLiveAllocations(0)).toBe(0);
    });
  });
}

describe("cuda (fake driver): the idle limit", () => {
  test("an empty block left idle past 5 s is freed by the pool's next request", async () => {
    const kind: DeviceKind = "cuda";
    stagingPool(kind, true);
    toDevice(makeVector(values(1)), { device: kind }).release();
    fake(kind).drain();
    expect(stagingPool(kind).poolDeviceBlocks).toBe(1);
    const d = fake(kind);
    // Within the limit the empty block is taken again: no allocation.
    d.resetCalls();
    toDevice(makeVector(values(1)), { device: kind }).release();
    d.drain();
    expect(d.calls().cuMemAlloc_v2 ?? 0).toBe(0);
    await Bun.sleep(5_200);
    d.resetCalls();
    const handle = toDevice(makeVector(values(2)), { device: kind }); // takes a fresh block; the idle one goes
    d.drain();
    expect(d.calls().cuMemFree_v2).toBe(1);
    expect(d.calls().cuMemAlloc_v2).toBe(1);
    expect(stagingPool(kind).poolDeviceBlocks).toBe(1);
    expect(fake(kind).rawLiveAllocations(0)).toBe(1);
    handle.release();
  }, 20_000);
});

for (const kind of kinds) {
  describe(`${kind} (fake driver): DeviceRuntime.memoryPool()`, () => {
    test("reports the blocks held, their high-water mark and live ranges; a trim frees only idle blocks", () => {
      const runtime = deviceRuntime(kind);
      runtime.memoryPool({ trim: true });
      const before = runtime.memoryPool();
      expect(before.deviceBlocks).toBe(0);
      expect(before.blockBytes).toBe(stagingPool(kind).poolBlockBytes);
      const handle = toDevice(makeVector(values(7)), { device: kind });
      fake(kind).drain();
      const held = runtime.memoryPool();
      expect(held.deviceBlocks).toBe(1);
      expect(held.liveDeviceRanges).toBe(1);
      expect(held.deviceHighWater).toBeGreaterThanOrEqual(1);
      runtime.memoryPool({ trim: true }); // frees idle pinned blocks, not the device block of a live range
      expect(runtime.memoryPool().deviceBlocks).toBe(1);
      handle.release();
      expect(runtime.memoryPool().liveDeviceRanges).toBe(0);
      expect(runtime.memoryPool({ trim: true }).freedBlocks).toBeGreaterThanOrEqual(1);
      const after = runtime.memoryPool();
      expect(after.deviceBlocks).toBe(0);
      expect(after.deviceHighWater).toBeGreaterThanOrEqual(1); // the mark stays
    });

    test("bad options are typed errors before any native call", () => {
      const runtime = deviceRuntime(kind);
      for (const bad of [null, 1, "yes", [], new Uint8Array(1)]) {
        expect(() => runtime.memoryPool(bad as never)).toThrow(expect.objectContaining({ code: "invalid_argument" }));
      }
      expect(() => runtime.memoryPool({ trim: 1 as never })).toThrow(/options\.trim/);
      expect(() => runtime.memoryPool({ nope: true } as never)).toThrow(expect.objectContaining({ code: "invalid_argument" }));
    });
  });
}
