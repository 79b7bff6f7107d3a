//! Streams: JS-produced streams, imported streams, adapters, device
//! streams from JS, and the JS work queue they wake JS through.
//! Part of the C API (c_api.zig: conventions, and the list of areas).

const std = @import("std");
const abi = @import("core/abi.zig");
const status = @import("core/status.zig");
const keepalive = @import("export/keepalive.zig");
const owner_mod = @import("import/owner.zig");
const validate = @import("validate/validate.zig");
const consumer = @import("import/consumer.zig");
const device_transfer = @import("device/transfer.zig");
const js_queue = @import("core/js_queue.zig");
const stream_export = @import("stream/export.zig");
const stream_import = @import("stream/import.zig");
const stream_convert = @import("stream/convert.zig");
const common = @import("c_api_common.zig");
const c_api_import = @import("c_api_import.zig");
const Status = common.Status;
const Owner = common.Owner;
const code = common.code;
const levelFrom = common.levelFrom;

// ---------------------------------------------------------------------------
// Streams: JS-produced streams, imported streams, adapters, and
// the JS work queue they wake JS through. Threads: see stream/export.zig
// and stream/import.zig; the functions below that answer or drain are for
// the JS thread only.
// ---------------------------------------------------------------------------


/// The errno-compatible code stream callbacks return for status `raw`.
export fn abd_status_errno(raw: c_int) c_int {
    const s = std.enums.fromInt(Status, raw) orelse return Status.internal.errno();
    return s.errno();
}

/// Registers the void threadsafe callback that wakes JS when work is
/// queued for it (js_queue.zig).
export fn abd_js_queue_set_notifier(notifier: ?js_queue.Notifier) void {
    js_queue.mine().setNotifier(notifier);
}

/// Moves up to `capacity` queued entries into `out` (3 words each: tag,
/// key, address); returns how many entries. JS thread.
export fn abd_js_queue_take(out: [*]f64, capacity: u32) u32 {
    comptime std.debug.assert(js_queue.entry_words == 3);
    const n = js_queue.mine().take(out[0 .. @as(usize, capacity) * js_queue.entry_words]);
    std.debug.assert(n <= capacity);
    return @intCast(n);
}

/// Entries waiting in the JS work queue plus released exports waiting in
/// the keepalive queue, read without locks (for JS's polling loop).
export fn abd_js_work_pending() u32 {
    const released: u32 = keepalive.queuedAddress().*;
    return js_queue.mine().queuedNow() + released;
}

/// JS says it is polling the work and keepalive queues (no wake-ups
/// needed), or that it stopped (it then takes from both once more).
export fn abd_js_queue_polling(on: bool) void {
    js_queue.mine().setPolling(on);
}

/// How long threads waiting across the JS hand-off spin before sleeping
/// (js_queue.zig `spin_ns`); 0 disables spinning.
/// Any f64 is taken: NaN and negatives give 0, values above
/// `js_queue.max_spin_ns` (and +Infinity) give that maximum, so no input
/// reaches @intFromFloat out of range.
export fn abd_set_spin_ns(nanoseconds: f64) void {
    js_queue.spin_ns.store(js_queue.clampSpin(nanoseconds), .monotonic);
}

/// JS enters (true) or leaves (false) a synchronous native call that may
/// wait for consumers of JS-produced streams; returns the number of get_next
/// calls refused so far (stream/export.zig `js_blocked`). JS thread.
export fn abd_js_blocking(enter: bool) f64 {
    if (enter) {
        _ = stream_export.js_blocked.fetchAdd(1, .acq_rel);
    } else {
        _ = stream_export.js_blocked.fetchSub(1, .acq_rel);
    }
    return @floatFromInt(stream_export.blocked_refusals.load(.acquire));
}

/// Registers the non-threadsafe JS callback that answers get_next calls
/// made on the JS thread.
export fn abd_stream_export_set_producer(callback: ?stream_export.SyncProducer) void {
    stream_export.setSyncProducer(callback);
}

