//! Imported streams: an ArrowArrayStream or ArrowDeviceArrayStream moved in
//! from a C producer, pulled batch by batch into owners (owner.zig).
//!
//! Ownership. `import` moves the producer's stream struct into an
//! `Imported` (the caller's struct is left released, success or not). The
//! stream's schema is fetched once, on first need, and shared: each batch's
//! owner gets its own ArrowSchema struct, a copy of the root whose release
//! drops one reference to the shared schema (children, strings and
//! metadata are the producer's, never copied, never moved out). The
//! producer's schema release runs once, after the stream and every batch
//! let go of it; the stream's release runs once, in `release` (or never, if
//! the stream was relayed on with `moveOut`). Batches outlive the stream.
//!
//! Threads. `next` runs get_next on the calling thread (the JS thread for
//! the sync iterator). `pull` runs it on the stream's own worker thread
//! instead, started on first use: the result is posted to the JS work
//! queue (js_queue.zig) and taken with `takePull`. This is what lets the
//! async iterator wait without blocking JS, and pull JS-produced async
//! streams too. One call at a time: `next` and `pull` fail while a pull is
//! in flight. `release` may be called during a pull: the worker then
//! finishes the cleanup once the producer's get_next returns.

const std = @import("std");
const abi = @import("../core/abi.zig");
const status = @import("../core/status.zig");
const counters = @import("../core/counters.zig");
const owner_mod = @import("../import/owner.zig");
const validate = @import("../validate/validate.zig");
const js_queue = @import("../core/js_queue.zig");
const js_context = @import("../core/js_context.zig");
const stream_export = @import("export.zig");
const empty_batch = @import("../export/empty_batch.zig");
const sync = @import("../core/sync.zig");
const Status = status.Status;
const Owner = owner_mod.Owner;
const fail = status.fail;

const allocator = std.heap.c_allocator;

/// An owned NUL-terminated copy of `bytes`; null when memory is short
/// (then callers report no message rather than fail).
fn copyZ(bytes: []const u8) ?[:0]u8 {
    return allocator.dupeSentinel(u8, bytes, 0) catch null;
}

pub const Kind = abi.StreamKind;

/// The producer's schema, shared by the stream and its batches
/// (zig/stream/shared_schema.zig: each batch's root is lent, never copied).
const SharedSchema = @import("shared_schema.zig").SharedSchema;

/// Where a background pull is. Values are part of the C API.
pub const PullState = enum(c_int) { idle = 0, queued = 1, running = 2, ready = 3 };

var next_serial: std.atomic.Value(u64) = .init(1);

