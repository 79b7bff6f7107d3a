/**
 * Runs one device scenario in a fresh process (runtimes load once per
 * process, so states before the first successful load need their own) and
 * prints its findings as one JSON line. Used by
 * test/device/device_unavailable.test.ts:
 *   bun test/helpers/device_probe.ts <scenario>
 */
import { structPointer } from "../../ts/raw.ts";
import { FFIType, ptr as addressOf, read, type Pointer } from "bun:ffi";
import { makeVector } from "apache-arrow";
import { openLibrary } from "../../ts/core/ffi/bun_ffi.ts";
import { fixturePath } from "./fixtures.ts";

const scenario = process.argv[2];
const cudaFake = fixturePath("fake_cuda");
const hipFake = fixturePath("fake_hip");
const { i32, cstring, void: none, ptr, i64 } = FFIType;

const { deviceAvailability, deviceRuntime, toDevice, ImportedArray } = await import("../../ts/device.ts");
const { nonZeroCounters, drainReleased } = await import("../../ts/diagnostics.ts");

function reason(kind: "cuda" | "rocm"): string {
  const a = deviceAvailability(kind);
  return a.available ? `available: ${a.library}` : a.reason;
}

function errorOf(run: () => unknown): { name: string; message: string } | null {
  try {
    run();
    return null;
  } catch (error) {
    return { name: (error as Error).name, message: (error as Error).message };
  }
}

const out: Record<string, unknown> = {};

