//! Tests of validate.zig: every rule, at every level, with the exact path in
//! the message: valid trees and the node table, struct-level problems,
//! offsets. Types with their own rules: validate_types_test.zig; integers
//! near their limits and the layouts Arrow C++ agrees on:
//! validate_limits_test.zig. Trees come from validate_testing.zig.

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
// Valid trees and the node table
// ---------------------------------------------------------------------------

test "a valid primitive passes at every level and the table sizes its buffers from offset + length" {
    var b = Builder.init();
    defer b.deinit();
    const tree = b.node(.{ .format = "i", .length = 3, .offset = 2, .null_count = 1, .buffers = &.{ ptr(&vt.validity_bits), ptr(&vt.int32_values) } });
    for (all_levels) |level| {
        var table: validate.NodeTable = .{};
        defer table.deinit();
        try testing.expectEqual(Status.ok, validate.validate(tree.schema, tree.array, level, true, &table));
        try testing.expectEqual(@as(usize, 1), table.nodeCount());
        try testing.expectEqual(@as(i64, 1), table.bufferSize(0)); // 5 bits
        try testing.expectEqual(@as(i64, 20), table.bufferSize(1)); // 5 int32
        try testing.expectEqual(@intFromPtr(&vt.int32_values), table.bufferAddress(1));
        try testing.expectEqual(@as(f64, 2), table.get(0, .offset));
        try testing.expectEqual(@as(f64, -1), table.get(0, .parent));
    }
}

test "node table: children are contiguous, the dictionary follows them, parents point back" {
    var b = Builder.init();
    defer b.deinit();
    var offsets = [_]i32{ 0, 2, 5 };
    var bytes = [_]u8{ 'a', 'b', 'c', 'd', 'e' };
    var indices = [_]i8{ 0, 1, 0 };
    const dict = b.node(.{ .format = "u", .length = 2, .buffers = &.{ null, ptr(&offsets), ptr(&bytes) } });
    const coded = b.node(.{ .format = "c", .name = "d", .length = 3, .buffers = &.{ null, ptr(&indices) }, .dictionary = dict });
    const plain = b.node(.{ .format = "i", .name = "i", .length = 3, .buffers = &.{ null, ptr(&vt.int32_values) } });
    const root = b.batch(3, &.{ coded, plain });
    var table: validate.NodeTable = .{};
    defer table.deinit();
    try testing.expectEqual(Status.ok, validate.validate(root.schema, root.array, .full, true, &table));
    try testing.expectEqual(@as(usize, 4), table.nodeCount());
    try testing.expectEqual(@as(f64, 1), table.get(0, .first_child));
    try testing.expectEqual(@as(f64, 2), table.get(0, .n_children));
    try testing.expectEqual(@as(f64, 3), table.get(1, .dictionary)); // after both children
    try testing.expectEqual(@as(f64, 1), table.get(3, .parent));
    try testing.expectEqual(@as(f64, @floatFromInt(@intFromEnum(format.TypeId.utf8))), table.get(3, .type_id));
    // The dictionary's value bytes are sized from its last offset.
    const dict_first_buffer: usize = @intFromFloat(table.get(3, .first_buffer));
    try testing.expectEqual(@as(i64, 5), table.bufferSize(dict_first_buffer + 2));
    try testing.expectEqual(@as(i64, 12), table.bufferSize(dict_first_buffer + 1));
}

