/**
 * apache-arrow sources -> ArrowArrayStream / ArrowDeviceArrayStream that
 * any C consumer can pull (zig/stream_export.zig is the C side).
 *
 * Sources: a Table (its batches), an array of RecordBatch, a sync or async
 * iterable of RecordBatch, or a RecordBatchReader (sync or async). Each
 * batch is exported zero-copy through export.ts's machinery, straight into
 * the consumer's `out`: its JS buffers are kept alive (keepalive registry)
 * until the consumer releases that array, which may be long after the
 * stream. get_schema rebuilds the schema natively from a plan made once
 * here, so it never needs JS and works on any thread.
 *
 * Threads (who may call what):
 * - get_schema, get_last_error, release: any thread.
 * - get_next on the JS thread (a native function called from JS pulls):
 *   answered synchronously through a non-threadsafe JSCallback, for sync
 *   sources. An async source cannot be awaited there: get_next returns
 *   EDEADLK (35), and get_last_error says why.
 * - get_next on any other thread: the library queues the request and wakes
 *   JS (native/js_queue.ts); the consumer thread blocks until JS has
 *   produced the batch, awaiting the promise for async sources (with a
 *   timer holding the event loop open meanwhile). JS's event loop must be
 *   free to run: a JS thread blocked in a native call that waits for that
 *   consumer thread would deadlock. Start the consumer thread, return to
 *   JS, and await its completion.
 *
 * Device streams: a source may also yield `ExportedArray` device arrays
 * (what `toDevice` returns, or any natively made ArrowDeviceArray), which
 * get_next moves whole into the consumer's `out` (device_id and sync_event
 * included; the handle sees its array moved and only frees its slot), or
 * `options.device` copies each RecordBatch to a GPU as it is pulled. The
 * stream's device_type is then CUDA / ROCM (or their host and managed
 * kinds); each array keeps its own device_id. An ExportedArray item is the
 * stream's once pulled from the source: handed out, or released if the
 * stream fails or is released first.
 *
 * Errors: an exception thrown by the source (or a batch that cannot be
 * exported, or does not match the schema) ends the stream: get_next returns
 * an errno (EINVAL for bad input, the library's errno for its own errors,
 * `error.errno` when the exception carries one, otherwise EIO) on that and
 * every later call, and get_last_error returns the exception's message.
 * When the consumer releases the stream, the source's iterator is closed
 * (`return()`), so generators and readers run their cleanup.
 */
import { RecordBatch, RecordBatchReader, Schema, Struct, Table, type DataType } from "apache-arrow";
import { JSCallback, read, type Pointer } from "bun:ffi";
import { ArrowDeviceArrayLayout, DeviceType, StreamKind as NativeStreamKind, deviceTypeName } from "../core/abi/layout.ts";
import { asPointer } from "../core/abi/structs.ts";
import { argumentError, describeValue, deviceTypeArg, integerArg, oneOfArg, optionsArg } from "../core/args.ts";
import { InvalidArgumentError, Status, errorFor } from "../core/errors.ts";
import { errnoOfException } from "./errno.ts";
import { lastError, native } from "../core/ffi/library.ts";
import { ExportedStream, type StreamKind } from "../native/exported_stream.ts";
import { JsWorkTag, onJsWork } from "../native/js_queue.ts";
import { drainReleased, forgetUnused, retainForNative } from "../native/keepalive.ts";
import { ExportedArray } from "../native/exported.ts";
import { deviceRuntime } from "../device/runtime.ts";
import { checkTarget, targetDeviceType, type DeviceTarget } from "../device/transfer.ts";
import { toDevice } from "./device.ts";
import { arrowArg } from "./arrow_args.ts";
import { internal } from "./export.ts";
import { typeDifference } from "./types.ts";

/** What a stream source yields: apache-arrow batches, or arrays made
 * elsewhere (`ExportedArray` of kind "device_array", e.g. from `toDevice`),
 * handed out whole. */
