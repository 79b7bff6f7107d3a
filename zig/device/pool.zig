//! A sub-allocator over large blocks of device and pinned host memory, as
//! RMM's pools do: small transfers (many batches of a few thousand rows)
//! take a range of a block instead of one driver allocation each.
//!
//! Layout. One pool per runtime, device and memory kind (device, pinned).
//! Each block (`block_bytes`, one driver allocation) is carved from its
//! start, range after range at `range_alignment`; a range is never freed
//! alone. A block counts its live ranges and becomes empty (reusable from
//! its start) only when the last of them ended: every export pointing into
//! it has been released. Requests above `max_range_bytes` are not pooled
//! (the caller allocates directly).
//!
//! Stream order. Ending a range is the caller's statement that no queued
//! copy touches it any more: `toDevice`'s export waits for its event before
//! ending its range; `toHost` ends its result's range from the result's
//! release, after its copy was synchronized. Ending a range calls no driver
//! function, so it may run on any thread, in a release callback or in a
//! driver's host callback.
//!
//! Trimming. `trim` frees every empty block now. Blocks left empty for
//! `idle_limit_ns` are freed by the next `acquire` of the same pool.
//! Blocks are not counted in `live_device_allocations` (a device range is,
//! from `acquire` to `end`); `stats` gives the pool's blocks and high-water
//! mark.

const std = @import("std");
const status = @import("../core/status.zig");
const sync = @import("../core/sync.zig");
const counters = @import("../core/counters.zig");
const runtime = @import("runtime.zig");
const Runtime = runtime.Runtime;

/// Size of one block.
pub const block_bytes: usize = 8 << 20;
/// Largest request a block serves.
pub const max_range_bytes: usize = 1 << 20;
/// Ranges start at this alignment (Arrow's 64 bytes, and a cache line).
pub const range_alignment: usize = 256;
/// An empty block is freed once it has been empty this long (5 s), by the
/// next `acquire` of its pool, or by `trim`.
pub const idle_limit_ns: u64 = 5 * std.time.ns_per_s;

pub const Kind = enum { device, pinned };

const Block = struct {
    address: usize,
    used: usize = 0,
    live: usize = 0,
    empty_since: u64 = 0,
    next: ?*Block = null,
    /// Start and size of every range carved since the block was last
    /// empty, in address order (`find`).
    ranges: std.ArrayList([2]usize) = .empty,
};

const Pool = struct {
    mutex: sync.Mutex = .{},
    /// The block ranges are carved from.
    current: ?*Block = null,
    /// Blocks with live ranges that are not `current`.
    busy: ?*Block = null,
    /// Empty blocks, most recently emptied first (so oldest last).
    empty: ?*Block = null,
    blocks: usize = 0,
    high_water: usize = 0,
};

/// A range lent by `acquire`; `end` gives it back.
pub const Range = struct {
    pool: *Pool,
    block: *Block,
    address: usize,
    size: usize,
};

/// One pool per runtime (`Runtime.index`), kind and device.
var pools: [runtime.runtimes.len][@typeInfo(Kind).@"enum".field_names.len][runtime.max_devices]Pool = @splat(@splat(@splat(.{})));

fn poolOf(rt: *Runtime, device: i64, kind: Kind) ?*Pool {
    if (device < 0 or device >= runtime.max_devices) return null;
    return &pools[rt.index][@intFromEnum(kind)][@intCast(device)];
}

fn now() u64 {
    var ts: std.c.timespec = undefined;
    _ = std.c.clock_gettime(.MONOTONIC, &ts);
    return @as(u64, @intCast(ts.sec)) * std.time.ns_per_s + @as(u64, @intCast(ts.nsec));
}

fn memoryKind(kind: Kind) runtime.MemoryKind {
    return switch (kind) {
        .device => .device,
        .pinned => .pinned,
    };
}

fn unlink(list: *?*Block, block: *Block) void {
    var at = list;
    while (at.*) |b| : (at = &b.next) {
        if (b == block) {
            at.* = block.next;
            block.next = null;
            return;
        }
    }
    unreachable; // a block is on the list its state says
}

/// Takes the empty blocks past the idle limit off `pool` (locked).
fn takeExpired(pool: *Pool, t: u64) ?*Block {
    var at: *?*Block = &pool.empty;
    while (at.*) |b| : (at = &b.next) {
        if (t -% b.empty_since > idle_limit_ns) {
            at.* = null;
            return b;
        }
    }
    return null;
}