test "every word of the node and buffer tables is written: nothing is left from the memory they reuse" {
    // The table reserves its records without zeroing them (validate.zig):
    // poisoned memory shows any word that the walk would leave unwritten.
    var b = Builder.init();
    defer b.deinit();
    var offsets = [_]i32{ 0, 2, 5 };
    var bytes = [_]u8{ 'a', 'b', 'c', 'd', 'e' };
    var indices = [_]i8{ 0, 1, 0 };
    var list_offsets = [_]i32{ 0, 1, 3, 3 };
    const dict = b.node(.{ .format = "u", .length = 2, .buffers = &.{ null, ptr(&offsets), ptr(&bytes) } });
    const coded = b.node(.{ .format = "c", .name = "d", .length = 3, .buffers = &.{ null, ptr(&indices) }, .dictionary = dict });
    const item = b.node(.{ .format = "i", .name = "item", .length = 3, .buffers = &.{ null, ptr(&vt.int32_values) } });
    const list = b.node(.{ .format = "+l", .name = "l", .length = 3, .buffers = &.{ null, ptr(&list_offsets) }, .children = &.{item} });
    const plain = b.node(.{ .format = "i", .name = "i", .length = 3, .offset = 1, .null_count = 1, .buffers = &.{ ptr(&vt.validity_bits), ptr(&vt.int32_values) } });
    const root = b.batch(3, &.{ coded, list, plain });
    for (all_levels) |level| {
        var table: validate.NodeTable = .{};
        defer table.deinit();
        try table.nodes.ensureTotalCapacityPrecise(std.heap.c_allocator, 64 * validate.node_words);
        try table.buffers.ensureTotalCapacityPrecise(std.heap.c_allocator, 64 * validate.buffer_words);
        @memset(table.nodes.allocatedSlice(), std.math.nan(f64));
        @memset(table.buffers.allocatedSlice(), std.math.nan(f64));
        try testing.expectEqual(Status.ok, validate.validate(root.schema, root.array, level, true, &table));
        try testing.expectEqual(@as(usize, 6), table.nodeCount());
        try testing.expectEqual(@as(usize, 12 * validate.buffer_words), table.buffers.items.len);
        for (table.nodes.items, 0..) |word, i| if (std.math.isNan(word)) {
            std.debug.print("node {d} word {d} was not written (level {s})\n", .{ i / validate.node_words, i % validate.node_words, @tagName(level) });
            return error.TestUnexpectedResult;
        };
        for (table.buffers.items, 0..) |word, i| if (std.math.isNan(word)) {
            std.debug.print("buffer {d} word {d} was not written (level {s})\n", .{ i / validate.buffer_words, i % validate.buffer_words, @tagName(level) });
            return error.TestUnexpectedResult;
        };
        try testing.expectEqual(@as(f64, 1), table.get(3, .offset)); // the last field's own record
        try testing.expectEqual(@as(f64, 1), table.get(4, .parent)); // the dictionary, reserved while its field was walked
        try testing.expectEqual(@as(f64, 2), table.get(5, .parent)); // the list's item
    }
}

test "a table without a holder's room grows from empty, for a small tree and a wide one" {
    var b = Builder.init();
    defer b.deinit();
    const a = b.node(.{ .format = "i", .name = "a", .length = 3, .buffers = &.{ null, ptr(&vt.int32_values) } });
    const small = b.batch(3, &.{ a, a, a });
    var table: validate.NodeTable = .{};
    defer table.deinit();
    try testing.expectEqual(Status.ok, validate.validate(small.schema, small.array, .full, true, &table));
    try testing.expectEqual(@as(usize, 4), table.nodeCount());
    // (One allocation for a small tree is the holder's room: the test below.)

    const many: [20]Node = @splat(a);
    const wide = b.batch(3, &many);
    var wide_table: validate.NodeTable = .{};
    defer wide_table.deinit();
    try testing.expectEqual(Status.ok, validate.validate(wide.schema, wide.array, .full, true, &wide_table));
    try testing.expectEqual(@as(usize, 21), wide_table.nodeCount());
    try testing.expectEqual(@as(f64, 20), wide_table.get(0, .n_children));
    try testing.expectEqual(@intFromPtr(&vt.int32_values), wide_table.bufferAddress(1 + 19 * 2 + 1));
}

