//! Work for the JS thread, posted from any thread.
//!
//! JS cannot be called from a thread other than its own, and Bun's
//! threadsafe JSCallbacks run later on the JS thread and return nothing. So
//! native code that needs JS (a consumer thread asking a JS-produced stream
//! for its next batch, a background pull that finished) posts an entry
//! here, and the queue wakes JS through one void threadsafe callback. JS
//! takes every entry (`take`), dispatches each by `tag`, and answers through
//! ordinary FFI calls, which signal whoever waits.
//!
//! The wake-up is sent on the empty-to-non-empty transition only, and not
//! while JS says it is polling: JS always takes until the queue is empty,
//! so an entry posted after that finds the queue empty and wakes it again,
//! and JS takes once more after it stops polling. Nothing is ever lost; at
//! worst JS wakes once and finds nothing left (a poll took it first).
//!
//! Tags are part of the C API between the library and its TS layer
//! (ts/native/js_queue.ts): new users append a tag.

const std = @import("std");
const sync = @import("sync.zig");
const js_context = @import("js_context.zig");

/// A void callback (a Bun threadsafe JSCallback); called with no lock held.
pub const Notifier = *const fn () callconv(.c) void;

pub const Tag = enum(u32) {
    /// A consumer thread waits in get_next of a JS-produced stream
    /// (stream/export.zig). key: the stream's JS key; address: its Producer.
    stream_export_request = 1,
    /// A background pull of an imported stream finished
    /// (stream/import.zig). key: 0; address: the Imported stream.
    stream_import_pulled = 2,
    /// An import's last reference went on a thread that is not JS (the
    /// collector), and its producer's release callbacks are JS code
    /// (owner.zig): JS runs them. key: 0; address: the Owner.
    owner_release = 3,
    /// An ADBC call running on a thread of its own returned
    /// (adbc/call.zig). key: the caller's key; address: the Job.
    adbc_call_done = 4,
};

pub const Entry = struct {
    tag: Tag,
    key: u64,
    address: usize,
};

/// Words per entry in `take`'s output: tag, key, address (exact in f64).
pub const entry_words = 3;

pub const Queue = struct {
    mutex: sync.Mutex = .{},
    entries: std.ArrayList(Entry) = .empty,
    notifier: std.atomic.Value(?Notifier) = .init(null),
    /// True while JS polls this queue (and the keepalive queue) in a loop:
    /// then nobody needs to wake it. JS clears it and takes once more before
    /// it stops polling, so an entry posted meanwhile is never missed.
    polling: std.atomic.Value(bool) = .init(false),
    /// Entries queued, readable without the mutex (for pollers).
    queued: std.atomic.Value(u32) = .init(0),

    pub fn setNotifier(self: *Queue, callback: ?Notifier) void {
        self.notifier.store(callback, .release);
    }

    /// Queues `entry` and wakes JS if the queue was empty. Safe from any
    /// thread. Fails (returns false) only when memory is exhausted.
    pub fn post(self: *Queue, entry: Entry) bool {
        self.mutex.lock();
        const was_empty = self.entries.items.len == 0;
        self.entries.append(std.heap.c_allocator, entry) catch {
            self.mutex.unlock();
            return false;
        };
        self.queued.store(@intCast(self.entries.items.len), .release);
        self.mutex.unlock();
        if (was_empty and !self.polling.load(.seq_cst)) {
            if (self.notifier.load(.acquire)) |wake| wake();
        }
        return true;
    }

    pub fn setPolling(self: *Queue, on: bool) void {
        self.polling.store(on, .seq_cst);
    }

    /// Whether JS is polling right now (so a wake-up can be skipped).
    pub fn isPolling(self: *Queue) bool {
        return self.polling.load(.seq_cst);
    }

    /// Moves up to `out.len / entry_words` entries into `out`, oldest
    /// first; returns how many entries.
    pub fn take(self: *Queue, out: []f64) usize {
        self.mutex.lock();
        defer self.mutex.unlock();
        const n = @min(out.len / entry_words, self.entries.items.len);
        for (self.entries.items[0..n], 0..) |entry, i| {
            out[i * entry_words + 0] = @floatFromInt(@intFromEnum(entry.tag));
            out[i * entry_words + 1] = @floatFromInt(entry.key);
            out[i * entry_words + 2] = @floatFromInt(entry.address);
        }
        const rest = self.entries.items.len - n;
        std.mem.copyForwards(Entry, self.entries.items[0..rest], self.entries.items[n..]);
        self.entries.shrinkRetainingCapacity(rest);
        self.queued.store(@intCast(rest), .release);
        return n;
    }

    /// Entries queued now, without taking the mutex (a poller's check: a
    /// poller that took it would slow down the threads posting).
    pub fn queuedNow(self: *Queue) u32 {
        return self.queued.load(.acquire);
    }

    pub fn pending(self: *Queue) usize {
        self.mutex.lock();
        defer self.mutex.unlock();
        return self.entries.items.len;
    }
};

