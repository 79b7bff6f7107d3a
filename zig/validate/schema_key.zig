//! An exact key of an imported schema tree, for the caches of what JS builds
//! from a schema (ts/arrow/import.ts keeps one apache-arrow Schema and one
//! batch plan per key). Two trees with equal keys have the same node shape,
//! flags, formats, names and metadata, so what is built from one fits the
//! other.
//!
//! Key layout: int32 words (little-endian bytes, zero-padded to a whole
//! word): the node count, then for each node of the node table in order
//!   child count, flags (low 32 bits), flags (high 32 bits),
//!   format length, format bytes,
//!   name length (-1: NULL), name bytes,
//!   metadata length (-1: NULL), metadata bytes (its binary encoding, whole)
//! Lengths are int32 words, bytes follow unaligned. Names are cut at
//! schema_info.max_name_bytes, as schema_info (what JS reads names from)
//! cuts them.
//!
//! One writer makes the key and `matches` compares a tree against a stored
//! key in one pass over the strings, without copying, so a repeated schema
//! (a producer's batches one by one) costs one call and no allocation.
//! Trees with a dictionary-encoded node have no key (apache-arrow gives
//! each dictionary type its own id: JS never shares them).
//!
//! The trees must have been validated (formats and metadata are then
//! bounded). Nothing is kept: the caller owns the output.

const std = @import("std");
const abi = @import("../core/abi.zig");
const format = @import("../core/format.zig");
const metadata = @import("../core/metadata.zig");
const schema_info = @import("schema_info.zig");
const validate = @import("validate.zig");

/// Whether `table`'s tree has a key (no node is dictionary-encoded).
pub fn hasKey(table: *const validate.NodeTable) bool {
    for (0..table.nodeCount()) |node| {
        if (table.get(node, .dictionary) >= 0) return false;
    }
    return true;
}

/// Writes the key of `table`'s tree into `out` if it fits (nothing is
/// written otherwise); returns the words it needs either way. The tree
/// must have a key (`hasKey`).
pub fn write(table: *const validate.NodeTable, out: []i32) usize {
    var sizer: Sizer = .{};
    emit(table, &sizer);
    const words = (sizer.bytes + 3) / 4;
    if (words > out.len) return words;
    const bytes: [*]u8 = @ptrCast(out.ptr);
    var writer: Writer = .{ .out = bytes[0 .. words * 4] };
    emit(table, &writer);
    @memset(writer.out[writer.at..], 0); // the padding of the last word
    return words;
}

/// Whether `key` (from `write`) is the key of `table`'s tree; null when
/// the tree has no key.
pub fn matches(table: *const validate.NodeTable, key: []const i32) ?bool {
    if (!hasKey(table)) return null;
    const bytes: [*]const u8 = @ptrCast(key.ptr);
    var comparer: Comparer = .{ .key = bytes[0 .. key.len * 4] };
    emit(table, &comparer);
    if (!comparer.equal) return false;
    // Same bytes, and the key ends where the tree does (its padding).
    return (comparer.at + 3) / 4 == key.len;
}

const schemaOf = schema_info.schemaOf;
const boundedLength = schema_info.boundedLength;

/// The key's contents, in order, into `sink` (a Sizer, Writer or Comparer:
/// `word(i32)` and `bytes([]const u8)`).
fn emit(table: *const validate.NodeTable, sink: anytype) void {
    const n = table.nodeCount();
    sink.word(@intCast(n));
    for (0..n) |node| {
        const schema = schemaOf(table, node);
        const flags: u64 = @bitCast(schema.flags);
        sink.word(@intFromFloat(table.get(node, .n_children)));
        sink.word(@bitCast(@as(u32, @truncate(flags))));
        sink.word(@bitCast(@as(u32, @truncate(flags >> 32))));
        const format_text = schema.format.?;
        sink.text(format_text[0..boundedLength(format_text, format.max_format_length + 1)]);
        if (schema.name) |name| {
            sink.text(name[0..boundedLength(name, schema_info.max_name_bytes)]);
        } else sink.word(-1);
        if (schema.metadata) |blob| {
            if (metadata.encodedLength(blob)) |len| {
                sink.text(blob[0..len]);
            } else |_| sink.word(-2); // not reached after validation
        } else sink.word(-1);
        if (sink.done()) return;
    }
}

/// Counts the key's bytes.
const Sizer = struct {
    bytes: usize = 0,
    fn word(self: *Sizer, _: i32) void {
        self.bytes += 4;
    }
    fn text(self: *Sizer, t: []const u8) void {
        self.bytes += 4 + t.len;
    }
    fn done(_: *const Sizer) bool {
        return false;
    }
};

