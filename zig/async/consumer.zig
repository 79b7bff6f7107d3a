//! This library as the *consumer* of an async device stream: an
//! `ArrowAsyncDeviceStreamHandler` implemented natively, given to any C
//! producer, read by JS.
//!
//! Threads. The producer calls the handler's callbacks from its own threads,
//! one at a time but not necessarily from the same thread. They only queue
//! (schema, tasks, error, end, release) under `mutex` and wake JS
//! (js_wake.zig); they never call JS. Everything else runs on the JS thread:
//! `poll` reads a snapshot, `take` pops a task and extracts its data (so
//! `extract_data` of wanted tasks runs on the JS thread), `request` and
//! `cancel` call into the producer. Calls into the producer go through a
//! gate (producer_gate.zig) that the handler's release closes, so none is in
//! progress once the producer may free its `ArrowAsyncProducer`. No lock of
//! this module is held while calling the producer or a task.
//!
//! Tasks. Each task's `extract_data` is called exactly once: with an array
//! on the JS thread when JS takes it, or with NULL ("not wanted") when the
//! stream is cancelled: on the JS thread for the tasks queued at that
//! moment, and on the producer's thread, inside `on_next_task`, for tasks
//! that arrive afterwards. A task refused by a non-zero return of
//! `on_next_task` is extracted with NULL right there, before the return
//! (on the producer's thread, outside our lock), as the spec asks: a
//! producer that cleans up in extract_data does not leak, and one that
//! reclaims refused tasks itself (Arrow C++) sees its task already
//! extracted through the struct it passed (`private_data` is its own).
//!
//! Back-pressure. The consumer counts what it requested and what it
//! received; a producer that sends more tasks than requested is refused
//! (EPROTO: the protocol allows no more) and the stream fails.
//!
//! Lifetime. The consumer holds two references: the producer's, dropped by
//! the handler's release, and JS's, dropped by `close`. Whichever comes last
//! frees it. Strings and metadata the producer passes are copied before the
//! callback returns.

const std = @import("std");
const abi = @import("../core/abi.zig");
const status = @import("../core/status.zig");
const counters = @import("../core/counters.zig");
const sync = @import("../core/sync.zig");
const js_wake = @import("js_wake.zig");
const metadata_copy = @import("metadata_copy.zig");
const schema_copy = @import("../export/schema_copy.zig");
const owner_mod = @import("../import/owner.zig");
const SharedSchema = @import("../stream/shared_schema.zig").SharedSchema;
const validate = @import("../validate/validate.zig");
const Gate = @import("producer_gate.zig").Gate;
const Status = status.Status;
const fail = status.fail;

const EINVAL: c_int = @import("../core/errno.zig").native.EINVAL;
const ENOMEM: c_int = @import("../core/errno.zig").native.ENOMEM;
pub const EPROTO: c_int = @import("../core/errno.zig").native.EPROTO;

/// Longest error message kept from a producer; longer ones are cut.
pub const max_message_bytes = 1 << 16;

/// Words of the state snapshot `poll` writes (f64 each), shared with TS
/// through the layout manifest.
pub const StateWord = enum(u8) {
    /// 1 once on_schema arrived.
    schema_received,
    /// Tasks waiting for JS.
    queued,
    /// 1 once the producer sent the NULL task (end of stream).
    ended,
    /// 1 once on_error arrived, or the producer broke the protocol.
    errored,
    /// 1 once the producer called the handler's release.
    released,
    /// Sum of every `request(n)` made so far.
    requested,
    /// Non-NULL tasks received.
    received,
    /// Tasks JS took (extracted with an array).
    taken,
    /// Tasks extracted with NULL because the stream was cancelled.
    discarded,
    /// The producer's device type (0 before on_schema).
    device_type,
    /// 1 once JS cancelled.
    cancelled,
    /// Non-zero: what a task's extract_data returned instead of 0.
    extract_failed,
    /// The error code of on_error (or of a protocol violation).
    error_code,
    /// 1 when the error was detected here (a protocol violation), not
    /// reported by the producer through on_error.
    error_local,
    /// Size of the metadata of the task taken last (-1: it had none).
    task_metadata_bytes,
    /// Notifications sent to JS so far (diagnostics: news that arrives
    /// while one is pending, or while JS is busy, costs none).
    wakes,
    /// `takeMany` calls that took at least one task (diagnostics: JS
    /// takes every task ready in one call).
    take_turns,
};
pub const state_words = @typeInfo(StateWord).@"enum".field_names.len;

