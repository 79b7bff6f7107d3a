/**
 * This library as the *producer* of an async device stream: batches from
 * JS (an async or sync iterable, a Table, a RecordBatchReader) pushed into
 * a C consumer's `ArrowAsyncDeviceStreamHandler` (zig/async/producer.zig).
 *
 * Threads. The JS thread drives the stream and makes every handler call:
 * on_schema (with `handler->producer` populated first), on_next_task only
 * while the consumer has requested more than was sent, then the NULL task
 * and release (or on_error and release). The consumer's `request`/`cancel`
 * may come from any thread at any time, including from inside those calls:
 * they only record and wake JS, which acts on its next turn. Tasks'
 * `extract_data` may run on any thread, at any time before or after the
 * stream ends.
 *
 * Batched hand-offs. JS sends every credit it has in one turn (a sync
 * source is pulled without a microtask per batch), so requests that
 * arrive while JS is busy cost nothing and are answered by the next burst.
 * Out of credits, JS first waits a few microseconds for the next request
 * in one native call that yields the CPU (`awaitRequest`), and only then
 * arms the native wake and sleeps: at most one wake is pending, and a
 * consumer that keeps up never needs one.
 *
 * Zero-copy. Each batch is exported as it is sent, through the same
 * machinery as `exportArray` (arrow/array_plan.ts): the task hands out an
 * ArrowDeviceArray over the JS buffers, which the keepalive registry keeps
 * alive until the consumer releases that array (or the task is extracted
 * with NULL). `ExportedArray` items (e.g. device arrays made natively) are
 * moved into their task as they are, sync event included.
 *
 * Ends. The source's end sends the NULL task. A cancel ends the stream
 * quietly (the source's `return()` is called, no on_error). A JS exception
 * (from the source, or a batch that cannot be exported) becomes
 * `on_error(code, message, metadata)`, as does `request(n <= 0)` (EINVAL).
 * If the consumer returns non-zero from a callback, only release follows.
 * Every path ends with exactly one release; `done` then settles.
 */
import { toArrayBuffer } from "bun:ffi";
import { RecordBatch, RecordBatchReader, Schema, Table, type DataType, type Struct } from "apache-arrow";
import { typeDifference } from "./types.ts";
import { AsyncProducerWord, DeviceType, Errno, asyncProducerWords } from "../core/abi/layout.ts";
import { encodeMetadata } from "../core/abi/metadata.ts";
import { asPointer } from "../core/abi/structs.ts";
import { probeStruct } from "../core/abi/probe.ts";
import { type StructPointer } from "../core/abi/pointers.ts";
import { AsyncStreamError, InvalidArgumentError, OutOfMemoryError, Status, errorFor } from "../core/errors.ts";
import { errnoOfException } from "./errno.ts";
import { check, lastError, native } from "../core/ffi/library.ts";
import { ExportedArray } from "../native/exported.ts";
import { WakeSignal, registerWake, unregisterWake } from "../native/js_wake.ts";
import { jsWorkSpin } from "../native/js_queue.ts";
import { drainReleased, forgetUnused, releasesQueued } from "../native/keepalive.ts";
import { exportSchema } from "./export.ts";
import { planArray, plannedWords } from "./array_plan.ts";
import { addressArg, argumentError, describeValue, deviceTypeArg, optionsArg } from "../core/args.ts";
import { arrowArg, isRecordBatch } from "./arrow_args.ts";
import { nativeArray } from "../core/ffi/native_arrays.ts";

const W = AsyncProducerWord;
const EINVAL = Errno.EINVAL;

/** Released batches whose ids may wait in the native keepalive queue
 * before the loop drains them (a sync source never lets the event loop
 * turn, and the consumer releases on its own thread): so a long stream
 * keeps at most this many released batches reachable, beyond those the
 * consumer still holds, and drains cost one call per this many batches. */
const drainEvery = 64;

/** Key/value metadata, in any of the forms `encodeMetadata` takes. */
export type MetadataInit = Map<string, string> | Record<string, string> | Iterable<[string, string]>;

/** What a source yields: a batch, a natively made device array, or either
 * with per-task metadata (on_next_task's third argument). */
