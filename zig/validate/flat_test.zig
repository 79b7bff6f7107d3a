//! validate/flat.zig against the full walker, on random trees: every tree
//! the fast path accepts, the walker accepts with the same node table; a
//! tree it declines leaves the table empty; and every flat tree the walker
//! accepts (below level full), the fast path accepts too. Trees mix flat
//! leaves with other types, broken counts, lengths, offsets, null counts,
//! buffers, released structs, dictionaries and metadata. A failure prints
//! its seed.

const std = @import("std");
const abi = @import("../core/abi.zig");
const status = @import("../core/status.zig");
const validate = @import("validate.zig");
const validate_flat = @import("flat.zig");
const Level = validate.Level;
const NodeTable = validate.NodeTable;
const testing = std.testing;

fn releaseSchema(schema: *abi.ArrowSchema) callconv(.c) void {
    schema.release = null;
}
fn releaseArray(array: *abi.ArrowArray) callconv(.c) void {
    array.release = null;
}

/// Zeroed memory every non-NULL buffer points at: large enough for any
/// value the walker reads of the small non-flat trees made here.
var zeros: [4096]u8 align(16) = @splat(0);

const flat_formats = [_][*:0]const u8{
    "b", "c", "C", "s", "S", "i", "I", "l", "L", "e", "f", "g", "d:10,2", "d:40,3,256", "w:3",
    "tdD", "tdm", "tts", "ttm", "ttu", "ttn", "tsu:", "tsn:UTC", "tDs", "tiM", "tiD", "tin",
};
/// Not flat (the fast path declines them), or not a format at all.
const other_formats = [_][*:0]const u8{ "u", "z", "n", "vu", "+s", "?", "w:0" };

/// Metadata blobs: none pairs (valid) and a negative count (invalid).
const empty_metadata = [_]u8{ 0, 0, 0, 0 };
const bad_metadata = [_]u8{ 0xff, 0xff, 0xff, 0xff };

const Tree = struct {
    schema: *abi.ArrowSchema,
    array: *abi.ArrowArray,
    /// Whether the fast path should take it when it is valid: the root and
    /// every child flat (or a struct root), no dictionary.
    flat: bool,
};

const Maker = struct {
    a: std.mem.Allocator,
    r: std.Random,
    /// Huge lengths and offsets only below level full: there the walker
    /// reads every value of a tree that passes its other rules.
    huge: bool,

    fn oneIn(self: *Maker, n: u32) bool {
        return self.r.uintLessThan(u32, n) == 0;
    }

    fn pick(self: *Maker, comptime T: type, items: []const T) T {
        return items[self.r.uintLessThan(usize, items.len)];
    }

    fn buffersFor(format_text: []const u8) usize {
        if (format_text[0] == 'u' or format_text[0] == 'z') return 3;
        if (format_text[0] == 'n') return 0;
        if (format_text[0] == 'v') return 3;
        if (format_text[0] == '+') return 1;
        return 2;
    }

    /// A node; huge lengths and offsets only where nothing is read (flat).
    fn node(self: *Maker, format_text: [*:0]const u8, flat: bool, children: []const Tree) !Tree {
        const schema = try self.a.create(abi.ArrowSchema);
        const array = try self.a.create(abi.ArrowArray);
        const text = std.mem.span(format_text);
        var length: i64 = self.pick(i64, &.{ 0, 1, 5, 8, 16, 100 });
        var offset: i64 = self.pick(i64, &.{ 0, 0, 1, 3 });
        if (flat and self.huge and self.oneIn(12)) length = self.pick(i64, &.{ -1, 1 << 53, (1 << 53) - 2, std.math.maxInt(i64), 1 << 61 });
        if (flat and self.huge and self.oneIn(12)) offset = self.pick(i64, &.{ -1, 1 << 53, std.math.maxInt(i64) });
        var null_count: i64 = self.pick(i64, &.{ -1, 0, 0, 1 });
        if (self.oneIn(10)) null_count = self.pick(i64, &.{ -2, length, length +| 1 });
        var n_buffers = buffersFor(text);
        if (self.oneIn(15)) n_buffers = if (n_buffers > 0 and self.oneIn(2)) n_buffers - 1 else n_buffers + 1;
        const buffers = try self.a.alloc(?*const anyopaque, n_buffers);
        for (buffers, 0..) |*slot, i| slot.* = if ((i == 0 and self.oneIn(3)) or self.oneIn(25)) null else @ptrCast(&zeros);
        const schema_children = try self.a.alloc(?*abi.ArrowSchema, children.len);
        const array_children = try self.a.alloc(?*abi.ArrowArray, children.len);
        for (children, 0..) |child, i| {
            schema_children[i] = if (self.oneIn(60)) null else child.schema;
            array_children[i] = if (self.oneIn(60)) null else child.array;
        }
        var n_children: i64 = @intCast(children.len);
        if (self.oneIn(40)) n_children = self.pick(i64, &.{ -1, n_children + 1 });
        schema.* = .{
            .format = if (self.oneIn(80)) null else format_text,
            .name = "x",
            .metadata = if (self.oneIn(10)) &empty_metadata else if (self.oneIn(40)) &bad_metadata else null,
            .flags = abi.flag_nullable,
            .n_children = @intCast(children.len),
            .children = if (children.len == 0 and !self.oneIn(20)) null else schema_children.ptr,
            .dictionary = null,
            .release = if (self.oneIn(60)) null else releaseSchema,
            .private_data = null,
        };
        array.* = .{
            .length = length,
            .null_count = null_count,
            .offset = offset,
            .n_buffers = @intCast(n_buffers),
            .n_children = n_children,
            .buffers = if (n_buffers == 0 and !self.oneIn(4)) null else if (self.oneIn(80)) null else buffers.ptr,
            .children = if (children.len == 0) null else array_children.ptr,
            .dictionary = null,
            .release = if (self.oneIn(60)) null else releaseArray,
            .private_data = null,
        };
        return .{ .schema = schema, .array = array, .flat = flat };
    }

    fn leaf(self: *Maker) !Tree {
        if (self.oneIn(6)) return self.node(self.pick([*:0]const u8, &other_formats), false, &.{});
        if (self.oneIn(40)) {
            // A flat format with a child (the format allows none).
            const child = try self.node("i", true, &.{});
            return self.node(self.pick([*:0]const u8, &flat_formats), false, &.{child});
        }
        const made = try self.node(self.pick([*:0]const u8, &flat_formats), true, &.{});
        if (self.oneIn(30)) {
            // A dictionary-encoded leaf (declined; the walker decides).
            const dictionary = try self.node("u", false, &.{});
            // Mostly on both structs; else on one only (a broken tree).
            if (!self.oneIn(4)) made.schema.dictionary = dictionary.schema;
            if (made.schema.dictionary == null or !self.oneIn(3)) made.array.dictionary = dictionary.array;
            return .{ .schema = made.schema, .array = made.array, .flat = false };
        }
        return made;
    }

    fn tree(self: *Maker) !Tree {
        if (self.oneIn(5)) return self.leaf();
        const count = self.r.uintLessThan(usize, 7);
        const children = try self.a.alloc(Tree, count);
        var flat = true;
        for (children) |*child| {
            child.* = try self.leaf();
            flat = flat and child.flat;
        }
        // Children at least as long as the root, mostly.
        const root = try self.node("+s", true, children);
        if (!self.oneIn(6)) {
            const end = root.array.offset +| root.array.length;
            for (children) |child| {
                if (end >= 0 and end < 1000 and child.array.length >= 0 and child.array.length < end) child.array.length = end;
            }
        }
        return .{ .schema = root.schema, .array = root.array, .flat = flat };
    }
};

