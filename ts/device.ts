/**
 * bun-arrow-device/device: GPU memory through the C Device Data Interface.
 * The device runtimes (CUDA driver API, HIP), loaded at run time when
 * present: their memory, streams and events; copies of apache-arrow data
 * to a device and back (`toDevice` / `toHost`); and device memory made
 * elsewhere wrapped as Arrow arrays (`wrapDeviceMemory`).
 */
export {
  DeviceType, MemoryKind, CopyDirection, PointerKind, deviceTypeName, isHostAccessible,
  type DeviceTypeName, type ValidationLevelName, type MemoryKindName, type CopyDirectionName, type PointerKindName,
} from "./core/abi/layout.ts";
export { deviceLibraryEnvVars } from "./core/ffi/device_loader.ts";
export {
  deviceAvailability, deviceRuntime, kindOfDeviceType, runtimeDeviceType, libraryEnvVars,
  DeviceRuntime, DeviceMemory, DeviceStream, DeviceEvent, HostRegistration,
  type DeviceKind, type DeviceAvailability, type DeviceInfo, type PointerInfo, type CopyOperand, type CopyOptions, type AllocateOptions,
} from "./device/runtime.ts";
export { copyArrayToDevice, targetDeviceType, type DeviceTarget } from "./device/transfer.ts";
export { wrapDeviceMemory, exportRawArray, type RawArrayNode, type RawBuffer, type RawExportOptions, type WrapOptions } from "./device/wrap.ts";
export { toDevice, toHost, type ToDeviceOptions } from "./arrow/device.ts";
export { exportDeviceArray, type ArraySource } from "./arrow/export.ts";
export { ExportedArray, type ExportedKind, type ExportedSchema } from "./native/exported.ts";
export { ImportedArray, RawArray, type ImportOptions, type ToHostOptions, type TypedBuffer } from "./native/imported.ts";
export { type StructRef } from "./native/c_structs.ts";
export { structPointer, type StructPointer, type StructName } from "./core/abi/pointers.ts";
