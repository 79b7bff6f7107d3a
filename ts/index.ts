/**
 * bun-arrow-device: the Arrow C Data and C Device Data Interfaces for Bun.
 *
 * The everyday API (`import … from "bun-arrow-device"`): apache-arrow
 * data out to C and back in, one name per job, and the errors callers
 * catch. Advanced tiers live in subpaths: "bun-arrow-device/raw" (C
 * structs, typed addresses, imported handles, moves, relays, the protocol's
 * symbols), "bun-arrow-device/device" (GPU runtimes, memory, copies, async
 * device streams) and "bun-arrow-device/diagnostics" (counters, live
 * handles, debug mode). docs/api.md lists each job and its name.
 */
export { ArrowDeviceError, StreamError, LibraryLoadError, type StatusName } from "./core/errors.ts";
export { DeviceType } from "./core/abi/layout.ts";

// Out: apache-arrow -> C.
export { ExportedArray } from "./native/exported.ts";
export { ExportedStream } from "./native/exported_stream.ts";
export { exportArray, exportSchema, exportBatches, type ArraySource, type SchemaSource, type ExportOptions } from "./arrow/export.ts";
export { type StreamSource, type StreamExportOptions, type StreamItem } from "./arrow/stream_export.ts";

// In: C -> apache-arrow.
export { importVector, importRecordBatch, importSchema, importField, importDataType, importData } from "./arrow/import_api.ts";
export { type ImportConvertOptions } from "./arrow/import.ts";
export { type ConvertOptions } from "./arrow/types.ts";
export { exportStream, importTable, recordBatches, type ImportStreamSource, type ImportStreamOptions } from "./arrow/stream_api.ts";

// The JS Arrow exchange protocol (docs/protocol.md): apache-arrow objects
// as producers. The symbols and capsules are in "bun-arrow-device/raw".
export {
  arrowProtocol, installArrowProtocol, uninstallArrowProtocol, arrowProtocolInstalled,
  type ArrowSource, type ProtocolMethods,
} from "./arrow/protocol/producers.ts";
