//! Whether an array's schema describes the same data as a stream's schema:
//! the check a stream makes before handing on an array it did not build
//! (a device array made natively, moved into get_next's `out`).
//!
//! Compared, at every level: the format string, the number of children,
//! the children's names (a NULL name equals ""), and whether there is a
//! dictionary. Not compared: the root's name, flags (nullability, ordered,
//! keys sorted) and metadata, which do not change how buffers are read.
//! Nothing is allocated or kept; schemas are only read.

const std = @import("std");
const abi = @import("../core/abi.zig");
const status = @import("../core/status.zig");
const format = @import("../core/format.zig");
const validate = @import("../validate/validate.zig");
const Status = status.Status;
const fail = status.fail;

/// Where in the tree a difference is, for the message.
const Path = struct {
    buf: [192]u8 = undefined,
    len: usize = 0,

    fn push(self: *Path, comptime fmt: []const u8, args: anytype) usize {
        const before = self.len;
        const written = std.fmt.bufPrint(self.buf[self.len..], fmt, args) catch return before;
        self.len += written.len;
        return before;
    }

    fn text(self: *const Path) []const u8 {
        return if (self.len == 0) "the root" else self.buf[0..self.len];
    }
};

fn boundedFormat(schema: *const abi.ArrowSchema) ?[]const u8 {
    const ptr = schema.format orelse return null;
    var len: usize = 0;
    while (len <= format.max_format_length and ptr[len] != 0) len += 1;
    return ptr[0..len];
}

fn nameOf(schema: *const abi.ArrowSchema) []const u8 {
    const ptr = schema.name orelse return "";
    var len: usize = 0;
    while (len < 1 << 16 and ptr[len] != 0) len += 1;
    return ptr[0..len];
}

fn childAt(schema: *const abi.ArrowSchema, i: usize) ?*const abi.ArrowSchema {
    const children = schema.children orelse return null;
    return children[i];
}

fn compare(expected: *const abi.ArrowSchema, actual: *const abi.ArrowSchema, path: *Path, depth: usize) Status {
    if (depth > validate.max_nesting_depth) return fail(.too_deep, "the array's schema nests deeper than {d} levels", .{validate.max_nesting_depth});
    const want = boundedFormat(expected) orelse return fail(.invalid_format, "the stream's schema has a NULL format at {s}", .{path.text()});
    const got = boundedFormat(actual) orelse return fail(.invalid_format, "the array's schema has a NULL format at {s}", .{path.text()});
    if (!std.mem.eql(u8, want, got))
        return fail(.invalid_argument, "the array's schema does not match the stream's: {s} has format \"{s}\", the stream's has \"{s}\"", .{ path.text(), got, want });
    if (expected.n_children != actual.n_children)
        return fail(.invalid_argument, "the array's schema does not match the stream's: {s} has {d} children, the stream's has {d}", .{ path.text(), actual.n_children, expected.n_children });
    if (actual.n_children < 0) return fail(.invalid_layout, "the array's schema has n_children {d} at {s}", .{ actual.n_children, path.text() });
    for (0..@intCast(actual.n_children)) |i| {
        const e = childAt(expected, i) orelse return fail(.invalid_layout, "the stream's schema has a NULL child {d} at {s}", .{ i, path.text() });
        const a = childAt(actual, i) orelse return fail(.invalid_layout, "the array's schema has a NULL child {d} at {s}", .{ i, path.text() });
        const mark = path.push("{s}child {d}", .{ if (path.len == 0) "" else " > ", i });
        defer path.len = mark;
        if (!std.mem.eql(u8, nameOf(e), nameOf(a)))
            return fail(.invalid_argument, "the array's schema does not match the stream's: {s} is named \"{s}\", the stream's is \"{s}\"", .{ path.text(), nameOf(a), nameOf(e) });
        const s = compare(e, a, path, depth + 1);
        if (s != .ok) return s;
    }
    if ((expected.dictionary == null) != (actual.dictionary == null))
        return fail(.invalid_argument, "the array's schema does not match the stream's: {s} {s}", .{
            path.text(), if (actual.dictionary != null) "has a dictionary, the stream's has none" else "has no dictionary, the stream's has one",
        });
    if (expected.dictionary) |e| {
        const mark = path.push("{s}dictionary", .{if (path.len == 0) "" else " > "});
        defer path.len = mark;
        return compare(e, actual.dictionary.?, path, depth + 1);
    }
    return .ok;
}

