//! The hand-off between native release callbacks and the JS side's keepalive
//! registry.
//!
//! When JS exports an array, it keeps the exported buffers strongly reachable
//! under a numeric keepalive id. The consumer's release may run on any
//! thread, where JS cannot be touched, so the release only queues the id
//! here; JS drains the queue (on every API call and when woken) and drops the
//! references then. The queue is the only state shared between threads here,
//! and it is guarded by one mutex.

const std = @import("std");
const counters = @import("../core/counters.zig");
const Mutex = @import("../core/sync.zig").Mutex;
const js_queue = @import("../core/js_queue.zig");
const export_holds = @import("holds.zig");
const js_context = @import("../core/js_context.zig");

/// A void callback (a Bun threadsafe JSCallback) that wakes the JS thread.
/// At most one call is pending at a time (`wake_pending`), with no lock
/// held: each call makes Bun queue a task (~160 bytes) that runs only when
/// the event loop turns, so a loop that exports and releases without ever
/// yielding must not post one per release.
pub const Notifier = *const fn () callconv(.c) void;

/// What one JS thread (js_context.zig) has to hear about: the ids of its
/// exports whose release ran. A release reports to the context in its id.
const Context = struct {
    mutex: Mutex = .{},
    finished: std.ArrayList(u64) = .empty,
    notifier: std.atomic.Value(?Notifier) = .init(null),
    /// Set when a wake is posted; cleared by JS (`wakeDone`) when the wake
    /// runs, before it drains, so an id queued after that drain posts a
    /// new wake. Drains by API calls leave it set: the posted wake is still
    /// coming.
    wake_pending: std.atomic.Value(bool) = .init(false),
    /// `finished.items.len`, written under the mutex, read by JS without a
    /// call (`queuedAddress`): the JS side drains only when it is non-zero.
    /// A stale zero only delays a drain to the next API call or wake.
    queued: std.atomic.Value(u32) = .init(0),
};
var contexts: [js_context.max_contexts]Context = @splat(.{});
/// Wakes posted (for tests).
var wakes_posted: std.atomic.Value(u64) = .init(0);
/// Set while the JS thread releases an export it holds itself
/// (export/batch.zig `destroy`) or ends an import's reference (an anchor's
/// disarm, whose producer may be this library's own export): the first id
/// of this JS thread finished on this thread during that call is handed
/// back to the caller instead of queued, so no queue, lock or wake is
/// involved. Other ids still go through the queue.
threadlocal var capture: ?*u64 = null;

fn mine() *Context {
    return &contexts[js_context.current()];
}

/// Sets the calling JS thread's notifier.
pub fn setNotifier(callback: ?Notifier) void {
    mine().notifier.store(callback, .release);
}

/// A JS thread ended: its memory is gone with it, so its queued ids mean
/// nothing any more, and nobody may be woken.
pub fn closed(context: u32) void {
    const self = &contexts[context];
    self.notifier.store(null, .release);
    self.mutex.lock();
    counters.add(.keepalive_pending, -@as(i64, @intCast(self.finished.items.len)));
    self.finished.clearAndFree(std.heap.c_allocator);
    self.queued.store(0, .release);
    self.mutex.unlock();
}

/// Queues `id` as released. Safe from any thread.
pub fn finish(id: u64) void {
    if (id == 0) return;
    // Import owners this export held (converted data): released now, on
    // this thread; the JS side only drops its JS references later.
    export_holds.drop(id);
    if (capture) |into| {
        // Only an id of the capturing JS thread: its caller forgets it there.
        if (into.* == 0 and js_context.ofKeepalive(id) == js_context.current()) {
            into.* = id;
            return;
        }
    }
    const context = js_context.ofKeepalive(id);
    const self = &contexts[context];
    self.mutex.lock();
    if (!js_context.isOpen(context)) {
        self.mutex.unlock();
        return;
    }
    // If memory is so short that one u64 cannot be queued, the JS side keeps
    // the buffers a little longer: a leak, never a use-after-free.
    self.finished.append(std.heap.c_allocator, id) catch {
        self.mutex.unlock();
        return;
    };
    counters.add(.keepalive_pending, 1);
    self.queued.store(@intCast(@min(self.finished.items.len, std.math.maxInt(u32))), .release);
    self.mutex.unlock();
    // JS drains this queue too while it polls the JS work queue (and once
    // more after): no wake-up needed then.
    if (js_queue.of(context).isPolling()) return;
    const wake = self.notifier.load(.acquire) orelse return;
    if (self.wake_pending.swap(true, .acq_rel)) return; // one is on its way
    _ = wakes_posted.fetchAdd(1, .monotonic);
    wake();
}

