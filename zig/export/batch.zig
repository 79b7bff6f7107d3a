//! One-call export of a batch: a new slot (ArrowSchema + ArrowArray or
//! ArrowDeviceArray at a stable address) filled from a schema template
//! (export/schema.zig) and an array plan (export/array.zig), and one-call
//! release of that slot. This is the hot path of `exportArray`: one FFI
//! call to build, one to release, nothing else.
//!
//! Ownership: the slot belongs to the JS handle that `create` returned it
//! to (native/exported.ts), until `destroy`. The trees in it follow the C
//! Data Interface: a consumer that moves a struct out owns that tree and
//! releases it from any thread; `destroy` releases only what is still in
//! the slot (release != NULL) and frees the slot. The array tree's last
//! release hands its keepalive id to the JS side: through the queue
//! (keepalive.zig) when it runs anywhere else, or as `destroy`'s return
//! value when it runs inside `destroy` (no queue, lock or wake then).
//!
//! Slots are pooled per thread (`pool`): `destroy` puts a slot back only
//! after releasing what was still in it, i.e. after the handle's
//! `release()`, when its addresses are no longer valid to anyone (a
//! consumer that moved a struct out holds its own copy, not the slot).

const std = @import("std");
const abi = @import("../core/abi.zig");
const status = @import("../core/status.zig");
const keepalive = @import("keepalive.zig");
const export_array = @import("array.zig");
const export_schema = @import("schema.zig");
const tree_block = @import("tree_block.zig");
const Status = status.Status;
const fail = status.fail;

/// What the slot holds besides the schema.
pub const Kind = enum(i32) { schema = 0, array = 1, device_array = 2 };

/// The slot: the same layout native/exported.ts reads (schema at 0, the
/// array struct right after it).
pub const Slot = extern struct {
    schema: abi.ArrowSchema,
    array: abi.ArrowDeviceArray,
};

comptime {
    std.debug.assert(@offsetOf(Slot, "array") == @sizeOf(abi.ArrowSchema));
}

/// Released slots kept for reuse, per thread (no lock; `create` and
/// `destroy` run on the JS thread in practice, and a slot freed on one
/// thread may be reused or freed on another: it is plain malloc memory).
const Pool = struct {
    slots: [pool_capacity]*Slot = undefined,
    len: usize = 0,
};
const pool_capacity = 32;
threadlocal var pool: Pool = .{};

fn allocSlot() ?*Slot {
    if (pool.len > 0) {
        pool.len -= 1;
        return pool.slots[pool.len];
    }
    return @ptrCast(@alignCast(std.c.malloc(@sizeOf(Slot)) orelse return null));
}

fn freeSlot(slot: *Slot) void {
    if (pool.len < pool_capacity) {
        pool.slots[pool.len] = slot;
        pool.len += 1;
        return;
    }
    std.c.free(slot);
}

/// Where the array tree of a new slot comes from: a plan (checked while
/// it is built) or the image of a plan built before (export/array.zig
/// `Image`: a copy, no plan read).
pub const ArraySource = union(enum) {
    plan: []const f64,
    image: *export_array.Image,
};

/// A new slot with the schema built from `template` and, unless `kind` is
/// schema, the array tree from `plan` (a CPU ArrowDeviceArray: device_id
/// -1, no sync event). Null on failure, with the status set and nothing
/// allocated or built (the caller then forgets `keepalive_id`).
pub fn create(template: *export_schema.Template, plan: []const f64, keepalive_id: u64, kind: Kind) ?*Slot {
    return createFrom(template, .{ .plan = plan }, keepalive_id, kind);
}

/// `create` with the array tree from `source`.
pub fn createFrom(template: *export_schema.Template, source: ArraySource, keepalive_id: u64, kind: Kind) ?*Slot {
    const slot = allocSlot() orelse {
        _ = fail(.out_of_memory, "out of memory allocating the slot of an exported array", .{});
        return null;
    };
    // .empty is a CPU ArrowDeviceArray already (device_id -1, no event,
    // reserved zeroed): only its array is filled.
    slot.* = .{ .schema = .empty, .array = .empty };
    const options: export_array.Options = .{ .keepalive_id = keepalive_id };
    const built = switch (source) {
        .plan => |plan| fromPlan(slot, template, plan, options, kind),
        .image => |image| fromImage(slot, template, image, options, kind),
    };
    if (built != .ok) {
        freeSlot(slot);
        return null;
    }
    return slot;
}

/// Fills `slot`: the schema from `template`, the array tree from `plan`
/// (checked while built). On failure nothing is left built.
fn fromPlan(slot: *Slot, template: *export_schema.Template, plan: []const f64, options: export_array.Options, kind: Kind) Status {
    const schema = template.instantiate(&slot.schema);
    if (schema != .ok or kind == .schema) return schema;
    const built = export_array.build(plan, options, &slot.array.array);
    if (built != .ok) slot.schema.release.?(&slot.schema);
    return built;
}

