//! Import owners held by exports (export/holds.zig): an export of data
//! converted from an import takes one reference on each owner its buffers
//! point into, given back by the export's release on any thread.

const std = @import("std");
const status = @import("../core/status.zig");
const holds = @import("../export/holds.zig");
const owner_mod = @import("owner.zig");
const Owner = owner_mod.Owner;
const Status = status.Status;

/// Takes one reference on each of `owners` (each alive: the caller holds
/// references) for keepalive id `id`, until `holds.drop(id)`. On error
/// nothing is held.
pub fn hold(id: u64, owners: []const *Owner) Status {
    // Taken before the table sees them, so that a drop can never give back
    // a reference not yet taken; on error they go back at once (the
    // caller's own references keep every owner alive meanwhile).
    for (owners) |owner| owner.retain(1);
    const held = holds.hold(id, @ptrCast(owners), releaseOwner);
    if (held != .ok) {
        for (owners) |owner| owner.release();
    }
    return held;
}

fn releaseOwner(target: *anyopaque) void {
    const owner: *Owner = @ptrCast(@alignCast(target));
    owner.release();
}

// ---------------------------------------------------------------------------

const testing = std.testing;
const abi = @import("../core/abi.zig");

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
    holds.drop(901);
    try testing.expectEqual(@as(u32, 1), CountingProducer.releases);
    holds.drop(901); // dropped already: nothing left to release
    try testing.expectEqual(@as(u32, 1), CountingProducer.releases);

    // The export lets go first.
    const b = try CountingProducer.import();
    try testing.expectEqual(Status.ok, hold(902, &.{ b, b }));
    try testing.expectEqual(Status.invalid_argument, hold(902, &.{b})); // one hold per id: the failed hold takes nothing
    holds.drop(902);
    try testing.expectEqual(@as(u32, 1), CountingProducer.releases);
    b.release();
    try testing.expectEqual(@as(u32, 2), CountingProducer.releases);
    try testing.expectEqual(@as(usize, 0), holds.count());
}
