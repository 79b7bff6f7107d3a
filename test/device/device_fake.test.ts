/**
 * Device behaviour that needs the fake drivers' knobs: the copy engine held
 * to prove that skipping a wait reads stale data, device memory that
 * crashes on any host read (PROT_NONE), a C producer's device arrays,
 * exact-once frees, injected failures that leak nothing, and the calling
 * thread's driver state left as it was.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { ptr, read } from "bun:ffi";
import { makeVector, vectorFromArray, Utf8 } from "apache-arrow";
import { fake, fakeCudaExtras, fakeHipExtras, expectFakesSettled, isFake, stagingPool } from "../helpers/device.ts";
import { peer } from "../helpers/fixtures.ts";
import { collectUntil } from "../helpers/gc.ts";
import { native } from "../../ts/core/ffi/library.ts";
import { DeviceType, type ExportedArray } from "../../ts/index.ts";
import { structPointer, ImportedArray } from "../../ts/raw.ts";
import { consumeNatively } from "../helpers/native_consumer.ts";
import { copyArrayToDevice, deviceRuntime, toDevice, wrapDeviceMemory, type DeviceKind } from "../../ts/device.ts";
import { exportRawArray } from "../../ts/raw.ts";
import { drainReleased } from "../../ts/diagnostics.ts";
import { counters } from "../helpers/leaks.ts";
import { withCode } from "../helpers/errors.ts";
import { expectSettled } from "../helpers/settled.ts";

if (!isFake) throw new Error("test/device/device_fake.test.ts needs the fake drivers; scripts/gpu-suite.sh does not run it");

const kinds: DeviceKind[] = ["cuda", "rocm"];

afterEach(async () => {
  for (const kind of kinds) {
    fake(kind).injectClear();
    fake(kind).pause(false);
  }
  peer.peer_reset_counts();
  expectFakesSettled(kinds, await expectSettled());
});

/** Driver call names and error codes, per runtime. */
const driver = {
  cuda: {
    alloc: "cuMemAlloc_v2", h2d: "cuMemcpyHtoDAsync_v2", d2h: "cuMemcpyDtoHAsync_v2", eventCreate: "cuEventCreate",
    oom: 2, oomName: "CUDA_ERROR_OUT_OF_MEMORY", illegal: 700, illegalName: "CUDA_ERROR_ILLEGAL_ADDRESS",
    device: DeviceType.CUDA, pinned: DeviceType.CUDA_HOST,
  },
  rocm: {
    alloc: "hipMalloc", h2d: "hipMemcpyAsync", d2h: "hipMemcpyAsync", eventCreate: "hipEventCreateWithFlags",
    oom: 2, oomName: "hipErrorOutOfMemory", illegal: 700, illegalName: "hipErrorIllegalAddress",
    device: DeviceType.ROCM, pinned: DeviceType.ROCM_HOST,
  },
} as const;

const pattern = (n: number, seed = 1) => Uint8Array.from({ length: n }, (_, i) => (i * 13 + seed) & 0xff);

/** A C producer's struct<ints, names> array, moved into JS-owned slots. */
function produce(kind: DeviceKind, options: { device?: number; memory?: number; length?: number; withEvent?: boolean } = {}) {
  const slot = native.abd_alloc_zeroed(72 + 128)!;
  const step = fake(kind).produce(options.device ?? 0, options.memory ?? 0, options.length ?? 100, options.withEvent ?? true, slot as never, (slot + 72) as never);
  if (step !== 0) throw new Error(`fake ${kind} producer failed at step ${step}`);
  return { schema: structPointer("ArrowSchema", slot), array: structPointer("ArrowDeviceArray", slot + 72), free: () => native.abd_free(slot as never) };
}

function expectedInts(length: number) {
  return Array.from({ length }, (_, i) => (i % 5 === 3 ? null : i * 7));
}

function expectedNames(length: number) {
  return Array.from({ length }, (_, i) => (i % 4 === 1 ? null : `name-${i}`));
}