pub const Imported = struct {
    kind: Kind,
    /// The stream's device_type (CPU for an ArrowArrayStream).
    device_type: abi.DeviceType,
    /// Unique per import, never reused: the key of its queue entries.
    serial: u64,
    /// In `live` (stream/import.zig's list of JS threads' streams).
    tracked: bool = false,
    /// The JS thread that imported it (js_context.zig): where finished
    /// pulls are reported.
    context: u32 = 0,
    array_stream: abi.ArrowArrayStream = .empty,
    device_stream: abi.ArrowDeviceArrayStream = .empty,
    schema: ?*SharedSchema = null,
    ended: bool = false,
    /// The producer's errno and get_last_error text (owned copy) after its
    /// last failed call; valid until the next call on this stream.
    producer_errno: c_int = 0,
    producer_error: ?[:0]u8 = null,

    /// Guards the pull fields below.
    mutex: sync.Mutex = .{},
    wake: sync.Condition = .{},
    worker: ?std.Thread = null,
    /// Written under `mutex`; read without it by spinning waiters.
    pull_state: std.atomic.Value(PullState) = .init(.idle),
    pull_level: validate.Level = .default,
    quit: std.atomic.Value(bool) = .init(false),
    /// `release` ran while the worker was inside get_next.
    release_requested: bool = false,
    /// JS waits for the current pull through the work queue (`wait`).
    js_waiting: std.atomic.Value(bool) = .init(false),
    pulled_status: Status = .ok,
    pulled_owner: ?*Owner = null,
    pulled_message: ?[:0]u8 = null,
    /// Set before a pull (`setPullTransform`): what the worker does with
    /// each batch it pulled before handing it over, e.g. copy device memory
    /// to the host there (c_api_streams.zig), so that the copy of batch n+1 runs
    /// while JS uses batch n. It takes the pulled owner's reference.
    pull_transform: ?PullTransform = null,

    fn clearProducerError(self: *Imported) void {
        if (self.producer_error) |text| allocator.free(text);
        self.producer_error = null;
        self.producer_errno = 0;
    }

    /// Records a failed producer call (`what` returned `errno`).
    fn producerFailed(self: *Imported, what: []const u8, errno: c_int) Status {
        const text: ?[*:0]const u8 = switch (self.kind) {
            .array => if (self.array_stream.get_last_error) |f| f(&self.array_stream) else null,
            .device => if (self.device_stream.get_last_error) |f| f(&self.device_stream) else null,
        };
        self.producer_errno = errno;
        self.producer_error = if (text) |t| copyZ(std.mem.span(t)) else null;
        const shown: []const u8 = if (self.producer_error) |t| t else "(the producer gave no message)";
        return fail(.callback_error, "{s} failed with errno {d} ({s}): {s}", .{ what, errno, errnoName(errno), shown });
    }

    /// The shared schema, fetched from the producer on first need.
    fn sharedSchema(self: *Imported) Status {
        if (self.schema != null) return .ok;
        var schema: abi.ArrowSchema = .empty;
        const rc = switch (self.kind) {
            .array => self.array_stream.get_schema.?(&self.array_stream, &schema),
            .device => self.device_stream.get_schema.?(&self.device_stream, &schema),
        };
        if (rc != 0) return self.producerFailed("get_schema", rc);
        if (schema.release == null) return fail(.released, "get_schema returned 0 but a released schema", .{});
        self.schema = SharedSchema.create(&schema) orelse {
            schema.release.?(&schema);
            return fail(.out_of_memory, "out of memory sharing a stream's schema", .{});
        };
        return .ok;
    }

    /// Pulls the next batch into a new owner (one reference, the
    /// caller's). At the end `out` is null, on every later call too.
    fn pullNow(self: *Imported, level: validate.Level, out: *?*Owner) Status {
        out.* = null;
        self.clearProducerError();
        if (self.ended) return .ok;
        const fetched = self.sharedSchema();
        if (fetched != .ok) return fetched;
        std.debug.assert(self.schema != null);
        var array: abi.ArrowDeviceArray = .empty;
        const rc = switch (self.kind) {
            .array => self.array_stream.get_next.?(&self.array_stream, &array.array),
            .device => self.device_stream.get_next.?(&self.device_stream, &array),
        };
        if (rc != 0) return self.producerFailed("get_next", rc);
        if (array.array.release == null) {
            self.ended = true;
            return .ok;
        }
        if (self.kind == .array) {
            // A plain stream's arrays are CPU arrays.
            array.device_id = -1;
            array.device_type = abi.device_cpu;
            array.sync_event = null;
        } else if (array.device_type != self.device_type) {
            array.array.release.?(&array.array);
            return fail(.invalid_argument, "get_next returned an array on device {s} ({d}), but the stream's device_type is {s} ({d})", .{
                abi.deviceTypeName(array.device_type) orelse "unknown", array.device_type,
                abi.deviceTypeName(self.device_type) orelse "unknown", self.device_type,
            });
        }
        var schema = self.schema.?.lend();
        return owner_mod.import(&schema, &array, level, out);
    }

    /// Releases the producer's stream and schema and frees this.
    fn destroy(self: *Imported) void {
        live.remove(self);
        switch (self.kind) {
            .array => if (self.array_stream.release) |producer_release| producer_release(&self.array_stream),
            .device => if (self.device_stream.release) |producer_release| producer_release(&self.device_stream),
        }
        self.forget();
    }

    /// Frees this without touching the producer's stream. It leaves the
    /// live list first, so that its thread's end never releases it again.
    fn forget(self: *Imported) void {
        live.remove(self);
        // No worker is left to touch this: stopWorker joined or detached
        // it, or it is the worker itself, finishing a deferred release.
        std.debug.assert(!self.tracked and self.worker == null);
        if (self.schema) |shared| shared.unref();
        self.clearProducerError();
        if (self.pulled_message) |m| allocator.free(m);
        allocator.destroy(self);
        counters.add(.live_stream_imports, -1);
    }

    /// Lock-free, for spinning: a spinner that took the mutex would slow
    /// down the very thread it waits for.
    fn jobWaiting(self: *Imported) bool {
        return self.pull_state.load(.acquire) == .queued or self.quit.load(.acquire);
    }

    fn workerMain(self: *Imported) void {
        // Imports made here are made for the JS thread that imported the
        // stream (owner.zig asks whose memory it may view).
        js_context.adopt(self.context);
        self.mutex.lock();
        while (true) {
            if (self.pull_state.load(.acquire) != .queued and !self.quit.load(.acquire)) {
                // A consumer reading ahead asks again within microseconds
                // of taking a batch: spin before sleeping (js_queue.zig).
                self.mutex.unlock();
                _ = js_queue.spinUntil(self, jobWaiting);
                self.mutex.lock();
            }
            while (self.pull_state.load(.acquire) != .queued and !self.quit.load(.acquire)) self.wake.wait(&self.mutex);
            if (self.quit.load(.acquire)) break;
            self.pull_state.store(.running, .release);
            const level = self.pull_level;
            const transform = self.pull_transform;
            self.mutex.unlock();

            var owner: ?*Owner = null;
            var pulled = self.pullNow(level, &owner);
            if (pulled == .ok) if (owner) |o| if (transform) |f| {
                pulled = f(o, level, &owner);
            };
            const message: ?[:0]u8 = if (pulled != .ok) copyZ(std.mem.span(status.lastMessage())) else null;

            self.mutex.lock();
            if (self.release_requested) {
                // `release` ran during the pull and left the cleanup to us
                // (it detached this thread).
                self.mutex.unlock();
                if (owner) |o| o.release();
                if (message) |m| allocator.free(m);
                self.destroy();
                return;
            }
            self.pulled_status = pulled;
            self.pulled_owner = owner;
            self.pulled_message = message;
            // Tell JS only if it waits (see `wait`): a consumer reading
            // ahead usually finds the result ready by itself. seq_cst pairs
            // with `wait`: JS sees `ready`, or this sees `js_waiting`.
            self.pull_state.store(.ready, .seq_cst);
            if (self.js_waiting.load(.seq_cst)) {
                const entry: js_queue.Entry = .{ .tag = .stream_import_pulled, .key = self.serial, .address = @intFromPtr(self) };
                // Posted without the lock: waking JS can take a while, and
                // JS needs the lock to take the result. `release` joins this
                // thread before freeing, so `self` stays valid.
                self.mutex.unlock();
                // If even this cannot be queued, JS never hears back: that
                // pull hangs, but nothing is freed early or released twice.
                _ = js_queue.postTo(self.context, entry);
                self.mutex.lock();
            }
        }
        self.mutex.unlock();
    }
};

