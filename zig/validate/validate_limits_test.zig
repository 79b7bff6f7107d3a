//! Tests of validate.zig with producer-supplied integers near the limits of
//! i64, and of the layouts where full validation agrees with Arrow C++.

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
// Producer-supplied integers near the limits of i64: typed errors, never an
// overflow (the safety-checked build would abort the process)
// ---------------------------------------------------------------------------

const i64_max = std.math.maxInt(i64);
const i32_max = std.math.maxInt(i32);

test "list views: offset or size INT64_MAX is out of the child, not an overflow" {
    var b = Builder.init();
    defer b.deinit();
    const child = b.node(.{ .format = "i", .length = 4, .buffers = &.{ null, ptr(&vt.int32_values) } });
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
    try expectFailure(b.node(.{ .format = "U", .length = 1, .buffers = &.{ null, ptr(&offsets), ptr(&vt.int32_values) } }), .default, .invalid_layout, "buffer 2 (bytes) would hold 9223372036854775807 bytes");
    var negative = [_]i64{ std.math.minInt(i64), 0 };
    try expectFailure(b.node(.{ .format = "Z", .length = 1, .buffers = &.{ null, ptr(&negative), ptr(&vt.int32_values) } }), .default, .invalid_layout, "first offset is negative");
    // List offsets compare against the child's length, never add.
    var list_offsets = [_]i64{ 0, i64_max };
    const child = b.node(.{ .format = "i", .length = 4, .buffers = &.{ null, ptr(&vt.int32_values) } });
    try expectFailure(b.node(.{ .format = "+L", .length = 1, .buffers = &.{ null, ptr(&list_offsets) }, .children = &.{child} }), .default, .invalid_layout, "last offset 9223372036854775807 is past the end");
}

