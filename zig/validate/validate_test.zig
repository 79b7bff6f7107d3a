//! Tests of validate.zig: every rule, at every level, with the exact path in
//! the message. Trees are built in an arena from small literal buffers; their
//! release callbacks only mark the struct released (the arena owns memory).

const std = @import("std");
const abi = @import("../core/abi.zig");
const status = @import("../core/status.zig");
const format = @import("../core/format.zig");
const validate = @import("validate.zig");
const Status = status.Status;
const Level = validate.Level;
const testing = std.testing;

fn releaseSchema(schema: *abi.ArrowSchema) callconv(.c) void {
    schema.release = null;
}
fn releaseArray(array: *abi.ArrowArray) callconv(.c) void {
    array.release = null;
}

const Node = struct { schema: *abi.ArrowSchema, array: *abi.ArrowArray };

const Spec = struct {
    format: [*:0]const u8,
    name: ?[*:0]const u8 = null,
    length: i64 = 0,
    null_count: i64 = 0,
    offset: i64 = 0,
    buffers: []const ?*const anyopaque = &.{},
    children: []const Node = &.{},
    dictionary: ?Node = null,
};

/// Builds trees whose structs, pointer arrays and names live in one arena.
const Builder = struct {
    arena: std.heap.ArenaAllocator,

    fn init() Builder {
        return .{ .arena = .init(testing.allocator) };
    }
    fn deinit(self: *Builder) void {
        self.arena.deinit();
    }

    fn node(self: *Builder, spec: Spec) Node {
        const a = self.arena.allocator();
        const schema = a.create(abi.ArrowSchema) catch unreachable;
        const array = a.create(abi.ArrowArray) catch unreachable;
        const buffers = a.dupe(?*const anyopaque, spec.buffers) catch unreachable;
        const schema_children = a.alloc(?*abi.ArrowSchema, spec.children.len) catch unreachable;
        const array_children = a.alloc(?*abi.ArrowArray, spec.children.len) catch unreachable;
        for (spec.children, 0..) |child, i| {
            schema_children[i] = child.schema;
            array_children[i] = child.array;
        }
        schema.* = .{
            .format = spec.format,
            .name = spec.name,
            .metadata = null,
            .flags = abi.flag_nullable,
            .n_children = @intCast(spec.children.len),
            .children = if (spec.children.len == 0) null else schema_children.ptr,
            .dictionary = if (spec.dictionary) |d| d.schema else null,
            .release = releaseSchema,
            .private_data = null,
        };
        array.* = .{
            .length = spec.length,
            .null_count = spec.null_count,
            .offset = spec.offset,
            .n_buffers = @intCast(spec.buffers.len),
            .n_children = @intCast(spec.children.len),
            .buffers = if (spec.buffers.len == 0) null else buffers.ptr,
            .children = if (spec.children.len == 0) null else array_children.ptr,
            .dictionary = if (spec.dictionary) |d| d.array else null,
            .release = releaseArray,
            .private_data = null,
        };
        return .{ .schema = schema, .array = array };
    }

    /// A struct root holding `fields`, the shape of a record batch.
    fn batch(self: *Builder, length: i64, fields: []const Node) Node {
        return self.node(.{ .format = "+s", .length = length, .buffers = &.{null}, .children = fields });
    }
};

fn ptr(p: anytype) ?*const anyopaque {
    return @ptrCast(p);
}

/// Validates `tree` twice: into a node table (where flat trees take the
/// fast path, validate/flat.zig) and without one (always walked). Both
/// must agree; the message is the walk's.
fn check(tree: Node, level: Level) Status {
    status.clear();
    var table: validate.NodeTable = .{};
    defer table.deinit();
    const described = validate.validate(tree.schema, tree.array, level, true, &table);
    status.clear();
    const walked = validate.validate(tree.schema, tree.array, level, true, null);
    if (described != walked) std.debug.panic("with a node table: {s}, without: {s}", .{ @tagName(described), @tagName(walked) });
    return walked;
}

fn message() []const u8 {
    return std.mem.span(status.lastMessage());
}

fn expectFailure(tree: Node, level: Level, expected: Status, needle: []const u8) !void {
    const got = check(tree, level);
    if (got != expected or std.mem.indexOf(u8, message(), needle) == null) {
        std.debug.print("expected {s} containing \"{s}\", got {s}: \"{s}\"\n", .{ @tagName(expected), needle, @tagName(got), message() });
        return error.TestUnexpectedResult;
    }
}

const all_levels = [_]Level{ .none, .minimal, .default, .full };

var int32_values = [_]i32{ 1, 2, 3, 4, 5, 6, 7, 8 };
var validity_bits = [_]u8{ 0b1011_0111, 0xff };

// ---------------------------------------------------------------------------
// Valid trees and the node table
// ---------------------------------------------------------------------------