export type StreamItem = RecordBatch | ExportedArray;

/** What `exportStream` serves: the batches of a Table, an array, a reader,
 * or a sync or async iterable, pulled one get_next at a time. */
export type StreamSource =
  | Table
  | StreamItem[]
  | RecordBatchReader
  | Iterable<StreamItem>
  | AsyncIterable<StreamItem>;

/** Options of `exportStream`. */
export type StreamExportOptions<K extends StreamKind = StreamKind, A extends boolean = false> = {
  /** "device_stream" (default): an ArrowDeviceArrayStream on the CPU.
   * "stream": an ArrowArrayStream. */
  as?: K;
  /** true: `exportStream` returns a Promise, and may await an async
   * source to learn its schema. Default false. */
  async?: A;
  /** The stream's schema. Required for an async source (unless `async`
   * is true: then it is read from the first batch) and for an empty
   * iterable. Otherwise taken from the source (the first
   * batch's, or the C schema of a first ExportedArray item). */
  schema?: Schema;
  /** A device stream: each RecordBatch is copied to this device as it is
   * pulled (`toDevice`: one device allocation and one sync event per
   * batch, on the JS thread), and ExportedArray items must be on its
   * device type (with any device_id). Needs a device stream. */
  device?: DeviceTarget;
  /** The stream's device_type when no `device` is given (ExportedArray
   * items made elsewhere). Default: the first item's device type when it
   * is an ExportedArray the source showed before streaming (an array of
   * items, or a source read ahead for its schema), else CPU. */
  deviceType?: number;
  /** With `device`: how many batches past the one a get_next hands out
   * have their copies issued before it returns (pulled from the source
   * and passed to `toDevice`, whose copies and event are asynchronous on
   * the target's stream). The queue depth is `copyAhead + 1` batches on
   * the device held by the stream. The copy of batch n+1 then runs while
   * the consumer uses batch n, after waiting on batch n's sync_event
   * only. Default 1; 0 copies each batch only when it is pulled; at most
   * 64. */
  copyAhead?: number;
};

/** `options.copyAhead`'s default: batch n+1 copies while n is used. */
export const defaultCopyAhead = 1;


/** The JS side of one exported stream. Kept in the keepalive registry
 * until the consumer releases the stream. */
class SourceRecord {
  key = 0;
  /** Batches answered so far (for messages). */
  index = 0;
  /** The last batch type accepted, to skip comparing identical types. */
  acceptedType: DataType | null = null;
  readonly structType: Struct;
  /** The stream's device_type (set once, before the stream exists). */
  deviceType: number = DeviceType.CPU;
  /** Where RecordBatches are copied as they are pulled, if anywhere. */
  target: DeviceTarget | null = null;
  /** Batches copied ahead of the one handed out (with `target`). */
  copyAhead = defaultCopyAhead;
  /** Answers prepared ahead, in order: copies already issued, then at
   * most one terminal answer (the end, or the source's error), or an item
   * that is not copied (answered as it is). The stream's until handed out:
   * `close` releases what is left. */
  readonly ahead: Prepared[] = [];
  /** An async source's read-ahead still running; the next get_next waits
   * for it so that answers stay in the source's order. */
  filling: Promise<void> | null = null;
  #closed = false;

  get closed(): boolean {
    return this.#closed;
  }

  constructor(
    readonly iterator: Iterator<StreamItem> | AsyncIterator<StreamItem>,
    readonly isAsync: boolean,
    /** Null when the schema is an ExportedArray's C schema: RecordBatches
     * cannot be checked against it (they are refused). */
    readonly schema: Schema | null,
    /** An item read ahead to learn the schema, answered first. */
    public buffered: StreamItem | null,
  ) {
    this.structType = new Struct(schema?.fields ?? []);
  }

  takeBuffered(): StreamItem | null {
    const batch = this.buffered;
    this.buffered = null;
    return batch;
  }

