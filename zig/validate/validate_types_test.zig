//! Tests of validate.zig for views, unions, run-end encoding and
//! dictionaries, and of paths, nesting depth and device memory.

const std = @import("std");
const abi = @import("../core/abi.zig");
const status = @import("../core/status.zig");
const format = @import("../core/format.zig");
const validate = @import("validate.zig");
const Status = status.Status;
const Level = validate.Level;
const testing = std.testing;
const vt = @import("validate_testing.zig");
const Node = vt.Node;
const Spec = vt.Spec;
const Builder = vt.Builder;
const ptr = vt.ptr;
const check = vt.check;
const message = vt.message;
const expectFailure = vt.expectFailure;
const all_levels = vt.all_levels;
const releaseSchema = vt.releaseSchema;
const releaseArray = vt.releaseArray;
const view = vt.view;

// ---------------------------------------------------------------------------
// Views, unions, run-end encoding, dictionaries
// ---------------------------------------------------------------------------

test "views: variadic sizes come from the last buffer and bound every view (full)" {
    var b = Builder.init();
    defer b.deinit();
    const data = "0123456789abcdefghij";
    var views = [_][16]u8{ view(15, "2345", 0, 2), view(3, "xyz\x00", 0, 0) };
    @memcpy(views[1][4..7], "xyz");
    var sizes = [_]i64{20};
    const good = b.node(.{ .format = "vu", .length = 2, .buffers = &.{ null, ptr(&views), ptr(data), ptr(&sizes) } });
    var table: validate.NodeTable = .{};
    defer table.deinit();
    try testing.expectEqual(Status.ok, validate.validate(good.schema, good.array, .full, true, &table));
    try testing.expectEqual(@as(i64, 20), table.bufferSize(2));
    try testing.expectEqual(@as(i64, 32), table.bufferSize(1));

    var outside = [_][16]u8{ view(15, "2345", 0, 10), view(1, "x\x00\x00\x00", 0, 0) };
    const bad = b.node(.{ .format = "vz", .length = 2, .buffers = &.{ null, ptr(&outside), ptr(data), ptr(&sizes) } });
    try testing.expectEqual(Status.ok, check(bad, .default));
    try expectFailure(bad, .full, .invalid_layout, "view 0 (15 bytes at 10) is out of variadic buffer 0 (20 bytes)");
    var wrong_buffer = [_][16]u8{ view(15, "2345", 3, 0), view(1, "x\x00\x00\x00", 0, 0) };
    try expectFailure(b.node(.{ .format = "vz", .length = 2, .buffers = &.{ null, ptr(&wrong_buffer), ptr(data), ptr(&sizes) } }), .full, .invalid_layout, "points at variadic buffer 3 of 1");
    var wrong_prefix = [_][16]u8{ view(15, "zzzz", 0, 2), view(1, "x\x00\x00\x00", 0, 0) };
    try expectFailure(b.node(.{ .format = "vz", .length = 2, .buffers = &.{ null, ptr(&wrong_prefix), ptr(data), ptr(&sizes) } }), .full, .invalid_layout, "prefix does not match");
    var negative = [_]i64{-4};
    try expectFailure(b.node(.{ .format = "vz", .length = 2, .buffers = &.{ null, ptr(&views), ptr(data), ptr(&negative) } }), .default, .invalid_layout, "variadic buffer 0 has negative size -4");
    try expectFailure(b.node(.{ .format = "vz", .length = 2, .buffers = &.{ null, ptr(&views), ptr(data), null } }), .default, .invalid_layout, "variadic buffer sizes) is NULL");
}

