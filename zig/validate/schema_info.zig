//! Every schema string of an imported tree, copied out in one call: what the
//! TS converter needs per node (flags, format, name, metadata), without one
//! FFI read per field per node (the conversion hot path).
//!
//! Output layout (little-endian), for the nodes of a node table in order:
//!   i32 node count N
//!   N records of 8 i32: flags (low 32 bits), flags (high 32 bits),
//!     format offset, format length, name offset (-1: NULL), name length,
//!     metadata offset (-1: NULL), metadata length
//!   the string bytes the offsets point into (from the start of the output).
//! Metadata is copied in its binary encoding, whole.
//!
//! The schemas must have been validated (format and metadata are then
//! bounded). Nothing is kept: the caller owns the output.

const std = @import("std");
const abi = @import("../core/abi.zig");
const format = @import("../core/format.zig");
const metadata = @import("../core/metadata.zig");
const validate = @import("validate.zig");

pub const record_words = 8;
/// Longest name copied (longer names are cut; real ones are far shorter).
pub const max_name_bytes = 1 << 16;

/// The length of `text` up to its NUL, reading at most `limit` bytes.
pub fn boundedLength(text: [*:0]const u8, limit: usize) usize {
    var len: usize = 0;
    while (len < limit and text[len] != 0) len += 1;
    return len;
}

/// The producer's ArrowSchema of `table`'s node `node`.
pub fn schemaOf(table: *const validate.NodeTable, node: usize) *const abi.ArrowSchema {
    const address: usize = @intFromFloat(table.get(node, .schema));
    return @ptrFromInt(address);
}

/// Writes the layout above into `out` if it fits; returns the size it
/// needs either way.
pub fn fill(table: *const validate.NodeTable, out: []u8) usize {
    const n = table.nodeCount();
    const header_bytes = 4 + n * record_words * 4;
    // Pass 1: sizes.
    var total: usize = header_bytes;
    for (0..n) |node| {
        const schema = schemaOf(table, node);
        total += boundedLength(schema.format.?, format.max_format_length + 1);
        if (schema.name) |name| total += boundedLength(name, max_name_bytes);
        if (schema.metadata) |blob| total += metadata.encodedLength(blob) catch 0;
    }
    if (out.len < total) return total;
    // Pass 2: records and bytes.
    std.mem.writeInt(i32, out[0..4], @intCast(n), .little);
    var at: usize = header_bytes;
    for (0..n) |node| {
        const schema = schemaOf(table, node);
        var record: [record_words]i32 = .{ 0, 0, 0, 0, -1, 0, -1, 0 };
        const flags: u64 = @bitCast(schema.flags);
        record[0] = @bitCast(@as(u32, @truncate(flags)));
        record[1] = @bitCast(@as(u32, @truncate(flags >> 32)));
        const format_len = boundedLength(schema.format.?, format.max_format_length + 1);
        @memcpy(out[at..][0..format_len], schema.format.?[0..format_len]);
        record[2] = @intCast(at);
        record[3] = @intCast(format_len);
        at += format_len;
        if (schema.name) |name| {
            const len = boundedLength(name, max_name_bytes);
            @memcpy(out[at..][0..len], name[0..len]);
            record[4] = @intCast(at);
            record[5] = @intCast(len);
            at += len;
        }
        if (schema.metadata) |blob| {
            if (metadata.encodedLength(blob)) |len| {
                @memcpy(out[at..][0..len], blob[0..len]);
                record[6] = @intCast(at);
                record[7] = @intCast(len);
                at += len;
            } else |_| {}
        }
        const base = 4 + node * record_words * 4;
        for (record, 0..) |word, i| std.mem.writeInt(i32, out[base + i * 4 ..][0..4], word, .little);
    }
    std.debug.assert(at == total);
    return total;
}

test "strings of every node, in node-table order" {
    const release = struct {
        fn schema(s: *abi.ArrowSchema) callconv(.c) void {
            s.release = null;
        }
        fn array(a: *abi.ArrowArray) callconv(.c) void {
            a.release = null;
        }
    };
    const meta = [_]u8{ 1, 0, 0, 0, 1, 0, 0, 0, 'k', 2, 0, 0, 0, 'v', 'w' };
    var values = [_]i32{ 1, 2 };
    var child_buffers = [_]?*const anyopaque{ null, @ptrCast(&values) };
    var child_schema: abi.ArrowSchema = .empty;
    child_schema.format = "i";
    child_schema.name = "col";
    child_schema.metadata = &meta;
    child_schema.flags = abi.flag_nullable;
    child_schema.release = release.schema;
    var child_array: abi.ArrowArray = .empty;
    child_array.length = 2;
    child_array.n_buffers = 2;
    child_array.buffers = &child_buffers;
    child_array.release = release.array;
    var schema_children = [_]?*abi.ArrowSchema{&child_schema};
    var array_children = [_]?*abi.ArrowArray{&child_array};
    var root_buffers = [_]?*const anyopaque{null};
    var root_schema: abi.ArrowSchema = .empty;
    root_schema.format = "+s";
    root_schema.n_children = 1;
    root_schema.children = &schema_children;
    root_schema.release = release.schema;
    var root_array: abi.ArrowArray = .empty;
    root_array.length = 2;
    root_array.n_buffers = 1;
    root_array.buffers = &root_buffers;
    root_array.n_children = 1;
    root_array.children = &array_children;
    root_array.release = release.array;

    var table: validate.NodeTable = .{};
    defer table.deinit();
    try std.testing.expectEqual(.ok, validate.validate(&root_schema, &root_array, .default, true, &table));
    var small: [8]u8 = undefined;
    const needed = fill(&table, &small);
    try std.testing.expectEqual(@as(usize, 4 + 2 * 32 + 2 + 1 + 3 + meta.len), needed);
    var out: [128]u8 = undefined;
    try std.testing.expectEqual(needed, fill(&table, &out));
    const word = struct {
        fn at(bytes: []const u8, node: usize, i: usize) i32 {
            return std.mem.readInt(i32, bytes[4 + node * 32 + i * 4 ..][0..4], .little);
        }
    };
    try std.testing.expectEqual(@as(i32, 2), std.mem.readInt(i32, out[0..4], .little));
    try std.testing.expectEqualStrings("+s", out[@intCast(word.at(&out, 0, 2))..][0..2]);
    try std.testing.expectEqual(@as(i32, -1), word.at(&out, 0, 4)); // root name NULL
    try std.testing.expectEqual(@as(i32, 2), word.at(&out, 1, 0)); // nullable
    try std.testing.expectEqualStrings("col", out[@intCast(word.at(&out, 1, 4))..][0..3]);
    try std.testing.expectEqualSlices(u8, &meta, out[@intCast(word.at(&out, 1, 6))..][0..meta.len]);
}
