//! References an export holds on memory it points into but did not build:
//! what keeps a producer's memory alive while an export of data converted
//! from its import points into it.
//!
//! Converting an import (apache-arrow objects over owner memory) and
//! exporting the result hands C pointers into the *producer's* buffers. The
//! JS views that hold owner references can be detached (`dispose()`) at any
//! time, so the export takes references of its own: they are registered
//! here under the export's keepalive id before the tree is built, and the
//! export's release (keepalive.finish, any thread) drops them. So the
//! producer's release runs after both the import handle and every export
//! into it let go, in either order, exactly once.
//!
//! This table knows a held reference only as an address and the function
//! that gives it back, so the export layer needs nothing from the import
//! layer: import/owner_holds.zig registers import owners here.
//!
//! Threads: `hold` from the JS thread; `drop` from any thread. One mutex
//! guards the table; references are released with no lock held (a release
//! may run a producer's callbacks).

const std = @import("std");
const status = @import("../core/status.zig");
const Mutex = @import("../core/sync.zig").Mutex;
const Status = status.Status;

/// Gives back one reference on `target`. Any thread, no lock held.
pub const Release = *const fn (target: *anyopaque) void;

const Entry = struct {
    targets: []*anyopaque,
    release: Release,
};

var mutex: Mutex = .{};
var held: std.AutoHashMapUnmanaged(u64, Entry) = .empty;
/// Entries in `held`, readable without the lock: most exports hold
/// nothing, and their release then skips the lock.
var entries: std.atomic.Value(usize) = .init(0);

/// Keeps one reference on each of `targets` (references the caller hands
/// over) for keepalive id `id`, until `drop(id)` gives each back with
/// `release`. On error nothing is held and the references stay the
/// caller's.
pub fn hold(id: u64, targets: []const *anyopaque, release: Release) Status {
    if (targets.len == 0) return .ok;
    if (id == 0) return status.fail(.invalid_argument, "keepalive id 0 cannot hold import owners", .{});
    const copy = std.heap.c_allocator.dupe(*anyopaque, targets) catch
        return status.fail(.out_of_memory, "out of memory holding {d} import owners for an export", .{targets.len});
    mutex.lock();
    const slot = held.getOrPut(std.heap.c_allocator, id) catch {
        mutex.unlock();
        std.heap.c_allocator.free(copy);
        return status.fail(.out_of_memory, "out of memory holding {d} import owners for an export", .{targets.len});
    };
    if (slot.found_existing) {
        mutex.unlock();
        std.heap.c_allocator.free(copy);
        return status.fail(.invalid_argument, "keepalive id {d} already holds import owners", .{id});
    }
    slot.value_ptr.* = .{ .targets = copy, .release = release };
    _ = entries.fetchAdd(1, .release);
    mutex.unlock();
    return .ok;
}

/// Gives back the references held for `id` (none: a no-op). Any thread.
pub fn drop(id: u64) void {
    if (entries.load(.acquire) == 0) return;
    mutex.lock();
    const removed = held.fetchRemove(id);
    if (removed != null) _ = entries.fetchSub(1, .release);
    mutex.unlock();
    const kv = removed orelse return;
    for (kv.value.targets) |target| kv.value.release(target);
    std.heap.c_allocator.free(kv.value.targets);
}

/// Ids holding references (for tests).
pub fn count() usize {
    return entries.load(.acquire);
}

// ---------------------------------------------------------------------------

const testing = std.testing;

const Counted = struct {
    var released: u32 = 0;
    var slot: u8 = 0;
    fn release(target: *anyopaque) void {
        std.debug.assert(target == @as(*anyopaque, &slot));
        released += 1;
    }
};

test "a held reference is given back once, by the first drop" {
    Counted.released = 0;
    const target: *anyopaque = &Counted.slot;
    try testing.expectEqual(Status.ok, hold(911, &.{ target, target }, Counted.release));
    try testing.expectEqual(Status.invalid_argument, hold(911, &.{target}, Counted.release)); // one hold per id
    try testing.expectEqual(Status.invalid_argument, hold(0, &.{target}, Counted.release));
    try testing.expectEqual(Status.ok, hold(912, &.{}, Counted.release)); // nothing to hold
    try testing.expectEqual(@as(usize, 1), count());
    drop(911);
    try testing.expectEqual(@as(u32, 2), Counted.released);
    drop(911);
    try testing.expectEqual(@as(u32, 2), Counted.released);
    try testing.expectEqual(@as(usize, 0), count());
}
