/**
 * bun-arrow-device: the Arrow C Data and C Device Data Interfaces for Bun.
 *
 * The everyday API (`import … from "bun-arrow-device"`): apache-arrow
 * data out to C and back in one call each, streams, async streams and the
 * typed errors. Advanced tiers live in subpaths: "bun-arrow-device/raw"
 * (C structs, moves, relays, raw arrays), "bun-arrow-device/device"
 * (GPU runtimes, memory, copies) and "bun-arrow-device/diagnostics"
 * (counters, live handles, debug mode). docs/api.md explains the names.
 */
export * from "./core/errors.ts";
export { DeviceType, type DeviceTypeName, type ValidationLevelName } from "./core/abi/layout.ts";

// Out: apache-arrow -> C.
export { ExportedArray, type ExportedKind, type ExportedSchema } from "./native/exported.ts";
export { exportArray, exportSchema, exportBatches, type ArraySource, type SchemaSource, type ExportOptions } from "./arrow/export.ts";
export { ExportedStream, type StreamKind } from "./native/exported_stream.ts";
export {
  exportStream, exportStreamAsync, exportArrayStream, exportDeviceArrayStream,
  type StreamSource, type StreamExportOptions, type StreamItem,
} from "./arrow/stream_export.ts";
export { exportTable } from "./arrow/table.ts";
export {
  exportAsyncStream, AsyncExport,
  type AsyncExportSource, type AsyncExportItem, type AsyncExportOptions, type AsyncExportOutcome, type AsyncExportResult,
  type MetadataInit,
} from "./arrow/async_producer.ts";

// In: C -> apache-arrow.
export { ImportedArray, RawArray, type ImportOptions, type ToHostOptions, type TypedBuffer } from "./native/imported.ts";
export { ImportedStream } from "./native/imported_stream.ts";
export { type StructRef } from "./native/c_structs.ts";
// Typed addresses (docs/api.md): a raw address from C is given its struct.
export { structPointer, type StructPointer, type StructName } from "./core/abi/pointers.ts";
export {
  toDataType, toField, toSchema, toData, toVector, toRecordBatch, toTable, importVector, importRecordBatch,
  type ImportConvertOptions,
} from "./arrow/import.ts";
export { type ConvertOptions } from "./arrow/types.ts";
export { recordBatches, recordBatchesAsync, readTable, readTableAsync, streamSchema, type StreamConvertOptions } from "./arrow/stream_import.ts";
export { importTable, type TableSource, type ImportTableOptions } from "./arrow/table.ts";
export { AsyncRecordBatchStream, type AsyncRecordBatchStreamOptions, type AsyncBatch } from "./arrow/async_stream.ts";

// The JS Arrow exchange protocol (docs/protocol.md): any producer in, and
// apache-arrow objects as producers.
export * from "./arrow/protocol/index.ts";
export { type StreamInput } from "./arrow/stream_import.ts";
// A synchronous native call whose consumers pull from other threads.
export { callBlocking } from "./native/blocking.ts";
