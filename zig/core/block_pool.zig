//! A bounded stack of freed memory blocks of one size, reused before
//! malloc is asked again; safe from any thread.
//!
//! Why: import owners (owner.zig, about 1 KB each) are allocated one per
//! import on the JS thread, but freed in bursts: the collector sweeps the
//! views of hundreds of batches at once (about 600 per collection in a
//! stream of 1000-row batches), and each view's deallocator drops its
//! owner. A burst overflows glibc's per-thread cache (7 blocks of a size),
//! so each later allocation takes malloc's slow path (about 275
//! instructions, a quarter of a stream batch's native cost). Blocks kept
//! here cost a push and a pop under a spin lock held for a few
//! instructions.
//!
//! Bounded: at most `capacity` blocks are kept (the rest go back to
//! malloc), so the pool never holds more than capacity * size bytes.
//!
//! Ownership: a block given to the pool is the pool's until taken; a taken
//! block is the taker's, uninitialised, to free with `give` (or std.c.free).
//! The pool's blocks are malloc'd memory and stay reachable from it (they
//! are not leaks); they are never freed, as the library is never unloaded.

const std = @import("std");

pub fn BlockPool(comptime capacity: usize) type {
    return struct {
        const Self = @This();

        locked: std.atomic.Value(bool) = .init(false),
        len: usize = 0,
        blocks: [capacity]*anyopaque = undefined,

        /// A kept block, or null when none is kept.
        pub fn take(self: *Self) ?*anyopaque {
            self.lock();
            defer self.unlock();
            if (self.len == 0) return null;
            self.len -= 1;
            return self.blocks[self.len];
        }

        /// Keeps `block` (malloc'd, of the pool's size); false when the
        /// pool is full, and then the caller frees it.
        pub fn give(self: *Self, block: *anyopaque) bool {
            self.lock();
            defer self.unlock();
            if (self.len == capacity) return false;
            self.blocks[self.len] = block;
            self.len += 1;
            return true;
        }

        /// Blocks kept now (tests).
        pub fn count(self: *Self) usize {
            self.lock();
            defer self.unlock();
            return self.len;
        }

        fn lock(self: *Self) void {
            var spins: u32 = 0;
            while (self.locked.swap(true, .acquire)) {
                // Held for a few instructions: spin, and yield the CPU if
                // the holder was preempted.
                while (self.locked.load(.monotonic)) {
                    spins += 1;
                    if (spins % 64 == 0) _ = std.c.sched_yield() else std.atomic.spinLoopHint();
                }
            }
        }

        fn unlock(self: *Self) void {
            self.locked.store(false, .release);
        }
    };
}

const testing = std.testing;

test "blocks are reused last in, first out, and the pool keeps at most its capacity" {
    var pool: BlockPool(2) = .{};
    var a: u64 = 0;
    var b: u64 = 0;
    var c: u64 = 0;
    try testing.expect(pool.take() == null);
    try testing.expect(pool.give(&a));
    try testing.expect(pool.give(&b));
    try testing.expect(!pool.give(&c)); // full: the caller frees c
    try testing.expectEqual(@as(usize, 2), pool.count());
    try testing.expectEqual(@as(*anyopaque, &b), pool.take().?);
    try testing.expectEqual(@as(*anyopaque, &a), pool.take().?);
    try testing.expect(pool.take() == null);
}

test "threads giving and taking at once lose and duplicate no block" {
    const threads = 4;
    const per_thread = 20_000;
    const Shared = struct {
        pool: BlockPool(64) = .{},
        fn churn(self: *@This(), mine: *[8]u64) void {
            // Each thread cycles its own 8 blocks through the pool; a block
            // it takes back may be another thread's: it gives back whatever
            // it took, so the total is conserved.
            var held: [8]?*anyopaque = undefined;
            for (mine, 0..) |*block, i| held[i] = block;
            for (0..per_thread) |round| {
                const i = round % 8;
                if (held[i]) |block| {
                    if (self.pool.give(block)) held[i] = null;
                } else held[i] = self.pool.take();
            }
            for (held) |maybe| if (maybe) |block| std.debug.assert(self.pool.give(block));
        }
    };
    var shared: Shared = .{};
    var blocks: [threads][8]u64 = undefined;
    var handles: [threads]std.Thread = undefined;
    for (0..threads) |t| handles[t] = try std.Thread.spawn(.{}, Shared.churn, .{ &shared, &blocks[t] });
    for (handles) |h| h.join();
    // Every block is back, once.
    try testing.expectEqual(@as(usize, threads * 8), shared.pool.count());
    var seen: [threads * 8]usize = undefined;
    for (shared.pool.blocks[0 .. threads * 8], 0..) |block, i| seen[i] = @intFromPtr(block);
    std.mem.sort(usize, &seen, {}, std.sort.asc(usize));
    for (seen[1..], seen[0 .. seen.len - 1]) |later, earlier| try testing.expect(later != earlier);
}
