/**
 * Imported streams -> apache-arrow RecordBatch iterators and Tables,
 * zero-copy (native/imported_stream.ts pulls, arrow/batch_converter.ts
 * converts).
 *
 * Lifetimes. Each RecordBatch is a view of its producer's memory and lives
 * as long as JS uses it: the producer's release for that batch runs once
 * its last buffer view is garbage-collected (for an explicit end, iterate
 * the ImportedStream itself, convert with `toRecordBatch`, and `dispose()`
 * each ImportedArray). The stream is released exactly once, when the loop
 * ends, breaks or throws (or by `stream.release()`).
 *
 * Threads. `batchesFromStream` / `tableFromStream` call get_next on the JS thread;
 * `batchesFromStreamAsync` / `tableFromStreamAsync` call it on the stream's worker
 * thread, leaving the JS thread free meanwhile.
 *
 * Devices. A stream the host cannot read (CUDA, ROCM, ...) is refused
 * before any batch is pulled (UnsupportedError naming the device, or
 * UnknownDeviceError; the stream is released), unless `toHost: true` asks
 * for each batch to be copied to host memory first (`ImportedArray.toHost()`:
 * waits on its sync_event; the copy blocks the JS thread, in the async
 * forms too; the device batch is released as soon as it is copied).
 * Host-visible device streams (CUDA_HOST, ROCM_HOST, CUDA_MANAGED) convert
 * in place, zero-copy, either way.
 */
import { Table, type RecordBatch, type Schema } from "apache-arrow";
import { DeviceType, deviceTypeName, isHostAccessible } from "../core/abi/layout.ts";
import { argumentError, booleanArg } from "../core/args.ts";
import { Status, UnknownDeviceError, UnsupportedError } from "../core/errors.ts";
import { type ImportedArray } from "../native/imported.ts";
import { ImportedStream } from "../native/imported_stream.ts";
import { copyPullsToHost, pullTransient } from "../native/batch_source.ts";
import { isStreamProducer, type ArrowCapsule, type StreamProducer } from "../native/protocol/symbols.ts";
import { StreamBatchConverter } from "./batch_converter.ts";
import { convertOptionsArg, schemaOf, type ConvertOptions } from "./types.ts";

/** Options of the stream-to-apache-arrow readers (`batchesFromStream`,
 * `tableFromStream` and their async forms; public as `recordBatches` and
 * `importTable`). */
export type StreamConvertOptions = ConvertOptions & {
  /** Copy each batch of a stream the host cannot read (CUDA, ROCM) to host
   * memory before converting it. Default false: such a stream is refused. */
  toHost?: boolean;
};

/** Whether `stream`'s batches must be copied to the host; refuses (and
 * releases) a stream the host cannot read when that was not asked for. */
function needsCopy(stream: ImportedStream, options: StreamConvertOptions, what: string): boolean {
  if (isHostAccessible(stream.deviceType)) return false;
  const name = deviceTypeName(stream.deviceType);
  if (options.toHost && !name.startsWith("unknown")) return true;
  stream.release();
  if (name.startsWith("unknown")) {
    throw new UnknownDeviceError(Status.unknown_device, `${what}: the stream's device_type is ${stream.deviceType}, which this library does not know; iterate the ImportedStream for opaque raw views instead`);
  }
  throw new UnsupportedError(Status.unsupported, `${what}: the stream's device_type is ${name} (${stream.deviceType}), memory the host cannot read; pass { toHost: true } to copy each batch to the host, or iterate the ImportedStream for raw device arrays`);
}

/** What the stream readers accept: an ImportedStream, or any protocol
 * stream producer or stream capsule (docs/protocol.md), whose stream is
 * imported (device method preferred) and then read like one. */
export type StreamInput = ImportedStream | StreamProducer | ArrowCapsule;

/** Checks `fn`'s input and options; returns the ImportedStream to read,
 * whether batches are copied to the host (see needsCopy) and the
 * conversion options. A stream imported here from a producer is released
 * if it cannot be read. */
