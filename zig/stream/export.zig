//! JS-produced streams: an ArrowArrayStream or ArrowDeviceArrayStream whose
//! batches come from a JS source (an apache-arrow Table, iterable or
//! reader; see ts/arrow/stream_export.ts). This module is the C face of
//! such a stream and the hand-off between the consumer's thread and JS.
//!
//! Ownership. `create` fills the caller's stream struct; its `private_data`
//! is a heap `Producer` that the stream's release frees. The JS source is
//! kept alive on the JS side under a keepalive id (`js_key`); the release
//! queues that id (keepalive.zig), and JS then drops the source and closes
//! its iterator. Batches are built by export/array.zig into the consumer's
//! `out` and own nothing of the stream: they outlive it.
//!
//! Threads. Which thread may call what:
//! - get_schema, get_last_error, release: any thread. get_schema never
//!   needs JS: the schema is rebuilt from a plan kept here.
//! - get_next on the JS thread (inside an FFI call from JS): the registered
//!   non-threadsafe JS callback (`setSyncProducer`) is called synchronously
//!   and answers before it returns. A source that is async cannot answer
//!   synchronously: the call fails with EDEADLK instead of hanging.
//! - get_next on any other thread: the request is posted to the JS work
//!   queue (js_queue.zig), which wakes JS through a threadsafe callback;
//!   the calling thread blocks on a condition until JS answers
//!   (`deliver` / `end` / `fail`), spinning briefly first (js_queue.zig
//!   `spin_ns`). This needs the JS event loop to run: a
//!   JS thread blocked in a native call that waits for this consumer
//!   deadlocks, as would any such wait. JS marks such calls
//!   (`js_blocked`, ts `callBlocking`): get_next from another thread
//!   then fails at once with EDEADLK instead of waiting.
//! - deliver, end, fail (the answers): the JS thread only.
//! Calls on one stream must be serialized by the consumer (the spec's
//! rule); a get_next that overlaps another fails with EINVAL.
//!
//! Errors. A failed batch (a JS exception, a batch that cannot be
//! exported) is final: that get_next and every later one return the same
//! errno, and get_last_error returns the same message. At the end, get_next
//! returns 0 with a released array, again on every later call.

const std = @import("std");
const abi = @import("../core/abi.zig");
const status = @import("../core/status.zig");
const counters = @import("../core/counters.zig");
const keepalive = @import("../export/keepalive.zig");
const export_array = @import("../export/array.zig");
const export_schema = @import("../export/schema.zig");
const schema_copy = @import("../export/schema_copy.zig");
const schema_match = @import("schema_match.zig");
const js_queue = @import("../core/js_queue.zig");
const js_context = @import("../core/js_context.zig");
const sync = @import("../core/sync.zig");
const struct_probe = @import("../validate/probe.zig");
const Status = status.Status;
const fail = status.fail;

const allocator = std.heap.c_allocator;

/// An owned NUL-terminated copy of `bytes`; null when memory is short
/// (then callers report no message rather than fail).
fn copyZ(bytes: []const u8) ?[:0]u8 {
    return allocator.dupeSentinel(u8, bytes, 0) catch null;
}

pub const Kind = abi.StreamKind;

/// How many synchronous native calls JS is inside that may wait for
/// consumers of JS-produced streams (ts `callBlocking`; nested calls count).
/// While non-zero, get_next from other threads fails with EDEADLK.
pub var js_blocked = std.atomic.Value(u32).init(0);
/// get_next calls refused because of `js_blocked`, ever (JS compares before
/// and after a call).
pub var blocked_refusals = std.atomic.Value(u64).init(0);

/// The non-threadsafe JS callback that answers a get_next made on the JS
/// thread: it must call `deliver`, `end` or `fail` before returning.
pub const SyncProducer = *const fn (js_key: f64, producer: *Producer) callconv(.c) void;

/// One per JS thread (js_context.zig): each thread answers for the streams
/// it created, with its own callback.
var sync_producers: [js_context.max_contexts]std.atomic.Value(?SyncProducer) = @splat(.init(null));