/// Fills `out` (ArrowArrayStream for kind 0, ArrowDeviceArrayStream for
/// kind 1) with a JS-produced stream. `out` is the caller's; the stream's
/// release frees everything else and queues `js_key` for JS. JS thread.
export fn abd_stream_export_create(kind: c_int, device_type: i32, schema_plan: ?[*]const u8, plan_bytes: usize, source_is_async: bool, js_key: f64, out: ?*anyopaque) c_int {
    const target = out orelse return code(status.fail(.invalid_argument, "out stream pointer is NULL", .{}));
    const k = std.enums.fromInt(stream_export.Kind, kind) orelse return code(status.fail(.invalid_argument, "stream kind {d} is not 0 (array) or 1 (device)", .{kind}));
    const plan: []const u8 = if (schema_plan) |p| p[0..plan_bytes] else &.{};
    return code(stream_export.create(k, device_type, plan, source_is_async, @intFromFloat(js_key), target));
}

/// Answers the producer's pending get_next with a batch built from `plan`
/// (as `abd_array_build`). On failure the stream fails with that error.
export fn abd_stream_export_deliver(producer: *stream_export.Producer, plan: ?[*]const f64, plan_words: usize, keepalive_id: f64, device_id: i64) c_int {
    const words: []const f64 = if (plan) |p| p[0..plan_words] else &.{};
    return code(stream_export.deliver(producer, words, @intFromFloat(keepalive_id), device_id));
}

/// Answers the producer's pending get_next with the end of the stream.
export fn abd_stream_export_end(producer: *stream_export.Producer) c_int {
    return code(stream_export.end(producer));
}

/// Answers the producer's pending get_next with a final failure: `errno`
/// and the UTF-8 `message` (copied), what get_last_error then returns.
export fn abd_stream_export_fail(producer: *stream_export.Producer, errno: c_int, message: ?[*]const u8, message_bytes: usize) c_int {
    const text: []const u8 = if (message) |m| m[0..message_bytes] else "";
    return code(stream_export.failWith(producer, errno, text));
}

/// Calls `stream->release` if the stream is not released; NULL is a no-op.
export fn abd_array_stream_release(stream: ?*abi.ArrowArrayStream) void {
    const s = stream orelse return;
    if (s.release) |release| release(s);
}

export fn abd_device_array_stream_release(stream: ?*abi.ArrowDeviceArrayStream) void {
    const s = stream orelse return;
    if (s.release) |release| release(s);
}

/// Moves the stream at `stream` (kind 0: ArrowArrayStream, 1:
/// ArrowDeviceArrayStream) into a new imported stream. The caller's struct
/// is left released, success or not.
export fn abd_stream_import(kind: c_int, stream: ?*anyopaque, out: ?*?*stream_import.Imported) c_int {
    const target = out orelse return code(status.fail(.invalid_argument, "out stream pointer is NULL", .{}));
    const k = std.enums.fromInt(stream_import.Kind, kind) orelse return code(status.fail(.invalid_argument, "stream kind {d} is not 0 (array) or 1 (device)", .{kind}));
    return code(stream_import.import(k, stream, target));
}

/// Imported stream facts, as f64 words: serial, kind, device_type.
export fn abd_stream_import_info(imported: *stream_import.Imported, out: [*]f64) void {
    out[0] = @floatFromInt(imported.serial);
    out[1] = @floatFromInt(@intFromEnum(imported.kind));
    out[2] = @floatFromInt(imported.device_type);
}

/// The stream's schema (fetched on first call), as an address in `out[0]`;
/// the stream owns it until it is released or moved out.
export fn abd_stream_import_schema(imported: *stream_import.Imported, out: [*]f64) c_int {
    var schema: *abi.ArrowSchema = undefined;
    const s = stream_import.schemaOf(imported, &schema);
    if (s == .ok) out[0] = @floatFromInt(@intFromPtr(schema));
    return code(s);
}

/// Pulls the next batch on this thread into a new owner (`out[0]`, 0 at the
/// end), validated at `level`.
export fn abd_stream_import_next(imported: *stream_import.Imported, level: c_int, out: [*]f64) c_int {
    const lvl = levelFrom(level) orelse return code(status.fail(.invalid_argument, "validation level {d} is not 0..3", .{level}));
    var owner: ?*Owner = null;
    const s = stream_import.next(imported, lvl, &owner);
    if (owner) |o| owner_mod.noteHanded(o);
    out[0] = @floatFromInt(@intFromPtr(owner));
    return code(s);
}