function openInput(fn: string, input: StreamInput, options: StreamConvertOptions): { stream: ImportedStream; copy: boolean; convert: ConvertOptions } {
  const isImported = input instanceof ImportedStream;
  if (!isImported && !isStreamProducer(input)) {
    throw argumentError(fn, "stream", "an ImportedStream or an object implementing the Arrow stream protocol (docs/protocol.md)", input);
  }
  const convert = convertOptionsArg(fn, options, ["toHost"]);
  booleanArg(fn, "options.toHost", options.toHost, true);
  if (isImported) return { stream: input, copy: needsCopy(input, options, fn), convert };
  const stream = ImportedStream.fromDeviceArrayStream(input);
  // needsCopy releases the stream itself when it refuses it.
  return { stream, copy: needsCopy(stream, options, fn), convert };
}

/** `imported`, or its host copy (then `imported` is disposed). A batch
 * the worker already copied (CPU) is used as it is. */
function onHost(imported: ImportedArray, copy: boolean): ImportedArray {
  if (!copy || imported.deviceType === DeviceType.CPU) return imported;
  try {
    return imported.toHost();
  } finally {
    imported.dispose();
  }
}

/**
 * One read of a stream, whichever thread pulls: its input opened and
 * checked, its batches converted by one converter (one Schema, one plan)
 * after a host copy where asked. The JS-thread and worker-thread readers
 * differ only in the pull (`next`/`pull` vs `nextAsync`/`pullAsync`);
 * everything else is this one pipeline.
 */
class StreamRead {
  readonly converter: StreamBatchConverter;

  private constructor(readonly stream: ImportedStream, readonly copy: boolean, readonly options: ConvertOptions) {
    this.converter = new StreamBatchConverter(options);
  }

  /** Opens `fn`'s input (see openInput); `worker`: pulled on the stream's
   * worker thread, which then also makes the host copies. */
  static open(fn: string, input: StreamInput, options: StreamConvertOptions, worker: boolean): StreamRead {
    const { stream, copy, convert } = openInput(fn, input, options);
    if (worker && copy) copyPullsToHost(stream);
    return new StreamRead(stream, copy, convert);
  }

  /** The next batch as a RecordBatch, pulled on the JS thread (without a
   * handle where the converter can); null at the end. */
  next(): RecordBatch | null {
    if (!this.copy) return this.converter.next(this.stream);
    // Transient: convert() always ends it (dispose or releaseToGC).
    return this.convert(pullTransient(this.stream));
  }

  /** `next`, pulled on the stream's worker thread. */
  async nextAsync(): Promise<RecordBatch | null> {
    return this.convert(await this.stream.nextAsync());
  }

  /** Converts one pulled batch (null: the end); its memory then belongs
   * to the GC. */
  convert(pulled: ImportedArray | null): RecordBatch | null {
    return pulled === null ? null : this.converter.convertAndEnd(onHost(pulled, this.copy));
  }

  /** The next batch's handle (on the host), pulled on the JS thread; null
   * at the end. */
  pull(): ImportedArray | null {
    const imported = this.stream.next();
    return imported === null ? null : onHost(imported, this.copy);
  }

  /** `pull`, on the stream's worker thread. */
  async pullAsync(): Promise<ImportedArray | null> {
    const imported = await this.stream.nextAsync();
    return imported === null ? null : onHost(imported, this.copy);
  }

  /** One Table of the pulled batches (their dictionaries share the first
   * batch's types, as apache-arrow's Table requires), or an empty Table
   * with the stream's schema. Owns `pulled`: their memory then belongs
   * to the GC, or, on error, is released now. */
  table(pulled: ImportedArray[], schema: Schema | null): Table {
    if (pulled.length === 0) return new Table(schema!);
    try {
      const table = this.converter.table(pulled);
      for (const imported of pulled) imported.releaseToGC();
      return table;
    } catch (error) {
      for (const imported of pulled) imported.dispose();
      throw error;
    }
  }
}