/// Carves `bytes` from `block` (locked), or null when the range cannot be
/// noted (no host memory): an unused current block then goes back to the
/// empty list, so that no current block is ever without a live range.
fn carve(pool: *Pool, block: *Block, bytes: usize) ?usize {
    block.ranges.append(std.heap.c_allocator, .{ block.address + block.used, bytes }) catch {
        if (block.live == 0 and pool.current == block) {
            pool.current = null;
            block.empty_since = now();
            block.next = pool.empty;
            pool.empty = block;
        }
        return null;
    };
    const address = block.address + block.used;
    block.used += bytes;
    block.live += 1;
    return address;
}

/// A range of `size` bytes of `kind` memory on `device` (checked by the
/// caller), or null: too large for the pool, or no block could be had
/// (the thread's error is left clear; the caller allocates directly).
/// Counted in `live_device_allocations` until `end`.
pub fn acquire(rt: *Runtime, device: i64, kind: Kind, size: usize) ?Range {
    if (size == 0 or size > max_range_bytes) return null;
    const pool = poolOf(rt, device, kind) orelse return null;
    const bytes = std.mem.alignForward(usize, size, range_alignment);
    pool.mutex.lock();
    const expired = takeExpired(pool, now());
    var block: ?*Block = pool.current;
    if (block) |c| {
        if (c.used + bytes > block_bytes) {
            // Full: it becomes empty when its last range ends.
            pool.current = null;
            c.next = pool.busy;
            pool.busy = c;
            block = null;
        }
    }
    if (block == null) {
        if (pool.empty) |e| {
            pool.empty = e.next;
            e.next = null;
            pool.current = e;
            block = e;
        }
    }
    if (block == null) {
        pool.mutex.unlock();
        freeBlocks(rt, device, kind, pool, expired);
        const fresh = allocateBlock(rt, device, kind) orelse return null;
        pool.mutex.lock();
        pool.blocks += 1;
        pool.high_water = @max(pool.high_water, pool.blocks);
        if (pool.current) |c| {
            // Another thread installed a block meanwhile: keep ours empty.
            fresh.empty_since = now();
            fresh.next = pool.empty;
            pool.empty = fresh;
            if (c.used + bytes <= block_bytes) {
                block = c;
            } else {
                pool.current = null;
                c.next = pool.busy;
                pool.busy = c;
                pool.empty = fresh.next;
                fresh.next = null;
                pool.current = fresh;
                block = fresh;
            }
        } else {
            pool.current = fresh;
            block = fresh;
        }
        const address = carve(pool, block.?, bytes);
        pool.mutex.unlock();
        return finish(pool, block.?, address, bytes);
    }
    const address = carve(pool, block.?, bytes);
    pool.mutex.unlock();
    freeBlocks(rt, device, kind, pool, expired);
    return finish(pool, block.?, address, bytes);
}

fn finish(pool: *Pool, block: *Block, address: ?usize, bytes: usize) ?Range {
    const a = address orelse return null; // no memory to note the range: not pooled
    if (isDevicePool(pool)) counters.add(.live_device_allocations, 1);
    return .{ .pool = pool, .block = block, .address = a, .size = bytes };
}

fn allocateBlock(rt: *Runtime, device: i64, kind: Kind) ?*Block {
    const block = std.heap.c_allocator.create(Block) catch return null;
    var address: usize = 0;
    if (rt.ops.alloc(@intCast(device), memoryKind(kind), block_bytes, &address) != .ok) {
        status.clear();
        std.heap.c_allocator.destroy(block);
        return null;
    }
    block.* = .{ .address = address };
    return block;
}

/// Frees the blocks of `list` (taken off the pool by the caller).
fn freeBlocks(rt: *Runtime, device: i64, kind: Kind, pool: *Pool, list: ?*Block) void {
    var next = list;
    var freed: usize = 0;
    while (next) |b| {
        next = b.next;
        _ = rt.ops.free(@intCast(device), memoryKind(kind), b.address);
        b.ranges.deinit(std.heap.c_allocator);
        std.heap.c_allocator.destroy(b);
        freed += 1;
    }
    if (freed == 0) return;
    pool.mutex.lock();
    pool.blocks -= freed;
    pool.mutex.unlock();
}

