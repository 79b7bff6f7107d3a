/**
 * bun:ffi declarations of the stream C API (zig/c_api_streams.zig):
 * the JS work queue, JS-produced streams, imported streams and adapters.
 */
import { FFIType } from "bun:ffi";

const { ptr, i32, i64, u32, f64, usize, bool, void: none } = FFIType;

export const streamSymbols = {
  abd_status_errno: { args: [i32], returns: i32 },

  abd_js_queue_set_notifier: { args: [ptr], returns: none },
  abd_js_queue_take: { args: [ptr, u32], returns: u32 },
  abd_js_work_pending: { args: [], returns: u32 },
  abd_js_queue_polling: { args: [bool], returns: none },
  abd_set_spin_ns: { args: [f64], returns: none },
  abd_js_blocking: { args: [bool], returns: f64 },

  abd_stream_export_set_producer: { args: [ptr], returns: none },
  abd_stream_export_create: { args: [i32, i32, ptr, usize, bool, f64, ptr], returns: i32 },
  abd_stream_export_deliver: { args: [ptr, ptr, usize, f64, i64], returns: i32 },
  abd_stream_export_end: { args: [ptr], returns: i32 },
  abd_stream_export_fail: { args: [ptr, i32, ptr, usize], returns: i32 },
  abd_array_stream_release: { args: [ptr], returns: none },
  abd_device_array_stream_release: { args: [ptr], returns: none },

  abd_stream_import: { args: [i32, ptr, ptr], returns: i32 },
  abd_stream_import_info: { args: [ptr, ptr], returns: none },
  abd_stream_import_schema: { args: [ptr, ptr], returns: i32 },
  abd_stream_import_next: { args: [ptr, i32, ptr], returns: i32 },
  abd_stream_import_empty_batch: { args: [ptr, i32, ptr], returns: i32 },
  abd_stream_import_pull: { args: [ptr, i32], returns: i32 },
  abd_stream_import_take_pull: { args: [ptr, ptr], returns: i32 },
  abd_stream_import_pull_state: { args: [ptr], returns: i32 },
  abd_stream_import_wait: { args: [ptr], returns: i32 },
  abd_stream_import_copy_pulls_to_host: { args: [ptr], returns: none },
  abd_stream_import_producer_error: { args: [ptr, ptr], returns: ptr },
  abd_stream_import_release: { args: [ptr], returns: none },
  abd_stream_import_move: { args: [ptr, ptr], returns: i32 },

  abd_stream_to_device: { args: [ptr, ptr], returns: i32 },
  abd_stream_from_device: { args: [ptr, ptr], returns: i32 },
  abd_stream_import_next_snapshot: { args: [ptr, i32, ptr, u32, ptr], returns: i32 },
} as const;
