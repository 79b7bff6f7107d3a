//! A thread of this library's own that runs releases handed over by GPU
//! driver callbacks.
//!
//! A stream callback (cuLaunchHostFunc, hipStreamAddCallback) must not call
//! the driver, but a producer's release callback may well do so (free
//! pinned memory, destroy an event). So a callback only posts the release
//! here; this thread runs it. The thread starts on first use and lives as
//! long as the process; the queue is the only shared state, under one mutex.

const std = @import("std");
const sync = @import("../sync.zig");

pub const Job = struct {
    function: *const fn (context: ?*anyopaque) callconv(.c) void,
    context: ?*anyopaque,
};

var mutex: sync.Mutex = .{};
var wake: sync.Condition = .{};
var idle: sync.Condition = .{};
var queue: std.ArrayList(Job) = .empty;
var running: usize = 0;
var started = false;

fn main() void {
    mutex.lock();
    while (true) {
        while (queue.items.len == 0) wake.wait(&mutex);
        const job = queue.orderedRemove(0);
        running += 1;
        mutex.unlock();
        job.function(job.context);
        mutex.lock();
        running -= 1;
        if (queue.items.len == 0 and running == 0) idle.broadcast();
    }
}

/// Runs `function(context)` soon on the releaser thread. If the job cannot
/// be queued (no memory, no thread), it runs here and now instead: a
/// release must never be lost.
pub fn post(function: *const fn (context: ?*anyopaque) callconv(.c) void, context: ?*anyopaque) void {
    mutex.lock();
    const queued = blk: {
        if (!started) {
            const thread = std.Thread.spawn(.{}, main, .{}) catch break :blk false;
            thread.detach();
            started = true;
        }
        queue.append(std.heap.c_allocator, .{ .function = function, .context = context }) catch break :blk false;
        break :blk true;
    };
    mutex.unlock();
    if (queued) wake.signal() else function(context);
}

/// Blocks until every posted job has run (tests, and orderly shutdown).
pub fn drain() void {
    mutex.lock();
    defer mutex.unlock();
    while (queue.items.len > 0 or running > 0) idle.wait(&mutex);
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
    post(Log.run, @ptrFromInt(1));
    post(Log.run, @ptrFromInt(2));
    post(Log.run, @ptrFromInt(3));
    drain();
    try std.testing.expectEqual([3]usize{ 1, 2, 3 }, Log.seen);
    try std.testing.expect(Log.thread.load(.monotonic) != sync.currentThread());
}
