//! Pinned (page-locked) staging blocks for copies of ordinary host memory.
//!
//! A copy straight out of pageable memory makes the driver stage it through
//! its own pinned buffer, synchronously with the host, at a fraction of the
//! bus's bandwidth. `toDevice` and `toHost` instead pack a batch's buffers
//! into one block of this pool (a host memcpy) and move the block with one
//! asynchronous copy.
//!
//! Bounds. Blocks are `block_bytes` each, allocated on first use with the
//! runtime's pinned allocator (cuMemAllocHost_v2 / hipHostMalloc) and kept
//! for reuse: at most `max_blocks` per device and runtime. A batch larger
//! than a block goes through one or two blocks in block-sized chunks
//! (transfer.zig). A batch arriving while every block is in flight is
//! copied directly from its own memory instead (the pageable path).
//!
//! Ownership. The pool owns its blocks. A block is lent to one transfer and
//! given back by `giveBack` once the copies touching it are done, from any
//! thread, including a driver's host callback (giving back calls no driver
//! function). `trim` frees the idle blocks. Blocks and their events are not
//! counted in `live_device_allocations` / `live_device_events`: they
//! belong to the library, not to an array.

const std = @import("std");
const status = @import("../core/status.zig");
const sync = @import("../core/sync.zig");
const runtime = @import("runtime.zig");
const Runtime = runtime.Runtime;

/// Size of one staging block.
pub const block_bytes: usize = 32 << 20;
/// Most blocks one device of one runtime keeps.
pub const max_blocks = 4;

pub const Block = struct {
    pool: *Pool,
    address: usize,
    /// Recorded after the last copy touching the block, so that a transfer
    /// holding it can wait before packing it again (chunked batches).
    /// Created on first use by the transfer; destroyed with the block.
    event: runtime.Event = null,
    next: ?*Block = null,
};

const Pool = struct {
    mutex: sync.Mutex = .{},
    idle: ?*Block = null,
    /// Blocks allocated and not yet freed: idle ones and lent ones.
    allocated: usize = 0,
};

/// One pool per runtime (`Runtime.index`) and device.
var pools: [runtime.runtimes.len][runtime.max_devices]Pool = @splat(@splat(.{}));

fn poolOf(rt: *Runtime, device: i64) ?*Pool {
    if (device < 0 or device >= runtime.max_devices) return null;
    return &pools[rt.index][@intCast(device)];
}

/// Lends a block for `bytes` bytes on `device` (checked by the caller), or
/// null: too large, every block lent, or the pinned allocation failed (the
/// caller then copies directly; the thread's error is left clear).
pub fn acquire(rt: *Runtime, device: i64, bytes: usize) ?*Block {
    if (bytes == 0 or bytes > block_bytes) return null;
    const pool = poolOf(rt, device) orelse return null;
    pool.mutex.lock();
    if (pool.idle) |block| {
        pool.idle = block.next;
        block.next = null;
        pool.mutex.unlock();
        return block;
    }
    if (pool.allocated >= max_blocks) {
        pool.mutex.unlock();
        return null;
    }
    pool.allocated += 1;
    std.debug.assert(pool.allocated <= max_blocks);
    pool.mutex.unlock();

    const block = std.heap.c_allocator.create(Block) catch {
        forget(pool);
        return null;
    };
    var address: usize = 0;
    if (rt.ops.alloc(@intCast(device), .pinned, block_bytes, &address) != .ok) {
        status.clear();
        std.heap.c_allocator.destroy(block);
        forget(pool);
        return null;
    }
    block.* = .{ .pool = pool, .address = address };
    return block;
}

fn forget(pool: *Pool) void {
    pool.mutex.lock();
    std.debug.assert(pool.allocated > 0); // only a block counted in `allocated` is forgotten
    pool.allocated -= 1;
    pool.mutex.unlock();
}

/// Gives a lent block back once nothing reads or writes it any more. Any
/// thread; calls no driver function.
pub fn giveBack(block: *Block) void {
    const pool = block.pool;
    pool.mutex.lock();
    // Lent blocks are off the idle list, and at most max_blocks exist.
    std.debug.assert(block.next == null and pool.idle != block);
    std.debug.assert(pool.allocated > 0 and pool.allocated <= max_blocks);
    block.next = pool.idle;
    pool.idle = block;
    pool.mutex.unlock();
}

/// A driver host callback (`launchHostFn`) that gives back its block.
pub fn giveBackCallback(context: ?*anyopaque) callconv(.c) void {
    giveBack(@ptrCast(@alignCast(context.?)));
}

/// Frees the idle blocks of every device of `rt` (lent ones stay lent and
/// come back later). Returns how many were freed.
pub fn trim(rt: *Runtime) usize {
    var freed: usize = 0;
    for (0..runtime.max_devices) |device| {
        const pool = poolOf(rt, @intCast(device)).?;
        pool.mutex.lock();
        var list = pool.idle;
        pool.idle = null;
        pool.mutex.unlock();
        while (list) |block| {
            list = block.next;
            // An idle block's event has completed: nothing waits on it.
            if (block.event != null) _ = rt.ops.eventDestroy(@intCast(device), block.event);
            _ = rt.ops.free(@intCast(device), .pinned, block.address);
            std.heap.c_allocator.destroy(block);
            forget(pool);
            freed += 1;
        }
    }
    return freed;
}

/// Blocks allocated (idle and lent) on every device of `rt`.
pub fn allocated(rt: *Runtime) usize {
    var total: usize = 0;
    for (0..runtime.max_devices) |device| {
        const pool = poolOf(rt, @intCast(device)).?;
        pool.mutex.lock();
        total += pool.allocated;
        pool.mutex.unlock();
    }
    return total;
}

test "a batch larger than a block is never staged" {
    try std.testing.expect(acquire(&runtime.runtimes[0], 0, block_bytes + 1) == null);
    try std.testing.expect(acquire(&runtime.runtimes[0], 0, 0) == null);
    try std.testing.expect(acquire(&runtime.runtimes[0], runtime.max_devices, 8) == null);
}
