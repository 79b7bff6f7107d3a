/**
 * What a device runtime holds in its pools (zig/device/staging.zig, the
 * pinned staging blocks of large transfers; zig/device/pool.zig, the
 * device and pinned blocks that small batches take ranges of), read with
 * one native call, and their trim. The pools are the runtime's: a block
 * goes back to its pool when its last range has ended, and leaves it when
 * trimmed (on demand here, or once it has been empty for the pool's idle
 * limit: docs/devices.md).
 */
import { check, native } from "../core/ffi/library.ts";
import { nativeArray } from "../core/ffi/native_arrays.ts";

/** Options of `DeviceRuntime.memoryPool`. */
export type MemoryPoolOptions = {
  /** Free every idle block (pool and staging) before reading. */
  trim?: boolean;
};

/** The pools of one runtime: `DeviceRuntime.memoryPool()`. */
export type MemoryPoolStats = {
  /** Device-memory blocks held now, and the most ever held at once. */
  deviceBlocks: number;
  deviceHighWater: number;
  /** Pinned host blocks held now, and the most ever held at once. */
  pinnedBlocks: number;
  pinnedHighWater: number;
  /** Bytes of one pool block. */
  blockBytes: number;
  /** Ranges of the blocks that exports still point into. */
  liveDeviceRanges: number;
  livePinnedRanges: number;
  /** Staging blocks of large transfers allocated, and their size. */
  stagingBlocks: number;
  stagingBlockBytes: number;
  /** With `{ trim: true }`: the idle pool and staging blocks freed. */
  freedBlocks: number;
};

const words = nativeArray(Float64Array, 140);

/** Reads (and with `trim`, trims) the pools of `deviceType`'s runtime. */
export function readMemoryPool(deviceType: number, trim: boolean): MemoryPoolStats {
  check(native.abd_device_staging(deviceType, trim ? 1 : 0, words));
  return {
    deviceBlocks: words[3], deviceHighWater: words[4],
    pinnedBlocks: words[5], pinnedHighWater: words[6],
    blockBytes: words[7],
    liveDeviceRanges: words[137], livePinnedRanges: words[138],
    stagingBlocks: words[0], stagingBlockBytes: words[2],
    freedBlocks: words[1] + words[8],
  };
}
