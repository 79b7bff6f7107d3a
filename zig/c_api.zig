//! The library's C API: every exported symbol, and nothing else. Each entry
//! says who owns what. Declared for C in lib/include/arrow_device.h; the TS
//! side binds them in ts/ffi/.
//!
//! Conventions:
//! - Functions that can fail return an `abd_status` (status.zig); on failure
//!   `abd_last_error()` explains, until the next failing call on the thread.
//! - "Moves" means: the struct is bitwise-copied and the caller's copy is
//!   marked released, whether or not the call succeeds.

const std = @import("std");
const abi = @import("abi.zig");
const status = @import("status.zig");
const manifest = @import("manifest.zig");
const counters = @import("counters.zig");
const keepalive = @import("keepalive.zig");
const export_array = @import("export_array.zig");
const export_schema = @import("export_schema.zig");
const owner_mod = @import("owner.zig");
const validate = @import("validate.zig");
const consumer = @import("consumer.zig");
const move = @import("move.zig");
const schema_info = @import("schema_info.zig");
const metadata = @import("metadata.zig");

const Status = status.Status;
const Owner = owner_mod.Owner;

fn code(s: Status) c_int {
    return @intFromEnum(s);
}

fn levelFrom(raw: c_int) ?validate.Level {
    return std.enums.fromInt(validate.Level, raw);
}

// ---------------------------------------------------------------------------
// Library facts and errors
// ---------------------------------------------------------------------------

/// JSON: struct sizes and offsets, device types, flags, status codes,
/// counter names, node-table word layout. Static; never freed.
export fn abd_layout_manifest() [*:0]const u8 {
    return manifest.json.ptr;
}

/// The message of this thread's last failure (empty if none). Valid until
/// the next failing call on this thread.
export fn abd_last_error() [*:0]const u8 {
    return status.lastMessage();
}

export fn abd_last_status() c_int {
    return code(status.lastStatus());
}

/// Copies up to `capacity` counters (counters.zig order) into `out`.
export fn abd_counters_read(out: [*]f64, capacity: u32) u32 {
    return @intCast(counters.read(out[0..capacity]));
}

// ---------------------------------------------------------------------------
// Memory the caller owns
// ---------------------------------------------------------------------------

/// Zeroed native memory, e.g. a place for a base struct that must stay at a
/// stable address. Free with `abd_free`.
export fn abd_alloc_zeroed(size: usize) ?*anyopaque {
    const memory = std.c.malloc(@max(size, 1)) orelse return null;
    @memset(@as([*]u8, @ptrCast(memory))[0..@max(size, 1)], 0);
    return memory;
}

export fn abd_free(memory: ?*anyopaque) void {
    std.c.free(memory);
}

// ---------------------------------------------------------------------------
// Releasing structs from languages that cannot call function pointers
// ---------------------------------------------------------------------------

/// Calls `schema->release` if the schema is not released. NULL is a no-op.
export fn abd_schema_release(schema: ?*abi.ArrowSchema) void {
    const s = schema orelse return;
    if (s.release) |release| release(s);
}

export fn abd_array_release(array: ?*abi.ArrowArray) void {
    const a = array orelse return;
    if (a.release) |release| release(a);
}

export fn abd_device_array_release(array: ?*abi.ArrowDeviceArray) void {
    const a = array orelse return;
    if (a.array.release) |release| release(&a.array);
}

// ---------------------------------------------------------------------------
// Export: trees over caller-kept memory
// ---------------------------------------------------------------------------

/// Builds a schema tree from a byte plan (export_schema.zig) into `out`.
/// The tree owns copies of every string; `out` is the caller's.
export fn abd_schema_build(plan: ?[*]const u8, plan_bytes: usize, out: ?*abi.ArrowSchema) c_int {
    const target = out orelse return code(status.fail(.invalid_argument, "out schema pointer is NULL", .{}));
    const bytes: []const u8 = if (plan) |p| p[0..plan_bytes] else &.{};
    return code(export_schema.build(bytes, target));
}

/// Builds an ArrowArray tree over the buffers named in `plan`
/// (export_array.zig). The caller keeps every buffer alive and in place
/// until `keepalive_id` comes out of `abd_take_released`.
export fn abd_array_build(plan: ?[*]const f64, plan_words: usize, keepalive_id: f64, out: ?*abi.ArrowArray) c_int {
    const target = out orelse return code(status.fail(.invalid_argument, "out array pointer is NULL", .{}));
    const words: []const f64 = if (plan) |p| p[0..plan_words] else &.{};
    return code(export_array.build(words, .{ .keepalive_id = @intFromFloat(keepalive_id) }, target));
}

