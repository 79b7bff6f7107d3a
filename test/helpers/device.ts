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
import { FFIType, type Pointer } from "bun:ffi";
import { openLibrary, type NativeSymbols } from "../../ts/core/ffi/bun_ffi.ts";
import { fixturePath } from "./fixtures.ts";
import { native } from "../../ts/core/ffi/library.ts";
import { deviceKindNames, deviceKindTable, kindEntry } from "../../ts/core/ffi/device_loader.ts";
import type { DeviceKind } from "../../ts/device.ts";
import type { Counters } from "../../ts/diagnostics.ts";
import { expect } from "bun:test";
import { fakeLeftovers } from "./fake_leftovers.ts";
import { leakedSince, trackEvents } from "./leaks.ts";

export const isFake = process.env.ARROW_DEVICE_REAL_GPU !== "1";

/** Each kind's fake driver: test/fixtures/fake_<driver>.c, as the
 * library's table of device kinds names the driver. */
const fakePrefix = (kind: DeviceKind) => `fake_${kindEntry(kind)!.driver}`;

export const fakeLibraryPaths = Object.fromEntries(
  deviceKindTable.map((k) => [k.name, fixturePath(fakePrefix(k.name))]),
) as Record<DeviceKind, string>;

if (isFake) {
  for (const k of deviceKindTable) process.env[k.envVar] = fakeLibraryPaths[k.name];
}

/** The runtimes the shared suites run under: every kind of the table
 * unless ARROW_DEVICE_TEST_KINDS names some. */
export const deviceKinds: DeviceKind[] = (process.env.ARROW_DEVICE_TEST_KINDS ?? deviceKindNames.join(","))
  .split(",").map((k) => k.trim()).filter((k): k is DeviceKind => (deviceKindNames as readonly string[]).includes(k));

const { ptr, i32, i64, u64, usize, void: none, cstring } = FFIType;

/** The knobs both fake drivers export, each as `<prefix>_<name>`
 * (prefix fake_cuda or fake_hip). */
const knobSymbols = {
  set_device_count: { args: [i32], returns: none },
  inject: { args: [cstring, i32, i32], returns: none },
  inject_clear: { args: [], returns: none },
  pause: { args: [i32], returns: none },
  resume_after_ms: { args: [i32], returns: none },
  set_delay_us: { args: [i32], returns: none },
  pending: { args: [], returns: i32 },
  drain: { args: [], returns: none },
  live_allocations: { args: [i32], returns: i64 },
  live_allocations_on: { args: [i32], returns: i64 },
  live_events: { args: [], returns: i64 },
  live_streams: { args: [], returns: i64 },
  copies: { args: [], returns: i64 },
  bytes_copied: { args: [], returns: i64 },
  host_fns: { args: [], returns: i64 },
  failed_lookups: { args: [], returns: i64 },
  peek: { args: [u64, ptr, usize], returns: i32 },
  poke: { args: [u64, ptr, usize], returns: i32 },
  produced_live: { args: [], returns: i64 },
  produce: { args: [i32, i32, i64, i32, ptr, ptr], returns: i32 },
  produce_stream: { args: [i32, i64, i64, i32, i64, ptr], returns: none },
  streams_live: { args: [], returns: i64 },
  live_registrations: { args: [], returns: i64 },
  registrations: { args: [], returns: i64 },
  calls: { args: [ptr, usize], returns: i64 },
  calls_reset: { args: [], returns: none },
  stale_sources: { args: [], returns: i64 },
} as const;
type Knobs = NativeSymbols<typeof knobSymbols>;

/** Binds `<prefix>_<name>` for every knob of the fake `kind`, keyed by the
 * unprefixed name. */
function bindKnobs(kind: DeviceKind): Knobs {
  const prefix = fakePrefix(kind);
  const names = Object.keys(knobSymbols) as (keyof typeof knobSymbols)[];
  const table = Object.fromEntries(names.map((name) => [`${prefix}_${name}`, knobSymbols[name]]));
  const bound = openLibrary(fakeLibraryPaths[kind], table).symbols;
  // FFI boundary: the symbols were bound with exactly knobSymbols'
  // signatures, under prefixed names; only the keys change here.
  return Object.fromEntries(names.map((name) => [name, bound[`${prefix}_${name}`]])) as unknown as Knobs;
}