  /** Closes the source's iterator once (runs a generator's `finally`). */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    // An item read ahead is the stream's: nobody else will release it.
    if (this.buffered instanceof ExportedArray) this.buffered.release();
    this.buffered = null;
    // Copies issued ahead were never handed out: they are released here,
    // once each (their release waits for their copies).
    for (const prepared of this.ahead.splice(0)) {
      if (prepared.kind === "copy" || (prepared.kind === "item" && prepared.value instanceof ExportedArray)) {
        (prepared.kind === "copy" ? prepared.handle : prepared.value as ExportedArray).release();
      }
    }
    try {
      const result = this.iterator.return?.();
      if (result instanceof Promise) result.catch(() => {});
    } catch {
      // A source whose cleanup throws has nobody left to tell.
    }
  }

  /** The consumer released the stream (run by the keepalive drain). */
  releasedByConsumer(): void {
    records.delete(this.key);
    this.close();
  }
}

/** One answer to a get_next, prepared before it is asked for. */
type Prepared =
  | { kind: "copy"; handle: ExportedArray }
  | { kind: "item"; value: unknown }
  | { kind: "end" }
  | { kind: "error"; error: unknown };

/** Live records by key, for the producer callbacks. */
const records = new Map<number, SourceRecord>();

const encoder = new TextEncoder();

function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}


/** Ends the stream with `error` (final: every later get_next repeats it). */
function failProducer(record: SourceRecord | undefined, producer: number, error: unknown): void {
  const message = encoder.encode(messageOf(error));
  native.abd_stream_export_fail(asPointer(producer), errnoOfException(error), message, message.length);
  record?.close();
}

/** The device_type of an ExportedArray item. */
function deviceTypeOf(handle: ExportedArray): number {
  if (handle.kind !== "device_array") return DeviceType.CPU;
  return read.i32(handle.array, ArrowDeviceArrayLayout.fields.device_type);
}

/** Answers the pending get_next by moving `handle`'s array into the
 * consumer's `out` (natively checked: device type, and schema when
 * `checkSchema`). The handle is released either way: after a move that
 * frees its slot and schema; after a refusal (the stream then failed
 * natively with the reason) it releases the array too. */
function deliverArray(record: SourceRecord, producer: number, handle: ExportedArray, checkSchema: boolean): void {
  try {
    if (handle.kind !== "device_array") {
      throw new InvalidArgumentError(Status.invalid_argument, `batch ${record.index} is an ExportedArray of kind "${handle.kind}"; a stream hands out "device_array" exports (exportArray, toDevice)`);
    }
    const status = native.abd_stream_export_deliver_array(producer as unknown as Pointer, checkSchema ? handle.schema : null, handle.array);
    if (status !== 0) record.close();
  } finally {
    handle.release();
  }
  record.index++;
}

/** Throws unless `batch` (number `index`) is a RecordBatch of the
 * stream's schema. */
function checkBatch(record: SourceRecord, batch: unknown, index: number): asserts batch is RecordBatch {
  if (!(batch instanceof RecordBatch)) {
    throw new InvalidArgumentError(Status.invalid_argument, `the stream source yielded ${describeValue(batch)} as batch ${index}, not an apache-arrow RecordBatch or an ExportedArray`);
  }
  if (!record.schema) {
    throw new InvalidArgumentError(Status.invalid_argument, `batch ${index} is an apache-arrow RecordBatch, but the stream's schema came from an ExportedArray's C schema: pass options.schema to mix them`);
  }
  const type = batch.data.type;
  if (type !== record.acceptedType) {
    const difference = typeDifference(record.structType, type);
    if (difference) {
      throw new InvalidArgumentError(Status.invalid_argument, `batch ${index}'s schema differs from the stream's: ${difference}`);
    }
    record.acceptedType = type;
  }
}