/// Fills `slot`: both trees copied from their images into one allocation
/// (tree_block.Pair), nothing to check.
fn fromImage(slot: *Slot, template: *export_schema.Template, image: *export_array.Image, options: export_array.Options, kind: Kind) Status {
    if (kind == .schema) return template.instantiate(&slot.schema);
    const blocks = tree_block.Pair.create(template.size(), image.size()) orelse return fail(.out_of_memory, "out of memory allocating an exported array", .{});
    template.fill(blocks.first, &slot.schema);
    image.fill(blocks.second, options, &slot.array.array);
    return .ok;
}

/// Releases what no consumer moved out of `slot` and frees it. Returns the
/// keepalive id the array tree finished with during this call (its last
/// struct was released here), or 0 (moved out, still alive elsewhere, or
/// no array).
pub fn destroy(slot: *Slot, kind: Kind) u64 {
    var finished: u64 = 0;
    keepalive.captured(&finished, releaseContents, .{ slot, kind });
    freeSlot(slot);
    return finished;
}

fn releaseContents(slot: *Slot, kind: Kind) void {
    if (slot.schema.release) |release| release(&slot.schema);
    if (kind == .schema) return;
    if (slot.array.array.release) |release| release(&slot.array.array);
}

// ---------------------------------------------------------------------------

const testing = std.testing;
const counters = @import("../core/counters.zig");

fn testTemplate() !*export_schema.Template {
    var leftovers: [64]f64 = undefined; // ids other tests queued
    while (keepalive.take(&leftovers) > 0) {}
    var plan: std.ArrayList(u8) = .empty;
    defer plan.deinit(testing.allocator);
    try export_schema.appendNode(&plan, testing.allocator, "+s", "", null, 0, 1, false);
    try export_schema.appendNode(&plan, testing.allocator, "i", "a", null, abi.flag_nullable, 0, false);
    var template: ?*export_schema.Template = null;
    try testing.expectEqual(Status.ok, export_schema.Template.create(plan.items, &template));
    return template.?;
}

test "create fills both trees; destroy releases them and hands back the id" {
    const template = try testTemplate();
    defer template.destroy();
    var data: [2]i32 = .{ 1, 2 };
    const plan = [_]f64{ 2, 0, 0, 1, 1, 0, 0, 2, 0, 0, 2, 0, 0, 0, @floatFromInt(@intFromPtr(&data)) };
    const schemas = counters.get(.live_schema_exports);
    const arrays = counters.get(.live_array_exports);
    const slot = create(template, &plan, 901, .device_array).?;
    try testing.expectEqual(@as(i64, -1), slot.array.device_id);
    try testing.expectEqual(@intFromPtr(&data), @intFromPtr(slot.array.array.children.?[0].?.buffers.?[1].?));
    try testing.expectEqual(schemas + 1, counters.get(.live_schema_exports));
    try testing.expectEqual(901, destroy(slot, .device_array));
    try testing.expectEqual(schemas, counters.get(.live_schema_exports));
    try testing.expectEqual(arrays, counters.get(.live_array_exports));
    try testing.expectEqual(@as(u32, 0), keepalive.queuedAddress().*);
}

test "a tree moved out is released by its consumer, and its id is queued then" {
    const template = try testTemplate();
    defer template.destroy();
    const plan = [_]f64{ 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0 };
    const slot = create(template, &plan, 902, .array).?;
    var moved = slot.array.array;
    slot.array.array.release = null;
    try testing.expectEqual(0, destroy(slot, .array));
    try testing.expectEqual(@as(u32, 0), keepalive.queuedAddress().*);
    moved.release.?(&moved);
    var ids: [4]f64 = undefined;
    try testing.expectEqual(@as(usize, 1), keepalive.take(&ids));
    try testing.expectEqual(@as(f64, 902), ids[0]);
}

test "a released slot is reused only after destroy, and comes back empty of the old trees" {
    const template = try testTemplate();
    defer template.destroy();
    const plan = [_]f64{ 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0 };
    const a = create(template, &plan, 904, .array).?;
    const b = create(template, &plan, 905, .array).?;
    try testing.expect(a != b); // both live: never the same memory
    try testing.expectEqual(904, destroy(a, .array));
    const c = create(template, &plan, 906, .array).?;
    try testing.expectEqual(a, c); // the pool handed the released slot back
    try testing.expect(c.array.array.private_data != null);
    try testing.expectEqual(906, destroy(c, .array));
    try testing.expectEqual(905, destroy(b, .array));
}

test "a bad plan builds nothing and releases the schema it built" {
    const template = try testTemplate();
    defer template.destroy();
    const schemas = counters.get(.live_schema_exports);
    try testing.expect(create(template, &[_]f64{ 1, 0, 0 }, 903, .array) == null);
    try testing.expectEqual(Status.invalid_argument, status.lastStatus());
    try testing.expectEqual(schemas, counters.get(.live_schema_exports));
    var ids: [4]f64 = undefined;
    try testing.expectEqual(@as(usize, 0), keepalive.take(&ids));
}

