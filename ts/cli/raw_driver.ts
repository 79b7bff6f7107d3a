/**
 * The bench's raw baseline: the driver library (libcuda / libamdhip64, or a
 * fake driver under test) opened directly with bun:ffi, with no code of
 * this library between the bench and the driver. It times copies as
 * `bandwidthTest` and `nvbandwidth` do: events with timing enabled,
 * recorded on a stream around an asynchronous copy, read with
 * cuEventElapsedTime / hipEventElapsedTime.
 *
 * Ownership. `openRawDriver` retains device 0's primary context (CUDA) or
 * selects device 0 (HIP) and keeps it current on the calling thread until
 * `close()`; everything allocated or created through the returned object is
 * freed by the bench before `close()`. Events it creates can also be
 * recorded on streams of this library (the handles are the driver's).
 */
import { dlopen, FFIType, ptr, type Pointer } from "bun:ffi";
import type { DeviceKind } from "../device/runtime.ts";
import { nativeArray } from "../core/ffi/native_arrays.ts";

const { i32, u32, u64, ptr: p } = FFIType;
const usize = FFIType.u64;

const cudaSymbols = {
  cuInit: { args: [u32], returns: i32 },
  cuDeviceGet: { args: [p, i32], returns: i32 },
  cuDevicePrimaryCtxRetain: { args: [p, i32], returns: i32 },
  cuDevicePrimaryCtxRelease_v2: { args: [i32], returns: i32 },
  cuCtxPushCurrent_v2: { args: [p], returns: i32 },
  cuCtxPopCurrent_v2: { args: [p], returns: i32 },
  cuMemAlloc_v2: { args: [p, usize], returns: i32 },
  cuMemFree_v2: { args: [u64], returns: i32 },
  cuMemAllocHost_v2: { args: [p, usize], returns: i32 },
  cuMemFreeHost: { args: [p], returns: i32 },
  cuMemcpyHtoDAsync_v2: { args: [u64, p, usize, p], returns: i32 },
  cuMemcpyDtoHAsync_v2: { args: [p, u64, usize, p], returns: i32 },
  cuMemcpyDtoDAsync_v2: { args: [u64, u64, usize, p], returns: i32 },
  cuStreamCreate: { args: [p, u32], returns: i32 },
  cuStreamDestroy_v2: { args: [p], returns: i32 },
  cuStreamSynchronize: { args: [p], returns: i32 },
  cuEventCreate: { args: [p, u32], returns: i32 },
  cuEventRecord: { args: [p, p], returns: i32 },
  cuEventSynchronize: { args: [p], returns: i32 },
  cuEventElapsedTime: { args: [p, p, p], returns: i32 },
  cuEventDestroy_v2: { args: [p], returns: i32 },
} as const;

const hipSymbols = {
  hipSetDevice: { args: [i32], returns: i32 },
  hipMalloc: { args: [p, usize], returns: i32 },
  hipFree: { args: [p], returns: i32 },
  hipHostMalloc: { args: [p, usize, u32], returns: i32 },
  hipHostFree: { args: [p], returns: i32 },
  hipMemcpyAsync: { args: [p, p, usize, i32, p], returns: i32 },
  hipStreamCreateWithFlags: { args: [p, u32], returns: i32 },
  hipStreamDestroy: { args: [p], returns: i32 },
  hipStreamSynchronize: { args: [p], returns: i32 },
  hipEventCreateWithFlags: { args: [p, u32], returns: i32 },
  hipEventRecord: { args: [p, p], returns: i32 },
  hipEventSynchronize: { args: [p], returns: i32 },
  hipEventElapsedTime: { args: [p, p, p], returns: i32 },
  hipEventDestroy: { args: [p], returns: i32 },
} as const;

/** Names of the calls each baseline makes, for the bench's labels. */
export const rawCallNames: Record<DeviceKind, { alloc: string; free: string; h2d: string; d2h: string; d2d: string; elapsed: string }> = {
  cuda: { alloc: "cuMemAlloc_v2", free: "cuMemFree_v2", h2d: "cuMemcpyHtoDAsync_v2", d2h: "cuMemcpyDtoHAsync_v2", d2d: "cuMemcpyDtoDAsync_v2", elapsed: "cuEventElapsedTime" },
  rocm: { alloc: "hipMalloc", free: "hipFree", h2d: "hipMemcpyAsync(HostToDevice)", d2h: "hipMemcpyAsync(DeviceToHost)", d2d: "hipMemcpyAsync(DeviceToDevice)", elapsed: "hipEventElapsedTime" },
};

/** The driver calls the bench makes, as addresses and handles (numbers). */
export type RawDriver = {
  kind: DeviceKind;
  allocDevice(bytes: number): number;
  freeDevice(address: number): void;
  allocPinned(bytes: number): number;
  freePinned(address: number): void;
  createStream(): number;
  destroyStream(stream: number): void;
  synchronizeStream(stream: number): void;
  /** An event with timing enabled. */
  createEvent(): number;
  destroyEvent(event: number): void;
  record(event: number, stream: number): void;
  /** Milliseconds between two recorded events, once both fired. */
  elapsedMs(start: number, end: number): number;
  copy(direction: "h2d" | "d2h" | "d2d", dst: number, src: number, bytes: number, stream: number): void;
  /** Releases the context (CUDA) and closes the library. */
  close(): void;
};

function checked(call: string, result: number): void {
  if (result !== 0) throw new Error(`raw driver: ${call} failed with error ${result}`);
}

const asPtr = (n: number) => n as unknown as Pointer;

