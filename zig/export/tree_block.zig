//! One allocation that holds every struct of an exported tree (all but the
//! base struct, which lives where the consumer put it) plus the pointer
//! arrays and strings they point at.
//!
//! Ownership: each struct of the tree, base and children alike, holds one
//! reference to the block through its `private_data`, so a child moved out by
//! a consumer keeps the block alive on its own. Each struct's release drops
//! its reference exactly once; the last one frees the block and runs the
//! block's `on_free` hook (queue a keepalive id, destroy an event, ...), on
//! whichever thread that happens to be.

const std = @import("std");

pub const OnFree = *const fn (context: ?*anyopaque) callconv(.c) void;

/// What a block holds: its tree's struct count and payload size.
pub const Size = struct { structs: u32, payload_bytes: usize };

pub const Block = struct {
    /// Structs of the tree whose release has not run yet.
    remaining: std.atomic.Value(u32),
    total_bytes: usize,
    on_free: ?OnFree = null,
    on_free_context: ?*anyopaque = null,
    /// The allocation this block shares with another tree's block
    /// (`Pair`); null when the block is an allocation of its own.
    pair: ?*Pair = null,

    const header_bytes = std.mem.alignForward(usize, @sizeOf(Block), 16);

    /// Allocates a zeroed block with `payload_bytes` after the header.
    pub fn create(struct_count: u32, payload_bytes: usize) ?*Block {
        const total = header_bytes + payload_bytes;
        const memory = std.c.malloc(total) orelse return null;
        const bytes: [*]u8 = @ptrCast(memory);
        @memset(bytes[0..total], 0);
        const block: *Block = @ptrCast(@alignCast(memory));
        block.* = .{ .remaining = .init(struct_count), .total_bytes = total };
        return block;
    }

    /// Like `create`, without zeroing the payload: for a caller that writes
    /// every byte it carves (schema templates copy a whole image in).
    pub fn createUndefined(struct_count: u32, payload_bytes: usize) ?*Block {
        const total = header_bytes + payload_bytes;
        const memory = std.c.malloc(total) orelse return null;
        const block: *Block = @ptrCast(@alignCast(memory));
        block.* = .{ .remaining = .init(struct_count), .total_bytes = total };
        return block;
    }

    pub fn payload(self: *Block) [*]u8 {
        const bytes: [*]u8 = @ptrCast(self);
        return bytes + header_bytes;
    }

    /// Drops one struct's reference; the last one frees the block.
    pub fn unref(self: *Block) void {
        self.unrefMany(1);
    }

    /// Drops `n` structs' references at once (a release that released
    /// several structs of the block); the last one frees the block.
    pub fn unrefMany(self: *Block, n: u32) void {
        if (lastRefs(&self.remaining, n)) {
            const hook = self.on_free;
            const context = self.on_free_context;
            if (self.pair) |pair| pair.halfDone() else std.c.free(self);
            if (hook) |run| run(context);
        }
    }
};

/// Drops `n` of the references counted in `count`; true if they were the
/// last ones. When the count is exactly `n`, the caller holds every
/// reference left (counts only go down, and each holder drops its own), so
/// no other thread can touch it any more: a load that sees `n` (acquire:
/// it sees every write made before the other holders dropped theirs)
/// replaces the read-modify-write, the usual case of a tree released whole
/// by one call.
fn lastRefs(count: *std.atomic.Value(u32), n: u32) bool {
    if (count.load(.acquire) == n) return true;
    const before = count.fetchSub(n, .acq_rel);
    std.debug.assert(before >= n);
    return before == n;
}

/// Two blocks in one allocation, for the two trees of one export (its
/// schema and its array): one malloc and one free instead of two. Each
/// block keeps its own count and on-free hook, so either tree may be moved
/// out and released on its own, at any time, on any thread, and each hook
/// runs when its own tree is done; the allocation is freed by whichever
/// block finishes last.
pub const Pair = struct {
    /// Blocks of the pair not finished yet (2, then 1, then freed).
    halves: std.atomic.Value(u32),

    const header_bytes = std.mem.alignForward(usize, @sizeOf(Pair), 16);

    pub const Blocks = struct { first: *Block, second: *Block };

    /// Allocates both blocks (payloads undefined, as `createUndefined`).
    pub fn create(first: Size, second: Size) ?Blocks {
        const first_bytes = std.mem.alignForward(usize, Block.header_bytes + first.payload_bytes, 16);
        const second_bytes = Block.header_bytes + second.payload_bytes;
        const memory = std.c.malloc(header_bytes + first_bytes + second_bytes) orelse return null;
        const bytes: [*]u8 = @ptrCast(memory);
        const pair: *Pair = @ptrCast(@alignCast(memory));
        pair.* = .{ .halves = .init(2) };
        const a: *Block = @ptrCast(@alignCast(bytes + header_bytes));
        const b: *Block = @ptrCast(@alignCast(bytes + header_bytes + first_bytes));
        a.* = .{ .remaining = .init(first.structs), .total_bytes = first_bytes, .pair = pair };
        b.* = .{ .remaining = .init(second.structs), .total_bytes = second_bytes, .pair = pair };
        return .{ .first = a, .second = b };
    }

    fn halfDone(self: *Pair) void {
        if (lastRefs(&self.halves, 1)) std.c.free(self);
    }
};