/// Moves the stream at `stream` (an ArrowArrayStream for kind array, an
/// ArrowDeviceArrayStream for kind device) into a new `Imported`. The
/// caller's struct is left released, success or not; on error whatever was
/// moved in has been released.
pub fn import(kind: Kind, stream: ?*anyopaque, out: *?*Imported) Status {
    const address = stream orelse return fail(.invalid_argument, "stream pointer is NULL", .{});
    const producer_context = stream_export.jsContextOf(kind, address);
    var self: Imported = .{ .kind = kind, .device_type = abi.device_cpu, .serial = next_serial.fetchAdd(1, .monotonic), .context = js_context.current() };
    switch (kind) {
        .array => {
            const source: *abi.ArrowArrayStream = @ptrCast(@alignCast(address));
            self.array_stream = source.*;
            source.release = null;
            if (self.array_stream.release == null) return fail(.released, "stream is released (its release callback is NULL)", .{});
            if (self.array_stream.get_schema == null or self.array_stream.get_next == null) {
                self.array_stream.release.?(&self.array_stream);
                return fail(.invalid_argument, "stream has a NULL get_schema or get_next callback", .{});
            }
        },
        .device => {
            const source: *abi.ArrowDeviceArrayStream = @ptrCast(@alignCast(address));
            self.device_stream = source.*;
            source.release = null;
            if (self.device_stream.release == null) return fail(.released, "stream is released (its release callback is NULL)", .{});
            if (self.device_stream.get_schema == null or self.device_stream.get_next == null) {
                self.device_stream.release.?(&self.device_stream);
                return fail(.invalid_argument, "stream has a NULL get_schema or get_next callback", .{});
            }
            if (self.device_stream.device_type <= 0) {
                const bad = self.device_stream.device_type;
                self.device_stream.release.?(&self.device_stream);
                return fail(.unknown_device, "stream device_type {d} is not a device type", .{bad});
            }
            self.device_type = self.device_stream.device_type;
        },
    }
    if (js_context.foreignWorker(producer_context)) {
        switch (kind) {
            .array => self.array_stream.release.?(&self.array_stream),
            .device => self.device_stream.release.?(&self.device_stream),
        }
        return fail(.unsupported, "stream cannot be imported on this JS thread: {s}", .{js_context.foreign_worker_message});
    }
    const held = allocator.create(Imported) catch {
        switch (kind) {
            .array => self.array_stream.release.?(&self.array_stream),
            .device => self.device_stream.release.?(&self.device_stream),
        }
        return fail(.out_of_memory, "out of memory allocating an imported stream", .{});
    };
    held.* = self;
    if (held.context != 0) live.add(held);
    counters.add(.live_stream_imports, 1);
    out.* = held;
    return .ok;
}