fn sameTables(fast: *const NodeTable, walked: *const NodeTable) bool {
    return std.mem.eql(f64, fast.nodes.items, walked.nodes.items) and
        std.mem.eql(f64, fast.buffers.items, walked.buffers.items) and
        fast.bytes_known == walked.bytes_known;
}

test "the fast path accepts exactly the flat trees the walker accepts, with the same node table" {
    var accepted: usize = 0;
    var declined_valid: usize = 0;
    var invalid: usize = 0;
    const levels = [_]Level{ .none, .minimal, .default, .full };
    for (0..6000) |seed| {
        var arena: std.heap.ArenaAllocator = .init(testing.allocator);
        defer arena.deinit();
        var prng: std.Random.DefaultPrng = .init(seed);
        const level = levels[seed % levels.len];
        var maker: Maker = .{ .a = arena.allocator(), .r = prng.random(), .huge = level != .full };
        const tree = try maker.tree();

        // The fast path into a room like an owner's (it may outgrow it).
        var room: NodeTable.Room = undefined;
        var fast_table: NodeTable = .inRoom(&room);
        defer fast_table.deinit();
        const fast = validate_flat.describe(tree.schema, tree.array, level, &fast_table);
        var walked_table: NodeTable = .{};
        defer walked_table.deinit();
        status.clear();
        const walked = validate.validateByWalk(tree.schema, tree.array, level, true, &walked_table);

        errdefer std.debug.print("seed {d}, level {s}: fast {}, walked {s}\n", .{ seed, @tagName(level), fast, @tagName(walked) });
        if (fast) {
            try testing.expectEqual(status.Status.ok, walked);
            try testing.expect(sameTables(&fast_table, &walked_table));
            accepted += 1;
        } else {
            try testing.expectEqual(@as(usize, 0), fast_table.nodes.items.len);
            try testing.expectEqual(@as(usize, 0), fast_table.buffers.items.len);
            try testing.expectEqual(@as(i64, 0), fast_table.bytes_known);
            if (walked == .ok) {
                // Only trees that are not flat, or level full, go this way.
                try testing.expect(!tree.flat or level == .full);
                declined_valid += 1;
            } else invalid += 1;
        }
        // And `validate` itself (fast path first) says what the walk says.
        var table: NodeTable = .{};
        defer table.deinit();
        status.clear();
        try testing.expectEqual(walked, validate.validate(tree.schema, tree.array, level, true, &table));
        if (walked == .ok) try testing.expect(sameTables(&table, &walked_table));
    }
    // The mix exercises every outcome (a test that cannot fail is a defect).
    try testing.expect(accepted > 500);
    try testing.expect(declined_valid > 200);
    try testing.expect(invalid > 500);
}