/// .ok when `actual` describes data laid out as `expected` says (see the
/// module comment); otherwise a failure naming where they differ.
pub fn check(expected: *const abi.ArrowSchema, actual: *const abi.ArrowSchema) Status {
    var path: Path = .{};
    return compare(expected, actual, &path, 0);
}

// ---------------------------------------------------------------------------

const testing = std.testing;
const export_schema = @import("../export/schema.zig");

fn build(nodes: []const struct { []const u8, ?[]const u8, u32, bool }) !abi.ArrowSchema {
    var plan: std.ArrayList(u8) = .empty;
    defer plan.deinit(testing.allocator);
    for (nodes) |n| try export_schema.appendNode(&plan, testing.allocator, n[0], n[1], null, abi.flag_nullable, n[2], n[3]);
    var out: abi.ArrowSchema = .empty;
    try testing.expectEqual(Status.ok, export_schema.build(plan.items, &out));
    return out;
}

test "equal layouts match whatever the names of the root, flags and metadata" {
    var a = try build(&.{ .{ "+s", "x", 2, false }, .{ "i", "a", 0, false }, .{ "u", "b", 0, false } });
    defer a.release.?(&a);
    var b = try build(&.{ .{ "+s", null, 2, false }, .{ "i", "a", 0, false }, .{ "u", "b", 0, false } });
    defer b.release.?(&b);
    try testing.expectEqual(Status.ok, check(&a, &b));
}

test "a different format, child name, child count or dictionary names where" {
    var stream = try build(&.{ .{ "+s", "", 2, false }, .{ "i", "a", 0, false }, .{ "+l", "b", 1, false }, .{ "u", "item", 0, false } });
    defer stream.release.?(&stream);
    var format_differs = try build(&.{ .{ "+s", "", 2, false }, .{ "i", "a", 0, false }, .{ "+l", "b", 1, false }, .{ "z", "item", 0, false } });
    defer format_differs.release.?(&format_differs);
    try testing.expectEqual(Status.invalid_argument, check(&stream, &format_differs));
    try testing.expectEqualStrings("the array's schema does not match the stream's: child 1 > child 0 has format \"z\", the stream's has \"u\"", std.mem.span(status.lastMessage()));

    var name_differs = try build(&.{ .{ "+s", "", 2, false }, .{ "i", "A", 0, false }, .{ "+l", "b", 1, false }, .{ "u", "item", 0, false } });
    defer name_differs.release.?(&name_differs);
    try testing.expectEqual(Status.invalid_argument, check(&stream, &name_differs));
    try testing.expect(std.mem.indexOf(u8, std.mem.span(status.lastMessage()), "child 0 is named \"A\"") != null);

    var fewer = try build(&.{ .{ "+s", "", 1, false }, .{ "i", "a", 0, false } });
    defer fewer.release.?(&fewer);
    try testing.expectEqual(Status.invalid_argument, check(&stream, &fewer));
    try testing.expect(std.mem.indexOf(u8, std.mem.span(status.lastMessage()), "the root has 1 children, the stream's has 2") != null);

    var dict_stream = try build(&.{ .{ "+s", "", 1, false }, .{ "i", "d", 0, true }, .{ "u", null, 0, false } });
    defer dict_stream.release.?(&dict_stream);
    var no_dict = try build(&.{ .{ "+s", "", 1, false }, .{ "i", "d", 0, false } });
    defer no_dict.release.?(&no_dict);
    try testing.expectEqual(Status.invalid_argument, check(&dict_stream, &no_dict));
    try testing.expectEqualStrings("the array's schema does not match the stream's: child 0 has no dictionary, the stream's has one", std.mem.span(status.lastMessage()));
}
