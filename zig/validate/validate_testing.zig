//! What the validation tests share (validate_test.zig,
//! validate_types_test.zig, validate_limits_test.zig): trees built in an
//! arena from small literal buffers, whose release callbacks only mark the
//! struct released (the arena owns memory), and checks that run
//! validation with and without a node table.

const std = @import("std");
const abi = @import("../core/abi.zig");
const status = @import("../core/status.zig");
const format = @import("../core/format.zig");
const validate = @import("validate.zig");
const Status = status.Status;
const Level = validate.Level;
const testing = std.testing;

pub fn releaseSchema(schema: *abi.ArrowSchema) callconv(.c) void {
    schema.release = null;
}
pub fn releaseArray(array: *abi.ArrowArray) callconv(.c) void {
    array.release = null;
}

pub const Node = struct { schema: *abi.ArrowSchema, array: *abi.ArrowArray };

pub const Spec = struct {
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
pub const Builder = struct {
    arena: std.heap.ArenaAllocator,

    pub fn init() Builder {
        return .{ .arena = .init(testing.allocator) };
    }
    pub fn deinit(self: *Builder) void {
        self.arena.deinit();
    }

    pub fn node(self: *Builder, spec: Spec) Node {
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
    pub fn batch(self: *Builder, length: i64, fields: []const Node) Node {
        return self.node(.{ .format = "+s", .length = length, .buffers = &.{null}, .children = fields });
    }
};

pub fn ptr(p: anytype) ?*const anyopaque {
    return @ptrCast(p);
}

/// Validates `tree` twice: into a node table (where flat trees take the
/// fast path, validate/flat.zig) and without one (always walked). Both
/// must agree; the message is the walk's.
pub fn check(tree: Node, level: Level) Status {
    status.clear();
    var table: validate.NodeTable = .{};
    defer table.deinit();
    const described = validate.validate(tree.schema, tree.array, level, true, &table);
    status.clear();
    const walked = validate.validate(tree.schema, tree.array, level, true, null);
    if (described != walked) std.debug.panic("with a node table: {s}, without: {s}", .{ @tagName(described), @tagName(walked) });
    return walked;
}

pub fn message() []const u8 {
    return std.mem.span(status.lastMessage());
}

pub fn expectFailure(tree: Node, level: Level, expected: Status, needle: []const u8) !void {
    const got = check(tree, level);
    if (got != expected or std.mem.indexOf(u8, message(), needle) == null) {
        std.debug.print("expected {s} containing \"{s}\", got {s}: \"{s}\"\n", .{ @tagName(expected), needle, @tagName(got), message() });
        return error.TestUnexpectedResult;
    }
}

pub const all_levels = [_]Level{ .none, .minimal, .default, .full };

pub var int32_values = [_]i32{ 1, 2, 3, 4, 5, 6, 7, 8 };
pub var validity_bits = [_]u8{ 0b1011_0111, 0xff };

pub fn view(len: i32, prefix: *const [4]u8, buffer_index: i32, offset: i32) [16]u8 {
    var out: [16]u8 = @splat(0);
    std.mem.writeInt(i32, out[0..4], len, .little);
    @memcpy(out[4..8], prefix);
    std.mem.writeInt(i32, out[8..12], buffer_index, .little);
    std.mem.writeInt(i32, out[12..16], offset, .little);
    return out;
}