test "unions: undeclared type ids and dense offsets out of the child (full)" {
    var b = Builder.init();
    defer b.deinit();
    const small = b.node(.{ .format = "i", .name = "a", .length = 2, .buffers = &.{ null, ptr(&vt.int32_values) } });
    const other = b.node(.{ .format = "n", .name = "b", .length = 4, .null_count = 4 });
    var ids = [_]i8{ 4, 9, 4, 9 };
    var offsets = [_]i32{ 0, 0, 1, 1 };
    const dense = b.node(.{ .format = "+ud:4,9", .length = 4, .buffers = &.{ ptr(&ids), ptr(&offsets) }, .children = &.{ small, other } });
    try testing.expectEqual(Status.ok, check(dense, .full));
    var bad_offsets = [_]i32{ 0, 0, 2, 1 };
    const dense_bad = b.node(.{ .format = "+ud:4,9", .length = 4, .buffers = &.{ ptr(&ids), ptr(&bad_offsets) }, .children = &.{ small, other } });
    try testing.expectEqual(Status.ok, check(dense_bad, .default));
    try expectFailure(dense_bad, .full, .invalid_layout, "slot 2 has offset 2 into child 0 of length 2");
    var undeclared = [_]i8{ 4, 9, 5, 9 };
    const sparse_a = b.node(.{ .format = "i", .length = 4, .buffers = &.{ null, ptr(&vt.int32_values) } });
    const sparse = b.node(.{ .format = "+us:4,9", .length = 4, .buffers = &.{ptr(&undeclared)}, .children = &.{ sparse_a, other } });
    try expectFailure(sparse, .full, .invalid_layout, "slot 2 has type id 5, which the format does not declare");
}

test "run-end encoding: run ends type, coverage, order; values length" {
    var b = Builder.init();
    defer b.deinit();
    var run_ends = [_]i32{ 2, 5, 8 };
    const ends = b.node(.{ .format = "i", .name = "run_ends", .length = 3, .buffers = &.{ null, ptr(&run_ends) } });
    const values = b.node(.{ .format = "i", .name = "values", .length = 3, .buffers = &.{ null, ptr(&vt.int32_values) } });
    try testing.expectEqual(Status.ok, check(b.node(.{ .format = "+r", .length = 6, .offset = 2, .children = &.{ ends, values } }), .full));
    try expectFailure(b.node(.{ .format = "+r", .length = 7, .offset = 2, .children = &.{ ends, values } }), .default, .invalid_layout, "last run end 8 is less than offset + length 9");
    const float_ends = b.node(.{ .format = "f", .name = "run_ends", .length = 3, .buffers = &.{ null, ptr(&run_ends) } });
    try expectFailure(b.node(.{ .format = "+r", .length = 6, .children = &.{ float_ends, values } }), .minimal, .invalid_layout, "run_ends must be int16, int32 or int64");
    var unordered = [_]i32{ 5, 2, 8 };
    const bad_ends = b.node(.{ .format = "i", .name = "run_ends", .length = 3, .buffers = &.{ null, ptr(&unordered) } });
    const unordered_tree = b.node(.{ .format = "+r", .length = 6, .children = &.{ bad_ends, values } });
    try testing.expectEqual(Status.ok, check(unordered_tree, .default));
    try expectFailure(unordered_tree, .full, .invalid_layout, "run end 1 (2) is not greater than the one before (5)");
    const few_values = b.node(.{ .format = "i", .name = "values", .length = 2, .buffers = &.{ null, ptr(&vt.int32_values) } });
    try expectFailure(b.node(.{ .format = "+r", .length = 6, .children = &.{ ends, few_values } }), .minimal, .invalid_layout, "values has length 2, less than run_ends' 3");
}

test "dictionary indices must fall inside the dictionary (full), nulls excepted" {
    var b = Builder.init();
    defer b.deinit();
    var offsets = [_]i32{ 0, 1, 2 };
    const dict = b.node(.{ .format = "u", .length = 2, .buffers = &.{ null, ptr(&offsets), ptr("ab") } });
    var indices = [_]i16{ 0, 1, 7, 1 };
    var valid = [_]u8{0b1011};
    const with_null = b.node(.{ .format = "s", .name = "d", .length = 4, .null_count = 1, .buffers = &.{ ptr(&valid), ptr(&indices) }, .dictionary = dict });
    try testing.expectEqual(Status.ok, check(with_null, .full)); // slot 2 is null
    const all_valid = b.node(.{ .format = "s", .name = "d", .length = 4, .buffers = &.{ null, ptr(&indices) }, .dictionary = dict });
    try testing.expectEqual(Status.ok, check(b.batch(4, &.{all_valid}), .default));
    try expectFailure(b.batch(4, &.{all_valid}), .full, .invalid_layout, "field \"d\": dictionary index 7 at slot 2 is out of the dictionary's 2 values");
}

test "errors inside a dictionary name the dictionary in the path" {
    var b = Builder.init();
    defer b.deinit();
    const dict = b.node(.{ .format = "u", .length = 2, .buffers = &.{ null, null, null } });
    var indices = [_]i8{ 0, 1 };
    const coded = b.node(.{ .format = "c", .name = "d", .length = 2, .buffers = &.{ null, ptr(&indices) }, .dictionary = dict });
    try expectFailure(b.batch(2, &.{coded}), .none, .invalid_layout, "field \"d\" > dictionary: buffer 1 (offsets32) is NULL");
}