/// Like `abd_array_build` for an ArrowDeviceArray; `reserved` is zeroed.
export fn abd_device_array_build(plan: ?[*]const f64, plan_words: usize, keepalive_id: f64, device_type: i32, device_id: i32, sync_event: ?*anyopaque, out: ?*abi.ArrowDeviceArray) c_int {
    const target = out orelse return code(status.fail(.invalid_argument, "out device array pointer is NULL", .{}));
    const words: []const f64 = if (plan) |p| p[0..plan_words] else &.{};
    return code(export_array.buildDevice(words, .{ .keepalive_id = @intFromFloat(keepalive_id) }, .{
        .device_type = device_type,
        .device_id = device_id,
        .sync_event = sync_event,
    }, target));
}

/// Registers the callback that wakes JS when keepalive ids are queued.
export fn abd_set_release_notifier(notifier: ?keepalive.Notifier) void {
    keepalive.setNotifier(notifier);
}

/// Moves up to `capacity` released keepalive ids into `out`.
export fn abd_take_released(out: [*]f64, capacity: u32) u32 {
    return @intCast(keepalive.take(out[0..capacity]));
}

// ---------------------------------------------------------------------------
// Import: owners of moved-in data
// ---------------------------------------------------------------------------

/// Moves `schema` and `array` into a new owner (one reference, the
/// caller's) after validating at `level` (0 none .. 3 full).
/// Even a malformed call (bad level, NULL `out`) moves the structs in and
/// releases them.
export fn abd_import_device_array(schema: ?*abi.ArrowSchema, array: ?*abi.ArrowDeviceArray, level: c_int, out: ?*?*Owner) c_int {
    const lvl = levelFrom(level);
    if (out == null or lvl == null) {
        owner_mod.discard(schema, if (array) |a| &a.array else null);
        if (out == null) return code(status.fail(.invalid_argument, "out owner pointer is NULL", .{}));
        return code(status.fail(.invalid_argument, "validation level {d} is not 0..3", .{level}));
    }
    return code(owner_mod.import(schema, array, lvl.?, out.?));
}

/// Like `abd_import_device_array` for a plain ArrowArray (a CPU array).
export fn abd_import_array(schema: ?*abi.ArrowSchema, array: ?*abi.ArrowArray, level: c_int, out: ?*?*Owner) c_int {
    const lvl = levelFrom(level);
    if (out == null or lvl == null) {
        owner_mod.discard(schema, array);
        if (out == null) return code(status.fail(.invalid_argument, "out owner pointer is NULL", .{}));
        return code(status.fail(.invalid_argument, "validation level {d} is not 0..3", .{level}));
    }
    return code(owner_mod.importArray(schema, array, lvl.?, out.?));
}

export fn abd_owner_retain(owner: *Owner, n: u32) void {
    owner.retain(n);
}

/// Drops one reference; the last one runs the producer's release.
export fn abd_owner_release(owner: *Owner) void {
    owner.release();
}

/// Owner facts, as f64 words: nodes address, node count, buffers address,
/// buffer count, device_type, device_id, sync_event address, bytes held,
/// host readable (0/1), schema address, device array address. Valid while
/// the caller holds a reference.
pub const owner_info_words = 11;
export fn abd_owner_info(owner: *Owner, out: [*]f64) void {
    const table = &owner.table;
    const words = [owner_info_words]f64{
        @floatFromInt(@intFromPtr(table.nodes.items.ptr)),
        @floatFromInt(table.nodeCount()),
        @floatFromInt(@intFromPtr(table.buffers.items.ptr)),
        @floatFromInt(table.buffers.items.len / validate.buffer_words),
        @floatFromInt(owner.array.device_type),
        @floatFromInt(owner.array.device_id),
        @floatFromInt(@intFromPtr(owner.array.sync_event)),
        @floatFromInt(table.bytes_known),
        @floatFromInt(@intFromBool(owner.host_readable)),
        @floatFromInt(@intFromPtr(&owner.schema)),
        @floatFromInt(@intFromPtr(&owner.array)),
    };
    @memcpy(out[0..owner_info_words], &words);
}

