/**
 * Arrow C++ as the reference implementation, for the interoperability
 * tests: bun:ffi bindings of the shim (test/reference/arrow_shim.h, built
 * into build/fixtures/libarrow_shim.so by scripts/build-reference-shim.sh,
 * which `bash scripts/setup.sh --test` runs) and small wrappers that own
 * what they allocate.
 *
 * Ownership, as in the C API: structs handed to a check/hold/consume
 * function are moved into Arrow C++; structs Arrow C++ exports into a
 * `CSlot` belong to the slot until someone moves them out, and
 * `slot.free()` releases whatever is left. Handles (`ArrowCppRead`,
 * `ArrowCppJob`) are freed with `free()` / `using`.
 */
import { structPointer, type StructPointer } from "../../ts/raw.ts";
import { FFIType, suffix, type Pointer } from "bun:ffi";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { ArrowArrayStreamLayout, ArrowDeviceArrayLayout, ArrowDeviceArrayStreamLayout, ArrowSchemaLayout, ArrowAsyncDeviceStreamHandlerLayout } from "../../ts/core/abi/layout.ts";
import { openLibrary } from "../../ts/core/ffi/bun_ffi.ts";
import { fixturesDir } from "./fixtures.ts";
import { leakedSince, trackLive } from "./leaks.ts";

const { ptr: p, i32, i64, void: none, cstring } = FFIType;

export const arrowShimPath = join(fixturesDir, `libarrow_shim.${suffix}`);
export const arrowShimBuildCommand = "bash scripts/setup.sh --test";

const symbols = {
  shim_last_error: { args: [], returns: cstring },
  shim_arrow_version: { args: [], returns: cstring },
  shim_live_ipc: { args: [], returns: i64 },
  shim_held_count: { args: [], returns: i64 },
  shim_live_jobs: { args: [], returns: i64 },
  shim_alloc: { args: [i64], returns: p },
  shim_free: { args: [p], returns: none },
  shim_release_schema: { args: [p], returns: none },
  shim_release_array: { args: [p], returns: none },
  shim_release_stream: { args: [p], returns: none },
  shim_release_device_stream: { args: [p], returns: none },
  shim_ipc_read: { args: [p, i64, p], returns: i32 },
  shim_ipc_slice: { args: [p, i64, i64, p], returns: i32 },
  shim_ipc_empty: { args: [p, p], returns: i32 },
  shim_ipc_free: { args: [p], returns: none },
  shim_ipc_batch_count: { args: [p], returns: i64 },
  shim_ipc_batch_length: { args: [p, i64], returns: i64 },
  shim_ipc_column_count: { args: [p], returns: i32 },
  shim_ipc_reference_validation: { args: [p, i64], returns: i32 },
  shim_ipc_describe: { args: [p, i64], returns: cstring },
  shim_ipc_export_schema: { args: [p, p], returns: i32 },
  shim_ipc_export_batch: { args: [p, i64, p, p], returns: i32 },
  shim_ipc_export_device_batch: { args: [p, i64, p, p], returns: i32 },
  shim_ipc_export_device_column: { args: [p, i64, i32, p, p], returns: i32 },
  shim_c_array_layout: { args: [p, p, i64, p], returns: i32 },
  shim_check_device_batch: { args: [p, i64, p, p, p], returns: i32 },
  shim_check_batch: { args: [p, i64, p, p, p], returns: i32 },
  shim_check_device_array: { args: [p, i64, i32, p, p, p], returns: i32 },
  shim_check_message: { args: [i32], returns: cstring },
  shim_check_flags: { args: [p], returns: none },
  shim_hold_device_batch: { args: [p, p, p], returns: i32 },
  shim_hold_device_array: { args: [p, p, p], returns: i32 },
  shim_held_validate: { args: [i64], returns: i32 },
  shim_held_validate_quick: { args: [i64], returns: i32 },
  shim_held_check: { args: [i64, p, i64, i32, p], returns: i32 },
  shim_held_export_device: { args: [i64, p, p], returns: i32 },
  shim_held_drop: { args: [i64], returns: i32 },
  shim_ipc_export_stream: { args: [p, i64, p, p], returns: i32 },
  shim_ipc_export_device_stream: { args: [p, i64, p, p], returns: i32 },
  shim_consume_stream: { args: [p, p, i64, p], returns: i32 },
  shim_consume_device_stream: { args: [p, p, i64, p], returns: i32 },
  shim_consume_stream_start: { args: [p, p, i64, p], returns: i32 },
  shim_consume_device_stream_start: { args: [p, p, i64, p], returns: i32 },
  shim_async_consume_start: { args: [p, p, i64, p], returns: i32 },
  shim_async_produce_start: { args: [p, i64, p, p, p], returns: i32 },
  shim_probe_async_producer: { args: [p, i32, i32, p], returns: i32 },
  shim_job_done: { args: [p], returns: i32 },
  shim_job_wait: { args: [p, i32], returns: i32 },
  shim_job_result: { args: [p, p], returns: i32 },
  shim_job_free: { args: [p], returns: none },
} as const;

