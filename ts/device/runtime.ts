/**
 * GPU runtimes from TypeScript: CUDA (libcuda.so.1, the driver API) and
 * ROCm (libamdhip64.so), loaded at run time by libarrow_device
 * (zig/device/). No apache-arrow here.
 *
 * "Not available" is an ordinary state: `deviceAvailability(kind)` says
 * why (library missing, stub driver, driver too old, no device, missing
 * symbol) and what was tried; `deviceRuntime(kind)` throws a
 * `DeviceUnavailableError` with that message.
 *
 * Ownership. `DeviceMemory`, `DeviceStream` and `DeviceEvent` own what they
 * wrap until `free()`/`destroy()` (or `using`); a FinalizationRegistry
 * frees forgotten ones as a safety net (reported in debug mode). Raw
 * addresses and handles (`address`, `handle`) are valid until then.
 * `HostRegistration` holds the JS buffer it page-locked until
 * `unregister()`. Memory exported by `exportRawArray` / `wrapDeviceMemory`
 * (or a `hostView()` of it) is freed after the last such export's release,
 * whenever `free()` was called.
 *
 * Threads. Everything here runs on the calling (JS) thread and blocks only
 * in the synchronous calls (`synchronize()`, copies without a stream).
 * Asynchronous copies read or write JS memory later, on the driver's
 * thread: the stream keeps that memory reachable until `synchronize()`,
 * and the caller must not change or read it before then.
 */
import { ptr, toArrayBuffer } from "bun:ffi";
import {
  CopyDirection, MemoryKind, PointerKind,
  type CopyDirectionName, type MemoryKindName, type PointerKindName,
} from "../core/abi/layout.ts";
import { asPointer } from "../core/abi/structs.ts";
import { DeviceUnavailableError, InvalidArgumentError, ReleasedError, Status, UnknownDeviceError } from "../core/errors.ts";
import { deviceKindNames, deviceLibraryEnvVars, kindEntry, kindEntryOfDeviceType, loadDeviceRuntime, type DeviceKind, type DeviceKindEntry } from "../core/ffi/device_loader.ts";
import { check, lastError, native } from "../core/ffi/library.ts";
import { readMemoryPool, type MemoryPoolOptions, type MemoryPoolStats } from "./pool_stats.ts";
import { reportLeak, track, untrack } from "../native/debug.ts";
import { addressArg, argumentError, booleanArg, integerArg, internalConstruction, oneOfArg, optionsArg, stringArg } from "../core/args.ts";
import { nativeArray } from "../core/ffi/native_arrays.ts";

/** Only this module constructs the runtime and its handles. */
const deviceToken = Symbol("DeviceRuntime");

/** A device runtime, named as in the library's table of device kinds
 * (zig/device/kinds.zig): "cuda" (the CUDA driver API) or "rocm" (HIP). */
export type { DeviceKind };

/** Environment variables that name each runtime's library path. */
export const libraryEnvVars: Record<DeviceKind, string> = deviceLibraryEnvVars;

/** The kind names as an argument check's expectation: `"cuda" or "rocm"`. */
const deviceKindChoices = deviceKindNames.map((k) => JSON.stringify(k)).join(" or ");

/** A device ordinal: an int32, as CUDA and HIP take it (the runtime
 * says whether that device exists). */
export function ordinalArg(fn: string, param: string, id: unknown): number {
  return integerArg(fn, param, id, -(2 ** 31), 2 ** 31 - 1);
}

/** The runtime serving arrays of an Arrow device type (its device,
 * pinned or managed memory), or null: the inverse of `targetDeviceType`. */
export function kindOfDeviceType(deviceType: number): DeviceKind | null {
  integerArg("kindOfDeviceType", "deviceType", deviceType, -(2 ** 31), 2 ** 31 - 1);
  return kindEntryOfDeviceType(deviceType)?.name ?? null;
}