/// A zero-length batch shaped like the stream's schema, in a new owner
/// (`out[0]`), validated at `level`; the stream's position is unchanged.
export fn abd_stream_import_empty_batch(imported: *stream_import.Imported, level: c_int, out: [*]f64) c_int {
    const lvl = levelFrom(level) orelse return code(status.fail(.invalid_argument, "validation level {d} is not 0..3", .{level}));
    var owner: ?*Owner = null;
    const s = stream_import.emptyBatch(imported, lvl, &owner);
    out[0] = @floatFromInt(@intFromPtr(owner));
    return code(s);
}

/// Starts pulling the next batch on the stream's worker thread; the JS
/// queue reports it done (tag 2), then `abd_stream_import_take_pull`.
export fn abd_stream_import_pull(imported: *stream_import.Imported, level: c_int) c_int {
    const lvl = levelFrom(level) orelse return code(status.fail(.invalid_argument, "validation level {d} is not 0..3", .{level}));
    return code(stream_import.pull(imported, lvl));
}

/// From now on, each batch the stream's worker pulls is copied to host
/// memory on the worker (device_transfer.toHost; host-readable batches
/// become views), and the device batch released once copied: the copy of
/// the batch read ahead overlaps JS's use of the previous one.
export fn abd_stream_import_copy_pulls_to_host(imported: *stream_import.Imported) void {
    stream_import.setPullTransform(imported, pullToHost);
}

fn pullToHost(pulled: *Owner, level: validate.Level, out: *?*Owner) Status {
    defer pulled.release();
    out.* = null;
    var schema: abi.ArrowSchema = .empty;
    var array: abi.ArrowDeviceArray = .empty;
    const copied = device_transfer.toHost(pulled, null, &schema, &array);
    if (copied != .ok) return copied;
    return owner_mod.import(&schema, &array, level, out);
}

/// Takes a finished background pull: its status (and message, as this
/// thread's last error) and owner in `out[0]` (0 at the end or on error).
export fn abd_stream_import_take_pull(imported: *stream_import.Imported, out: [*]f64) c_int {
    var owner: ?*Owner = null;
    const s = stream_import.takePull(imported, &owner);
    if (owner) |o| owner_mod.noteHanded(o);
    out[0] = @floatFromInt(@intFromPtr(owner));
    return code(s);
}

/// Where the background pull is: 0 idle, 1 queued, 2 running, 3 ready (to
/// take with `abd_stream_import_take_pull`).
export fn abd_stream_import_pull_state(imported: *stream_import.Imported) c_int {
    return @intFromEnum(stream_import.pullState(imported));
}

/// JS will wait for the current background pull: its end is posted to the
/// JS work queue from now on. Returns the pull state (3: ready now).
export fn abd_stream_import_wait(imported: *stream_import.Imported) c_int {
    return @intFromEnum(stream_import.wait(imported));
}

/// After a callback_error: the producer's errno in `out_errno` and its
/// get_last_error text (NULL if none). Valid until the next call.
export fn abd_stream_import_producer_error(imported: *stream_import.Imported, out_errno: *c_int) ?[*:0]const u8 {
    out_errno.* = imported.producer_errno;
    return if (imported.producer_error) |text| text.ptr else null;
}

/// Releases the producer's stream once (see stream_import.release).
export fn abd_stream_import_release(imported: *stream_import.Imported) void {
    stream_import.release(imported);
}

/// Relays the producer's stream struct, unconverted, to `out` and frees the
/// imported stream.
export fn abd_stream_import_move(imported: *stream_import.Imported, out: ?*anyopaque) c_int {
    const target = out orelse return code(status.fail(.invalid_argument, "out stream pointer is NULL", .{}));
    return code(stream_import.moveOut(imported, target));
}