/** Answers the pending get_next with `batch`: zero-copy, or copied to the
 * stream's device; an ExportedArray is handed out as it is. */
function deliver(record: SourceRecord, producer: number, batch: unknown): void {
  if (batch instanceof ExportedArray) return deliverArray(record, producer, batch, true);
  checkBatch(record, batch, record.index);
  if (record.target) {
    // Copied to the device now; the copy's schema is the batch's (checked).
    return deliverArray(record, producer, toDevice(batch, record.target), false);
  }
  if (record.deviceType !== DeviceType.CPU) {
    throw new InvalidArgumentError(Status.invalid_argument, `batch ${record.index} is an apache-arrow RecordBatch (CPU memory), but the stream's device_type is ${deviceTypeName(record.deviceType)}: pass options.device to copy batches to the device as they are pulled`);
  }
  const { words, keepaliveId } = internal.planArray(batch.data);
  const status = native.abd_stream_export_deliver(asPointer(producer), internal.planWords(), words, keepaliveId, -1);
  if (status !== 0) {
    // The stream failed natively with the build's message; nothing of this
    // batch reached C.
    forgetUnused(keepaliveId);
    record.close();
  }
  record.index++;
}

function end(record: SourceRecord, producer: number): void {
  native.abd_stream_export_end(asPointer(producer));
  record.close();
}

/** What one step of the source becomes: with a device target, a
 * RecordBatch is checked and its copy issued now (`index`: its number, for
 * messages); anything else is answered later as it is. */
function prepare(record: SourceRecord, step: IteratorResult<StreamItem>, index: number): Prepared {
  if (step.done) return { kind: "end" };
  const value: unknown = step.value;
  if (!record.target || !(value instanceof RecordBatch)) return { kind: "item", value };
  try {
    checkBatch(record, value, index);
    return { kind: "copy", handle: toDevice(value, record.target) };
  } catch (error) {
    return { kind: "error", error };
  }
}

/** Answers the pending get_next with `prepared`. */
function answer(record: SourceRecord, producer: number, prepared: Prepared): void {
  switch (prepared.kind) {
    case "end":
      return end(record, producer);
    case "error":
      throw prepared.error;
    case "copy":
      return deliverArray(record, producer, prepared.handle, false);
    case "item":
      return deliver(record, producer, prepared.value);
  }
}

/** Whether more batches may be copied ahead: a device target, room in the
 * queue, and no end, error or uncopied item queued last. */
function wantsAhead(record: SourceRecord): boolean {
  if (!record.target || record.closed || record.ahead.length >= record.copyAhead) return false;
  const last = record.ahead[record.ahead.length - 1];
  return !last || last.kind === "copy";
}

/** Pulls and copies batches ahead of the one just handed out (sync
 * source), up to `copyAhead`. */
function fillAheadSync(record: SourceRecord): void {
  while (wantsAhead(record)) {
    const index = record.index + record.ahead.length;
    let prepared: Prepared;
    try {
      prepared = prepare(record, (record.iterator as Iterator<StreamItem>).next(), index);
    } catch (error) {
      prepared = { kind: "error", error };
    }
    record.ahead.push(prepared);
  }
}

/** `fillAheadSync` for an async source. A copy made after the stream was
 * released is released at once. */
async function fillAheadAsync(record: SourceRecord): Promise<void> {
  while (wantsAhead(record)) {
    const index = record.index + record.ahead.length;
    let prepared: Prepared;
    try {
      prepared = prepare(record, await (record.iterator as AsyncIterator<StreamItem>).next(), index);
    } catch (error) {
      prepared = { kind: "error", error };
    }
    if (record.closed) {
      if (prepared.kind === "copy") prepared.handle.release();
      return;
    }
    record.ahead.push(prepared);
  }
}

/** Answers one get_next from a sync source, synchronously; then issues the
 * copies of the next batches (device target), before returning, so that
 * they run while the consumer uses this one. */