/** The table entry of runtime `kind`, checked for `fn`. */
function checkKind(fn: string, kind: DeviceKind): DeviceKindEntry {
  if (typeof kind !== "string") throw argumentError(fn, "kind", deviceKindChoices, kind);
  const entry = kindEntry(kind);
  if (entry === undefined) {
    throw new UnknownDeviceError(Status.unknown_device, `${fn}: unknown device runtime ${JSON.stringify((kind as string).slice(0, 40))}: expected ${deviceKindChoices}`);
  }
  return entry;
}

function readCString(bytes: Uint8Array): string {
  const end = bytes.indexOf(0);
  return new TextDecoder().decode(bytes.subarray(0, end < 0 ? bytes.length : end));
}

/** The address of a JS buffer's first byte, with a stable backing store
 * (small typed arrays may live inline in the GC heap and move). */
export function hostAddress(view: NodeJS.ArrayBufferView): number {
  void view.buffer;
  return view.byteLength === 0 ? 0 : ptr(view);
}

const words = nativeArray(Float64Array, 4);

function loadRuntime(kind: DeviceKind): number {
  return loadDeviceRuntime(checkKind("deviceAvailability", kind).deviceType);
}

/** Whether a runtime can be used here: its library, version and device
 * count, or the reason it cannot (which state, what was tried). */
export type DeviceAvailability =
  | { kind: DeviceKind; available: true; library: string; version: number; deviceCount: number }
  | { kind: DeviceKind; available: false; reason: string };

/** Whether `kind` can be used here, loading it if needed. Never throws for
 * an unavailable runtime: the reason says which state it is and what was
 * tried. A runtime that failed to load is tried again on the next call. */
export function deviceAvailability(kind: DeviceKind): DeviceAvailability {
  const loaded = loadRuntime(kind);
  if (loaded !== 0) return { kind, available: false, reason: lastError() };
  const path = nativeArray(Uint8Array, 512);
  check(native.abd_device_runtime_info(checkKind("deviceAvailability", kind).deviceType, words, path, path.length));
  return { kind, available: true, library: readCString(path), version: words[1], deviceCount: words[0] };
}

const runtimes = new Map<DeviceKind, DeviceRuntime>();

/** The loaded runtime of `kind`; throws `DeviceUnavailableError` (with the
 * reason) when it is not available. */
export function deviceRuntime(kind: DeviceKind): DeviceRuntime {
  checkKind("deviceRuntime", kind);
  const existing = runtimes.get(kind);
  if (existing) return existing;
  const availability = deviceAvailability(kind);
  if (!availability.available) throw new DeviceUnavailableError(Status.device_unavailable, availability.reason);
  const runtime = new DeviceRuntime(deviceToken, kind, availability.library, availability.version, availability.deviceCount);
  runtimes.set(kind, runtime);
  return runtime;
}

/** One device of a runtime. */
export type DeviceInfo = {
  kind: DeviceKind;
  /** Device ordinal: the `device_id` of its arrays. */
  id: number;
  /** The name the runtime reports, e.g. "NVIDIA H100 80GB HBM3". */
  name: string;
  /** Total device memory in bytes. */
  totalMemoryBytes: number;
};

/** What `DeviceRuntime.pointerInfo` finds out about an address. */
export type PointerInfo = {
  /** Plain host memory, device memory, pinned host or managed memory. */
  memory: PointerKindName;
  /** Arrow device type of such memory (CPU for plain host memory). */
  deviceType: number;
  /** -1 for plain host memory. */
  deviceId: number;
};

/** Options of `DeviceRuntime.allocate`. */
export type AllocateOptions = {
  /** The device ordinal (default 0). */
  id?: number;
  /** "device" memory (default), "pinned" host memory or "managed" memory. */
  memory?: MemoryKindName;
};

/** One side of a copy: a host buffer (typed array or DataView), device
 * memory, or a raw address (of unknown size: the copy trusts it). */
export type CopyOperand = NodeJS.ArrayBufferView | DeviceMemory | number;