switch (scenario) {
  case "cuda-states": {
    const f = openLibrary(cudaFake, {
      fake_cuda_inject: { args: [cstring, i32, i32], returns: none },
      fake_cuda_inject_clear: { args: [], returns: none },
      fake_cuda_set_device_count: { args: [i32], returns: none },
      fake_cuda_set_driver_version: { args: [i32], returns: none },
    }).symbols;
    process.env.ARROW_DEVICE_CUDA_LIBRARY = "/nonexistent/libcuda.so.1";
    out.missing = reason("cuda");
    out.missingThrows = errorOf(() => deviceRuntime("cuda"));
    out.toDeviceThrows = errorOf(() => toDevice(makeVector(Int32Array.of(1, 2, 3)), { device: "cuda" }));
    drainReleased();
    out.countersAfterFailure = nonZeroCounters();
    process.env.ARROW_DEVICE_CUDA_LIBRARY = fixturePath("fake_cuda_incomplete");
    out.missingSymbol = reason("cuda");
    process.env.ARROW_DEVICE_CUDA_LIBRARY = cudaFake;
    f.fake_cuda_inject(Buffer.from("cuInit\0"), 34, 0);
    out.stub = reason("cuda");
    f.fake_cuda_inject(Buffer.from("cuInit\0"), 35, 0);
    out.insufficient = reason("cuda");
    f.fake_cuda_set_device_count(0);
    out.noDevice = reason("cuda");
    f.fake_cuda_set_device_count(2);
    f.fake_cuda_set_driver_version(9020);
    out.oldDriver = reason("cuda");
    f.fake_cuda_set_driver_version(12040);
    out.recovered = reason("cuda");
    break;
  }
  case "rocm-states": {
    const f = openLibrary(hipFake, {
      fake_hip_inject: { args: [cstring, i32, i32], returns: none },
      fake_hip_set_device_count: { args: [i32], returns: none },
    }).symbols;
    process.env.ARROW_DEVICE_HIP_LIBRARY = "/nonexistent/libamdhip64.so";
    out.missing = reason("rocm");
    out.missingThrows = errorOf(() => deviceRuntime("rocm"));
    process.env.ARROW_DEVICE_HIP_LIBRARY = cudaFake; // a library, but not HIP
    out.missingSymbol = reason("rocm");
    process.env.ARROW_DEVICE_HIP_LIBRARY = hipFake;
    f.fake_hip_inject(Buffer.from("hipInit\0"), 35, 0);
    out.insufficient = reason("rocm");
    f.fake_hip_set_device_count(0);
    out.noDevice = reason("rocm");
    f.fake_hip_set_device_count(2);
    out.recovered = reason("rocm");
    break;
  }
  case "defaults": {
    delete process.env.ARROW_DEVICE_CUDA_LIBRARY;
    delete process.env.ARROW_DEVICE_HIP_LIBRARY;
    out.cuda = reason("cuda");
    out.rocm = reason("rocm");
    break;
  }
  case "rocm5-pointers": {
    const f = openLibrary(hipFake, { fake_hip_set_runtime_version: { args: [i32], returns: none } }).symbols;
    f.fake_hip_set_runtime_version(50700000);
    process.env.ARROW_DEVICE_HIP_LIBRARY = hipFake;
    const rt = deviceRuntime("rocm");
    out.version = rt.version;
    const device = rt.allocate(64, { id: 1 });
    const pinned = rt.allocate(64, { memory: "pinned" });
    const host = new Uint8Array(64);
    void host.buffer;
    out.device = rt.pointerInfo(device.address);
    out.pinned = rt.pointerInfo(pinned.address);
    out.host = rt.pointerInfo(addressOf(host));
    device.free();
    pinned.free();
    break;
  }
  case "late-waiter": {
    // A CUDA_HOST array imported before any runtime was loaded here: the
    // import cannot wait, so it is not host-readable; toHost loads the
    // runtime, waits on the event, and views the memory in place.
    const f = openLibrary(cudaFake, {
      cuInit: { args: [i32], returns: i32 },
      fake_cuda_produce: { args: [i32, i32, i64, i32, ptr, ptr], returns: i32 },
      fake_cuda_produced_live: { args: [], returns: i64 },
    }).symbols;
    process.env.ARROW_DEVICE_CUDA_LIBRARY = cudaFake;
    f.cuInit(0);
    const native = (await import("../../ts/core/ffi/library.ts")).native;
    const slot = native.abd_alloc_zeroed(200)!;
    out.produced = f.fake_cuda_produce(0, 1, 20, 1, slot, (slot + 72) as Pointer);
    const imported = ImportedArray.fromDeviceArray(structPointer("ArrowSchema", slot), structPointer("ArrowDeviceArray", slot + 72));
    native.abd_free(slot);
    out.readableAtImport = imported.hostReadable;
    const view = imported.toHost();
    out.viewDevice = view.deviceTypeName;
    out.sameMemory = view.root.child(0).bufferAddress(1) === imported.root.child(0).bufferAddress(1);
    out.ints = Array.from(view.root.child(0).buffer(1) as Int32Array).slice(0, 5);
    view.dispose();
    imported.dispose();
    drainReleased();
    out.producedLive = Number(f.fake_cuda_produced_live());
    out.counters = nonZeroCounters();
    break;
  }
  case "host-read-of-device-memory": {
    // What the fake drivers promise: device memory cannot be read by the
    // host. This process must die of SIGSEGV on the read below.
    process.env.ARROW_DEVICE_CUDA_LIBRARY = cudaFake;
    const memory = deviceRuntime("cuda").allocate(4096);
    console.log(JSON.stringify({ before: true }));
    out.value = read.u8(memory.address as never, 0);
    break;
  }
  case "strict-cuda-10": {
    process.env.ARROW_DEVICE_CUDA_LIBRARY = fixturePath("fake_cuda_10");
    out.cuda = reason("cuda");
    const exported = toDevice(makeVector(Int32Array.of(1, 2, 3)), { device: "cuda" });
    exported.release();
    drainReleased();
    // The source's release runs on the releaser thread: bounded wait.
    for (let i = 0; i < 2000 && Object.keys(nonZeroCounters()).length > 0; i++) {
      await Bun.sleep(5);
      drainReleased();
    }
    out.counters = nonZeroCounters();
    break;
  }
  case "strict-mistake": {
    // The mistake is named by ARROW_DEVICE_DEBUG_MISTAKE (set by the test).
    process.env.ARROW_DEVICE_CUDA_LIBRARY = cudaFake;
    out.cuda = reason("cuda");
    if (String(out.cuda).startsWith("available")) {
      out.toDevice = errorOf(() => toDevice(makeVector(Int32Array.of(1, 2, 3)), { device: "cuda" }).release());
      const host = new Uint8Array(64);
      out.pointer = errorOf(() => deviceRuntime("cuda").pointerInfo(addressOf(host)));
    }
    break;
  }
  case "strict-release-source": {
    // A CUDA_HOST source whose release calls the driver (frees pinned
    // memory, destroys its event), copied to the device through the C
    // entry point: its release must never run inside a host function.
    const f = openLibrary(cudaFake, {
      fake_cuda_produce: { args: [i32, i32, i64, i32, ptr, ptr], returns: i32 },
      fake_cuda_produced_live: { args: [], returns: i64 },
      fake_cuda_callback_violations: { args: [], returns: i64 },
      fake_cuda_drain: { args: [], returns: none },
    }).symbols;
    process.env.ARROW_DEVICE_CUDA_LIBRARY = cudaFake;
    out.cuda = reason("cuda");
    const native = (await import("../../ts/core/ffi/library.ts")).native;
    const slot = native.abd_alloc_zeroed(400)!;
    out.produced = f.fake_cuda_produce(0, 1, 20, 1, slot, (slot + 72) as Pointer);
    out.copied = native.abd_device_array_to_device(slot, (slot + 72) as Pointer, 2, 0, null, (slot + 200) as Pointer, (slot + 272) as Pointer);
    f.fake_cuda_drain();
    for (let i = 0; i < 2000 && Number(f.fake_cuda_produced_live()) > 0; i++) await Bun.sleep(5);
    out.sourceLive = Number(f.fake_cuda_produced_live());
    out.violations = Number(f.fake_cuda_callback_violations());
    native.abd_schema_release((slot + 200) as Pointer);
    native.abd_device_array_release((slot + 272) as Pointer);
    native.abd_free(slot);
    drainReleased();
    out.counters = nonZeroCounters();
    break;
  }
  case "strict-wait": {
    // A producer's array whose copies are still pending (its stream holds
    // them back): the consumer must wait for its sync_event before
    // touching the data, or it reads the fake's poison (0xA5 bytes).
    const kind = Number(process.argv[3] ?? 0);
    const f = openLibrary(cudaFake, {
      fake_cuda_produce: { args: [i32, i32, i64, i32, ptr, ptr], returns: i32 },
      fake_cuda_set_produce_hold_ms: { args: [i32], returns: none },
      fake_cuda_drain: { args: [], returns: none },
    }).symbols;
    process.env.ARROW_DEVICE_CUDA_LIBRARY = cudaFake;
    deviceRuntime("cuda");
    f.fake_cuda_set_produce_hold_ms(300);
    const native = (await import("../../ts/core/ffi/library.ts")).native;
    const slot = native.abd_alloc_zeroed(200)!;
    out.produced = f.fake_cuda_produce(0, kind, 20, 1, slot, (slot + 72) as Pointer);
    try {
      using imported = ImportedArray.fromDeviceArray(structPointer("ArrowSchema", slot), structPointer("ArrowDeviceArray", (slot + 72) as Pointer));
      using view = imported.toHost();
      out.ints = Array.from(view.root.child(0).buffer(1) as Int32Array).slice(0, 5);
    } catch (error) {
      out.error = { name: (error as Error).name, message: (error as Error).message };
    }
    native.abd_free(slot);
    f.fake_cuda_drain();
    drainReleased();
    break;
  }
  case "strict-order": {
    // toDevice's event must follow its copies: a consumer on another
    // stream that waits for it must see the data, not the poison.
    const f = openLibrary(cudaFake, {
      fake_cuda_set_copy_hold_ms: { args: [i32], returns: none },
      fake_cuda_drain: { args: [], returns: none },
    }).symbols;
    process.env.ARROW_DEVICE_CUDA_LIBRARY = cudaFake;
    const rt = deviceRuntime("cuda");
    f.fake_cuda_set_copy_hold_ms(300);
    const exported = toDevice(makeVector(Int32Array.of(5, 6, 7)), { device: "cuda" });
    const imported = ImportedArray.fromDeviceArray(exported.schema, exported.array);
    const stream = rt.createStream();
    const view = imported.toHost({ stream });
    out.ints = Array.from(view.root.buffer(1) as Int32Array);
    view.dispose();
    imported.dispose();
    stream.destroy();
    exported.release();
    f.fake_cuda_drain();
    drainReleased();
    break;
  }
  case "strict-sticky": {
    // After an illegal access every driver call fails with it.
    // argv[3]: "cuda" (default) or "rocm".
    const kind = process.argv[3] === "rocm" ? "rocm" : "cuda";
    const fake = kind === "rocm" ? hipFake : cudaFake;
    const prefix = kind === "rocm" ? "fake_hip" : "fake_cuda";
    const f = openLibrary(fake, { [`${prefix}_illegal_access`]: { args: [], returns: none } }).symbols;
    process.env[kind === "rocm" ? "ARROW_DEVICE_HIP_LIBRARY" : "ARROW_DEVICE_CUDA_LIBRARY"] = fake;
    const rt = deviceRuntime(kind);
    const before = toDevice(makeVector(Int32Array.of(1, 2, 3)), { device: kind });
    const memory = rt.allocate(64);
    f[`${prefix}_illegal_access`]!();
    out.toDevice = errorOf(() => toDevice(makeVector(Int32Array.of(1, 2, 3)), { device: kind }));
    out.allocate = errorOf(() => rt.allocate(64));
    out.pointer = errorOf(() => rt.pointerInfo(addressOf(new Uint8Array(8))));
    out.stream = errorOf(() => rt.createStream());
    out.release = errorOf(() => before.release());
    out.free = errorOf(() => memory.free());
    out.again = errorOf(() => rt.allocate(64));
    break;
  }
  case "strict-exit": {
    // A device array still alive at exit: the driver answers its
    // "deinitialized" error from then on, and the process exits cleanly.
    // argv[3]: "cuda" (default) or "rocm".
    const kind = process.argv[3] === "rocm" ? "rocm" : "cuda";
    process.env[kind === "rocm" ? "ARROW_DEVICE_HIP_LIBRARY" : "ARROW_DEVICE_CUDA_LIBRARY"] = kind === "rocm" ? hipFake : cudaFake;
    (globalThis as Record<string, unknown>).kept = toDevice(makeVector(Int32Array.of(1, 2, 3)), { device: kind });
    out.alive = true;
    break;
  }
  case "strict-teardown": {
    // The runtime torn down under live memory, as during process exit:
    // calls fail with hipErrorDeinitialized, releases stay quiet.
    const f = openLibrary(hipFake, { fake_hip_tear_down: { args: [], returns: none } }).symbols;
    process.env.ARROW_DEVICE_HIP_LIBRARY = hipFake;
    const rt = deviceRuntime("rocm");
    const before = toDevice(makeVector(Int32Array.of(1, 2, 3)), { device: "rocm" });
    const memory = rt.allocate(64);
    const liveAtExit = toDevice(makeVector(Int32Array.of(4, 5)), { device: "rocm" });
    f.fake_hip_tear_down();
    out.allocate = errorOf(() => rt.allocate(64));
    out.toDevice = errorOf(() => toDevice(makeVector(Int32Array.of(1, 2, 3)), { device: "rocm" }));
    out.release = errorOf(() => before.release());
    out.free = errorOf(() => memory.free());
    (globalThis as Record<string, unknown>).kept = liveAtExit; // meets the torn-down runtime at exit
    break;
  }
  case "strict-widths": {
    // hipPointerGetAttribute(s) write each value at its real width: the
    // bytes after it keep the caller's 0x5A. And the library's reading of
    // those values is right for every kind of memory.
    const f = openLibrary(hipFake, {
      hipPointerGetAttribute: { args: [ptr, i32, ptr], returns: i32 },
      hipPointerGetAttributes: { args: [ptr, ptr], returns: i32 },
      hipMallocManaged: { args: [ptr, i64, i32], returns: i32 },
      hipFree: { args: [ptr], returns: i32 },
    }).symbols;
    process.env.ARROW_DEVICE_HIP_LIBRARY = hipFake;
    const rt = deviceRuntime("rocm");
    const device = rt.allocate(64, { id: 1 });
    const pinned = rt.allocate(64, { memory: "pinned" });
    // The library allocates no managed memory on ROCm (no Arrow device
    // type): a C producer's, from the runtime itself.
    const slot = new BigUint64Array(1);
    f.hipMallocManaged(addressOf(slot), 64, 1);
    const managed = { address: Number(slot[0]), free: () => f.hipFree(Number(slot[0]) as unknown as Pointer) };
    const widths: Record<string, number> = {};
    const written = (bytes: Uint8Array) => bytes.length - bytes.toReversed().findIndex((b) => b !== 0x5a);
    for (const [name, attribute] of [["memoryType", 2], ["isManaged", 8], ["deviceOrdinal", 9], ["rangeSize", 12]] as const) {
      const data = new Uint8Array(16).fill(0x5a);
      const rc = f.hipPointerGetAttribute(addressOf(data), attribute, managed.address as unknown as Pointer);
      widths[name] = rc === 0 ? written(data) : -rc;
    }
    out.widths = widths;
    const struct = new Uint8Array(48).fill(0x5a);
    out.attributesRc = f.hipPointerGetAttributes(addressOf(struct), device.address as unknown as Pointer);
    const view = new DataView(struct.buffer);
    out.attributes = {
      written: written(struct),
      type: view.getUint32(0, true),
      device: view.getInt32(4, true),
      devicePointer: Number(view.getBigUint64(8, true)) === device.address,
      hostPointer: Number(view.getBigUint64(16, true)),
      isManaged: view.getInt32(24, true),
    };
    const host = new Uint8Array(64);
    out.device = rt.pointerInfo(device.address);
    out.pinned = rt.pointerInfo(pinned.address);
    out.managed = rt.pointerInfo(managed.address);
    out.host = rt.pointerInfo(addressOf(host));
    device.free();
    pinned.free();
    managed.free();
    break;
  }
  default:
    throw new Error(`unknown scenario ${scenario}`);
}

console.log(JSON.stringify(out));
