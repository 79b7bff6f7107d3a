/**
 * bun:ffi declarations of the re-export and relay C API
 * (zig/c_api_reexport.zig; zig/import/reexport.zig).
 */
import { FFIType } from "bun:ffi";

const { ptr, i32, u32 } = FFIType;

export const ownerSymbols = {
  abd_owner_select: { args: [ptr, ptr, u32, ptr], returns: i32 },
  abd_owner_reexport: { args: [ptr, ptr, u32, ptr, ptr], returns: i32 },
  abd_owner_reexport_array: { args: [ptr, ptr, u32, ptr, ptr], returns: i32 },
  abd_relay_device_array: { args: [ptr, ptr, i32, ptr, ptr], returns: i32 },
  abd_relay_array: { args: [ptr, ptr, i32, ptr, ptr], returns: i32 },
  abd_owner_release_deferred: { args: [ptr], returns: FFIType.void },
} as const;