/// The imported streams of every JS thread, so that a thread that ends
/// releases what it still held (its JS handles went with it).
const Live = struct {
    mutex: sync.Mutex = .{},
    list: std.ArrayList(*Imported) = .empty,

    fn add(self: *Live, imported: *Imported) void {
        self.mutex.lock();
        defer self.mutex.unlock();
        // Without room to track it, the stream is only not released at
        // its thread's end (a leak, never a double release).
        self.list.append(allocator, imported) catch return;
        imported.tracked = true;
    }

    fn remove(self: *Live, imported: *Imported) void {
        self.mutex.lock();
        defer self.mutex.unlock();
        if (!imported.tracked) return;
        const at = std.mem.indexOfScalar(*Imported, self.list.items, imported);
        std.debug.assert(at != null); // tracked: in the list, once
        _ = self.list.swapRemove(at.?);
        imported.tracked = false;
    }

    /// Takes the streams of `context` out of the list.
    fn takeOf(self: *Live, context: u32, out: *std.ArrayList(*Imported)) void {
        self.mutex.lock();
        defer self.mutex.unlock();
        var i: usize = 0;
        while (i < self.list.items.len) {
            const item = self.list.items[i];
            if (item.context == context) {
                out.append(allocator, item) catch return;
                item.tracked = false;
                _ = self.list.swapRemove(i);
            } else i += 1;
        }
    }
};
var live: Live = .{};

/// A JS thread ended: release the streams it imported and never released.
pub fn releaseClosed(context: u32) void {
    var taken: std.ArrayList(*Imported) = .empty;
    defer taken.deinit(allocator);
    live.takeOf(context, &taken);
    for (taken.items) |imported| release(imported);
}