test "a table in its holder's room stays there while the tree fits, and moves to the heap, words intact, when it does not" {
    var b = Builder.init();
    defer b.deinit();
    const a = b.node(.{ .format = "i", .name = "a", .length = 3, .buffers = &.{ null, ptr(&vt.int32_values) } });
    // The root's validity buffer (NULL) and two per column: the most
    // columns the room holds.
    const room_columns = @min(validate.NodeTable.room_nodes - 1, (validate.NodeTable.room_buffers - 1) / 2);
    const fits: [room_columns]Node = @splat(a);
    const small = b.batch(3, &fits);
    var room: validate.NodeTable.Room = undefined;
    var table: validate.NodeTable = .inRoom(&room);
    try testing.expectEqual(Status.ok, validate.validate(small.schema, small.array, .full, true, &table));
    try testing.expectEqual(@intFromPtr(&room.nodes), @intFromPtr(table.nodes.items.ptr));
    try testing.expectEqual(@intFromPtr(&room.buffers), @intFromPtr(table.buffers.items.ptr));
    try testing.expectEqual(@as(usize, room_columns + 1), table.nodeCount());
    table.deinit(); // frees nothing: freeing the room (stack memory here) would abort in free()

    // One column more than the room: both lists move out (the buffers
    // first: the root's children are reserved after its own buffers).
    const wide_columns = validate.NodeTable.room_nodes * 3;
    const too_many: [wide_columns]Node = @splat(a);
    const wide = b.batch(3, &too_many);
    var wide_room: validate.NodeTable.Room = undefined;
    var wide_table: validate.NodeTable = .inRoom(&wide_room);
    defer wide_table.deinit();
    try testing.expectEqual(Status.ok, validate.validate(wide.schema, wide.array, .full, true, &wide_table));
    try testing.expect(@intFromPtr(wide_table.nodes.items.ptr) != @intFromPtr(&wide_room.nodes));
    try testing.expect(@intFromPtr(wide_table.buffers.items.ptr) != @intFromPtr(&wide_room.buffers));
    try testing.expectEqual(@as(usize, wide_columns + 1), wide_table.nodeCount());
    try testing.expectEqual(@as(f64, wide_columns), wide_table.get(0, .n_children));
    try testing.expectEqual(@as(f64, -1), wide_table.get(0, .parent));
    for (0..wide_columns) |i| {
        try testing.expectEqual(@as(f64, 0), wide_table.get(1 + i, .parent));
        try testing.expectEqual(@as(f64, 3), wide_table.get(1 + i, .length));
        // Buffer 0 is the root's validity; column i's values are 2 + 2i.
        try testing.expectEqual(@intFromPtr(&vt.int32_values), wide_table.bufferAddress(2 + 2 * i));
        try testing.expectEqual(@as(i64, 12), wide_table.bufferSize(2 + 2 * i));
    }
}

test "a NULL validity buffer is fine without nulls, and with an unknown null count" {
    var b = Builder.init();
    defer b.deinit();
    const tree = b.node(.{ .format = "i", .length = 8, .null_count = -1, .buffers = &.{ null, ptr(&vt.int32_values) } });
    for (all_levels) |level| try testing.expectEqual(Status.ok, check(tree, level));
}

test "a zero-length string array may omit its offsets and data" {
    var b = Builder.init();
    defer b.deinit();
    const tree = b.node(.{ .format = "u", .length = 0, .buffers = &.{ null, null, null } });
    for (all_levels) |level| try testing.expectEqual(Status.ok, check(tree, level));
}

test "the null type has no buffers, or one ignored buffer as Polars exports it" {
    var b = Builder.init();
    defer b.deinit();
    try testing.expectEqual(Status.ok, check(b.node(.{ .format = "n", .length = 5, .null_count = 5 }), .full));
    // Polars (and Arrow C++ before 2021) export one NULL validity buffer;
    // Arrow C++ accepts it. The table then describes no buffer at all.
    const polars = b.node(.{ .format = "n", .length = 5, .null_count = 5, .buffers = &.{null} });
    var table: validate.NodeTable = .{};
    defer table.deinit();
    try testing.expectEqual(Status.ok, validate.validate(polars.schema, polars.array, .full, true, &table));
    try testing.expectEqual(@as(f64, 0), table.get(0, .n_buffers));
    try testing.expectEqual(@as(usize, 0), table.buffers.items.len);
    try expectFailure(b.node(.{ .format = "n", .length = 5, .null_count = 5, .buffers = &.{ null, null } }), .minimal, .invalid_layout, "n_buffers is 2 but format \"n\" needs 0");
}