/// One queue per JS thread (js_context.zig); each JS thread drains its own.
var queues: [js_context.max_contexts]Queue = @splat(.{});

/// The queue of `context`'s JS thread.
pub fn of(context: u32) *Queue {
    return &queues[if (context < js_context.max_contexts) context else 0];
}

/// The calling JS thread's queue.
pub fn mine() *Queue {
    return of(js_context.current());
}

/// What a queue's owner thread must do with entries left when it ends
/// (stream/export.zig answers its waiting consumers). Set once.
pub var on_orphan: ?*const fn (entry: Entry) void = null;

/// Posts `entry` for `context`'s JS thread. False when that thread ended
/// (nobody will ever take it) or memory is exhausted.
pub fn postTo(context: u32, entry: Entry) bool {
    const queue = of(context);
    queue.mutex.lock();
    const open = js_context.isOpen(context);
    queue.mutex.unlock();
    if (!open) return false;
    if (!queue.post(entry)) return false;
    // Closed meanwhile: the close hook may have run before the entry was
    // queued, so hand what is left to its owners here too.
    if (!js_context.isOpen(context)) orphanAll(queue);
    return true;
}

/// js_context close hook.
pub fn orphan(context: u32) void {
    const queue = of(context);
    queue.setNotifier(null);
    orphanAll(queue);
}

fn orphanAll(queue: *Queue) void {
    var out: [entry_words * 16]f64 = undefined;
    while (true) {
        const n = queue.take(&out);
        if (n == 0) return;
        for (0..n) |i| {
            const entry: Entry = .{
                .tag = @enumFromInt(@as(u32, @intFromFloat(out[i * entry_words]))),
                .key = @intFromFloat(out[i * entry_words + 1]),
                .address = @intFromFloat(out[i * entry_words + 2]),
            };
            if (on_orphan) |handle| handle(entry);
        }
    }
}

/// How long a thread waiting on the other side of this hand-off spins
/// before it sleeps (nanoseconds). On the VMs this library is tested on, a
/// sleeping thread (condition variable, or JS idle in its event loop) takes
/// 20-60 us to run again once woken, while an answer from a busy peer comes
/// within 1-3 us: a short spin turns a stream of batches into a pipeline
/// instead of a wake-up per batch. Bounded, so a slow peer costs at most
/// this much CPU per wait. The TS layer sets it (`setJsWorkSpin`).
pub var spin_ns: std.atomic.Value(u64) = .init(20_000);
/// The longest spin window accepted (1 s); longer requests are clamped.
pub const max_spin_ns: u64 = 1_000_000_000;

/// `nanoseconds` as a spin window: NaN and negatives give 0, anything
/// above `max_spin_ns` (+Infinity too) gives `max_spin_ns`.
pub fn clampSpin(nanoseconds: f64) u64 {
    if (!(nanoseconds > 0)) return 0; // NaN, -Infinity, negatives, 0
    if (nanoseconds >= @as(f64, @floatFromInt(max_spin_ns))) return max_spin_ns;
    return @intFromFloat(nanoseconds);
}

test "clampSpin takes every f64 without a panic" {
    try std.testing.expectEqual(@as(u64, 0), clampSpin(std.math.nan(f64)));
    try std.testing.expectEqual(@as(u64, 0), clampSpin(-std.math.inf(f64)));
    try std.testing.expectEqual(@as(u64, 0), clampSpin(-5));
    try std.testing.expectEqual(max_spin_ns, clampSpin(std.math.inf(f64)));
    try std.testing.expectEqual(max_spin_ns, clampSpin(1e300));
    try std.testing.expectEqual(@as(u64, 1234), clampSpin(1234.9));
}