fn busy() Status {
    return fail(.invalid_argument, "a background pull of this stream is in progress; wait for it before another call", .{});
}

/// The stream's schema (the producer's, owned by the stream), fetched on
/// first call. Valid until the stream is released or moved out.
pub fn schemaOf(self: *Imported, out: **abi.ArrowSchema) Status {
    self.mutex.lock();
    defer self.mutex.unlock();
    if (self.pull_state.load(.acquire) != .idle) return busy();
    self.clearProducerError();
    const fetched = self.sharedSchema();
    if (fetched != .ok) return fetched;
    out.* = &self.schema.?.schema;
    return .ok;
}

/// A zero-length batch shaped like the stream's schema, in a new owner (one
/// reference, the caller's): what converters read the schema from when the
/// stream has no batch. Does not touch the stream's position.
pub fn emptyBatch(self: *Imported, level: validate.Level, out: *?*Owner) Status {
    out.* = null;
    self.mutex.lock();
    const state = self.pull_state.load(.acquire);
    self.mutex.unlock();
    if (state != .idle) return busy();
    self.clearProducerError();
    const fetched = self.sharedSchema();
    if (fetched != .ok) return fetched;
    var array: abi.ArrowDeviceArray = .empty;
    const built = empty_batch.build(&self.schema.?.schema, &array);
    if (built != .ok) return built;
    var schema = self.schema.?.lend();
    return owner_mod.import(&schema, &array, level, out);
}

/// Pulls the next batch on the calling thread.
pub fn next(self: *Imported, level: validate.Level, out: *?*Owner) Status {
    self.mutex.lock();
    const state = self.pull_state.load(.acquire);
    self.mutex.unlock();
    if (state != .idle) {
        out.* = null;
        return busy();
    }
    return self.pullNow(level, out);
}

/// What a background pull does with a pulled batch before handing it over:
/// takes `pulled`'s reference (releasing it), and puts the batch to hand
/// over in `out` (null on failure, with the thread's last error set).
pub const PullTransform = *const fn (pulled: *Owner, level: validate.Level, out: *?*Owner) Status;

/// Sets what the worker does with every batch pulled from now on (the
/// pull in flight, if any, is handed over as it was pulled).
pub fn setPullTransform(self: *Imported, transform: ?PullTransform) void {
    self.mutex.lock();
    defer self.mutex.unlock();
    self.pull_transform = transform;
}

/// Starts pulling the next batch on the stream's worker thread. Its
/// completion is posted to the JS work queue; then call `takePull`.
pub fn pull(self: *Imported, level: validate.Level) Status {
    self.mutex.lock();
    defer self.mutex.unlock();
    if (self.pull_state.load(.acquire) != .idle) return busy();
    const get_next: ?*const anyopaque = switch (self.kind) {
        .array => @ptrCast(self.array_stream.get_next),
        .device => @ptrCast(self.device_stream.get_next),
    };
    // A bun:ffi JSCallback may only run on its own JS thread: called on
    // the worker it would never return, and the pull never settle.
    if (get_next != null and js_context.isRuntimeCode(get_next))
        return fail(.unsupported, "the stream's get_next is code made at run time (a bun:ffi JSCallback), which runs only on its own JS thread: it cannot be pulled on a worker thread; read it without {{ async: true }}", .{});
    if (self.worker == null) {
        self.worker = std.Thread.spawn(.{}, Imported.workerMain, .{self}) catch |err|
            return fail(.out_of_memory, "could not start a thread to pull the stream: {s}", .{@errorName(err)});
    }
    self.pull_level = level;
    self.pull_state.store(.queued, .release);
    self.wake.signal();
    return .ok;
}

/// JS is about to wait for the current pull: from now on, its end is posted
/// to the JS work queue. Returns the state after that (if `ready`, the
/// result may be taken at once; a post may still come, and is stale then).
pub fn wait(self: *Imported) PullState {
    self.js_waiting.store(true, .seq_cst);
    return self.pull_state.load(.seq_cst);
}

