//! Deep copies of an ArrowSchema tree into one tree block (tree_block.zig),
//! released the same way as the schemas export_schema.zig builds.
//!
//! Why: an async stream delivers one schema (on_schema) for many batches,
//! but every imported batch needs its own ArrowSchema to move into its
//! owner (owner.zig), whose release runs independently of the others. So
//! the async consumer keeps the stream's schema and hands each batch a copy.
//!
//! Ownership: `source` stays the caller's and is only read. `out` receives
//! a new tree that owns copies of every string and metadata; each of its
//! structs holds one reference to the block, released exactly once, from
//! any thread. Counted as `live_schema_exports` until the block is freed.

const std = @import("std");
const abi = @import("abi.zig");
const status = @import("status.zig");
const counters = @import("counters.zig");
const tree_block = @import("tree_block.zig");
const validate = @import("validate.zig");
const export_schema = @import("export_schema.zig");
const metadata_copy = @import("metadata_copy.zig");
const Status = status.Status;
const fail = status.fail;

fn measure(schema: *const abi.ArrowSchema, sizer: *tree_block.Sizer, structs: *u32, depth: usize) Status {
    if (depth > validate.max_nesting_depth) return fail(.too_deep, "schema nests deeper than {d} levels", .{validate.max_nesting_depth});
    const format_text = schema.format orelse return fail(.invalid_format, "schema at depth {d} has a NULL format", .{depth});
    if (schema.n_children < 0) return fail(.invalid_layout, "schema \"{s}\" has n_children {d}", .{ format_text, schema.n_children });
    const n_children: usize = @intCast(schema.n_children);
    if (n_children > 0 and schema.children == null) return fail(.invalid_layout, "schema \"{s}\" has {d} children but a NULL children pointer", .{ format_text, n_children });
    if (depth > 0) sizer.add(abi.ArrowSchema, 1);
    sizer.add(?*abi.ArrowSchema, n_children);
    sizer.add(u8, std.mem.len(format_text) + 1);
    if (schema.name) |name| sizer.add(u8, std.mem.len(name) + 1);
    if (schema.metadata) |metadata| {
        const len = metadata_copy.byteLength(metadata) orelse return fail(.invalid_layout, "metadata of schema \"{s}\" is malformed", .{format_text});
        sizer.add(u8, len);
    }
    structs.* += 1;
    for (0..n_children) |i| {
        const child = schema.children.?[i] orelse return fail(.invalid_layout, "child {d} of schema \"{s}\" is NULL", .{ i, format_text });
        const s = measure(child, sizer, structs, depth + 1);
        if (s != .ok) return s;
    }
    if (schema.dictionary) |dictionary| {
        const s = measure(dictionary, sizer, structs, depth + 1);
        if (s != .ok) return s;
    }
    return .ok;
}

fn copyZ(carver: *tree_block.Carver, text: [*:0]const u8) [*:0]const u8 {
    const bytes = std.mem.span(text);
    const target = carver.take(u8, bytes.len + 1);
    @memcpy(target[0..bytes.len], bytes);
    target[bytes.len] = 0;
    return @ptrCast(target.ptr);
}

/// Same order of carving as `measure`'s sizing.
fn fill(source: *const abi.ArrowSchema, carver: *tree_block.Carver, block: *tree_block.Block, target: *abi.ArrowSchema) void {
    const n_children: usize = @intCast(source.n_children);
    const children = carver.take(?*abi.ArrowSchema, n_children);
    const format_copy = copyZ(carver, source.format.?);
    const name_copy: ?[*:0]const u8 = if (source.name) |name| copyZ(carver, name) else null;
    var copied_metadata: ?[*]const u8 = null;
    if (source.metadata) |metadata| {
        const len = metadata_copy.byteLength(metadata).?; // measured already
        const bytes = carver.take(u8, len);
        @memcpy(bytes, metadata[0..len]);
        copied_metadata = bytes.ptr;
    }
    target.* = .{
        .format = format_copy,
        .name = name_copy,
        .metadata = copied_metadata,
        .flags = source.flags,
        .n_children = source.n_children,
        .children = if (n_children == 0) null else children.ptr,
        .dictionary = null,
        .release = export_schema.releaseSchema,
        .private_data = block,
    };
    for (children, 0..) |*slot, i| {
        const child = &carver.take(abi.ArrowSchema, 1)[0];
        fill(source.children.?[i].?, carver, block, child);
        slot.* = child;
    }
    if (source.dictionary) |dictionary| {
        const copy_of_dictionary = &carver.take(abi.ArrowSchema, 1)[0];
        fill(dictionary, carver, block, copy_of_dictionary);
        target.dictionary = copy_of_dictionary;
    }
}