test "a valid primitive passes at every level and the table sizes its buffers from offset + length" {
    var b = Builder.init();
    defer b.deinit();
    const tree = b.node(.{ .format = "i", .length = 3, .offset = 2, .null_count = 1, .buffers = &.{ ptr(&validity_bits), ptr(&int32_values) } });
    for (all_levels) |level| {
        var table: validate.NodeTable = .{};
        defer table.deinit();
        try testing.expectEqual(Status.ok, validate.validate(tree.schema, tree.array, level, true, &table));
        try testing.expectEqual(@as(usize, 1), table.nodeCount());
        try testing.expectEqual(@as(i64, 1), table.bufferSize(0)); // 5 bits
        try testing.expectEqual(@as(i64, 20), table.bufferSize(1)); // 5 int32
        try testing.expectEqual(@intFromPtr(&int32_values), table.bufferAddress(1));
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
    const plain = b.node(.{ .format = "i", .name = "i", .length = 3, .buffers = &.{ null, ptr(&int32_values) } });
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
    const item = b.node(.{ .format = "i", .name = "item", .length = 3, .buffers = &.{ null, ptr(&int32_values) } });
    const list = b.node(.{ .format = "+l", .name = "l", .length = 3, .buffers = &.{ null, ptr(&list_offsets) }, .children = &.{item} });
    const plain = b.node(.{ .format = "i", .name = "i", .length = 3, .offset = 1, .null_count = 1, .buffers = &.{ ptr(&validity_bits), ptr(&int32_values) } });
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
    const a = b.node(.{ .format = "i", .name = "a", .length = 3, .buffers = &.{ null, ptr(&int32_values) } });
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
    try testing.expectEqual(@intFromPtr(&int32_values), wide_table.bufferAddress(1 + 19 * 2 + 1));
}

test "a table in its holder's room stays there while the tree fits, and moves to the heap, words intact, when it does not" {
    var b = Builder.init();
    defer b.deinit();
    const a = b.node(.{ .format = "i", .name = "a", .length = 3, .buffers = &.{ null, ptr(&int32_values) } });
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
        try testing.expectEqual(@intFromPtr(&int32_values), wide_table.bufferAddress(2 + 2 * i));
        try testing.expectEqual(@as(i64, 12), wide_table.bufferSize(2 + 2 * i));
    }
}

test "a NULL validity buffer is fine without nulls, and with an unknown null count" {
    var b = Builder.init();
    defer b.deinit();
    const tree = b.node(.{ .format = "i", .length = 8, .null_count = -1, .buffers = &.{ null, ptr(&int32_values) } });
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
    const a = b.node(.{ .format = "i", .length = 1, .buffers = &.{ null, ptr(&int32_values) } });
    a.schema.release = null;
    try expectFailure(a, .none, .released, "schema is released");
    const c = b.node(.{ .format = "i", .length = 1, .buffers = &.{ null, ptr(&int32_values) } });
    c.array.release = null;
    try expectFailure(c, .none, .released, "array is released");
    const child = b.node(.{ .format = "i", .name = "x", .length = 1, .buffers = &.{ null, ptr(&int32_values) } });
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
        try expectFailure(b.node(.{ .format = "i", .length = -1, .buffers = &.{ null, ptr(&int32_values) } }), level, .invalid_layout, "length is negative (-1)");
        try expectFailure(b.node(.{ .format = "i", .length = 1, .offset = -3, .buffers = &.{ null, ptr(&int32_values) } }), level, .invalid_layout, "offset is negative (-3)");
        try expectFailure(b.node(.{ .format = "i", .length = 1, .null_count = -2, .buffers = &.{ null, ptr(&int32_values) } }), level, .invalid_layout, "null_count is -2");
        try expectFailure(b.node(.{ .format = "i", .length = 1, .null_count = 2, .buffers = &.{ ptr(&validity_bits), ptr(&int32_values) } }), level, .invalid_layout, "null_count 2 exceeds length 1");
        try expectFailure(b.node(.{ .format = "i", .length = 1 << 53, .offset = 1, .buffers = &.{ null, ptr(&int32_values) } }), level, .invalid_layout, "is too large");
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
    try expectFailure(b.node(.{ .format = "i", .length = 2, .null_count = 1, .buffers = &.{ null, ptr(&int32_values) } }), .none, .invalid_layout, "validity buffer is NULL but null_count is 1");
    try expectFailure(b.node(.{ .format = "b", .length = 2, .buffers = &.{ null, null } }), .none, .invalid_layout, "buffer 1 (bits)");
    try testing.expectEqual(Status.ok, check(b.node(.{ .format = "i", .length = 0, .buffers = &.{ null, null } }), .full));
}