/// Where the background pull is (any thread; a lock-free snapshot).
pub fn pullState(self: *Imported) PullState {
    return self.pull_state.load(.acquire);
}

/// Takes a finished background pull: its status (its message becomes this
/// thread's last error) and owner (null at the end or on error).
pub fn takePull(self: *Imported, out: *?*Owner) Status {
    self.mutex.lock();
    defer self.mutex.unlock();
    out.* = null;
    if (self.pull_state.load(.acquire) != .ready) return fail(.invalid_argument, "no finished pull to take on this stream", .{});
    self.pull_state.store(.idle, .release);
    self.js_waiting.store(false, .release);
    out.* = self.pulled_owner;
    self.pulled_owner = null;
    const pulled = self.pulled_status;
    if (pulled != .ok) {
        const message: []const u8 = if (self.pulled_message) |m| m else "the background pull failed";
        _ = fail(pulled, "{s}", .{message});
    }
    if (self.pulled_message) |m| allocator.free(m);
    self.pulled_message = null;
    return pulled;
}

/// Stops the worker, if any, and returns with no pull in flight; false if a
/// get_next is running on the worker (then it keeps the stream).
fn stopWorker(self: *Imported, release_if_running: bool) bool {
    self.mutex.lock();
    switch (self.pull_state.load(.acquire)) {
        .running => {
            if (release_if_running) {
                // The worker frees this when get_next returns: it leaves
                // the live list now, so that its thread's end cannot
                // release it a second time (self.mutex, then live's).
                live.remove(self);
                self.release_requested = true;
                const worker = self.worker.?;
                self.worker = null;
                self.mutex.unlock();
                worker.detach();
            } else {
                self.mutex.unlock();
            }
            return false;
        },
        .ready => {
            if (self.pulled_owner) |o| o.release();
            self.pulled_owner = null;
        },
        .queued, .idle => {},
    }
    self.pull_state.store(.idle, .release);
    self.quit.store(true, .release);
    const worker = self.worker;
    self.worker = null;
    self.wake.signal();
    self.mutex.unlock();
    if (worker) |w| w.join();
    return true;
}

/// Releases the producer's stream (once) and everything held for it. If a
/// background get_next is running, the worker does it when that returns.
pub fn release(self: *Imported) void {
    if (!stopWorker(self, true)) return;
    self.destroy();
}

/// Relays the stream on, unconverted: moves the producer's struct to `out`
/// (an ArrowArrayStream or ArrowDeviceArrayStream, as imported) and frees
/// this. Batches already pulled stay valid.
pub fn moveOut(self: *Imported, out: *anyopaque) Status {
    if (!stopWorker(self, false)) return busy();
    switch (self.kind) {
        .array => {
            @as(*abi.ArrowArrayStream, @ptrCast(@alignCast(out))).* = self.array_stream;
            self.array_stream.release = null;
        },
        .device => {
            @as(*abi.ArrowDeviceArrayStream, @ptrCast(@alignCast(out))).* = self.device_stream;
            self.device_stream.release = null;
        },
    }
    self.forget();
    return .ok;
}

/// "EIO" for 5, and so on; "unknown" for values this platform lacks.
pub fn errnoName(errno: c_int) []const u8 {
    const E = std.posix.E;
    const value = std.enums.fromInt(E, errno) orelse return "unknown";
    return switch (value) {
        .INVAL => "EINVAL",
        .NOMEM => "ENOMEM",
        .IO => "EIO",
        .NOSYS => "ENOSYS",
        .NODEV => "ENODEV",
        .DEADLK => "EDEADLK",
        .CANCELED => "ECANCELED",
        .OPNOTSUPP => "EOPNOTSUPP",
        .@"2BIG" => "E2BIG",
        .AGAIN => "EAGAIN",
        .BUSY => "EBUSY",
        .NOENT => "ENOENT",
        .PIPE => "EPIPE",
        .PERM => "EPERM",
        else => @tagName(value),
    };
}