/// Carves aligned pieces out of a block's payload, in the order they were
/// counted by a `Sizer` with the same sequence of calls.
pub const Carver = struct {
    next: [*]u8,
    end: [*]u8,

    pub fn init(block: *Block, payload_bytes: usize) Carver {
        const start = block.payload();
        return .{ .next = start, .end = start + payload_bytes };
    }

    /// Like `take`, for a caller that sized the payload by an upper bound
    /// that a bad plan may exceed: null (nothing taken) if `n` items do not
    /// fit.
    pub fn takeChecked(self: *Carver, comptime T: type, n: usize) ?[]T {
        const address = std.mem.alignForward(usize, @intFromPtr(self.next), @alignOf(T));
        const room = @intFromPtr(self.end) -| address;
        if (address > @intFromPtr(self.end) or n > room / @sizeOf(T)) return null;
        return self.take(T, n);
    }

    pub fn take(self: *Carver, comptime T: type, n: usize) []T {
        const address = std.mem.alignForward(usize, @intFromPtr(self.next), @alignOf(T));
        const bytes = n * @sizeOf(T);
        std.debug.assert(address + bytes <= @intFromPtr(self.end));
        self.next = @ptrFromInt(address + bytes);
        const items: [*]T = @ptrFromInt(address);
        return items[0..n];
    }
};

/// Counts the payload a tree needs (alignment included) before allocating.
pub const Sizer = struct {
    bytes: usize = 0,

    pub fn add(self: *Sizer, comptime T: type, n: usize) void {
        self.bytes = std.mem.alignForward(usize, self.bytes, @alignOf(T)) + n * @sizeOf(T);
    }
};

test "the last unref frees the block and runs its hook once" {
    const Hook = struct {
        var calls: u32 = 0;
        fn run(context: ?*anyopaque) callconv(.c) void {
            _ = context;
            calls += 1;
        }
    };
    const block = Block.create(3, 64).?;
    block.on_free = Hook.run;
    block.unref();
    block.unref();
    try std.testing.expectEqual(@as(u32, 0), Hook.calls);
    block.unref();
    try std.testing.expectEqual(@as(u32, 1), Hook.calls);
}

test "carver hands out what the sizer counted" {
    var sizer: Sizer = .{};
    sizer.add(u8, 3);
    sizer.add(u64, 2);
    const block = Block.create(1, sizer.bytes).?;
    defer block.unref();
    var carver = Carver.init(block, sizer.bytes);
    const a = carver.take(u8, 3);
    const b = carver.take(u64, 2);
    try std.testing.expectEqual(@as(usize, 0), @intFromPtr(b.ptr) % 8);
    try std.testing.expect(@intFromPtr(b.ptr) > @intFromPtr(a.ptr));
}

test "a pair's blocks finish on their own, each hook once, in either order; the last frees the allocation" {
    const Hook = struct {
        var calls: [2]u32 = .{ 0, 0 };
        fn run(context: ?*anyopaque) callconv(.c) void {
            calls[@intFromPtr(context) - 1] += 1;
        }
    };
    for ([_]bool{ false, true }) |second_first| {
        Hook.calls = .{ 0, 0 };
        const blocks = Pair.create(.{ .structs = 2, .payload_bytes = 40 }, .{ .structs = 1, .payload_bytes = 24 }).?;
        blocks.first.on_free = Hook.run;
        blocks.first.on_free_context = @ptrFromInt(1);
        blocks.second.on_free = Hook.run;
        blocks.second.on_free_context = @ptrFromInt(2);
        try std.testing.expectEqual(@as(usize, 0), @intFromPtr(blocks.second) % 16);
        try std.testing.expect(@intFromPtr(blocks.first.payload()) + 40 <= @intFromPtr(blocks.second));
        @memset(blocks.first.payload()[0..40], 0xAA);
        @memset(blocks.second.payload()[0..24], 0xBB);
        if (second_first) {
            blocks.second.unref();
            try std.testing.expectEqual([2]u32{ 0, 1 }, Hook.calls);
            blocks.first.unrefMany(2);
        } else {
            blocks.first.unref();
            blocks.first.unref();
            try std.testing.expectEqual([2]u32{ 1, 0 }, Hook.calls);
            try std.testing.expectEqual(@as(u8, 0xBB), blocks.second.payload()[23]); // still allocated
            blocks.second.unref();
        }
        try std.testing.expectEqual([2]u32{ 1, 1 }, Hook.calls);
    }
}
