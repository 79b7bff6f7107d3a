/**
 * Imported streams -> apache-arrow RecordBatch iterators and Tables,
 * zero-copy: the pull of each batch (native/imported_stream.ts), on
 * either thread, then its one conversion (arrow/batch_converter.ts). The
 * arguments are checked, and the stream opened, by arrow/stream_api.ts.
 *
 * Lifetimes. Each RecordBatch is a view of its producer's memory and lives
 * as long as JS uses it: the producer's release for that batch runs once
 * its last buffer view is garbage-collected (for an explicit end, iterate
 * the ImportedStream itself, convert with `toRecordBatch`, and `dispose()`
 * each ImportedArray). The stream is released exactly once, when the loop
 * ends, breaks or throws (or by `stream.release()`).
 *
 * Threads. `batchesOf` / `tableOf` call get_next on the JS thread;
 * `batchesOfAsync` / `tableOfAsync` call it on the stream's worker
 * thread, leaving the JS thread free meanwhile.
 *
 * Devices. A stream the host cannot read (CUDA, ROCM, ...) is refused
 * when it is opened, before any batch is pulled (UnsupportedError naming
 * the device, or UnknownDeviceError; the stream is released), unless
 * `toHost` asks for each batch to be copied to host memory first
 * (`ImportedArray.toHost()`: waits on its sync_event; the copy blocks the
 * JS thread, in the async forms too; the device batch is released as
 * soon as it is copied). Host-visible device streams (CUDA_HOST,
 * ROCM_HOST, CUDA_MANAGED) convert in place, zero-copy, either way.
 */
import { Table, type RecordBatch, type Schema } from "apache-arrow";
import { DeviceType, deviceTypeName, isHostAccessible } from "../core/abi/layout.ts";
import { Status, UnknownDeviceError, UnsupportedError } from "../core/errors.ts";
import { type ImportedArray } from "../native/imported.ts";
import { type ImportedStream } from "../native/imported_stream.ts";
import { copyPullsToHost, pullInto, pulledBatch, pullTransient, type PulledBatch } from "../native/batch_source.ts";
import { StreamBatchConverter } from "./batch_converter.ts";
import { schemaOf, type ConvertOptions } from "./types.ts";

/** Whether `fn`'s `stream` needs its batches copied to the host. A stream
 * the host cannot read is refused, and released, unless `toHost` asks
 * for the copy (a device type this library does not know, always). */
function hostCopyNeeded(fn: string, stream: ImportedStream, toHost: boolean): boolean {
  if (isHostAccessible(stream.deviceType)) return false;
  const name = deviceTypeName(stream.deviceType);
  const unknown = name.startsWith("unknown");
  if (toHost && !unknown) return true;
  stream.release();
  if (unknown) {
    throw new UnknownDeviceError(Status.unknown_device, `${fn}: the stream's device_type is ${stream.deviceType}, which this library does not know; iterate the ImportedStream for opaque raw views instead`);
  }
  throw new UnsupportedError(Status.unsupported, `${fn}: the stream's device_type is ${name} (${stream.deviceType}), memory the host cannot read; pass { toHost: true } to copy each batch to the host, or iterate the ImportedStream for raw device arrays`);
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
 * One read of a stream, whichever thread pulls: each batch pulled (on the
 * JS thread, as a snapshot where the converter can build it without a
 * handle; on the worker thread, as a handle), copied to the host where
 * asked, and converted by `converter.batch`, the one route to a
 * RecordBatch. A whole-stream read pulls handles instead (`pull`), which
 * `table` converts with the same converter.
 */
export class StreamRead {
  readonly converter: StreamBatchConverter;
  /** The snapshot pull's words, reused batch after batch. */
  readonly #pulled: PulledBatch = pulledBatch();

  private constructor(readonly stream: ImportedStream, readonly copy: boolean, readonly options: ConvertOptions) {
    this.converter = new StreamBatchConverter(options);
  }

  /** A read of `fn`'s `stream`, refused (and the stream released) if the
   * host cannot read it and `toHost` is not set; `worker`: pulled on the
   * stream's worker thread, which then also makes the host copies. */
  static open(fn: string, stream: ImportedStream, options: ConvertOptions, toHost: boolean, worker: boolean): StreamRead {
    const copy = hostCopyNeeded(fn, stream, toHost);
    if (worker && copy) copyPullsToHost(stream);
    return new StreamRead(stream, copy, options);
  }

  /** The next batch as a RecordBatch, pulled on the JS thread; null at the
   * end. */
  next(): RecordBatch | null {
    const pulled = this.#pulled;
    if (!this.copy && this.converter.takesSnapshots) {
      if (!pullInto(this.stream, pulled)) return null;
    } else {
      // A handle with words of its own, ended by the conversion.
      const imported = pullTransient(this.stream);
      if (imported === null) return null;
      pulled.imported = onHost(imported, this.copy);
    }
    return this.converter.batch(pulled);
  }

  /** `next`, pulled on the stream's worker thread. */
  async nextAsync(): Promise<RecordBatch | null> {
    const imported = await this.pullAsync();
    if (imported === null) return null;
    const pulled = this.#pulled;
    pulled.imported = imported;
    return this.converter.batch(pulled);
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

/** Every remaining batch of `read`'s stream as an apache-arrow
 * RecordBatch, pulled on the JS thread. */
export function batchesOf(read: StreamRead): Generator<RecordBatch, void, undefined> {
  return (function* () {
    try {
      for (let batch = read.next(); batch !== null; batch = read.next()) yield batch;
    } finally {
      read.stream.release();
    }
  })();
}

/** Every remaining batch of `read`'s stream, pulled on the stream's
 * worker thread (`for await`). */
export function batchesOfAsync(read: StreamRead): AsyncGenerator<RecordBatch, void, undefined> {
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
export function schemaOfStream(stream: ImportedStream, options: ConvertOptions): Schema {
  const empty = stream.emptyBatch();
  try {
    return schemaOf(empty.root, options);
  } finally {
    empty.dispose();
  }
}

/** A whole-stream read, driven by `tableOf` or `tableOfAsync`. */
type TableSteps = Generator<void, Table, ImportedArray | null>;

/**
 * A whole-stream read as steps: each `yield` asks its driver for the next
 * batch's handle (null at the end), or throws the pull's error in. Then
 * the stream is released, and the batches become one Table (its schema
 * the first batch's, or the stream's when it has none); on an error every
 * batch pulled is disposed. `tableOf` and `tableOfAsync` drive it.
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
export function tableOf(read: StreamRead): Table {
  const steps = tableSteps(read);
  let step = steps.next();
  while (!step.done) step = resumed(steps, () => read.pull());
  return step.value;
}

/** Like `tableOf`, pulling on the stream's worker thread. */
export async function tableOfAsync(read: StreamRead): Promise<Table> {
  const steps = tableSteps(read);
  let step = steps.next();
  while (!step.done) step = await read.pullAsync().then((imported) => steps.next(imported), (error: unknown) => steps.throw(error));
  return step.value;
}