/// Sets the calling JS thread's callback.
pub fn setSyncProducer(callback: ?SyncProducer) void {
    sync_producers[js_context.current()].store(callback, .release);
}

/// js_context close hook.
pub fn forgetSyncProducer(context: u32) void {
    sync_producers[context].store(null, .release);
}

const ended_message = "the JS thread (Worker or main thread) that produces this stream has ended, so no batch can come; keep the producing thread alive until the consumer released the stream";

/// A get_next queued for a JS thread that ended: answered with a failure,
/// so the consumer waiting for it returns instead of hanging.
pub fn orphaned(entry: js_queue.Entry) void {
    if (entry.tag != .stream_export_request) return;
    const self: *Producer = @ptrFromInt(entry.address);
    _ = failWith(self, errno_io, ended_message);
}

const errno_io: c_int = @import("../core/errno.zig").native.EIO;

const Phase = enum { streaming, ended, failed };

/// One get_next waiting for its answer. Lives on the caller's stack.
const Request = struct {
    /// The consumer's `*ArrowArray` (kind array) or `*ArrowDeviceArray`.
    out: *anyopaque,
    /// Set (with `errno`) under the producer's mutex; also read without it
    /// while the consumer spins.
    answered: std.atomic.Value(bool) = .init(false),
    errno: c_int = 0,

    fn isAnswered(self: *const Request) bool {
        return self.answered.load(.acquire);
    }
};