export type AsyncExportItem =
  | RecordBatch
  | ExportedArray
  | { batch: RecordBatch | ExportedArray; metadata?: MetadataInit | null };

/** What `exportAsyncStream` pushes: items from a sync or async iterable,
 * or the batches of a Table or RecordBatchReader. */
export type AsyncExportSource =
  | AsyncIterable<AsyncExportItem>
  | Iterable<AsyncExportItem>
  | Table
  | RecordBatchReader;

/** Options of `exportAsyncStream`. */
export type AsyncExportOptions = {
  /** The stream's schema. Default: the Table's or reader's, else the first
   * item's (an empty iterable then needs this). */
  schema?: Schema;
  /** `ArrowAsyncProducer.additional_metadata`. */
  metadata?: MetadataInit | null;
  /** `ArrowAsyncProducer.device_type` (default CPU). Every item must be on
   * it: RecordBatches are CPU memory; other devices need ExportedArray
   * items. */
  deviceType?: number;
};

/** How an async export ended. */
export type AsyncExportOutcome =
  /** The source ended; the NULL task and release were sent. */
  | "ended"
  /** The consumer cancelled; release was sent (no on_error). */
  | "cancelled"
  /** on_error and release were sent: a JS exception, or a bad request(n). */
  | "failed"
  /** The consumer returned non-zero from a callback; release was sent. */
  | "refused";

/** What `AsyncExport.done` settles with. */
export type AsyncExportResult = {
  /** How the stream ended. */
  outcome: AsyncExportOutcome;
  /** Tasks sent with on_next_task. */
  sent: number;
  /** The errno sent with on_error ("failed"), or the consumer's return
   * code ("refused"). */
  code?: number;
  /** The JS error behind a "failed" stream. */
  error?: unknown;
};

/** True for what `open` can read: a Table, a reader, or a (sync or
 * async) iterable that is not a string. */
function isStreamable(source: unknown): boolean {
  if (typeof source !== "object" || source === null || ArrayBuffer.isView(source)) return false;
  return source instanceof Table || source instanceof RecordBatchReader
    || typeof (source as AsyncIterable<unknown>)[Symbol.asyncIterator] === "function"
    || typeof (source as Iterable<unknown>)[Symbol.iterator] === "function";
}

/** Releases a valid `handler` that is refused for bad arguments, as the
 * contract says: the native create fails on device type 0 after checking
 * the handler, and releases it. */
function refuseHandler(handler: number): void {
  const out = nativeArray(BigUint64Array, 1);
  native.abd_async_producer_create(asPointer(handler), 0, null, 0, 0, out);
}

function metadataBytes(fn: string, param: string, init: MetadataInit | null | undefined): Uint8Array | null {
  if (init === undefined || init === null) return null;
  if (typeof init !== "object") throw argumentError(fn, param, "a Map, an iterable of [key, value] or a record of strings", init);
  const entries = init instanceof Map || Symbol.iterator in Object(init)
    ? (init as Iterable<[string, string]>)
    : Object.entries(init as Record<string, string>);
  return encodeMetadata(entries);
}

/** on_error's arguments for a JS exception. */
function errorReport(error: unknown): { code: number; message: string; metadata: Uint8Array | null } {
  const code = errnoOfException(error);
  const name = error instanceof Error ? error.name : typeof error;
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  const pairs: [string, string][] = [["error.name", name]];
  if (error instanceof AsyncStreamError) pairs.push(...error.metadata);
  return { code, message, metadata: encodeMetadata(pairs) };
}

function cString(text: string): Uint8Array {
  return new TextEncoder().encode(`${text.replaceAll("\0", " ")}\0`);
}

type Unwrapped = { batch: RecordBatch | ExportedArray; metadata: Uint8Array | null };

function unwrap(item: AsyncExportItem): Unwrapped {
  if (item instanceof ExportedArray || isRecordBatch(item)) return { batch: item, metadata: null };
  if (item && typeof item === "object" && "batch" in item && (item.batch instanceof ExportedArray || isRecordBatch(item.batch))) {
    return { batch: item.batch, metadata: metadataBytes("exportAsyncStream", "an item's metadata", item.metadata) };
  }
  throw new InvalidArgumentError(Status.invalid_argument, `an async stream source yielded ${describeValue(item)}: expected a RecordBatch, an ExportedArray, or { batch, metadata }`);
}