/** Options of `DeviceRuntime.copy`. */
export type CopyOptions = {
  /** Asynchronous on this stream; synchronous when absent. */
  stream?: DeviceStream;
  /** Device whose context runs the copy (default: the device memory's, else 0). */
  id?: number;
};

/** Checks a copy operand: device memory, a JS buffer, or a non-zero
 * address (any alignment: copies may start mid-allocation). */
function operandArg(param: string, operand: unknown): void {
  if (operand instanceof DeviceMemory || ArrayBuffer.isView(operand)) return;
  integerArg("DeviceRuntime.copy", param, operand, 1);
}

function operandAddress(operand: CopyOperand): number {
  if (operand instanceof DeviceMemory) return operand.address;
  if (typeof operand === "number") return operand;
  return hostAddress(operand);
}

function operandBytes(operand: CopyOperand): number | null {
  if (operand instanceof DeviceMemory) return operand.byteLength;
  if (typeof operand === "number") return null;
  return operand.byteLength;
}

/** One loaded runtime. Get it with `deviceRuntime(kind)`. */
export class DeviceRuntime {
  /** The Arrow device type of this runtime's device memory (CUDA or ROCM). */
  readonly deviceType: number;

  /** Not for users: use `deviceRuntime(kind)`. */
  constructor(
    token: symbol,
    readonly kind: DeviceKind,
    /** The library that was loaded. */
    readonly library: string,
    /** CUDA driver version (e.g. 12040) or HIP runtime version. */
    readonly version: number,
    readonly deviceCount: number,
  ) {
    internalConstruction("DeviceRuntime", token, deviceToken, "use deviceRuntime(kind)");
    this.deviceType = checkKind("DeviceRuntime", kind).deviceType;
    stringArg("DeviceRuntime", "library", library);
    integerArg("DeviceRuntime", "version", version, 0);
    integerArg("DeviceRuntime", "deviceCount", deviceCount, 0);
  }

  /** Name and memory size of device `id`. */
  device(id: number): DeviceInfo {
    ordinalArg("DeviceRuntime.device", "id", id);
    const name = nativeArray(Uint8Array, 256);
    check(native.abd_device_get_info(this.deviceType, id, name, name.length, words));
    return { kind: this.kind, id, name: readCString(name), totalMemoryBytes: words[0] };
  }

  /** What this runtime's memory pools hold (blocks, high-water marks,
   * live ranges); `{ trim: true }` first frees every idle block. */
  memoryPool(options: MemoryPoolOptions = {}): MemoryPoolStats {
    optionsArg("DeviceRuntime.memoryPool", "options", options, ["trim"]);
    booleanArg("DeviceRuntime.memoryPool", "options.trim", options.trim, true);
    return readMemoryPool(this.deviceType, options.trim === true);
  }

  /** Every device of this runtime, by ordinal. */
  devices(): DeviceInfo[] {
    return Array.from({ length: this.deviceCount }, (_, id) => this.device(id));
  }

  /** `byteLength` bytes of `memory` for device `id`. */
  allocate(byteLength: number, options: AllocateOptions = {}): DeviceMemory {
    integerArg("DeviceRuntime.allocate", "byteLength", byteLength, 0);
    optionsArg("DeviceRuntime.allocate", "options", options, ["memory", "id"]);
    const memory = oneOfArg("DeviceRuntime.allocate", "options.memory", options.memory ?? "device", ["device", "pinned", "managed"]);
    const id = ordinalArg("DeviceRuntime.allocate", "options.id", options.id ?? 0);
    check(native.abd_device_alloc(this.deviceType, id, MemoryKind[memory], byteLength, words));
    return new DeviceMemory(deviceToken, this, id, memory, words[0], byteLength);
  }

