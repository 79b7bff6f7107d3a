//! This library as the *producer* of an async device stream: JS pushes
//! batches into a C consumer's `ArrowAsyncDeviceStreamHandler`.
//!
//! Threads. The JS thread drives the stream: it calls every handler
//! callback (on_schema, on_next_task, on_error, release), one at a time.
//! The consumer calls `request` and `cancel` from any thread at any time,
//! including from inside those callbacks; they only update counters under
//! `mutex` and wake JS (js_wake.zig), never call back synchronously. Tasks'
//! `extract_data` runs on whatever thread the consumer chooses, even after
//! the stream was released: a task owns its array and nothing else.
//!
//! Rules kept here (and tested): on_schema comes first, with
//! `handler->producer` populated; on_next_task is called only while fewer
//! tasks were sent than requested; `request(n <= 0)` and cancel are recorded
//! for JS to act on (on_error EINVAL, or a quiet end); after cancel,
//! `request` is a no-op; once a callback returned non-zero, only release
//! follows.
//!
//! Refused tasks. The spec says a consumer that does not want a task's data
//! "must still call extract_data" (with NULL); Arrow C++'s consumer never
//! extracts a task it refused with a non-zero return of on_next_task. Both
//! work: a refused task stays valid, parked on the producer, until it is
//! extracted (any thread; an array or NULL, either is harmless) or the
//! handler is released, which reclaims whatever was not extracted. So a
//! refused task is disposed of exactly once, never leaked, never read
//! after it was freed, provided the consumer extracts before it releases
//! the handler (which is when the spec lets a producer free everything).
//!
//! Lifetime. JS creates the producer and lets it go right after calling the
//! handler's release. The `ArrowAsyncProducer` struct then lives on until
//! every task it sent was extracted (or reclaimed): each task holds a
//! reference. The spec lets a producer free it at the release, but Arrow
//! C++'s consumer (CreateAsyncDeviceStreamHandler, 26) calls `request(1)`
//! each time it takes a queued task, before extracting it, even after the
//! end of the stream and the release: with this rule that late request
//! finds a valid producer and is a no-op. `request`/`cancel` after the
//! release are no-ops. Counted in `live_async`, like each task not yet
//! extracted.

const std = @import("std");
const abi = @import("../core/abi.zig");
const status = @import("../core/status.zig");
const counters = @import("../core/counters.zig");
const sync = @import("../core/sync.zig");
const js_wake = @import("js_wake.zig");
const metadata_copy = @import("metadata_copy.zig");
const export_array = @import("../export/array.zig");
const Status = status.Status;
const fail = status.fail;

pub const EINVAL: c_int = @import("../core/errno.zig").native.EINVAL;

/// Words of the state snapshot `poll` writes (f64 each), shared with TS
/// through the layout manifest.
pub const StateWord = enum(u8) {
    /// Tasks the consumer requested and was not sent yet.
    credits,
    /// Sum of the valid `request(n)` calls.
    requested,
    /// Tasks sent with on_next_task.
    sent,
    /// 1 once the consumer called cancel.
    cancelled,
    /// 1 when the consumer called `request(n)` with `n <= 0`.
    bad_request,
    /// The first such `n`.
    bad_request_n,
    /// Notifications sent to JS so far (diagnostics: requests that arrive
    /// while one is pending, or while JS is busy sending, cost none).
    wakes,
};
pub const state_words = @typeInfo(StateWord).@"enum".field_names.len;

