/**
 * bun:ffi declarations of the struct-moving helpers (zig/move.zig, the
 * "Moving structs the caller holds" section of zig/c_api.zig).
 */
import { FFIType } from "bun:ffi";

const { ptr, i32, i64 } = FFIType;

export const importSymbols = {
  abd_schema_move: { args: [ptr, ptr], returns: i32 },
  abd_array_move: { args: [ptr, ptr], returns: i32 },
  abd_device_array_move: { args: [ptr, ptr], returns: i32 },
  abd_schema_move_child: { args: [ptr, i64, ptr], returns: i32 },
  abd_array_move_child: { args: [ptr, i64, ptr], returns: i32 },
} as const;