/// Byte strings `string` exposes: copies owned by the consumer.
pub const StringId = enum(u8) {
    /// ArrowAsyncProducer.additional_metadata (valid while the consumer lives).
    producer_metadata,
    /// on_error's message (NUL-terminated copy).
    error_message,
    /// on_error's metadata.
    error_metadata,
    /// The metadata of the task `take` returned last (until the next take).
    task_metadata,
};

const Queued = struct {
    task: abi.ArrowAsyncTask,
    metadata: ?[]u8,
};

pub const Consumer = struct {
    /// Given to the producer. `private_data` points back here.
    handler: abi.ArrowAsyncDeviceStreamHandler,
    refs: std.atomic.Value(u32),
    waker: js_wake.Waker,
    gate: Gate = .{},

    // Guarded by `mutex`.
    mutex: sync.Mutex = .{},
    /// The stream schema (moved in by on_schema), lent to every batch JS
    /// takes rather than copied; set once, then read without the lock.
    schema: ?*SharedSchema = null,
    schema_received: bool = false,
    /// Valid while the gate is open (until the handler's release).
    producer: ?*abi.ArrowAsyncProducer = null,
    device_type: abi.DeviceType = 0,
    producer_metadata: ?[]u8 = null,
    queue: std.ArrayList(Queued) = .empty,
    head: usize = 0,
    ended: bool = false,
    released: bool = false,
    cancelled: bool = false,
    cancel_sent: bool = false,
    requested: i64 = 0,
    received: i64 = 0,
    taken: i64 = 0,
    discarded: i64 = 0,
    errored: bool = false,
    error_local: bool = false,
    error_code: c_int = 0,
    /// NUL-terminated, so JS can read it as a C string.
    error_message: ?[:0]u8 = null,
    error_metadata: ?[]u8 = null,
    extract_failed: c_int = 0,
    /// Owned by the JS thread (take/string only).
    task_metadata: ?[]u8 = null,
    /// takeMany calls that took something (JS thread only).
    take_turns: u32 = 0,

    fn fromHandler(handler: *abi.ArrowAsyncDeviceStreamHandler) *Consumer {
        return @fieldParentPtr("handler", handler);
    }

    fn queued(self: *const Consumer) usize {
        return self.queue.items.len - self.head;
    }

    /// Records an error found here (the producer broke the protocol), unless
    /// an error is already recorded. Caller holds `mutex`.
    fn failLocally(self: *Consumer, code: c_int, comptime fmt: []const u8, args: anytype) void {
        if (self.errored) return;
        self.errored = true;
        self.error_local = true;
        self.error_code = code;
        self.error_message = std.heap.c_allocator.printSentinel(fmt, args, 0) catch null;
    }

    fn unref(self: *Consumer) void {
        const before = self.refs.fetchSub(1, .acq_rel);
        std.debug.assert(before > 0);
        if (before == 1) self.destroy();
    }

    fn destroy(self: *Consumer) void {
        // Both references are gone: the producer released the handler and JS
        // closed, which cancelled and discarded every queued task.
        std.debug.assert(self.queued() == 0);
        self.queue.deinit(std.heap.c_allocator);
        if (self.schema) |shared| shared.unref(); // batches may still hold it
        metadata_copy.free(self.producer_metadata);
        metadata_copy.free(self.error_metadata);
        metadata_copy.free(self.task_metadata);
        if (self.error_message) |m| std.heap.c_allocator.free(m);
        counters.add(.live_async, -1);
        std.heap.c_allocator.destroy(self);
    }

    /// Calls the producer's `request(n)` unless the stream is over. JS thread
    /// (or the producer's thread inside on_schema). Returns whether it did.
    pub fn request(self: *Consumer, n: i64) bool {
        std.debug.assert(n > 0);
        self.mutex.lock();
        const stop = self.released or self.cancelled or self.ended or self.errored or self.producer == null;
        if (!stop) self.requested += n;
        const producer = self.producer;
        self.mutex.unlock();
        if (stop) return false;
        if (!self.gate.enter()) return false;
        defer self.gate.leave();
        producer.?.request.?(producer.?, n);
        return true;
    }

    /// Cancels the stream: tells the producer once (when it still
    /// produces), and extracts every queued task with NULL. Tasks arriving
    /// later are extracted with NULL as they come. Idempotent. JS thread.
    pub fn cancel(self: *Consumer) void {
        self.mutex.lock();
        self.cancelled = true;
        const send = !self.cancel_sent and self.producer != null and !self.released and !self.ended and !self.errored;
        if (send) self.cancel_sent = true;
        const producer = self.producer;
        const drained = self.queue.items[self.head..];
        self.discarded += @intCast(drained.len);
        // The queue's memory stays ours: nothing appends once cancelled.
        self.head = self.queue.items.len;
        self.mutex.unlock();
        if (send and self.gate.enter()) {
            defer self.gate.leave();
            producer.?.cancel.?(producer.?);
        }
        for (drained) |*item| {
            _ = item.task.extract_data.?(&item.task, null);
            metadata_copy.free(item.metadata);
        }
        self.mutex.lock();
        self.queue.clearRetainingCapacity();
        self.head = 0;
        self.mutex.unlock();
    }

    /// Pops the next task and extracts it into `array` on this thread; puts
    /// a copy of the stream schema into `schema`. Then asks the producer for
    /// one more task when `replenish`. On error nothing is left in
    /// `schema`/`array`. `words` (if given) receives the state afterwards.
    pub fn take(self: *Consumer, schema: *abi.ArrowSchema, array: *abi.ArrowDeviceArray, replenish: bool, words: ?[]f64) Status {
        const result = self.takeOne(schema, array, replenish);
        if (words) |out| self.poll(out, false);
        return result;
    }

    fn takeOne(self: *Consumer, schema: *abi.ArrowSchema, array: *abi.ArrowDeviceArray, replenish: bool) Status {
        const extracted = self.extractNext(array);
        if (extracted != .ok) return extracted;
        const copied = schema_copy.copy(&self.schema.?.schema, schema);
        if (copied != .ok) {
            array.array.release.?(&array.array);
            return copied;
        }
        if (replenish) _ = self.request(1);
        return .ok;
    }

    /// Pops the oldest queued task and extracts it into `array` on this
    /// thread (the JS thread); its metadata becomes `task_metadata`. On
    /// error nothing is left in `array`: `.out_of_range` when no task is
    /// queued, `.callback_error` when extract_data failed (the producer
    /// reports why through on_error).
    fn extractNext(self: *Consumer, array: *abi.ArrowDeviceArray) Status {
        self.mutex.lock();
        if (self.queued() == 0) {
            self.mutex.unlock();
            return fail(.out_of_range, "no task is queued", .{});
        }
        std.debug.assert(self.head < self.queue.items.len);
        var item = self.queue.items[self.head];
        self.head += 1;
        if (self.head == self.queue.items.len) {
            self.queue.clearRetainingCapacity();
            self.head = 0;
        }
        self.taken += 1;
        const index = self.taken;
        const device_type = self.device_type;
        self.mutex.unlock();

        metadata_copy.free(self.task_metadata);
        self.task_metadata = item.metadata;
        array.* = .empty;
        array.array.release = null;
        const rc = item.task.extract_data.?(&item.task, array);
        if (rc != 0) {
            if (array.array.release) |release| release(&array.array);
            array.array.release = null;
            self.mutex.lock();
            if (self.extract_failed == 0) self.extract_failed = rc;
            self.mutex.unlock();
            return fail(.callback_error, "extract_data of task {d} returned {d}", .{ index, rc });
        }
        if (array.array.release == null) return fail(.callback_error, "extract_data of task {d} returned 0 but left the array released", .{index});
        if (array.device_type != device_type) {
            const got = array.device_type;
            array.array.release.?(&array.array);
            return fail(.unknown_device, "task {d} holds an array on device type {d}, but the producer declared device type {d}", .{ index, got, device_type });
        }
        return .ok;
    }

    /// Takes every queued task, up to `max`, in one call: each is extracted
    /// on this thread (the JS thread) and imported into a new owner
    /// (owner.zig) validated at `level`, with the stream schema lent to it
    /// (shared_schema.zig: no copy per batch).
    /// `out[0]` receives how many were taken, then two words per task: the
    /// owner's address (the caller holds its one reference) and the size of
    /// the task's metadata (-1: none). A task with metadata ends the call,
    /// so `task_metadata` is the last task's. Returns the first failure
    /// after the tasks taken before it (those stay valid and are the
    /// caller's); `.callback_error` means an extract_data failed.
    /// This is the batched hand-off: one wake, one call, every ready task.
    pub fn takeMany(self: *Consumer, level: validate.Level, out: []f64, max: usize) Status {
        std.debug.assert(out.len >= 1 + 2 * max);
        var n: usize = 0;
        defer {
            out[0] = @floatFromInt(n);
            if (n > 0) self.take_turns += 1;
        }
        while (n < max) {
            var array: abi.ArrowDeviceArray = undefined;
            const extracted = self.extractNext(&array);
            if (extracted == .out_of_range) return .ok; // nothing more is ready
            if (extracted != .ok) return extracted;
            // A task is queued only after on_schema set the schema.
            var schema = self.schema.?.lend();
            var owner: ?*owner_mod.Owner = null;
            const imported = owner_mod.import(&schema, &array, level, &owner);
            if (imported != .ok) return imported; // both were released
            out[1 + 2 * n] = @floatFromInt(@intFromPtr(owner.?));
            out[2 + 2 * n] = if (self.task_metadata) |m| @floatFromInt(m.len) else -1;
            n += 1;
            if (self.task_metadata != null) return .ok;
        }
        return .ok;
    }

    /// Writes the state snapshot. `arm`: first clear the pending wake, so
    /// that any change after this snapshot wakes JS (JS arms only right
    /// before it waits: while it is busy, news costs no JS callback).
    pub fn poll(self: *Consumer, out: []f64, arm: bool) void {
        if (arm) self.waker.clear();
        self.mutex.lock();
        defer self.mutex.unlock();
        const words = [state_words]f64{
            @floatFromInt(@intFromBool(self.schema_received)),
            @floatFromInt(self.queued()),
            @floatFromInt(@intFromBool(self.ended)),
            @floatFromInt(@intFromBool(self.errored)),
            @floatFromInt(@intFromBool(self.released)),
            @floatFromInt(self.requested),
            @floatFromInt(self.received),
            @floatFromInt(self.taken),
            @floatFromInt(self.discarded),
            @floatFromInt(self.device_type),
            @floatFromInt(@intFromBool(self.cancelled)),
            @floatFromInt(self.extract_failed),
            @floatFromInt(self.error_code),
            @floatFromInt(@intFromBool(self.error_local)),
            if (self.task_metadata) |m| @floatFromInt(m.len) else -1,
            @floatFromInt(self.waker.sentCount()),
            @floatFromInt(self.take_turns),
        };
        @memcpy(out[0..state_words], &words);
    }

    /// One of the consumer's byte strings, or null.
    pub fn string(self: *Consumer, id: StringId) ?[]const u8 {
        self.mutex.lock();
        defer self.mutex.unlock();
        return switch (id) {
            .producer_metadata => self.producer_metadata,
            .error_message => self.error_message,
            .error_metadata => self.error_metadata,
            .task_metadata => self.task_metadata,
        };
    }

    /// JS lets go: cancels (unless the stream is over), discards the queue,
    /// and drops JS's reference. `handed_out == false` means no producer
    /// ever saw the handler, so none will release it: release it here.
    pub fn close(self: *Consumer, handed_out: bool) void {
        self.cancel();
        if (!handed_out) onRelease(&self.handler);
        self.unref();
    }
};