pub fn monotonicNs() u64 {
    var now: std.c.timespec = undefined;
    _ = std.c.clock_gettime(std.c.CLOCK.MONOTONIC, &now);
    return @as(u64, @intCast(now.sec)) * std.time.ns_per_s + @as(u64, @intCast(now.nsec));
}

/// Spins until `done(context)` or the spin window passes; returns
/// `done(context)`. Call it without holding a lock the peer needs.
pub fn spinUntil(context: anytype, comptime done: fn (@TypeOf(context)) bool) bool {
    const window = spin_ns.load(.monotonic);
    if (window == 0) return done(context);
    const deadline = monotonicNs() + window;
    while (!done(context)) {
        if (monotonicNs() >= deadline) return false;
        std.atomic.spinLoopHint();
    }
    return true;
}

test "entries posted from several threads are taken once, in order per thread" {
    var queue: Queue = .{};
    defer queue.entries.deinit(std.heap.c_allocator);
    const Poster = struct {
        fn run(q: *Queue, base: u64) void {
            for (0..500) |i| std.debug.assert(q.post(.{ .tag = .stream_export_request, .key = base + i, .address = base }));
        }
    };
    var threads: [3]std.Thread = undefined;
    for (&threads, 0..) |*t, i| t.* = try std.Thread.spawn(.{}, Poster.run, .{ &queue, @as(u64, i + 1) * 10_000 });
    for (threads) |t| t.join();
    var last: [3]u64 = .{ 0, 0, 0 };
    var seen: usize = 0;
    var out: [7 * entry_words]f64 = undefined;
    while (true) {
        const n = queue.take(&out);
        if (n == 0) break;
        for (0..n) |i| {
            const key: u64 = @intFromFloat(out[i * entry_words + 1]);
            const thread: usize = @intCast(key / 10_000 - 1);
            try std.testing.expect(key > last[thread]);
            last[thread] = key;
            seen += 1;
        }
    }
    try std.testing.expectEqual(@as(usize, 1500), seen);
}

test "the notifier fires on the empty-to-non-empty transition only" {
    const Counter = struct {
        var wakes: u32 = 0;
        fn wake() callconv(.c) void {
            wakes += 1;
        }
    };
    var queue: Queue = .{};
    defer queue.entries.deinit(std.heap.c_allocator);
    queue.setNotifier(Counter.wake);
    _ = queue.post(.{ .tag = .stream_import_pulled, .key = 0, .address = 1 });
    _ = queue.post(.{ .tag = .stream_import_pulled, .key = 0, .address = 2 });
    try std.testing.expectEqual(@as(u32, 1), Counter.wakes);
    var out: [entry_words * 4]f64 = undefined;
    try std.testing.expectEqual(@as(usize, 2), queue.take(&out));
    _ = queue.post(.{ .tag = .stream_import_pulled, .key = 0, .address = 3 });
    try std.testing.expectEqual(@as(u32, 2), Counter.wakes);
    try std.testing.expectEqual(@as(usize, 1), queue.take(&out));
    // While JS polls, nobody wakes it; the entry waits for its next take.
    queue.setPolling(true);
    _ = queue.post(.{ .tag = .stream_import_pulled, .key = 0, .address = 4 });
    try std.testing.expectEqual(@as(u32, 2), Counter.wakes);
    try std.testing.expectEqual(@as(u32, 1), queue.queuedNow());
    queue.setPolling(false);
    try std.testing.expectEqual(@as(usize, 1), queue.take(&out));
    try std.testing.expectEqual(@as(u32, 0), queue.queuedNow());
}

test "spinUntil stops at the condition or at the window" {
    const Flag = struct {
        fn set(flag: *std.atomic.Value(bool)) bool {
            return flag.load(.acquire);
        }
    };
    var flag: std.atomic.Value(bool) = .init(true);
    try std.testing.expect(spinUntil(&flag, Flag.set));
    flag.store(false, .release);
    try std.testing.expect(!spinUntil(&flag, Flag.set)); // gives up: the window is bounded
}