  /** Page-locks `view`'s bytes (cuMemHostRegister_v2 / hipHostRegister)
   * so copies to and from it run at pinned speed, until `unregister()` (or
   * `using`). The registration holds `view` (and its buffer) reachable, and
   * unregisters exactly once; a forgotten one is unregistered when
   * collected. Registering is slow (it pins every page): register buffers
   * that are reused, not one per copy. */
  registerHost(view: NodeJS.ArrayBufferView, id = 0): HostRegistration {
    if (!ArrayBuffer.isView(view)) throw argumentError("DeviceRuntime.registerHost", "view", "a typed array or DataView", view);
    if (view.byteLength === 0) throw new InvalidArgumentError(Status.invalid_argument, "DeviceRuntime.registerHost: view is empty: there is nothing to register");
    ordinalArg("DeviceRuntime.registerHost", "id", id);
    const address = hostAddress(view);
    check(native.abd_device_host_register(this.deviceType, id, asPointer(address), view.byteLength));
    return new HostRegistration(deviceToken, this, id, view, address);
  }

  /** A new non-blocking stream of device `id`; destroy it with `destroy()`
   * (or `using`). */
  createStream(id = 0): DeviceStream {
    ordinalArg("DeviceRuntime.createStream", "id", id);
    check(native.abd_device_stream_create(this.deviceType, id, words));
    return new DeviceStream(deviceToken, this, id, words[0]);
  }

  /** A new event of device `id`; destroy it with `destroy()` (or `using`). */
  createEvent(id = 0): DeviceEvent {
    ordinalArg("DeviceRuntime.createEvent", "id", id);
    check(native.abd_device_event_create(this.deviceType, id, words));
    return new DeviceEvent(deviceToken, this, id, words[0]);
  }

  /** Blocks until the event at `eventAddress` (a `CUevent*` /
   * `hipEvent_t*`, e.g. an array's `sync_event`) fired. */
  synchronizeEvent(eventAddress: number, id = 0): void {
    addressArg("DeviceRuntime.synchronizeEvent", "eventAddress", eventAddress);
    ordinalArg("DeviceRuntime.synchronizeEvent", "id", id);
    check(native.abd_device_event_synchronize(this.deviceType, id, asPointer(eventAddress)));
  }

  /** What `address` is to this runtime. */
  pointerInfo(address: number): PointerInfo {
    integerArg("DeviceRuntime.pointerInfo", "address", address, 0);
    check(native.abd_device_pointer_query(this.deviceType, asPointer(address), words));
    const memory = (Object.keys(PointerKind) as PointerKindName[]).find((k) => PointerKind[k] === words[0]) ?? "host";
    return { memory, deviceType: words[1], deviceId: words[2] };
  }

  /** Copies `byteLength` bytes (default: the smaller operand) from `src`
   * to `dst`. Synchronous unless `options.stream` is given; then the JS
   * memory involved is kept reachable until `stream.synchronize()`. */
  copy(direction: CopyDirectionName, dst: CopyOperand, src: CopyOperand, byteLength?: number, options: CopyOptions = {}): void {
    oneOfArg("DeviceRuntime.copy", "direction", direction, Object.keys(CopyDirection) as CopyDirectionName[]);
    operandArg("dst", dst);
    operandArg("src", src);
    if (byteLength !== undefined) integerArg("DeviceRuntime.copy", "byteLength", byteLength, 0);
    optionsArg("DeviceRuntime.copy", "options", options, ["id", "stream"]);
    if (options.id !== undefined) ordinalArg("DeviceRuntime.copy", "options.id", options.id);
    if (options.stream !== undefined && !(options.stream instanceof DeviceStream)) throw argumentError("DeviceRuntime.copy", "options.stream", "a DeviceStream", options.stream);
    const sizes = [operandBytes(dst), operandBytes(src)].filter((n): n is number => n !== null);
    const bytes = byteLength ?? (sizes.length ? Math.min(...sizes) : 0);
    for (const size of sizes) {
      if (bytes > size) throw new InvalidArgumentError(Status.invalid_argument, `copy of ${bytes} bytes overruns an operand of ${size} bytes`);
    }
    const id = options.id ?? (dst instanceof DeviceMemory ? dst.deviceId : src instanceof DeviceMemory ? src.deviceId : 0);
    const stream = options.stream;
    if (stream) {
      if (stream.runtime !== this) throw new InvalidArgumentError(Status.invalid_argument, `stream belongs to ${stream.runtime.kind}, not ${this.kind}`);
      keepUntilSynchronized(stream, dst, src);
    }
    check(native.abd_device_copy(this.deviceType, id, CopyDirection[direction], asPointer(operandAddress(dst)), asPointer(operandAddress(src)), bytes,
      stream ? asPointer(stream.handle) : null, stream ? 1 : 0));
  }
}