function openSymbols() {
  return openLibrary(arrowShimPath, symbols).symbols;
}
type ShimSymbols = ReturnType<typeof openSymbols>;

let opened: ShimSymbols | null = null;
let unavailable: string | null = null;
let tried = false;

function open(): void {
  if (tried) return;
  tried = true;
  if (!existsSync(arrowShimPath)) {
    unavailable = `the Arrow C++ reference shim is not built: no ${arrowShimPath}. It is built by \`${arrowShimBuildCommand}\` (installs pyarrow into .toolchain/, then runs scripts/build-reference-shim.sh, which needs g++).`;
    return;
  }
  try {
    opened = openSymbols();
    const shim = opened;
    trackLive("arrow-cpp", () => ({ ipc: Number(shim.shim_live_ipc()), held: Number(shim.shim_held_count()), jobs: Number(shim.shim_live_jobs()) }));
  } catch (cause) {
    unavailable = `could not load the Arrow C++ reference shim ${arrowShimPath}: ${(cause as Error).message}. Rebuild it with \`${arrowShimBuildCommand}\` (libarrow comes from the pyarrow wheel in .toolchain/).`;
  }
}

/** Why the shim cannot be used, or null when it can. */
export function arrowShimUnavailable(): string | null {
  open();
  return unavailable;
}

/** The shim's raw symbols; throws an Error saying why when unavailable. */
export function arrowShim(): ShimSymbols {
  open();
  if (!opened) throw new Error(unavailable ?? "the Arrow C++ reference shim is unavailable");
  return opened;
}

// ---------------------------------------------------------------------------
// Status and errors
// ---------------------------------------------------------------------------

export const ShimStatus = { ok: 0, bad_argument: 1, arrow_error: 2, internal: 3, not_done: 4 } as const;

/** arrow::StatusCode (arrow/status.h), as reports carry it. */
export const ArrowStatusCode = {
  OK: 0, OutOfMemory: 1, KeyError: 2, TypeError: 3, Invalid: 4, IOError: 5, CapacityError: 6, IndexError: 7,
  Cancelled: 8, UnknownError: 9, NotImplemented: 10, SerializationError: 11,
} as const;

export class ArrowCppError extends Error {
  override name = "ArrowCppError";
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

function lastError(): string {
  return String(arrowShim().shim_last_error());
}

function check(status: number, what: string): void {
  if (status !== ShimStatus.ok) throw new ArrowCppError(status, `${what}: ${lastError()}`);
}

/** Arrow C++'s version string, e.g. "26.0.1". */
export function arrowCppVersion(): string {
  return String(arrowShim().shim_arrow_version());
}

/** Live shim handles (gold reads, held imports, jobs), for leak checks. */
export function arrowCppLive(): { ipc: number; held: number; jobs: number } {
  const shim = arrowShim();
  const left = leakedSince("arrow-cpp", { ipc: Number(shim.shim_live_ipc()), held: Number(shim.shim_held_count()), jobs: Number(shim.shim_live_jobs()) });
  return { ipc: left.ipc ?? 0, held: left.held ?? 0, jobs: left.jobs ?? 0 };
}

function cText(text: string | null | undefined): Uint8Array | null {
  if (text === null || text === undefined) return null;
  return new TextEncoder().encode(`${text}\0`);
}

// ---------------------------------------------------------------------------
// Native slots for C structs
// ---------------------------------------------------------------------------

export type SlotKind = "device_array" | "array" | "stream" | "device_stream" | "async_handler";

/** The C struct after the schema in a slot of kind `K`. */
export type SlotStruct<K extends SlotKind> = {
  device_array: "ArrowDeviceArray";
  array: "ArrowArray";
  stream: "ArrowArrayStream";
  device_stream: "ArrowDeviceArrayStream";
  async_handler: "ArrowAsyncDeviceStreamHandler";
}[K];

const structOf: { [K in SlotKind]: SlotStruct<K> } = {
  device_array: "ArrowDeviceArray",
  array: "ArrowArray",
  stream: "ArrowArrayStream",
  device_stream: "ArrowDeviceArrayStream",
  async_handler: "ArrowAsyncDeviceStreamHandler",
};

const bodyBytes: Record<SlotKind, number> = {
  device_array: ArrowDeviceArrayLayout.size,
  array: ArrowDeviceArrayLayout.size, // an ArrowArray fits; same offset
  stream: ArrowArrayStreamLayout.size,
  device_stream: ArrowDeviceArrayStreamLayout.size,
  async_handler: ArrowAsyncDeviceStreamHandlerLayout.size,
};

/**
 * Zeroed native memory for an ArrowSchema followed by another struct (an
 * ArrowArray, ArrowDeviceArray, stream or async handler), at a stable
 * address. `free()` releases the schema and array/stream if they are still
 * unreleased (never moved out), then frees the memory. An async handler is
 * never released here: its producer does that.
 */
export class CSlot<K extends SlotKind = SlotKind> implements Disposable {
  #address: number;

