//! Async device streams: this library as consumer and as producer.
//! Part of the C API (c_api.zig: conventions, and the list of areas).

const std = @import("std");
const abi = @import("core/abi.zig");
const status = @import("core/status.zig");
const consumer = @import("import/consumer.zig");
const metadata = @import("core/metadata.zig");
const js_queue = @import("core/js_queue.zig");
const js_wake = @import("async/js_wake.zig");
const async_consumer = @import("async/consumer.zig");
const async_producer = @import("async/producer.zig");
const schema_copy = @import("export/schema_copy.zig");
const common = @import("c_api_common.zig");
const code = common.code;
const levelFrom = common.levelFrom;

// ---------------------------------------------------------------------------
// Async device streams: js_wake.zig, async/consumer.zig,
// async/producer.zig. Unless a comment says otherwise, these are called on
// the JS thread; the C peer only ever sees the handler, producer and task
// structs themselves.
// ---------------------------------------------------------------------------


/// Registers the threadsafe callback that wakes JS for a waiting object
/// (its argument is the object's token).
export fn abd_js_wake_set_notifier(notifier: ?js_wake.Notifier) void {
    js_wake.setNotifier(notifier);
}

/// Deep-copies `source` into `out` (the copy owns all its memory).
export fn abd_schema_copy(source: ?*const abi.ArrowSchema, out: ?*abi.ArrowSchema) c_int {
    const s = source orelse return code(status.fail(.invalid_argument, "source schema pointer is NULL", .{}));
    const target = out orelse return code(status.fail(.invalid_argument, "out schema pointer is NULL", .{}));
    return code(schema_copy.copy(s, target));
}

// --- This library as consumer ------------------------------------------------

/// A new consumer; its wakes carry `token`. `*out` holds JS's reference
/// (dropped by `abd_async_consumer_close`); the producer's reference is
/// dropped by the handler's release.
export fn abd_async_consumer_create(token: u32, out: ?*?*async_consumer.Consumer) c_int {
    const target = out orelse return code(status.fail(.invalid_argument, "out consumer pointer is NULL", .{}));
    return code(async_consumer.create(token, target));
}

/// The `ArrowAsyncDeviceStreamHandler*` to give to a producer. Valid until
/// the producer releases it.
export fn abd_async_consumer_handler(stream: *async_consumer.Consumer) *abi.ArrowAsyncDeviceStreamHandler {
    return &stream.handler;
}

/// Writes the consumer's state (async_consumer.StateWord) into `out`;
/// `arm != 0` first clears its pending wake (JS is about to wait).
export fn abd_async_consumer_poll(stream: *async_consumer.Consumer, out: [*]f64, arm: c_int) void {
    stream.poll(out[0..async_consumer.state_words], arm != 0);
}

/// Asks the producer for `n` more tasks. Returns 1 when the request was
/// made, 0 when the stream is over (ended, failed, cancelled, released).
export fn abd_async_consumer_request(stream: *async_consumer.Consumer, n: u32) c_int {
    if (n == 0) return 0;
    return @intFromBool(stream.request(n));
}

/// Takes the next queued task: extracts its array into `array` on this
/// thread and copies the stream schema into `schema` (both then belong to
/// the caller). The library's JS side asks for more itself; `words` (NULL,
/// or state-word room) receives the state after the take.
export fn abd_async_consumer_take(stream: *async_consumer.Consumer, schema: ?*abi.ArrowSchema, array: ?*abi.ArrowDeviceArray, words: ?[*]f64) c_int {
    const s = schema orelse return code(status.fail(.invalid_argument, "out schema pointer is NULL", .{}));
    const a = array orelse return code(status.fail(.invalid_argument, "out array pointer is NULL", .{}));
    const out: ?[]f64 = if (words) |w| w[0..async_consumer.state_words] else null;
    return code(stream.take(s, a, false, out));
}

/// Takes every queued task, up to `capacity`, in one call: each task is
/// extracted here and imported, with a copy of the stream schema, into a
/// new owner validated at `level` (0..3). `out` (room for 1 + 2 *
/// capacity words) receives the count, then per task the owner's address
/// (one reference, the caller's) and its metadata size (-1: none); see
/// async_consumer.takeMany. `arm != 0` first clears the pending wake (JS
/// waits if nothing was taken); `words` receives the state afterwards.
/// Returns the first failure after the tasks taken before it.
export fn abd_async_consumer_take_many(stream: *async_consumer.Consumer, level: c_int, out: ?[*]f64, capacity: u32, arm: c_int, words: ?[*]f64) c_int {
    const target = out orelse return code(status.fail(.invalid_argument, "out pointer is NULL", .{}));
    const lvl = levelFrom(level) orelse {
        target[0] = 0;
        return code(status.fail(.invalid_argument, "validation level {d} is not 0..3", .{level}));
    };
    if (arm != 0) stream.waker.clear();
    const result = stream.takeMany(lvl, target[0 .. 1 + 2 * @as(usize, capacity)], capacity);
    if (words) |w| stream.poll(w[0..async_consumer.state_words], false);
    return code(result);
}

/// How much news the producer sent so far (js_wake.Waker.news); any
/// thread, no lock: JS spins on it briefly before it sleeps.
export fn abd_async_consumer_news(stream: *async_consumer.Consumer) u32 {
    return stream.waker.news();
}

