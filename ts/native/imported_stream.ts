/**
 * Imported streams: an ArrowArrayStream or ArrowDeviceArrayStream moved in
 * from a C producer (zig/stream/import.zig), read batch by batch as
 * ImportedArray raw views (every Arrow type, every device). The apache-arrow
 * iterators are in arrow/stream_import.ts.
 *
 * Ownership. Importing moves the producer's stream struct into native
 * memory (the caller's struct is left released). Each batch becomes its
 * own ImportedArray (a native owner): it outlives the stream and is
 * released as any import is (dispose(), or when its views are collected).
 * The stream's release runs exactly once: on `release()` (or `using`),
 * when a `for ... of` / `for await` loop over it ends, breaks or throws,
 * or from a FinalizationRegistry safety net. `relay()` / `moveTo()` hand
 * the stream on to a C consumer, unconverted, instead.
 *
 * Threads. `next()` and the sync iterator call the producer's get_next on
 * the JS thread, blocking it for as long as the producer takes.
 * `nextAsync()` and the async iterator call it on the stream's own native
 * worker thread and resolve on the JS thread when it returns, so JS keeps
 * running meanwhile (and a JS-produced async stream can be read back); they
 * read one batch ahead. One call at a time per stream.
 */
import { CString, type Pointer } from "bun:ffi";
import { DeviceType, deviceTypeName, validationLevelArg } from "../core/abi/layout.ts";
import { asPointer, schemaFields } from "../core/abi/structs.ts";
import { probeStruct } from "../core/abi/probe.ts";
import { type StructPointer } from "../core/abi/pointers.ts";
import {
  InvalidArgumentError, ReleasedError, Status, StreamError, errorFor, type ArrowDeviceError,
} from "../core/errors.ts";
import { check, lastError, native } from "../core/ffi/library.ts";
import { reportLeak, track, untrack } from "./debug.ts";
import { ExportedStream, type StreamKind } from "./exported_stream.ts";
import { grantStreamAccess } from "./handle_access.ts";
import { completeSnapshot, snapshotWords, type PulledBatch } from "./import_snapshot.ts";
import type { ImportedArray } from "./imported_array.ts";
import { adoptImportOwner, adoptImportSnapshot, type ImportOptions } from "./import_structs.ts";
import { JsWorkTag, jsWorkSpin, onJsWork } from "./js_queue.ts";
import { withStreamCapsule } from "./protocol/consume.ts";
import { importedStreamCapsule } from "./protocol/handle_methods.ts";
import { ArrowCDeviceStream, ArrowCStream, isStreamProducer, type ArrowCapsule, type ProtocolOptions, type StreamProducer } from "./protocol/symbols.ts";
import { addressArg, argumentError, internalConstruction } from "../core/args.ts";
import { inspectCustom } from "./inspect.ts";
import { showImportedStream } from "./inspect_handles.ts";
import { nativeArray } from "../core/ffi/native_arrays.ts";

/** Only this module constructs an ImportedStream. */
const streamToken = Symbol("ImportedStream");

type Native = { handle: number; token: number; label: string };

const safetyNet = new FinalizationRegistry<Native>((held) => {
  reportLeak(held.token, held.label);
  native.abd_stream_import_release(held.handle as Pointer);
});

/** Streams with a background pull in flight, by serial. */
const pulling = new Map<number, ImportedStream>();

onJsWork(JsWorkTag.stream_import_pulled, (serial) => {
  // Absent: the stream was released, or its result was already taken
  // (read ahead); nothing native to touch then.
  const stream = pulling.get(serial);
  if (stream) settle(stream);
  return false; // the next pull is JS's to ask for
});

/** zig/stream/import.zig PullState. */
const PullState = { idle: 0, queued: 1, running: 2, ready: 3 } as const;

const words = nativeArray(Float64Array, 4);
/** abd_stream_import_next_snapshot's head: owner, snapshot words needed. */
const pulledHead = nativeArray(Float64Array, 2);

/** Set by ImportedStream's static block: takes a finished background
 * pull (the js_queue handler). */
let settle: (stream: ImportedStream) => void;
const errnoOut = nativeArray(Int32Array, 1);