/// Called by JS when a posted wake runs, before it drains the queue.
pub fn wakeDone() void {
    mine().wake_pending.store(false, .release);
}

pub fn wakesPosted() u64 {
    return wakes_posted.load(.monotonic);
}

/// Moves up to `out.len` of the calling JS thread's finished ids into
/// `out`; returns how many.
pub fn take(out: []f64) usize {
    const self = mine();
    self.mutex.lock();
    defer self.mutex.unlock();
    const n = @min(out.len, self.finished.items.len);
    for (self.finished.items[0..n], 0..) |id, i| out[i] = @floatFromInt(id);
    const rest = self.finished.items.len - n;
    std.mem.copyForwards(u64, self.finished.items[0..rest], self.finished.items[n..]);
    self.finished.shrinkRetainingCapacity(rest);
    self.queued.store(@intCast(@min(rest, std.math.maxInt(u32))), .release);
    counters.add(.keepalive_pending, -@as(i64, @intCast(n)));
    return n;
}

/// Runs `release(context)` with the first id it finishes on this thread
/// captured into `into` (0 if none) rather than queued.
pub fn captured(into: *u64, release: anytype, args: anytype) void {
    const outer = capture;
    capture = into;
    defer capture = outer;
    @call(.auto, release, args);
}

/// The address of the calling JS thread's queued-id count (a u32 JS reads
/// directly).
pub fn queuedAddress() *const u32 {
    return &mine().queued.raw;
}

pub fn pending() usize {
    const self = mine();
    self.mutex.lock();
    defer self.mutex.unlock();
    return self.finished.items.len;
}

test "one wake is pending at a time, however many ids are queued" {
    const Count = struct {
        var calls: u32 = 0;
        fn notify() callconv(.c) void {
            calls += 1;
        }
    };
    setNotifier(Count.notify);
    defer setNotifier(null);
    wakeDone();
    var buffer: [4]f64 = undefined;
    for (1..1001) |id| {
        finish(id);
        _ = take(&buffer); // an API call draining between releases
    }
    try std.testing.expectEqual(@as(u32, 1), Count.calls);
    wakeDone(); // the wake ran
    finish(5000);
    try std.testing.expectEqual(@as(u32, 2), Count.calls);
    wakeDone();
    _ = take(&buffer);
}

test "an id finished under capture is handed back, not queued; later ones queue" {
    var ids: [4]f64 = undefined;
    _ = take(&ids);
    const Release = struct {
        fn two() void {
            finish(41);
            finish(42);
        }
    };
    var id: u64 = 0;
    captured(&id, Release.two, .{});
    try std.testing.expectEqual(@as(u64, 41), id);
    try std.testing.expectEqual(@as(u32, 1), queuedAddress().*);
    try std.testing.expectEqual(@as(usize, 1), take(&ids));
    try std.testing.expectEqual(@as(f64, 42), ids[0]);
    try std.testing.expectEqual(@as(u32, 0), queuedAddress().*);
    finish(43); // no capture outside the call
    try std.testing.expectEqual(@as(usize, 1), take(&ids));
}

test "an id of another JS thread is never handed back under capture" {
    const Release = struct {
        fn foreign() void {
            finish((@as(u64, 1) << js_context.keepalive_shift) | 7);
        }
    };
    var id: u64 = 0;
    captured(&id, Release.foreign, .{});
    try std.testing.expectEqual(@as(u64, 0), id);
}

test "ids queued on other threads are all taken once" {
    const Producer = struct {
        fn run(base: u64) void {
            for (0..1000) |i| finish(base + i + 1);
        }
    };
    var threads: [4]std.Thread = undefined;
    for (&threads, 0..) |*t, i| t.* = try std.Thread.spawn(.{}, Producer.run, .{@as(u64, i) * 10_000});
    for (threads) |t| t.join();
    var seen = std.AutoHashMap(u64, void).init(std.testing.allocator);
    defer seen.deinit();
    var buffer: [333]f64 = undefined;
    while (true) {
        const n = take(&buffer);
        if (n == 0) break;
        for (buffer[0..n]) |id| try seen.put(@intFromFloat(id), {});
    }
    try std.testing.expectEqual(@as(u32, 4000), seen.count());
    try std.testing.expectEqual(@as(usize, 0), pending());
}
