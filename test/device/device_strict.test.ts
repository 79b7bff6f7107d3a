/**
 * The fake CUDA driver and HIP runtime are as strict as real ones where
 * this library could go wrong, and each mistake it exists to catch is shown caught: the
 * library is made to make the mistake through its debug switch
 * (ARROW_DEVICE_DEBUG_MISTAKE, docs/devices.md) and the fake refuses.
 * Each scenario runs in a fresh process (test/helpers/device_probe.ts):
 * runtimes load, and switches are read, once per process.
 */
import { describe, expect, test } from "bun:test";
import { dlopen, FFIType } from "bun:ffi";
import { join } from "node:path";
import { fixturePath } from "../helpers/fixtures.ts";
import { testRoot } from "../helpers/paths.ts";

const probe = join(testRoot, "helpers", "device_probe.ts");

function run(scenario: string, extra: Record<string, string> = {}) {
  const env: Record<string, string | undefined> = { ...process.env, ...extra };
  delete env.ARROW_DEVICE_HIP_LIBRARY;
  if (!("ARROW_DEVICE_DEBUG_MISTAKE" in extra)) delete env.ARROW_DEVICE_DEBUG_MISTAKE;
  if (!("ARROW_DEVICE_DEBUG_RELEASER_FAIL" in extra)) delete env.ARROW_DEVICE_DEBUG_RELEASER_FAIL;
  const proc = Bun.spawnSync([process.execPath, probe, ...scenario.split(" ")], { env, stdout: "pipe", stderr: "pipe" });
  const stdout = proc.stdout.toString().trim().split("\n");
  const stderr = proc.stderr.toString();
  expect(stderr).not.toContain("error:");
  expect(proc.exitCode).toBe(0); // no crash or hang on the way out either
  return JSON.parse(stdout[stdout.length - 1] || "null");
}

describe("the minimum CUDA driver", () => {
  test("a CUDA 10.2 driver (no cuDevicePrimaryCtxRelease_v2) loads and copies", () => {
    const result = run("strict-cuda-10");
    expect(result.cuda).toBe(`available: ${fixturePath("fake_cuda_10")}`);
    expect(result.counters).toEqual({});
  });
});

describe("versioned symbols", () => {
  test("the fake exports only the _v2 names where CUDA has them", () => {
    const fake = fixturePath("fake_cuda");
    const fn = { args: [], returns: FFIType.i32 };
    for (const name of ["cuMemAlloc_v2", "cuMemFree_v2", "cuMemcpyHtoDAsync_v2", "cuCtxPushCurrent_v2", "cuStreamDestroy_v2", "cuEventDestroy_v2"]) {
      const lib = dlopen(fake, { [name]: fn });
      lib.close();
      expect(() => dlopen(fake, { [name.slice(0, -3)]: fn })).toThrow();
    }
  });

  test("a library that looks up unversioned names is refused, naming the first one", () => {
    const result = run("strict-mistake", { ARROW_DEVICE_DEBUG_MISTAKE: "unversioned-symbols" });
    expect(result.cuda).toContain(`${fixturePath("fake_cuda")} has no symbol cuDeviceTotalMem`);
    expect(result.cuda).toContain("nothing was loaded");
  });
});

describe("a current context", () => {
  test("the library pushes one around every call, pointer queries included", () => {
    const result = run("strict-mistake");
    expect(result.cuda).toBe(`available: ${fixturePath("fake_cuda")}`);
    expect(result.toDevice).toBeNull();
    expect(result.pointer).toBeNull();
  });

  test("a missing context push is refused with CUDA_ERROR_INVALID_CONTEXT", () => {
    const result = run("strict-mistake", { ARROW_DEVICE_DEBUG_MISTAKE: "no-context-push" });
    expect(result.toDevice.name).toBe("DeviceError");
    expect(result.toDevice.message).toContain("[CUDA_ERROR_INVALID_CONTEXT]");
    expect(result.pointer.name).toBe("DeviceError");
    expect(result.pointer.message).toContain("[cuPointerGetAttributes][CUDA_ERROR_INVALID_CONTEXT]");
  });
});

describe("no release inside a driver callback", () => {
  test("a source whose release calls the driver is released on the releaser thread", () => {
    const result = run("strict-release-source");
    expect(result.produced).toBe(0);
    expect(result.copied).toBe(0);
    expect(result.sourceLive).toBe(0);
    expect(result.violations).toBe(0);
    expect(result.counters).toEqual({});
  });

  test("when no release job can be queued, the caller releases it, never the callback", () => {
    const result = run("strict-release-source", { ARROW_DEVICE_DEBUG_RELEASER_FAIL: "1" });
    expect(result.copied).toBe(0);
    expect(result.sourceLive).toBe(0);
    expect(result.violations).toBe(0);
    expect(result.counters).toEqual({});
  });
});

