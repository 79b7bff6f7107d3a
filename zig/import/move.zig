//! Moving C structs the caller holds, for languages that cannot copy a C
//! struct and clear a function pointer atomically with respect to their own
//! bookkeeping (Bun), and the spec's child move-out.
//!
//! A move is a bitwise copy to `dst` followed by `src.release = NULL`,
//! without calling anything: ownership of the whole tree (and of everything
//! its release frees) travels with the copy. The destination must be
//! released (or zeroed) already, so a move never overwrites a live struct
//! and leaks it. Nothing here allocates; every function runs on any thread.
//!
//! Child move-out (CDataInterface.rst, "Moving child arrays"): a consumer may
//! move children out of a parent one by one, and must then release the
//! parent at once; the parent's release skips the children whose `release`
//! is already NULL. The moved child is released on its own, later, by
//! whoever holds it.

const std = @import("std");
const abi = @import("../core/abi.zig");
const status = @import("../core/status.zig");
const Status = status.Status;
const fail = status.fail;

fn checkEnds(comptime what: []const u8, src_present: bool, src_released: bool, dst_present: bool, dst_released: bool) Status {
    if (!src_present) return fail(.invalid_argument, "source " ++ what ++ " pointer is NULL", .{});
    if (!dst_present) return fail(.invalid_argument, "destination " ++ what ++ " pointer is NULL", .{});
    if (src_released) return fail(.released, "source " ++ what ++ " is released (its release callback is NULL): nothing to move", .{});
    if (!dst_released) return fail(.invalid_argument, "destination " ++ what ++ " holds a live struct (its release is not NULL); release it first", .{});
    return .ok;
}

/// Moves `src` to `dst`. `dst` must be released. On error nothing changes.
pub fn moveSchema(src: ?*abi.ArrowSchema, dst: ?*abi.ArrowSchema) Status {
    if (src != null and src == dst) return .ok; // moving onto itself: nothing to do
    const s = checkEnds("schema", src != null, src != null and src.?.release == null, dst != null, dst != null and dst.?.release == null);
    if (s != .ok) return s;
    dst.?.* = src.?.*;
    src.?.release = null;
    return .ok;
}

pub fn moveArray(src: ?*abi.ArrowArray, dst: ?*abi.ArrowArray) Status {
    if (src != null and src == dst) return .ok;
    const s = checkEnds("array", src != null, src != null and src.?.release == null, dst != null, dst != null and dst.?.release == null);
    if (s != .ok) return s;
    dst.?.* = src.?.*;
    src.?.release = null;
    return .ok;
}

/// Moves the whole device array (array, device id and type, sync event).
pub fn moveDeviceArray(src: ?*abi.ArrowDeviceArray, dst: ?*abi.ArrowDeviceArray) Status {
    if (src != null and src == dst) return .ok;
    const s = checkEnds("device array", src != null, src != null and src.?.array.release == null, dst != null, dst != null and dst.?.array.release == null);
    if (s != .ok) return s;
    dst.?.* = src.?.*;
    src.?.array.release = null;
    return .ok;
}

/// Moves child `index` of `parent` to `dst`. The parent stays live (its
/// other children too) and must be released next.
pub fn moveSchemaChild(parent: ?*abi.ArrowSchema, index: i64, dst: ?*abi.ArrowSchema) Status {
    const p = parent orelse return fail(.invalid_argument, "parent schema pointer is NULL", .{});
    if (p.release == null) return fail(.released, "parent schema is released: its children are gone", .{});
    if (index < 0 or index >= p.n_children) return fail(.out_of_range, "child {d} is out of the schema's {d} children", .{ index, p.n_children });
    const children = p.children orelse return fail(.invalid_layout, "schema children is NULL but n_children is {d}", .{p.n_children});
    const child = children[@intCast(index)] orelse return fail(.invalid_layout, "schema child {d} is NULL", .{index});
    if (child.release == null) return fail(.released, "schema child {d} was already moved out or released", .{index});
    return moveSchema(child, dst);
}

pub fn moveArrayChild(parent: ?*abi.ArrowArray, index: i64, dst: ?*abi.ArrowArray) Status {
    const p = parent orelse return fail(.invalid_argument, "parent array pointer is NULL", .{});
    if (p.release == null) return fail(.released, "parent array is released: its children are gone", .{});
    if (index < 0 or index >= p.n_children) return fail(.out_of_range, "child {d} is out of the array's {d} children", .{ index, p.n_children });
    const children = p.children orelse return fail(.invalid_layout, "array children is NULL but n_children is {d}", .{p.n_children});
    const child = children[@intCast(index)] orelse return fail(.invalid_layout, "array child {d} is NULL", .{index});
    if (child.release == null) return fail(.released, "array child {d} was already moved out or released", .{index});
    return moveArray(child, dst);
}

// ---------------------------------------------------------------------------

const testing = std.testing;