function release(item: AsyncExportItem | undefined): void {
  if (item instanceof ExportedArray) item.release();
  else if (item && typeof item === "object" && "batch" in item && item.batch instanceof ExportedArray) item.batch.release();
}

/** Whether the batch's columns have the stream schema's types, by
 * position (apache-arrow may give a batch with duplicate field names a
 * schema that names the wrong types, while its data is right). */
function matchesSchema(batch: RecordBatch, schema: Schema): boolean {
  const columns = batch.data.children;
  if (columns.length !== schema.fields.length) return false;
  return schema.fields.every((field, i) => typeDifference(field.type, columns[i].type) === null);
}

/** A batch's schema from its data type: apache-arrow's `RecordBatch.schema`
 * merges fields that share a name (keeping one type for both), so a batch
 * with repeated column names would be announced with wrong types. */
function schemaOfBatch(batch: RecordBatch): Schema {
  return new Schema((batch.data.type as Struct).children, batch.schema.metadata);
}

/** A Table's schema from its first batch's data type (its `schema` merges
 * repeated names as RecordBatch.schema does); an empty Table's own. */
function schemaOfTable(table: Table): Schema {
  const first = table.batches[0];
  return first ? new Schema((first.data.type as Struct).children, table.schema.metadata) : table.schema;
}

type SourceIterator = AsyncIterator<AsyncExportItem> | Iterator<AsyncExportItem>;

/** The native producer and what the JS side of one stream keeps. */
class ProducerDriver {
  readonly address: number;
  readonly token: number;
  readonly signal = new WakeSignal();
  readonly words = nativeArray(Float64Array, asyncProducerWords);
  /** The native state words as of their last change (async/producer.zig
   * `published`), read without a call between sends; never after the
   * producer is released (the memory goes with it). */
  readonly #published: Float64Array;
  readonly rc = nativeArray(Int32Array, 1);
  sent = 0;
  /** Runs of sends made without waiting in between (diagnostics). */
  bursts = 0;
  /** Reads of the native state under its lock (diagnostics: none between
   * sends while the consumer's credits last). */
  polls = 0;
  #inBurst = false;
  /** The native wake count when the producer was freed. */
  wakesAtRelease = 0;
  released = false;
  /** The native news counter as the last poll began. */
  #newsBefore = 0;
  /** Batch struct types already found to match the stream's schema (by
   * identity: batches of one reader or table often share theirs). */
  readonly #accepted = new WeakSet<DataType>();

  constructor(handler: number, deviceType: number, metadata: Uint8Array | null) {
    this.token = registerWake(() => this.signal.notify());
    const out = nativeArray(BigUint64Array, 1);
    const status = native.abd_async_producer_create(asPointer(handler), deviceType, metadata, metadata?.length ?? 0, this.token, out);
    if (status !== 0) {
      unregisterWake(this.token);
      check(status);
    }
    this.address = Number(out[0]);
    const published = native.abd_async_producer_published(asPointer(this.address))!;
    this.#published = new Float64Array(toArrayBuffer(published, 0, asyncProducerWords * 8));
  }

  /** Whether JS may send now, read from the published words without a
   * call: a credit left, no cancel, no bad request. False sends the loop
   * through `poll` (under the native lock), which also sees what a stale
   * read missed; a true is never stale, since credits only grow between
   * the sends JS makes. */
  ready(): boolean {
    const words = this.#published;
    return !this.released && words[W.credits] > 0 && words[W.cancelled] === 0 && words[W.bad_request] === 0;
  }

  /** The native wake count, read without disturbing the loop's poll. */
  wakes(): number {
    const words = nativeArray(Float64Array, asyncProducerWords);
    native.abd_async_producer_poll(asPointer(this.address), words, 0);
    return words[W.wakes];
  }

  /** Whether the consumer cancelled, from the published words. */
  cancelled(): boolean {
    return !this.released && this.#published[W.cancelled] === 1;
  }