/// Address of the native deallocator for views of imported memory
/// (`toArrayBuffer(ptr, 0, size, owner, deallocator)`). Each view must be
/// paid for with one `abd_owner_retain` reference, and counts as a view.
export fn abd_view_deallocator() *const anyopaque {
    return @ptrCast(&owner_mod.viewDeallocator);
}

/// Pays for `n` views of `owner` about to be created: n references.
export fn abd_owner_retain_views(owner: *Owner, n: u32) void {
    owner.retain(n);
    counters.add(.live_imported_views, n);
}

// ---------------------------------------------------------------------------
// The built-in native consumer
// ---------------------------------------------------------------------------

/// Moves in and releases `schema` + `array` after validating at `level`,
/// reporting every buffer's address, size and FNV-1a checksum
/// (consumer.zig) into `report` (`capacity` words).
export fn abd_consume_device_array(schema: ?*abi.ArrowSchema, array: ?*abi.ArrowDeviceArray, level: c_int, report: [*]f64, capacity: u32) c_int {
    const lvl = levelFrom(level) orelse return code(status.fail(.invalid_argument, "validation level {d} is not 0..3", .{level}));
    return code(consumer.consume(schema, array, lvl, report[0..capacity]));
}

// ---------------------------------------------------------------------------
// Moving structs the caller holds (move.zig)
// ---------------------------------------------------------------------------

/// Moves `src` to `dst` (bitwise copy, then `src->release = NULL`). `dst`
/// must be released or zeroed. On failure nothing changes. Any thread.
export fn abd_schema_move(src: ?*abi.ArrowSchema, dst: ?*abi.ArrowSchema) c_int {
    return code(move.moveSchema(src, dst));
}

export fn abd_array_move(src: ?*abi.ArrowArray, dst: ?*abi.ArrowArray) c_int {
    return code(move.moveArray(src, dst));
}

export fn abd_device_array_move(src: ?*abi.ArrowDeviceArray, dst: ?*abi.ArrowDeviceArray) c_int {
    return code(move.moveDeviceArray(src, dst));
}

/// Moves child `index` of `parent` to `dst`. The caller must release the
/// parent next; its release skips the moved child.
export fn abd_schema_move_child(parent: ?*abi.ArrowSchema, index: i64, dst: ?*abi.ArrowSchema) c_int {
    return code(move.moveSchemaChild(parent, index, dst));
}

export fn abd_array_move_child(parent: ?*abi.ArrowArray, index: i64, dst: ?*abi.ArrowArray) c_int {
    return code(move.moveArrayChild(parent, index, dst));
}

// ---------------------------------------------------------------------------
// Schema strings of an import, in one call (schema_info.zig)
// ---------------------------------------------------------------------------

/// Copies the flags, format, name and metadata of every node of `owner`
/// into `out` (layout in schema_info.zig) when `capacity` suffices; returns
/// the bytes needed either way. The caller holds a reference to `owner`.
export fn abd_owner_schema_info(owner: *Owner, out: ?[*]u8, capacity: usize) usize {
    const bytes: []u8 = if (out) |o| o[0..capacity] else &.{};
    return schema_info.fill(&owner.table, bytes);
}

/// Size in bytes of an ArrowSchema.metadata blob, reading only its length
/// fields within metadata.zig's limits; -1 (with the reason as last error)
/// when they are out of bounds. NULL has size 0. A double (an exact
/// integer): the cheapest return type for bun:ffi.
export fn abd_metadata_length(blob: ?[*]const u8) f64 {
    const bytes = blob orelse return 0;
    const len = metadata.encodedLength(bytes) catch |e| {
        _ = status.fail(.invalid_layout, "metadata {s}", .{metadata.describe(e)});
        return -1;
    };
    return @floatFromInt(len);
}

// ---------------------------------------------------------------------------
// Async device streams (issue 7): js_wake.zig, async_consumer.zig,
// async_producer.zig. Unless a comment says otherwise, these are called on
// the JS thread; the C peer only ever sees the handler, producer and task
// structs themselves.
// ---------------------------------------------------------------------------

const js_wake = @import("js_wake.zig");
const async_consumer = @import("async_consumer.zig");
const async_producer = @import("async_producer.zig");
const schema_copy = @import("schema_copy.zig");

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

/// Calls on_schema with `schema` (moved to the consumer; released here if
/// the consumer left it). Returns the consumer's code.
export fn abd_async_producer_send_schema(stream: *async_producer.Producer, schema: *abi.ArrowSchema) c_int {
    return stream.sendSchema(schema);
}

/// Builds a task over JS memory (an export plan, export_array.zig) and
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
