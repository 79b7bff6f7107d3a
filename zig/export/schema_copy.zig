//! Deep copies of ArrowSchema trees: the tree is written as an
//! export_schema plan (format, name, metadata, flags, children, dictionary)
//! and rebuilt from it, so the copy owns all its strings in one block and
//! outlives the original. Used where a new array needs its own schema (a
//! host copy of device data, a host view of an owner).

const std = @import("std");
const abi = @import("../core/abi.zig");
const status = @import("../core/status.zig");
const format = @import("../core/format.zig");
const validate = @import("../validate/validate.zig");
const export_schema = @import("schema.zig");
const Status = status.Status;
const fail = status.fail;

/// Most metadata bytes accepted per node (the plan stores i32 lengths).
pub const max_metadata_bytes = 1 << 30;

/// Bytes of the spec's metadata encoding at `metadata` (int32 count, then
/// per pair int32 key length, key, int32 value length, value).
fn metadataLength(metadata: [*]const u8) ?usize {
    const count = std.mem.readInt(i32, metadata[0..4], .little);
    if (count < 0) return null;
    var at: usize = 4;
    for (0..@intCast(count)) |_| {
        for (0..2) |_| {
            const len = std.mem.readInt(i32, metadata[at..][0..4], .little);
            if (len < 0) return null;
            at += 4 + @as(usize, @intCast(len));
            if (at > max_metadata_bytes) return null;
        }
    }
    return at;
}

fn writeNode(plan: *std.ArrayList(u8), schema: *const abi.ArrowSchema, depth: usize) Status {
    if (depth > validate.max_nesting_depth) return fail(.too_deep, "schema nests deeper than {d} levels", .{validate.max_nesting_depth});
    if (schema.release == null) return fail(.released, "schema is released (its release callback is NULL)", .{});
    const format_ptr = schema.format orelse return fail(.invalid_format, "schema format is NULL", .{});
    const format_text = std.mem.sliceTo(format_ptr[0 .. format.max_format_length + 1], 0);
    const name: ?[]const u8 = if (schema.name) |n| std.mem.span(n) else null;
    const metadata: ?[]const u8 = if (schema.metadata) |m| blk: {
        const len = metadataLength(m) orelse return fail(.invalid_layout, "schema metadata is malformed", .{});
        break :blk m[0..len];
    } else null;
    if (schema.n_children < 0) return fail(.invalid_layout, "schema n_children is negative", .{});
    export_schema.appendNode(plan, std.heap.c_allocator, format_text, name, metadata, schema.flags, @intCast(schema.n_children), schema.dictionary != null) catch
        return fail(.out_of_memory, "out of memory copying a schema", .{});
    for (0..@intCast(schema.n_children)) |i| {
        const child = schema.children.?[i] orelse return fail(.invalid_layout, "schema child {d} is NULL", .{i});
        const s = writeNode(plan, child, depth + 1);
        if (s != .ok) return s;
    }
    if (schema.dictionary) |dictionary| {
        const s = writeNode(plan, dictionary, depth + 1);
        if (s != .ok) return s;
    }
    return .ok;
}

/// Appends `schema`'s export/schema.zig plan to `plan` (what `copy` builds
/// from; also how a stream keeps the schema of arrays made elsewhere).
pub fn writePlan(plan: *std.ArrayList(u8), schema: *const abi.ArrowSchema) Status {
    return writeNode(plan, schema, 0);
}

/// Builds an independent copy of `schema` into `out` (the caller's struct).
/// On error `out` is untouched.
pub fn copy(schema: *const abi.ArrowSchema, out: *abi.ArrowSchema) Status {
    var plan: std.ArrayList(u8) = .empty;
    defer plan.deinit(std.heap.c_allocator);
    const written = writeNode(&plan, schema, 0);
    if (written != .ok) return written;
    return export_schema.build(plan.items, out);
}

test "a copied schema keeps every field and outlives the original" {
    const allocator = std.testing.allocator;
    var plan: std.ArrayList(u8) = .empty;
    defer plan.deinit(allocator);
    const metadata = "\x01\x00\x00\x00\x01\x00\x00\x00k\x02\x00\x00\x00vv";
    try export_schema.appendNode(&plan, allocator, "+s", "", metadata, 0, 1, false);
    try export_schema.appendNode(&plan, allocator, "i", "codes", null, abi.flag_nullable | abi.flag_dictionary_ordered, 0, true);
    try export_schema.appendNode(&plan, allocator, "u", null, null, abi.flag_nullable, 0, false);
    var original: abi.ArrowSchema = .empty;
    try std.testing.expectEqual(Status.ok, export_schema.build(plan.items, &original));
    var copied: abi.ArrowSchema = .empty;
    try std.testing.expectEqual(Status.ok, copy(&original, &copied));
    original.release.?(&original);
    defer copied.release.?(&copied);
    try std.testing.expectEqualStrings("+s", std.mem.span(copied.format.?));
    try std.testing.expectEqualSlices(u8, metadata, copied.metadata.?[0..metadata.len]);
    const child = copied.children.?[0].?;
    try std.testing.expectEqualStrings("codes", std.mem.span(child.name.?));
    try std.testing.expectEqual(abi.flag_nullable | abi.flag_dictionary_ordered, child.flags);
    try std.testing.expectEqualStrings("u", std.mem.span(child.dictionary.?.format.?));
    try std.testing.expect(child.dictionary.?.name == null);
}
