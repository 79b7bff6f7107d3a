/**
 * "Not available" is an ordinary, explained state: each way a runtime can
 * be missing (no library, a library without a needed symbol, the CUDA stub,
 * a driver too old, no device) gives its own message naming what was
 * tried, a failed load is retried, and nothing leaks. Runtimes load once
 * per process, so each scenario runs in a fresh one
 * (test/helpers/device_probe.ts). Also here: proof that the fake drivers'
 * device memory crashes any host read, and a host-visible array imported
 * before its runtime was loaded.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { fixturePath } from "../helpers/fixtures.ts";
import { testRoot } from "../helpers/paths.ts";

const probe = join(testRoot, "helpers", "device_probe.ts");

function run(scenario: string) {
  const env = { ...process.env };
  delete env.ARROW_DEVICE_CUDA_LIBRARY;
  delete env.ARROW_DEVICE_HIP_LIBRARY;
  const proc = Bun.spawnSync([process.execPath, probe, scenario], { env, stdout: "pipe", stderr: "pipe" });
  const stdout = proc.stdout.toString().trim().split("\n");
  return { proc, stdout, stderr: proc.stderr.toString(), result: JSON.parse(stdout[stdout.length - 1] || "null") };
}

describe("CUDA not available: every state explained", () => {
  const { result, stderr } = run("cuda-states");

  test("the probe ran", () => {
    expect(stderr).not.toContain("error:");
    expect(result).not.toBeNull();
  });

  test("library missing: says so and names what was tried and how to fix it", () => {
    expect(result.missing).toContain("CUDA is not available: the driver library could not be loaded");
    expect(result.missing).toContain("/nonexistent/libcuda.so.1 (");
    expect(result.missing).toContain("ARROW_DEVICE_CUDA_LIBRARY");
    expect(result.missingThrows.name).toBe("DeviceUnavailableError");
  });

  test("toDevice without a runtime throws the reason and releases what it exported", () => {
    expect(result.toDeviceThrows.name).toBe("DeviceUnavailableError");
    expect(result.countersAfterFailure).toEqual({});
  });

  test("a library missing a symbol is not loaded at all, and the symbol is named", () => {
    expect(result.missingSymbol).toContain(`${fixturePath("fake_cuda_incomplete")} has no symbol cuMemcpyDtoHAsync_v2`);
    expect(result.missingSymbol).toContain("nothing was loaded");
  });

  test("the toolkit's stub library (error 34)", () => {
    expect(result.stub).toContain("is the CUDA stub library, not a driver (cuInit returned CUDA_ERROR_STUB_LIBRARY, 34)");
  });

  test("a driver too old (error 35)", () => {
    expect(result.insufficient).toContain("too old (cuInit returned CUDA_ERROR_INSUFFICIENT_DRIVER, 35)");
  });

  test("no device (error 100)", () => {
    expect(result.noDevice).toContain("no CUDA device found (cuInit returned CUDA_ERROR_NO_DEVICE, 100");
  });

  test("a driver older than the API this library needs", () => {
    expect(result.oldDriver).toContain("reports version 9020, this library needs 10000 or later");
  });

  test("once the cause is gone, the next call loads it", () => {
    expect(result.recovered).toBe(`available: ${fixturePath("fake_cuda")}`);
  });
});

describe("ROCm not available: every state explained", () => {
  const { result, stderr } = run("rocm-states");

  test("the probe ran", () => {
    expect(stderr).not.toContain("error:");
    expect(result).not.toBeNull();
  });

  test("library missing", () => {
    expect(result.missing).toContain("ROCm is not available: the HIP runtime could not be loaded");
    expect(result.missing).toContain("/nonexistent/libamdhip64.so (");
    expect(result.missing).toContain("ARROW_DEVICE_HIP_LIBRARY");
    expect(result.missingThrows.name).toBe("DeviceUnavailableError");
  });

  test("a library that is not the HIP runtime: the first missing symbol is named", () => {
    expect(result.missingSymbol).toContain(`${fixturePath("fake_cuda")} has no symbol hipInit`);
  });

  test("a driver too old (error 35) and no device (error 100)", () => {
    expect(result.insufficient).toContain("hipErrorInsufficientDriver, 35");
    expect(result.noDevice).toContain("no ROCm device found (hipInit returned hipErrorNoDevice, 100");
  });

  test("once the cause is gone, the next call loads it", () => {
    expect(result.recovered).toBe(`available: ${fixturePath("fake_hip")}`);
  });
});

describe("default library names", () => {
  test("without the environment variables the vendors' sonames are tried", () => {
    const { result } = run("defaults");
    // On a machine with a GPU driver these load; everywhere else the
    // message lists every soname tried.
    if (!String(result.cuda).startsWith("available")) {
      expect(result.cuda).toContain("libcuda.so.1 (");
      expect(result.cuda).toContain("libcuda.so (");
    }
    if (!String(result.rocm).startsWith("available")) {
      for (const name of ["libamdhip64.so (", "libamdhip64.so.7 (", "libamdhip64.so.6 (", "libamdhip64.so.5 ("]) expect(result.rocm).toContain(name);
    }
  });
});

describe("runtime details", () => {
  test("ROCm 5 numbers pointer memory types differently; queries still classify right", () => {
    const { result } = run("rocm5-pointers");
    expect(result.version).toBe(50700000);
    expect(result.device).toEqual({ memory: "device", deviceType: 10, deviceId: 1 });
    expect(result.pinned).toEqual({ memory: "pinned", deviceType: 11, deviceId: 0 });
    expect(result.host).toEqual({ memory: "host", deviceType: 1, deviceId: -1 });
  });

  test("a CUDA_HOST array imported before the runtime loaded: toHost waits, then views it in place", () => {
    const { result } = run("late-waiter");
    expect(result.produced).toBe(0);
    expect(result.readableAtImport).toBe(false);
    expect(result.viewDevice).toBe("CPU");
    expect(result.sameMemory).toBe(true);
    expect(result.ints).toEqual([0, 7, 14, 21, 28]);
    expect(result.producedLive).toBe(0);
    expect(result.counters).toEqual({});
  });

  test("the fake drivers' device memory crashes any host read (PROT_NONE)", () => {
    const { proc, stdout } = run("host-read-of-device-memory");
    expect(stdout[0]).toBe('{"before":true}'); // it got as far as the read
    expect(proc.exitCode === 0).toBe(false);
    expect(proc.signalCode ?? "").toBe("SIGSEGV");
  });
});