/// A new consumer whose wakes carry `token`. It starts with two references
/// (the producer's and the caller's).
pub fn create(token: u32, out: *?*Consumer) Status {
    const self = std.heap.c_allocator.create(Consumer) catch return fail(.out_of_memory, "out of memory allocating an async consumer", .{});
    self.* = .{
        .handler = .{
            .on_schema = onSchema,
            .on_next_task = onNextTask,
            .on_error = onError,
            .release = onRelease,
            .producer = null,
            .private_data = null,
        },
        .refs = .init(2),
        .waker = .init(token),
    };
    self.handler.private_data = self;
    counters.add(.live_async, 1);
    out.* = self;
    return .ok;
}

// ---------------------------------------------------------------------------
// Handler callbacks: the producer's threads, serialized.
// ---------------------------------------------------------------------------

fn onSchema(handler: *abi.ArrowAsyncDeviceStreamHandler, stream_schema: *abi.ArrowSchema) callconv(.c) c_int {
    const self = Consumer.fromHandler(handler);
    // Take the schema first, so that every path below owns (and, when it
    // refuses, releases) it.
    var moved = stream_schema.*;
    stream_schema.release = null;
    const producer = handler.producer;
    var rc: c_int = 0;
    var cancel_now = false;
    self.mutex.lock();
    if (self.released or self.schema_received or self.errored) {
        self.failLocally(EPROTO, "on_schema was called {s}", .{if (self.schema_received) "twice" else "after the stream ended"});
        rc = EPROTO;
    } else if (producer == null) {
        self.failLocally(EINVAL, "on_schema was called before the producer populated handler->producer", .{});
        rc = EINVAL;
    } else if (moved.release == null) {
        self.failLocally(EINVAL, "on_schema received a released schema", .{});
        rc = EINVAL;
    } else if (metadata_copy.dupe(producer.?.additional_metadata)) |copy| {
        if (SharedSchema.create(&moved)) |shared| {
            self.schema = shared;
            self.schema_received = true;
            self.producer = producer;
            self.device_type = producer.?.device_type;
            self.producer_metadata = copy;
            cancel_now = self.cancelled and !self.cancel_sent;
            if (cancel_now) self.cancel_sent = true;
        } else {
            metadata_copy.free(copy);
            self.failLocally(ENOMEM, "out of memory holding the stream schema", .{});
            rc = ENOMEM;
        }
    } else |err| {
        self.failLocally(if (err == error.OutOfMemory) ENOMEM else EINVAL, "{s}", .{if (err == error.OutOfMemory) "out of memory copying additional_metadata" else "the producer's additional_metadata is malformed"});
        rc = if (err == error.OutOfMemory) ENOMEM else EINVAL;
    }
    self.mutex.unlock();
    if (moved.release) |release| release(&moved);
    // JS cancelled before the schema came: tell the producer now. Allowed
    // from inside on_schema, like request.
    if (cancel_now and self.gate.enter()) {
        defer self.gate.leave();
        producer.?.cancel.?(producer.?);
    }
    _ = self.waker.wake();
    return rc;
}

