/**
 * bun:ffi declarations of the async device stream C API
 * (zig/c_api_async.zig): the JS-wake notifier, schema copies, this
 * library as consumer (abd_async_consumer_*) and as producer
 * (abd_async_producer_*).
 */
import { FFIType } from "bun:ffi";

const { ptr, i32, u32, f64, usize, void: none } = FFIType;

export const asyncSymbols = {
  abd_js_wake_set_notifier: { args: [ptr], returns: none },
  abd_schema_copy: { args: [ptr, ptr], returns: i32 },

  abd_async_consumer_create: { args: [u32, ptr], returns: i32 },
  abd_async_consumer_handler: { args: [ptr], returns: ptr },
  abd_async_consumer_poll: { args: [ptr, ptr, i32], returns: none },
  abd_async_consumer_request: { args: [ptr, u32], returns: i32 },
  abd_async_consumer_take: { args: [ptr, ptr, ptr, ptr], returns: i32 },
  abd_async_consumer_take_many: { args: [ptr, i32, ptr, u32, i32, ptr], returns: i32 },
  abd_async_consumer_news: { args: [ptr], returns: u32 },
  abd_async_consumer_await_news: { args: [ptr, u32, f64], returns: i32 },
  abd_async_consumer_string: { args: [ptr, u32, ptr], returns: none },
  abd_async_consumer_cancel: { args: [ptr], returns: none },
  abd_async_consumer_close: { args: [ptr, i32], returns: none },

  abd_async_producer_create: { args: [ptr, i32, ptr, usize, u32, ptr], returns: i32 },
  abd_async_producer_poll: { args: [ptr, ptr, i32], returns: none },
  abd_async_producer_published: { args: [ptr], returns: ptr },
  abd_async_producer_news: { args: [ptr], returns: u32 },
  abd_async_producer_await_news: { args: [ptr, u32, f64], returns: i32 },
  abd_async_producer_send_schema: { args: [ptr, ptr], returns: i32 },
  abd_async_producer_send_plan: { args: [ptr, ptr, usize, f64, ptr, ptr], returns: i32 },
  abd_async_producer_send_array: { args: [ptr, ptr, ptr, ptr], returns: i32 },
  abd_async_producer_send_end: { args: [ptr], returns: i32 },
  abd_async_producer_send_error: { args: [ptr, i32, ptr, ptr], returns: none },
  abd_async_producer_release: { args: [ptr], returns: none },
} as const;