pub const Producer = struct {
    /// What `handler->producer` points to; `private_data` points back here.
    producer: abi.ArrowAsyncProducer,
    handler: *abi.ArrowAsyncDeviceStreamHandler,
    waker: js_wake.Waker,
    /// Owned copy behind `producer.additional_metadata`.
    metadata: ?[]u8,

    // Guarded by `mutex`.
    mutex: sync.Mutex = .{},
    requested: i64 = 0,
    sent: i64 = 0,
    cancelled: bool = false,
    bad_request: bool = false,
    bad_request_n: i64 = 0,
    /// No more on_next_task/on_error will be sent: request/cancel are no-ops.
    finished: bool = false,
    /// Refused tasks not extracted yet, reclaimed by the handler's release
    /// (a list through `Task.next_parked`).
    parked: ?*Task = null,
    /// JS's reference (dropped after the handler's release) and one per
    /// task not yet extracted or reclaimed.
    refs: std.atomic.Value(u32) = .init(1),
    /// The state words (StateWord, all but `wakes`) as of the last change,
    /// rewritten under `mutex` by every request, cancel and send. JS reads
    /// them through a Float64Array over this memory, without a call or the
    /// lock (`abd_async_producer_published`): between sends it checks its
    /// credits and the cancel here, so a batch costs one native call, the
    /// send. A stale read only sends JS through `poll` (under the lock),
    /// never past the consumer's requests: `takeCredit` decides. Each word
    /// is one aligned 8-byte atomic store. Valid until JS drops its
    /// reference (`releaseAndDestroy`); JS never reads it after that.
    published: [state_words]f64 = @splat(0),

    fn fromProducer(producer: *abi.ArrowAsyncProducer) *Producer {
        return @fieldParentPtr("producer", producer);
    }

    fn finish(self: *Producer) void {
        self.mutex.lock();
        self.finished = true;
        self.mutex.unlock();
    }

    /// The state words, but `wakes` (`waker`'s own counter). Under `mutex`.
    fn snapshot(self: *const Producer) [state_words]f64 {
        return .{
            @floatFromInt(self.requested - self.sent),
            @floatFromInt(self.requested),
            @floatFromInt(self.sent),
            @floatFromInt(@intFromBool(self.cancelled)),
            @floatFromInt(@intFromBool(self.bad_request)),
            @floatFromInt(self.bad_request_n),
            0,
        };
    }

    /// Rewrites `published` after a change. Under `mutex`.
    fn publish(self: *Producer) void {
        const words = self.snapshot();
        for (&self.published, words, 0..) |*word, value, i| {
            if (i == @intFromEnum(StateWord.wakes)) continue;
            @atomicStore(f64, word, value, .release);
        }
    }

    /// Writes the state snapshot. `arm`: first clear the pending wake, so
    /// that any change after this snapshot wakes JS (JS arms only right
    /// before it waits).
    pub fn poll(self: *Producer, out: []f64, arm: bool) void {
        if (arm) self.waker.clear();
        self.mutex.lock();
        defer self.mutex.unlock();
        var words = self.snapshot();
        words[@intFromEnum(StateWord.wakes)] = @floatFromInt(self.waker.sentCount());
        @memcpy(out[0..state_words], &words);
    }

    /// Calls on_schema. The consumer moves `schema`; whatever it left is
    /// released here. Returns the consumer's code.
    pub fn sendSchema(self: *Producer, schema: *abi.ArrowSchema) c_int {
        const rc = self.handler.on_schema.?(self.handler, schema);
        if (schema.release) |release| release(schema);
        if (rc != 0) self.finish();
        return rc;
    }

    /// Builds a CPU device array over JS memory from an export plan
    /// (export/array.zig) into a new task, and sends it. `rc` receives the
    /// consumer's code.
    pub fn sendPlan(self: *Producer, plan: []const f64, keepalive_id: u64, metadata: ?[*]const u8, rc: *c_int) Status {
        const checked = self.takeCredit();
        if (checked != .ok) return checked;
        if (self.producer.device_type != abi.device_cpu) {
            self.returnCredit();
            return fail(.unknown_device, "this stream declared device type {d}; a JS batch is CPU memory (device type 1)", .{self.producer.device_type});
        }
        const task = Task.create(self) orelse {
            self.returnCredit();
            return fail(.out_of_memory, "out of memory allocating an async task", .{});
        };
        const built = export_array.buildDevice(plan, .{ .keepalive_id = keepalive_id }, .{}, &task.array);
        if (built != .ok) {
            task.array.array.release = null;
            task.destroy();
            self.returnCredit();
            return built;
        }
        rc.* = self.deliver(task, metadata);
        return .ok;
    }

    /// Moves `array` (an ArrowDeviceArray of the stream's device type, with
    /// its sync event) into a new task and sends it. On error `array` is
    /// left as it was.
    pub fn sendArray(self: *Producer, array: *abi.ArrowDeviceArray, metadata: ?[*]const u8, rc: *c_int) Status {
        const checked = self.takeCredit();
        if (checked != .ok) return checked;
        if (array.array.release == null) {
            self.returnCredit();
            return fail(.released, "the device array to send is released", .{});
        }
        if (array.device_type != self.producer.device_type) {
            self.returnCredit();
            return fail(.unknown_device, "the array is on device type {d} but this stream declared device type {d}", .{ array.device_type, self.producer.device_type });
        }
        const task = Task.create(self) orelse {
            self.returnCredit();
            return fail(.out_of_memory, "out of memory allocating an async task", .{});
        };
        task.array = array.*;
        array.array.release = null;
        rc.* = self.deliver(task, metadata);
        return .ok;
    }

    /// Counts one task as sent if the consumer requested one more: the one
    /// lock a send takes (a consumer thread requests under the same lock;
    /// fewer locks per batch, fewer collisions that put JS to sleep).
    fn takeCredit(self: *Producer) Status {
        self.mutex.lock();
        defer self.mutex.unlock();
        if (self.finished) return fail(.released, "the stream already ended", .{});
        if (self.sent >= self.requested) return fail(.out_of_range, "the consumer requested {d} tasks and {d} were sent: no task may be sent now", .{ self.requested, self.sent });
        self.sent += 1;
        std.debug.assert(self.sent <= self.requested);
        self.publish();
        return .ok;
    }

    /// Undoes `takeCredit` when the task could not be made.
    fn returnCredit(self: *Producer) void {
        self.mutex.lock();
        defer self.mutex.unlock();
        std.debug.assert(self.sent > 0); // a credit taken by takeCredit
        self.sent -= 1;
        self.publish();
    }

    fn deliver(self: *Producer, task: *Task, metadata: ?[*]const u8) c_int {
        var c_task: abi.ArrowAsyncTask = .{ .extract_data = extractData, .private_data = task };
        const rc = self.handler.on_next_task.?(self.handler, &c_task, @ptrCast(metadata));
        if (rc != 0) {
            // Refused. The consumer may still extract it (the spec's
            // convention), now or later on any thread, or never (Arrow
            // C++'s): park it until then or until the handler's release.
            // `is_parked` is stored before `taken` is read, and an extract
            // swaps `taken` before it reads `is_parked` (both seq_cst): one
            // of the two sees the other, so a task extracted meanwhile is
            // never left parked.
            self.mutex.lock();
            task.is_parked.store(true, .seq_cst);
            if (task.taken.load(.seq_cst)) {
                task.is_parked.store(false, .seq_cst);
            } else {
                task.next_parked = self.parked;
                self.parked = task;
            }
            self.finished = true;
            self.mutex.unlock();
        }
        task.unref(); // this function's reference
        return rc;
    }

    /// Takes `task` off the parked list if it is there.
    fn unpark(self: *Producer, task: *Task) void {
        self.mutex.lock();
        defer self.mutex.unlock();
        if (!task.is_parked.load(.seq_cst)) return;
        task.is_parked.store(false, .seq_cst);
        var link = &self.parked;
        while (link.*) |t| : (link = &t.next_parked) {
            if (t == task) {
                link.* = t.next_parked;
                return;
            }
        }
    }

    /// Disposes of every parked task nobody extracted: releases its array
    /// and drops the consumer's reference. JS thread, at the handler's
    /// release.
    fn reclaimParked(self: *Producer) void {
        self.mutex.lock();
        var list = self.parked;
        self.parked = null;
        // Decide under the lock who disposes of each task: a concurrent
        // extract that already took one (and will find it unparked) drops
        // its reference itself.
        var mine: ?*Task = null;
        while (list) |t| {
            list = t.next_parked;
            t.is_parked.store(false, .seq_cst);
            if (!t.taken.swap(true, .seq_cst)) {
                t.next_parked = mine;
                mine = t;
            }
        }
        self.mutex.unlock();
        while (mine) |t| {
            mine = t.next_parked;
            if (t.array.array.release) |release| release(&t.array.array);
            t.array.array.release = null;
            t.unref();
        }
    }

    /// Sends the end of the stream (a NULL task).
    pub fn sendEnd(self: *Producer) c_int {
        self.finish();
        return self.handler.on_next_task.?(self.handler, null, null);
    }

    pub fn sendError(self: *Producer, code: c_int, message: ?[*:0]const u8, metadata: ?[*]const u8) void {
        self.finish();
        self.handler.on_error.?(self.handler, code, message, @ptrCast(metadata));
    }

    /// Calls the handler's release, then drops JS's reference: the producer
    /// is freed now, or when the last task it sent is extracted. JS thread.
    pub fn releaseAndDestroy(self: *Producer) void {
        self.finish();
        const handler = self.handler;
        if (handler.release) |release| release(handler);
        self.reclaimParked();
        self.unref();
    }

    fn ref(self: *Producer) void {
        const before = self.refs.fetchAdd(1, .monotonic);
        std.debug.assert(before > 0); // a holder refs it: never a freed producer
    }

    /// Any thread (the last task may be extracted anywhere).
    fn unref(self: *Producer) void {
        const before = self.refs.fetchSub(1, .acq_rel);
        std.debug.assert(before > 0);
        if (before != 1) return;
        metadata_copy.free(self.metadata);
        counters.add(.live_async, -1);
        std.heap.c_allocator.destroy(self);
    }
};

