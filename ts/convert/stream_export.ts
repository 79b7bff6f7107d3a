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
 *   JS (lifetime/js_queue.ts); the consumer thread blocks until JS has
 *   produced the batch, awaiting the promise for async sources (with a
 *   timer holding the event loop open meanwhile). JS's event loop must be
 *   free to run: a JS thread blocked in a native call that waits for that
 *   consumer thread would deadlock. Start the consumer thread, return to
 *   JS, and await its completion.
 *
 * Errors: an exception thrown by the source (or a batch that cannot be
 * exported, or does not match the schema) ends the stream: get_next returns
 * an errno (EINVAL for bad input, the library's errno for its own errors,
 * `error.errno` when the exception carries one, otherwise EIO) on that and
 * every later call, and get_last_error returns the exception's message.
 * When the consumer releases the stream, the source's iterator is closed
 * (`return()`), so generators and readers run their cleanup.
 */
import { RecordBatch, RecordBatchReader, Schema, Struct, Table, util, type DataType } from "apache-arrow";
import { JSCallback } from "bun:ffi";
import { DeviceType, StreamKind as NativeStreamKind } from "../abi/layout.ts";
import { asPointer } from "../abi/structs.ts";
import { ArrowDeviceError, InvalidArgumentError, Status, errorFor } from "../errors.ts";
import { lastError, native } from "../ffi/library.ts";
import { ExportedStream, type StreamKind } from "../lifetime/exported_stream.ts";
import { JsWorkTag, onJsWork } from "../lifetime/js_queue.ts";
import { drainReleased, forgetUnused, retainForNative } from "../lifetime/keepalive.ts";
import { internal } from "./export.ts";

/** What `exportStream` serves: the batches of a Table, an array, a reader,
 * or a sync or async iterable, pulled one get_next at a time. */
export type StreamSource =
  | Table
  | RecordBatch[]
  | RecordBatchReader
  | Iterable<RecordBatch>
  | AsyncIterable<RecordBatch>;

/** Options of `exportStream` and `exportStreamAsync`. */
export type StreamExportOptions = {
  /** "device_stream" (default): an ArrowDeviceArrayStream on the CPU.
   * "stream": an ArrowArrayStream. */
  as?: StreamKind;
  /** The stream's schema. Required for an async source given to
   * `exportStream` (`exportStreamAsync` can read it from the first batch)
   * and for an empty iterable. Otherwise taken from the source. */
  schema?: Schema;
};

const errnoIO = 5;

/** The JS side of one exported stream. Kept in the keepalive registry
 * until the consumer releases the stream. */
class SourceRecord {
  key = 0;
  /** Batches answered so far (for messages). */
  index = 0;
  /** The last batch type accepted, to skip comparing identical types. */
  acceptedType: DataType | null = null;
  readonly structType: Struct;
  #closed = false;

  constructor(
    readonly iterator: Iterator<RecordBatch> | AsyncIterator<RecordBatch>,
    readonly isAsync: boolean,
    readonly schema: Schema,
    /** A batch read ahead to learn the schema, answered first. */
    public buffered: RecordBatch | null,
  ) {
    this.structType = new Struct(schema.fields);
  }

  takeBuffered(): RecordBatch | null {
    const batch = this.buffered;
    this.buffered = null;
    return batch;
  }

  /** Closes the source's iterator once (runs a generator's `finally`). */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.buffered = null;
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

/** Live records by key, for the producer callbacks. */
const records = new Map<number, SourceRecord>();

const encoder = new TextEncoder();

function errnoOf(error: unknown): number {
  if (error instanceof ArrowDeviceError) return native.abd_status_errno(error.status);
  const errno = (error as { errno?: unknown } | null)?.errno;
  if (typeof errno === "number" && Number.isInteger(errno) && errno !== 0) return Math.abs(errno);
  return errnoIO;
}

function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}

function describe(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  const name = (value as object).constructor?.name;
  return name ? `a ${name}` : typeof value;
}

