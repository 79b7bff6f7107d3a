/**
 * bun-arrow-device/raw: the C Data Interface one level down. The C structs
 * themselves (`CSchema`, `CArray`, `CDeviceArray`) and their moves, typed
 * addresses, the imported handles (`ImportedArray`, `ImportedStream`,
 * `RawArray`), re-exports and relays of imported data, raw arrays built
 * from addresses, the async stream consumer, the JS exchange protocol's
 * symbols and capsules, the layout enums of the ABI and the library's
 * status codes, and metadata encoding. Everything here also works without
 * apache-arrow objects.
 */
export {
  DeviceType, Flags, ValidationLevel, TypeId, BufferKind, Errno, deviceTypeName, isHostAccessible,
  type DeviceTypeName, type ValidationLevelName, type TypeIdName, type ErrnoName,
} from "./core/abi/layout.ts";
export { Status, CallbackError, AsyncStreamError } from "./core/errors.ts";
export { encodeMetadata, decodeMetadataBytes } from "./core/abi/metadata.ts";
export { CSchema, CArray, CDeviceArray, addressOf, type CStruct, type CStructKind, type StructRef } from "./native/c_structs.ts";
export { structPointer, type StructPointer, type StructName } from "./core/abi/pointers.ts";
export { ExportedArray, type ExportedKind, type ExportedSchema } from "./native/exported.ts";
export { ImportedArray, RawArray, type ImportOptions, type ToHostOptions, type TypedBuffer } from "./native/imported.ts";
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
// A synchronous native call whose consumers pull from other threads.
export { callBlocking } from "./native/blocking.ts";
// The JS Arrow exchange protocol (docs/protocol.md): the five symbols, the
// capsule shape, the predicates.
export {
  ArrowCSchema, ArrowCArray, ArrowCDeviceArray, ArrowCStream, ArrowCDeviceStream, capsuleKinds,
  isCapsule, isArrayProducer, isStreamProducer, isSchemaProducer,
  type ArrowCapsule, type CapsuleKind, type ProtocolOptions, type SchemaProducer, type ArrayProducer, type StreamProducer,
} from "./native/protocol/symbols.ts";
export { LibraryCapsule } from "./native/protocol/capsule.ts";
