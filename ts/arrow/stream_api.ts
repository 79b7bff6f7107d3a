/**
 * The public stream API: one export (`exportStream`) and one reader in
 * two shapes (`importTable` for the whole stream, `recordBatches` for one
 * batch at a time), each with an `async` option. This module owns the
 * names, the argument checks and the opening of a C stream from whatever
 * the caller holds (a struct address, an ImportedStream, a protocol
 * producer or capsule); serving a stream is stream_export.ts's job, and
 * pulling and converting one is stream_import.ts's.
 */
import { type RecordBatch, type Table } from "apache-arrow";
import { probeStruct } from "../core/abi/probe.ts";
import { branded, type StructPointer } from "../core/abi/pointers.ts";
import { validationLevelArg } from "../core/abi/layout.ts";
import { argumentError, booleanArg, isPlainObject, oneOfArg, optionsArg } from "../core/args.ts";
import { structAddress } from "../native/c_structs.ts";
import { type ExportedStream, type StreamKind } from "../native/exported_stream.ts";
import { ImportedArray, type ImportOptions } from "../native/imported.ts";
import { ImportedStream } from "../native/imported_stream.ts";
import { isStreamProducer, type ArrowCapsule, type StreamProducer } from "../native/protocol/symbols.ts";
import { toTable } from "./import.ts";
import { arrowKindOf } from "./arrow_args.ts";
import { exportStreamAsyncNamed, exportStreamNamed, type StreamExportOptions, type StreamSource } from "./stream_export.ts";
import { StreamRead, batchesOf, batchesOfAsync, tableOf, tableOfAsync } from "./stream_import.ts";
import { type ConvertOptions } from "./types.ts";

/**
 * Exports `source` (a Table, an array of batches, a RecordBatchReader, a
 * sync or async iterable) as an ArrowDeviceArrayStream (default, CPU) or
 * an ArrowArrayStream (`{ as: "stream" }`), zero-copy. The handle's
 * `stream` is the struct's address: a C consumer may move it out (then it
 * releases it) or use it in place until `handle.release()`.
 *
 * An async source needs `options.schema`, or `{ async: true }`: the
 * result is then a Promise, and the schema is read from the source (an
 * async reader's `open()`, or the first batch, which stays the stream's
 * first batch). With `async: true` every error rejects the Promise.
 */
export function exportStream(source: StreamSource, options?: StreamExportOptions<"device_stream", false>): ExportedStream<"device_stream">;
/** `exportStream` as an ArrowArrayStream (`{ as: "stream" }`). */
export function exportStream(source: StreamSource, options: StreamExportOptions<"stream", false>): ExportedStream<"stream">;
/** `exportStream` awaiting an async source's schema (`{ async: true }`). */
export function exportStream(source: StreamSource, options: StreamExportOptions<"device_stream", true>): Promise<ExportedStream<"device_stream">>;
/** `exportStream` of an ArrowArrayStream, awaiting an async source's
 * schema (`{ as: "stream", async: true }`). */
export function exportStream(source: StreamSource, options: StreamExportOptions<"stream", true>): Promise<ExportedStream<"stream">>;
/** `exportStream` with the kind known only at run time. */
export function exportStream(source: StreamSource, options?: StreamExportOptions<StreamKind, false>): ExportedStream;
/** `exportStream` with the kind or the form known only at run time. */
export function exportStream(source: StreamSource, options?: StreamExportOptions<StreamKind, boolean>): ExportedStream | Promise<ExportedStream>;
export function exportStream(source: StreamSource, options: StreamExportOptions<StreamKind, boolean> = {}): ExportedStream | Promise<ExportedStream> {
  const fn = "exportStream";
  // A single batch, Vector or Data iterates its rows: refused by name
  // rather than streamed as rows.
  const single = arrowKindOf(source, ["RecordBatch", "Vector", "Data"]);
  const refused = single && argumentError(fn, "source", `an apache-arrow Table, RecordBatchReader, an array of RecordBatch or ExportedArray, or a (sync or async) iterable of them (a ${single} is one array: export it with exportArray${single === "RecordBatch" ? ", or stream it as [batch]" : ""})`, source);
  if (isPlainObject(options) && options.async === true) return refused ? Promise.reject(refused) : exportStreamAsyncNamed(fn, source, options as StreamExportOptions);
  if (refused) throw refused;
  if (isPlainObject(options)) booleanArg(fn, "options.async", options.async, true);
  return exportStreamNamed(fn, source, options as StreamExportOptions);
}

/** What `importTable` and `recordBatches` read: the address of a C stream
 * struct (its kind given by `options.as`), an ImportedStream already moved
 * in, or any producer of the Arrow stream protocol or stream capsule
 * (docs/protocol.md), whose stream is imported (device method preferred). */
export type ImportStreamSource = StructPointer<"ArrowArrayStream"> | StructPointer<"ArrowDeviceArrayStream"> | ImportedStream | StreamProducer | ArrowCapsule;