/// Copies `source` (not released) into `out`. On error `out` is untouched
/// and nothing is allocated.
pub fn copy(source: *const abi.ArrowSchema, out: *abi.ArrowSchema) Status {
    if (source.release == null) return fail(.released, "schema to copy is released (its release callback is NULL)", .{});
    var sizer: tree_block.Sizer = .{};
    var structs: u32 = 0;
    const measured = measure(source, &sizer, &structs, 0);
    if (measured != .ok) return measured;
    const block = tree_block.Block.create(structs, sizer.bytes) orelse return fail(.out_of_memory, "out of memory copying a schema ({d} bytes)", .{sizer.bytes});
    block.on_free = export_schema.finishSchema;
    counters.add(.live_schema_exports, 1);
    var carver = tree_block.Carver.init(block, sizer.bytes);
    fill(source, &carver, block, out);
    return .ok;
}

test "a copy is deep, independent of the source, and released once" {
    const allocator = std.testing.allocator;
    var plan: std.ArrayList(u8) = .empty;
    defer plan.deinit(allocator);
    try export_schema.appendNode(&plan, allocator, "+s", "", "\x01\x00\x00\x00\x01\x00\x00\x00k\x01\x00\x00\x00v", 0, 2, false);
    try export_schema.appendNode(&plan, allocator, "i", "a", null, abi.flag_nullable, 0, true);
    try export_schema.appendNode(&plan, allocator, "u", null, null, 0, 0, false);
    try export_schema.appendNode(&plan, allocator, "+l", "b", null, 0, 1, false);
    try export_schema.appendNode(&plan, allocator, "g", "item", null, 0, 0, false);
    var source: abi.ArrowSchema = .empty;
    try std.testing.expectEqual(Status.ok, export_schema.build(plan.items, &source));
    const before = counters.get(.live_schema_exports);
    var copied: abi.ArrowSchema = .empty;
    try std.testing.expectEqual(Status.ok, copy(&source, &copied));
    try std.testing.expectEqual(before + 1, counters.get(.live_schema_exports));
    source.release.?(&source); // the copy does not depend on the source
    try std.testing.expectEqualStrings("+s", std.mem.span(copied.format.?));
    try std.testing.expectEqual(@as(u8, 'v'), copied.metadata.?[13]);
    const a = copied.children.?[0].?;
    try std.testing.expectEqualStrings("a", std.mem.span(a.name.?));
    try std.testing.expectEqual(abi.flag_nullable, a.flags);
    try std.testing.expectEqualStrings("u", std.mem.span(a.dictionary.?.format.?));
    try std.testing.expectEqualStrings("item", std.mem.span(copied.children.?[1].?.children.?[0].?.name.?));
    copied.release.?(&copied);
    try std.testing.expect(copied.release == null);
    try std.testing.expectEqual(before - 1, counters.get(.live_schema_exports));
}

test "a released or malformed schema is refused without allocating" {
    var out: abi.ArrowSchema = .empty;
    const released: abi.ArrowSchema = .empty;
    try std.testing.expectEqual(Status.released, copy(&released, &out));
    var no_format: abi.ArrowSchema = .empty;
    no_format.release = export_schema.releaseSchema; // never called: copy fails first
    try std.testing.expectEqual(Status.invalid_format, copy(&no_format, &out));
    try std.testing.expect(out.release == null);
}
