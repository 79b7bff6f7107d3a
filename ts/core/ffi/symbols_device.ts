/**
 * bun:ffi declarations of the device-runtime C API (zig/c_api_device.zig):
 * CUDA and ROCm loaded at run time, memory, copies,
 * streams, events, pointer queries, and host/device transfers of arrays.
 */
import { FFIType } from "bun:ffi";

const { ptr, i32, u32, usize } = FFIType;

export const deviceSymbols = {
  abd_device_runtime_load: { args: [i32, ptr], returns: i32 },
  abd_device_runtime_info: { args: [i32, ptr, ptr, u32], returns: i32 },
  abd_device_get_info: { args: [i32, i32, ptr, u32, ptr], returns: i32 },
  abd_device_alloc: { args: [i32, i32, i32, usize, ptr], returns: i32 },
  abd_device_free: { args: [i32, i32, i32, ptr], returns: i32 },
  abd_device_copy: { args: [i32, i32, i32, ptr, ptr, usize, ptr, i32], returns: i32 },
  abd_device_stream_create: { args: [i32, i32, ptr], returns: i32 },
  abd_device_stream_destroy: { args: [i32, i32, ptr], returns: i32 },
  abd_device_stream_synchronize: { args: [i32, i32, ptr], returns: i32 },
  abd_device_stream_wait_event: { args: [i32, i32, ptr, ptr], returns: i32 },
  abd_device_event_create: { args: [i32, i32, ptr], returns: i32 },
  abd_device_event_destroy: { args: [ptr], returns: i32 },
  abd_device_event_record: { args: [i32, i32, ptr, ptr], returns: i32 },
  abd_device_event_synchronize: { args: [i32, i32, ptr], returns: i32 },
  abd_device_event_query: { args: [i32, i32, ptr, ptr], returns: i32 },
  abd_device_pointer_query: { args: [i32, ptr, ptr], returns: i32 },
  abd_device_array_to_device: { args: [ptr, ptr, i32, i32, ptr, ptr, ptr], returns: i32 },
  abd_owner_to_host: { args: [ptr, ptr, ptr, ptr], returns: i32 },
  abd_device_array_check: { args: [ptr, ptr], returns: i32 },
  abd_device_host_register: { args: [i32, i32, ptr, usize], returns: i32 },
  abd_device_host_unregister: { args: [i32, i32, ptr], returns: i32 },
  abd_device_staging: { args: [i32, i32, ptr], returns: i32 },
} as const;
