/**
 * A whole apache-arrow Table across the C boundary in one call each way:
 * `exportTable` serves its batches as a C stream (the table stays alive,
 * zero-copy, until the consumer releases every batch), and `importTable`
 * reads a C stream into one Table (zero-copy views of the producer's
 * memory, released once garbage-collected). Thin names over the stream
 * converters, so that the everyday API matches pyarrow's `Table` and
 * arrow-js-ffi's `parseTable` (docs/api.md).
 */
import { probeStruct } from "../core/abi/probe.ts";
import { branded, type StructPointer } from "../core/abi/pointers.ts";
import { Table } from "apache-arrow";
import { argumentError, booleanArg, oneOfArg, optionsArg } from "../core/args.ts";
import { structAddress } from "../native/c_structs.ts";
import { type ExportedStream } from "../native/exported_stream.ts";
import { type ImportOptions } from "../native/imported.ts";
import { ImportedStream } from "../native/imported_stream.ts";
import { isStreamProducer, type ArrowCapsule, type StreamProducer } from "../native/protocol/symbols.ts";
import { arrowKindOf } from "./arrow_args.ts";
import { exportStreamNamed, type StreamExportOptions } from "./stream_export.ts";
import { readTable, type StreamConvertOptions } from "./stream_import.ts";

/**
 * Exports `table` as an ArrowDeviceArrayStream (default, CPU) or an
 * ArrowArrayStream (`{ as: "stream" }`), one C array per batch, without
 * copying. Hand `handle.stream` to C; a consumer that moves the struct
 * releases it. `handle.release()` (or `using`) releases it otherwise.
 */
export function exportTable(table: Table, options?: StreamExportOptions<"device_stream">): ExportedStream<"device_stream">;
/** `exportTable` as an ArrowArrayStream (`{ as: "stream" }`). */
export function exportTable(table: Table, options: StreamExportOptions<"stream">): ExportedStream<"stream">;
/** `exportTable` with the kind known only at run time. */
export function exportTable(table: Table, options?: StreamExportOptions): ExportedStream;
export function exportTable(table: Table, options: StreamExportOptions = {}): ExportedStream {
  if (arrowKindOf(table, ["Table"]) === null) {
    throw argumentError("exportTable", "table", "an apache-arrow Table (exportStream takes batches, readers and iterables)", table);
  }
  return exportStreamNamed("exportTable", table, options);
}

/** What `importTable` reads: the address of a C stream struct (its kind
 * given by `options.as`), an ImportedStream already moved in, or any
 * producer of the Arrow stream protocol (docs/protocol.md). */
export type TableSource = StructPointer<"ArrowArrayStream"> | StructPointer<"ArrowDeviceArrayStream"> | ImportedStream | StreamProducer | ArrowCapsule;

/** Options of `importTable`. */
export type ImportTableOptions = ImportOptions & StreamConvertOptions & {
  // `validation` applies where importTable imports (an address, a
  // producer, a capsule); an ImportedStream was validated at its own
  // import, so a level given with one is refused.
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
export function importTable(source: Exclude<TableSource, StructPointer<"ArrowArrayStream">>, options?: ImportTableOptions & { as?: "device_stream" }): Table;
/** `importTable` of an `ArrowArrayStream*` (`{ as: "stream" }`). */
export function importTable(source: Exclude<TableSource, StructPointer<"ArrowDeviceArrayStream">>, options: ImportTableOptions & { as: "stream" }): Table;
/** `importTable` with the struct's kind known only at run time
 * (`options.as` decides; the struct is checked before it is read). */
export function importTable(source: TableSource, options: ImportTableOptions): Table;
export function importTable(source: TableSource, options: ImportTableOptions = {}): Table {
  const fn = "importTable";
  const checked = optionsArg(fn, "options", options, ["as", "validation", "materialize", "toHost"]);
  const as = oneOfArg(fn, "options.as", checked.as ?? "device_stream", ["stream", "device_stream"]);
  // The import takes only its own option; readTable the conversion's.
  const importOptions: ImportOptions = checked.validation === undefined ? {} : { validation: checked.validation };
  const readOptions: StreamConvertOptions = {};
  if (checked.materialize !== undefined) readOptions.materialize = checked.materialize;
  if (checked.toHost !== undefined) readOptions.toHost = checked.toHost;
  // Checked before anything is imported: readTable checks them again.
  booleanArg(fn, "options.materialize", checked.materialize, true);
  booleanArg(fn, "options.toHost", checked.toHost, true);
  if (source instanceof ImportedStream) {
    // Its validation level was chosen when it was imported.
    if (checked.validation !== undefined) {
      throw argumentError(fn, "options.validation", "undefined for an ImportedStream (pass validation to ImportedStream.fromArrayStream / fromDeviceArrayStream, which import it)", checked.validation);
    }
    return readTable(source, readOptions);
  }
  // A producer's stream is imported here, at the requested level (device
  // method preferred, as readTable would).
  if (isStreamProducer(source)) return readTable(ImportedStream.fromDeviceArrayStream(source, importOptions), readOptions);
  const address = structAddress(fn, "source", source, null, false);
  // Checked here too, so that a wrong address is reported as importTable's.
  probeStruct(fn, "source", as === "stream" ? "ArrowArrayStream" : "ArrowDeviceArrayStream", address, true);
  const stream = as === "stream"
    ? ImportedStream.fromArrayStream(branded(address), importOptions)
    : ImportedStream.fromDeviceArrayStream(branded(address), importOptions);
  return readTable(stream, readOptions);
}
