/**
 * bun:ffi declarations of the core C API (zig/c_api_core.zig; zig/c_api.zig pulls in every area). Each area of the
 * library declares its symbols in its own symbols_*.ts file; library.ts
 * merges them into the one dlopen table.
 */
import { FFIType } from "bun:ffi";

const { ptr, i32, i64, u32, f64, usize, void: none } = FFIType;

export const coreSymbols = {
  abd_layout_manifest: { args: [], returns: ptr },
  abd_last_error: { args: [], returns: ptr },
  abd_last_status: { args: [], returns: i32 },
  abd_counters_read: { args: [ptr, u32], returns: u32 },

  abd_alloc_zeroed: { args: [usize], returns: ptr },
  abd_free: { args: [ptr], returns: none },
  abd_probe_struct: { args: [i32, ptr, i32], returns: i32 },
  abd_probe_pair: { args: [ptr, i32, ptr], returns: i32 },
  abd_probe_import: { args: [ptr, i32, ptr, i32], returns: i32 },

  abd_schema_release: { args: [ptr], returns: none },
  abd_array_release: { args: [ptr], returns: none },
  abd_device_array_release: { args: [ptr], returns: none },

  abd_schema_build: { args: [ptr, usize, ptr], returns: i32 },
  abd_array_build: { args: [ptr, usize, f64, ptr], returns: i32 },
  abd_device_array_build: { args: [ptr, usize, f64, i32, i64, ptr, ptr], returns: i32 },
  abd_set_release_notifier: { args: [ptr], returns: none },
  abd_js_context_open: { args: [FFIType.bool], returns: u32 },
  abd_take_released: { args: [ptr, u32], returns: u32 },
  abd_release_wake_done: { args: [], returns: none },
  abd_release_wakes_posted: { args: [], returns: f64 },
  abd_export_hold_owners: { args: [f64, ptr, u32], returns: i32 },
  abd_export_drop_owners: { args: [f64], returns: none },

  abd_import_device_array: { args: [ptr, ptr, i32, ptr], returns: i32 },
  abd_import_array: { args: [ptr, ptr, i32, ptr], returns: i32 },
  abd_owner_retain: { args: [ptr, u32], returns: none },
  abd_owner_release: { args: [ptr], returns: none },
  abd_owner_retain_views: { args: [ptr, u32], returns: none },
  abd_owner_release_views: { args: [ptr, u32], returns: none },
  abd_owner_info: { args: [ptr, ptr], returns: none },
  abd_owner_snapshot: { args: [ptr, ptr, u32, u32], returns: u32 },
  abd_view_deallocator: { args: [], returns: ptr },
  abd_anchor_new: { args: [ptr], returns: ptr },
  abd_anchor_arm: { args: [ptr, ptr], returns: FFIType.bool },
  abd_anchor_disarm: { args: [ptr], returns: f64 },
  abd_anchor_deallocator: { args: [], returns: ptr },

  abd_consume_device_array: { args: [ptr, ptr, i32, ptr, u32], returns: i32 },
} as const;
