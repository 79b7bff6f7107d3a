/**
 * The TypeScript side's own copy of the ABI layout: struct sizes and field
 * offsets, device types, flags, and the word layouts of the library's
 * tables. On load it is compared with the manifest the library exports
 * (zig/manifest.zig); any difference throws `LayoutMismatchError`, so TS and
 * Zig can never drift apart silently.
 */
import { argumentError, clip, describeValue, integerArg, optionsArg, stringArg } from "../args.ts";
import { InvalidArgumentError, LayoutMismatchError, Status } from "../errors.ts";
import { manifestText } from "../ffi/library.ts";
import { adbcStructLayouts } from "./adbc_layout.ts";

export const ArrowSchemaLayout = {
  size: 72,
  fields: { format: 0, name: 8, metadata: 16, flags: 24, n_children: 32, children: 40, dictionary: 48, release: 56, private_data: 64 },
} as const;

export const ArrowArrayLayout = {
  size: 80,
  fields: { length: 0, null_count: 8, offset: 16, n_buffers: 24, n_children: 32, buffers: 40, children: 48, dictionary: 56, release: 64, private_data: 72 },
} as const;

export const ArrowArrayStreamLayout = {
  size: 40,
  fields: { get_schema: 0, get_next: 8, get_last_error: 16, release: 24, private_data: 32 },
} as const;

export const ArrowDeviceArrayLayout = {
  size: 128,
  fields: { array: 0, device_id: 80, device_type: 88, sync_event: 96, reserved: 104 },
} as const;

export const ArrowDeviceArrayStreamLayout = {
  size: 48,
  fields: { device_type: 0, get_schema: 8, get_next: 16, get_last_error: 24, release: 32, private_data: 40 },
} as const;

export const ArrowAsyncTaskLayout = {
  size: 16,
  fields: { extract_data: 0, private_data: 8 },
} as const;

export const ArrowAsyncProducerLayout = {
  size: 40,
  fields: { device_type: 0, request: 8, cancel: 16, additional_metadata: 24, private_data: 32 },
} as const;

export const ArrowAsyncDeviceStreamHandlerLayout = {
  size: 48,
  fields: { on_schema: 0, on_next_task: 8, on_error: 16, release: 24, producer: 32, private_data: 40 },
} as const;

/** Size and field offsets (bytes, 64-bit platforms) of every C struct of
 * the interfaces, by struct name; checked against the library at load. */
export const structLayouts = {
  ArrowSchema: ArrowSchemaLayout,
  ArrowArray: ArrowArrayLayout,
  ArrowArrayStream: ArrowArrayStreamLayout,
  ArrowDeviceArray: ArrowDeviceArrayLayout,
  ArrowDeviceArrayStream: ArrowDeviceArrayStreamLayout,
  ArrowAsyncTask: ArrowAsyncTaskLayout,
  ArrowAsyncProducer: ArrowAsyncProducerLayout,
  ArrowAsyncDeviceStreamHandler: ArrowAsyncDeviceStreamHandlerLayout,
} as const;

/** ArrowDeviceType values (DLPack's DLDeviceType). */
export const DeviceType = {
  CPU: 1,
  CUDA: 2,
  CUDA_HOST: 3,
  OPENCL: 4,
  VULKAN: 7,
  METAL: 8,
  VPI: 9,
  ROCM: 10,
  ROCM_HOST: 11,
  EXT_DEV: 12,
  CUDA_MANAGED: 13,
  ONEAPI: 14,
  WEBGPU: 15,
  HEXAGON: 16,
} as const;
/** A device type by name: "CPU", "CUDA", "CUDA_HOST", ... */
export type DeviceTypeName = keyof typeof DeviceType;

/** The name of ArrowDeviceType `value`; `unknown(<value>)` for a number
 * the C Device Data Interface does not define. */
export function deviceTypeName(value: number): DeviceTypeName | `unknown(${number})` {
  integerArg("deviceTypeName", "value", value, -(2 ** 31), 2 ** 31 - 1);
  for (const [name, v] of Object.entries(DeviceType)) if (v === value) return name as DeviceTypeName;
  return `unknown(${value})`;
}