function produceSync(record: SourceRecord, producer: number): void {
  try {
    let prepared = record.ahead.shift();
    if (!prepared) {
      const buffered = record.takeBuffered();
      const step: IteratorResult<StreamItem> = buffered ? { done: false, value: buffered } : (record.iterator as Iterator<StreamItem>).next();
      prepared = prepare(record, step, record.index);
    }
    answer(record, producer, prepared);
    fillAheadSync(record);
  } catch (error) {
    failProducer(record, producer, error);
  }
  drainReleased();
}

/** Answers one get_next from an async source, for a waiting thread; the
 * copies ahead are issued after the answer, while the consumer runs. */
async function produceAsync(record: SourceRecord, producer: number): Promise<void> {
  // A pending promise alone does not keep Bun's event loop alive; a
  // native thread is waiting for this answer.
  const keepAlive = setTimeout(() => {}, 2 ** 31 - 1);
  try {
    if (record.filling) await record.filling;
    let prepared = record.ahead.shift();
    if (!prepared) {
      const buffered = record.takeBuffered();
      const step: IteratorResult<StreamItem> = buffered ? { done: false, value: buffered } : await (record.iterator as AsyncIterator<StreamItem>).next();
      prepared = prepare(record, step, record.index);
    }
    answer(record, producer, prepared);
  } catch (error) {
    failProducer(record, producer, error);
  } finally {
    clearTimeout(keepAlive);
  }
  drainReleased();
  if (wantsAhead(record)) {
    const filling = fillAheadAsync(record).catch(() => {});
    record.filling = filling;
    void filling.then(() => {
      if (record.filling === filling) record.filling = null;
    });
  }
}

function unknownStream(producer: number, key: number): void {
  failProducer(undefined, producer, new Error(`bun-arrow-device has no JS source for stream key ${key} (an internal error)`));
}

// get_next on the JS thread, inside a native call: must answer before it
// returns. Never closed: streams may be pulled until the process exits.
const syncProducer = new JSCallback((key: number, producer: number) => {
  const record = records.get(key);
  if (!record) return unknownStream(producer, key);
  produceSync(record, producer);
}, { args: ["f64", "ptr"], returns: "void" });
native.abd_stream_export_set_producer(syncProducer.ptr);

// get_next on another thread, queued for the JS thread.
onJsWork(JsWorkTag.stream_export_request, (key, producer) => {
  const record = records.get(key);
  if (!record) {
    unknownStream(producer, key);
    return false;
  }
  if (record.isAsync) {
    void produceAsync(record, producer);
    return false; // answered later, after the await
  }
  produceSync(record, producer);
  return true; // a consumer thread pulling batch after batch asks again soon
});

// ---------------------------------------------------------------------------
// Sources
// ---------------------------------------------------------------------------

type Opened = {
  iterator: Iterator<StreamItem> | AsyncIterator<StreamItem>;
  isAsync: boolean;
  /** Null: the schema is `first`'s C schema (an ExportedArray). */
  schema: Schema | null;
  buffered: StreamItem | null;
  /** The first item, when known before streaming (buffered, or an array
   * source's first element, which stays the caller's until pulled). */
  first: StreamItem | null;
};

/** A batch's schema, from its data type (apache-arrow's RecordBatch.schema
 * merges fields that share a name); null for an ExportedArray (its C
 * schema is read natively). */
function schemaOfItem(item: unknown): Schema | null {
  if (item instanceof ExportedArray) return null;
  if (!(item instanceof RecordBatch)) {
    throw new InvalidArgumentError(Status.invalid_argument, `the stream source yielded ${describeValue(item)}, not an apache-arrow RecordBatch or an ExportedArray`);
  }
  return new Schema((item.data.type as Struct).children, item.schema.metadata);
}

/** A Table's schema from its first batch's data type (Table.schema merges
 * fields that share a name, as RecordBatch.schema does); an empty Table's
 * own. */