// ---------------------------------------------------------------------------
// Struct-level problems
// ---------------------------------------------------------------------------

test "released structs are rejected, naming which one" {
    var b = Builder.init();
    defer b.deinit();
    const a = b.node(.{ .format = "i", .length = 1, .buffers = &.{ null, ptr(&vt.int32_values) } });
    a.schema.release = null;
    try expectFailure(a, .none, .released, "schema is released");
    const c = b.node(.{ .format = "i", .length = 1, .buffers = &.{ null, ptr(&vt.int32_values) } });
    c.array.release = null;
    try expectFailure(c, .none, .released, "array is released");
    const child = b.node(.{ .format = "i", .name = "x", .length = 1, .buffers = &.{ null, ptr(&vt.int32_values) } });
    child.array.release = null;
    try expectFailure(b.batch(1, &.{child}), .none, .released, "field \"x\": array is released");
}

test "malformed and unknown formats are invalid_format with the format quoted" {
    var b = Builder.init();
    defer b.deinit();
    const null_format = b.node(.{ .format = "i" });
    null_format.schema.format = null;
    try expectFailure(null_format, .none, .invalid_format, "format is NULL");
    try expectFailure(b.node(.{ .format = "Q" }), .none, .invalid_format, "format \"Q\" is not a known type");
    try expectFailure(b.node(.{ .format = "d:40,2" }), .none, .invalid_format, "too large for its bit width");
    try expectFailure(b.node(.{ .format = "+w:-1" }), .none, .invalid_format, "\"+w:-1\"");
    try expectFailure(b.node(.{ .format = "tsz:" }), .none, .invalid_format, "timestamp unit");
}

test "a format without a terminator within 1 MiB is rejected, reading no further" {
    var b = Builder.init();
    defer b.deinit();
    // 1 MiB + 1 non-NUL bytes, then the terminator: the scan stops at the limit.
    const long = try testing.allocator.allocSentinel(u8, format.max_format_length + 2, 0);
    defer testing.allocator.free(long);
    @memset(long, 'i');
    const tree = b.node(.{ .format = long.ptr });
    try expectFailure(tree, .none, .invalid_format, "longer than 1 MiB");
}

test "a timestamp with a time zone of 5,000 bytes is a valid format" {
    var b = Builder.init();
    defer b.deinit();
    const text = try testing.allocator.allocSentinel(u8, 5000, 0);
    defer testing.allocator.free(text);
    @memset(text, 'Z');
    @memcpy(text[0..5], "tsu:A");
    var values = [_]i64{ 1, 2 };
    const tree = b.node(.{ .format = text.ptr, .length = 2, .buffers = &.{ null, ptr(&values) } });
    for (all_levels) |level| try testing.expectEqual(Status.ok, check(tree, level));
}

test "negative length, offset and null counts are rejected at every level" {
    var b = Builder.init();
    defer b.deinit();
    for (all_levels) |level| {
        try expectFailure(b.node(.{ .format = "i", .length = -1, .buffers = &.{ null, ptr(&vt.int32_values) } }), level, .invalid_layout, "length is negative (-1)");
        try expectFailure(b.node(.{ .format = "i", .length = 1, .offset = -3, .buffers = &.{ null, ptr(&vt.int32_values) } }), level, .invalid_layout, "offset is negative (-3)");
        try expectFailure(b.node(.{ .format = "i", .length = 1, .null_count = -2, .buffers = &.{ null, ptr(&vt.int32_values) } }), level, .invalid_layout, "null_count is -2");
        try expectFailure(b.node(.{ .format = "i", .length = 1, .null_count = 2, .buffers = &.{ ptr(&vt.validity_bits), ptr(&vt.int32_values) } }), level, .invalid_layout, "null_count 2 exceeds length 1");
        try expectFailure(b.node(.{ .format = "i", .length = 1 << 53, .offset = 1, .buffers = &.{ null, ptr(&vt.int32_values) } }), level, .invalid_layout, "is too large");
    }
}

