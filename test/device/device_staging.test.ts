/**
 * Batches larger than one pinned staging block (zig/device/staging.zig)
 * travel through the pool in block-sized chunks, both ways: one copy per
 * chunk, byte-exact results, and the blocks back in the pool afterwards.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { makeVector, vectorFromArray, Utf8 } from "apache-arrow";
import { fake, expectFakesSettled, isFake, stagingPool } from "../helpers/device.ts";
import { ImportedArray } from "../../ts/raw.ts";
import { toDevice, type DeviceKind } from "../../ts/device.ts";
import { expectSettled } from "../helpers/settled.ts";

if (!isFake) throw new Error("test/device/device_staging.test.ts needs the fake drivers");

const kinds: DeviceKind[] = ["cuda", "rocm"];

afterEach(async () => {
  const left = await expectSettled();
  for (const kind of kinds) stagingPool(kind, true);
  expectFakesSettled(kinds, left);
});

for (const kind of kinds) {
  describe(`${kind} (fake driver): batches larger than a staging block`, () => {
    test("go to the device and back in block-sized chunks through two blocks, byte for byte", () => {
      const d = fake(kind);
      stagingPool(kind, true);
      const blockBytes = stagingPool(kind).blockBytes;
      // Two and a quarter blocks of one buffer: three chunks.
      const values = new Float64Array((blockBytes * 2 + blockBytes / 4) / 8);
      for (let i = 0; i < values.length; i += 1) values[i] = i * 3 + 0.5;
      const before = d.copies();
      const handle = toDevice(makeVector(values), { device: kind });
      d.drain();
      expect(d.copies() - before).toBe(3); // one per chunk, not one pageable copy of the buffer
      expect(stagingPool(kind).blocks).toBe(2);
      expect(d.liveAllocations(1)).toBe(2);
      // The import waits on the batch's one sync_event: the device holds every chunk.
      const imported = ImportedArray.fromDeviceArray(handle.schema, handle.array);
      handle.release();
      const back = d.copies();
      const host = imported.toHost();
      expect(d.copies() - back).toBe(3);
      const data = host.root.buffer(1);
      expect(data.byteLength).toBe(values.byteLength);
      expect(Buffer.compare(Buffer.from(data.buffer, data.byteOffset, data.byteLength), Buffer.from(values.buffer))).toBe(0);
      host.dispose();
      imported.dispose();
      // Both blocks came back to the pool: the next batch reuses them.
      expect(stagingPool(kind).blocks).toBe(2);
      toDevice(makeVector(values.subarray(0, 1024)), { device: kind }).release();
      d.drain();
      expect(stagingPool(kind).blocks).toBe(2);
      expect(stagingPool(kind, true).freed).toBe(2);
      expect(d.liveAllocations(1)).toBe(0);
    });

    test("buffers that straddle chunk boundaries keep their bytes", () => {
      const d = fake(kind);
      stagingPool(kind, true);
      const blockBytes = stagingPool(kind).blockBytes;
      // Three buffers (validity, offsets, characters) of a string column
      // whose characters span a block boundary.
      const count = 1000;
      const piece = "x".repeat(Math.floor(blockBytes / 600) + 7); // about 1.3 blocks of characters
      const strings = Array.from({ length: count }, (_, i) => (i % 5 === 0 ? null : `${i}:${piece}`));
      const vector = vectorFromArray(strings, new Utf8());
      const handle = toDevice(vector, { device: kind });
      d.drain();
      const imported = ImportedArray.fromDeviceArray(handle.schema, handle.array);
      handle.release();
      const host = imported.toHost();
      const expected = new TextEncoder().encode(strings.filter((s) => s !== null).join(""));
      const chars = host.root.buffer(2);
      expect(Buffer.compare(Buffer.from(chars.buffer, chars.byteOffset, chars.byteLength), Buffer.from(expected))).toBe(0);
      expect(host.root.nullCount).toBe(200);
      host.dispose();
      imported.dispose();
      expect(stagingPool(kind).blocks).toBe(2);
    });
  });
}

for (const kind of kinds) {
  describe(`${kind} (fake driver): toHost result memory`, () => {
    test("a released result's memory is reused by the next result of the same size, never while alive", () => {
      const d = fake(kind);
      stagingPool(kind, true); // also frees idle result memory
      // Larger than a range of the memory pool (pool.zig): the result's
      // memory comes from the size classes of host_pool.zig.
      const values = new Float64Array(200_000);
      for (let i = 0; i < values.length; i += 1) values[i] = i;
      const handle = toDevice(makeVector(values), { device: kind });
      d.drain();
      const imported = ImportedArray.fromDeviceArray(handle.schema, handle.array);
      handle.release();
      const first = imported.toHost();
      const second = imported.toHost(); // the first is alive: fresh memory
      const a = first.root.bufferAddress(1);
      const b = second.root.bufferAddress(1);
      expect(b).not.toBe(a);
      first.dispose(); // its memory goes back to the pool
      const third = imported.toHost();
      expect(third.root.bufferAddress(1)).toBe(a);
      for (const host of [second, third]) {
        const data = host.root.buffer(1);
        expect(Buffer.compare(Buffer.from(data.buffer, data.byteOffset, data.byteLength), Buffer.from(values.buffer))).toBe(0);
      }
      second.dispose();
      third.dispose();
      imported.dispose();
    });
  });
}
