/**
 * bun:ffi declarations of JS-produced device streams
 * (zig/c_api_streams.zig): a stream whose schema is read from a C schema,
 * and get_next answered by moving a device array made elsewhere.
 */
import { FFIType } from "bun:ffi";

const { ptr, i32, f64, bool } = FFIType;

export const deviceStreamSymbols = {
  abd_stream_export_create_from_schema: { args: [i32, i32, ptr, bool, f64, ptr], returns: i32 },
  abd_stream_export_deliver_array: { args: [ptr, ptr, ptr], returns: i32 },
} as const;