test "value widths times huge lengths overflow into an error, not a panic" {
    var b = Builder.init();
    defer b.deinit();
    const wide = b.node(.{ .format = "w:2147483647", .length = 1 << 40, .buffers = &.{ null, ptr(&int32_values) } });
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
    const tree = b.node(.{ .format = "u", .length = 1, .buffers = &.{ null, ptr(&offsets), ptr(&int32_values) } });
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
    const child = b.node(.{ .format = "i", .name = "item", .length = 4, .offset = 3, .buffers = &.{ null, ptr(&int32_values) } });
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
    const child = b.node(.{ .format = "i", .length = 4, .buffers = &.{ null, ptr(&int32_values) } });
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
    const short = b.node(.{ .format = "i", .name = "x", .length = 3, .buffers = &.{ null, ptr(&int32_values) } });
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
    const key = b.node(.{ .format = "i", .length = 1, .buffers = &.{ null, ptr(&int32_values) } });
    const entries = b.node(.{ .format = "+s", .name = "entries", .length = 1, .buffers = &.{null}, .children = &.{key} });
    const map = b.node(.{ .format = "+m", .length = 1, .buffers = &.{ null, ptr(&offsets) }, .children = &.{entries} });
    try expectFailure(map, .minimal, .invalid_layout, "map entries must be a struct of two children");
    const value = b.node(.{ .format = "i", .length = 1, .buffers = &.{ null, ptr(&int32_values) } });
    const good_entries = b.node(.{ .format = "+s", .name = "entries", .length = 1, .buffers = &.{null}, .children = &.{ key, value } });
    try testing.expectEqual(Status.ok, check(b.node(.{ .format = "+m", .length = 1, .buffers = &.{ null, ptr(&offsets) }, .children = &.{good_entries} }), .full));
}

// ---------------------------------------------------------------------------
// Views, unions, run-end encoding, dictionaries
// ---------------------------------------------------------------------------

fn view(len: i32, prefix: *const [4]u8, buffer_index: i32, offset: i32) [16]u8 {
    var out: [16]u8 = @splat(0);
    std.mem.writeInt(i32, out[0..4], len, .little);
    @memcpy(out[4..8], prefix);
    std.mem.writeInt(i32, out[8..12], buffer_index, .little);
    std.mem.writeInt(i32, out[12..16], offset, .little);
    return out;
}

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
    const small = b.node(.{ .format = "i", .name = "a", .length = 2, .buffers = &.{ null, ptr(&int32_values) } });
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
    const sparse_a = b.node(.{ .format = "i", .length = 4, .buffers = &.{ null, ptr(&int32_values) } });
    const sparse = b.node(.{ .format = "+us:4,9", .length = 4, .buffers = &.{ptr(&undeclared)}, .children = &.{ sparse_a, other } });
    try expectFailure(sparse, .full, .invalid_layout, "slot 2 has type id 5, which the format does not declare");
}

test "run-end encoding: run ends type, coverage, order; values length" {
    var b = Builder.init();
    defer b.deinit();
    var run_ends = [_]i32{ 2, 5, 8 };
    const ends = b.node(.{ .format = "i", .name = "run_ends", .length = 3, .buffers = &.{ null, ptr(&run_ends) } });
    const values = b.node(.{ .format = "i", .name = "values", .length = 3, .buffers = &.{ null, ptr(&int32_values) } });
    try testing.expectEqual(Status.ok, check(b.node(.{ .format = "+r", .length = 6, .offset = 2, .children = &.{ ends, values } }), .full));
    try expectFailure(b.node(.{ .format = "+r", .length = 7, .offset = 2, .children = &.{ ends, values } }), .default, .invalid_layout, "last run end 8 is less than offset + length 9");
    const float_ends = b.node(.{ .format = "f", .name = "run_ends", .length = 3, .buffers = &.{ null, ptr(&run_ends) } });
    try expectFailure(b.node(.{ .format = "+r", .length = 6, .children = &.{ float_ends, values } }), .minimal, .invalid_layout, "run_ends must be int16, int32 or int64");
    var unordered = [_]i32{ 5, 2, 8 };
    const bad_ends = b.node(.{ .format = "i", .name = "run_ends", .length = 3, .buffers = &.{ null, ptr(&unordered) } });
    const unordered_tree = b.node(.{ .format = "+r", .length = 6, .children = &.{ bad_ends, values } });
    try testing.expectEqual(Status.ok, check(unordered_tree, .default));
    try expectFailure(unordered_tree, .full, .invalid_layout, "run end 1 (2) is not greater than the one before (5)");
    const few_values = b.node(.{ .format = "i", .name = "values", .length = 2, .buffers = &.{ null, ptr(&int32_values) } });
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
    const one = b.node(.{ .format = "i", .name = "w", .length = 1, .buffers = &.{ null, ptr(&int32_values) } });
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
    const child = b.node(.{ .format = "i", .name = "m", .length = 1, .buffers = &.{ null, ptr(&int32_values) } });
    child.schema.metadata = &bad;
    for (all_levels) |level| try expectFailure(b.batch(1, &.{child}), level, .invalid_layout, "field \"m\": metadata has a key or value with a negative length");
    const good = [_]u8{ 1, 0, 0, 0, 1, 0, 0, 0, 'k', 0, 0, 0, 0 };
    child.schema.metadata = &good;
    try testing.expectEqual(Status.ok, check(b.batch(1, &.{child}), .full));
}

