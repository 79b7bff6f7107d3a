//! Import owners held by exports: what keeps a producer's memory alive while
//! an export of data converted from its import points into it.
//!
//! Converting an import (apache-arrow objects over owner memory) and
//! exporting the result hands C pointers into the *producer's* buffers. The
//! JS views that hold owner references can be detached (`dispose()`) at any
//! time, so the export takes references of its own: JS registers them here
//! under the export's keepalive id before the tree is built, and the
//! export's release (keepalive.finish, any thread) drops them. So the
//! producer's release runs after both the import handle and every export
//! into it let go, in either order, exactly once.
//!
//! Threads: `hold` from the JS thread; `drop` from any thread. One mutex
//! guards the table; owners are released with no lock held (a release runs
//! the producer's callbacks).

const std = @import("std");
const status = @import("../core/status.zig");
const Mutex = @import("../core/sync.zig").Mutex;
const Owner = @import("../import/owner.zig").Owner;
const Status = status.Status;

var mutex: Mutex = .{};
var held: std.AutoHashMapUnmanaged(u64, []*Owner) = .empty;
/// Entries in `held`, readable without the lock: most exports hold no
/// owner, and their release then skips the lock.
var entries: std.atomic.Value(usize) = .init(0);

/// Takes one reference on each of `owners` (each alive: the caller holds
/// references) for keepalive id `id`, until `drop(id)`. On error nothing
/// is held.
pub fn hold(id: u64, owners: []const *Owner) Status {
    if (owners.len == 0) return .ok;
    if (id == 0) return status.fail(.invalid_argument, "keepalive id 0 cannot hold import owners", .{});
    const copy = std.heap.c_allocator.dupe(*Owner, owners) catch
        return status.fail(.out_of_memory, "out of memory holding {d} import owners for an export", .{owners.len});
    mutex.lock();
    const slot = held.getOrPut(std.heap.c_allocator, id) catch {
        mutex.unlock();
        std.heap.c_allocator.free(copy);
        return status.fail(.out_of_memory, "out of memory holding {d} import owners for an export", .{owners.len});
    };
    if (slot.found_existing) {
        mutex.unlock();
        std.heap.c_allocator.free(copy);
        return status.fail(.invalid_argument, "keepalive id {d} already holds import owners", .{id});
    }
    for (copy) |owner| owner.retain(1);
    slot.value_ptr.* = copy;
    _ = entries.fetchAdd(1, .release);
    mutex.unlock();
    return .ok;
}

/// Drops the references held for `id` (none: a no-op). Any thread.
pub fn drop(id: u64) void {
    if (entries.load(.acquire) == 0) return;
    mutex.lock();
    const removed = held.fetchRemove(id);
    if (removed != null) _ = entries.fetchSub(1, .release);
    mutex.unlock();
    const kv = removed orelse return;
    for (kv.value) |owner| owner.release();
    std.heap.c_allocator.free(kv.value);
}

/// Ids holding owners (for tests).
pub fn count() usize {
    return entries.load(.acquire);
}

// ---------------------------------------------------------------------------

const testing = std.testing;
const abi = @import("../core/abi.zig");
const owner_mod = @import("../import/owner.zig");

const CountingProducer = struct {
    var releases: u32 = 0;
    var data = [_]i32{ 1, 2, 3 };
    var buffers = [_]?*const anyopaque{ null, @ptrCast(&data) };

    fn releaseSchema(s: *abi.ArrowSchema) callconv(.c) void {
        s.release = null;
    }
    fn releaseArray(a: *abi.ArrowArray) callconv(.c) void {
        releases += 1;
        a.release = null;
    }
    fn import() !*Owner {
        var schema: abi.ArrowSchema = .empty;
        schema.format = "i";
        schema.release = releaseSchema;
        var array: abi.ArrowDeviceArray = .empty;
        array.array = .{ .length = 3, .null_count = 0, .offset = 0, .n_buffers = 2, .n_children = 0, .buffers = &buffers, .children = null, .dictionary = null, .release = releaseArray, .private_data = null };
        var out: ?*Owner = null;
        try testing.expectEqual(Status.ok, owner_mod.import(&schema, &array, .default, &out));
        return out.?;
    }
};

test "an export's hold keeps the producer's data past the import's own release, in either order" {
    CountingProducer.releases = 0;
    // The import lets go first: the release waits for the export.
    const a = try CountingProducer.import();
    try testing.expectEqual(Status.ok, hold(901, &.{a}));
    a.release();
    try testing.expectEqual(@as(u32, 0), CountingProducer.releases);
    drop(901);
    try testing.expectEqual(@as(u32, 1), CountingProducer.releases);
    drop(901); // dropped already: nothing left to release
    try testing.expectEqual(@as(u32, 1), CountingProducer.releases);

    // The export lets go first.
    const b = try CountingProducer.import();
    try testing.expectEqual(Status.ok, hold(902, &.{ b, b }));
    try testing.expectEqual(Status.invalid_argument, hold(902, &.{b})); // one hold per id
    drop(902);
    try testing.expectEqual(@as(u32, 1), CountingProducer.releases);
    b.release();
    try testing.expectEqual(@as(u32, 2), CountingProducer.releases);
    try testing.expectEqual(@as(usize, 0), count());
}