/** True when the host may read the buffers (after waiting on the event). */
export function isHostAccessible(deviceType: number): boolean {
  integerArg("isHostAccessible", "deviceType", deviceType, -(2 ** 31), 2 ** 31 - 1);
  return deviceType === DeviceType.CPU || deviceType === DeviceType.CUDA_HOST ||
    deviceType === DeviceType.ROCM_HOST || deviceType === DeviceType.CUDA_MANAGED;
}

/** ArrowSchema.flags bits. */
export const Flags = { DICTIONARY_ORDERED: 1, NULLABLE: 2, MAP_KEYS_SORTED: 4 } as const;

/** Validation levels (zig/validate/validate.zig). */
export const ValidationLevel = { none: 0, minimal: 1, default: 2, full: 3 } as const;
/** A validation level by name: "none", "minimal", "default" or "full"
 * (nanoarrow's levels; "default" never reads out of bounds). */
export type ValidationLevelName = keyof typeof ValidationLevel;

const validationKeys = ["validation"] as const;

/** `options.validation` of `fn` (default "default") as a level number,
 * after checking that `options` holds only `known` keys. */
export function validationLevelArg(fn: string, options: unknown, known: readonly string[] = validationKeys): number {
  const checked = optionsArg(fn, "options", options as object | undefined, known) as { validation?: unknown };
  const name = checked.validation ?? "default";
  if (typeof name !== "string" || !Object.hasOwn(ValidationLevel, name)) {
    const shown = typeof name === "string" ? JSON.stringify(clip(name, 40)) : describeValue(name);
    throw new InvalidArgumentError(Status.invalid_argument, `${fn}: unknown validation level ${shown} (none, minimal, default, full)`);
  }
  return ValidationLevel[name as keyof typeof ValidationLevel];
}


/** Words of one node record of an owner's node table (zig/validate/validate.zig). */
export const NodeWord = {
  schema: 0, array: 1, type_id: 2, length: 3, null_count: 4, offset: 5, n_buffers: 6,
  first_buffer: 7, n_children: 8, first_child: 9, dictionary: 10, parent: 11,
} as const;
export const nodeStride = 12;

/** Words of one buffer record. */
export const BufferWord = { address: 0, size_bytes: 1, kind: 2, element_bytes: 3 } as const;
export const bufferStride = 4;

/** What a physical buffer holds (zig/core/format.zig BufferKind). */
export const BufferKind = {
  bits: 0, fixed: 1, offsets32: 2, offsets64: 3, bytes: 4, views: 5, variadic_bytes: 6,
  variadic_sizes: 7, type_ids: 8, view_offsets32: 9, view_offsets64: 10, union_offsets: 11,
} as const;

/** Type ids of the node table (zig/core/format.zig TypeId). */
export const TypeId = {
  null: 0, boolean: 1, int8: 2, uint8: 3, int16: 4, uint16: 5, int32: 6, uint32: 7, int64: 8,
  uint64: 9, float16: 10, float32: 11, float64: 12, binary: 13, large_binary: 14, binary_view: 15,
  utf8: 16, large_utf8: 17, utf8_view: 18, decimal: 19, fixed_size_binary: 20, date32: 21,
  date64: 22, time32: 23, time64: 24, timestamp: 25, duration: 26, interval_months: 27,
  interval_day_time: 28, interval_month_day_nano: 29, list: 30, large_list: 31, list_view: 32,
  large_list_view: 33, fixed_size_list: 34, struct: 35, map: 36, dense_union: 37,
  sparse_union: 38, run_end_encoded: 39,
} as const;
/** The Arrow type of an imported node, by name: "int32", "utf8",
 * "dense_union", ... (one per C Data Interface format). */
export type TypeIdName = keyof typeof TypeId;

/** Which stream struct a call takes or fills (zig/core/abi.zig StreamKind). */
export const StreamKind = { array: 0, device: 1 } as const;

/** Tags of the library's JS work queue (zig/core/js_queue.zig). */
export const JsWorkTag = { stream_export_request: 1, stream_import_pulled: 2, owner_release: 3, adbc_call_done: 4 } as const;

/** Counters, in the library's order (zig/core/counters.zig). */
export const counterNames = [
  "live_array_exports", "live_schema_exports", "keepalive_pending", "live_owners",
  "live_imported_views", "live_reexports", "imported_bytes_held", "live_stream_exports",
  "live_stream_imports", "live_device_allocations", "live_device_events", "live_async",
  "live_adbc_objects",
] as const;
/** The name of one of the library's live-object counters. */
export type CounterName = (typeof counterNames)[number];

