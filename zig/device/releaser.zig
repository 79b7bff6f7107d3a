//! A thread of this library's own that runs releases handed over by GPU
//! driver callbacks.
//!
//! A stream callback (cuLaunchHostFunc, hipStreamAddCallback) must not call
//! the driver, but a producer's release callback may well do so (free
//! pinned memory, destroy an event). So a callback only posts the release
//! here; this thread runs it.
//!
//! Posting from a callback cannot fail and never runs the job inline: the
//! caller `reserve`s a job before it launches the callback (outside any
//! driver callback, where failing is allowed: no memory, no thread), and
//! the callback only links that job into the queue. The thread starts on
//! the first reservation and lives as long as the process; the queue is the
//! only shared state, under one mutex.
//!
//! Debug switch (tests): ARROW_DEVICE_DEBUG_RELEASER_FAIL=1 makes every
//! reservation fail, as if no queue or thread could be created.

const std = @import("std");
const sync = @import("../core/sync.zig");

pub const Function = *const fn (context: ?*anyopaque) callconv(.c) void;

/// A job reserved for the releaser thread: allocated by `reserve`, handed
/// to `post` exactly once (which owns it from then on) or given back with
/// `cancel`.
pub const Job = struct {
    function: Function,
    context: ?*anyopaque,
    next: ?*Job = null,

    /// Queues the job; safe inside a driver callback (no allocation, no
    /// driver call, cannot fail). The job is freed once it has run.
    pub fn post(self: *Job) void {
        mutex.lock();
        // Posted once: a queued job is the tail or has a successor. The
        // thread exists: `reserve` started it before making the job.
        std.debug.assert(self.next == null and tail != self);
        std.debug.assert(started);
        self.next = null;
        if (tail) |t| t.next = self else head = self;
        tail = self;
        mutex.unlock();
        wake.signal();
    }

    /// Gives back a reservation that will not be posted.
    pub fn cancel(self: *Job) void {
        std.heap.c_allocator.destroy(self);
    }
};

var mutex: sync.Mutex = .{};
var wake: sync.Condition = .{};
var idle: sync.Condition = .{};
var head: ?*Job = null;
var tail: ?*Job = null;
var running: usize = 0;
var started = false;

fn main() void {
    mutex.lock();
    while (true) {
        while (head == null) wake.wait(&mutex);
        const job = head.?;
        head = job.next;
        if (head == null) {
            std.debug.assert(tail == job);
            tail = null;
        }
        running += 1;
        mutex.unlock();
        job.function(job.context);
        std.heap.c_allocator.destroy(job);
        mutex.lock();
        std.debug.assert(running > 0);
        running -= 1;
        if (head == null and running == 0) idle.broadcast();
    }
}

fn failSwitch() bool {
    const value = std.c.getenv("ARROW_DEVICE_DEBUG_RELEASER_FAIL") orelse return false;
    return value[0] == '1';
}

/// Reserves a job that will run `function(context)` on the releaser thread
/// once posted. Null when no job can be queued (no memory, no thread): the
/// caller then runs the release itself, on its own thread, outside any
/// driver callback.
pub fn reserve(function: Function, context: ?*anyopaque) ?*Job {
    if (failSwitch()) return null;
    mutex.lock();
    defer mutex.unlock();
    if (!started) {
        const thread = std.Thread.spawn(.{}, main, .{}) catch return null;
        thread.detach();
        started = true;
    }
    const job = std.heap.c_allocator.create(Job) catch return null;
    job.* = .{ .function = function, .context = context };
    return job;
}

/// Blocks until every posted job has run (tests, and orderly shutdown).
pub fn drain() void {
    mutex.lock();
    defer mutex.unlock();
    while (head != null or running > 0) idle.wait(&mutex);
}

test "posted jobs run on the releaser thread, in order" {
    const Log = struct {
        var seen: [3]usize = .{ 0, 0, 0 };
        var count: std.atomic.Value(usize) = .init(0);
        var thread: std.atomic.Value(usize) = .init(0);
        fn run(context: ?*anyopaque) callconv(.c) void {
            const i = count.fetchAdd(1, .monotonic);
            seen[i] = @intFromPtr(context);
            thread.store(sync.currentThread(), .monotonic);
        }
    };
    const jobs = [_]*Job{ reserve(Log.run, @ptrFromInt(1)).?, reserve(Log.run, @ptrFromInt(2)).?, reserve(Log.run, @ptrFromInt(3)).? };
    for (jobs) |job| job.post();
    drain();
    try std.testing.expectEqual([3]usize{ 1, 2, 3 }, Log.seen);
    try std.testing.expect(Log.thread.load(.monotonic) != sync.currentThread());
}