/** Opens `library` (the driver the runtime loaded) directly. */
export function openRawDriver(kind: DeviceKind, library: string): RawDriver {
  return rawOpeners[kind](library);
}

function openCuda(library: string): RawDriver {
  const lib = dlopen(library, cudaSymbols);
  const f = lib.symbols;
  const out = nativeArray(BigUint64Array, 1);
  const ms = nativeArray(Float32Array, 1);
  const o = ptr(out);
  const take = (): number => Number(out[0]);
  checked("cuInit", f.cuInit(0));
  const device = nativeArray(Int32Array, 1);
  checked("cuDeviceGet", f.cuDeviceGet(ptr(device), 0));
  checked("cuDevicePrimaryCtxRetain", f.cuDevicePrimaryCtxRetain(o, device[0]));
  const context = take();
  checked("cuCtxPushCurrent_v2", f.cuCtxPushCurrent_v2(asPtr(context)));
  return {
    kind: "cuda",
    allocDevice: (bytes) => (checked("cuMemAlloc_v2", f.cuMemAlloc_v2(o, bytes)), take()),
    freeDevice: (address) => checked("cuMemFree_v2", f.cuMemFree_v2(address)),
    allocPinned: (bytes) => (checked("cuMemAllocHost_v2", f.cuMemAllocHost_v2(o, bytes)), take()),
    freePinned: (address) => checked("cuMemFreeHost", f.cuMemFreeHost(asPtr(address))),
    createStream: () => (checked("cuStreamCreate", f.cuStreamCreate(o, 1)), take()),
    destroyStream: (stream) => checked("cuStreamDestroy_v2", f.cuStreamDestroy_v2(asPtr(stream))),
    synchronizeStream: (stream) => checked("cuStreamSynchronize", f.cuStreamSynchronize(asPtr(stream))),
    createEvent: () => (checked("cuEventCreate", f.cuEventCreate(o, 0)), take()),
    destroyEvent: (event) => checked("cuEventDestroy_v2", f.cuEventDestroy_v2(asPtr(event))),
    record: (event, stream) => checked("cuEventRecord", f.cuEventRecord(asPtr(event), asPtr(stream))),
    elapsedMs: (start, end) => {
      checked("cuEventSynchronize", f.cuEventSynchronize(asPtr(end)));
      checked("cuEventElapsedTime", f.cuEventElapsedTime(ptr(ms), asPtr(start), asPtr(end)));
      return ms[0];
    },
    copy: (direction, dst, src, bytes, stream) => {
      if (direction === "h2d") checked("cuMemcpyHtoDAsync_v2", f.cuMemcpyHtoDAsync_v2(dst, asPtr(src), bytes, asPtr(stream)));
      else if (direction === "d2h") checked("cuMemcpyDtoHAsync_v2", f.cuMemcpyDtoHAsync_v2(asPtr(dst), src, bytes, asPtr(stream)));
      else checked("cuMemcpyDtoDAsync_v2", f.cuMemcpyDtoDAsync_v2(dst, src, bytes, asPtr(stream)));
    },
    close: () => {
      f.cuCtxPopCurrent_v2(o);
      f.cuDevicePrimaryCtxRelease_v2(device[0]);
      lib.close();
    },
  };
}

function openHip(library: string): RawDriver {
  const lib = dlopen(library, hipSymbols);
  const f = lib.symbols;
  const out = nativeArray(BigUint64Array, 1);
  const ms = nativeArray(Float32Array, 1);
  const o = ptr(out);
  const take = (): number => Number(out[0]);
  checked("hipSetDevice", f.hipSetDevice(0));
  const kinds = { h2d: 1, d2h: 2, d2d: 3 } as const;
  return {
    kind: "rocm",
    allocDevice: (bytes) => (checked("hipMalloc", f.hipMalloc(o, bytes)), take()),
    freeDevice: (address) => checked("hipFree", f.hipFree(asPtr(address))),
    allocPinned: (bytes) => (checked("hipHostMalloc", f.hipHostMalloc(o, bytes, 0)), take()),
    freePinned: (address) => checked("hipHostFree", f.hipHostFree(asPtr(address))),
    createStream: () => (checked("hipStreamCreateWithFlags", f.hipStreamCreateWithFlags(o, 1)), take()),
    destroyStream: (stream) => checked("hipStreamDestroy", f.hipStreamDestroy(asPtr(stream))),
    synchronizeStream: (stream) => checked("hipStreamSynchronize", f.hipStreamSynchronize(asPtr(stream))),
    createEvent: () => (checked("hipEventCreateWithFlags", f.hipEventCreateWithFlags(o, 0)), take()),
    destroyEvent: (event) => checked("hipEventDestroy", f.hipEventDestroy(asPtr(event))),
    record: (event, stream) => checked("hipEventRecord", f.hipEventRecord(asPtr(event), asPtr(stream))),
    elapsedMs: (start, end) => {
      checked("hipEventSynchronize", f.hipEventSynchronize(asPtr(end)));
      checked("hipEventElapsedTime", f.hipEventElapsedTime(ptr(ms), asPtr(start), asPtr(end)));
      return ms[0];
    },
    copy: (direction, dst, src, bytes, stream) => checked("hipMemcpyAsync", f.hipMemcpyAsync(asPtr(dst), asPtr(src), bytes, kinds[direction], asPtr(stream))),
    close: () => lib.close(),
  };
}

/** Each kind's raw baseline: a `Record` over the library's device kinds,
 * so that a kind added without one fails to type-check. */
const rawOpeners: Record<DeviceKind, (library: string) => RawDriver> = { cuda: openCuda, rocm: openHip };