/** Words of `abd_owner_info`. */
export const OwnerInfoWord = {
  nodes: 0, node_count: 1, buffers: 2, buffer_count: 3, device_type: 4, device_id: 5,
  sync_event: 6, bytes_held: 7, host_readable: 8, schema: 9, device_array: 10,
} as const;
export const ownerInfoWords = 11;

export const maxNestingDepth = 64;

/** Words of a re-export request (zig/import/reexport.zig RequestWord). */
export const ReexportRequestWord = {
  flags: 0, node: 1, base_offset: 2, base_length: 3, child: 4, slice_offset: 5, slice_length: 6, shape: 7,
} as const;
export const reexportRequestWords = 8;
/** Bits of the request's `flags` word. */
export const ReexportFlag = { base: 1, child: 2, dictionary: 4, slice: 8 } as const;
/** What the selection becomes: itself, its only column, or a one-column table. */
export const ReexportShape = { as_is: 0, column: 1, table: 2 } as const;
/** Words `abd_owner_select` writes. */
export const WindowWord = { node: 0, offset: 1, length: 2, null_count: 3 } as const;
export const windowWords = 4;
/** Kinds of device-runtime memory (zig/device/runtime.zig MemoryKind). */
export const MemoryKind = { device: 0, pinned: 1, managed: 2 } as const;
/** A kind of device-runtime memory by name. */
export type MemoryKindName = keyof typeof MemoryKind;

/** Directions of `abd_device_copy` (zig/device/runtime.zig Direction). */
export const CopyDirection = { host_to_device: 0, device_to_host: 1, device_to_device: 2 } as const;
/** A copy direction by name. */
export type CopyDirectionName = keyof typeof CopyDirection;

/** What a pointer query finds (zig/device/runtime.zig PointerKind). */
export const PointerKind = { host: 0, device: 1, pinned: 2, managed: 3 } as const;
/** What a pointer query found, by name. */
export type PointerKindName = keyof typeof PointerKind;
/** Words of `abd_async_consumer_poll` (zig/async/consumer.zig StateWord). */
export const AsyncConsumerWord = {
  schema_received: 0, queued: 1, ended: 2, errored: 3, released: 4, requested: 5, received: 6,
  taken: 7, discarded: 8, device_type: 9, cancelled: 10, extract_failed: 11, error_code: 12, error_local: 13,
  task_metadata_bytes: 14, wakes: 15, take_turns: 16,
} as const;
export const asyncConsumerWords = 17;

/** Strings of `abd_async_consumer_string` (zig/async/consumer.zig StringId). */
export const AsyncConsumerString = { producer_metadata: 0, error_message: 1, error_metadata: 2, task_metadata: 3 } as const;

/** Words of `abd_async_producer_poll` (zig/async/producer.zig StateWord). */
export const AsyncProducerWord = { credits: 0, requested: 1, sent: 2, cancelled: 3, bad_request: 4, bad_request_n: 5, wakes: 6 } as const;
export const asyncProducerWords = 7;

type Manifest = {
  abi: number;
  errno?: Record<string, number>;
  pointer_size: number;
  structs: Record<string, { size: number; fields: Record<string, number> }>;
  adbc_structs?: Record<string, { size: number; fields: Record<string, number> }>;
  device_types: Record<string, number>;
  flags: Record<string, number>;
  status: Record<string, number>;
  counters: Record<string, number>;
  node_words: Record<string, number>;
  node_stride: number;
  buffer_words: Record<string, number>;
  buffer_stride: number;
  buffer_kinds: Record<string, number>;
  type_ids: Record<string, number>;
  validation_levels: Record<string, number>;
  stream_kinds: Record<string, number>;
  js_work_tags: Record<string, number>;
  max_nesting_depth: number;
  reexport_request_words: Record<string, number>;
  reexport_flags: Record<string, number>;
  reexport_shapes: Record<string, number>;
  window_words: Record<string, number>;
  memory_kinds: Record<string, number>;
  copy_directions: Record<string, number>;
  pointer_kinds: Record<string, number>;
  async_consumer_words: Record<string, number>;
  async_consumer_strings: Record<string, number>;
  async_producer_words: Record<string, number>;
};