function schemaOfTable(table: Table): Schema {
  const first = table.batches[0];
  return first ? new Schema((first.data.type as Struct).children, table.schema.metadata) : table.schema;
}

function needsSchema(what: string): never {
  throw new InvalidArgumentError(Status.invalid_argument, `${what}: pass options.schema${what.includes("async") ? ", or pass { async: true }, which reads the first batch for it" : ""}`);
}

function isAsyncIterable(source: unknown): source is AsyncIterable<StreamItem> {
  return typeof (source as AsyncIterable<StreamItem>)?.[Symbol.asyncIterator] === "function";
}

function isIterable(source: unknown): source is Iterable<StreamItem> {
  return typeof (source as Iterable<StreamItem>)?.[Symbol.iterator] === "function";
}

/** Opens `source` without awaiting; `undefined` means it needs to await. */
function openNow(source: StreamSource, options: StreamExportOptions): Opened | undefined {
  const given = options.schema ?? null;
  if (source instanceof Table) {
    return { iterator: source.batches[Symbol.iterator](), isAsync: false, schema: given ?? schemaOfTable(source), buffered: null, first: null };
  }
  if (source instanceof RecordBatchReader) {
    if (source.isSync()) {
      source.open();
      return { iterator: source[Symbol.iterator](), isAsync: false, schema: given ?? source.schema, buffered: null, first: null };
    }
    if (!given) return undefined;
    return { iterator: source[Symbol.asyncIterator](), isAsync: true, schema: given, buffered: null, first: null };
  }
  if (Array.isArray(source)) {
    if (!given && source.length === 0) needsSchema("an empty array of batches has no schema");
    const first = source[0] ?? null;
    return { iterator: source[Symbol.iterator](), isAsync: false, schema: given ?? schemaOfItem(first), buffered: null, first };
  }
  if (isIterable(source)) {
    const iterator = source[Symbol.iterator]();
    if (given) return { iterator, isAsync: false, schema: given, buffered: null, first: null };
    const first = iterator.next();
    if (first.done) needsSchema("the source is empty, so it has no schema");
    try {
      return { iterator, isAsync: false, schema: schemaOfItem(first.value), buffered: first.value, first: first.value };
    } catch (error) {
      iterator.return?.();
      throw error;
    }
  }
  if (isAsyncIterable(source)) {
    if (!given) return undefined;
    return { iterator: source[Symbol.asyncIterator](), isAsync: true, schema: given, buffered: null, first: null };
  }
  throw new InvalidArgumentError(Status.invalid_argument, `cannot export ${describeValue(source)} as a stream: expected an apache-arrow Table, RecordBatchReader, an array of RecordBatch or ExportedArray, or a (sync or async) iterable of them`);
}

/** Opens an async source, awaiting what it must (the reader's schema, or
 * the first batch). */
async function openAsync(source: StreamSource, options: StreamExportOptions): Promise<Opened> {
  if (source instanceof RecordBatchReader) {
    await source.open();
    return { iterator: source[Symbol.asyncIterator](), isAsync: true, schema: options.schema ?? source.schema, buffered: null, first: null };
  }
  const iterator = (source as AsyncIterable<StreamItem>)[Symbol.asyncIterator]();
  const first = await iterator.next();
  if (first.done) needsSchema("the async source is empty, so it has no schema");
  try {
    return { iterator, isAsync: true, schema: schemaOfItem(first.value), buffered: first.value, first: first.value };
  } catch (error) {
    await iterator.return?.();
    throw error;
  }
}

/** The stream's device_type and where RecordBatches go (see the options). */
function deviceOf(opened: Opened, options: StreamExportOptions): { deviceType: number; target: DeviceTarget | null } {
  if (options.device) {
    const deviceType = targetDeviceType(options.device.device, options.device.memory);
    deviceRuntime(options.device.device); // DeviceUnavailableError now, not at the first get_next
    return { deviceType, target: options.device };
  }
  if (options.deviceType !== undefined) {
    return { deviceType: options.deviceType, target: null };
  }
  const first = opened.first;
  return { deviceType: first instanceof ExportedArray && !first.released ? deviceTypeOf(first) : DeviceType.CPU, target: null };
}