function readInts(imported: ImportedArray): (number | null)[] {
  const node = imported.root.child(0);
  const values = node.buffer(1) as Int32Array;
  const validity = node.bufferAddress(0) ? (node.buffer(0) as Uint8Array) : null;
  return Array.from({ length: node.length }, (_, i) => (validity && !(validity[i >> 3] & (1 << (i & 7))) ? null : values[i]));
}

function readNames(imported: ImportedArray): (string | null)[] {
  const node = imported.root.child(1);
  const offsets = node.buffer(1) as Int32Array;
  const bytes = node.buffer(2) as Uint8Array;
  const validity = node.buffer(0) as Uint8Array;
  const decoder = new TextDecoder();
  return Array.from({ length: node.length }, (_, i) => (!(validity[i >> 3] & (1 << (i & 7))) ? null : decoder.decode(bytes.subarray(offsets[i], offsets[i + 1]))));
}

for (const kind of kinds) {
  const d = driver[kind];
  const rt = () => deviceRuntime(kind);

  describe(`${kind} (fake driver): events must be waited on`, () => {
    test("a device-to-host copy read before its event fired is stale; after waiting it is right", () => {
      using stream = rt().createStream();
      using event = rt().createEvent();
      using memory = rt().allocate(4096);
      const data = pattern(4096, 3);
      const back = new Uint8Array(4096).fill(0xee);
      fake(kind).pause(true);
      rt().copy("host_to_device", memory, data, undefined, { stream });
      rt().copy("device_to_host", back, memory, undefined, { stream });
      event.record(stream);
      // Skipping the wait: the host sees what was there before.
      expect(event.query()).toBe(false);
      expect(back.every((b) => b === 0xee)).toBe(true);
      expect(back).not.toEqual(data);
      fake(kind).pause(false);
      event.synchronize();
      expect(back).toEqual(data);
    });

    test("toDevice returns before the copies land: device memory is stale until sync_event fires", () => {
      const values = Int32Array.from({ length: 256 }, (_, i) => i * 3 + 1);
      fake(kind).pause(true);
      const handle = toDevice(makeVector(values), { device: kind });
      const imported = ImportedArray.fromDeviceArray(handle.schema, handle.array); // opaque: no wait, no read
      handle.release();
      const address = imported.root.bufferAddress(1);
      // A consumer that ignored sync_event would read the device's old bytes.
      expect(fake(kind).peek(address, 16)).toEqual(new Uint8Array(16).fill(0xa5));
      // The JS source was packed into a pinned staging block by the host: it is let go at once.
      expect(counters().js_retained_exports).toBe(0);
      fake(kind).resumeAfterMs(30);
      const host = imported.toHost(); // waits on sync_event, then copies
      expect(host.root.buffer(1)).toEqual(values);
      expect(new Int32Array(fake(kind).peek(address, 1024).buffer)).toEqual(values);
      host.dispose();
      imported.dispose();
    });

    test("host-visible device memory is read only after its event: import waits", () => {
      fake(kind).pause(true);
      const produced = produce(kind, { memory: 1, length: 50 });
      // The producer's copies have not run: its pinned memory is stale, so
      // a consumer that skipped sync_event would read garbage.
      const ints = read.ptr(read.ptr(read.ptr(produced.array as never, 48) as never, 0) as never, 40); // children[0]
      const valuesAddress = read.ptr(ints as never, 8); // buffers[1]
      expect(fake(kind).peek(valuesAddress, 8)).toEqual(new Uint8Array(8).fill(0xa5));
      fake(kind).resumeAfterMs(30);
      const imported = ImportedArray.fromDeviceArray(produced.schema, produced.array); // waits on the event
      produced.free();
      expect(imported.deviceType).toBe(d.pinned);
      expect(imported.hostReadable).toBe(true);
      expect(readInts(imported)).toEqual(expectedInts(50));
      expect(readNames(imported)).toEqual(expectedNames(50));
      imported.dispose();
    });
  });

  describe(`${kind} (fake driver): device memory is never read by the host`, () => {
    test("a C producer's device array imports as opaque at every validation level", () => {
      for (const validation of ["none", "minimal", "default", "full"] as const) {
        const produced = produce(kind, { length: 40 });
        peer.peer_intercept_array(produced.array as never);
        const imported = ImportedArray.fromDeviceArray(produced.schema, produced.array, { validation });
        produced.free();
        expect(imported.deviceType).toBe(d.device);
        expect(imported.hostReadable).toBe(false);
        const description = imported.root.describe() as { children: { buffers: { size: number }[] }[] };
        expect(description.children[1].buffers.map((b) => b.size)).toEqual([5, 41 * 4, -1]);
        expect(() => imported.root.child(0).buffer(1)).toThrow(withCode("unsupported"));
        imported.dispose();
        expect(peer.peer_intercepted_array_releases()).toBe(BigInt(["none", "minimal", "default", "full"].indexOf(validation) + 1));
      }
      expect(fake(kind).producedLive()).toBe(0);
    });

    test("the native consumer reports device buffers without checksumming them", () => {
      const produced = produce(kind, { length: 10 });
      const report = consumeNatively(produced.schema as never, produced.array as never);
      produced.free();
      expect(report.filter((b) => b.address !== 0).every((b) => b.checksum === -1)).toBe(true);
      expect(fake(kind).producedLive()).toBe(0);
    });

    test("toHost of a C producer's array: waits, sizes the strings, copies, frees nothing early", () => {
      const produced = produce(kind, { length: 1000, device: 1 });
      const imported = ImportedArray.fromDeviceArray(produced.schema, produced.array);
      produced.free();
      expect(imported.deviceId).toBe(1);
      fake(kind).drain(); // the producer's own copies, out of the count
      const copies = fake(kind).copies();
      const host = imported.toHost();
      // One batch of probes (the last offset), then one copy per buffer.
      expect(fake(kind).copies() - copies).toBe(1 + 5);
      expect(readInts(host)).toEqual(expectedInts(1000));
      expect(readNames(host)).toEqual(expectedNames(1000));
      imported.dispose();
      expect(fake(kind).producedLive()).toBe(0); // the producer's release ran
      expect(readNames(host)).toEqual(expectedNames(1000)); // the host copy is independent
      host.dispose();
    });

    test("a producer without sync_event (data ready) is copied the same way", () => {
      const produced = produce(kind, { length: 30, withEvent: false });
      const imported = ImportedArray.fromDeviceArray(produced.schema, produced.array);
      produced.free();
      expect(imported.syncEvent).toBe(0);
      const host = imported.toHost();
      expect(readNames(host)).toEqual(expectedNames(30));
      host.dispose();
      imported.dispose();
    });

    test("copying a device array to a device again is refused, and it is still released", () => {
      const produced = produce(kind, { length: 5 });
      expect(() => copyArrayToDevice(produced.schema, produced.array, { device: kind })).toThrow(withCode("invalid_argument"));
      expect(() => copyArrayToDevice(produced.schema, produced.array, { device: kind })).toThrow("released");
      produced.free();
      expect(fake(kind).producedLive()).toBe(0);
    });
  });

  describe(`${kind} (fake driver): lifetimes`, () => {
    test("device memory and the event are freed exactly once, by a release on another thread", () => {
      const handle = toDevice(vectorFromArray(["a", "b", null], new Utf8()), { device: kind });
      peer.peer_intercept_array(handle.array);
      const held = peer.peer_take(handle.schema, handle.array)!;
      handle.release(); // moved: nothing left to release here
      expect(fake(kind).liveAllocations(0)).toBe(1);
      expect(fake(kind).liveEvents()).toBe(1);
      peer.peer_release_held_on_thread(held);
      expect(peer.peer_intercepted_array_releases()).toBe(1n);
      expect(fake(kind).liveAllocations(0)).toBe(0);
      expect(fake(kind).liveEvents()).toBe(0);
      expect(counters().live_device_allocations).toBe(0);
      expect(counters().live_device_events).toBe(0);
    });

    test("the JS source is let go once the copies are done, while the device copy lives on", async () => {
      const handle = toDevice(makeVector(Float64Array.from({ length: 100 }, (_, i) => i)), { device: kind });
      fake(kind).drain();
      expect(await collectUntil(() => counters().js_retained_exports === 0)).toBe(true);
      expect(counters().live_owners).toBe(0);
      expect(counters().live_device_allocations).toBe(1);
      expect(fake(kind).hostFns()).toBeGreaterThan(0);
      handle.release();
    });

    test("a producer's pinned array copied to the device: its release (which calls the driver) runs off the driver's callback thread", async () => {
      const produced = produce(kind, { memory: 1, length: 64 });
      const handle = copyArrayToDevice(produced.schema, produced.array, { device: kind, id: 1 });
      produced.free();
      // The producer's release frees pinned memory through the driver: run
      // from the stream callback itself it would deadlock the fake engine.
      expect(await collectUntil(() => fake(kind).producedLive() === 0)).toBe(true);
      const imported = ImportedArray.fromDeviceArray(handle.schema, handle.array);
      handle.release();
      const host = imported.toHost();
      expect(readInts(host)).toEqual(expectedInts(64));
      expect(readNames(host)).toEqual(expectedNames(64));
      host.dispose();
      imported.dispose();
    });

    test("a vector lands on the requested device and comes back from it", () => {
      const vector = makeVector(Int32Array.from({ length: 10 }, (_, i) => i));
      const handles = toDevice(vector, { device: kind, id: 1 });
      expect(fake(kind).liveAllocationsOn(1)).toBe(1); // the copy
      expect(stagingPool(kind).poolBlocksOn[1]).toBe(2); // the pool's device block, and its pinned one it came through
      expect(fake(kind).liveAllocations(0)).toBe(1);
      expect(fake(kind).liveAllocationsOn(0)).toBe(0);
      const imported = ImportedArray.fromDeviceArray(handles.schema, handles.array);
      handles.release();
      expect(imported.deviceId).toBe(1);
      const host = imported.toHost();
      expect(host.root.buffer(1)).toEqual(Int32Array.from({ length: 10 }, (_, i) => i));
      host.dispose();
      imported.dispose();
    });

    if (kind === "cuda") {
      test("every context pushed is popped; the primary context is retained once per device", () => {
        const handle = toDevice(makeVector(Int32Array.of(1, 2, 3)), { device: kind, id: 1 });
        const imported = ImportedArray.fromDeviceArray(handle.schema, handle.array);
        handle.release();
        imported.toHost().dispose();
        imported.dispose();
        expect(fakeCudaExtras().fake_cuda_context_depth()).toBe(0);
        expect(fakeCudaExtras().fake_cuda_primary_retains(0)).toBe(1);
        expect(fakeCudaExtras().fake_cuda_primary_retains(1)).toBe(1);
      });
    } else {
      test("the thread's current HIP device is restored after every call", () => {
        expect(fakeHipExtras().fake_hip_current_device()).toBe(0);
        const handle = toDevice(makeVector(Int32Array.of(1, 2, 3)), { device: kind, id: 1 });
        const imported = ImportedArray.fromDeviceArray(handle.schema, handle.array);
        handle.release();
        imported.toHost().dispose();
        imported.dispose();
        expect(fakeHipExtras().fake_hip_current_device()).toBe(0);
      });
    }
  });

  describe(`${kind} (fake driver): pinned staging of ordinary host memory`, () => {
    const strings = () => vectorFromArray(Array.from({ length: 100 }, (_, i) => `s${i}`), new Utf8());

    test("a batch of JS memory goes to the device through one range of the pinned pool, in one copy, and comes back in one", () => {
      const d = fake(kind);
      stagingPool(kind, true);
      const before = d.copies();
      const handle = toDevice(strings(), { device: kind });
      d.drain();
      expect(d.copies() - before).toBe(1); // offsets and characters together
      expect(stagingPool(kind)).toMatchObject({ blocks: 0, poolPinnedBlocks: 1, poolDeviceBlocks: 1 });
      expect(d.liveAllocations(1)).toBe(0); // the pool's blocks are the library's
      const imported = ImportedArray.fromDeviceArray(handle.schema, handle.array);
      handle.release();
      const back = d.copies();
      const host = imported.toHost(); // the batch's whole range, in one copy, into the pinned pool
      expect(d.copies() - back).toBe(1);
      expect(host.root.buffer(2)).toEqual(new TextEncoder().encode(Array.from({ length: 100 }, (_, i) => `s${i}`).join("")));
      host.dispose();
      imported.dispose();
      toDevice(strings(), { device: kind }).release();
      d.drain();
      const pool = stagingPool(kind);
      expect(pool).toMatchObject({ blocks: 0, poolPinnedBlocks: 1, poolDeviceBlocks: 1 });
      expect(pool.poolPinnedHighWater).toBeGreaterThanOrEqual(1);
      expect(stagingPool(kind, true).poolFreed).toBe(2);
      expect(d.rawLiveAllocations(0) + d.rawLiveAllocations(1)).toBe(0);
    });

    test("pinned targets and pinned sources are copied from where they are, without a staging block", () => {
      const d = fake(kind);
      stagingPool(kind, true);
      const before = d.copies();
      const pinned = toDevice(strings(), { device: kind, memory: "pinned" });
      d.drain();
      expect(d.copies() - before).toBe(2);
      expect(stagingPool(kind).blocks).toBe(0);
      // A CUDA_HOST / ROCM_HOST array is host-readable: it goes to the device directly.
      const again = copyArrayToDevice(pinned.schema, pinned.array, { device: kind });
      d.drain();
      expect(d.copies() - before).toBe(4);
      expect(stagingPool(kind).blocks).toBe(0);
      again.release();
      pinned.release(); // moved out: nothing left to release
    });

    test("a CPU array over pinned memory (a hostView) goes straight from it, without a staging block", () => {
      const d = fake(kind);
      stagingPool(kind, true);
      using memory = rt().allocate(8 * 64, { memory: "pinned" });
      const values = new Float64Array(memory.hostView().buffer);
      for (let i = 0; i < values.length; i++) values[i] = i * 1.5;
      const before = d.copies();
      const handle = toDevice(makeVector(values), { device: kind });
      d.drain();
      expect(d.copies() - before).toBe(1);
      expect(stagingPool(kind).blocks).toBe(0);
      const imported = ImportedArray.fromDeviceArray(handle.schema, handle.array);
      handle.release();
      const host = imported.toHost();
      expect(host.root.buffer(1)).toEqual(Float64Array.from(values));
      host.dispose();
      imported.dispose();
    });
  });

  describe(`${kind} (fake driver): pinned host memory you hold`, () => {
    const register = kind === "cuda" ? "cuMemHostRegister_v2" : "hipHostRegister";
    const unregister = kind === "cuda" ? "cuMemHostUnregister" : "hipHostUnregister";

    test("registerHost pins a JS buffer, holds it, and unregisters exactly once", () => {
      const d = fake(kind);
      const before = d.registrations();
      const data = pattern(4096);
      const registration = rt().registerHost(data);
      expect(registration.address).toBe(ptr(data));
      expect(registration.view).toBe(data);
      expect(d.liveRegistrations()).toBe(1);
      // Copies to and from it work as with any host memory.
      using memory = rt().allocate(4096);
      rt().copy("host_to_device", memory, data);
      const back = new Uint8Array(4096);
      rt().copy("device_to_host", back, memory);
      expect(back).toEqual(data);
      registration.unregister();
      registration.unregister();
      registration[Symbol.dispose]();
      expect(registration.registered).toBe(false);
      expect(d.liveRegistrations()).toBe(0);
      expect(d.registrations() - before).toBe(1);
    });

    test("registerHost checks its arguments before the driver, and names the driver's refusal", () => {
      const d = fake(kind);
      const before = d.registrations();
      for (const bad of [null, 3, "x", {}, new ArrayBuffer(8), new Uint8Array(0)]) {
        expect(() => rt().registerHost(bad as never)).toThrow(withCode("invalid_argument"));
      }
      for (const id of [1.5, NaN, "0", null, {}]) expect(() => rt().registerHost(new Uint8Array(8), id as never)).toThrow(withCode("invalid_argument"));
      expect(d.registrations()).toBe(before); // nothing reached the driver
      const data = new Uint8Array(64);
      using first = rt().registerHost(data);
      expect(() => rt().registerHost(data)).toThrow(`[${register}]`);
      d.inject(unregister, 713);
      expect(() => first.unregister()).toThrow(`[${unregister}]`);
      expect(first.registered).toBe(false); // never unregistered twice, even after a refusal
      expect(d.liveRegistrations()).toBe(1);
      // The fake still holds the range: undo it through the driver's own knob-free path.
      expect(native.abd_device_host_unregister(kind === "cuda" ? 2 : 10, 0, first.address as never)).toBe(0);
    });

    test("a forgotten registration keeps its buffer alive and is unregistered when collected", async () => {
      const d = fake(kind);
      (() => {
        rt().registerHost(new Float64Array(1024).fill(1));
      })();
      expect(d.liveRegistrations()).toBe(1);
      expect(await collectUntil(() => d.liveRegistrations() === 0)).toBe(true);
    });

    test("pinned memory: its host views are detached by free(), which waits for the exports pointing into it", async () => {
      const d = fake(kind);
      const memory = rt().allocate(64, { memory: "pinned" });
      const view = memory.hostView();
      view.set(pattern(64));
      const exported = exportRawArray({ format: "C", length: 64, buffers: [null, view] }, { deviceType: driver[kind].pinned, deviceId: 0 });
      memory.free();
      expect(view.byteLength).toBe(0); // detached: JS can no longer touch it
      expect(d.liveAllocations(1)).toBe(1); // the export still points into it
      exported.release();
      drainReleased();
      expect(d.liveAllocations(1)).toBe(0);
      memory.free(); // idempotent: freed once
      expect(d.liveAllocations(1)).toBe(0);
    });
  });

  describe(`${kind} (fake driver): every failure is explained and leaks nothing`, () => {
    const source = () => vectorFromArray(Array.from({ length: 100 }, (_, i) => `v${i}`), new Utf8());

    test("allocation failure (the memory pool's block, then the batch's own allocation)", () => {
      stagingPool(kind, true); // no pooled block to take a range of
      for (const message of [withCode("out_of_memory"), `[${d.alloc}][${d.oomName}]`]) {
        fake(kind).inject(d.alloc, d.oom);
        fake(kind).inject(d.alloc, d.oom);
        expect(() => toDevice(source(), { device: kind })).toThrow(message);
      }
      // A failed block allocation alone falls back to the batch's own.
      fake(kind).inject(d.alloc, d.oom);
      toDevice(source(), { device: kind }).release();
      expect(stagingPool(kind).poolDeviceBlocks).toBe(0);
      fake(kind).inject(d.alloc, d.oom);
      expect(() => rt().allocate(64)).toThrow(`[${d.alloc}][${d.oomName}] out of memory: 64 bytes on device 0`);
    });

    test("a copy error in toDevice: the staged batch copy, and halfway through the copies into pinned memory", () => {
      fake(kind).inject(d.h2d, d.illegal, 0); // the batch's one copy out of its staging block
      expect(() => toDevice(source(), { device: kind })).toThrow(withCode("device_error"));
      fake(kind).inject(d.h2d, d.illegal, 1); // pinned targets are copied buffer by buffer: the second fails
      expect(() => toDevice(source(), { device: kind, memory: "pinned" })).toThrow(`[${d.h2d}][${d.illegalName}]`);
      // The staging block came back: the next batch reuses it.
      const blocks = stagingPool(kind).blocks;
      toDevice(source(), { device: kind }).release();
      expect(stagingPool(kind).blocks).toBe(blocks);
    });

    test("event creation failure", () => {
      fake(kind).inject(d.eventCreate, 1);
      expect(() => toDevice(source(), { device: kind })).toThrow(`[${d.eventCreate}]`);
      fake(kind).inject(d.eventCreate, 1);
      expect(() => rt().createEvent()).toThrow(withCode("device_error"));
    });

    test("a copy error in toHost, then a retry that works", () => {
      // A toDevice copy (in one pooled range): its one copy back fails.
      const handle = toDevice(source(), { device: kind });
      const imported = ImportedArray.fromDeviceArray(handle.schema, handle.array);
      handle.release();
      fake(kind).inject(d.d2h, d.illegal, 0);
      expect(() => imported.toHost()).toThrow(`[${d.d2h}][${d.illegalName}]`);
      const host = imported.toHost();
      expect(host.root.length).toBe(100);
      host.dispose();
      imported.dispose();
      // A C producer's array (its own allocations): buffer by buffer.
      const produced = produce(kind, { length: 40 });
      const theirs = ImportedArray.fromDeviceArray(produced.schema, produced.array);
      produced.free();
      fake(kind).inject(d.d2h, d.illegal, 0); // the probe of the last offset
      expect(() => theirs.toHost()).toThrow(`[${d.d2h}][${d.illegalName}]`);
      fake(kind).inject(d.d2h, d.illegal, 2); // a buffer copy
      expect(() => theirs.toHost()).toThrow(withCode("device_error"));
      const copy = theirs.toHost();
      expect(copy.root.length).toBe(40);
      copy.dispose();
      theirs.dispose();
    });

    test("a wrapped array with the wrong buffers is refused before anyone sees it", () => {
      using memory = rt().allocate(64);
      let released = 0;
      expect(() => wrapDeviceMemory({ format: "u", length: 4, buffers: [null, memory] }, { device: kind, id: 0, onRelease: () => released++ })).toThrow(withCode("invalid_layout"));
      drainReleased();
      expect(released).toBe(0);
    });
  });

  describe(`${kind} (fake driver): wrapping memory you own`, () => {
    test("your device pointers and event, your release: called once the consumer is done", () => {
      const values = Int32Array.from({ length: 64 }, (_, i) => i * i);
      const memory = rt().allocate(values.byteLength, { id: 1 });
      const stream = rt().createStream(1);
      const event = rt().createEvent(1);
      rt().copy("host_to_device", memory, values, undefined, { stream });
      event.record(stream);
      let released = 0;
      const handle = wrapDeviceMemory({ format: "i", name: "squares", length: 64, buffers: [null, memory] }, {
        device: kind, id: 1, syncEvent: event, onRelease: () => released++,
      });
      const imported = ImportedArray.fromDeviceArray(handle.schema, handle.array);
      handle.release();
      expect(imported.deviceType).toBe(d.device);
      expect(imported.deviceId).toBe(1);
      expect(imported.syncEvent).toBe(event.address);
      expect(imported.root.name).toBe("squares");
      const host = imported.toHost();
      expect(host.root.buffer(1)).toEqual(values);
      host.dispose();
      drainReleased();
      expect(released).toBe(0); // still imported
      imported.dispose();
      drainReleased();
      expect(released).toBe(1);
      stream.destroy();
      event.destroy();
      memory.free();
    });
  });
}