pub const Producer = struct {
    /// Guards every field below that JS and the consumer both touch:
    /// `phase`, `request`, `failure*`, `last_error`.
    mutex: sync.Mutex = .{},
    answered: sync.Condition = .{},
    kind: Kind,
    device_type: abi.DeviceType,
    /// The JS source's keepalive id.
    js_key: u64,
    /// The thread that created the stream: the one JS runs on.
    js_thread: usize,
    /// Its JS context (js_context.zig): where requests are queued.
    context: u32,
    source_is_async: bool,
    /// export/schema.zig plan of the stream's schema (owned).
    schema_plan: []u8,
    phase: Phase = .streaming,
    request: ?*Request = null,
    /// The final failure's message and errno (owned), once failed.
    failure: ?[:0]u8 = null,
    failure_errno: c_int = 0,
    /// What get_last_error returns; points at `failure` or `transient`.
    last_error: ?[*:0]const u8 = null,
    /// A failure of one call only (misuse, wrong thread), owned.
    transient: ?[:0]u8 = null,
    /// The schema built from `schema_plan`, made on the first array handed
    /// out by `deliverArray` to check arrays' schemas against (owned).
    shape: abi.ArrowSchema = .empty,

    fn destroy(self: *Producer) void {
        if (self.shape.release) |release| release(&self.shape);
        if (self.failure) |f| allocator.free(f);
        if (self.transient) |t| allocator.free(t);
        allocator.free(self.schema_plan);
        allocator.destroy(self);
    }

    /// Starts a call: the previous call's message is no longer valid.
    fn beginCall(self: *Producer) void {
        self.mutex.lock();
        defer self.mutex.unlock();
        if (self.transient) |t| allocator.free(t);
        self.transient = null;
        self.last_error = null;
    }

    /// Records this thread's last library error as the call's message and
    /// returns its errno. The failure concerns this call only.
    fn callFailed(self: *Producer, code: Status) c_int {
        self.mutex.lock();
        defer self.mutex.unlock();
        if (self.transient) |t| allocator.free(t);
        self.transient = copyZ(std.mem.span(status.lastMessage()));
        self.last_error = if (self.transient) |t| t.ptr else null;
        return code.errno();
    }

    /// Marks the stream failed for good (mutex held).
    fn failLocked(self: *Producer, errno: c_int, message: []const u8) void {
        self.phase = .failed;
        self.failure_errno = if (errno > 0) errno else errno_io;
        if (self.failure) |f| allocator.free(f);
        self.failure = copyZ(message);
        self.last_error = if (self.failure) |f| f.ptr else null;
    }

    /// Marks `out` as the end of the stream (a released array).
    fn writeEnd(self: *const Producer, out: *anyopaque) void {
        switch (self.kind) {
            .array => @as(*abi.ArrowArray, @ptrCast(@alignCast(out))).* = .empty,
            .device => {
                const device: *abi.ArrowDeviceArray = @ptrCast(@alignCast(out));
                device.* = .empty;
                device.device_type = self.device_type;
            },
        }
    }

    fn getSchema(self: *Producer, out: *abi.ArrowSchema) c_int {
        self.beginCall();
        const built = export_schema.build(self.schema_plan, out);
        if (built != .ok) return self.callFailed(built);
        return 0;
    }

    fn getNext(self: *Producer, out: *anyopaque) c_int {
        self.beginCall();
        self.mutex.lock();
        if (self.request != null) {
            self.mutex.unlock();
            self.writeEnd(out);
            return self.callFailed(fail(.invalid_argument, "get_next was called while another call on this stream is in progress; the C stream interface requires consumers to serialize calls", .{}));
        }
        switch (self.phase) {
            .ended => {
                self.writeEnd(out);
                self.mutex.unlock();
                return 0;
            },
            .failed => {
                self.writeEnd(out);
                self.last_error = if (self.failure) |f| f.ptr else null;
                const errno = self.failure_errno;
                self.mutex.unlock();
                return errno;
            },
            .streaming => {},
        }
        var request: Request = .{ .out = out };
        if (sync.currentThread() == self.js_thread) {
            // Inside an FFI call from JS: JS cannot run anything else until
            // we return, so it must answer now, synchronously.
            if (self.source_is_async) {
                self.mutex.unlock();
                self.writeEnd(out);
                return self.callFailed(fail(.wrong_thread, "get_next was called on the JS thread, but this stream's source is async: its next batch needs the JS event loop, which this call is blocking. Call get_next from another thread, or export a sync source", .{}));
            }
            const produce = sync_producers[self.context].load(.acquire) orelse {
                self.mutex.unlock();
                self.writeEnd(out);
                return self.callFailed(fail(.internal, "no JS producer callback is registered for JS-produced streams", .{}));
            };
            self.request = &request;
            self.mutex.unlock();
            produce(@floatFromInt(self.js_key), self);
            self.mutex.lock();
            if (!request.isAnswered()) {
                self.request = null;
                self.mutex.unlock();
                self.writeEnd(out);
                return self.callFailed(fail(.internal, "the JS stream source returned without answering get_next", .{}));
            }
        } else {
            // Another thread, while JS is inside a synchronous native call
            // that said it may wait for consumers (`callBlocking`): JS
            // cannot answer before that call returns, so waiting would
            // deadlock. Refuse at once instead.
            if (js_blocked.load(.acquire) > 0) {
                _ = blocked_refusals.fetchAdd(1, .monotonic);
                self.mutex.unlock();
                self.writeEnd(out);
                return self.callFailed(fail(.wrong_thread, "get_next was called on a native thread while the JS thread is blocked in a synchronous native call (callBlocking) that waits for this consumer; JS cannot produce the batch until that call returns. Run the call on a native thread (JS free to answer), or let the consumer call get_next on the calling thread only (DuckDB: SET threads = 1)", .{}));
            }
            // Another thread: queue the request, wake JS, wait for the answer.
            self.request = &request;
            if (!js_context.isOpen(self.context)) {
                self.request = null;
                self.writeEnd(out);
                self.failLocked(errno_io, ended_message);
                const errno = self.failure_errno;
                self.mutex.unlock();
                return errno;
            }
            // Posted without the lock: a JS thread that ends meanwhile
            // answers queued requests (`orphaned`), which takes it.
            self.mutex.unlock();
            const posted = js_queue.postTo(self.context, .{ .tag = .stream_export_request, .key = self.js_key, .address = @intFromPtr(self) });
            self.mutex.lock();
            if (!posted and !request.isAnswered()) {
                self.request = null;
                self.writeEnd(out);
                if (!js_context.isOpen(self.context)) {
                    self.failLocked(errno_io, ended_message);
                    const errno = self.failure_errno;
                    self.mutex.unlock();
                    return errno;
                }
                self.mutex.unlock();
                return self.callFailed(fail(.out_of_memory, "out of memory queueing get_next for the JS thread", .{}));
            }
            // JS polls for work for a while after answering, so the next
            // answer often comes within microseconds: spin before sleeping.
            self.mutex.unlock();
            _ = js_queue.spinUntil(@as(*const Request, &request), Request.isAnswered);
            self.mutex.lock();
            while (!request.isAnswered()) self.answered.wait(&self.mutex);
        }
        self.request = null;
        const errno = request.errno;
        self.mutex.unlock();
        return errno;
    }

    /// The pending request, for an answer from JS (mutex held).
    fn pendingRequest(self: *Producer) ?*Request {
        const request = self.request orelse return null;
        if (request.isAnswered()) return null;
        return request;
    }

    fn answer(self: *Producer, request: *Request, errno: c_int) void {
        request.errno = errno;
        request.answered.store(true, .release);
        self.answered.signal();
    }
};

