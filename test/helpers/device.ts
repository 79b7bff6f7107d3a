/**
 * Device test setup. By default the tests run against the fake drivers
 * (test/fixtures/fake_cuda.c, fake_hip.c), loaded by libarrow_device
 * through the same dlopen path as real ones, via the environment variables
 * that name the library. scripts/gpu-suite.sh sets ARROW_DEVICE_REAL_GPU=1
 * (and ARROW_DEVICE_TEST_KINDS to the kinds present) to run the shared
 * suites against a real GPU instead; fake-only assertions check `isFake`.
 *
 * Import this module before anything loads a runtime.
 */
import { dlopen, FFIType, type Pointer } from "bun:ffi";
import { fixturePath } from "./fixtures.ts";
import type { DeviceKind } from "../../ts/index.ts";

export const isFake = process.env.ARROW_DEVICE_REAL_GPU !== "1";

export const fakeLibraryPaths: Record<DeviceKind, string> = {
  cuda: fixturePath("fake_cuda"),
  rocm: fixturePath("fake_hip"),
};

if (isFake) {
  process.env.ARROW_DEVICE_CUDA_LIBRARY = fakeLibraryPaths.cuda;
  process.env.ARROW_DEVICE_HIP_LIBRARY = fakeLibraryPaths.rocm;
}

/** The runtimes the shared suites run under. */
export const deviceKinds: DeviceKind[] = (process.env.ARROW_DEVICE_TEST_KINDS ?? "cuda,rocm")
  .split(",").map((k) => k.trim()).filter((k): k is DeviceKind => k === "cuda" || k === "rocm");

const { ptr, i32, i64, u64, usize, void: none, cstring } = FFIType;

function fakeSymbols(prefix: string) {
  return {
    [`${prefix}_set_device_count`]: { args: [i32], returns: none },
    [`${prefix}_inject`]: { args: [cstring, i32, i32], returns: none },
    [`${prefix}_inject_clear`]: { args: [], returns: none },
    [`${prefix}_pause`]: { args: [i32], returns: none },
    [`${prefix}_resume_after_ms`]: { args: [i32], returns: none },
    [`${prefix}_set_delay_us`]: { args: [i32], returns: none },
    [`${prefix}_pending`]: { args: [], returns: i32 },
    [`${prefix}_drain`]: { args: [], returns: none },
    [`${prefix}_live_allocations`]: { args: [i32], returns: i64 },
    [`${prefix}_live_allocations_on`]: { args: [i32], returns: i64 },
    [`${prefix}_live_events`]: { args: [], returns: i64 },
    [`${prefix}_live_streams`]: { args: [], returns: i64 },
    [`${prefix}_copies`]: { args: [], returns: i64 },
    [`${prefix}_bytes_copied`]: { args: [], returns: i64 },
    [`${prefix}_host_fns`]: { args: [], returns: i64 },
    [`${prefix}_failed_lookups`]: { args: [], returns: i64 },
    [`${prefix}_peek`]: { args: [u64, ptr, usize], returns: i32 },
    [`${prefix}_poke`]: { args: [u64, ptr, usize], returns: i32 },
    [`${prefix}_produced_live`]: { args: [], returns: i64 },
    [`${prefix}_produce`]: { args: [i32, i32, i64, i32, ptr, ptr], returns: i32 },
    [`${prefix}_produce_stream`]: { args: [i32, i64, i64, i32, i64, ptr], returns: none },
    [`${prefix}_streams_live`]: { args: [], returns: i64 },
  } as const;
}

/** One fake driver's fixture knobs, the same for both. */
export type FakeDriver = {
  kind: DeviceKind;
  setDeviceCount(n: number): void;
  /** The `skip`+1-th next call of `name` fails with `error`. */
  inject(name: string, error: number, skip?: number): void;
  injectClear(): void;
  /** Holds the copy engine: nothing enqueued completes until resumed. */
  pause(paused: boolean): void;
  resumeAfterMs(ms: number): void;
  pending(): number;
  drain(): void;
  /** kind: 0 device, 1 pinned, 2 managed. */
  liveAllocations(kind: number): number;
  liveAllocationsOn(device: number): number;
  liveEvents(): number;
  liveStreams(): number;
  copies(): number;
  bytesCopied(): number;
  hostFns(): number;
  failedLookups(): number;
  /** What device memory holds right now (through the fake's own mapping). */
  peek(address: number, size: number): Uint8Array;
  poke(address: number, bytes: Uint8Array): void;
  producedLive(): number;
  /** The C producer: struct<ints: int32, names: utf8>; kind 0 device, 1
   * pinned, 2 managed (CUDA only). Returns the failing step (0: ok). */
  produce(device: number, kind: number, length: number, withEvent: boolean, schema: Pointer, array: Pointer): number;
  /** A C ArrowDeviceArrayStream of `produce`'s arrays into `out`: batch i
   * has rows + i rows on device i % devices; get_next of batch failAt
   * (>= 0) fails with EIO. */
  produceStream(kind: number, batches: number, rows: number, devices: number, failAt: number, out: Pointer): void;
  /** Streams of produceStream not yet released. */
  streamsLive(): number;
  /** Extra knobs of one driver. */
  raw: Record<string, (...args: any[]) => any>;
};