/** Every remaining batch of `stream` as an apache-arrow RecordBatch,
 * pulled on the JS thread. */
export function batchesFromStream(input: StreamInput, options: StreamConvertOptions = {}): Generator<RecordBatch, void, undefined> {
  // Checked now, not at the first next(): a generator body runs late.
  const read = StreamRead.open("recordBatches", input, options, false);
  return (function* () {
    try {
      for (let batch = read.next(); batch !== null; batch = read.next()) yield batch;
    } finally {
      read.stream.release();
    }
  })();
}

/** Every remaining batch of `stream`, pulled on the stream's worker
 * thread (`for await`). */
export function batchesFromStreamAsync(input: StreamInput, options: StreamConvertOptions = {}): AsyncGenerator<RecordBatch, void, undefined> {
  const read = StreamRead.open("recordBatches", input, options, true);
  return (async function* () {
    try {
      for (let batch = await read.nextAsync(); batch !== null; batch = await read.nextAsync()) yield batch;
    } finally {
      read.stream.release();
    }
  })();
}

/** The stream's schema as an apache-arrow Schema (read from a zero-length
 * batch; the stream's position is unchanged). */
export function streamSchema(stream: ImportedStream, options: ConvertOptions = {}): Schema {
  if (!(stream instanceof ImportedStream)) throw argumentError("streamSchema", "stream", "an ImportedStream", stream);
  return schemaOfStream(stream, convertOptionsArg("streamSchema", options));
}

function schemaOfStream(stream: ImportedStream, options: ConvertOptions): Schema {
  const empty = stream.emptyBatch();
  try {
    return schemaOf(empty.root, options);
  } finally {
    empty.dispose();
  }
}

/** A whole-stream read, driven by `tableFromStream` or `tableFromStreamAsync`. */
type TableSteps = Generator<void, Table, ImportedArray | null>;

/**
 * A whole-stream read as steps: each `yield` asks its driver for the next
 * batch's handle (null at the end), or throws the pull's error in. Then
 * the stream is released, and the batches become one Table (its schema
 * the first batch's, or the stream's when it has none); on an error every
 * batch pulled is disposed. `tableFromStream` and `tableFromStreamAsync` drive it.
 */
function* tableSteps(read: StreamRead): TableSteps {
  const pulled: ImportedArray[] = [];
  let schema: Schema | null = null;
  try {
    for (let imported = yield; imported !== null; imported = yield) pulled.push(imported);
    // Only needed when no batch came; read while the stream is open.
    if (pulled.length === 0) schema = schemaOfStream(read.stream, read.options);
  } catch (error) {
    for (const imported of pulled) imported.dispose();
    throw error;
  } finally {
    read.stream.release();
  }
  return read.table(pulled, schema);
}

/** `steps` resumed with what `pull` returns, or with what it throws. */
function resumed(steps: TableSteps, pull: () => ImportedArray | null): IteratorResult<void, Table> {
  let imported: ImportedArray | null;
  try {
    imported = pull();
  } catch (error) {
    return steps.throw(error);
  }
  return steps.next(imported);
}

/** Reads the whole stream into one Table (its schema is the first batch's,
 * or the stream's when it has none) and releases the stream. */
export function tableFromStream(input: StreamInput, options: StreamConvertOptions = {}): Table {
  const read = StreamRead.open("importTable", input, options, false);
  const steps = tableSteps(read);
  let step = steps.next();
  while (!step.done) step = resumed(steps, () => read.pull());
  return step.value;
}

/** Like `tableFromStream`, pulling on the stream's worker thread. */
export async function tableFromStreamAsync(input: StreamInput, options: StreamConvertOptions = {}): Promise<Table> {
  const read = StreamRead.open("importTable", input, options, true);
  const steps = tableSteps(read);
  let step = steps.next();
  while (!step.done) step = await read.pullAsync().then((imported) => steps.next(imported), (error: unknown) => steps.throw(error));
  return step.value;
}