/** `keep`: what must stay reachable until `free` ran. */
type Freeable = { free: () => void; token: number; label: string; keep?: unknown };
const safetyNet = new FinalizationRegistry<Freeable>((held) => {
  reportLeak(held.token, held.label);
  try {
    held.free();
  } catch {
    // A runtime that failed at GC time cannot be reported to anyone.
  }
});

/** Checks what a DeviceMemory/Stream/Event is made of (made by
 * DeviceRuntime; the constructors are reachable from JS all the same). */
function handleArgs(fn: string, runtime: unknown, deviceId: unknown, address: unknown, addressParam = "address"): void {
  if (!(runtime instanceof DeviceRuntime)) throw argumentError(fn, "runtime", "a DeviceRuntime (from deviceRuntime())", runtime);
  ordinalArg(fn, "deviceId", deviceId);
  integerArg(fn, addressParam, address, 0);
}

/** Pinned memory behind each `hostView()` ArrayBuffer, so that an export of
 * the view holds the memory (see `DeviceMemory.free`). */
const viewOwners = new WeakMap<ArrayBuffer, DeviceMemory>();

/** The DeviceMemory whose `hostView()` `view` is, if any. */
export function memoryBehind(view: NodeJS.ArrayBufferView): DeviceMemory | undefined {
  return view.buffer instanceof ArrayBuffer ? viewOwners.get(view.buffer) : undefined;
}

/** An export (exportRawArray, wrapDeviceMemory) points into `memory`: it
 * is not freed before the matching `dropExport`. Not public: the export's
 * release is the only caller of `dropExport`. */
export let holdForExport: (memory: DeviceMemory) => void;
/** The export is released; a `free()` waiting for it runs. */
export let dropExport: (memory: DeviceMemory) => void;

/** Memory allocated through a runtime: device, pinned host or managed. */
export class DeviceMemory implements Disposable {
  #freed = false;
  #released = false;
  #exports = 0;
  #views: ArrayBuffer[] = [];
  #token: number;
  /** Arrow device type of this memory: its runtime's device, pinned or
   * managed type. */
  readonly deviceType: number;