const cudaExtraSymbols = {
  fake_cuda_context_depth: { args: [], returns: i32 },
  fake_cuda_primary_retains: { args: [i32], returns: i32 },
  fake_cuda_set_driver_version: { args: [i32], returns: none },
} as const;
const hipExtraSymbols = {
  fake_hip_current_device: { args: [], returns: i32 },
  fake_hip_set_runtime_version: { args: [i32], returns: none },
} as const;
let cudaExtras: NativeSymbols<typeof cudaExtraSymbols> | undefined;
let hipExtras: NativeSymbols<typeof hipExtraSymbols> | undefined;

/** Knobs of the fake CUDA driver only. */
export function fakeCudaExtras(): NativeSymbols<typeof cudaExtraSymbols> {
  return (cudaExtras ??= openLibrary(fakeLibraryPaths.cuda, cudaExtraSymbols).symbols);
}

/** Knobs of the fake HIP runtime only. */
export function fakeHipExtras(): NativeSymbols<typeof hipExtraSymbols> {
  return (hipExtras ??= openLibrary(fakeLibraryPaths.rocm, hipExtraSymbols).symbols);
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
  /** kind: 0 device, 1 pinned, 2 managed; the device blocks of the
   * library's memory pool (zig/device/pool.zig) are replaced by their live
   * ranges (one per export over them, as without the pool); its pinned
   * blocks (staging, toHost results: the library's own) are left out. */
  liveAllocations(kind: number): number;
  /** The same, the pool's blocks included. */
  rawLiveAllocations(kind: number): number;
  liveAllocationsOn(device: number): number;
  /** Less the completed events the library keeps for reuse. */
  liveEvents(): number;
  rawLiveEvents(): number;
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
  /** Host ranges registered and not unregistered; registrations ever made. */
  liveRegistrations(): number;
  registrations(): number;
  /** Every driver call since the last `resetCalls`, by name. */
  calls(): Record<string, number>;
  resetCalls(): void;
  /** Asynchronous copies whose pinned host source changed between the
   * call and the copy (the host overwrote memory a queued copy reads). */
  staleSources(): number;
};

function open(kind: DeviceKind): FakeDriver {
  const knobs = bindKnobs(kind);
  return {
    kind,
    setDeviceCount: (n) => knobs.set_device_count(n),
    inject: (name, error, skip = 0) => knobs.inject(Buffer.from(`${name}\0`), error, skip),
    injectClear: () => knobs.inject_clear(),
    pause: (paused) => knobs.pause(paused ? 1 : 0),
    resumeAfterMs: (ms) => knobs.resume_after_ms(ms),
    pending: () => knobs.pending(),
    drain: () => knobs.drain(),
    liveAllocations: (k) => {
      const pool = stagingPool(kind);
      const raw = Number(knobs.live_allocations(k));
      return k === 0 ? raw - pool.poolDeviceBlocks + pool.poolDeviceRanges : k === 1 ? raw - pool.poolPinnedBlocks : raw;
    },
    liveAllocationsOn: (d) => {
      const pool = stagingPool(kind);
      return Number(knobs.live_allocations_on(d)) - (pool.poolBlocksOn[d] ?? 0) + (pool.poolRangesOn[d] ?? 0);
    },
    rawLiveAllocations: (k) => Number(knobs.live_allocations(k)),
    liveEvents: () => Number(knobs.live_events()) - stagingPool(kind).cachedEvents,
    rawLiveEvents: () => Number(knobs.live_events()),
    liveStreams: () => Number(knobs.live_streams()),
    copies: () => Number(knobs.copies()),
    bytesCopied: () => Number(knobs.bytes_copied()),
    hostFns: () => Number(knobs.host_fns()),
    failedLookups: () => Number(knobs.failed_lookups()),
    peek: (address, size) => {
      const out = new Uint8Array(Math.max(size, 1));
      if (knobs.peek(BigInt(address), out, size) !== 0) throw new Error(`fake ${kind}: 0x${address.toString(16)} is not device memory`);
      return out.subarray(0, size);
    },
    poke: (address, bytes) => {
      if (knobs.poke(BigInt(address), bytes, bytes.length) !== 0) throw new Error(`fake ${kind}: 0x${address.toString(16)} is not device memory`);
    },
    producedLive: () => Number(knobs.produced_live()),
    liveRegistrations: () => Number(knobs.live_registrations()),
    registrations: () => Number(knobs.registrations()),
    produce: (device, k, length, withEvent, schema, array) => knobs.produce(device, k, length, withEvent ? 1 : 0, schema, array),
    produceStream: (k, batches, rows, devices, failAt, out) => knobs.produce_stream(k, batches, rows, devices, failAt, out),
    streamsLive: () => Number(knobs.streams_live()),
    calls: () => {
      const out = new Uint8Array(16384);
      knobs.calls(out, out.length);
      const text = new TextDecoder().decode(out.subarray(0, out.indexOf(0)));
      const counts: Record<string, number> = {};
      for (const line of text.split("\n")) {
        const [name, count] = line.split(" ");
        if (name && count) counts[name] = Number(count);
      }
      return counts;
    },
    resetCalls: () => knobs.calls_reset(),
    staleSources: () => Number(knobs.stale_sources()),
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
    // From here on, each test's baseline counts what this fake holds.
    trackEvents(`fake ${kind}`, () => fakeCounts(kind));
  }
  return driver;
}