/// One task's private data: the array it hands out, and a reference to its
/// producer (see "Lifetime" above). Two references: the sending frame's and
/// the consumer's (dropped by extract_data).
const Task = struct {
    array: abi.ArrowDeviceArray = .empty,
    producer: *Producer,
    refs: std.atomic.Value(u32) = .init(2),
    /// Set by whoever disposes of `array` first (extract, or the reclaim of
    /// a refused task at the handler's release).
    taken: std.atomic.Value(bool) = .init(false),
    /// On the producer's parked list (refused, not extracted). Written
    /// under the producer's mutex, like `next_parked`; read without it by
    /// extract_data, which takes the mutex only for a parked task.
    is_parked: std.atomic.Value(bool) = .init(false),
    next_parked: ?*Task = null,

    fn create(producer: *Producer) ?*Task {
        const task = std.heap.c_allocator.create(Task) catch return null;
        task.* = .{ .producer = producer };
        producer.ref();
        counters.add(.live_async, 1);
        return task;
    }

    fn unref(self: *Task) void {
        const before = self.refs.fetchSub(1, .acq_rel);
        std.debug.assert(before > 0);
        if (before == 1) self.destroy();
    }

    fn destroy(self: *Task) void {
        std.debug.assert(self.array.array.release == null);
        const producer = self.producer;
        counters.add(.live_async, -1);
        std.heap.c_allocator.destroy(self);
        producer.unref();
    }
};