function create(opened: Opened, options: StreamExportOptions): ExportedStream {
  const kind = options.as ?? "device_stream";
  const record = new SourceRecord(opened.iterator, opened.isAsync, opened.schema, opened.buffered);
  let plan: Uint8Array | null = null;
  let cSchema: Pointer | null = null;
  try {
    if (kind !== "stream" && kind !== "device_stream") {
      throw new InvalidArgumentError(Status.invalid_argument, `options.as must be "stream" or "device_stream", not ${JSON.stringify(kind)}`);
    }
    const { deviceType, target } = deviceOf(opened, options);
    if (kind === "stream" && deviceType !== DeviceType.CPU) {
      throw new InvalidArgumentError(Status.invalid_argument, `an ArrowArrayStream carries CPU arrays only, and this stream's device_type is ${deviceTypeName(deviceType)}: export it as a device stream`);
    }
    record.deviceType = deviceType;
    record.target = target;
    record.copyAhead = options.copyAhead ?? defaultCopyAhead;
    if (opened.schema) plan = internal.schemaPlan(opened.schema);
    else cSchema = (opened.first as ExportedArray).schema; // throws once released
  } catch (error) {
    record.close();
    throw error;
  }
  const handle = new ExportedStream(kind);
  record.key = retainForNative(record, () => record.releasedByConsumer());
  records.set(record.key, record);
  const nativeKind = kind === "device_stream" ? NativeStreamKind.device : NativeStreamKind.array;
  const status = plan
    ? native.abd_stream_export_create(nativeKind, record.deviceType, plan, plan.length, opened.isAsync, record.key, handle.stream)
    : native.abd_stream_export_create_from_schema(nativeKind, record.deviceType, cSchema, opened.isAsync, record.key, handle.stream);
  if (status !== 0) {
    const error = errorFor(status, lastError());
    forgetUnused(record.key);
    records.delete(record.key);
    record.close();
    handle.release();
    throw error;
  }
  return handle;
}

/**
 * Exports `source` as an ArrowDeviceArrayStream (default, CPU) or an
 * ArrowArrayStream (`as: "stream"`), zero-copy. The handle's `stream` is
 * the struct's address: a C consumer may move it out (then it releases
 * it) or use it in place until `handle.release()`.
 *
 * An async source (async iterable, async RecordBatchReader) needs
 * `options.schema` here; `exportStreamAsync` can find it instead.
 */
export function exportStream(source: StreamSource, options?: StreamExportOptions<"device_stream">): ExportedStream<"device_stream">;
/** `exportStream` as an ArrowArrayStream (`{ as: "stream" }`). */
export function exportStream(source: StreamSource, options: StreamExportOptions<"stream">): ExportedStream<"stream">;
/** `exportStream` with the kind known only at run time. */
export function exportStream(source: StreamSource, options?: StreamExportOptions): ExportedStream;
export function exportStream(source: StreamSource, options: StreamExportOptions = {}): ExportedStream {
  return exportStreamNamed("exportStream", source, options);
}

const streamOptionKeys = ["as", "async", "schema", "device", "deviceType", "copyAhead"] as const;

/** Checks `fn`'s source and options (`withAs`: options may name the
 * kind). The items themselves are checked as they are pulled. An array
 * passed as the options of exportArrayStream is refused before it is
 * spread (hence the check there too). */