/// Ends a range: nothing reads or writes it any more. Any thread; calls no
/// driver function. Its block becomes empty when this was its last range.
pub fn end(range: Range) void {
    const pool = range.pool;
    const block = range.block;
    pool.mutex.lock();
    std.debug.assert(block.live > 0);
    block.live -= 1;
    if (block.live == 0) {
        // Empty: onto the empty list (the next acquire takes it back first),
        // where the idle limit applies to it.
        block.used = 0;
        block.ranges.clearRetainingCapacity();
        if (pool.current == block) {
            pool.current = null;
            block.empty_since = now();
            block.next = pool.empty;
            pool.empty = block;
        } else {
            unlink(&pool.busy, block);
            block.empty_since = now();
            block.next = pool.empty;
            pool.empty = block;
        }
    }
    pool.mutex.unlock();
    if (isDevicePool(pool)) counters.add(.live_device_allocations, -1);
}

/// Whether `p` is a pool of device memory (its ranges are counted in
/// `live_device_allocations`; pinned ranges, staging and `toHost` results,
/// are the library's own, like the staging blocks).
fn isDevicePool(p: *Pool) bool {
    for (&pools) |*by_kind| {
        const devices = &by_kind[@intFromEnum(Kind.device)];
        if (@intFromPtr(p) >= @intFromPtr(&devices[0]) and @intFromPtr(p) <= @intFromPtr(&devices[devices.len - 1])) return true;
    }
    return false;
}

/// Frees every empty block of every device of `rt`. Returns how many were freed.
pub fn trim(rt: *Runtime) usize {
    var total: usize = 0;
    for ([_]Kind{ .device, .pinned }) |kind| {
        for (0..runtime.max_devices) |device| {
            const pool = poolOf(rt, @intCast(device), kind).?;
            pool.mutex.lock();
            const list = pool.empty;
            pool.empty = null;
            pool.mutex.unlock();
            var count: usize = 0;
            var it = list;
            while (it) |b| : (it = b.next) count += 1;
            freeBlocks(rt, @intCast(device), kind, pool, list);
            total += count;
        }
    }
    return total;
}

pub const max_devices = runtime.max_devices;

/// Blocks of both kinds held on `device` of `rt`, and the live ranges of
/// its device blocks.
pub fn blocksOn(rt: *Runtime, device: i64) Stats {
    var out: Stats = .{};
    for ([_]Kind{ .device, .pinned }) |kind| {
        const p = poolOf(rt, device, kind) orelse return out;
        p.mutex.lock();
        out.blocks += p.blocks;
        if (kind == .device) out.ranges += liveRanges(p);
        p.mutex.unlock();
    }
    return out;
}

/// Live ranges of `p` (locked).
fn liveRanges(p: *Pool) usize {
    var n: usize = 0;
    if (p.current) |c| n += c.live;
    var it = p.busy;
    while (it) |b| : (it = b.next) n += b.live;
    return n;
}

pub const Stats = struct { blocks: usize = 0, high_water: usize = 0, ranges: usize = 0 };

/// Blocks of `kind` held now and at most, over every device of `rt`.
pub fn stats(rt: *Runtime, kind: Kind) Stats {
    var out: Stats = .{};
    for (0..runtime.max_devices) |device| {
        const pool = poolOf(rt, @intCast(device), kind).?;
        pool.mutex.lock();
        out.blocks += pool.blocks;
        out.high_water += pool.high_water;
        out.ranges += liveRanges(pool);
        pool.mutex.unlock();
    }
    return out;
}

/// The range of `rt`'s device pool on `device` that starts at or below
/// `address` and holds it, as (start, size), or null when `address` is in
/// no pooled block. The caller holds what keeps that range alive.
pub fn find(rt: *Runtime, device: i64, address: usize) ?[2]usize {
    const pool = poolOf(rt, device, .device) orelse return null;
    pool.mutex.lock();
    defer pool.mutex.unlock();
    var it: ?*Block = pool.current;
    var on_busy = false;
    while (true) {
        const b = it orelse {
            if (on_busy) return null;
            on_busy = true;
            it = pool.busy;
            continue;
        };
        if (b.live > 0 and address >= b.address and address < b.address + b.used) {
            const items = b.ranges.items;
            // The last range starting at or below `address`.
            var lo: usize = 0;
            var hi: usize = items.len;
            while (hi - lo > 1) {
                const mid = (lo + hi) / 2;
                if (items[mid][0] <= address) lo = mid else hi = mid;
            }
            const r = items[lo];
            return if (address >= r[0] and address < r[0] + r[1]) r else null;
        }
        it = if (on_busy) b.next else null;
    }
}

test "ranges of one block share it until the last ends" {
    try std.testing.expect(acquire(&runtime.runtimes[0], 0, .device, max_range_bytes + 1) == null);
    try std.testing.expect(acquire(&runtime.runtimes[0], 0, .device, 0) == null);
    try std.testing.expect(acquire(&runtime.runtimes[0], runtime.max_devices, .device, 8) == null);
}