/** What fake `kind` holds that a test could leak, as it stands. */
function fakeCounts(kind: DeviceKind): Record<string, number> {
  const d = fake(kind);
  return {
    device: d.rawLiveAllocations(0), pinned: d.rawLiveAllocations(1), managed: d.rawLiveAllocations(2),
    events: d.rawLiveEvents(), streams: d.liveStreams(), produced: d.producedLive(), producedStreams: d.streamsLive(),
    registrations: d.liveRegistrations(),
  };
}

// Every fake is opened now, so that each test's baseline counts what it
// holds from the first test on.
if (isFake) for (const k of deviceKindTable) fake(k.name);

/** Everything fake `kind` holds that this test made and could leak:
 * counted from the test's baseline (test/helpers/leaks.ts), so a batch an
 * earlier test left to a stale stack word is not this test's. */
export function fakeLeaks(kind: DeviceKind): Record<string, number> {
  if (!isFake) return {};
  const d = fake(kind);
  d.drain();
  stagingPool(kind, true); // the library's own pinned blocks are not a test's leak
  return leakedSince(`fake ${kind}`, fakeCounts(kind));
}

/** Fails naming what the fakes of `kinds` hold beyond what `left`
 * (expectSettled's result) allows (`fakeLeftovers`). */
export function expectFakesSettled(kinds: readonly DeviceKind[], left: Partial<Counters>): void {
  expect(fakeLeftovers(Object.fromEntries(kinds.map((kind) => [kind, fakeLeaks(kind)])), left)).toEqual({});
}

/** The library's pinned staging pool for `kind` (zig/device/staging.zig):
 * blocks allocated before the call, idle blocks freed when `trim`, and the
 * block size; and its memory pool (zig/device/pool.zig): device and pinned
 * blocks held and their high-water marks (before the trim), its block
 * size, and its blocks freed by the trim. */
export function stagingPool(kind: DeviceKind, trim = false): {
  blocks: number; freed: number; blockBytes: number;
  poolDeviceBlocks: number; poolDeviceHighWater: number; poolPinnedBlocks: number; poolPinnedHighWater: number;
  poolBlockBytes: number; poolFreed: number; poolBlocksOn: number[]; poolRangesOn: number[];
  poolDeviceRanges: number; poolPinnedRanges: number; cachedEvents: number;
} {
  const out = new Float64Array(140);
  const status = native.abd_device_staging(kindEntry(kind)!.deviceType, trim ? 1 : 0, out);
  if (status !== 0) throw new Error(`abd_device_staging failed: ${status}`);
  return {
    blocks: out[0], freed: out[1], blockBytes: out[2],
    poolDeviceBlocks: out[3], poolDeviceHighWater: out[4], poolPinnedBlocks: out[5], poolPinnedHighWater: out[6],
    poolBlockBytes: out[7], poolFreed: out[8], poolBlocksOn: Array.from(out.subarray(9, 73)),
    poolRangesOn: Array.from(out.subarray(73, 137)), poolDeviceRanges: out[137], poolPinnedRanges: out[138], cachedEvents: out[139],
  };
}