describe("stream order and sync events", () => {
  const poison = -1515870811; // 0xA5A5A5A5: device memory before its copy lands

  test("a device array's copy waits for its sync_event on the consumer's stream", () => {
    const result = run("strict-wait 0");
    expect(result.produced).toBe(0);
    expect(result.ints).toEqual([0, 7, 14, 21, 28]);
  });

  test("a missing cuStreamWaitEvent reads the producer's memory before it is filled", () => {
    const result = run("strict-wait 0", { ARROW_DEVICE_DEBUG_MISTAKE: "no-stream-wait" });
    expect(result.error.name).toBe("InvalidLayoutError");
    expect(result.error.message).toContain(`the size read back from the device is ${poison}`);
  });

  test("host-visible memory is read only after its sync_event", () => {
    const result = run("strict-wait 1");
    expect(result.ints).toEqual([0, 7, 14, 21, 28]);
  });

  test("a read before the event sees the poison", () => {
    const result = run("strict-wait 1", { ARROW_DEVICE_DEBUG_MISTAKE: "no-event-sync" });
    expect(result.error.name).toBe("InvalidLayoutError");
    expect(result.error.message).toContain("first offset is negative");
  });

  test("toDevice's event follows its copies: a consumer on another stream sees the data", () => {
    const result = run("strict-order");
    expect(result.ints).toEqual([5, 6, 7]);
  });

  test("an event recorded before the copies is a stream-order violation the fake exposes", () => {
    const result = run("strict-order", { ARROW_DEVICE_DEBUG_MISTAKE: "event-before-copies" });
    expect(result.ints).toEqual([poison, poison, poison]);
  });
});

describe("sticky errors and exit", () => {
  test("after an illegal access every call fails with CUDA_ERROR_ILLEGAL_ADDRESS, without a crash", () => {
    const result = run("strict-sticky");
    for (const key of ["toDevice", "allocate", "pointer"]) {
      expect(result[key].name).toBe("DeviceError");
      expect(result[key].message).toContain("[CUDA_ERROR_ILLEGAL_ADDRESS]");
    }
    expect(result.release).toBeNull(); // a release reports nothing and never throws
  });

  test("a device array alive at exit meets CUDA_ERROR_DEINITIALIZED quietly", () => {
    const env = { ...process.env, ARROW_DEVICE_CUDA_LIBRARY: fixturePath("fake_cuda") };
    const proc = Bun.spawnSync([process.execPath, probe, "strict-exit"], { env, stdout: "pipe", stderr: "pipe" });
    expect(proc.exitCode).toBe(0);
    expect(proc.stdout.toString()).toContain('{"alive":true}');
  });
});

describe("ROCm: sticky errors, teardown and attribute widths", () => {
  test("after an illegal access every call fails with hipErrorIllegalAddress, naming the call", () => {
    const result = run("strict-sticky rocm");
    const illegal = "[hipErrorIllegalAddress] an illegal memory access was encountered";
    for (const key of ["toDevice", "allocate", "stream", "free", "again"]) {
      expect(result[key].name).toBe("DeviceError");
      expect(result[key].message).toStartWith(`[hipGetDevice]${illegal}`);
    }
    expect(result.pointer.name).toBe("DeviceError");
    expect(result.pointer.message).toStartWith(`[hipPointerGetAttribute]${illegal}: memory type of 0x`);
    expect(result.release).toBeNull(); // a release reports nothing and never throws
  });

  test("a runtime torn down under live memory answers hipErrorDeinitialized; releases and exit stay quiet", () => {
    const result = run("strict-teardown");
    const down = "[hipGetDevice][hipErrorDeinitialized] driver shutting down";
    for (const key of ["allocate", "toDevice", "free"]) {
      expect(result[key].name).toBe("DeviceError");
      expect(result[key].message).toStartWith(down);
    }
    expect(result.release).toBeNull();
  });

  test("a device array alive at exit meets the torn-down runtime quietly", () => {
    const env = { ...process.env, ARROW_DEVICE_HIP_LIBRARY: fixturePath("fake_hip") };
    const proc = Bun.spawnSync([process.execPath, probe, "strict-exit", "rocm"], { env, stdout: "pipe", stderr: "pipe" });
    expect(proc.exitCode).toBe(0);
    expect(proc.signalCode ?? null).toBeNull();
    expect(proc.stdout.toString()).toContain('{"alive":true}');
  });

  test("hipPointerGetAttribute(s) write each value at its real width, and the library reads them right", () => {
    const result = run("strict-widths");
    // bool, hipMemoryType and int, size_t: not a byte past them.
    expect(result.widths).toEqual({ memoryType: 4, isManaged: 1, deviceOrdinal: 4, rangeSize: 8 });
    // hipPointerAttribute_t: 32 bytes, ROCm 6 numbering (device memory: 2).
    expect(result.attributesRc).toBe(0);
    expect(result.attributes).toEqual({ written: 32, type: 2, device: 1, devicePointer: true, hostPointer: 0, isManaged: 0 });
    expect(result.device).toEqual({ memory: "device", deviceType: 10, deviceId: 1 });
    expect(result.pinned).toEqual({ memory: "pinned", deviceType: 11, deviceId: 0 });
    expect(result.managed).toEqual({ memory: "managed", deviceType: 10, deviceId: 0 });
    expect(result.host).toEqual({ memory: "host", deviceType: 1, deviceId: -1 });
  });
});