function inFlight(): InvalidArgumentError {
  return new InvalidArgumentError(Status.invalid_argument, "a nextAsync() pull (or its read-ahead) of this stream is still in flight; await nextAsync() instead");
}

type PendingPull = {
  resolve: (batch: ImportedArray | null) => void;
  reject: (error: Error) => void;
  /** Keeps the event loop alive while a native thread works for us. */
  keepAlive: ReturnType<typeof setTimeout>;
};

/** A C stream moved in, read batch by batch as ImportedArray raw views;
 * see the module comment for ownership and threads. */
export class ImportedStream implements Disposable, Iterable<ImportedArray>, AsyncIterable<ImportedArray> {

  /** Protocol (docs/protocol.md): an "arrow_array_stream" capsule; undefined for device data. */
  get [ArrowCStream](): ((options?: ProtocolOptions) => ArrowCapsule) | undefined { return this.deviceType === DeviceType.CPU ? (options) => importedStreamCapsule(this, "stream", options) : undefined; }
  /** Protocol (docs/protocol.md): an "arrow_device_array_stream" capsule. */
  get [ArrowCDeviceStream](): (options?: ProtocolOptions) => ArrowCapsule { return (options) => importedStreamCapsule(this, "device_stream", options); }
  #native: Native | null;
  /** Which struct was moved in: "stream" or "device_stream". */
  readonly kind: StreamKind;
  /** The stream's device_type (CPU for an ArrowArrayStream). */
  readonly deviceType: number;
  readonly #serial: number;
  readonly #level: number;
  #pending: PendingPull | null = null;
  /** Set by the first `nextAsync()`: from then on a background pull may be
   * ready or running, which the sync pull must look at first. Before it,
   * the sync pull is one native call (get_next + validation + snapshot). */
  #pulledAsync = false;

  private constructor(token: symbol, handle: number, level: number) {
    internalConstruction("ImportedStream", token, streamToken, "use ImportedStream.fromArrayStream or fromDeviceArrayStream");
    native.abd_stream_import_info(handle as Pointer, words);
    this.#serial = words[0];
    this.kind = words[1] === 1 ? "device_stream" : "stream";
    this.deviceType = words[2];
    this.#level = level;
    const label = `imported ${this.kind === "stream" ? "ArrowArrayStream" : "ArrowDeviceArrayStream"}`;
    this.#native = { handle, token: track(label), label };
    safetyNet.register(this, this.#native, this);
  }

  static #import(fn: string, kind: 0 | 1, stream: unknown, options: ImportOptions): ImportedStream {
    const address = addressArg(fn, "stream", stream, true);
    // A refused stream is released when that is safe (readable, of this
    // kind, its release code), else left untouched; a NULL is reported
    // natively.
    if (address) probeStruct(fn, "stream", kind === 0 ? "ArrowArrayStream" : "ArrowDeviceArrayStream", address, "owned");
    let level = -1;
    let error: unknown = null;
    try {
      level = validationLevelArg(fn, options);
    } catch (caught) {
      error = caught;
    }
    const out = nativeArray(BigUint64Array, 1);
    // Moved in even when an option is bad: an import owns what it is given.
    check(native.abd_stream_import(kind, asPointer(address), out));
    const handle = Number(out[0]);
    if (error) {
      native.abd_stream_import_release(handle as Pointer);
      throw error;
    }
    return new ImportedStream(streamToken, handle, level);
  }

  /** Moves the `ArrowArrayStream*` in. Its batches are CPU arrays,
   * validated at `options.validation` ("default"). */
  static fromArrayStream(stream: StructPointer<"ArrowArrayStream"> | null | StreamProducer | ArrowCapsule, options: ImportOptions = {}): ImportedStream {
    const fn = "ImportedStream.fromArrayStream";
    if (isStreamProducer(stream)) return ImportedStream.#fromProducer(fn, stream, options);
    return ImportedStream.#import(fn, 0, stream, options);
  }

  /** Takes the stream of any protocol producer or stream capsule
   * (docs/protocol.md), preferring its device method. */
  static #fromProducer(fn: string, source: StreamProducer | ArrowCapsule, options: ImportOptions): ImportedStream {
    return withStreamCapsule(source, ({ stream, device }) => ImportedStream.#import(fn, device ? 1 : 0, stream, options));
  }