fn noRequest() Status {
    return fail(.invalid_argument, "this stream has no get_next waiting for an answer", .{});
}

/// Answers the pending get_next with the batch described by `plan`
/// (export/array.zig), built zero-copy into the consumer's `out`. If the
/// build fails, the stream fails with that error and the status is
/// returned (the caller then forgets `keepalive_id`).
pub fn deliver(self: *Producer, plan: []const f64, keepalive_id: u64, device_id: i64) Status {
    self.mutex.lock();
    defer self.mutex.unlock();
    const request = self.pendingRequest() orelse return noRequest();
    const built = switch (self.kind) {
        .array => export_array.build(plan, .{ .keepalive_id = keepalive_id }, @ptrCast(@alignCast(request.out))),
        .device => export_array.buildDevice(plan, .{ .keepalive_id = keepalive_id }, .{
            .device_type = self.device_type,
            .device_id = device_id,
        }, @ptrCast(@alignCast(request.out))),
    };
    if (built != .ok) {
        self.writeEnd(request.out);
        self.failLocked(built.errno(), std.mem.span(status.lastMessage()));
        self.answer(request, self.failure_errno);
        return built;
    }
    self.answer(request, 0);
    return .ok;
}

/// Answers the pending get_next by moving `array` into the consumer's `out`
/// (the spec's move: a bitwise copy, then `array.array.release = NULL`),
/// device id and sync event included. The array was made elsewhere (a
/// device copy, a C producer's array) and keeps its own release, which the
/// consumer now calls, once. Kind device: its device_type must be the
/// stream's (its device_id may be any). Kind array: it must be a CPU array
/// (its ArrowArray is moved). `schema`, when given, must describe the same
/// layout as the stream's schema (schema_match.zig). If a check fails, the
/// stream fails for good with that error, `array` is left as it was (its
/// holder still releases it) and the status is returned.
pub fn deliverArray(self: *Producer, schema: ?*const abi.ArrowSchema, array: *abi.ArrowDeviceArray) Status {
    self.mutex.lock();
    defer self.mutex.unlock();
    const request = self.pendingRequest() orelse return noRequest();
    const checked = checkArray(self, schema, array);
    if (checked != .ok) {
        self.writeEnd(request.out);
        self.failLocked(checked.errno(), std.mem.span(status.lastMessage()));
        self.answer(request, self.failure_errno);
        return checked;
    }
    switch (self.kind) {
        .array => @as(*abi.ArrowArray, @ptrCast(@alignCast(request.out))).* = array.array,
        .device => @as(*abi.ArrowDeviceArray, @ptrCast(@alignCast(request.out))).* = array.*,
    }
    array.array.release = null;
    self.answer(request, 0);
    return .ok;
}

fn deviceLabel(device_type: abi.DeviceType) []const u8 {
    return abi.deviceTypeName(device_type) orelse "unknown";
}