test "offset + length, length * width and bitmap sizes near the limits" {
    var b = Builder.init();
    defer b.deinit();
    for (all_levels) |level| {
        try expectFailure(b.node(.{ .format = "i", .length = i64_max, .buffers = &.{ null, ptr(&vt.int32_values) } }), level, .invalid_layout, "is too large");
        try expectFailure(b.node(.{ .format = "i", .length = 1, .offset = i64_max, .buffers = &.{ null, ptr(&vt.int32_values) } }), level, .invalid_layout, "is too large");
        try expectFailure(b.node(.{ .format = "b", .length = i64_max - 3, .offset = 3, .buffers = &.{ null, ptr(&vt.int32_values) } }), level, .invalid_layout, "is too large");
        try expectFailure(b.node(.{ .format = "d:76,0,256", .length = 1 << 52, .offset = 1 << 52, .buffers = &.{ null, ptr(&vt.int32_values) } }), level, .invalid_layout, "more than this library accepts");
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
    const values = b.node(.{ .format = "i", .name = "values", .length = 2, .buffers = &.{ null, ptr(&vt.int32_values) } });
    try testing.expectEqual(Status.ok, check(b.node(.{ .format = "+r", .length = 5, .children = &.{ ends, values } }), .full));
    var ends16 = [_]i16{ 100, std.math.maxInt(i16) };
    const short_ends = b.node(.{ .format = "s", .name = "run_ends", .length = 2, .buffers = &.{ null, ptr(&ends16) } });
    try expectFailure(b.node(.{ .format = "+r", .length = 40000, .children = &.{ short_ends, values } }), .minimal, .invalid_layout, "offset + length 40000 is more than run ends of format \"s\" can reach");
    try expectFailure(b.node(.{ .format = "+r", .length = 5, .null_count = 1, .children = &.{ short_ends, values } }), .minimal, .invalid_layout, "null_count is 1, but a run_end_encoded array has no nulls of its own");
    const ints = b.node(.{ .format = "i", .length = 2, .buffers = &.{ null, ptr(&vt.int32_values) } });
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
    const a = b.node(.{ .format = "i", .name = "a", .length = 3, .buffers = &.{ null, ptr(&vt.int32_values) } });
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
    const values = b.node(.{ .format = "i", .name = "values", .length = 3, .buffers = &.{ null, ptr(&vt.int32_values) } });
    const empty_ree = b.node(.{ .format = "+r", .length = 0, .children = &.{ ends, values } });
    try testing.expectEqual(Status.ok, check(empty_ree, .default));
    try expectFailure(empty_ree, .full, .invalid_layout, "run end 1 (2) is not greater than the one before (5)");
    var negative = [_]i32{ -3, 0 };
    const child = b.node(.{ .format = "i", .length = 4, .buffers = &.{ null, ptr(&vt.int32_values) } });
    const empty_list = b.node(.{ .format = "+l", .length = 0, .buffers = &.{ null, ptr(&negative) }, .children = &.{child} });
    try testing.expectEqual(Status.ok, check(empty_list, .default));
    try expectFailure(empty_list, .full, .invalid_layout, "first offset is negative (-3)");
}

test "full: the declared null count must be the bitmap's, -1 excepted" {
    var b = Builder.init();
    defer b.deinit();
    // vt.validity_bits: 0b1011_0111 -> slots 3 and 6 are null among the first 8.
    try testing.expectEqual(Status.ok, check(b.node(.{ .format = "i", .length = 8, .null_count = 2, .buffers = &.{ ptr(&vt.validity_bits), ptr(&vt.int32_values) } }), .full));
    try testing.expectEqual(Status.ok, check(b.node(.{ .format = "i", .length = 8, .null_count = -1, .buffers = &.{ ptr(&vt.validity_bits), ptr(&vt.int32_values) } }), .full));
    const wrong = b.node(.{ .format = "i", .length = 8, .null_count = 1, .buffers = &.{ ptr(&vt.validity_bits), ptr(&vt.int32_values) } });
    try testing.expectEqual(Status.ok, check(wrong, .default));
    try expectFailure(wrong, .full, .invalid_layout, "null_count is 1 but the validity bitmap has 2 nulls");
    try expectFailure(b.node(.{ .format = "i", .length = 5, .offset = 3, .null_count = 0, .buffers = &.{ ptr(&vt.validity_bits), ptr(&vt.int32_values) } }), .full, .invalid_layout, "null_count is 0 but the validity bitmap has 2 nulls");
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
    const value = b.node(.{ .format = "i", .length = 2, .buffers = &.{ null, ptr(&vt.int32_values) } });
    const null_key = b.node(.{ .format = "i", .length = 2, .null_count = 1, .buffers = &.{ ptr(&second_null), ptr(&vt.int32_values) } });
    const entries = b.node(.{ .format = "+s", .name = "entries", .length = 2, .buffers = &.{null}, .children = &.{ null_key, value } });
    try expectFailure(b.node(.{ .format = "+m", .length = 1, .buffers = &.{ null, ptr(&offsets) }, .children = &.{entries} }), .minimal, .invalid_layout, "map keys have 1 nulls; keys may not be null");
    const unknown_key = b.node(.{ .format = "i", .length = 2, .null_count = -1, .buffers = &.{ ptr(&second_null), ptr(&vt.int32_values) } });
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
    const small = b.node(.{ .format = "i", .name = "a", .length = 2, .buffers = &.{ null, ptr(&vt.int32_values) } });
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
    const with_bitmap = b.node(.{ .format = "+ud:4", .length = 2, .buffers = &.{ ptr(&vt.validity_bits), ptr(&ids), ptr(&offsets) }, .children = &.{small} });
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
    const values = b.node(.{ .format = "i", .name = "values", .length = 1, .buffers = &.{ null, ptr(&vt.int32_values) } });
    const tree = b.node(.{ .format = "+r", .length = 2, .children = &.{ re_child, values } });
    for ([_]Level{ .minimal, .default }) |level| try expectFailure(tree, level, .invalid_layout, "child 0 \"run_ends\": run_ends must be plain int16, int32 or int64, not dictionary-encoded");
    // `full` reads the indices against the dictionary first.
    try testing.expectEqual(Status.invalid_layout, check(tree, .full));
}
