/**
 * bun-arrow-device: the Arrow C Data and C Device Data Interfaces for Bun.
 *
 * Export apache-arrow data to C without copying (`exportArray`,
 * `exportSchema`), import C data as typed raw views (`ImportedArray`), and
 * check for leaks (`counters`). See README.md for lifetimes.
 */
export * from "./errors.ts";
export {
  DeviceType, Flags, ValidationLevel, TypeId, BufferKind, Errno, deviceTypeName, isHostAccessible, type ErrnoName,
  structLayouts, layoutProblems, type DeviceTypeName, type ValidationLevelName, type CounterName, type LayoutTables,
  type TypeIdName,
} from "./abi/layout.ts";
export { encodeMetadata, decodeMetadataBytes } from "./abi/metadata.ts";
export { libraryPath, platformDir, libraryEnvVar } from "./ffi/library.ts";
export { ExportedArray, type ExportedKind, type ExportedSchema } from "./lifetime/exported.ts";
export { ImportedArray, RawArray, type ImportOptions, type ToHostOptions, type TypedBuffer } from "./lifetime/imported.ts";
export { counters, nonZeroCounters, type Counters } from "./lifetime/counters.ts";
export { drainReleased } from "./lifetime/keepalive.ts";
export { liveHandles, debugEnabled } from "./lifetime/debug.ts";
export { exportArray, exportDeviceArray, exportSchema, exportBatches, type ArraySource, type SchemaSource, type ExportOptions } from "./convert/export.ts";
export { formatOf } from "./convert/formats.ts";
export { consumeNatively, fnv1a32, type NativeBufferReport } from "./native_consumer.ts";
export { reexport, relay, relayArray, type ReexportOptions, type ReexportSource, type RelayOptions } from "./lifetime/reexport.ts";
export { type Window, type Selection, type SliceRange } from "./lifetime/selection.ts";
export {
  MemoryKind, CopyDirection, PointerKind, type MemoryKindName, type CopyDirectionName, type PointerKindName,
} from "./abi/layout.ts";
export { schemaPlan, type SchemaPlanNode } from "./abi/schema_plan.ts";
export { deviceLibraryEnvVars } from "./ffi/device_loader.ts";
export {
  deviceAvailability, deviceRuntime, kindOfDeviceType, runtimeDeviceType, libraryEnvVars,
  DeviceRuntime, DeviceMemory, DeviceStream, DeviceEvent,
  type DeviceKind, type DeviceAvailability, type DeviceInfo, type PointerInfo, type CopyOperand, type CopyOptions, type AllocateOptions,
} from "./device/runtime.ts";
export { copyArrayToDevice, targetDeviceType, type DeviceTarget } from "./device/transfer.ts";
export { exportRawArray, wrapDeviceMemory, type RawArrayNode, type RawBuffer, type RawExportOptions, type WrapOptions } from "./device/wrap.ts";
export { toDevice, toHost, type ToDeviceOptions } from "./convert/device.ts";
export {
  AsyncStreamConsumer, defaultQueueDepth, maxQueueDepth,
  type AsyncConsumerOptions, type AsyncArray, type AsyncStreamInfo, type AsyncConsumerStats,
} from "./lifetime/async_consumer.ts";
export {
  exportAsyncStream, AsyncExport,
  type AsyncExportSource, type AsyncExportItem, type AsyncExportOptions, type AsyncExportOutcome, type AsyncExportResult,
  type MetadataInit,
} from "./convert/async_producer.ts";
export { CSchema, CArray, CDeviceArray, addressOf, type CStruct, type CStructKind, type StructRef } from "./lifetime/c_structs.ts";
export { hostAccessError } from "./lifetime/imported.ts";
export {
  toDataType, toField, toSchema, toData, toVector, toRecordBatch, toTable, importVector, importRecordBatch,
  type ImportConvertOptions,
} from "./convert/import.ts";
export { typeSignature, type ConvertOptions } from "./convert/types.ts";
export { ExportedStream, type StreamKind } from "./lifetime/exported_stream.ts";
export { ImportedStream } from "./lifetime/imported_stream.ts";
export { arrayStreamAsDeviceStream, deviceStreamAsArrayStream } from "./lifetime/stream_adapters.ts";
export {
  exportStream, exportStreamAsync, exportArrayStream, exportDeviceArrayStream,
  type StreamSource, type StreamExportOptions,
} from "./convert/stream_export.ts";
export { recordBatches, recordBatchesAsync, readTable, readTableAsync, streamSchema } from "./convert/stream_import.ts";
export { setJsWorkSpin } from "./lifetime/js_queue.ts";
export { AsyncRecordBatchStream, type AsyncRecordBatchStreamOptions, type AsyncBatch } from "./convert/async_stream.ts";
export { type StreamItem } from "./convert/stream_export.ts";
export { type StreamConvertOptions } from "./convert/stream_import.ts";
export * from "./protocol/index.ts";
export { type StreamInput } from "./convert/stream_import.ts";
export { callBlocking } from "./lifetime/blocking.ts";