// ---------------------------------------------------------------------------
// Paths, depth, devices
// ---------------------------------------------------------------------------

test "messages name the path from the root: field, then child index and name" {
    var b = Builder.init();
    defer b.deinit();
    const leaf = b.node(.{ .format = "u", .name = "x", .length = 1, .buffers = &.{ null, null, null } });
    const one = b.node(.{ .format = "i", .name = "w", .length = 1, .buffers = &.{ null, ptr(&vt.int32_values) } });
    const two = b.node(.{ .format = "n", .name = "v", .length = 1, .null_count = 1 });
    const inner = b.node(.{ .format = "+s", .name = "a", .length = 1, .buffers = &.{null}, .children = &.{ one, two, leaf } });
    const root = b.batch(1, &.{inner});
    try expectFailure(root, .minimal, .invalid_layout, "field \"a\" > child 2 \"x\": buffer 1 (offsets32) is NULL but must hold 8 bytes");
    try testing.expect(std.mem.startsWith(u8, message(), "field \"a\" > child 2 \"x\": "));
}

fn nestedLists(b: *Builder, depth: usize) Node {
    var node = b.node(.{ .format = "i", .name = "leaf", .length = 0, .buffers = &.{ null, null } });
    for (0..depth) |_| {
        node = b.node(.{ .format = "+l", .name = "item", .length = 0, .buffers = &.{ null, null }, .children = &.{node} });
    }
    return node;
}

test "nesting is limited to max_nesting_depth levels below the root" {
    var b = Builder.init();
    defer b.deinit();
    try testing.expectEqual(Status.ok, check(nestedLists(&b, validate.max_nesting_depth), .full));
    try expectFailure(nestedLists(&b, validate.max_nesting_depth + 1), .none, .too_deep, "nesting is deeper than 64 levels");
    // The path keeps its first three and last four levels.
    try testing.expect(std.mem.startsWith(u8, message(), "child 0 \"item\" > child 0 \"item\" > child 0 \"item\" > ... 57 levels ... > child 0 \"item\""));
}

test "memory the host cannot read is never dereferenced, at any level" {
    var b = Builder.init();
    defer b.deinit();
    // Addresses that would fault if read.
    const bogus: ?*const anyopaque = @ptrFromInt(0x10);
    const strings = b.node(.{ .format = "u", .name = "s", .length = 3, .buffers = &.{ bogus, bogus, bogus } });
    const views = b.node(.{ .format = "vu", .name = "v", .length = 3, .buffers = &.{ null, bogus, bogus, bogus } });
    const child = b.node(.{ .format = "i", .length = 9, .buffers = &.{ null, bogus } });
    const list = b.node(.{ .format = "+l", .name = "l", .length = 3, .buffers = &.{ null, bogus }, .children = &.{child} });
    const root = b.batch(3, &.{ strings, views, list });
    for (all_levels) |level| {
        var table: validate.NodeTable = .{};
        defer table.deinit();
        try testing.expectEqual(Status.ok, validate.validate(root.schema, root.array, level, false, &table));
        try testing.expectEqual(@as(i64, -1), table.bufferSize(3)); // string bytes: unknown
        try testing.expectEqual(@as(i64, 16), table.bufferSize(2)); // offsets: known from length
        try testing.expectEqual(@as(i64, -1), table.bufferSize(6)); // variadic bytes
    }
}

test "malformed metadata is refused with the path, at every level" {
    var b = Builder.init();
    defer b.deinit();
    const bad = [_]u8{ 1, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff };
    const child = b.node(.{ .format = "i", .name = "m", .length = 1, .buffers = &.{ null, ptr(&vt.int32_values) } });
    child.schema.metadata = &bad;
    for (all_levels) |level| try expectFailure(b.batch(1, &.{child}), level, .invalid_layout, "field \"m\": metadata has a key or value with a negative length");
    const good = [_]u8{ 1, 0, 0, 0, 1, 0, 0, 0, 'k', 0, 0, 0, 0 };
    child.schema.metadata = &good;
    try testing.expectEqual(Status.ok, check(b.batch(1, &.{child}), .full));
}
