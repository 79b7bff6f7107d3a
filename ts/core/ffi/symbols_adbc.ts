/**
 * bun:ffi declarations of the ADBC calls (zig/c_api_adbc.zig and
 * zig/adbc/exports.zig; the modules are zig/adbc/).
 */
import { FFIType } from "bun:ffi";

const { ptr, i32, u32, f64, void: none } = FFIType;

export const adbcSymbols = {
  abd_adbc_driver_load: { args: [ptr, ptr, ptr], returns: i32 },
  abd_adbc_driver_version: { args: [ptr], returns: i32 },
  abd_adbc_driver_unload: { args: [ptr], returns: none },
  abd_adbc_object_new: { args: [], returns: ptr },
  abd_adbc_object_free: { args: [ptr], returns: none },
  abd_adbc_call: { args: [ptr, ptr, ptr, u32], returns: i32 },
  abd_adbc_call_double: { args: [ptr, ptr, ptr, ptr, f64, ptr], returns: i32 },
  abd_adbc_call_async: { args: [ptr, ptr, ptr, u32, f64], returns: ptr },
  abd_adbc_job_finish: { args: [ptr], returns: i32 },
  abd_adbc_error_reset: { args: [ptr, ptr], returns: none },
  abd_adbc_error_take: { args: [ptr, ptr, ptr], returns: ptr },
  abd_adbc_errors_released: { args: [], returns: f64 },
  abd_adbc_object_refused: { args: [ptr], returns: f64 },
  abd_adbc_schema_stream: { args: [ptr, ptr], returns: i32 },
  abd_adbc_partitions_release: { args: [ptr], returns: none },
  abd_adbc_result_stream: { args: [ptr, ptr], returns: ptr },
  abd_adbc_result_error: { args: [ptr, ptr], returns: ptr },
  abd_adbc_result_slot_release: { args: [ptr], returns: none },
  abd_adbc_object_share: { args: [ptr, ptr], returns: i32 },
  abd_adbc_object_borrow: { args: [f64, ptr], returns: i32 },
  abd_adbc_object_retire: { args: [ptr], returns: i32 },
  abd_adbc_call_cancel: { args: [ptr, ptr, ptr, u32], returns: i32 },
} as const;