// ---------------------------------------------------------------------------
// Producer-supplied integers near the limits of i64: typed errors, never an
// overflow (the safety-checked build would abort the process)
// ---------------------------------------------------------------------------

const i64_max = std.math.maxInt(i64);
const i32_max = std.math.maxInt(i32);

test "list views: offset or size INT64_MAX is out of the child, not an overflow" {
    var b = Builder.init();
    defer b.deinit();
    const child = b.node(.{ .format = "i", .length = 4, .buffers = &.{ null, ptr(&int32_values) } });
    var offsets = [_]i64{ i64_max, 0 };
    var sizes = [_]i64{ 1, i64_max };
    const big_offset = b.node(.{ .format = "+vL", .length = 1, .buffers = &.{ null, ptr(&offsets), ptr(&sizes) }, .children = &.{child} });
    try expectFailure(big_offset, .full, .invalid_layout, "list view 0 (offset 9223372036854775807, size 1) is out of the child's 4 values");
    const big_size = b.node(.{ .format = "+vL", .length = 1, .offset = 1, .buffers = &.{ null, ptr(&offsets), ptr(&sizes) }, .children = &.{child} });
    try expectFailure(big_size, .full, .invalid_layout, "list view 1 (offset 0, size 9223372036854775807)");
    var small_offsets = [_]i32{ i32_max, 0 };
    var small_sizes = [_]i32{ i32_max, 0 };
    try expectFailure(b.node(.{ .format = "+vl", .length = 1, .buffers = &.{ null, ptr(&small_offsets), ptr(&small_sizes) }, .children = &.{child} }), .full, .invalid_layout, "list view 0");
}

test "views: offset + length near INT32_MAX against a variadic size near INT64_MAX" {
    var b = Builder.init();
    defer b.deinit();
    const data = "0123456789abcdefghij";
    var views = [_][16]u8{view(i32_max, "0123", 0, i32_max)};
    var sizes = [_]i64{20};
    try expectFailure(b.node(.{ .format = "vz", .length = 1, .buffers = &.{ null, ptr(&views), ptr(data), ptr(&sizes) } }), .full, .invalid_layout, "is out of variadic buffer 0 (20 bytes)");
    var huge = [_]i64{i64_max};
    try expectFailure(b.node(.{ .format = "vz", .length = 1, .buffers = &.{ null, ptr(&views), ptr(data), ptr(&huge) } }), .default, .invalid_layout, "buffer 2 (variadic_bytes) would hold 9223372036854775807 bytes");
    var negative_offset = [_][16]u8{view(13, "0123", 0, -5)};
    try expectFailure(b.node(.{ .format = "vz", .length = 1, .buffers = &.{ null, ptr(&negative_offset), ptr(data), ptr(&sizes) } }), .full, .invalid_layout, "view 0 (13 bytes at -5)");
}

test "variadic sizes adding up past 2^53 are refused, not summed into an overflow" {
    var b = Builder.init();
    defer b.deinit();
    const data = "0123456789abcdefghij";
    var views = [_][16]u8{view(3, "abc\x00", 0, 0)};
    const half: i64 = 1 << 52;
    var sizes = [_]i64{ half, half, half };
    const tree = b.node(.{ .format = "vz", .length = 1, .buffers = &.{ null, ptr(&views), ptr(data), ptr(data), ptr(data), ptr(&sizes) } });
    var table: validate.NodeTable = .{};
    defer table.deinit();
    status.clear();
    try testing.expectEqual(Status.invalid_layout, validate.validate(tree.schema, tree.array, .default, true, &table));
    try testing.expect(std.mem.indexOf(u8, message(), "add up to more than 2^53 bytes") != null);
}

test "offsets: a last offset of INT64_MAX sizes no buffer" {
    var b = Builder.init();
    defer b.deinit();
    var offsets = [_]i64{ 0, i64_max };
    try expectFailure(b.node(.{ .format = "U", .length = 1, .buffers = &.{ null, ptr(&offsets), ptr(&int32_values) } }), .default, .invalid_layout, "buffer 2 (bytes) would hold 9223372036854775807 bytes");
    var negative = [_]i64{ std.math.minInt(i64), 0 };
    try expectFailure(b.node(.{ .format = "Z", .length = 1, .buffers = &.{ null, ptr(&negative), ptr(&int32_values) } }), .default, .invalid_layout, "first offset is negative");
    // List offsets compare against the child's length, never add.
    var list_offsets = [_]i64{ 0, i64_max };
    const child = b.node(.{ .format = "i", .length = 4, .buffers = &.{ null, ptr(&int32_values) } });
    try expectFailure(b.node(.{ .format = "+L", .length = 1, .buffers = &.{ null, ptr(&list_offsets) }, .children = &.{child} }), .default, .invalid_layout, "last offset 9223372036854775807 is past the end");
}