/// Moves `source` in; fills `out` with a CPU ArrowDeviceArrayStream over it.
export fn abd_stream_to_device(source: ?*abi.ArrowArrayStream, out: ?*abi.ArrowDeviceArrayStream) c_int {
    const s = source orelse return code(status.fail(.invalid_argument, "source stream pointer is NULL", .{}));
    const target = out orelse {
        abd_array_stream_release(s);
        return code(status.fail(.invalid_argument, "out stream pointer is NULL", .{}));
    };
    return code(stream_convert.cpuAsDevice(s, target));
}

/// Moves `source` (a host-readable device stream) in; fills `out` with a
/// plain ArrowArrayStream over it.
export fn abd_stream_from_device(source: ?*abi.ArrowDeviceArrayStream, out: ?*abi.ArrowArrayStream) c_int {
    const s = source orelse return code(status.fail(.invalid_argument, "source stream pointer is NULL", .{}));
    const target = out orelse {
        abd_device_array_stream_release(s);
        return code(status.fail(.invalid_argument, "out stream pointer is NULL", .{}));
    };
    return code(stream_convert.deviceAsCpu(s, target));
}


// ---------------------------------------------------------------------------
// Device streams from JS: JS-produced streams whose batches are
// arrays made elsewhere (device copies from toDevice, C producers' arrays),
// moved whole into get_next's `out`. JS thread only, as the other answers.
// See stream/export.zig `deliverArray` and schema_match.zig.
// ---------------------------------------------------------------------------

/// `abd_stream_export_create` with the stream's schema read from the C
/// `schema` (copied; the caller keeps it).
export fn abd_stream_export_create_from_schema(kind: c_int, device_type: i32, schema: ?*const abi.ArrowSchema, source_is_async: bool, js_key: f64, out: ?*anyopaque) c_int {
    const target = out orelse return code(status.fail(.invalid_argument, "out stream pointer is NULL", .{}));
    const s = schema orelse return code(status.fail(.invalid_argument, "schema pointer is NULL", .{}));
    const k = std.enums.fromInt(stream_export.Kind, kind) orelse return code(status.fail(.invalid_argument, "stream kind {d} is not 0 (array) or 1 (device)", .{kind}));
    return code(stream_export.createFromSchema(k, device_type, s, source_is_async, @intFromFloat(js_key), target));
}

/// Answers the producer's pending get_next by moving `array` (device type,
/// id and sync event included) into the consumer's `out`; `array` is left
/// released. `schema` (optional) must match the stream's. On failure the
/// stream fails with that error and `array` is left as it was.
export fn abd_stream_export_deliver_array(producer: *stream_export.Producer, schema: ?*const abi.ArrowSchema, array: ?*abi.ArrowDeviceArray) c_int {
    const a = array orelse return code(status.fail(.invalid_argument, "array pointer is NULL", .{}));
    return code(stream_export.deliverArray(producer, schema, a));
}

// ---------------------------------------------------------------------------
// Stream pulls in one call: get_next, validation and the owner
// snapshot a JS handle reads, for a stream read on the JS thread.
// ---------------------------------------------------------------------------

/// `abd_stream_import_next`, then `abd_owner_snapshot(owner, out, capacity,
/// 2)` of the new batch: `head[0]` is the owner (0 at the end), `head[1]`
/// the words its snapshot needs (0 at the end). The owner's reference (the
/// caller's) stays a plain one. When the snapshot did not fit, nothing was
/// written to `out`: call `abd_owner_snapshot` with room.
export fn abd_stream_import_next_snapshot(imported: *stream_import.Imported, level: c_int, out: [*]f64, capacity: u32, head: [*]f64) c_int {
    head[0] = 0;
    head[1] = 0;
    const lvl = levelFrom(level) orelse return code(status.fail(.invalid_argument, "validation level {d} is not 0..3", .{level}));
    var owner: ?*Owner = null;
    const s = stream_import.next(imported, lvl, &owner);
    if (s != .ok) return code(s);
    if (owner) |o| {
        owner_mod.noteHanded(o);
        head[0] = @floatFromInt(@intFromPtr(o));
        head[1] = @floatFromInt(c_api_import.abd_owner_snapshot(o, out, capacity, 2));
    }
    return code(s);
}