/** Every table the TS layer shares with the library (struct layouts and
 * enum values), as `layoutProblems` compares them with the manifest. */
export type LayoutTables = {
  structs: Record<string, { size: number; fields: Record<string, number> }>;
  /** The ADBC structs (adbc_layout.ts). */
  adbcStructs: Record<string, { size: number; fields: Record<string, number> }>;
  deviceTypes: Record<string, number>;
  flags: Record<string, number>;
  status: Record<string, number>;
  counters: readonly string[];
  nodeWords: Record<string, number>;
  nodeStride: number;
  bufferWords: Record<string, number>;
  bufferStride: number;
  bufferKinds: Record<string, number>;
  typeIds: Record<string, number>;
  validationLevels: Record<string, number>;
  streamKinds: Record<string, number>;
  jsWorkTags: Record<string, number>;
  maxNestingDepth: number;
  reexportRequestWords: Record<string, number>;
  reexportFlags: Record<string, number>;
  reexportShapes: Record<string, number>;
  windowWords: Record<string, number>;
  memoryKinds: Record<string, number>;
  copyDirections: Record<string, number>;
  pointerKinds: Record<string, number>;
  asyncConsumerWords: Record<string, number>;
  asyncConsumerStrings: Record<string, number>;
  asyncProducerWords: Record<string, number>;
};

/** The tables this module declares, as compared against the manifest. */
export const tsLayout: LayoutTables = {
  structs: structLayouts,
  adbcStructs: adbcStructLayouts,
  deviceTypes: DeviceType,
  flags: Flags,
  status: Status,
  counters: counterNames,
  nodeWords: NodeWord,
  nodeStride,
  bufferWords: BufferWord,
  bufferStride,
  bufferKinds: BufferKind,
  typeIds: TypeId,
  validationLevels: ValidationLevel,
  streamKinds: StreamKind,
  jsWorkTags: JsWorkTag,
  maxNestingDepth,
  reexportRequestWords: ReexportRequestWord,
  reexportFlags: ReexportFlag,
  reexportShapes: ReexportShape,
  windowWords: WindowWord,
  memoryKinds: MemoryKind,
  copyDirections: CopyDirection,
  pointerKinds: PointerKind,
  asyncConsumerWords: AsyncConsumerWord,
  asyncConsumerStrings: AsyncConsumerString,
  asyncProducerWords: AsyncProducerWord,
};

function compareRecord(what: string, ours: Record<string, number>, theirs: Record<string, number> | undefined, problems: string[]) {
  if (!theirs) {
    problems.push(`${what}: missing from the library's manifest`);
    return;
  }
  for (const [key, value] of Object.entries(ours)) {
    if (!(key in theirs)) problems.push(`${what}.${key}: TS has ${value}, the library has no such entry`);
    else if (theirs[key] !== value) problems.push(`${what}.${key}: TS has ${value}, the library has ${theirs[key]}`);
  }
  for (const key of Object.keys(theirs)) {
    if (!(key in ours)) problems.push(`${what}.${key}: the library has ${theirs[key]}, TS has no such entry`);
  }
}