/** Ends the stream with `error` (final: every later get_next repeats it). */
function failProducer(record: SourceRecord | undefined, producer: number, error: unknown): void {
  const message = encoder.encode(messageOf(error));
  native.abd_stream_export_fail(asPointer(producer), errnoOf(error), message, message.length);
  record?.close();
}

/** Answers the pending get_next with `batch`, zero-copy. */
function deliver(record: SourceRecord, producer: number, batch: unknown): void {
  if (!(batch instanceof RecordBatch)) {
    throw new InvalidArgumentError(Status.invalid_argument, `the stream source yielded ${describe(batch)} as batch ${record.index}, not an apache-arrow RecordBatch`);
  }
  const type = batch.data.type;
  if (type !== record.acceptedType) {
    if (!util.compareTypes(record.structType, type)) {
      throw new InvalidArgumentError(Status.invalid_argument, `batch ${record.index} has the schema ${String(type)}, but the stream's schema is ${String(record.structType)}`);
    }
    record.acceptedType = type;
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

/** Answers one get_next from a sync source, synchronously. */
function produceSync(record: SourceRecord, producer: number): void {
  try {
    let batch: unknown = record.takeBuffered();
    if (!batch) {
      const step = (record.iterator as Iterator<RecordBatch>).next();
      if (step.done) return end(record, producer);
      batch = step.value;
    }
    deliver(record, producer, batch);
  } catch (error) {
    failProducer(record, producer, error);
  }
  drainReleased();
}

/** Answers one get_next from an async source, for a waiting thread. */
async function produceAsync(record: SourceRecord, producer: number): Promise<void> {
  // A pending promise alone does not keep Bun's event loop alive; a
  // native thread is waiting for this answer.
  const keepAlive = setTimeout(() => {}, 2 ** 31 - 1);
  try {
    let batch: unknown = record.takeBuffered();
    if (!batch) {
      const step = await (record.iterator as AsyncIterator<RecordBatch>).next();
      if (step.done) return end(record, producer);
      batch = step.value;
    }
    deliver(record, producer, batch);
  } catch (error) {
    failProducer(record, producer, error);
  } finally {
    clearTimeout(keepAlive);
  }
  drainReleased();
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
  iterator: Iterator<RecordBatch> | AsyncIterator<RecordBatch>;
  isAsync: boolean;
  schema: Schema;
  buffered: RecordBatch | null;
};

/** A batch's schema, from its data type (apache-arrow's RecordBatch.schema
 * merges fields that share a name). */
function schemaOfBatch(batch: unknown): Schema {
  if (!(batch instanceof RecordBatch)) {
    throw new InvalidArgumentError(Status.invalid_argument, `the stream source yielded ${describe(batch)}, not an apache-arrow RecordBatch`);
  }
  return new Schema((batch.data.type as Struct).children, batch.schema.metadata);
}

function needsSchema(what: string): never {
  throw new InvalidArgumentError(Status.invalid_argument, `${what}: pass options.schema${what.includes("async") ? ", or use exportStreamAsync(), which reads the first batch for it" : ""}`);
}

function isAsyncIterable(source: unknown): source is AsyncIterable<RecordBatch> {
  return typeof (source as AsyncIterable<RecordBatch>)?.[Symbol.asyncIterator] === "function";
}

function isIterable(source: unknown): source is Iterable<RecordBatch> {
  return typeof (source as Iterable<RecordBatch>)?.[Symbol.iterator] === "function";
}

/** Opens `source` without awaiting; `undefined` means it needs to await. */
function openNow(source: StreamSource, options: StreamExportOptions): Opened | undefined {
  const given = options.schema ?? null;
  if (source instanceof Table) {
    return { iterator: source.batches[Symbol.iterator](), isAsync: false, schema: given ?? source.schema, buffered: null };
  }
  if (source instanceof RecordBatchReader) {
    if (source.isSync()) {
      source.open();
      return { iterator: source[Symbol.iterator](), isAsync: false, schema: given ?? source.schema, buffered: null };
    }
    if (!given) return undefined;
    return { iterator: source[Symbol.asyncIterator](), isAsync: true, schema: given, buffered: null };
  }
  if (Array.isArray(source)) {
    if (!given && source.length === 0) needsSchema("an empty array of batches has no schema");
    return { iterator: source[Symbol.iterator](), isAsync: false, schema: given ?? schemaOfBatch(source[0]), buffered: null };
  }
  if (isIterable(source)) {
    const iterator = source[Symbol.iterator]();
    if (given) return { iterator, isAsync: false, schema: given, buffered: null };
    const first = iterator.next();
    if (first.done) needsSchema("the source is empty, so it has no schema");
    try {
      return { iterator, isAsync: false, schema: schemaOfBatch(first.value), buffered: first.value };
    } catch (error) {
      iterator.return?.();
      throw error;
    }
  }
  if (isAsyncIterable(source)) {
    if (!given) return undefined;
    return { iterator: source[Symbol.asyncIterator](), isAsync: true, schema: given, buffered: null };
  }
  throw new InvalidArgumentError(Status.invalid_argument, `cannot export ${describe(source)} as a stream: expected an apache-arrow Table, RecordBatchReader, an array of RecordBatch, or a (sync or async) iterable of RecordBatch`);
}

/** Opens an async source, awaiting what it must (the reader's schema, or
 * the first batch). */
async function openAsync(source: StreamSource, options: StreamExportOptions): Promise<Opened> {
  if (source instanceof RecordBatchReader) {
    await source.open();
    return { iterator: source[Symbol.asyncIterator](), isAsync: true, schema: options.schema ?? source.schema, buffered: null };
  }
  const iterator = (source as AsyncIterable<RecordBatch>)[Symbol.asyncIterator]();
  const first = await iterator.next();
  if (first.done) needsSchema("the async source is empty, so it has no schema");
  try {
    return { iterator, isAsync: true, schema: schemaOfBatch(first.value), buffered: first.value };
  } catch (error) {
    await iterator.return?.();
    throw error;
  }
}

function create(opened: Opened, options: StreamExportOptions): ExportedStream {
  const kind = options.as ?? "device_stream";
  if (kind !== "stream" && kind !== "device_stream") {
    throw new InvalidArgumentError(Status.invalid_argument, `options.as must be "stream" or "device_stream", not ${JSON.stringify(kind)}`);
  }
  const record = new SourceRecord(opened.iterator, opened.isAsync, opened.schema, opened.buffered);
  let plan: Uint8Array;
  try {
    plan = internal.schemaPlan(opened.schema);
  } catch (error) {
    record.close();
    throw error;
  }
  const handle = new ExportedStream(kind);
  record.key = retainForNative(record, () => record.releasedByConsumer());
  records.set(record.key, record);
  const status = native.abd_stream_export_create(
    kind === "device_stream" ? NativeStreamKind.device : NativeStreamKind.array,
    DeviceType.CPU, plan, plan.length, opened.isAsync, record.key, handle.stream,
  );
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
export function exportStream(source: StreamSource, options: StreamExportOptions = {}): ExportedStream {
  drainReleased();
  const opened = openNow(source, options);
  if (!opened) needsSchema("an async source's schema is only known after awaiting it");
  return create(opened, options);
}

/** Like `exportStream`, but may await an async source to learn its schema
 * (an async reader's `open()`, or an async iterable's first batch, which
 * is then the stream's first batch). */
export async function exportStreamAsync(source: StreamSource, options: StreamExportOptions = {}): Promise<ExportedStream> {
  drainReleased();
  const opened = openNow(source, options) ?? await openAsync(source, options);
  return create(opened, options);
}

/** `exportStream(source, { ...options, as: "stream" })`. */
export function exportArrayStream(source: StreamSource, options: Omit<StreamExportOptions, "as"> = {}): ExportedStream {
  return exportStream(source, { ...options, as: "stream" });
}

/** `exportStream(source, { ...options, as: "device_stream" })`. */
export function exportDeviceArrayStream(source: StreamSource, options: Omit<StreamExportOptions, "as"> = {}): ExportedStream {
  return exportStream(source, { ...options, as: "device_stream" });
}

/** JS sources whose stream has not been released yet (for tests). */
export function liveStreamSources(): number {
  return records.size;
}
