//! A zero-length ArrowArray shaped like a schema: every node of length 0,
//! every buffer pointing at one static block of zeros (so that offsets
//! buffers hold their one required 0). Imported streams use it to describe
//! their schema where no batch exists (an empty stream read into a table).
//!
//! Ownership: the tree is built by export/array.zig in one block, freed by
//! its release; the zeros are static and never written.

const std = @import("std");
const abi = @import("../core/abi.zig");
const status = @import("../core/status.zig");
const format = @import("../core/format.zig");
const validate = @import("../validate/validate.zig");
const export_array = @import("array.zig");
const Status = status.Status;
const fail = status.fail;

/// Enough zeros for one 64-bit offset (the most any empty buffer needs).
const zeros: [16]u8 align(16) = @splat(0);

fn noHook(context: ?*anyopaque) callconv(.c) void {
    _ = context;
}

fn planNode(schema: *const abi.ArrowSchema, plan: *std.ArrayList(f64), depth: usize) Status {
    if (depth > validate.max_nesting_depth) return fail(.too_deep, "schema nests deeper than {d} levels", .{validate.max_nesting_depth});
    const text = std.mem.span(schema.format orelse return fail(.invalid_format, "schema format is NULL", .{}));
    var why: []const u8 = "";
    const parsed = format.parse(text, &why) catch return fail(.invalid_format, "format \"{s}\" {s}", .{ text[0..@min(64, text.len)], why });
    const n_buffers = parsed.fixedBufferCount();
    if (schema.n_children < 0 or schema.n_children > export_array.max_children_per_node) return fail(.invalid_layout, "schema has {d} children", .{schema.n_children});
    const n_children: usize = @intCast(schema.n_children);
    const zero_address: f64 = @floatFromInt(@intFromPtr(&zeros));
    const header = [_]f64{ 0, 0, 0, @floatFromInt(n_buffers), @floatFromInt(n_children), @floatFromInt(@intFromBool(schema.dictionary != null)) };
    plan.appendSlice(std.heap.c_allocator, &header) catch return fail(.out_of_memory, "out of memory planning an empty batch", .{});
    plan.appendNTimes(std.heap.c_allocator, zero_address, n_buffers) catch return fail(.out_of_memory, "out of memory planning an empty batch", .{});
    for (0..n_children) |i| {
        const child = (schema.children orelse return fail(.invalid_layout, "schema has children but a NULL children pointer", .{}))[i] orelse
            return fail(.invalid_layout, "schema child {d} is NULL", .{i});
        const s = planNode(child, plan, depth + 1);
        if (s != .ok) return s;
    }
    if (schema.dictionary) |dictionary| {
        const s = planNode(dictionary, plan, depth + 1);
        if (s != .ok) return s;
    }
    return .ok;
}

/// Builds the zero-length array for `schema` into `out` (CPU, device_id
/// -1). On error `out` is untouched.
pub fn build(schema: *const abi.ArrowSchema, out: *abi.ArrowDeviceArray) Status {
    var plan: std.ArrayList(f64) = .empty;
    defer plan.deinit(std.heap.c_allocator);
    const planned = planNode(schema, &plan, 0);
    if (planned != .ok) return planned;
    return export_array.buildDevice(plan.items, .{ .on_free = noHook }, .{}, out);
}

test "an empty batch matches its schema and validates" {
    const allocator = std.testing.allocator;
    const export_schema = @import("schema.zig");
    var plan: std.ArrayList(u8) = .empty;
    defer plan.deinit(allocator);
    try export_schema.appendNode(&plan, allocator, "+s", "", null, 0, 3, false);
    try export_schema.appendNode(&plan, allocator, "u", "text", null, abi.flag_nullable, 0, false);
    try export_schema.appendNode(&plan, allocator, "+l", "list", null, abi.flag_nullable, 1, false);
    try export_schema.appendNode(&plan, allocator, "L", "item", null, abi.flag_nullable, 0, false);
    try export_schema.appendNode(&plan, allocator, "c", "dict", null, abi.flag_nullable, 0, true);
    try export_schema.appendNode(&plan, allocator, "vu", null, null, 0, 0, false);
    var schema: abi.ArrowSchema = .empty;
    try std.testing.expectEqual(Status.ok, export_schema.build(plan.items, &schema));
    defer schema.release.?(&schema);
    var array: abi.ArrowDeviceArray = .empty;
    try std.testing.expectEqual(Status.ok, build(&schema, &array));
    defer array.array.release.?(&array.array);
    try std.testing.expectEqual(@as(i64, 3), array.array.n_children);
    try std.testing.expectEqual(@as(i64, 3), array.array.children.?[0].?.n_buffers);
    try std.testing.expect(array.array.children.?[2].?.dictionary != null);
    try std.testing.expectEqual(Status.ok, validate.validate(&schema, &array.array, .full, true, null));
}