/// A parent with two children whose releases are counted; the parent's
/// release skips children already moved out, as the spec requires.
const Family = struct {
    var releases: [3]u32 = .{ 0, 0, 0 };
    var child_structs: [2]abi.ArrowArray = undefined;
    var child_pointers: [2]?*abi.ArrowArray = undefined;

    fn releaseChild(array: *abi.ArrowArray) callconv(.c) void {
        const which: *u32 = @ptrCast(@alignCast(array.private_data.?));
        which.* += 1;
        array.release = null;
    }
    fn releaseParent(array: *abi.ArrowArray) callconv(.c) void {
        for (array.children.?[0..@intCast(array.n_children)]) |child| {
            if (child.?.release) |release| release(child.?);
        }
        releases[0] += 1;
        array.release = null;
    }
    fn make() abi.ArrowArray {
        releases = .{ 0, 0, 0 };
        for (0..2) |i| {
            child_structs[i] = .empty;
            child_structs[i].release = releaseChild;
            child_structs[i].private_data = &releases[i + 1];
            child_structs[i].length = @intCast(i + 10);
            child_pointers[i] = &child_structs[i];
        }
        var parent: abi.ArrowArray = .empty;
        parent.n_children = 2;
        parent.children = &child_pointers;
        parent.release = releaseParent;
        return parent;
    }
};

test "a move copies the struct and marks the source released without calling it" {
    var parent = Family.make();
    var moved: abi.ArrowArray = .empty;
    try testing.expectEqual(Status.ok, moveArray(&parent, &moved));
    try testing.expect(parent.release == null);
    try testing.expectEqual(@as(i64, 2), moved.n_children);
    try testing.expectEqual(@as(u32, 0), Family.releases[0]);
    moved.release.?(&moved);
    try testing.expectEqual([3]u32{ 1, 1, 1 }, Family.releases);
}

test "a move refuses NULL ends, a released source and a live destination" {
    var parent = Family.make();
    var live = Family.make();
    var empty: abi.ArrowArray = .empty;
    try testing.expectEqual(Status.invalid_argument, moveArray(null, &empty));
    try testing.expectEqual(Status.invalid_argument, moveArray(&parent, null));
    try testing.expectEqual(Status.invalid_argument, moveArray(&parent, &live));
    try testing.expect(std.mem.indexOf(u8, std.mem.span(status.lastMessage()), "release it first") != null);
    try testing.expect(parent.release != null); // unchanged on error
    var other_empty: abi.ArrowArray = .empty;
    try testing.expectEqual(Status.released, moveArray(&empty, &other_empty));
    live.release.?(&live);
    parent.release.?(&parent);
}

test "children move out one by one; the parent's release then skips them" {
    var parent = Family.make();
    var first: abi.ArrowArray = .empty;
    try testing.expectEqual(Status.ok, moveArrayChild(&parent, 1, &first));
    try testing.expectEqual(@as(i64, 11), first.length);
    try testing.expectEqual(Status.released, moveArrayChild(&parent, 1, &first));
    try testing.expectEqual(Status.out_of_range, moveArrayChild(&parent, 2, &first));
    try testing.expectEqual(Status.out_of_range, moveArrayChild(&parent, -1, &first));
    parent.release.?(&parent);
    try testing.expectEqual([3]u32{ 1, 1, 0 }, Family.releases); // child 1 not released by the parent
    try testing.expectEqual(Status.released, moveArrayChild(&parent, 0, &first));
    first.release.?(&first);
    try testing.expectEqual([3]u32{ 1, 1, 1 }, Family.releases);
}

test "device arrays move whole; schemas and schema children move like arrays" {
    var device: abi.ArrowDeviceArray = .empty;
    device.array = Family.make();
    device.device_type = abi.device_cuda;
    device.device_id = 3;
    var moved: abi.ArrowDeviceArray = .empty;
    try testing.expectEqual(Status.ok, moveDeviceArray(&device, &moved));
    try testing.expect(device.array.release == null);
    try testing.expectEqual(abi.device_cuda, moved.device_type);
    try testing.expectEqual(@as(i64, 3), moved.device_id);
    moved.array.release.?(&moved.array);

    const S = struct {
        fn release(schema: *abi.ArrowSchema) callconv(.c) void {
            schema.release = null;
        }
    };
    var child: abi.ArrowSchema = .empty;
    child.format = "i";
    child.release = S.release;
    var children = [_]?*abi.ArrowSchema{&child};
    var schema: abi.ArrowSchema = .empty;
    schema.format = "+s";
    schema.n_children = 1;
    schema.children = &children;
    schema.release = S.release;
    var out: abi.ArrowSchema = .empty;
    try testing.expectEqual(Status.ok, moveSchemaChild(&schema, 0, &out));
    try testing.expectEqualStrings("i", std.mem.span(out.format.?));
    try testing.expect(child.release == null);
    try testing.expectEqual(Status.ok, moveSchema(&out, &out)); // onto itself: no-op
    try testing.expect(out.release != null);
}