test "n_buffers must match the format (at least 3 for views)" {
    var b = Builder.init();
    defer b.deinit();
    try expectFailure(b.node(.{ .format = "u", .length = 0, .buffers = &.{ null, null } }), .none, .invalid_layout, "n_buffers is 2 but format \"u\" needs 3");
    try expectFailure(b.node(.{ .format = "+us:0", .length = 0, .buffers = &.{ null, null, null }, .children = &.{b.node(.{ .format = "n" })} }), .none, .invalid_layout, "n_buffers is 3 but format \"+us:0\" needs 1");
    try expectFailure(b.node(.{ .format = "vu", .length = 0, .buffers = &.{ null, null } }), .none, .invalid_layout, "needs at least 3");
    const no_pointer_array = b.node(.{ .format = "i", .length = 0, .buffers = &.{ null, null } });
    no_pointer_array.array.buffers = null;
    try expectFailure(no_pointer_array, .none, .invalid_layout, "buffers is NULL but n_buffers is 2");
}

test "n_children must agree between schema and array, and with the format" {
    var b = Builder.init();
    defer b.deinit();
    try expectFailure(b.node(.{ .format = "+l", .length = 0, .buffers = &.{ null, null } }), .none, .invalid_layout, "n_children is 0 but format \"+l\" needs 1");
    const item = b.node(.{ .format = "i" });
    const mismatched = b.node(.{ .format = "+s", .buffers = &.{null}, .children = &.{item} });
    mismatched.array.n_children = 0;
    try expectFailure(mismatched, .none, .invalid_layout, "array has 0 children but schema has 1");
    const union_children = b.node(.{ .format = "+ud:3,4", .buffers = &.{ null, null }, .children = &.{item} });
    try expectFailure(union_children, .none, .invalid_layout, "n_children is 1 but format \"+ud:3,4\" needs 2");
    const huge = b.node(.{ .format = "+s", .buffers = &.{null} });
    huge.schema.n_children = 1 << 40;
    huge.array.n_children = 1 << 40;
    try expectFailure(huge, .none, .invalid_layout, "more than this library accepts");
    const null_children = b.node(.{ .format = "+s", .buffers = &.{null}, .children = &.{item} });
    null_children.array.children = null;
    try expectFailure(null_children, .none, .invalid_layout, "children is NULL but n_children is 1");
    const null_child = b.node(.{ .format = "+s", .buffers = &.{null}, .children = &.{item} });
    null_child.schema.children.?[0] = null;
    try expectFailure(null_child, .none, .invalid_layout, "schema child 0 is NULL");
}

test "dictionaries: both sides or neither, and integer indices only" {
    var b = Builder.init();
    defer b.deinit();
    const dict = b.node(.{ .format = "n", .length = 0 });
    const one_sided = b.node(.{ .format = "c", .buffers = &.{ null, null }, .dictionary = dict });
    one_sided.array.dictionary = null;
    try expectFailure(one_sided, .none, .invalid_layout, "schema has a dictionary but the array has none");
    try expectFailure(b.node(.{ .format = "f", .buffers = &.{ null, null }, .dictionary = dict }), .none, .invalid_format, "not an integer type");
}

test "NULL required buffers are rejected; empty ones may be NULL" {
    var b = Builder.init();
    defer b.deinit();
    try expectFailure(b.node(.{ .format = "i", .length = 2, .buffers = &.{ null, null } }), .none, .invalid_layout, "buffer 1 (fixed) is NULL but must hold 8 bytes");
    try expectFailure(b.node(.{ .format = "i", .length = 2, .null_count = 1, .buffers = &.{ null, ptr(&vt.int32_values) } }), .none, .invalid_layout, "validity buffer is NULL but null_count is 1");
    try expectFailure(b.node(.{ .format = "b", .length = 2, .buffers = &.{ null, null } }), .none, .invalid_layout, "buffer 1 (bits)");
    try testing.expectEqual(Status.ok, check(b.node(.{ .format = "i", .length = 0, .buffers = &.{ null, null } }), .full));
}