  /** Moves the `ArrowDeviceArrayStream*` in. Each batch's device_type is
   * checked against the stream's (device_id may vary). */
  static fromDeviceArrayStream(stream: StructPointer<"ArrowDeviceArrayStream"> | null | StreamProducer | ArrowCapsule, options: ImportOptions = {}): ImportedStream {
    const fn = "ImportedStream.fromDeviceArrayStream";
    if (isStreamProducer(stream)) return ImportedStream.#fromProducer(fn, stream, options);
    return ImportedStream.#import(fn, 1, stream, options);
  }

  /** The stream's device_type by name, e.g. "CPU", "CUDA". */
  get deviceTypeName(): string {
    return deviceTypeName(this.deviceType);
  }

  /** True once released, relayed, or fully read by a loop. */
  get released(): boolean {
    return this.#native === null;
  }

  #live(): number {
    if (!this.#native) throw new ReleasedError(Status.released, "this imported stream was released (or relayed); it cannot be read any more");
    return this.#native.handle;
  }

  #idle(): number {
    const handle = this.#live();
    if (this.#pending) throw inFlight();
    return handle;
  }

  /** The error for a failed native call, with the producer's errno and
   * message when the producer's callback failed. */
  #error(status: number): ArrowDeviceError {
    const message = lastError();
    if (status !== Status.callback_error || !this.#native) return errorFor(status, message);
    const text = native.abd_stream_import_producer_error(this.#native.handle as Pointer, errnoOut);
    const producerMessage = text ? new CString(text).toString() : null;
    // The native message ends with the producer's text, unless that was
    // too long for it: then put the whole text back.
    const head = message.indexOf("): ");
    const shown = producerMessage !== null && head >= 0 && !message.endsWith(producerMessage)
      ? message.slice(0, head + 3) + producerMessage
      : message;
    return new StreamError(status, shown, errnoOut[0], producerMessage);
  }

  /** `struct ArrowSchema*` of the stream (fetched with get_schema on first
   * use), owned by the stream: valid until it is released. */
  get schemaAddress(): number {
    const handle = this.#idle();
    const status = native.abd_stream_import_schema(handle as Pointer, words);
    if (status !== 0) throw this.#error(status);
    return words[0];
  }

  /** The schema's root format ("+s" for record batches). */
  get schemaFormat(): string {
    return schemaFields.format(this.schemaAddress) ?? "";
  }

  /** A zero-length batch shaped like the stream's schema (every node of
   * length 0, no data): how converters learn the schema of a stream that
   * has no batch. The stream's position is unchanged. */
  emptyBatch(): ImportedArray {
    const handle = this.#idle();
    const status = native.abd_stream_import_empty_batch(handle as Pointer, this.#level, words);
    if (status !== 0) throw this.#error(status);
    return adoptImportOwner(words[0]);
  }

  /** Pulls the next batch on this (the JS) thread; null at the end, and on
   * every call after. Throws StreamError when get_next fails. After
   * `nextAsync()`, a batch read ahead is taken first; a read-ahead still
   * in flight makes this throw (await `nextAsync()` instead). */
  next(): ImportedArray | null {
    return this.#next(false);
  }

  #next(transient: boolean): ImportedArray | null {
    const handle = this.#idle();
    if (transient && !this.#pulledAsync) return this.#nextSnapshot(handle);
    let state = native.abd_stream_import_pull_state(handle as Pointer);
    // No nextAsync() is pending (#idle checked), so a pull still queued or
    // running is the read-ahead of the last one: this synchronous pull
    // waits for it, as it would have waited for get_next itself.
    if (state === PullState.queued || state === PullState.running) state = this.#awaitReadAhead(handle);
    if (state === PullState.ready) return this.#take(handle, false);
    if (state !== PullState.idle) throw inFlight();
    const status = native.abd_stream_import_next(handle as Pointer, this.#level, words);
    if (status !== 0) throw this.#error(status);
    return words[0] === 0 ? null : adoptImportOwner(words[0], transient);
  }

  /** Blocks the JS thread until the worker's read-ahead pull is over
   * (spinning briefly, then sleeping 1 ms at a time); its final state. */
  #awaitReadAhead(handle: number): number {
    const spinUntil = Bun.nanoseconds() + jsWorkSpin();
    for (;;) {
      const state = native.abd_stream_import_pull_state(handle as Pointer);
      if (state !== PullState.queued && state !== PullState.running) return state;
      if (Bun.nanoseconds() > spinUntil) Bun.sleepSync(1);
    }
  }

  /** A transient pull in one native call (no background pull was ever
   * started, so none can be ready or running): the batch's owner comes
   * with its snapshot, and the handle keeps the import's reference as a
   * plain one (adoptImportSnapshot). */
  #nextSnapshot(handle: number): ImportedArray | null {
    const table = snapshotWords();
    const owner = this.#pullSnapshot(handle, table);
    return owner === 0 ? null : adoptImportSnapshot(owner, completeSnapshot(owner, table, pulledHead[1]));
  }

  /** get_next, validation and the snapshot into `table` in one native
   * call: the batch's owner (0 at the end), its import reference kept as
   * a plain one; `pulledHead[1]` says how many words the snapshot needed
   * (written only when they fit: see completeSnapshot). */
  #pullSnapshot(handle: number, table: Float64Array): number {
    const status = native.abd_stream_import_next_snapshot(handle as Pointer, this.#level, table, table.length, pulledHead);
    if (status !== 0) throw this.#error(status);
    return pulledHead[0];
  }

  /** batch_source.ts `pullInto` (see there). */
  #pullInto(into: PulledBatch): boolean {
    const handle = this.#idle();
    if (typeof into !== "object" || into === null || !(into.words instanceof Float64Array)) {
      throw argumentError("pullInto", "into", "a PulledBatch (from pulledBatch())", into);
    }
    if (this.#pulledAsync) {
      into.owner = 0;
      into.imported = this.#next(true);
      return into.imported !== null;
    }
    const owner = this.#pullSnapshot(handle, into.words);
    if (owner === 0) return false;
    into.words = completeSnapshot(owner, into.words, pulledHead[1]);
    into.owner = owner;
    into.imported = null;
    return true;
  }