  /** The native state. `arm`: JS is about to wait for a request, so news
   * after this snapshot must wake it (while JS is busy sending, requests
   * wake nobody: no JS callback per batch). */
  poll(arm = false): Float64Array {
    this.polls++;
    const address = asPointer(this.address);
    this.#newsBefore = native.abd_async_producer_news(address);
    native.abd_async_producer_poll(address, this.words, arm ? 1 : 0);
    return this.words;
  }

  /** Out of credits, before arming and sleeping: waits up to the JS work
   * spin window (`setJsWorkSpin`) for the consumer's next request (or
   * cancel) in one native call that yields the CPU meanwhile (to the
   * consumer's thread, when it waits for this core); returns whether one
   * came since the last poll began. A consumer thread that keeps up asks
   * again within microseconds, far sooner than a wake through the event
   * loop, and the credits it gave meanwhile are sent in one burst. */
  awaitRequest(): boolean {
    const address = asPointer(this.address);
    return native.abd_async_producer_await_news(address, this.#newsBefore, jsWorkSpin()) === 1;
  }

  sendSchema(schemaAddress: number): number {
    return native.abd_async_producer_send_schema(asPointer(this.address), asPointer(schemaAddress));
  }

  /** Out of credits: the current burst of sends is over. */
  endBurst(): void {
    this.#inBurst = false;
  }

  /** Sends one item (consuming it); returns the consumer's code. */
  send(item: AsyncExportItem, schema: Schema | null): number {
    if (!this.#inBurst) {
      this.#inBurst = true;
      this.bursts++;
    }
    const { batch, metadata } = unwrap(item);
    if (isRecordBatch(batch)) {
      // Checked against the columns' own types, never `batch.schema` (see
      // matchesSchema): a batch sent under a schema that misnames its types
      // would make the consumer read its buffers as something else.
      if (schema && !this.#accepted.has(batch.data.type)) {
        if (!matchesSchema(batch, schema)) throw new InvalidArgumentError(Status.invalid_argument, `batch ${this.sent} does not match the stream's schema`);
        this.#accepted.add(batch.data.type);
      }
      const { words, keepaliveId } = planArray(batch.data);
      const status = native.abd_async_producer_send_plan(asPointer(this.address), plannedWords(), words, keepaliveId, metadata, this.rc);
      if (status !== 0) {
        forgetUnused(keepaliveId);
        throw errorFor(status, lastError());
      }
    } else {
      try {
        check(native.abd_async_producer_send_array(asPointer(this.address), batch.array, metadata, this.rc));
      } finally {
        batch.release(); // the task took the array; the handle keeps only its schema
      }
    }
    this.sent++;
    return this.rc[0];
  }

  /** Calls the handler's release and frees the native producer. */
  finish(result: Omit<AsyncExportResult, "sent">): AsyncExportResult {
    if (!this.released) {
      this.wakesAtRelease = this.wakes();
      this.released = true;
      native.abd_async_producer_release(asPointer(this.address));
      unregisterWake(this.token);
      drainReleased();
    }
    return { ...result, sent: this.sent };
  }
}

/** The schema to announce, the iterator, and an item pulled early to learn
 * the schema. */
async function open(source: AsyncExportSource, options: AsyncExportOptions): Promise<{ schema: Schema | null; iterator: SourceIterator; first?: AsyncExportItem }> {
  let schema: Schema | null = options.schema ?? null;
  let iterator: SourceIterator;
  if (source instanceof Table) {
    schema ??= schemaOfTable(source);
    iterator = source.batches[Symbol.iterator]();
  } else if (source instanceof RecordBatchReader) {
    await source.open();
    schema ??= source.schema;
    iterator = source.isAsync() ? source[Symbol.asyncIterator]() : source[Symbol.iterator]();
  } else if (source && typeof (source as AsyncIterable<AsyncExportItem>)[Symbol.asyncIterator] === "function") {
    iterator = (source as AsyncIterable<AsyncExportItem>)[Symbol.asyncIterator]();
  } else if (source && typeof (source as Iterable<AsyncExportItem>)[Symbol.iterator] === "function") {
    iterator = (source as Iterable<AsyncExportItem>)[Symbol.iterator]();
  } else {
    throw argumentError("exportAsyncStream", "source", "an async or sync iterable of RecordBatch, a Table or a RecordBatchReader", source);
  }
  if (schema) return { schema, iterator };
  const first = await iterator.next();
  if (first.done) {
    throw new InvalidArgumentError(Status.invalid_argument, "the source is empty and no schema was given: pass options.schema");
  }
  return { schema: null, iterator, first: first.value };
}

/** Announces the schema; returns the consumer's code. */
function sendSchema(driver: ProducerDriver, schema: Schema | null, first: AsyncExportItem | undefined): number {
  if (schema) {
    const handle = exportSchema(schema);
    try {
      return driver.sendSchema(handle.schema);
    } finally {
      handle.release();
    }
  }
  const { batch } = unwrap(first!);
  if (isRecordBatch(batch)) return sendSchema(driver, schemaOfBatch(batch), undefined);
  // A native array: announce a copy of its own schema.
  const slot = native.abd_alloc_zeroed(72) ?? 0;
  if (!slot) throw new OutOfMemoryError(Status.out_of_memory, "out of memory allocating a schema slot");
  try {
    check(native.abd_schema_copy(batch.schema, asPointer(slot)));
    return driver.sendSchema(slot);
  } finally {
    native.abd_schema_release(asPointer(slot));
    native.abd_free(asPointer(slot));
  }
}

async function drive(driver: ProducerDriver, source: AsyncExportSource, options: AsyncExportOptions): Promise<AsyncExportResult> {
  let iterator: SourceIterator | null = null;
  let pending: AsyncExportItem | undefined;
  const closeSource = async () => {
    release(pending);
    pending = undefined;
    const it = iterator;
    iterator = null;
    try {
      await it?.return?.();
    } catch {
      // The stream is over either way; the source's cleanup error is moot.
    }
  };
  try {
    const opened = await open(source, options);
    iterator = opened.iterator;
    pending = opened.first;
    const firstBatch = pending === undefined ? undefined : unwrap(pending).batch;
    const streamSchema = opened.schema ?? (isRecordBatch(firstBatch) ? schemaOfBatch(firstBatch) : null);
    const schemaRc = sendSchema(driver, streamSchema, pending);
    if (schemaRc !== 0) {
      await closeSource();
      return driver.finish({ outcome: "refused", code: schemaRc });
    }
    let armed = false;
    for (;;) {
      // With a credit left and nothing else new (the published words say
      // so without a call), send at once; otherwise look under the lock.
      if (armed || !driver.ready()) {
        // Armed once: a request after this snapshot wakes JS, whether it
        // sends now or sleeps below.
        const arming = armed;
        armed = false;
        const words = driver.poll(arming);
        if (words[W.cancelled] === 1) {
          await closeSource();
          return driver.finish({ outcome: "cancelled" });
        }
        if (words[W.bad_request] === 1) {
          await closeSource();
          const n = words[W.bad_request_n];
          const error = new InvalidArgumentError(Status.invalid_argument, `the consumer called request(${n}); n must be > 0`);
          native.abd_async_producer_send_error(asPointer(driver.address), EINVAL, cString(error.message), null);
          return driver.finish({ outcome: "failed", code: EINVAL, error });
        }
        if (words[W.credits] <= 0) {
          driver.endBurst();
          if (arming) {
            await driver.signal.wait();
          } else if (!driver.awaitRequest()) {
            armed = true; // look once more with the wake armed, then wait
          }
          continue;
        }
      }
      if (releasesQueued() >= drainEvery) drainReleased();
      let item = pending;
      pending = undefined;
      if (item === undefined) {
        // Sync sources (arrays, Tables, sync readers) are pulled without a
        // microtask turn per batch.
        let next = iterator!.next();
        const awaited = next instanceof Promise;
        if (awaited) next = await next;
        const result = next as IteratorResult<AsyncExportItem>;
        if (result.done) {
          iterator = null;
          const rc = native.abd_async_producer_send_end(asPointer(driver.address));
          return driver.finish(rc === 0 ? { outcome: "ended" } : { outcome: "refused", code: rc });
        }
        item = result.value;
        // A cancel may have come while the source was producing.
        if (awaited && driver.cancelled()) {
          pending = item;
          continue;
        }
      }
      const rc = driver.send(item, streamSchema);
      if (rc !== 0) {
        await closeSource();
        return driver.finish({ outcome: "refused", code: rc });
      }
    }
  } catch (error) {
    await closeSource();
    const report = errorReport(error);
    native.abd_async_producer_send_error(asPointer(driver.address), report.code, cString(report.message), report.metadata);
    return driver.finish({ outcome: "failed", code: report.code, error });
  }
}

/** Set by AsyncExport's static block: its private constructor. */
let startedExport: (driver: ProducerDriver, done: Promise<AsyncExportResult>) => AsyncExport;

/** A running export; `done` settles after the handler's release. */
export class AsyncExport {
  readonly #driver: ProducerDriver;
  /** Settles (never rejects) once the stream ended and the handler was
   * released, with how it ended. */
  readonly done: Promise<AsyncExportResult>;