test "value widths times huge lengths overflow into an error, not a panic" {
    var b = Builder.init();
    defer b.deinit();
    const wide = b.node(.{ .format = "w:2147483647", .length = 1 << 40, .buffers = &.{ null, ptr(&vt.int32_values) } });
    try expectFailure(wide, .none, .invalid_layout, "overflows");
    const item = b.node(.{ .format = "n", .length = 0 });
    const list = b.node(.{ .format = "+w:2147483647", .length = 1 << 40, .buffers = &.{null}, .children = &.{item} });
    try expectFailure(list, .minimal, .invalid_layout, "overflows");
}

// ---------------------------------------------------------------------------
// Offsets
// ---------------------------------------------------------------------------

test "string offsets: negative first, decreasing last, non-monotonic middle, bad UTF-8" {
    var b = Builder.init();
    defer b.deinit();
    var bytes = [_]u8{ 'a', 'b', 0xff, 'd' };
    var negative = [_]i32{ -1, 2 };
    try expectFailure(b.node(.{ .format = "u", .length = 1, .buffers = &.{ null, ptr(&negative), ptr(&bytes) } }), .default, .invalid_layout, "first offset is negative");
    var decreasing = [_]i32{ 3, 1 };
    try expectFailure(b.node(.{ .format = "u", .length = 1, .buffers = &.{ null, ptr(&decreasing), ptr(&bytes) } }), .default, .invalid_layout, "last offset is smaller than the first");
    var zigzag = [_]i32{ 0, 3, 1, 2 };
    const middle = b.node(.{ .format = "z", .length = 3, .buffers = &.{ null, ptr(&zigzag), ptr(&bytes) } });
    try testing.expectEqual(Status.ok, check(middle, .default)); // O(1) checks only
    try expectFailure(middle, .full, .invalid_layout, "offset 2 (1) is smaller than offset 1 (3)");
    var valid = [_]i32{ 0, 2, 4 };
    const not_utf8 = b.node(.{ .format = "u", .length = 2, .buffers = &.{ null, ptr(&valid), ptr(&bytes) } });
    try testing.expectEqual(Status.ok, check(not_utf8, .default));
    try expectFailure(not_utf8, .full, .invalid_layout, "not valid UTF-8");
    // The same bytes as binary are fine.
    try testing.expectEqual(Status.ok, check(b.node(.{ .format = "z", .length = 2, .buffers = &.{ null, ptr(&valid), ptr(&bytes) } }), .full));
}

test "minimal reads no buffer: value sizes are unknown (-1)" {
    var b = Builder.init();
    defer b.deinit();
    var offsets = [_]i32{ -5, -9 }; // garbage minimal must not look at
    const tree = b.node(.{ .format = "u", .length = 1, .buffers = &.{ null, ptr(&offsets), ptr(&vt.int32_values) } });
    var table: validate.NodeTable = .{};
    defer table.deinit();
    try testing.expectEqual(Status.ok, validate.validate(tree.schema, tree.array, .minimal, true, &table));
    try testing.expectEqual(@as(i64, -1), table.bufferSize(2));
    try testing.expectEqual(@as(i64, 8), table.bufferSize(1));
}

test "list offsets index the child's logical slots, whatever the child's own offset" {
    var b = Builder.init();
    defer b.deinit();
    var offsets = [_]i32{ 0, 2, 4 };
    // The child has 4 logical values starting at physical slot 3.
    const child = b.node(.{ .format = "i", .name = "item", .length = 4, .offset = 3, .buffers = &.{ null, ptr(&vt.int32_values) } });
    const list = b.node(.{ .format = "+l", .name = "l", .length = 2, .buffers = &.{ null, ptr(&offsets) }, .children = &.{child} });
    try testing.expectEqual(Status.ok, check(b.batch(2, &.{list}), .full));
    var past_end = [_]i32{ 0, 2, 5 };
    const long_list = b.node(.{ .format = "+l", .name = "l", .length = 2, .buffers = &.{ null, ptr(&past_end) }, .children = &.{child} });
    try expectFailure(b.batch(2, &.{long_list}), .default, .invalid_layout, "field \"l\" > child 0 \"item\": last offset 5 is past the end of the child's 4 values");
    try testing.expectEqual(Status.ok, check(b.batch(2, &.{long_list}), .minimal));
}