test "offset + length, length * width and bitmap sizes near the limits" {
    var b = Builder.init();
    defer b.deinit();
    for (all_levels) |level| {
        try expectFailure(b.node(.{ .format = "i", .length = i64_max, .buffers = &.{ null, ptr(&int32_values) } }), level, .invalid_layout, "is too large");
        try expectFailure(b.node(.{ .format = "i", .length = 1, .offset = i64_max, .buffers = &.{ null, ptr(&int32_values) } }), level, .invalid_layout, "is too large");
        try expectFailure(b.node(.{ .format = "b", .length = i64_max - 3, .offset = 3, .buffers = &.{ null, ptr(&int32_values) } }), level, .invalid_layout, "is too large");
        try expectFailure(b.node(.{ .format = "d:76,0,256", .length = 1 << 52, .offset = 1 << 52, .buffers = &.{ null, ptr(&int32_values) } }), level, .invalid_layout, "more than this library accepts");
    }
    // Within the limits, the bitmap of 2^53 slots is sized without overflow.
    const bits = b.node(.{ .format = "b", .length = validate.max_slots, .buffers = &.{ null, null } });
    var table: validate.NodeTable = .{};
    defer table.deinit();
    status.clear();
    try testing.expectEqual(Status.invalid_layout, validate.validate(bits.schema, bits.array, .minimal, true, &table));
    try testing.expect(std.mem.indexOf(u8, message(), "buffer 1 (bits) is NULL but must hold 1125899906842624 bytes") != null);
}

test "run ends: INT64_MAX run ends and offsets past what the run-end type can reach" {
    var b = Builder.init();
    defer b.deinit();
    var ends64 = [_]i64{ 3, i64_max };
    const ends = b.node(.{ .format = "l", .name = "run_ends", .length = 2, .buffers = &.{ null, ptr(&ends64) } });
    const values = b.node(.{ .format = "i", .name = "values", .length = 2, .buffers = &.{ null, ptr(&int32_values) } });
    try testing.expectEqual(Status.ok, check(b.node(.{ .format = "+r", .length = 5, .children = &.{ ends, values } }), .full));
    var ends16 = [_]i16{ 100, std.math.maxInt(i16) };
    const short_ends = b.node(.{ .format = "s", .name = "run_ends", .length = 2, .buffers = &.{ null, ptr(&ends16) } });
    try expectFailure(b.node(.{ .format = "+r", .length = 40000, .children = &.{ short_ends, values } }), .minimal, .invalid_layout, "offset + length 40000 is more than run ends of format \"s\" can reach");
    try expectFailure(b.node(.{ .format = "+r", .length = 5, .null_count = 1, .children = &.{ short_ends, values } }), .minimal, .invalid_layout, "null_count is 1, but a run_end_encoded array has no nulls of its own");
    const ints = b.node(.{ .format = "i", .length = 2, .buffers = &.{ null, ptr(&int32_values) } });
    var ids = [_]i8{ 0, 0 };
    try expectFailure(b.node(.{ .format = "+us:0", .length = 2, .null_count = 1, .buffers = &.{ptr(&ids)}, .children = &.{ints} }), .minimal, .invalid_layout, "null_count is 1, but a sparse_union array has no nulls of its own");
    try testing.expectEqual(Status.ok, check(b.node(.{ .format = "+us:0", .length = 2, .null_count = -1, .buffers = &.{ptr(&ids)}, .children = &.{ints} }), .full));
}

// ---------------------------------------------------------------------------
// Full validation agrees with Arrow C++ ValidateFull
// ---------------------------------------------------------------------------

