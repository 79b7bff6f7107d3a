/**
 * Stream export sources: what `exportStream` serves (the source and item
 * types, the options) and how a source is opened: its iterator, whether it
 * is async, and its schema (given, the source's own, or read from a first
 * item, which is then buffered as the stream's first answer).
 */
import { RecordBatch, RecordBatchReader, Schema, Struct, Table } from "apache-arrow";
import { describeValue } from "../core/args.ts";
import { InvalidArgumentError, Status } from "../core/errors.ts";
import { ExportedArray } from "../native/exported.ts";
import { type StreamKind } from "../native/exported_stream.ts";
import { type DeviceTarget } from "../device/transfer.ts";

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

export type Opened = {
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

export function needsSchema(what: string): never {
  throw new InvalidArgumentError(Status.invalid_argument, `${what}: pass options.schema${what.includes("async") ? ", or pass { async: true }, which reads the first batch for it" : ""}`);
}

export function isAsyncIterable(source: unknown): source is AsyncIterable<StreamItem> {
  return typeof (source as AsyncIterable<StreamItem>)?.[Symbol.asyncIterator] === "function";
}

export function isIterable(source: unknown): source is Iterable<StreamItem> {
  return typeof (source as Iterable<StreamItem>)?.[Symbol.iterator] === "function";
}

/** Opens `source` without awaiting; `undefined` means it needs to await. */
export function openNow(source: StreamSource, options: StreamExportOptions): Opened | undefined {
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
export async function openAsync(source: StreamSource, options: StreamExportOptions): Promise<Opened> {
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