/// The array image of a struct<a: int32> of two rows over `data`.
fn testImage(data: *[2]i32) !*export_array.Image {
    const plan = [_]f64{ 2, 0, 0, 1, 1, 0, 0, 2, 0, 0, 2, 0, 0, 0, @floatFromInt(@intFromPtr(data)) };
    var image: ?*export_array.Image = null;
    try testing.expectEqual(Status.ok, export_array.Image.create(&plan, &image));
    return image.?;
}

/// A schema template and an array image over `data`, with the live export
/// counts from before any slot is made.
const ImageFixture = struct {
    template: *export_schema.Template,
    image: *export_array.Image,
    schemas: i64,
    arrays: i64,

    fn init(data: *[2]i32) !ImageFixture {
        const template = try testTemplate();
        errdefer template.destroy();
        return .{ .template = template, .image = try testImage(data), .schemas = counters.get(.live_schema_exports), .arrays = counters.get(.live_array_exports) };
    }

    fn deinit(self: ImageFixture) void {
        self.image.destroy();
        self.template.destroy();
    }
};

test "a slot from an array image holds the same trees as one from its plan" {
    var data: [2]i32 = .{ 1, 2 };
    const fixture = try ImageFixture.init(&data);
    defer fixture.deinit();
    for ([_]Kind{ .array, .device_array }, 0..) |kind, i| {
        const id: u64 = 910 + i;
        const slot = createFrom(fixture.template, .{ .image = fixture.image }, id, kind).?;
        try testing.expectEqual(@as(i64, -1), slot.array.device_id);
        try testing.expectEqual(abi.device_cpu, slot.array.device_type);
        try testing.expectEqual(@intFromPtr(&data), @intFromPtr(slot.array.array.children.?[0].?.buffers.?[1].?));
        try testing.expectEqualStrings("a", std.mem.span(slot.schema.children.?[0].?.name.?));
        try testing.expectEqual(fixture.schemas + 1, counters.get(.live_schema_exports));
        try testing.expectEqual(fixture.arrays + 1, counters.get(.live_array_exports));
        try testing.expectEqual(id, destroy(slot, kind));
    }
    try testing.expectEqual(fixture.schemas, counters.get(.live_schema_exports));
    try testing.expectEqual(fixture.arrays, counters.get(.live_array_exports));
}

test "the two trees of a slot from an image share one allocation, yet each is released on its own, in either order, its id queued once" {
    var data: [2]i32 = .{ 1, 2 };
    const fixture = try ImageFixture.init(&data);
    defer fixture.deinit();
    var ids: [4]f64 = undefined;
    for ([_]bool{ false, true }) |array_first| {
        const id: u64 = if (array_first) 921 else 920;
        const slot = createFrom(fixture.template, .{ .image = fixture.image }, id, .device_array).?;
        const schema_block: *tree_block.Block = @ptrCast(@alignCast(slot.schema.private_data.?));
        const array_block: *tree_block.Block = @ptrCast(@alignCast(slot.array.array.private_data.?));
        try testing.expect(schema_block.pair != null and schema_block.pair == array_block.pair);
        // A consumer moves both trees out; the handle's release finds them gone.
        var schema = slot.schema;
        var array = slot.array.array;
        slot.schema.release = null;
        slot.array.array.release = null;
        try testing.expectEqual(0, destroy(slot, .device_array));
        // And moves a child out of each before releasing the roots.
        var schema_child = schema.children.?[0].?.*;
        schema.children.?[0].?.release = null;
        var array_child = array.children.?[0].?.*;
        array.children.?[0].?.release = null;
        if (array_first) {
            array.release.?(&array);
            array_child.release.?(&array_child);
            try testing.expectEqual(fixture.arrays, counters.get(.live_array_exports));
            try testing.expectEqual(@as(usize, 1), keepalive.take(&ids));
            try testing.expectEqual(@as(f64, @floatFromInt(id)), ids[0]);
            try testing.expectEqualStrings("a", std.mem.span(schema_child.name.?)); // the schema half is still there
            schema.release.?(&schema);
            schema_child.release.?(&schema_child);
        } else {
            schema.release.?(&schema);
            schema_child.release.?(&schema_child);
            try testing.expectEqual(fixture.schemas, counters.get(.live_schema_exports));
            try testing.expectEqual(@as(usize, 0), keepalive.take(&ids));
            try testing.expectEqual(@intFromPtr(&data), @intFromPtr(array_child.buffers.?[1].?)); // the array half is still there
            array_child.release.?(&array_child);
            array.release.?(&array);
            try testing.expectEqual(@as(usize, 1), keepalive.take(&ids));
            try testing.expectEqual(@as(f64, @floatFromInt(id)), ids[0]);
        }
        try testing.expectEqual(fixture.schemas, counters.get(.live_schema_exports));
        try testing.expectEqual(fixture.arrays, counters.get(.live_array_exports));
    }
}