/// Waits up to `window_ns` (clamped as `abd_set_spin_ns`) for news past
/// `seen`, yielding the CPU meanwhile (js_wake.Waker.awaitNews); 1 if news came.
export fn abd_async_consumer_await_news(stream: *async_consumer.Consumer, seen: u32, window_ns: f64) c_int {
    return @intFromBool(stream.waker.awaitNews(seen, js_queue.clampSpin(window_ns)));
}

/// Address and length of one of the consumer's byte strings
/// (async_consumer.StringId) into `out[0..2]`; address 0 when absent.
export fn abd_async_consumer_string(stream: *async_consumer.Consumer, id: u32, out: [*]f64) void {
    const which = std.enums.fromInt(async_consumer.StringId, id) orelse {
        out[0] = 0;
        out[1] = 0;
        return;
    };
    const bytes = stream.string(which);
    out[0] = if (bytes) |b| @floatFromInt(@intFromPtr(b.ptr)) else 0;
    out[1] = if (bytes) |b| @floatFromInt(b.len) else 0;
}

/// Cancels the stream (idempotent): tells the producer, and extracts every
/// queued task with NULL.
export fn abd_async_consumer_cancel(stream: *async_consumer.Consumer) void {
    stream.cancel();
}

/// JS's last call: cancels unless the stream is over, and drops JS's
/// reference. `handed_out == 0` when no producer ever got the handler (it
/// is then released here).
export fn abd_async_consumer_close(stream: *async_consumer.Consumer, handed_out: c_int) void {
    stream.close(handed_out != 0);
}

// --- This library as producer ------------------------------------------------

/// A producer for `handler` (populating `handler->producer`), declaring
/// `device_type`, with additional_metadata copied from `blob`
/// (`metadata_len` bytes of binary-encoded metadata; NULL for none).
export fn abd_async_producer_create(handler: ?*abi.ArrowAsyncDeviceStreamHandler, device_type: i32, blob: ?[*]const u8, metadata_len: usize, token: u32, out: ?*?*async_producer.Producer) c_int {
    const target = out orelse return code(status.fail(.invalid_argument, "out producer pointer is NULL", .{}));
    const bytes: ?[]const u8 = if (blob) |m| m[0..metadata_len] else null;
    return code(async_producer.create(handler, device_type, bytes, token, target));
}

/// Writes the producer's state (async_producer.StateWord) into `out`;
/// `arm != 0` first clears its pending wake (JS is about to wait).
export fn abd_async_producer_poll(stream: *async_producer.Producer, out: [*]f64, arm: c_int) void {
    stream.poll(out[0..async_producer.state_words], arm != 0);
}

/// The address of the producer's published state words
/// (async_producer.Producer.published: StateWord, all but `wakes`), which
/// JS reads without a call between sends; valid until
/// abd_async_producer_release.
export fn abd_async_producer_published(stream: *async_producer.Producer) *const [async_producer.state_words]f64 {
    return &stream.published;
}

/// How much news (requests, cancel) the consumer sent so far
/// (js_wake.Waker.news); no lock: JS spins on it briefly before it sleeps.
export fn abd_async_producer_news(stream: *async_producer.Producer) u32 {
    return stream.waker.news();
}

/// Waits up to `window_ns` for news past `seen`, yielding the CPU
/// meanwhile (js_wake.Waker.awaitNews); 1 if news came.
export fn abd_async_producer_await_news(stream: *async_producer.Producer, seen: u32, window_ns: f64) c_int {
    return @intFromBool(stream.waker.awaitNews(seen, js_queue.clampSpin(window_ns)));
}

/// Calls on_schema with `schema` (moved to the consumer; released here if
/// the consumer left it). Returns the consumer's code.
export fn abd_async_producer_send_schema(stream: *async_producer.Producer, schema: *abi.ArrowSchema) c_int {
    return stream.sendSchema(schema);
}

/// Builds a task over JS memory (an export plan, export/array.zig) and
/// calls on_next_task with it; `*rc` receives the consumer's code. Needs a
/// credit (a requested, unsent task).
export fn abd_async_producer_send_plan(stream: *async_producer.Producer, plan: ?[*]const f64, plan_words: usize, keepalive_id: f64, blob: ?[*]const u8, rc: *c_int) c_int {
    const words: []const f64 = if (plan) |p| p[0..plan_words] else &.{};
    return code(stream.sendPlan(words, @intFromFloat(keepalive_id), blob, rc));
}

/// Moves `array` into a task and calls on_next_task with it; `*rc` receives
/// the consumer's code. On error `array` is left as it was.
export fn abd_async_producer_send_array(stream: *async_producer.Producer, array: ?*abi.ArrowDeviceArray, blob: ?[*]const u8, rc: *c_int) c_int {
    const a = array orelse return code(status.fail(.invalid_argument, "array pointer is NULL", .{}));
    return code(stream.sendArray(a, blob, rc));
}

/// Calls on_next_task(NULL): the end of the stream. Returns the consumer's code.
export fn abd_async_producer_send_end(stream: *async_producer.Producer) c_int {
    return stream.sendEnd();
}

/// Calls on_error(code, message, metadata).
export fn abd_async_producer_send_error(stream: *async_producer.Producer, error_code: c_int, message: ?[*:0]const u8, blob: ?[*]const u8) void {
    stream.sendError(error_code, message, blob);
}

/// Calls the handler's release, then frees the producer.
export fn abd_async_producer_release(stream: *async_producer.Producer) void {
    stream.releaseAndDestroy();
}