test "list views: every offset + size within the child (full)" {
    var b = Builder.init();
    defer b.deinit();
    var offsets = [_]i32{ 2, 0 };
    var sizes = [_]i32{ 2, 3 };
    const child = b.node(.{ .format = "i", .length = 4, .buffers = &.{ null, ptr(&vt.int32_values) } });
    const ok = b.node(.{ .format = "+vl", .length = 2, .buffers = &.{ null, ptr(&offsets), ptr(&sizes) }, .children = &.{child} });
    try testing.expectEqual(Status.ok, check(ok, .full));
    var too_big = [_]i32{ 3, 3 };
    const bad = b.node(.{ .format = "+vl", .length = 2, .buffers = &.{ null, ptr(&offsets), ptr(&too_big) }, .children = &.{child} });
    try testing.expectEqual(Status.ok, check(bad, .default));
    try expectFailure(bad, .full, .invalid_layout, "list view 0 (offset 2, size 3) is out of the child's 4 values");
    var large_offsets = [_]i64{ 0, 1 };
    var large_sizes = [_]i64{ 1, 3 };
    const large = b.node(.{ .format = "+vL", .length = 2, .buffers = &.{ null, ptr(&large_offsets), ptr(&large_sizes) }, .children = &.{child} });
    try testing.expectEqual(Status.ok, check(large, .full));
}

test "struct, sparse union and fixed-size list children must cover the parent's offset + length" {
    var b = Builder.init();
    defer b.deinit();
    const short = b.node(.{ .format = "i", .name = "x", .length = 3, .buffers = &.{ null, ptr(&vt.int32_values) } });
    const parent = b.node(.{ .format = "+s", .name = "s", .length = 2, .offset = 2, .buffers = &.{null}, .children = &.{short} });
    try expectFailure(b.batch(2, &.{parent}), .default, .invalid_layout, "child 0 has length 3, less than the parent's offset + length 4");
    try testing.expectEqual(Status.ok, check(b.batch(2, &.{parent}), .none));
    var ids = [_]i8{ 7, 7, 7, 7 };
    const sparse = b.node(.{ .format = "+us:7", .length = 4, .buffers = &.{ptr(&ids)}, .children = &.{short} });
    try expectFailure(sparse, .minimal, .invalid_layout, "less than the parent's offset + length 4");
    const fsl = b.node(.{ .format = "+w:2", .length = 2, .buffers = &.{null}, .children = &.{short} });
    try expectFailure(fsl, .minimal, .invalid_layout, "child has length 3, less than (offset + length) * list size = 4");
}

test "map entries must be a struct of two children" {
    var b = Builder.init();
    defer b.deinit();
    var offsets = [_]i32{ 0, 1 };
    const key = b.node(.{ .format = "i", .length = 1, .buffers = &.{ null, ptr(&vt.int32_values) } });
    const entries = b.node(.{ .format = "+s", .name = "entries", .length = 1, .buffers = &.{null}, .children = &.{key} });
    const map = b.node(.{ .format = "+m", .length = 1, .buffers = &.{ null, ptr(&offsets) }, .children = &.{entries} });
    try expectFailure(map, .minimal, .invalid_layout, "map entries must be a struct of two children");
    const value = b.node(.{ .format = "i", .length = 1, .buffers = &.{ null, ptr(&vt.int32_values) } });
    const good_entries = b.node(.{ .format = "+s", .name = "entries", .length = 1, .buffers = &.{null}, .children = &.{ key, value } });
    try testing.expectEqual(Status.ok, check(b.node(.{ .format = "+m", .length = 1, .buffers = &.{ null, ptr(&offsets) }, .children = &.{good_entries} }), .full));
}
