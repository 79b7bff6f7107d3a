/**
 * bun-arrow-device/raw: the C Data Interface one level down. The C structs
 * themselves (`CSchema`, `CArray`, `CDeviceArray`) and their moves,
 * re-exports and relays of imported data, raw arrays built from addresses,
 * the async stream consumer, the layout enums of the ABI, and metadata
 * encoding. Everything here also works without apache-arrow objects.
 */
export {
  DeviceType, Flags, ValidationLevel, TypeId, BufferKind, Errno, deviceTypeName, isHostAccessible,
  type DeviceTypeName, type ValidationLevelName, type TypeIdName, type ErrnoName,
} from "./core/abi/layout.ts";
export { encodeMetadata, decodeMetadataBytes } from "./core/abi/metadata.ts";
export { CSchema, CArray, CDeviceArray, addressOf, type CStruct, type CStructKind, type StructRef } from "./native/c_structs.ts";
export { structPointer, type StructPointer, type StructName } from "./core/abi/pointers.ts";
export { ExportedArray, type ExportedKind, type ExportedSchema } from "./native/exported.ts";
export { ImportedArray, RawArray, hostAccessError, type ImportOptions, type ToHostOptions, type TypedBuffer } from "./native/imported.ts";
export { ImportedStream } from "./native/imported_stream.ts";
export { ExportedStream, type StreamKind } from "./native/exported_stream.ts";
export { reexport, relay, relayArray, type ReexportOptions, type ReexportSource, type RelayOptions } from "./native/reexport.ts";
export { type Window, type Selection, type SliceRange } from "./native/selection.ts";
export { arrayStreamAsDeviceStream, deviceStreamAsArrayStream } from "./native/stream_adapters.ts";
export { exportRawArray, type RawArrayNode, type RawBuffer, type RawExportOptions } from "./device/wrap.ts";
export {
  AsyncStreamConsumer, defaultQueueDepth, maxQueueDepth,
  type AsyncConsumerOptions, type AsyncArray, type AsyncStreamInfo, type AsyncConsumerStats,
} from "./native/async_consumer.ts";