  /** Not for users: use `DeviceRuntime.allocate`. */
  constructor(token: symbol, readonly runtime: DeviceRuntime, readonly deviceId: number, readonly memory: MemoryKindName, readonly address: number, readonly byteLength: number) {
    internalConstruction("DeviceMemory", token, deviceToken, "use DeviceRuntime.allocate");
    handleArgs("DeviceMemory", runtime, deviceId, address);
    oneOfArg("DeviceMemory", "memory", memory, ["device", "pinned", "managed"]);
    integerArg("DeviceMemory", "byteLength", byteLength, 0);
    const entry = checkKind("DeviceMemory", runtime.kind);
    this.deviceType = memory === "device" ? entry.deviceType
      : memory === "pinned" ? entry.hostType
      : entry.managedType ?? entry.deviceType;
    const label = `${runtime.kind} ${memory} memory (${byteLength} bytes)`;
    this.#token = track(label);
    const deviceType = runtime.deviceType;
    const kind = MemoryKind[memory];
    safetyNet.register(this, { free: () => check(native.abd_device_free(deviceType, deviceId, kind, asPointer(address))), token: this.#token, label }, this);
  }

  /** True once `free()` ran. */
  get freed(): boolean {
    return this.#freed;
  }

  /** A zero-copy view for the host: pinned and managed memory only (after
   * the work writing it has been synchronized). Detached by `free()`. */
  hostView(): Uint8Array {
    if (this.#freed) throw new ReleasedError(Status.released, "this device memory was freed");
    if (this.memory === "device") {
      throw new InvalidArgumentError(Status.invalid_argument, `${this.runtime.kind} device memory cannot be read by the host; copy it with copy("device_to_host", ...)`);
    }
    const buffer = toArrayBuffer(asPointer(this.address), 0, this.byteLength);
    this.#views.push(buffer);
    viewOwners.set(buffer, this);
    return new Uint8Array(buffer);
  }

  static {
    holdForExport = (memory) => {
      if (memory.#freed) throw new ReleasedError(Status.released, "this device memory was freed");
      memory.#exports++;
    };
    dropExport = (memory) => {
      memory.#exports--;
      if (memory.#exports === 0 && memory.#freed) memory.#release();
    };
  }

  /** Frees the memory (waiting for work using it, as the drivers do).
   * Idempotent. Its `hostView()` ArrayBuffers are detached at once; the
   * memory itself goes once no export points into it any more (the last
   * consumer's release). */
  free(): void {
    if (this.#freed) return;
    this.#freed = true;
    safetyNet.unregister(this);
    untrack(this.#token);
    for (const view of this.#views) if (!view.detached) view.transfer(0);
    this.#views = [];
    if (this.#exports === 0) this.#release();
  }

  #release(): void {
    if (this.#released) return;
    this.#released = true;
    check(native.abd_device_free(this.runtime.deviceType, this.deviceId, MemoryKind[this.memory], asPointer(this.address)));
  }

  [Symbol.dispose](): void {
    this.free();
  }
}

/** Set by DeviceStream's static block (see there). */
let keepUntilSynchronized: (stream: DeviceStream, ...objects: unknown[]) => void;

/** A non-blocking stream of one device. */
export class DeviceStream implements Disposable {
  #destroyed = false;
  #pending: unknown[] = [];
  #token: number;

  /** Not for users: use `DeviceRuntime.createStream`. */
  constructor(token: symbol, readonly runtime: DeviceRuntime, readonly deviceId: number, /** CUstream / hipStream_t */ readonly handle: number) {
    internalConstruction("DeviceStream", token, deviceToken, "use DeviceRuntime.createStream");
    handleArgs("DeviceStream", runtime, deviceId, handle, "handle");
    const label = `${runtime.kind} stream`;
    this.#token = track(label);
    const deviceType = runtime.deviceType;
    safetyNet.register(this, { free: () => check(native.abd_device_stream_destroy(deviceType, deviceId, asPointer(handle))), token: this.#token, label }, this);
  }

  #live(): void {
    if (this.#destroyed) throw new ReleasedError(Status.released, "this stream was destroyed");
  }

  // Module-private (DeviceRuntime.copy): keeps the JS memory of an
  // asynchronous copy reachable until the stream is synchronized.
  static {
    keepUntilSynchronized = (stream, ...objects) => {
      stream.#live();
      stream.#pending.push(...objects);
    };
  }

  /** Blocks until everything enqueued on the stream is done. */
  synchronize(): void {
    this.#live();
    check(native.abd_device_stream_synchronize(this.runtime.deviceType, this.deviceId, asPointer(this.handle)));
    this.#pending = [];
  }

  /** Makes the stream wait (on the device) for `event` (a DeviceEvent or a
   * `CUevent*` / `hipEvent_t*` address such as an array's sync_event). */
  waitEvent(event: DeviceEvent | number): void {
    this.#live();
    const address = typeof event === "number" ? event : event.address;
    check(native.abd_device_stream_wait_event(this.runtime.deviceType, this.deviceId, asPointer(this.handle), asPointer(address)));
  }

  /** Synchronizes, then destroys the stream. Idempotent. */
  destroy(): void {
    if (this.#destroyed) return;
    this.synchronize();
    this.#destroyed = true;
    safetyNet.unregister(this);
    untrack(this.#token);
    check(native.abd_device_stream_destroy(this.runtime.deviceType, this.deviceId, asPointer(this.handle)));
  }

  [Symbol.dispose](): void {
    this.destroy();
  }
}

/** An event (timing disabled). `address` is a `CUevent*` / `hipEvent_t*`:
 * what an ArrowDeviceArray's `sync_event` holds. */
export class DeviceEvent implements Disposable {
  #destroyed = false;
  #token: number;

  /** Not for users: use `DeviceRuntime.createEvent`. */
  constructor(token: symbol, readonly runtime: DeviceRuntime, readonly deviceId: number, readonly address: number) {
    internalConstruction("DeviceEvent", token, deviceToken, "use DeviceRuntime.createEvent");
    handleArgs("DeviceEvent", runtime, deviceId, address);
    const label = `${runtime.kind} event`;
    this.#token = track(label);
    safetyNet.register(this, { free: () => check(native.abd_device_event_destroy(asPointer(address))), token: this.#token, label }, this);
  }

  #live(): void {
    if (this.#destroyed) throw new ReleasedError(Status.released, "this event was destroyed");
  }

  /** Records the event on `stream` (default: the device's default stream). */
  record(stream?: DeviceStream): void {
    this.#live();
    check(native.abd_device_event_record(this.runtime.deviceType, this.deviceId, asPointer(this.address), stream ? asPointer(stream.handle) : null));
  }

  /** Blocks until the event fired. */
  synchronize(): void {
    this.#live();
    check(native.abd_device_event_synchronize(this.runtime.deviceType, this.deviceId, asPointer(this.address)));
  }

  /** True once the event fired (never blocks). */
  query(): boolean {
    this.#live();
    check(native.abd_device_event_query(this.runtime.deviceType, this.deviceId, asPointer(this.address), words));
    return words[0] === 1;
  }

  /** Destroys the event. Idempotent. Not while an exported array still
   * names it as its sync_event. */
  destroy(): void {
    if (this.#destroyed) return;
    this.#destroyed = true;
    safetyNet.unregister(this);
    untrack(this.#token);
    check(native.abd_device_event_destroy(asPointer(this.address)));
  }

  [Symbol.dispose](): void {
    this.destroy();
  }
}

/** Host memory page-locked by `DeviceRuntime.registerHost`: JS memory that
 * copies treat as pinned while registered. */
export class HostRegistration implements Disposable {
  #registered = true;
  #token: number;

  /** Not for users: use `DeviceRuntime.registerHost`. */
  constructor(token: symbol, readonly runtime: DeviceRuntime, readonly deviceId: number, /** The registered bytes (held until unregistered). */ readonly view: NodeJS.ArrayBufferView, readonly address: number) {
    internalConstruction("HostRegistration", token, deviceToken, "use DeviceRuntime.registerHost");
    handleArgs("HostRegistration", runtime, deviceId, address);
    if (!ArrayBuffer.isView(view)) throw argumentError("HostRegistration", "view", "a typed array or DataView", view);
    const label = `${runtime.kind} host registration (${view.byteLength} bytes)`;
    this.#token = track(label);
    const deviceType = runtime.deviceType;
    // The held value keeps `view` reachable until the unregistration ran.
    safetyNet.register(this, { free: () => check(native.abd_device_host_unregister(deviceType, deviceId, asPointer(address))), token: this.#token, label, keep: view }, this);
  }

  /** Bytes registered. */
  get byteLength(): number {
    return this.view.byteLength;
  }

  /** False once `unregister()` ran. */
  get registered(): boolean {
    return this.#registered;
  }

  /** Unpins the memory (cuMemHostUnregister / hipHostUnregister) and lets
   * the view go. Idempotent: the driver is called once. */
  unregister(): void {
    if (!this.#registered) return;
    this.#registered = false;
    safetyNet.unregister(this);
    untrack(this.#token);
    check(native.abd_device_host_unregister(this.runtime.deviceType, this.deviceId, asPointer(this.address)));
  }

  [Symbol.dispose](): void {
    this.unregister();
  }
}