/// Why `array` (with `schema`) cannot be this stream's next batch (mutex
/// held; builds `shape` on first use).
fn checkArray(self: *Producer, schema: ?*const abi.ArrowSchema, array: *const abi.ArrowDeviceArray) Status {
    if (array.array.release == null) return fail(.released, "the array to hand out is released (moved out or released already)", .{});
    const want = if (self.kind == .array) abi.device_cpu else self.device_type;
    if (array.device_type != want) {
        const stream_name = if (self.kind == .array) "ArrowArrayStream" else "ArrowDeviceArrayStream";
        return fail(.invalid_argument, "the array is on device {s} ({d}) id {d}, but this {s}'s device_type is {s} ({d})", .{
            deviceLabel(array.device_type), array.device_type, array.device_id, stream_name, deviceLabel(want), want,
        });
    }
    const given = schema orelse return .ok;
    if (self.shape.release == null) {
        const built = export_schema.build(self.schema_plan, &self.shape);
        if (built != .ok) return built;
    }
    return schema_match.check(&self.shape, given);
}

/// Answers the pending get_next with the end of the stream.
pub fn end(self: *Producer) Status {
    self.mutex.lock();
    defer self.mutex.unlock();
    const request = self.pendingRequest() orelse return noRequest();
    self.phase = .ended;
    self.writeEnd(request.out);
    self.answer(request, 0);
    return .ok;
}

/// Answers the pending get_next with a failure: `errno` (EIO if not
/// positive) and `message`, returned by every later get_next too.
pub fn failWith(self: *Producer, errno: c_int, message: []const u8) Status {
    self.mutex.lock();
    defer self.mutex.unlock();
    const request = self.pendingRequest() orelse return noRequest();
    self.writeEnd(request.out);
    self.failLocked(errno, message);
    self.answer(request, self.failure_errno);
    return .ok;
}

/// The JS thread (js_context.zig) that produces `stream` (an
/// ArrowArrayStream for kind array, an ArrowDeviceArrayStream for kind
/// device), when this module built it; 0 for any other stream.
pub fn jsContextOf(kind: Kind, stream: *const anyopaque) u32 {
    const private_data = switch (kind) {
        .array => blk: {
            const s: *const abi.ArrowArrayStream = @ptrCast(@alignCast(stream));
            if (s.release != &ArrayStreamCallbacks.release) return 0;
            break :blk s.private_data;
        },
        .device => blk: {
            const s: *const abi.ArrowDeviceArrayStream = @ptrCast(@alignCast(stream));
            if (s.release != &DeviceStreamCallbacks.release) return 0;
            break :blk s.private_data;
        },
    };
    const self = producerOf(private_data) orelse return 0;
    return self.context;
}

fn producerOf(private_data: ?*anyopaque) ?*Producer {
    return @ptrCast(@alignCast(private_data orelse return null));
}

pub fn released() c_int {
    return Status.released.errno();
}

fn releaseProducer(self: *Producer) void {
    // A release during a call would break the spec's serialization rule.
    std.debug.assert(self.request == null);
    keepalive.finish(self.js_key);
    self.destroy();
    counters.add(.live_stream_exports, -1);
}

const ArrayStreamCallbacks = struct {
    fn getSchema(stream: *abi.ArrowArrayStream, out: *abi.ArrowSchema) callconv(.c) c_int {
        const self = producerOf(stream.private_data) orelse return released();
        return self.getSchema(out);
    }
    fn getNext(stream: *abi.ArrowArrayStream, out: *abi.ArrowArray) callconv(.c) c_int {
        const self = producerOf(stream.private_data) orelse return released();
        return self.getNext(out);
    }
    fn getLastError(stream: *abi.ArrowArrayStream) callconv(.c) ?[*:0]const u8 {
        const self = producerOf(stream.private_data) orelse return null;
        return self.last_error;
    }
    fn release(stream: *abi.ArrowArrayStream) callconv(.c) void {
        const self = producerOf(stream.private_data) orelse return;
        stream.release = null;
        stream.private_data = null;
        releaseProducer(self);
    }
};