/// Writes the key into `out` (sized by a Sizer first).
const Writer = struct {
    out: []u8,
    at: usize = 0,
    fn word(self: *Writer, w: i32) void {
        std.mem.writeInt(i32, self.out[self.at..][0..4], w, .little);
        self.at += 4;
    }
    fn text(self: *Writer, t: []const u8) void {
        self.word(@intCast(t.len));
        @memcpy(self.out[self.at..][0..t.len], t);
        self.at += t.len;
    }
    fn done(_: *const Writer) bool {
        return false;
    }
};

/// Compares the key, byte for byte, with a stored one; stops at the first
/// difference. Reads `key` through its pointer after checking the length
/// left (one check per call instead of a bounds check per access: this
/// runs once per node of every one-off import).
const Comparer = struct {
    key: []const u8,
    at: usize = 0,
    equal: bool = true,
    fn word(self: *Comparer, w: i32) void {
        if (!self.equal) return;
        if (self.key.len - self.at < 4) return self.differ();
        if (std.mem.readInt(i32, (self.key.ptr + self.at)[0..4], .little) != w) return self.differ();
        self.at += 4;
    }
    fn text(self: *Comparer, t: []const u8) void {
        self.word(@intCast(t.len));
        if (!self.equal) return;
        if (self.key.len - self.at < t.len) return self.differ();
        const stored = self.key.ptr + self.at;
        for (t, 0..) |byte, i| {
            if (stored[i] != byte) return self.differ();
        }
        self.at += t.len;
    }
    fn differ(self: *Comparer) void {
        self.equal = false;
    }
    fn done(self: *const Comparer) bool {
        return !self.equal;
    }
};

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

const testing = std.testing;

fn releaseSchema(s: *abi.ArrowSchema) callconv(.c) void {
    s.release = null;
}
fn releaseArray(a: *abi.ArrowArray) callconv(.c) void {
    a.release = null;
}

/// struct<col: int32> of two rows, with every field a key covers set, for
/// tests to change one field at a time.
const Tree = struct {
    meta: [15]u8 = .{ 1, 0, 0, 0, 1, 0, 0, 0, 'k', 2, 0, 0, 0, 'v', 'w' },
    values: [2]i32 = .{ 1, 2 },
    child_buffers: [2]?*const anyopaque = undefined,
    child_schema: abi.ArrowSchema = .empty,
    child_array: abi.ArrowArray = .empty,
    schema_children: [1]?*abi.ArrowSchema = undefined,
    array_children: [1]?*abi.ArrowArray = undefined,
    root_buffers: [1]?*const anyopaque = .{null},
    root_schema: abi.ArrowSchema = .empty,
    root_array: abi.ArrowArray = .empty,
    table: validate.NodeTable = .{},

    /// Links the structs (in place: `self` must not move after this).
    fn init(self: *Tree) void {
        self.child_buffers = .{ null, @ptrCast(&self.values) };
        self.child_schema.format = "i";
        self.child_schema.name = "col";
        self.child_schema.metadata = &self.meta;
        self.child_schema.flags = abi.flag_nullable;
        self.child_schema.release = releaseSchema;
        self.child_array.length = 2;
        self.child_array.n_buffers = 2;
        self.child_array.buffers = &self.child_buffers;
        self.child_array.release = releaseArray;
        self.schema_children = .{&self.child_schema};
        self.array_children = .{&self.child_array};
        self.root_schema.format = "+s";
        self.root_schema.n_children = 1;
        self.root_schema.children = &self.schema_children;
        self.root_schema.release = releaseSchema;
        self.root_array.length = 2;
        self.root_array.n_buffers = 1;
        self.root_array.buffers = &self.root_buffers;
        self.root_array.n_children = 1;
        self.root_array.children = &self.array_children;
        self.root_array.release = releaseArray;
    }

    /// Validates the structs as they are now into a fresh table.
    fn describe(self: *Tree) !*const validate.NodeTable {
        self.table.deinit();
        self.table = .{};
        try testing.expectEqual(.ok, validate.validate(&self.root_schema, &self.root_array, .default, true, &self.table));
        return &self.table;
    }

    /// The key of the structs as they are now, into `out`; its words.
    fn keyInto(self: *Tree, out: []i32) !usize {
        return write(try self.describe(), out);
    }

    fn deinit(self: *Tree) void {
        self.table.deinit();
    }
};