  constructor(readonly kind: K = "device_array" as K) {
    const address = arrowShim().shim_alloc(ArrowSchemaLayout.size + bodyBytes[kind]);
    if (!address) throw new ArrowCppError(ShimStatus.internal, "out of memory allocating a C slot");
    this.#address = address;
  }

  #live(): number {
    if (!this.#address) throw new Error("this C slot was freed");
    return this.#address;
  }

  /** `struct ArrowSchema*`. */
  get schema(): StructPointer<"ArrowSchema"> {
    return structPointer("ArrowSchema", this.#live());
  }

  /** The second struct: `struct ArrowDeviceArray*` / `ArrowArray*` /
   * stream / handler, by kind. */
  get array(): StructPointer<SlotStruct<K>> {
    return structPointer(structOf[this.kind] as SlotStruct<K>, this.#live() + ArrowSchemaLayout.size);
  }

  /** Same address as `array`, named for streams and handlers. */
  get body(): StructPointer<SlotStruct<K>> {
    return this.array;
  }

  free(): void {
    if (!this.#address) return;
    const shim = arrowShim();
    shim.shim_release_schema(this.schema);
    if (this.kind === "device_array" || this.kind === "array") shim.shim_release_array(this.array);
    else if (this.kind === "stream") shim.shim_release_stream(this.array);
    else if (this.kind === "device_stream") shim.shim_release_device_stream(this.array);
    shim.shim_free(this.#address as Pointer);
    this.#address = 0;
  }

  [Symbol.dispose](): void {
    this.free();
  }
}

// ---------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------

export type CheckResult = {
  /** Arrow C++'s ValidateFull accepted what it imported. */
  valid: boolean;
  /** Arrow C++'s ValidateFull accepted its own read of the same bytes. */
  referenceValid: boolean;
  /** Equals() with the reference (NaN == NaN). */
  equal: boolean;
  /** Schema/field equal, metadata included. */
  schemaEqual: boolean;
  /** Why each false is false ("" for a true). */
  messages: { valid: string; referenceValid: string; equal: string; schemaEqual: string };
};

function checkResult(words: Int32Array): CheckResult {
  const shim = arrowShim();
  const message = (i: number) => String(shim.shim_check_message(i));
  return {
    valid: words[0] === 1,
    referenceValid: words[1] === 1,
    equal: words[2] === 1,
    schemaEqual: words[3] === 1,
    messages: { valid: message(0), referenceValid: message(1), equal: message(2), schemaEqual: message(3) },
  };
}

/** Whether a check proves the import matches Arrow C++'s own read: same
 * validation verdict, equal data, equal schema. */
export function checkPassed(result: CheckResult): boolean {
  return result.valid === result.referenceValid && result.equal && result.schemaEqual;
}

/** A readable summary of a failed check, for assertion messages. */
export function describeCheck(result: CheckResult): string {
  const parts: string[] = [];
  if (result.valid !== result.referenceValid) {
    parts.push(`validation: ours ${result.valid ? "valid" : `invalid (${result.messages.valid})`}, reference ${result.referenceValid ? "valid" : `invalid (${result.messages.referenceValid})`}`);
  }
  if (!result.equal) parts.push(`data: ${result.messages.equal}`);
  if (!result.schemaEqual) parts.push(`schema: ${result.messages.schemaEqual}`);
  return parts.join("; ") || "passed";
}

// ---------------------------------------------------------------------------
// Arrow C++'s read of IPC bytes
// ---------------------------------------------------------------------------

/** Arrow C++'s own read of IPC stream bytes (batches + ValidateFull verdicts). */
export class ArrowCppRead implements Disposable {
  #handle: number;

  private constructor(handle: number) {
    this.#handle = handle;
  }

  /** Reads IPC stream bytes (copied by Arrow C++). */
  static fromBytes(bytes: Uint8Array): ArrowCppRead {
    const out = new BigUint64Array(1);
    const copy = bytes.byteLength > 0 ? bytes : new Uint8Array(1);
    check(arrowShim().shim_ipc_read(copy, bytes.byteLength, out), "Arrow C++ could not read the IPC stream");
    return new ArrowCppRead(Number(out[0]));
  }

  /** The raw `shim_ipc*`, for calls to the shim this class does not wrap. */
  get handle(): Pointer {
    if (!this.#handle) throw new Error("this Arrow C++ read was freed");
    return this.#handle as Pointer;
  }

  get batchCount(): number {
    return Number(arrowShim().shim_ipc_batch_count(this.handle));
  }

  get columnCount(): number {
    return arrowShim().shim_ipc_column_count(this.handle);
  }

  batchLength(batch: number): number {
    return Number(arrowShim().shim_ipc_batch_length(this.handle, batch));
  }

  /** Arrow C++'s ValidateFull of its own batch: null if valid, else why. */
  referenceValidation(batch: number): string | null {
    const status = arrowShim().shim_ipc_reference_validation(this.handle, batch);
    if (status === ShimStatus.ok) return null;
    if (status === ShimStatus.arrow_error) return lastError();
    throw new ArrowCppError(status, lastError());
  }

  /** Batch i as text (-1: the schema), for messages. */
  describe(batch = -1): string {
    return String(arrowShim().shim_ipc_describe(this.handle, batch));
  }

  /** Every batch sliced at [offset, offset + length), clamped. */
  slice(offset: number, length: number): ArrowCppRead {
    const out = new BigUint64Array(1);
    check(arrowShim().shim_ipc_slice(this.handle, offset, length, out), "slice");
    return new ArrowCppRead(Number(out[0]));
  }

  /** The same schema with one empty batch (RecordBatch::MakeEmpty). */
  emptyBatch(): ArrowCppRead {
    const out = new BigUint64Array(1);
    check(arrowShim().shim_ipc_empty(this.handle, out), "RecordBatch::MakeEmpty");
    return new ArrowCppRead(Number(out[0]));
  }

  /** ExportDeviceRecordBatch of batch i into `slot` (schema and array). */
  exportDeviceBatch(batch: number, slot: CSlot): void {
    check(arrowShim().shim_ipc_export_device_batch(this.handle, batch, slot.schema, slot.array), `ExportDeviceRecordBatch of batch ${batch}`);
  }

  /** ExportRecordBatch of batch i into `slot` (kind "array"). */
  exportBatch(batch: number, slot: CSlot): void {
    check(arrowShim().shim_ipc_export_batch(this.handle, batch, slot.schema, slot.array), `ExportRecordBatch of batch ${batch}`);
  }

  /** ExportDeviceArray + ExportField of one column of batch i. */
  exportDeviceColumn(batch: number, column: number, slot: CSlot): void {
    check(arrowShim().shim_ipc_export_device_column(this.handle, batch, column, slot.schema, slot.array), `export of column ${column} of batch ${batch}`);
  }

  /** ExportSchema into `slot.schema`. */
  exportSchema(slot: CSlot): void {
    check(arrowShim().shim_ipc_export_schema(this.handle, slot.schema), "ExportSchema");
  }

  /** Imports `schema` + `deviceArray` (moved in) with ImportDeviceRecordBatch
   * and checks them against batch i. Throws ArrowCppError if the import
   * itself fails. */
  checkDeviceBatch(batch: number, schema: Pointer | number, deviceArray: Pointer | number): CheckResult {
    const words = new Int32Array(4);
    check(arrowShim().shim_check_device_batch(this.handle, batch, schema as Pointer, deviceArray as Pointer, words), `ImportDeviceRecordBatch (batch ${batch})`);
    return checkResult(words);
  }

  /** The same through ImportRecordBatch (`array` is an ArrowArray*). */
  checkBatch(batch: number, schema: Pointer | number, array: Pointer | number): CheckResult {
    const words = new Int32Array(4);
    check(arrowShim().shim_check_batch(this.handle, batch, schema as Pointer, array as Pointer, words), `ImportRecordBatch (batch ${batch})`);
    return checkResult(words);
  }

  /** ImportField + ImportDeviceArray, checked against column `column` of
   * batch i (-1: the batch as a struct array). */
  checkDeviceArray(batch: number, column: number, schema: Pointer | number, deviceArray: Pointer | number): CheckResult {
    const words = new Int32Array(4);
    check(arrowShim().shim_check_device_array(this.handle, batch, column, schema as Pointer, deviceArray as Pointer, words), `ImportDeviceArray (batch ${batch}, column ${column})`);
    return checkResult(words);
  }

  free(): void {
    if (!this.#handle) return;
    arrowShim().shim_ipc_free(this.#handle as Pointer);
    this.#handle = 0;
  }

  [Symbol.dispose](): void {
    this.free();
  }
}

// ---------------------------------------------------------------------------
// Layout of a C array tree
// ---------------------------------------------------------------------------

export type NodeLayout = {
  length: number;
  nullCount: number;
  offset: number;
  nChildren: number;
  hasDictionary: boolean;
  buffers: number[];
};

/** The nodes of the C ArrowArray tree at `array`, in preorder (node,
 * children, then dictionary), read in place (nothing moved). */
export function cArrayLayout(array: Pointer | number): NodeLayout[] {
  const shim = arrowShim();
  const count = new BigInt64Array(1);
  let words = new Float64Array(1024);
  let status = shim.shim_c_array_layout(array as Pointer, words, words.length, count);
  if (status === ShimStatus.bad_argument && Number(count[0]) > words.length) {
    words = new Float64Array(Number(count[0]));
    status = shim.shim_c_array_layout(array as Pointer, words, words.length, count);
  }
  check(status, "layout of a C array");
  const nodes: NodeLayout[] = [];
  const end = Number(count[0]);
  for (let i = 0; i < end;) {
    const nBuffers = words[i + 3];
    nodes.push({
      length: words[i],
      nullCount: words[i + 1],
      offset: words[i + 2],
      nChildren: words[i + 4],
      hasDictionary: words[i + 5] === 1,
      buffers: Array.from(words.subarray(i + 6, i + 6 + nBuffers)),
    });
    i += 6 + nBuffers;
  }
  return nodes;
}

// ---------------------------------------------------------------------------
// Held imports (Arrow C++ holding what it imported)
// ---------------------------------------------------------------------------

/** ImportDeviceRecordBatch (moves both in); returns the held id. */
export function holdDeviceBatch(schema: Pointer | number, deviceArray: Pointer | number): number {
  const out = new BigInt64Array(1);
  check(arrowShim().shim_hold_device_batch(schema as Pointer, deviceArray as Pointer, out), "ImportDeviceRecordBatch");
  return Number(out[0]);
}

/** ImportField + ImportDeviceArray (moves both in); returns the held id. */
export function holdDeviceArray(schema: Pointer | number, deviceArray: Pointer | number): number {
  const out = new BigInt64Array(1);
  check(arrowShim().shim_hold_device_array(schema as Pointer, deviceArray as Pointer, out), "ImportDeviceArray");
  return Number(out[0]);
}

/** ValidateFull of a held import: null if valid, else why. */
export function heldValidation(id: number): string | null {
  const status = arrowShim().shim_held_validate(id);
  if (status === ShimStatus.ok) return null;
  if (status === ShimStatus.arrow_error) return lastError();
  throw new ArrowCppError(status, lastError());
}

/** Validate (not ValidateFull) of a held import: null if valid, else why. */
export function heldQuickValidation(id: number): string | null {
  const status = arrowShim().shim_held_validate_quick(id);
  if (status === ShimStatus.ok) return null;
  if (status === ShimStatus.arrow_error) return lastError();
  throw new ArrowCppError(status, lastError());
}

/** Checks a held import against batch i (column -1: whole batch/struct). */
export function heldCheck(id: number, reference: ArrowCppRead, batch: number, column = -1): CheckResult {
  const words = new Int32Array(4);
  check(arrowShim().shim_held_check(id, reference.handle, batch, column, words), `check of held import ${id}`);
  return checkResult(words);
}

/** Arrow C++ re-exports a held import into `slot`. */
export function heldExportDevice(id: number, slot: CSlot): void {
  check(arrowShim().shim_held_export_device(id, slot.schema, slot.array), `re-export of held import ${id}`);
}

/** Drops a held import; throws for an unknown id. */
export function heldDrop(id: number): void {
  check(arrowShim().shim_held_drop(id), `drop of held import ${id}`);
}

// ---------------------------------------------------------------------------
// Streams, async, jobs
// ---------------------------------------------------------------------------

export type StreamReport = {
  /** 0 when the stream ended (or was closed early); else the shim status. */
  status: number;
  /** The producer's error text, intact ("" when status is 0). */
  message: string;
  batches: number;
  passed: number;
  /** 1/0, or -1 without a reference. */
  schemaEqual: number;
  ended: boolean;
  /** arrow::StatusCode of the failure (0: none; 5 IOError, 4 Invalid...). */
  statusCode: number;
  firstFailed: number;
  deviceType: number;
  withMetadata: number;
  /** The code given to on_error (-1: none). */
  asyncCode: number;
  errorMetadataBytes: number;
  /** The first failing batch's check messages. */
  firstFailure: CheckResult | null;
};

function streamReport(status: number, words: BigInt64Array): StreamReport {
  const firstFailed = Number(words[5]);
  const shim = arrowShim();
  const message = status === ShimStatus.ok ? "" : lastError();
  let failure: CheckResult | null = null;
  if (firstFailed >= 0) {
    const flags = new Int32Array(4);
    shim.shim_check_flags(flags);
    failure = checkResult(flags);
  }
  return {
    status,
    message,
    batches: Number(words[0]),
    passed: Number(words[1]),
    schemaEqual: Number(words[2]),
    ended: words[3] === 1n,
    statusCode: Number(words[4]),
    firstFailed,
    deviceType: Number(words[6]),
    withMetadata: Number(words[7]),
    asyncCode: Number(words[8]),
    errorMetadataBytes: Number(words[9]),
    firstFailure: failure,
  };
}

export type StreamSourceOptions = {
  /** Batches to yield (default: all). */
  batchCount?: number;
  /** When set, the stream fails with this text after `batchCount` batches. */
  failMessage?: string;
};

/** Arrow C++ exports the batches of `read` as a stream into `slot.body`
 * (ExportRecordBatchReader, or ExportDeviceRecordBatchReader for a slot of
 * kind "device_stream"). */
export function exportStream(read: ArrowCppRead, slot: CSlot, options: StreamSourceOptions = {}): void {
  const shim = arrowShim();
  const fail = cText(options.failMessage);
  const count = options.batchCount ?? -1;
  if (slot.kind === "device_stream") {
    check(shim.shim_ipc_export_device_stream(read.handle, count, fail, slot.body), "ExportDeviceRecordBatchReader");
  } else if (slot.kind === "stream") {
    check(shim.shim_ipc_export_stream(read.handle, count, fail, slot.body), "ExportRecordBatchReader");
  } else {
    throw new Error(`exportStream needs a "stream" or "device_stream" slot, not "${slot.kind}"`);
  }
}

/** Arrow C++ imports (moves in) and reads the stream at `stream` on this
 * thread, checking batch i against batch i of `reference`. */
export function consumeStream(stream: Pointer | number, reference: ArrowCppRead | null, options: { device?: boolean; maxBatches?: number } = {}): StreamReport {
  const words = new BigInt64Array(10);
  const shim = arrowShim();
  const ref = reference ? reference.handle : null;
  const status = options.device
    ? shim.shim_consume_device_stream(stream as Pointer, ref, options.maxBatches ?? -1, words)
    : shim.shim_consume_stream(stream as Pointer, ref, options.maxBatches ?? -1, words);
  if (status !== ShimStatus.ok && status !== ShimStatus.arrow_error) throw new ArrowCppError(status, lastError());
  return streamReport(status, words);
}

/** Work on a shim thread (stream consumer, async consumer or producer). */
export class ArrowCppJob implements Disposable {
  #job: number;

  constructor(job: number) {
    this.#job = job;
  }

  get done(): boolean {
    return this.#job !== 0 && arrowShim().shim_job_done(this.#job as Pointer) === 1;
  }

  /** The report; throws while the job still runs. */
  result(): StreamReport {
    const words = new BigInt64Array(10);
    const status = arrowShim().shim_job_result(this.#job as Pointer, words);
    if (status === ShimStatus.not_done || status === ShimStatus.bad_argument) throw new ArrowCppError(status, lastError());
    return streamReport(status, words);
  }

  /** Polls until done, letting the JS event loop run (a JS producer may
   * need it); throws after `timeoutMs`. */
  async finish(timeoutMs = 10_000): Promise<StreamReport> {
    const deadline = performance.now() + timeoutMs;
    while (!this.done) {
      if (performance.now() > deadline) throw new Error(`an Arrow C++ job did not finish within ${timeoutMs} ms`);
      await Bun.sleep(1);
    }
    return this.result();
  }

  /** Frees the job (an unfinished one is abandoned, never waited for). */
  free(): void {
    if (!this.#job) return;
    arrowShim().shim_job_free(this.#job as Pointer);
    this.#job = 0;
  }

  [Symbol.dispose](): void {
    this.free();
  }
}

function startJob(start: (out: BigUint64Array) => number, what: string): ArrowCppJob {
  const out = new BigUint64Array(1);
  check(start(out), what);
  return new ArrowCppJob(Number(out[0]));
}

/** Arrow C++ reads the stream on its own thread (the stream is moved in
 * before this returns). */
export function consumeStreamOnThread(stream: Pointer | number, reference: ArrowCppRead | null, options: { device?: boolean; maxBatches?: number } = {}): ArrowCppJob {
  const shim = arrowShim();
  const ref = reference ? reference.handle : null;
  const max = options.maxBatches ?? -1;
  return options.device
    ? startJob((out) => shim.shim_consume_device_stream_start(stream as Pointer, ref, max, out), "ImportDeviceRecordBatchReader on a thread")
    : startJob((out) => shim.shim_consume_stream_start(stream as Pointer, ref, max, out), "ImportRecordBatchReader on a thread");
}

/** CreateAsyncDeviceStreamHandler fills the handler at `handler` (caller
 * memory, valid until its release is called); a job collects and checks
 * what the producer pushes. */
export function asyncConsume(handler: Pointer | number, reference: ArrowCppRead | null, queueSize = 5): ArrowCppJob {
  const shim = arrowShim();
  return startJob((out) => shim.shim_async_consume_start(handler as Pointer, reference ? reference.handle : null, queueSize, out), "CreateAsyncDeviceStreamHandler");
}

/** ExportAsyncRecordBatchReader drives the handler at `handler` from the
 * batches of `read`, on a job thread. */
export function asyncProduce(read: ArrowCppRead, handler: Pointer | number, options: StreamSourceOptions = {}): ArrowCppJob {
  const shim = arrowShim();
  const fail = cText(options.failMessage);
  return startJob((out) => shim.shim_async_produce_start(read.handle, options.batchCount ?? -1, fail, handler as Pointer, out), "ExportAsyncRecordBatchReader");
}

// ---------------------------------------------------------------------------
// Probing Arrow C++'s async producer
// ---------------------------------------------------------------------------

export const ProbeScenario = { normal: 0, schemaFails: 1, taskFails: 2, cancel: 3, requestZero: 4 } as const;

export type ProbeReport = {
  schemas: number;
  tasks: number;
  ends: number;
  errors: number;
  /** The last code given to on_error (-1: none). */
  errorCode: number;
  /** The last on_error message ("" if none). */
  errorMessage: string;
  releases: number;
  extractFailures: number;
  /** arrow::StatusCode the producer's Future ended with (0: OK). */
  futureCode: number;
};

/** Lets Arrow C++'s ExportAsyncRecordBatchReader drive a scripted handler
 * inside the shim over the batches of `read`, and reports what it did. */
export function probeAsyncProducer(read: ArrowCppRead, scenario: number, timeoutMs = 10_000): ProbeReport {
  const words = new BigInt64Array(8);
  check(arrowShim().shim_probe_async_producer(read.handle, scenario, timeoutMs, words), "probe of ExportAsyncRecordBatchReader");
  const n = (i: number) => Number(words[i]);
  return {
    schemas: n(0), tasks: n(1), ends: n(2), errors: n(3), errorCode: n(4), errorMessage: lastError(),
    releases: n(5), extractFailures: n(6), futureCode: n(7),
  };
}