fn onNextTask(handler: *abi.ArrowAsyncDeviceStreamHandler, task: ?*abi.ArrowAsyncTask, metadata: ?[*:0]const u8) callconv(.c) c_int {
    const self = Consumer.fromHandler(handler);
    self.mutex.lock();
    const rc: c_int = accept: {
        if (self.released or self.errored) {
            self.failLocally(EPROTO, "on_next_task was called after the stream failed or was released", .{});
            break :accept EPROTO;
        }
        if (!self.schema_received) {
            self.failLocally(EPROTO, "on_next_task was called before on_schema", .{});
            break :accept EPROTO;
        }
        const t = task orelse {
            self.ended = true;
            break :accept 0;
        };
        if (self.ended) {
            self.failLocally(EPROTO, "on_next_task delivered a task after the end of the stream", .{});
            break :accept EPROTO;
        }
        if (self.received >= self.requested) {
            self.failLocally(EPROTO, "the producer sent task {d} but only {d} were requested", .{ self.received + 1, self.requested });
            break :accept EPROTO;
        }
        if (t.extract_data == null) {
            self.failLocally(EINVAL, "task {d} has a NULL extract_data", .{self.received + 1});
            break :accept EINVAL;
        }
        self.received += 1;
        std.debug.assert(self.received <= self.requested);
        if (self.cancelled) {
            // Not wanted any more: let the producer clean up, here and now
            // (on its thread, outside our lock).
            self.discarded += 1;
            self.mutex.unlock();
            _ = t.extract_data.?(t, null);
            return 0;
        }
        const copy = metadata_copy.dupe(@ptrCast(metadata)) catch |err| {
            self.received -= 1;
            self.failLocally(if (err == error.OutOfMemory) ENOMEM else EINVAL, "{s} of task {d}", .{ if (err == error.OutOfMemory) "out of memory copying the metadata" else "malformed metadata", self.received + 1 });
            break :accept if (err == error.OutOfMemory) ENOMEM else EINVAL;
        };
        self.queue.append(std.heap.c_allocator, .{ .task = t.*, .metadata = copy }) catch {
            metadata_copy.free(copy);
            self.received -= 1;
            self.failLocally(ENOMEM, "out of memory queueing task {d}", .{self.received + 1});
            break :accept ENOMEM;
        };
        break :accept 0;
    };
    self.mutex.unlock();
    if (rc != 0) {
        // Refused: the producer's data is not wanted; the spec still wants
        // it extracted (with NULL).
        if (task) |t| {
            if (t.extract_data) |extract| _ = extract(t, null);
        }
    }
    _ = self.waker.wake();
    return rc;
}

fn onError(handler: *abi.ArrowAsyncDeviceStreamHandler, code: c_int, message: ?[*:0]const u8, metadata: ?[*:0]const u8) callconv(.c) void {
    const self = Consumer.fromHandler(handler);
    self.mutex.lock();
    if (!self.errored) {
        self.errored = true;
        self.error_code = code;
        if (message) |m| {
            const text = std.mem.span(m);
            self.error_message = std.heap.c_allocator.dupeSentinel(u8, text[0..@min(text.len, max_message_bytes)], 0) catch null;
        }
        // Malformed error metadata is dropped rather than failing an error.
        self.error_metadata = metadata_copy.dupe(@ptrCast(metadata)) catch null;
    }
    self.mutex.unlock();
    _ = self.waker.wake();
}

fn onRelease(handler: *abi.ArrowAsyncDeviceStreamHandler) callconv(.c) void {
    const self = Consumer.fromHandler(handler);
    // After this, the producer may free its ArrowAsyncProducer: wait for
    // calls into it in progress and refuse new ones.
    self.gate.close();
    self.mutex.lock();
    self.released = true;
    self.producer = null;
    self.mutex.unlock();
    handler.release = null;
    _ = self.waker.wake();
    self.unref();
}