function open(kind: DeviceKind): FakeDriver {
  const prefix = kind === "cuda" ? "fake_cuda" : "fake_hip";
  const extra = kind === "cuda"
    ? { fake_cuda_context_depth: { args: [], returns: i32 }, fake_cuda_primary_retains: { args: [i32], returns: i32 }, fake_cuda_set_driver_version: { args: [i32], returns: none } }
    : { fake_hip_current_device: { args: [], returns: i32 }, fake_hip_set_runtime_version: { args: [i32], returns: none } };
  const lib = dlopen(fakeLibraryPaths[kind], { ...fakeSymbols(prefix), ...extra } as any);
  const s = lib.symbols as Record<string, (...args: any[]) => any>;
  const f = (name: string) => s[`${prefix}_${name}`];
  return {
    kind,
    setDeviceCount: (n) => f("set_device_count")(n),
    inject: (name, error, skip = 0) => f("inject")(Buffer.from(`${name}\0`), error, skip),
    injectClear: () => f("inject_clear")(),
    pause: (paused) => f("pause")(paused ? 1 : 0),
    resumeAfterMs: (ms) => f("resume_after_ms")(ms),
    pending: () => f("pending")(),
    drain: () => f("drain")(),
    liveAllocations: (k) => Number(f("live_allocations")(k)),
    liveAllocationsOn: (d) => Number(f("live_allocations_on")(d)),
    liveEvents: () => Number(f("live_events")()),
    liveStreams: () => Number(f("live_streams")()),
    copies: () => Number(f("copies")()),
    bytesCopied: () => Number(f("bytes_copied")()),
    hostFns: () => Number(f("host_fns")()),
    failedLookups: () => Number(f("failed_lookups")()),
    peek: (address, size) => {
      const out = new Uint8Array(Math.max(size, 1));
      if (f("peek")(BigInt(address), out, size) !== 0) throw new Error(`fake ${kind}: 0x${address.toString(16)} is not device memory`);
      return out.subarray(0, size);
    },
    poke: (address, bytes) => {
      if (f("poke")(BigInt(address), bytes, bytes.length) !== 0) throw new Error(`fake ${kind}: 0x${address.toString(16)} is not device memory`);
    },
    producedLive: () => Number(f("produced_live")()),
    produce: (device, k, length, withEvent, schema, array) => f("produce")(device, k, length, withEvent ? 1 : 0, schema, array),
    produceStream: (k, batches, rows, devices, failAt, out) => f("produce_stream")(k, batches, rows, devices, failAt, out),
    streamsLive: () => Number(f("streams_live")()),
    raw: s,
  };
}

const opened = new Map<DeviceKind, FakeDriver>();

/** The fake driver of `kind` (the very instance libarrow_device loads:
 * the dynamic loader shares one copy of a library per file). */
export function fake(kind: DeviceKind): FakeDriver {
  if (!isFake) throw new Error("fake drivers are not in use (ARROW_DEVICE_REAL_GPU=1)");
  let driver = opened.get(kind);
  if (!driver) {
    driver = open(kind);
    opened.set(kind, driver);
  }
  return driver;
}

/** Everything the fakes hold that a test could leak, per kind. */
export function fakeLeaks(kind: DeviceKind): Record<string, number> {
  if (!isFake) return {};
  const d = fake(kind);
  d.drain();
  const counts = {
    device: d.liveAllocations(0), pinned: d.liveAllocations(1), managed: d.liveAllocations(2),
    events: d.liveEvents(), streams: d.liveStreams(), produced: d.producedLive(), producedStreams: d.streamsLive(),
  };
  return Object.fromEntries(Object.entries(counts).filter(([, v]) => v !== 0));
}
