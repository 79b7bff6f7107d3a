/**
 * The JS side of exported streams: one SourceRecord per stream, kept by
 * the keepalive registry until the consumer releases it, and the get_next
 * producers that answer the native side from it (synchronously on the JS
 * thread, or queued from another thread; arrow/stream_export.ts states
 * who may call what). Each RecordBatch is planned (arrow/array_plan.ts)
 * straight into the consumer's `out`, or copied to the stream's device.
 */
import { RecordBatch, Struct, type DataType, type Schema } from "apache-arrow";
import { JSCallback, read, type Pointer } from "bun:ffi";
import { ArrowDeviceArrayLayout, DeviceType, deviceTypeName } from "../core/abi/layout.ts";
import { asPointer } from "../core/abi/structs.ts";
import { describeValue } from "../core/args.ts";
import { InvalidArgumentError, Status } from "../core/errors.ts";
import { native } from "../core/ffi/library.ts";
import { ExportedArray } from "../native/exported.ts";
import { JsWorkTag, onJsWork } from "../native/js_queue.ts";
import { drainReleased, forgetUnused } from "../native/keepalive.ts";
import { type DeviceTarget } from "../device/transfer.ts";
import { errnoOfException } from "./errno.ts";
import { toDevice } from "./device.ts";
import { planArray, plannedWords } from "./array_plan.ts";
import { defaultCopyAhead, type StreamItem } from "./stream_source.ts";
import { typeDifference } from "./types.ts";

/** The JS side of one exported stream. Kept in the keepalive registry
 * until the consumer releases the stream. */
export class SourceRecord {
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
export const records = new Map<number, SourceRecord>();

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
export function deviceTypeOf(handle: ExportedArray): number {
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
  const { words, keepaliveId } = planArray(batch.data);
  const status = native.abd_stream_export_deliver(asPointer(producer), plannedWords(), words, keepaliveId, -1);
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

/** JS sources whose stream has not been released yet (for tests). */
export function liveStreamSources(): number {
  return records.size;
}