/** Every difference between `ours` and the manifest JSON, as sentences. */
export function layoutProblems(manifestJson: string, ours: LayoutTables = tsLayout): string[] {
  stringArg("layoutProblems", "manifestJson", manifestJson);
  if (typeof ours !== "object" || ours === null || typeof ours.structs !== "object") throw argumentError("layoutProblems", "ours", "LayoutTables", ours);
  let manifest: Manifest;
  try {
    manifest = JSON.parse(manifestJson) as Manifest;
  } catch {
    throw argumentError("layoutProblems", "manifestJson", "the library's layout manifest (JSON)", manifestJson);
  }
  const problems: string[] = [];
  if (manifest.pointer_size !== 8) problems.push(`pointer_size: the library has ${manifest.pointer_size}, TS supports 8`);
  for (const [name, layout] of Object.entries(ours.structs)) {
    const native = manifest.structs?.[name];
    if (!native) {
      problems.push(`${name}: not in the library's manifest`);
      continue;
    }
    if (native.size !== layout.size) problems.push(`${name} size: TS has ${layout.size}, the library has ${native.size}`);
    compareRecord(name, layout.fields, native.fields, problems);
  }
  for (const name of Object.keys(manifest.structs ?? {})) {
    if (!(name in ours.structs)) problems.push(`${name}: in the library's manifest, not in TS`);
  }
  for (const [name, layout] of Object.entries(ours.adbcStructs)) {
    const native = manifest.adbc_structs?.[name];
    if (!native) {
      problems.push(`${name}: not in the library's manifest`);
      continue;
    }
    if (native.size !== layout.size) problems.push(`${name} size: TS has ${layout.size}, the library has ${native.size}`);
    compareRecord(name, layout.fields, native.fields, problems);
  }
  for (const name of Object.keys(manifest.adbc_structs ?? {})) {
    if (!(name in ours.adbcStructs)) problems.push(`${name}: in the library's manifest, not in TS`);
  }
  compareRecord("device_types", ours.deviceTypes, manifest.device_types, problems);
  compareRecord("flags", ours.flags, manifest.flags, problems);
  compareRecord("status", ours.status, manifest.status, problems);
  compareRecord("counters", Object.fromEntries(ours.counters.map((name, i) => [name, i])), manifest.counters, problems);
  compareRecord("node_words", ours.nodeWords, manifest.node_words, problems);
  compareRecord("buffer_words", ours.bufferWords, manifest.buffer_words, problems);
  compareRecord("buffer_kinds", ours.bufferKinds, manifest.buffer_kinds, problems);
  compareRecord("type_ids", ours.typeIds, manifest.type_ids, problems);
  compareRecord("validation_levels", ours.validationLevels, manifest.validation_levels, problems);
  compareRecord("reexport_request_words", ours.reexportRequestWords, manifest.reexport_request_words, problems);
  compareRecord("reexport_flags", ours.reexportFlags, manifest.reexport_flags, problems);
  compareRecord("reexport_shapes", ours.reexportShapes, manifest.reexport_shapes, problems);
  compareRecord("window_words", ours.windowWords, manifest.window_words, problems);
  compareRecord("memory_kinds", ours.memoryKinds, manifest.memory_kinds, problems);
  compareRecord("copy_directions", ours.copyDirections, manifest.copy_directions, problems);
  compareRecord("pointer_kinds", ours.pointerKinds, manifest.pointer_kinds, problems);
  compareRecord("stream_kinds", ours.streamKinds, manifest.stream_kinds, problems);
  compareRecord("js_work_tags", ours.jsWorkTags, manifest.js_work_tags, problems);
  compareRecord("async_consumer_words", ours.asyncConsumerWords, manifest.async_consumer_words, problems);
  compareRecord("async_consumer_strings", ours.asyncConsumerStrings, manifest.async_consumer_strings, problems);
  compareRecord("async_producer_words", ours.asyncProducerWords, manifest.async_producer_words, problems);
  if (typeof manifest.errno !== "object" || manifest.errno === null) problems.push("errno: the library's manifest has no errno table");
  if (manifest.node_stride !== ours.nodeStride) problems.push(`node_stride: TS has ${ours.nodeStride}, the library has ${manifest.node_stride}`);
  if (manifest.buffer_stride !== ours.bufferStride) problems.push(`buffer_stride: TS has ${ours.bufferStride}, the library has ${manifest.buffer_stride}`);
  if (manifest.max_nesting_depth !== ours.maxNestingDepth) problems.push(`max_nesting_depth: TS has ${ours.maxNestingDepth}, the library has ${manifest.max_nesting_depth}`);
  return problems;
}

/** Throws `LayoutMismatchError` unless TS and the loaded library agree. */
function assertLayoutMatchesLibrary(): void {
  const problems = layoutProblems(manifestText());
  if (problems.length > 0) throw new LayoutMismatchError(problems);
}

assertLayoutMatchesLibrary();

/** The errno names the library reports through stream and async callbacks. */
export type ErrnoName = "EIO" | "E2BIG" | "EDEADLK" | "ENOMEM" | "ENODEV" | "EINVAL" | "EOPNOTSUPP" | "ECANCELED" | "EPROTO";

/**
 * Their values on the platform the loaded library was built for, read from
 * its manifest (zig/core/errno.zig), never written here: EDEADLK is 35 on
 * Linux, 11 on macOS, 36 on Windows.
 */
export const Errno: Readonly<Record<ErrnoName, number>> = Object.freeze(
  (JSON.parse(manifestText()) as { errno: Record<ErrnoName, number> }).errno,
);
