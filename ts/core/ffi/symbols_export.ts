/**
 * bun:ffi declarations of the one-call export path (zig/export/batch.zig,
 * schema templates in zig/export/schema.zig, the queued-id counter in
 * zig/export/keepalive.zig).
 */
import { FFIType } from "bun:ffi";

const { ptr, i32, f64, usize, void: none } = FFIType;

export const exportSymbols = {
  abd_schema_template_new: { args: [ptr, usize], returns: ptr },
  abd_schema_template_free: { args: [ptr], returns: none },
  abd_schema_template_build: { args: [ptr, ptr], returns: i32 },
  abd_export_slot_new: { args: [ptr, ptr, usize, f64, i32], returns: ptr },
  abd_export_slot_free: { args: [ptr, i32], returns: f64 },
  abd_array_image_new: { args: [ptr, usize], returns: ptr },
  abd_array_image_free: { args: [ptr], returns: none },
  abd_array_images_live: { args: [], returns: f64 },
  abd_export_slot_from_image: { args: [ptr, ptr, f64, i32], returns: ptr },
  abd_keepalive_queued_address: { args: [], returns: ptr },
} as const;