/** Options of `importTable` and `recordBatches`. */
export type ImportStreamOptions<K extends StreamKind = StreamKind, A extends boolean = false> = ImportOptions & ConvertOptions & {
  /** The kind of struct an address points to: "device_stream" (default,
   * ArrowDeviceArrayStream) or "stream" (ArrowArrayStream). Ignored for
   * anything else. */
  as?: K;
  /** Copy each batch of a stream the host cannot read (CUDA, ROCM) to host
   * memory before converting it (`ImportedArray.toHost()`: the copy blocks
   * the JS thread, in the async form too). Default false: such a stream is
   * refused (code "unsupported", or "unknown_device" for a device type
   * this library does not know; the stream is released). */
  toHost?: boolean;
  /** Pull each batch on the stream's worker thread, leaving the JS thread
   * free: `importTable` returns a Promise, `recordBatches` an async
   * generator. Default false: get_next runs on the JS thread. */
  async?: A;
};

const streamOptionKeys = ["as", "validation", "materialize", "toHost", "async"] as const;

/** What `fn` reads: a stream (opened, checked readable) or, for
 * importTable, a list of ImportedArray batches with the conversion's
 * options. */
type Opened = { read: StreamRead; list: null } | { read: null; list: ImportedArray[]; options: ConvertOptions };

/** Whether `source` is meant as a stream struct: an address, a C struct
 * view or an object with an `address`. */
function structLike(source: unknown): boolean {
  return typeof source === "number" || typeof source === "bigint" || (typeof source === "object" && source !== null && "address" in source);
}

/** Every source `open` accepts, for the error that refuses another. */
function acceptedSources(as: StreamKind, lists: boolean): string {
  const struct = as === "stream" ? "an ArrowArrayStream address" : 'an ArrowDeviceArrayStream address (ArrowArrayStream with { as: "stream" })';
  return lists
    ? `an ImportedStream, a stream producer or capsule (docs/protocol.md), ${struct}, or a list of ImportedArray batches (one batch: importRecordBatch)`
    : `an ImportedStream, a stream producer or capsule (docs/protocol.md), or ${struct} (an ImportedArray: importRecordBatch)`;
}

/** Checks `fn`'s arguments (the one place the readers' options are
 * checked) and opens `source`: a C stream is moved in (the caller's
 * struct is left released, as the C move requires, even when reading
 * then fails), a producer's stream imported. `lists`: an iterable of
 * ImportedArray is accepted too (importTable). A stream the host cannot
 * read is refused, and released, unless `toHost` (StreamRead.open). */
function open(fn: string, source: unknown, options: ImportStreamOptions<StreamKind, boolean> | undefined, lists: boolean): Opened {
  const checked = optionsArg(fn, "options", options, streamOptionKeys);
  const as = oneOfArg(fn, "options.as", checked.as ?? "device_stream", ["stream", "device_stream"]);
  booleanArg(fn, "options.materialize", checked.materialize, true);
  booleanArg(fn, "options.toHost", checked.toHost, true);
  booleanArg(fn, "options.async", checked.async, true);
  if (checked.validation !== undefined) validationLevelArg(fn, { validation: checked.validation });
  const convert: ConvertOptions = checked.materialize === undefined ? {} : { materialize: checked.materialize };
  const reading = (stream: ImportedStream): Opened => ({ read: StreamRead.open(fn, stream, convert, checked.toHost === true, checked.async === true), list: null });
  const importOptions: ImportOptions = checked.validation === undefined ? {} : { validation: checked.validation };
  const imported = (what: string): void => {
    // Validated when they were imported: a level given again is refused.
    if (checked.validation !== undefined) {
      throw argumentError(fn, "options.validation", `undefined for ${what} (pass validation where it is imported: ImportedStream.fromArrayStream / fromDeviceArrayStream, ImportedArray.fromArray / fromDeviceArray)`, checked.validation);
    }
  };
  if (source instanceof ImportedStream) {
    imported("an ImportedStream");
    return reading(source);
  }
  if (isStreamProducer(source)) return reading(ImportedStream.fromDeviceArrayStream(source, importOptions));
  if (lists && typeof source === "object" && source !== null && typeof (source as Iterable<unknown>)[Symbol.iterator] === "function") {
    imported("ImportedArray batches");
    if (checked.toHost) throw argumentError(fn, "options.toHost", "undefined or false for ImportedArray batches (copy each with imported.toHost())", checked.toHost);
    const list = [...(source as Iterable<unknown>)];
    list.forEach((item, i) => {
      if (!(item instanceof ImportedArray)) throw argumentError(fn, `source[${i}]`, "an ImportedArray", item);
    });
    return { read: null, list: list as ImportedArray[], options: convert };
  }
  if (!structLike(source)) throw argumentError(fn, "source", acceptedSources(as, lists), source);
  const address = structAddress(fn, "source", source as StructPointer<"ArrowArrayStream">, null, false);
  // Probed here, so that a wrong address is reported as `fn`'s.
  probeStruct(fn, "source", as === "stream" ? "ArrowArrayStream" : "ArrowDeviceArrayStream", address, "owned");
  return reading(as === "stream"
    ? ImportedStream.fromArrayStream(branded(address), importOptions)
    : ImportedStream.fromDeviceArrayStream(branded(address), importOptions));
}

