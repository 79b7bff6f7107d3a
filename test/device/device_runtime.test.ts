/**
 * The device runtimes from TypeScript, under each runtime: availability,
 * device listing, memory of every kind, copies in every direction (sync
 * and on a stream), events, streams, pointer queries, multi-device ids,
 * and moving arrays to a device and back. Shared with
 * scripts/gpu-suite.sh: fake-only assertions check `isFake`.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { ptr } from "bun:ffi";
import { makeVector, vectorFromArray, Float64, Utf8 } from "apache-arrow";
import { deviceKinds, fake, expectFakesSettled, isFake } from "../helpers/device.ts";
import { DeviceType, exportArray } from "../../ts/index.ts";
import { InvalidArgumentError } from "../../ts/core/errors.ts";
import { ImportedArray } from "../../ts/raw.ts";
import { counters } from "../helpers/leaks.ts";
import { deviceAvailability, deviceRuntime, toDevice, toHost, type DeviceKind } from "../../ts/device.ts";
import { withCode } from "../helpers/errors.ts";
import { expectSettled } from "../helpers/settled.ts";

afterEach(async () => {
  expectFakesSettled(deviceKinds, await expectSettled());
});

const pattern = (n: number, seed = 1) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff);

for (const kind of deviceKinds) {
  const rt = () => deviceRuntime(kind);
  const types = kind === "cuda"
    ? { device: DeviceType.CUDA, pinned: DeviceType.CUDA_HOST, managed: DeviceType.CUDA_MANAGED }
    : { device: DeviceType.ROCM, pinned: DeviceType.ROCM_HOST };

  describe(`${kind} runtime`, () => {
    test("is available and says which library and version it loaded", () => {
      const availability = deviceAvailability(kind);
      expect(availability.available).toBe(true);
      if (!availability.available) return;
      expect(availability.deviceCount).toBeGreaterThan(0);
      expect(availability.version).toBeGreaterThan(0);
      if (isFake) expect(availability.library).toContain(kind === "cuda" ? "libfake_cuda.so" : "libfake_hip.so");
      expect(rt().deviceCount).toBe(availability.deviceCount);
    });

    test("lists its devices with ordinal, name and memory", () => {
      const devices = rt().devices();
      expect(devices).toHaveLength(rt().deviceCount);
      devices.forEach((device, i) => {
        expect(device.kind).toBe(kind);
        expect(device.id).toBe(i);
        expect(device.name.length).toBeGreaterThan(0);
        expect(device.totalMemoryBytes).toBeGreaterThan(0);
      });
      if (isFake) {
        expect(devices.map((d) => d.name)).toEqual(kind === "cuda" ? ["Fake CUDA Device 0", "Fake CUDA Device 1"] : ["Fake AMD Instinct 0", "Fake AMD Instinct 1"]);
        expect(devices[1].totalMemoryBytes).toBe((kind === "cuda" ? 17 : 65) * 2 ** 30);
      }
    });

    test("a device ordinal out of range is an InvalidArgumentError that gives the count", () => {
      const count = rt().deviceCount;
      expect(() => rt().allocate(64, { id: count })).toThrow(withCode("invalid_argument"));
      expect(() => rt().allocate(64, { id: count })).toThrow(`${kind === "cuda" ? "CUDA" : "ROCm"} device ${count} does not exist`);
      expect(() => rt().device(-1)).toThrow("does not exist");
    });

    test("device memory: allocated, copied both ways synchronously, freed once", () => {
      const before = counters().live_device_allocations;
      const memory = rt().allocate(4096);
      expect(memory.deviceType).toBe(types.device);
      expect(counters().live_device_allocations).toBe(before + 1);
      if (isFake) expect(fake(kind).liveAllocations(0)).toBe(1);
      const data = pattern(4096);
      rt().copy("host_to_device", memory, data);
      const back = new Uint8Array(4096);
      rt().copy("device_to_host", back, memory);
      expect(back).toEqual(data);
      expect(() => memory.hostView()).toThrow("cannot be read by the host");
      memory.free();
      memory.free(); // idempotent
      expect(counters().live_device_allocations).toBe(before);
    });

    test("device to device copies, and a copy larger than an operand is refused", () => {
      using a = rt().allocate(1000);
      using b = rt().allocate(1000);
      rt().copy("host_to_device", a, pattern(1000, 7));
      rt().copy("device_to_device", b, a);
      const back = new Uint8Array(1000);
      rt().copy("device_to_host", back, b);
      expect(back).toEqual(pattern(1000, 7));
      expect(() => rt().copy("device_to_host", new Uint8Array(10), b, 20)).toThrow("overruns");
    });

    test("pinned memory is host-readable and classified as such", () => {
      using pinned = rt().allocate(256, { memory: "pinned" });
      expect(pinned.deviceType).toBe(types.pinned);
      using device = rt().allocate(256);
      rt().copy("host_to_device", device, pattern(256, 3));
      rt().copy("device_to_host", pinned, device);
      const view = pinned.hostView();
      expect(view).toEqual(pattern(256, 3));
      expect(rt().pointerInfo(pinned.address)).toEqual({ memory: "pinned", deviceType: types.pinned, deviceId: 0 });
      pinned.free();
      expect(view.byteLength).toBe(0); // detached by free(), never a dangling view
      expect(rt().pointerInfo(device.address)).toEqual({ memory: "device", deviceType: types.device, deviceId: 0 });
      const host = new Uint8Array(64);
      void host.buffer;
      expect(rt().pointerInfo(ptr(host))).toEqual({ memory: "host", deviceType: DeviceType.CPU, deviceId: -1 });
    });

    if (kind === "cuda") {
      test("managed memory is CUDA_MANAGED and host-readable after synchronizing", () => {
        using managed = rt().allocate(128, { memory: "managed" });
        expect(managed.deviceType).toBe(DeviceType.CUDA_MANAGED);
        rt().copy("host_to_device", managed, pattern(128, 9));
        expect(managed.hostView()).toEqual(pattern(128, 9));
        expect(rt().pointerInfo(managed.address).memory).toBe("managed");
      });
    } else {
      test("managed memory has no ROCm device type: refused with the reason", () => {
        expect(() => rt().allocate(128, { memory: "managed" })).toThrow("no Arrow device type");
      });
    }

    test("copies on a stream complete by the event recorded after them", () => {
      using stream = rt().createStream(0);
      using event = rt().createEvent(0);
      using memory = rt().allocate(1 << 16);
      const data = pattern(1 << 16, 5);
      const back = new Uint8Array(1 << 16);
      rt().copy("host_to_device", memory, data, undefined, { stream });
      rt().copy("device_to_host", back, memory, undefined, { stream });
      event.record(stream);
      event.synchronize();
      expect(event.query()).toBe(true);
      expect(back).toEqual(data);
      stream.synchronize();
    });

    test("a stream waits on another stream's event", () => {
      using producer = rt().createStream(0);
      using consumer = rt().createStream(0);
      using ready = rt().createEvent(0);
      using memory = rt().allocate(4096);
      const back = new Uint8Array(4096);
      rt().copy("host_to_device", memory, pattern(4096, 11), undefined, { stream: producer });
      ready.record(producer);
      consumer.waitEvent(ready);
      rt().copy("device_to_host", back, memory, undefined, { stream: consumer });
      consumer.synchronize();
      expect(back).toEqual(pattern(4096, 11));
    });

    test("allocations, streams and events on another device carry its id", () => {
      const id = rt().deviceCount > 1 ? 1 : 0;
      using memory = rt().allocate(512, { id });
      using stream = rt().createStream(id);
      using event = rt().createEvent(id);
      expect(memory.deviceId).toBe(id);
      expect(rt().pointerInfo(memory.address).deviceId).toBe(id);
      if (isFake) {
        expect(rt().deviceCount).toBe(2);
        expect(fake(kind).liveAllocationsOn(1)).toBe(1);
        expect(fake(kind).liveAllocationsOn(0)).toBe(0);
      }
      rt().copy("host_to_device", memory, pattern(512, 2), undefined, { stream });
      event.record(stream);
      event.synchronize();
      const back = new Uint8Array(512);
      rt().copy("device_to_host", back, memory);
      expect(back).toEqual(pattern(512, 2));
    });

    test("toDevice: a vector becomes an owned device array; its release frees memory and event", () => {
      const before = counters();
      const vector = vectorFromArray(Array.from({ length: 1000 }, (_, i) => (i % 7 === 0 ? null : `s${i}`)), new Utf8());
      const handle = toDevice(vector, { device: kind, id: 0 });
      const after = counters();
      expect(after.live_device_allocations).toBe(before.live_device_allocations + 1);
      expect(after.live_device_events).toBe(before.live_device_events + 1);
      const imported = ImportedArray.fromDeviceArray(handle.schema, handle.array);
      handle.release();
      expect(imported.deviceType).toBe(types.device);
      expect(imported.root.bufferSize(2)).toBe(-1); // value bytes: only the device knows
      const host = toHost(imported);
      const used = (vector.data[0].valueOffsets as Int32Array)[1000]; // apache-arrow pads its buffer
      expect(host.root.bufferSize(2)).toBe(used);
      expect(new TextDecoder().decode(host.root.buffer(2) as Uint8Array)).toBe(new TextDecoder().decode(vector.data[0].values.subarray(0, used)));
      host.dispose();
      imported.dispose();
      expect(counters().live_device_allocations).toBe(before.live_device_allocations);
      expect(counters().live_device_events).toBe(before.live_device_events);
    });

    test("toDevice into pinned memory gives a host-readable array that becomes a zero-copy view", () => {
      const values = Float64Array.from({ length: 300 }, (_, i) => i / 3);
      const handle = toDevice(makeVector(values), { device: kind, memory: "pinned" });
      const imported = ImportedArray.fromDeviceArray(handle.schema, handle.array);
      handle.release();
      expect(imported.deviceType).toBe(types.pinned);
      expect(imported.hostReadable).toBe(true); // waited on the event at import
      expect(imported.root.buffer(1)).toEqual(values);
      const view = imported.toHost();
      expect(view.deviceType).toBe(DeviceType.CPU);
      expect(view.root.bufferAddress(1)).toBe(imported.root.bufferAddress(1)); // same memory
      imported.dispose();
      expect(view.root.buffer(1)).toEqual(values); // the view keeps it alive
      view.dispose();
    });

    test("toDevice on a caller's stream records the event on that stream", () => {
      using stream = rt().createStream(0);
      const vector = vectorFromArray([1.5, null, 3.5], new Float64());
      const handle = toDevice(vector, { device: kind, stream });
      const imported = ImportedArray.fromDeviceArray(handle.schema, handle.array);
      handle.release();
      const host = imported.toHost({ stream });
      expect(Array.from(host.root.buffer(1) as Float64Array).filter((_, i) => i !== 1)).toEqual([1.5, 3.5]);
      host.dispose();
      imported.dispose();
    });

    test("a stream of the other runtime is refused", () => {
      const other: DeviceKind = kind === "cuda" ? "rocm" : "cuda";
      expect(() => toDevice(makeVector(Int32Array.of(1)), { device: kind, stream: { handle: 1 } as never })).toThrow("must be a DeviceStream");
      if (!deviceKinds.includes(other)) return; // a real GPU of one vendor only
      using stream = deviceRuntime(other).createStream(0);
      expect(() => toDevice(makeVector(Int32Array.of(1)), { device: kind, stream })).toThrow(`stream belongs to ${other}`);
    });
  });
}

describe("device runtimes in general", () => {
  test("toHost of a CPU import is a zero-copy view that keeps the original alive", () => {
    const values = Int32Array.from({ length: 50 }, (_, i) => i - 25);
    const exported = exportArray(makeVector(values));
    const imported = ImportedArray.fromDeviceArray(exported.schema, exported.array);
    exported.release();
    const view = imported.toHost();
    expect(view.deviceType).toBe(DeviceType.CPU);
    expect(view.root.bufferAddress(1)).toBe(imported.root.bufferAddress(1));
    expect(counters().live_reexports).toBe(1);
    imported.dispose();
    expect(view.root.buffer(1)).toEqual(values);
    view.dispose();
    expect(counters().live_reexports).toBe(0);
  });

  test("an unknown runtime name is an error, not a crash", () => {
    expect(() => deviceRuntime("metal" as DeviceKind)).toThrow('unknown device runtime "metal"');
  });
});