  /** Takes the finished background pull; then, with `readAhead`, starts
   * pulling the one after it (unless this was the end). */
  #take(handle: number, readAhead: boolean): ImportedArray | null {
    const status = native.abd_stream_import_take_pull(handle as Pointer, words);
    if (status !== 0) throw this.#error(status);
    if (words[0] === 0) return null;
    const batch = adoptImportOwner(words[0]);
    // A failure to start is reported by the next nextAsync(), which retries.
    if (readAhead) native.abd_stream_import_pull(handle as Pointer, this.#level);
    return batch;
  }

  /** The next batch, pulled on the stream's worker thread; resolves on
   * the JS thread (null at the end). It reads one batch ahead: when a
   * batch is handed over, the worker already pulls the next, so a consumer
   * slower than the producer waits for nothing. One call at a time. */
  nextAsync(): Promise<ImportedArray | null> {
    const handle = this.#idle();
    this.#pulledAsync = true;
    const state = native.abd_stream_import_pull_state(handle as Pointer);
    if (state === PullState.ready) return this.#takeNow(handle);
    if (state === PullState.idle) check(native.abd_stream_import_pull(handle as Pointer, this.#level));
    // The worker is pulling: a fast producer is done within microseconds,
    // sooner than a wake-up through the event loop would come.
    const deadline = Bun.nanoseconds() + jsWorkSpin();
    while (Bun.nanoseconds() < deadline) {
      if (native.abd_stream_import_pull_state(handle as Pointer) === PullState.ready) return this.#takeNow(handle);
    }
    // Wait through the work queue. Telling the worker so returns the state
    // after: the pull may have ended meanwhile, unposted.
    if (native.abd_stream_import_wait(handle as Pointer) === PullState.ready) return this.#takeNow(handle);
    return new Promise<ImportedArray | null>((resolve, reject) => {
      this.#pending = { resolve, reject, keepAlive: setTimeout(() => {}, 2 ** 31 - 1) };
      pulling.set(this.#serial, this);
    });
  }

  #takeNow(handle: number): Promise<ImportedArray | null> {
    try {
      return Promise.resolve(this.#take(handle, true));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** A background pull finished (js_queue handler). An entry for a pull
   * already taken finds the next one still running: it waits. */
  #settlePull(): void {
    const pending = this.#pending;
    if (!pending || !this.#native) return;
    const handle = this.#native.handle;
    if (native.abd_stream_import_pull_state(handle as Pointer) !== PullState.ready) return;
    this.#pending = null;
    pulling.delete(this.#serial);
    clearTimeout(pending.keepAlive);
    try {
      pending.resolve(this.#take(handle, true));
    } catch (error) {
      pending.reject(error as Error);
    }
  }

  // The pulls that skip the public surface (batch_source.ts), and the
  // js_queue handler's: a static block reaches the private methods.
  static {
    settle = (stream) => stream.#settlePull();
    grantStreamAccess({
      pullTransient: (stream) => stream.#next(true),
      pullInto: (stream, into) => stream.#pullInto(into),
      copyPullsToHost: (stream) => {
        native.abd_stream_import_copy_pulls_to_host(stream.#live() as Pointer);
      },
    });
  }

  /** Every remaining batch, pulled on the JS thread. The stream is
   * released when the loop ends, breaks or throws. */
  *arrays(): Generator<ImportedArray, void, undefined> {
    try {
      for (;;) {
        const batch = this.next();
        if (!batch) return;
        yield batch;
      }
    } finally {
      this.release();
    }
  }

  [Symbol.iterator](): Iterator<ImportedArray> {
    return this.arrays();
  }

  /** Every remaining batch, pulled on the stream's worker thread. The
   * stream is released when the loop ends, breaks or throws. */
  async *arraysAsync(): AsyncGenerator<ImportedArray, void, undefined> {
    try {
      for (;;) {
        const batch = await this.nextAsync();
        if (!batch) return;
        yield batch;
      }
    } finally {
      this.release();
    }
  }

  [Symbol.asyncIterator](): AsyncIterator<ImportedArray> {
    return this.arraysAsync();
  }

  /** Hands the stream on, unconverted, to a new slot for a C consumer
   * (batches already pulled stay valid). This handle is then released. */
  relay(): ExportedStream {
    const out = new ExportedStream(this.kind, `relayed ${this.kind === "stream" ? "ArrowArrayStream" : "ArrowDeviceArrayStream"}`);
    try {
      this.moveTo(out.stream);
      return out;
    } catch (error) {
      out.release();
      throw error;
    }
  }

  /** Moves the producer's stream struct to `out` (a C `ArrowArrayStream*`
   * or `ArrowDeviceArrayStream*`, as imported); the caller then owns it. */
  moveTo(out: StructPointer<"ArrowArrayStream"> | StructPointer<"ArrowDeviceArrayStream">): void {
    const target = addressArg("ImportedStream.moveTo", "out", out);
    probeStruct("ImportedStream.moveTo", "out", this.kind === "stream" ? "ArrowArrayStream" : "ArrowDeviceArrayStream", target, false);
    const held = this.#native;
    const handle = this.#idle();
    check(native.abd_stream_import_move(handle as Pointer, asPointer(target)));
    this.#forget(held!);
  }

  #forget(held: Native): void {
    this.#native = null;
    safetyNet.unregister(this);
    untrack(held.token);
  }

  /** Releases the producer's stream, once. A pull in flight is rejected
   * with ReleasedError; the native worker finishes the release when the
   * producer's get_next returns. Idempotent. */
  release(): void {
    const held = this.#native;
    if (!held) return;
    this.#forget(held);
    const pending = this.#pending;
    if (pending) {
      this.#pending = null;
      pulling.delete(this.#serial);
      clearTimeout(pending.keepAlive);
      pending.reject(new ReleasedError(Status.released, "the imported stream was released while a pull was in flight"));
    }
    native.abd_stream_import_release(held.handle as Pointer);
  }

  /** What console.log and Bun.inspect print (native/inspect.ts). */
  [inspectCustom](): string { return showImportedStream(this); }

  [Symbol.dispose](): void {
    this.release();
  }
}