/// ArrowAsyncTask.extract_data. Any thread, exactly once per task.
fn extractData(c_task: *abi.ArrowAsyncTask, out: ?*abi.ArrowDeviceArray) callconv(.c) c_int {
    const task: *Task = @ptrCast(@alignCast(c_task.private_data orelse return EINVAL));
    c_task.private_data = null; // a second call through this struct fails cleanly
    if (task.taken.swap(true, .seq_cst)) return EINVAL;
    if (out) |target| {
        target.* = task.array;
    } else if (task.array.array.release) |release| {
        release(&task.array.array);
    }
    task.array.array.release = null;
    // A refused task, extracted after all; the common case takes no lock.
    if (task.is_parked.load(.seq_cst)) task.producer.unpark(task);
    task.unref();
    return 0;
}

fn requestTasks(producer: *abi.ArrowAsyncProducer, n: i64) callconv(.c) void {
    const self = Producer.fromProducer(producer);
    self.mutex.lock();
    if (self.cancelled or self.finished) {
        self.mutex.unlock(); // after cancel: a no-op, as the spec requires
        return;
    }
    if (n <= 0) {
        if (!self.bad_request) {
            self.bad_request = true;
            self.bad_request_n = n;
        }
    } else {
        self.requested +|= n;
    }
    self.publish();
    self.mutex.unlock();
    _ = self.waker.wake();
}

fn cancelStream(producer: *abi.ArrowAsyncProducer) callconv(.c) void {
    const self = Producer.fromProducer(producer);
    self.mutex.lock();
    const first = !self.cancelled;
    self.cancelled = true;
    self.publish();
    self.mutex.unlock();
    if (first) _ = self.waker.wake();
}

/// A producer bound to `handler` (whose `producer` member it populates),
/// declaring `device_type`, with `metadata` (binary encoding, `metadata_len`
/// bytes, copied) as additional_metadata. On error the handler was given to
/// a producer that cannot run: it is released (when it has a release
/// callback), as the spec asks of every producer.
pub fn create(handler: ?*abi.ArrowAsyncDeviceStreamHandler, device_type: abi.DeviceType, metadata: ?[]const u8, token: u32, out: *?*Producer) Status {
    const h = handler orelse return fail(.invalid_argument, "handler pointer is NULL", .{});
    const made = make(h, device_type, metadata, token, out);
    if (made != .ok) {
        if (h.release) |release| release(h);
    }
    return made;
}

fn make(h: *abi.ArrowAsyncDeviceStreamHandler, device_type: abi.DeviceType, metadata: ?[]const u8, token: u32, out: *?*Producer) Status {
    const missing: ?[]const u8 = if (h.release == null) "release" else if (h.on_schema == null) "on_schema" else if (h.on_next_task == null) "on_next_task" else if (h.on_error == null) "on_error" else null;
    if (missing) |name| return fail(.invalid_argument, "handler->{s} is NULL", .{name});
    if (device_type <= 0) return fail(.unknown_device, "device type {d} is not a device type", .{device_type});
    var copy: ?[]u8 = null;
    if (metadata) |bytes| {
        if (bytes.len < 4 or metadata_copy.byteLength(bytes.ptr) != bytes.len) return fail(.invalid_layout, "additional_metadata is not {d} bytes of well-formed metadata", .{bytes.len});
        copy = std.heap.c_allocator.dupe(u8, bytes) catch return fail(.out_of_memory, "out of memory copying additional_metadata", .{});
    }
    const self = std.heap.c_allocator.create(Producer) catch {
        metadata_copy.free(copy);
        return fail(.out_of_memory, "out of memory allocating an async producer", .{});
    };
    self.* = .{
        .producer = .{
            .device_type = device_type,
            .request = requestTasks,
            .cancel = cancelStream,
            .additional_metadata = if (copy) |c| c.ptr else null,
            .private_data = null,
        },
        .handler = h,
        .waker = .init(token),
        .metadata = copy,
    };
    self.producer.private_data = self;
    h.producer = &self.producer;
    counters.add(.live_async, 1);
    out.* = self;
    return .ok;
}