test "null slots may hold invalid UTF-8 and garbage views; valid slots are checked per value" {
    var b = Builder.init();
    defer b.deinit();
    var bytes = [_]u8{ 'a', 0xff, 'b', 'c' };
    var offsets = [_]i32{ 0, 1, 2, 4 };
    var second_null = [_]u8{0b101};
    const null_garbage = b.node(.{ .format = "u", .length = 3, .null_count = 1, .buffers = &.{ ptr(&second_null), ptr(&offsets), ptr(&bytes) } });
    try testing.expectEqual(Status.ok, check(null_garbage, .full));
    const all_valid = b.node(.{ .format = "u", .length = 3, .null_count = 0, .buffers = &.{ null, ptr(&offsets), ptr(&bytes) } });
    try expectFailure(all_valid, .full, .invalid_layout, "string 1 is not valid UTF-8");
    // A two-byte character split across two values: the whole range is
    // valid UTF-8, each value is not.
    var split = [_]u8{ 0xc3, 0xa9 };
    var split_offsets = [_]i64{ 0, 1, 2 };
    try expectFailure(b.node(.{ .format = "U", .length = 2, .buffers = &.{ null, ptr(&split_offsets), ptr(&split) } }), .full, .invalid_layout, "string 0 is not valid UTF-8");
    // Views: a null slot's view may point anywhere.
    const data = "0123456789abcdefghij";
    var sizes = [_]i64{20};
    var views = [_][16]u8{ view(15, "2345", 0, 2), view(99, "zzzz", 7, -1) };
    var first_valid = [_]u8{0b01};
    try testing.expectEqual(Status.ok, check(b.node(.{ .format = "vu", .length = 2, .null_count = 1, .buffers = &.{ ptr(&first_valid), ptr(&views), ptr(data), ptr(&sizes) } }), .full));
    try expectFailure(b.node(.{ .format = "vu", .length = 2, .null_count = 0, .buffers = &.{ null, ptr(&views), ptr(data), ptr(&sizes) } }), .full, .invalid_layout, "view 1 points at variadic buffer 7 of 1");
}

test "dense union offsets may not go back within a child" {
    var b = Builder.init();
    defer b.deinit();
    const a = b.node(.{ .format = "i", .name = "a", .length = 3, .buffers = &.{ null, ptr(&int32_values) } });
    const other = b.node(.{ .format = "n", .name = "b", .length = 4, .null_count = 4 });
    var ids = [_]i8{ 4, 9, 4, 4 };
    var backwards = [_]i32{ 1, 0, 0, 2 };
    const tree = b.node(.{ .format = "+ud:4,9", .length = 4, .buffers = &.{ ptr(&ids), ptr(&backwards) }, .children = &.{ a, other } });
    try testing.expectEqual(Status.ok, check(tree, .default));
    try expectFailure(tree, .full, .invalid_layout, "slot 2 has offset 0 into child 0, smaller than the offset before it (1)");
    var repeated = [_]i32{ 1, 0, 1, 2 };
    try testing.expectEqual(Status.ok, check(b.node(.{ .format = "+ud:4,9", .length = 4, .buffers = &.{ ptr(&ids), ptr(&repeated) }, .children = &.{ a, other } }), .full));
}

test "zero-length run-end encoded and list arrays are still checked" {
    var b = Builder.init();
    defer b.deinit();
    var unordered = [_]i32{ 5, 2, 8 };
    const ends = b.node(.{ .format = "i", .name = "run_ends", .length = 3, .buffers = &.{ null, ptr(&unordered) } });
    const values = b.node(.{ .format = "i", .name = "values", .length = 3, .buffers = &.{ null, ptr(&int32_values) } });
    const empty_ree = b.node(.{ .format = "+r", .length = 0, .children = &.{ ends, values } });
    try testing.expectEqual(Status.ok, check(empty_ree, .default));
    try expectFailure(empty_ree, .full, .invalid_layout, "run end 1 (2) is not greater than the one before (5)");
    var negative = [_]i32{ -3, 0 };
    const child = b.node(.{ .format = "i", .length = 4, .buffers = &.{ null, ptr(&int32_values) } });
    const empty_list = b.node(.{ .format = "+l", .length = 0, .buffers = &.{ null, ptr(&negative) }, .children = &.{child} });
    try testing.expectEqual(Status.ok, check(empty_list, .default));
    try expectFailure(empty_list, .full, .invalid_layout, "first offset is negative (-3)");
}

test "full: the declared null count must be the bitmap's, -1 excepted" {
    var b = Builder.init();
    defer b.deinit();
    // validity_bits: 0b1011_0111 -> slots 3 and 6 are null among the first 8.
    try testing.expectEqual(Status.ok, check(b.node(.{ .format = "i", .length = 8, .null_count = 2, .buffers = &.{ ptr(&validity_bits), ptr(&int32_values) } }), .full));
    try testing.expectEqual(Status.ok, check(b.node(.{ .format = "i", .length = 8, .null_count = -1, .buffers = &.{ ptr(&validity_bits), ptr(&int32_values) } }), .full));
    const wrong = b.node(.{ .format = "i", .length = 8, .null_count = 1, .buffers = &.{ ptr(&validity_bits), ptr(&int32_values) } });
    try testing.expectEqual(Status.ok, check(wrong, .default));
    try expectFailure(wrong, .full, .invalid_layout, "null_count is 1 but the validity bitmap has 2 nulls");
    try expectFailure(b.node(.{ .format = "i", .length = 5, .offset = 3, .null_count = 0, .buffers = &.{ ptr(&validity_bits), ptr(&int32_values) } }), .full, .invalid_layout, "null_count is 0 but the validity bitmap has 2 nulls");
}