  /** `exportAsyncStream` makes it (through `startedExport`). */
  private constructor(driver: ProducerDriver, done: Promise<AsyncExportResult>) {
    if (!(driver instanceof ProducerDriver)) throw argumentError("AsyncExport", "driver", "the driver exportAsyncStream makes", driver);
    if (!(done instanceof Promise)) throw argumentError("AsyncExport", "done", "a Promise", done);
    this.#driver = driver;
    this.done = done;
  }

  static {
    startedExport = (driver, done) => new AsyncExport(driver, done);
  }

  /** Tasks sent so far. */
  get sent(): number {
    return this.#driver.sent;
  }

  /** How the consumer's requests reached JS so far: `wakes`, the JS
   * callbacks the native side sent (none while JS is busy sending);
   * `bursts`, the runs of tasks sent in one go (JS sends every requested
   * task it can before it waits again); `polls`, the reads of the native
   * state under its lock (none between sends while credits last: JS reads
   * them from memory the native side publishes). Diagnostics. */
  get handoffs(): { wakes: number; bursts: number; polls: number } {
    const driver = this.#driver;
    const wakes = driver.released ? driver.wakesAtRelease : driver.wakes();
    return { wakes, bursts: driver.bursts, polls: driver.polls };
  }
}

/**
 * Pushes `source` into the C consumer's `handler`
 * (`struct ArrowAsyncDeviceStreamHandler*`), honouring its requests.
 * Populates `handler->producer` at once; everything else happens
 * asynchronously on this thread (see the module comment for the order).
 * Throws (after releasing the handler) only when the handler lacks a
 * callback or the options are invalid.
 */
export function exportAsyncStream(source: AsyncExportSource, handler: StructPointer<"ArrowAsyncDeviceStreamHandler">, options: AsyncExportOptions = {}): AsyncExport {
  const fn = "exportAsyncStream";
  const address = addressArg(fn, "handler", handler); // not an address: nothing can be released
  probeStruct(fn, "handler", "ArrowAsyncDeviceStreamHandler", address, "owned"); // released when refused but safe to release
  let deviceType: number = DeviceType.CPU;
  let metadata: Uint8Array | null = null;
  try {
    if (!isStreamable(source)) {
      throw argumentError(fn, "source", "an apache-arrow Table or RecordBatchReader, or a (sync or async) iterable of RecordBatch or ExportedArray", source);
    }
    optionsArg(fn, "options", options, ["schema", "metadata", "deviceType"]);
    if (options.schema !== undefined) arrowArg(fn, "options.schema", options.schema, ["Schema"]);
    deviceType = deviceTypeArg(fn, "options.deviceType", options.deviceType ?? DeviceType.CPU);
    metadata = metadataBytes(fn, "options.metadata", options.metadata);
  } catch (error) {
    refuseHandler(address);
    throw error;
  }
  const driver = new ProducerDriver(address, deviceType, metadata);
  const done = drive(driver, source, options);
  return startedExport(driver, done);
}
