/**
 * bun:ffi declarations of zig/c_api_import.zig: moving structs
 * the caller holds (zig/import/move.zig) and the schema strings of an import in
 * one call (zig/validate/schema_info.zig).
 */
import { FFIType } from "bun:ffi";

const { ptr, i32, i64, f64, usize } = FFIType;

export const importSymbols = {
  abd_schema_move: { args: [ptr, ptr], returns: i32 },
  abd_array_move: { args: [ptr, ptr], returns: i32 },
  abd_device_array_move: { args: [ptr, ptr], returns: i32 },
  abd_schema_move_child: { args: [ptr, i64, ptr], returns: i32 },
  abd_array_move_child: { args: [ptr, i64, ptr], returns: i32 },

  abd_owner_schema_info: { args: [ptr, ptr, usize], returns: usize },
  abd_owner_schema_key: { args: [ptr, ptr, FFIType.u32], returns: FFIType.u32 },
  abd_owner_schema_matches: { args: [ptr, ptr, FFIType.u32], returns: FFIType.i32 },
  abd_metadata_length: { args: [ptr], returns: f64 },
} as const;