test "full: inline views are padded with zeros (valid slots only)" {
    var b = Builder.init();
    defer b.deinit();
    const data = "0123456789abcdefghij";
    var sizes = [_]i64{20};
    var views = [_][16]u8{ view(3, "abc\x00", 0, 0), view(2, "xy\x00\x00", 0, 0) };
    try testing.expectEqual(Status.ok, check(b.node(.{ .format = "vz", .length = 2, .buffers = &.{ null, ptr(&views), ptr(data), ptr(&sizes) } }), .full));
    views[1][10] = 0x80;
    const dirty = b.node(.{ .format = "vz", .length = 2, .buffers = &.{ null, ptr(&views), ptr(data), ptr(&sizes) } });
    try testing.expectEqual(Status.ok, check(dirty, .default));
    try expectFailure(dirty, .full, .invalid_layout, "view 1 is inline with 2 bytes but its padding is not zero");
    var first_valid = [_]u8{0b01};
    try testing.expectEqual(Status.ok, check(b.node(.{ .format = "vz", .length = 2, .null_count = 1, .buffers = &.{ ptr(&first_valid), ptr(&views), ptr(data), ptr(&sizes) } }), .full));
}

test "map keys may not be null: a declared count at every level, the bitmap at full" {
    var b = Builder.init();
    defer b.deinit();
    var offsets = [_]i32{ 0, 2 };
    var second_null = [_]u8{0b01};
    const value = b.node(.{ .format = "i", .length = 2, .buffers = &.{ null, ptr(&int32_values) } });
    const null_key = b.node(.{ .format = "i", .length = 2, .null_count = 1, .buffers = &.{ ptr(&second_null), ptr(&int32_values) } });
    const entries = b.node(.{ .format = "+s", .name = "entries", .length = 2, .buffers = &.{null}, .children = &.{ null_key, value } });
    try expectFailure(b.node(.{ .format = "+m", .length = 1, .buffers = &.{ null, ptr(&offsets) }, .children = &.{entries} }), .minimal, .invalid_layout, "map keys have 1 nulls; keys may not be null");
    const unknown_key = b.node(.{ .format = "i", .length = 2, .null_count = -1, .buffers = &.{ ptr(&second_null), ptr(&int32_values) } });
    const unknown_entries = b.node(.{ .format = "+s", .name = "entries", .length = 2, .buffers = &.{null}, .children = &.{ unknown_key, value } });
    const unknown = b.node(.{ .format = "+m", .length = 1, .buffers = &.{ null, ptr(&offsets) }, .children = &.{unknown_entries} });
    try testing.expectEqual(Status.ok, check(unknown, .default));
    try expectFailure(unknown, .full, .invalid_layout, "map key 1 is null; keys may not be null");
}

// ---------------------------------------------------------------------------
// Layouts the spec allows that Arrow C++ also accepts
// ---------------------------------------------------------------------------

test "fixed-size binary of width 0 and fixed-size list of size 0 pass at every level" {
    var b = Builder.init();
    defer b.deinit();
    const binary = b.node(.{ .format = "w:0", .length = 3, .buffers = &.{ null, null } });
    const item = b.node(.{ .format = "i", .name = "item", .length = 0, .buffers = &.{ null, null } });
    const list = b.node(.{ .format = "+w:0", .length = 3, .buffers = &.{null}, .children = &.{item} });
    for (all_levels) |level| {
        try testing.expectEqual(Status.ok, check(binary, level));
        try testing.expectEqual(Status.ok, check(list, level));
    }
    var table: validate.NodeTable = .{};
    defer table.deinit();
    try testing.expectEqual(Status.ok, validate.validate(binary.schema, binary.array, .full, true, &table));
    try testing.expectEqual(@as(i64, 0), table.bufferSize(1));
}

test "a zero-length array with an offset may leave every buffer NULL" {
    var b = Builder.init();
    defer b.deinit();
    const formats = [_][*:0]const u8{ "i", "b", "w:4", "d:10,2", "vz" };
    for (formats) |f| {
        const buffers: []const ?*const anyopaque = if (f[0] == 'v') &.{ null, null, null } else &.{ null, null };
        const tree = b.node(.{ .format = f, .length = 0, .offset = 5, .buffers = buffers });
        for (all_levels) |level| try testing.expectEqual(Status.ok, check(tree, level));
        var table: validate.NodeTable = .{};
        defer table.deinit();
        try testing.expectEqual(Status.ok, validate.validate(tree.schema, tree.array, .full, true, &table));
        try testing.expectEqual(@as(i64, 0), table.bufferSize(1));
    }
    // One slot needs the bytes: NULL is still refused.
    try expectFailure(b.node(.{ .format = "i", .length = 1, .offset = 5, .buffers = &.{ null, null } }), .none, .invalid_layout, "buffer 1 (fixed) is NULL but must hold 24 bytes");
}

