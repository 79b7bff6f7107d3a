/**
 * apache-arrow sources -> ArrowArrayStream / ArrowDeviceArrayStream that
 * any C consumer can pull (zig/stream/export.zig is the C side).
 *
 * Sources: a Table (its batches), an array of RecordBatch, a sync or async
 * iterable of RecordBatch, or a RecordBatchReader (sync or async). Each
 * batch is exported zero-copy through the array plans (arrow/array_plan.ts), straight into
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
 *
 * Who does what: arrow/stream_source.ts opens sources; the producers and
 * the per-stream record are arrow/stream_producer.ts's; this module checks
 * the arguments and creates the native stream.
 */
import { RecordBatchReader, Table } from "apache-arrow";
import { type Pointer } from "bun:ffi";
import { DeviceType, StreamKind as NativeStreamKind, deviceTypeName } from "../core/abi/layout.ts";
import { argumentError, deviceTypeArg, integerArg, oneOfArg, optionsArg } from "../core/args.ts";
import { InvalidArgumentError, Status, errorFor } from "../core/errors.ts";
import { lastError, native } from "../core/ffi/library.ts";
import { ExportedStream } from "../native/exported_stream.ts";
import { drainReleased, forgetUnused, retainForNative } from "../native/keepalive.ts";
import { ExportedArray } from "../native/exported.ts";
import { CSchema } from "../native/c_structs.ts";
import { describeExportedStream } from "../native/inspect_handles.ts";
import { deviceRuntime } from "../device/runtime.ts";
import { checkTarget, targetDeviceType, type DeviceTarget } from "../device/transfer.ts";
import { arrowArg } from "./arrow_args.ts";
import { schemaPlan } from "./schema_plan.ts";
import { isAsyncIterable, isIterable, needsSchema, openAsync, openNow, defaultCopyAhead, type Opened, type StreamExportOptions, type StreamSource } from "./stream_source.ts";
import { SourceRecord, deviceTypeOf, records } from "./stream_producer.ts";

export { defaultCopyAhead, type StreamExportOptions, type StreamItem, type StreamSource } from "./stream_source.ts";
export { liveStreamSources } from "./stream_producer.ts";

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
    if (opened.schema) plan = schemaPlan(opened.schema);
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
  if (plan !== null) describeBuiltSchema(handle, deviceTypeName(record.deviceType), plan);
  return handle;
}

/** Lets `handle` print its device and schema: the schema is built from
 * the stream's plan into a struct of its own, released after printing. */
function describeBuiltSchema(handle: ExportedStream, device: string, plan: Uint8Array): void {
  describeExportedStream(handle, {
    device,
    withSchema(read) {
      using schema = CSchema.allocate();
      const status = native.abd_schema_build(plan, plan.length, schema.address);
      if (status !== 0) throw errorFor(status, lastError());
      return read(schema);
    },
  });
}

const streamOptionKeys = ["as", "async", "schema", "device", "deviceType", "copyAhead"] as const;

/** Checks `fn`'s source and options. The items themselves are checked as they are pulled. */
function streamArgs(fn: string, source: unknown, options: StreamExportOptions): void {
  const isSource = typeof source === "object" && source !== null && !ArrayBuffer.isView(source)
    && (source instanceof Table || source instanceof RecordBatchReader || Array.isArray(source) || isIterable(source) || isAsyncIterable(source));
  if (!isSource) {
    throw argumentError(fn, "source", "an apache-arrow Table, RecordBatchReader, an array of RecordBatch or ExportedArray, or a (sync or async) iterable of them", source);
  }
  optionsArg(fn, "options", options, streamOptionKeys);
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

/** `exportStream(source, { ...options, async: true })` under the caller's
 * name (errors name `fn`): may await an async source to learn its schema
 * from the first batch. */
export async function exportStreamAsyncNamed(fn: string, source: StreamSource, options: StreamExportOptions): Promise<ExportedStream> {
  streamArgs(fn, source, options);
  drainReleased();
  const opened = openNow(source, options) ?? await openAsync(source, options);
  return create(opened, options);
}
