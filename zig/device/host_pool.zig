//! Reused host memory for `toHost` results.
//!
//! Fresh memory pays a page fault on first touch of every page. A result's
//! memory instead comes from a free list per power-of-two size class, so
//! repeated copies of same-size batches land in warm pages.
//!
//! Ownership. A piece is the result array's from `acquire` until its
//! release calls `giveBack` (any thread), then the pool's. The pool keeps
//! at most `max_idle_bytes` idle; beyond that a given-back piece is freed.
//! `trim` frees every idle piece. A piece starts with a `header_bytes`
//! header (its class); the caller gets the memory after it.

const std = @import("std");
const sync = @import("../core/sync.zig");

/// Most bytes kept idle.
pub const max_idle_bytes: usize = 256 << 20;
/// Header before each piece; keeps the piece at 64-byte alignment.
pub const header_bytes = 64;
const min_class = 12; // 4 KiB
const classes = 48;

const Header = struct { class: usize, next: ?*Header };

var mutex: sync.Mutex = .{};
var idle: [classes]?*Header = @splat(null);
var idle_bytes: usize = 0;

fn classOf(bytes: usize) ?usize {
    const needed = bytes + header_bytes;
    const class = @max(min_class, std.math.log2_int_ceil(usize, needed));
    return if (class < classes) class else null;
}

/// `bytes` bytes at 64-byte alignment, or null when out of memory.
pub fn acquire(bytes: usize) ?[*]u8 {
    const class = classOf(bytes) orelse return null;
    mutex.lock();
    if (idle[class]) |header| {
        idle[class] = header.next;
        idle_bytes -= @as(usize, 1) << @intCast(class);
        mutex.unlock();
        std.debug.assert(header.class == class);
        header.next = null;
        return @as([*]u8, @ptrCast(header)) + header_bytes;
    }
    mutex.unlock();
    var memory: ?*anyopaque = null;
    if (std.c.posix_memalign(&memory, header_bytes, @as(usize, 1) << @intCast(class)) != 0) return null;
    const header: *Header = @ptrCast(@alignCast(memory.?));
    header.* = .{ .class = class, .next = null };
    return @as([*]u8, @ptrCast(header)) + header_bytes;
}

/// Takes back a piece `acquire` returned. Any thread.
pub fn giveBack(piece: [*]u8) void {
    const header: *Header = @ptrCast(@alignCast(piece - header_bytes));
    std.debug.assert(header.class >= min_class and header.class < classes and header.next == null);
    const size = @as(usize, 1) << @intCast(header.class);
    mutex.lock();
    if (idle_bytes + size <= max_idle_bytes) {
        header.next = idle[header.class];
        idle[header.class] = header;
        idle_bytes += size;
        mutex.unlock();
        return;
    }
    mutex.unlock();
    std.c.free(header);
}

/// Frees every idle piece; returns how many bytes were freed.
pub fn trim() usize {
    mutex.lock();
    var lists = idle;
    idle = @splat(null);
    const freed = idle_bytes;
    idle_bytes = 0;
    mutex.unlock();
    for (&lists) |*list| {
        while (list.*) |header| {
            list.* = header.next;
            std.c.free(header);
        }
    }
    return freed;
}

test "a given-back piece is reused for the same size class, and trim frees it" {
    const a = acquire(10_000).?;
    giveBack(a);
    const b = acquire(9_000).?;
    try std.testing.expectEqual(a, b);
    try std.testing.expectEqual(@as(usize, 0), @intFromPtr(b) % 64);
    giveBack(b);
    try std.testing.expect(trim() >= 16384);
    try std.testing.expectEqual(@as(usize, 0), trim());
}