test "the key spells out every node's child count, flags, format, name and metadata" {
    var tree: Tree = .{};
    tree.init();
    defer tree.deinit();
    const table = try tree.describe();
    var small: [4]i32 = .{ 7, 7, 7, 7 };
    const words = write(table, &small);
    // The count; the root: 3 words, "+s", NULL name, NULL metadata; the
    // child: 3 words, "i", "col", 15 metadata bytes (each text after its
    // length word).
    const bytes: usize = 4 + (12 + 6 + 4 + 4) + (12 + 5 + 7 + 19);
    try testing.expectEqual((bytes + 3) / 4, words);
    try testing.expectEqualSlices(i32, &.{ 7, 7, 7, 7 }, &small); // too small: untouched
    var out: [32]i32 = @splat(0x55);
    try testing.expectEqual(words, write(table, &out));
    const b: [*]const u8 = @ptrCast(&out);
    const word = struct {
        fn at(p: [*]const u8, i: usize) i32 {
            return std.mem.readInt(i32, p[i..][0..4], .little);
        }
    };
    try testing.expectEqual(@as(i32, 2), word.at(b, 0)); // nodes
    try testing.expectEqual(@as(i32, 1), word.at(b, 4)); // root's child count
    try testing.expectEqual(@as(i32, 2), word.at(b, 16)); // format length
    try testing.expectEqualStrings("+s", b[20..22]);
    try testing.expectEqual(@as(i32, -1), word.at(b, 22)); // root name NULL
    try testing.expectEqual(@as(i32, -1), word.at(b, 26)); // root metadata NULL
    try testing.expectEqual(@as(i32, 0), word.at(b, 30)); // child's child count
    try testing.expectEqual(@as(i32, abi.flag_nullable), word.at(b, 34));
    try testing.expectEqualStrings("i", b[46..47]);
    try testing.expectEqualStrings("col", b[51..54]);
    try testing.expectEqual(@as(i32, 15), word.at(b, 54));
    try testing.expectEqualSlices(u8, &tree.meta, b[58..73]);
    try testing.expectEqual(@as(usize, 73), bytes);
    for (b[73 .. words * 4]) |pad| try testing.expectEqual(@as(u8, 0), pad);
    try testing.expectEqual(true, matches(table, out[0..words]));
}

test "a key matches only its own tree: any field changed, a key cut short or one word longer, does not" {
    var tree: Tree = .{};
    tree.init();
    defer tree.deinit();
    var key: [32]i32 = undefined;
    const words = try tree.keyInto(&key);
    try testing.expectEqual(true, matches(&tree.table, key[0..words]));
    try testing.expectEqual(false, matches(&tree.table, key[0 .. words - 1]));
    var longer = key;
    longer[words] = 0;
    try testing.expectEqual(false, matches(&tree.table, longer[0 .. words + 1]));
    try testing.expectEqual(false, matches(&tree.table, key[0..0]));

    const Change = enum { name, name_null, flags, format, metadata, metadata_null, metadata_value };
    for ([_]Change{ .name, .name_null, .flags, .format, .metadata, .metadata_null, .metadata_value }) |change| {
        var changed: Tree = .{};
        changed.init();
        defer changed.deinit();
        var other_meta = changed.meta;
        other_meta[14] = 'x';
        switch (change) {
            .name => changed.child_schema.name = "cot",
            .name_null => changed.child_schema.name = null,
            .flags => changed.child_schema.flags = 0,
            .format => changed.child_schema.format = "I",
            .metadata => changed.child_schema.metadata = "\x00\x00\x00\x00",
            .metadata_null => changed.child_schema.metadata = null,
            .metadata_value => changed.child_schema.metadata = &other_meta,
        }
        const table = try changed.describe();
        try testing.expectEqual(false, matches(table, key[0..words]));
        var own: [32]i32 = undefined;
        const own_words = write(table, &own);
        try testing.expectEqual(true, matches(table, own[0..own_words]));
    }
}

test "struct<a> and struct<a, b> with equal strings differ by child count" {
    var one: Tree = .{};
    one.init();
    defer one.deinit();
    var key: [32]i32 = undefined;
    const words = try one.keyInto(&key);

    var two: Tree = .{};
    two.init();
    defer two.deinit();
    var schemas = [_]?*abi.ArrowSchema{ &two.child_schema, &two.child_schema };
    var arrays = [_]?*abi.ArrowArray{ &two.child_array, &two.child_array };
    two.root_schema.n_children = 2;
    two.root_schema.children = &schemas;
    two.root_array.n_children = 2;
    two.root_array.children = &arrays;
    try testing.expectEqual(false, matches(try two.describe(), key[0..words]));
}

test "a tree with a dictionary-encoded node has no key and matches nothing" {
    var tree: Tree = .{};
    tree.init();
    defer tree.deinit();
    var key: [32]i32 = undefined;
    const words = try tree.keyInto(&key);

    var dict_values = [_]i32{ 10, 20 };
    var dict_buffers = [_]?*const anyopaque{ null, @ptrCast(&dict_values) };
    var dict_schema: abi.ArrowSchema = .empty;
    dict_schema.format = "i";
    dict_schema.release = releaseSchema;
    var dict_array: abi.ArrowArray = .empty;
    dict_array.length = 2;
    dict_array.n_buffers = 2;
    dict_array.buffers = &dict_buffers;
    dict_array.release = releaseArray;
    tree.child_schema.dictionary = &dict_schema;
    tree.child_array.dictionary = &dict_array;
    tree.values = .{ 0, 1 };
    const table = try tree.describe();
    try testing.expect(!hasKey(table));
    try testing.expectEqual(null, matches(table, key[0..words]));
}