const DeviceStreamCallbacks = struct {
    fn getSchema(stream: *abi.ArrowDeviceArrayStream, out: *abi.ArrowSchema) callconv(.c) c_int {
        const self = producerOf(stream.private_data) orelse return released();
        return self.getSchema(out);
    }
    fn getNext(stream: *abi.ArrowDeviceArrayStream, out: *abi.ArrowDeviceArray) callconv(.c) c_int {
        const self = producerOf(stream.private_data) orelse return released();
        return self.getNext(out);
    }
    fn getLastError(stream: *abi.ArrowDeviceArrayStream) callconv(.c) ?[*:0]const u8 {
        const self = producerOf(stream.private_data) orelse return null;
        return self.last_error;
    }
    fn release(stream: *abi.ArrowDeviceArrayStream) callconv(.c) void {
        const self = producerOf(stream.private_data) orelse return;
        stream.release = null;
        stream.private_data = null;
        releaseProducer(self);
    }
};

/// Fills `out` (an ArrowArrayStream for kind array, an
/// ArrowDeviceArrayStream for kind device) with a stream whose schema is
/// `schema_plan` (copied) and whose batches JS produces under `js_key`.
/// Must be called on the JS thread: it is recorded as such. On error `out`
/// is untouched and nothing is allocated.
pub fn create(kind: Kind, device_type: abi.DeviceType, schema_plan: []const u8, source_is_async: bool, js_key: u64, out: *anyopaque) Status {
    if (device_type <= 0) return fail(.unknown_device, "device_type {d} is not a device type", .{device_type});
    // Check the plan once now, so that get_schema can only fail for memory.
    var probe: abi.ArrowSchema = .empty;
    const checked = export_schema.build(schema_plan, &probe);
    if (checked != .ok) return checked;
    probe.release.?(&probe);

    const plan_copy = allocator.dupe(u8, schema_plan) catch return fail(.out_of_memory, "out of memory copying a stream's schema plan", .{});
    const self = allocator.create(Producer) catch {
        allocator.free(plan_copy);
        return fail(.out_of_memory, "out of memory allocating a stream producer", .{});
    };
    self.* = .{
        .kind = kind,
        .device_type = device_type,
        .js_key = js_key,
        .js_thread = sync.currentThread(),
        .context = js_context.current(),
        .source_is_async = source_is_async,
        .schema_plan = plan_copy,
    };
    switch (kind) {
        .array => struct_probe.noteArrayStreamCallback(@intFromPtr(&ArrayStreamCallbacks.getSchema)),
        .device => {},
    }
    switch (kind) {
        .array => @as(*abi.ArrowArrayStream, @ptrCast(@alignCast(out))).* = .{
            .get_schema = ArrayStreamCallbacks.getSchema,
            .get_next = ArrayStreamCallbacks.getNext,
            .get_last_error = ArrayStreamCallbacks.getLastError,
            .release = ArrayStreamCallbacks.release,
            .private_data = self,
        },
        .device => @as(*abi.ArrowDeviceArrayStream, @ptrCast(@alignCast(out))).* = .{
            .device_type = device_type,
            .get_schema = DeviceStreamCallbacks.getSchema,
            .get_next = DeviceStreamCallbacks.getNext,
            .get_last_error = DeviceStreamCallbacks.getLastError,
            .release = DeviceStreamCallbacks.release,
            .private_data = self,
        },
    }
    counters.add(.live_stream_exports, 1);
    return .ok;
}

/// `create`, with the stream's schema taken from `schema` (a C schema, read
/// and copied into a plan; the caller keeps it).
pub fn createFromSchema(kind: Kind, device_type: abi.DeviceType, schema: *const abi.ArrowSchema, source_is_async: bool, js_key: u64, out: *anyopaque) Status {
    var plan: std.ArrayList(u8) = .empty;
    defer plan.deinit(allocator);
    const written = schema_copy.writePlan(&plan, schema);
    if (written != .ok) return written;
    return create(kind, device_type, plan.items, source_is_async, js_key, out);
}