function streamArgs(fn: string, source: unknown, options: StreamExportOptions, withAs = true): void {
  const isSource = typeof source === "object" && source !== null && !ArrayBuffer.isView(source)
    && (source instanceof Table || source instanceof RecordBatchReader || Array.isArray(source) || isIterable(source) || isAsyncIterable(source));
  if (!isSource) {
    throw argumentError(fn, "source", "an apache-arrow Table, RecordBatchReader, an array of RecordBatch or ExportedArray, or a (sync or async) iterable of them", source);
  }
  optionsArg(fn, "options", options, withAs ? streamOptionKeys : streamOptionKeys.filter((key) => key !== "as"));
  if (Array.isArray(source) && source.length === 0 && options.schema === undefined) {
    throw argumentError(fn, "source", "a non-empty array of batches (an empty one has no schema: pass options.schema)", source);
  }
  if (options.as !== undefined) oneOfArg(fn, "options.as", options.as, ["stream", "device_stream"]);
  if (options.schema !== undefined) arrowArg(fn, "options.schema", options.schema, ["Schema"]);
  if (options.device !== undefined) checkTarget(fn, options.device, "options.device");
  if (options.deviceType !== undefined) deviceTypeArg(fn, "options.deviceType", options.deviceType);
  if (options.copyAhead !== undefined) integerArg(fn, "options.copyAhead", options.copyAhead, 0, maxCopyAhead);
}

/** The most batches `options.copyAhead` may hold on the device ahead. */
const maxCopyAhead = 64;

/** `exportStream` under the caller's name (errors name `fn`). */
export function exportStreamNamed(fn: string, source: StreamSource, options: StreamExportOptions): ExportedStream {
  streamArgs(fn, source, options);
  drainReleased();
  const opened = openNow(source, options);
  if (!opened) needsSchema("an async source's schema is only known after awaiting it");
  return create(opened, options);
}

/** Like `exportStream`, but may await an async source to learn its schema
 * (an async reader's `open()`, or an async iterable's first batch, which
 * is then the stream's first batch). */
export async function exportStreamAsync(source: StreamSource, options?: StreamExportOptions<"device_stream">): Promise<ExportedStream<"device_stream">>;
/** `exportStreamAsync` as an ArrowArrayStream (`{ as: "stream" }`). */
export async function exportStreamAsync(source: StreamSource, options: StreamExportOptions<"stream">): Promise<ExportedStream<"stream">>;
/** `exportStreamAsync` with the kind known only at run time. */
export async function exportStreamAsync(source: StreamSource, options?: StreamExportOptions): Promise<ExportedStream>;
export async function exportStreamAsync(source: StreamSource, options: StreamExportOptions = {}): Promise<ExportedStream> {
  return exportStreamAsyncNamed("exportStreamAsync", source, options);
}

/** `exportStreamAsync` under the caller's name (errors name `fn`). */
export async function exportStreamAsyncNamed(fn: string, source: StreamSource, options: StreamExportOptions): Promise<ExportedStream> {
  streamArgs(fn, source, options);
  drainReleased();
  const opened = openNow(source, options) ?? await openAsync(source, options);
  return create(opened, options);
}

/** `exportStream(source, { ...options, as: "stream" })`. */
export function exportArrayStream(source: StreamSource, options: Omit<StreamExportOptions, "as"> = {}): ExportedStream<"stream"> {
  optionsArg("exportArrayStream", "options", options, streamOptionKeys.filter((key) => key !== "as"));
  return exportStreamNamed("exportArrayStream", source, { ...options, as: "stream" }) as ExportedStream<"stream">;
}

/** `exportStream(source, { ...options, as: "device_stream" })`. */
export function exportDeviceArrayStream(source: StreamSource, options: Omit<StreamExportOptions, "as"> = {}): ExportedStream<"device_stream"> {
  optionsArg("exportDeviceArrayStream", "options", options, streamOptionKeys.filter((key) => key !== "as"));
  return exportStreamNamed("exportDeviceArrayStream", source, { ...options, as: "device_stream" }) as ExportedStream<"device_stream">;
}

/** JS sources whose stream has not been released yet (for tests). */
export function liveStreamSources(): number {
  return records.size;
}