test "a pre-1.0 union with a NULL leading validity buffer is described without it" {
    var b = Builder.init();
    defer b.deinit();
    const small = b.node(.{ .format = "i", .name = "a", .length = 2, .buffers = &.{ null, ptr(&int32_values) } });
    var ids = [_]i8{ 4, 4 };
    var offsets = [_]i32{ 0, 1 };
    const dense = b.node(.{ .format = "+ud:4", .length = 2, .buffers = &.{ null, ptr(&ids), ptr(&offsets) }, .children = &.{small} });
    const sparse = b.node(.{ .format = "+us:4", .length = 2, .buffers = &.{ null, ptr(&ids) }, .children = &.{small} });
    for (all_levels) |level| {
        try testing.expectEqual(Status.ok, check(dense, level));
        try testing.expectEqual(Status.ok, check(sparse, level));
    }
    var table: validate.NodeTable = .{};
    defer table.deinit();
    try testing.expectEqual(Status.ok, validate.validate(dense.schema, dense.array, .full, true, &table));
    try testing.expectEqual(@as(f64, 2), table.get(0, .n_buffers));
    try testing.expectEqual(@intFromPtr(&ids), table.bufferAddress(0));
    try testing.expectEqual(@intFromPtr(&offsets), table.bufferAddress(1));
    // The full checks read the shifted buffers: a bad offset is still found.
    var bad_offsets = [_]i32{ 0, 2 };
    const dense_bad = b.node(.{ .format = "+ud:4", .length = 2, .buffers = &.{ null, ptr(&ids), ptr(&bad_offsets) }, .children = &.{small} });
    try expectFailure(dense_bad, .full, .invalid_layout, "slot 1 has offset 2 into child 0 of length 2");
    // A non-NULL validity buffer has no meaning for a union: refused.
    const with_bitmap = b.node(.{ .format = "+ud:4", .length = 2, .buffers = &.{ ptr(&validity_bits), ptr(&ids), ptr(&offsets) }, .children = &.{small} });
    try expectFailure(with_bitmap, .minimal, .invalid_layout, "n_buffers is 3, the pre-1.0 union layout, but its validity buffer (buffer 0) is not NULL");
    try expectFailure(b.node(.{ .format = "+ud:4", .length = 2, .buffers = &.{ null, null, ptr(&ids), ptr(&offsets) }, .children = &.{small} }), .minimal, .invalid_layout, "n_buffers is 4 but format \"+ud:4\" needs 2");
}

test "a variadic buffer size above 2^53 is refused wherever sizes are read (all but minimal)" {
    var b = Builder.init();
    defer b.deinit();
    const data = "0123456789abcdefghij";
    var views = [_][16]u8{view(3, "abc\x00", 0, 0)};
    var sizes = [_]i64{(1 << 53) + 1};
    const tree = b.node(.{ .format = "vz", .length = 1, .buffers = &.{ null, ptr(&views), ptr(data), ptr(&sizes) } });
    try testing.expectEqual(Status.ok, check(tree, .minimal));
    try expectFailure(tree, .none, .invalid_layout, "more than this library accepts (2^53)");
    try expectFailure(tree, .default, .invalid_layout, "buffer 2 (variadic_bytes) would hold 9007199254740993 bytes, more than this library accepts (2^53)");
    try expectFailure(tree, .full, .invalid_layout, "more than this library accepts (2^53)");
}

test "run ends may not be dictionary-encoded (every level that checks children)" {
    var b = Builder.init();
    defer b.deinit();
    var run_ends = [_]i32{2};
    var dict_offsets = [_]i32{ 0, 1 };
    const dict = b.node(.{ .format = "u", .length = 1, .buffers = &.{ null, ptr(&dict_offsets), ptr("x") } });
    var re_child = b.node(.{ .format = "i", .name = "run_ends", .length = 1, .buffers = &.{ null, ptr(&run_ends) } });
    re_child.schema.dictionary = dict.schema;
    re_child.array.dictionary = dict.array;
    const values = b.node(.{ .format = "i", .name = "values", .length = 1, .buffers = &.{ null, ptr(&int32_values) } });
    const tree = b.node(.{ .format = "+r", .length = 2, .children = &.{ re_child, values } });
    for ([_]Level{ .minimal, .default }) |level| try expectFailure(tree, level, .invalid_layout, "child 0 \"run_ends\": run_ends must be plain int16, int32 or int64, not dictionary-encoded");
    // `full` reads the indices against the dictionary first.
    try testing.expectEqual(Status.invalid_layout, check(tree, .full));
}