/**
 * Reads a whole C stream into one apache-arrow Table (its schema is the
 * first batch's, or the stream's when it has none) and releases the
 * stream. The Table's columns are zero-copy views of the producer's
 * memory, released once garbage-collected.
 *
 * Also takes ImportedArray record batches that share a schema (an
 * iterable of them): their Table, each batch emptied by its handle's
 * `dispose()`, which stays the caller's.
 */
export function importTable(source: Exclude<ImportStreamSource, StructPointer<"ArrowArrayStream">> | Iterable<ImportedArray>, options?: ImportStreamOptions<"device_stream", false>): Table;
/** `importTable` of an `ArrowArrayStream*` (`{ as: "stream" }`). */
export function importTable(source: Exclude<ImportStreamSource, StructPointer<"ArrowDeviceArrayStream">>, options: ImportStreamOptions<"stream", false>): Table;
/** `importTable` pulling on the stream's worker thread (`{ async: true }`);
 * every error rejects the Promise. */
export function importTable(source: Exclude<ImportStreamSource, StructPointer<"ArrowArrayStream">> | Iterable<ImportedArray>, options: ImportStreamOptions<"device_stream", true>): Promise<Table>;
/** `importTable` of an `ArrowArrayStream*` on the stream's worker thread
 * (`{ as: "stream", async: true }`). */
export function importTable(source: Exclude<ImportStreamSource, StructPointer<"ArrowDeviceArrayStream">>, options: ImportStreamOptions<"stream", true>): Promise<Table>;
/** `importTable` with the struct's kind known only at run time
 * (`options.as` decides; the struct is checked before it is read). */
export function importTable(source: ImportStreamSource | Iterable<ImportedArray>, options: ImportStreamOptions<StreamKind, false>): Table;
/** `importTable` with the struct's kind or the form known only at run
 * time (`options.as` decides; the struct is checked before it is read). */
export function importTable(source: ImportStreamSource | Iterable<ImportedArray>, options: ImportStreamOptions<StreamKind, boolean>): Table | Promise<Table>;
export function importTable(source: ImportStreamSource | Iterable<ImportedArray>, options: ImportStreamOptions<StreamKind, boolean> = {}): Table | Promise<Table> {
  const fn = "importTable";
  const async = isPlainObject(options) && options.async === true;
  let opened: Opened;
  try {
    opened = open(fn, source, options, true);
  } catch (error) {
    if (async) return Promise.reject(error);
    throw error;
  }
  if (opened.read === null) {
    const table = toTable(opened.list, opened.options);
    return async ? Promise.resolve(table) : table;
  }
  return async ? tableOfAsync(opened.read) : tableOf(opened.read);
}

/**
 * Every remaining batch of a C stream as an apache-arrow RecordBatch, one
 * get_next at a time, on the JS thread (a generator), or on the stream's
 * worker thread with `{ async: true }` (an async generator, for `for
 * await`). The stream is released exactly once, when the loop ends,
 * breaks or throws. Arguments are checked, and the stream opened, at the
 * call (errors are thrown there in both forms).
 */
export function recordBatches(source: Exclude<ImportStreamSource, StructPointer<"ArrowArrayStream">>, options?: ImportStreamOptions<"device_stream", false>): Generator<RecordBatch, void, undefined>;
/** `recordBatches` of an `ArrowArrayStream*` (`{ as: "stream" }`). */
export function recordBatches(source: Exclude<ImportStreamSource, StructPointer<"ArrowDeviceArrayStream">>, options: ImportStreamOptions<"stream", false>): Generator<RecordBatch, void, undefined>;
/** `recordBatches` pulling on the stream's worker thread (`{ async: true }`). */
export function recordBatches(source: Exclude<ImportStreamSource, StructPointer<"ArrowArrayStream">>, options: ImportStreamOptions<"device_stream", true>): AsyncGenerator<RecordBatch, void, undefined>;
/** `recordBatches` of an `ArrowArrayStream*` on the stream's worker
 * thread (`{ as: "stream", async: true }`). */
export function recordBatches(source: Exclude<ImportStreamSource, StructPointer<"ArrowDeviceArrayStream">>, options: ImportStreamOptions<"stream", true>): AsyncGenerator<RecordBatch, void, undefined>;
/** `recordBatches` with the struct's kind known only at run time. */
export function recordBatches(source: ImportStreamSource, options: ImportStreamOptions<StreamKind, false>): Generator<RecordBatch, void, undefined>;
/** `recordBatches` with the struct's kind or the form known only at run time. */
export function recordBatches(source: ImportStreamSource, options: ImportStreamOptions<StreamKind, boolean>): Generator<RecordBatch, void, undefined> | AsyncGenerator<RecordBatch, void, undefined>;
export function recordBatches(source: ImportStreamSource, options: ImportStreamOptions<StreamKind, boolean> = {}): Generator<RecordBatch, void, undefined> | AsyncGenerator<RecordBatch, void, undefined> {
  const read = open("recordBatches", source, options, false).read!;
  return options.async === true ? batchesOfAsync(read) : batchesOf(read);
}

