/**
 * bun-arrow-device/device: GPU memory through the C Device Data Interface.
 * The device runtimes (CUDA driver API, HIP), loaded at run time when
 * present: their memory, streams and events; copies of apache-arrow data
 * to a device and back (`toDevice` / `toHost`); device memory made
 * elsewhere wrapped as Arrow arrays (`wrapDeviceMemory`); and the async
 * device stream interface (`ArrowAsyncDeviceStreamHandler`), producer
 * (`exportAsyncStream`) and consumer (`AsyncRecordBatchStream`).
 */
export {
  DeviceType, MemoryKind, CopyDirection, PointerKind, deviceTypeName, isHostAccessible,
  type DeviceTypeName, type ValidationLevelName, type MemoryKindName, type CopyDirectionName, type PointerKindName,
} from "./core/abi/layout.ts";
export { DeviceUnavailableError, AsyncStreamError } from "./core/errors.ts";
export {
  deviceAvailability, deviceRuntime, kindOfDeviceType, libraryEnvVars,
  DeviceRuntime, DeviceMemory, DeviceStream, DeviceEvent, HostRegistration,
  type DeviceKind, type DeviceAvailability, type DeviceInfo, type PointerInfo, type CopyOperand, type CopyOptions, type AllocateOptions,
} from "./device/runtime.ts";
export { type MemoryPoolStats, type MemoryPoolOptions } from "./device/pool_stats.ts";
export { copyArrayToDevice, targetDeviceType, type DeviceTarget } from "./device/transfer.ts";
export { wrapDeviceMemory, exportRawArray, type RawArrayNode, type RawBuffer, type RawExportOptions, type WrapOptions } from "./device/wrap.ts";
export { toDevice, toHost, type ToDeviceOptions } from "./arrow/device.ts";
export { ExportedArray, type ExportedKind, type ExportedSchema } from "./native/exported.ts";
export { ImportedArray, RawArray, type ImportOptions, type ToHostOptions, type TypedBuffer } from "./native/imported.ts";
export { type StructRef } from "./native/c_structs.ts";
export { structPointer, type StructPointer, type StructName } from "./core/abi/pointers.ts";
// The async device stream interface.
export {
  exportAsyncStream, AsyncExport,
  type AsyncExportSource, type AsyncExportItem, type AsyncExportOptions, type AsyncExportOutcome, type AsyncExportResult,
  type MetadataInit,
} from "./arrow/async_producer.ts";
export { AsyncRecordBatchStream, type AsyncRecordBatchStreamOptions, type AsyncBatch } from "./arrow/async_stream.ts";
