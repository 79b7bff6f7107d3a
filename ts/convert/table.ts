/**
 * A whole apache-arrow Table across the C boundary in one call each way:
 * `exportTable` serves its batches as a C stream (the table stays alive,
 * zero-copy, until the consumer releases every batch), and `importTable`
 * reads a C stream into one Table (zero-copy views of the producer's
 * memory, released once garbage-collected). Thin names over the stream
 * converters, so that the everyday API matches pyarrow's `Table` and
 * arrow-js-ffi's `parseTable` (docs/api.md).
 */
import { Table } from "apache-arrow";
import { InvalidArgumentError, Status } from "../errors.ts";
import { addressOf, type StructRef } from "../lifetime/c_structs.ts";
import { type ExportedStream } from "../lifetime/exported_stream.ts";
import { type ImportOptions } from "../lifetime/imported.ts";
import { ImportedStream } from "../lifetime/imported_stream.ts";
import { exportStream, type StreamExportOptions } from "./stream_export.ts";
import { readTable, type StreamConvertOptions } from "./stream_import.ts";

/**
 * Exports `table` as an ArrowDeviceArrayStream (default, CPU) or an
 * ArrowArrayStream (`{ as: "stream" }`), one C array per batch, without
 * copying. Hand `handle.stream` to C; a consumer that moves the struct
 * releases it. `handle.release()` (or `using`) releases it otherwise.
 */
export function exportTable(table: Table, options: StreamExportOptions = {}): ExportedStream {
  if (!(table instanceof Table)) {
    throw new InvalidArgumentError(Status.invalid_argument, `exportTable expects an apache-arrow Table, got ${describe(table)}; use exportStream for batches, readers or iterables`);
  }
  return exportStream(table, options);
}

/** What `importTable` reads: the address of a C stream struct (its kind
 * given by `options.as`), or an ImportedStream already moved in. */
export type TableSource = StructRef | ImportedStream;

/** Options of `importTable`. */
export type ImportTableOptions = ImportOptions & StreamConvertOptions & {
  /** The kind of struct an address points to: "device_stream" (default,
   * ArrowDeviceArrayStream) or "stream" (ArrowArrayStream). Ignored for an
   * ImportedStream. */
  as?: "stream" | "device_stream";
};

/**
 * Reads a whole C stream into one apache-arrow Table and releases the
 * stream. From an address, the struct is moved in first (the caller's
 * struct is left released, as the C Data Interface's move requires), even
 * when reading then fails.
 */
export function importTable(source: TableSource, options: ImportTableOptions = {}): Table {
  const as = options.as ?? "device_stream";
  if (as !== "stream" && as !== "device_stream") {
    throw new InvalidArgumentError(Status.invalid_argument, `importTable: unknown options.as "${String(as)}" (stream, device_stream)`);
  }
  let stream: ImportedStream;
  if (source instanceof ImportedStream) stream = source;
  else if (as === "stream") stream = ImportedStream.fromArrayStream(addressOf(source), options);
  else stream = ImportedStream.fromDeviceArrayStream(addressOf(source), options);
  return readTable(stream, options);
}

/** A short description of a wrong argument: its type, never its contents. */
function describe(value: unknown): string {
  if (value === null) return "null";
  if (typeof value !== "object") return typeof value;
  return `a ${value.constructor?.name ?? "object"}`;
}
