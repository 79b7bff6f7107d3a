//! Tests of re-exports and relays (reexport.zig): selections, the new
//! trees' ownership, and their releases.

const std = @import("std");
const abi = @import("../core/abi.zig");
const status = @import("../core/status.zig");
const counters = @import("../core/counters.zig");
const owner_mod = @import("owner.zig");
const Status = status.Status;
const Owner = owner_mod.Owner;
const import_reexport = @import("reexport.zig");
const Shape = import_reexport.Shape;
const request_words = import_reexport.request_words;
const Range = import_reexport.Range;
const Request = import_reexport.Request;
const Window = import_reexport.Window;
const countUnset = import_reexport.countUnset;
const select = import_reexport.select;
const metadataLength = import_reexport.metadataLength;
const reexportDevice = import_reexport.reexportDevice;
const reexportArray = import_reexport.reexportArray;
const relayDevice = import_reexport.relayDevice;
const testing = std.testing;

/// A producer of struct<a: int32 (2 nulls), b: dictionary<int8, utf8>>,
/// 5 rows, in static memory, counting its root releases.
const TestProducer = struct {
    var releases = std.atomic.Value(u32).init(0);
    var schema_releases = std.atomic.Value(u32).init(0);

    var a_validity = [_]u8{0b10110};
    var a_values = [_]i32{ 1, 2, 3, 4, 5 };
    var a_buffers = [_]?*const anyopaque{ &a_validity, &a_values };
    var b_indices = [_]i8{ 0, 1, 0, 2, 1 };
    var b_buffers = [_]?*const anyopaque{ null, &b_indices };
    var dict_offsets = [_]i32{ 0, 3, 6, 10 };
    var dict_data = "redgrnblue".*;
    var dict_buffers = [_]?*const anyopaque{ null, &dict_offsets, &dict_data };
    var root_buffers = [_]?*const anyopaque{null};

    const Tree = struct {
        schema: abi.ArrowSchema,
        schema_a: abi.ArrowSchema,
        schema_b: abi.ArrowSchema,
        schema_dict: abi.ArrowSchema,
        schema_children: [2]?*abi.ArrowSchema,
        array: abi.ArrowDeviceArray,
        array_a: abi.ArrowArray,
        array_b: abi.ArrowArray,
        array_dict: abi.ArrowArray,
        array_children: [2]?*abi.ArrowArray,
    };

    fn noop(array: *abi.ArrowArray) callconv(.c) void {
        array.release = null;
    }
    fn noopSchema(schema: *abi.ArrowSchema) callconv(.c) void {
        schema.release = null;
    }
    fn releaseRoot(array: *abi.ArrowArray) callconv(.c) void {
        for (array.children.?[0..2]) |child| if (child.?.release) |r| r(child.?);
        _ = releases.fetchAdd(1, .acq_rel);
        array.release = null;
    }
    fn releaseRootSchema(schema: *abi.ArrowSchema) callconv(.c) void {
        _ = schema_releases.fetchAdd(1, .acq_rel);
        schema.release = null;
    }

    fn make(tree: *Tree, device_type: abi.DeviceType) void {
        tree.schema_dict = .{ .format = "u", .name = null, .metadata = null, .flags = abi.flag_nullable, .n_children = 0, .children = null, .dictionary = null, .release = noopSchema, .private_data = null };
        tree.schema_a = .{ .format = "i", .name = "a", .metadata = "\x01\x00\x00\x00\x01\x00\x00\x00k\x02\x00\x00\x00vv", .flags = abi.flag_nullable, .n_children = 0, .children = null, .dictionary = null, .release = noopSchema, .private_data = null };
        tree.schema_b = .{ .format = "c", .name = "b", .metadata = null, .flags = 0, .n_children = 0, .children = null, .dictionary = &tree.schema_dict, .release = noopSchema, .private_data = null };
        tree.schema_children = .{ &tree.schema_a, &tree.schema_b };
        tree.schema = .{ .format = "+s", .name = "", .metadata = null, .flags = 0, .n_children = 2, .children = &tree.schema_children, .dictionary = null, .release = releaseRootSchema, .private_data = null };
        tree.array_dict = .{ .length = 3, .null_count = 0, .offset = 0, .n_buffers = 3, .n_children = 0, .buffers = &dict_buffers, .children = null, .dictionary = null, .release = noop, .private_data = null };
        tree.array_a = .{ .length = 5, .null_count = 2, .offset = 0, .n_buffers = 2, .n_children = 0, .buffers = &a_buffers, .children = null, .dictionary = null, .release = noop, .private_data = null };
        tree.array_b = .{ .length = 5, .null_count = 0, .offset = 0, .n_buffers = 2, .n_children = 0, .buffers = &b_buffers, .children = null, .dictionary = &tree.array_dict, .release = noop, .private_data = null };
        tree.array_children = .{ &tree.array_a, &tree.array_b };
        tree.array = .empty;
        tree.array.array = .{ .length = 5, .null_count = 0, .offset = 0, .n_buffers = 1, .n_children = 2, .buffers = &root_buffers, .children = &tree.array_children, .dictionary = null, .release = releaseRoot, .private_data = null };
        if (device_type != abi.device_cpu) {
            tree.array.device_type = device_type;
            tree.array.device_id = 3;
        }
    }

    fn importOwner(tree: *Tree, device_type: abi.DeviceType) !*Owner {
        releases.store(0, .release);
        schema_releases.store(0, .release);
        make(tree, device_type);
        var owner: ?*Owner = null;
        try testing.expectEqual(Status.ok, owner_mod.import(&tree.schema, &tree.array, .full, &owner));
        return owner.?;
    }
};

fn requestWords(flags: u8, node: f64, base: [2]f64, child: f64, slice: [2]f64, shape: Shape) [request_words]f64 {
    return .{ @floatFromInt(flags), node, base[0], base[1], child, slice[0], slice[1], @floatFromInt(@intFromEnum(shape)) };
}

test "re-exports of one owner release the producer once, after the last, in any order" {
    var tree: TestProducer.Tree = undefined;
    const owner = try TestProducer.importOwner(&tree, abi.device_cpu);
    const live_before = counters.get(.live_reexports);
    var schemas: [3]abi.ArrowSchema = undefined;
    var arrays: [3]abi.ArrowDeviceArray = undefined;
    for (&schemas, &arrays) |*s, *a| try testing.expectEqual(Status.ok, reexportDevice(owner, .{}, s, a));
    try testing.expectEqual(live_before + 3, counters.get(.live_reexports));
    owner.release(); // the import's reference goes first
    arrays[1].array.release.?(&arrays[1].array);
    arrays[0].array.release.?(&arrays[0].array);
    try testing.expectEqual(@as(u32, 0), TestProducer.releases.load(.acquire));
    // Schemas are copies: releasing them never touches the owner.
    for (&schemas) |*s| s.release.?(s);
    try testing.expectEqual(@as(u32, 0), TestProducer.releases.load(.acquire));
    arrays[2].array.release.?(&arrays[2].array);
    try testing.expectEqual(@as(u32, 1), TestProducer.releases.load(.acquire));
    try testing.expectEqual(@as(u32, 1), TestProducer.schema_releases.load(.acquire));
    try testing.expectEqual(live_before, counters.get(.live_reexports));
}

test "a re-export points at the producer's buffers from fresh structs, dictionaries included" {
    var tree: TestProducer.Tree = undefined;
    const owner = try TestProducer.importOwner(&tree, abi.device_cpu);
    var schema: abi.ArrowSchema = undefined;
    var array: abi.ArrowDeviceArray = undefined;
    try testing.expectEqual(Status.ok, reexportDevice(owner, .{ .child = 1 }, &schema, &array));
    owner.release();
    try testing.expectEqualStrings("c", std.mem.span(schema.format.?));
    try testing.expectEqualStrings("b", std.mem.span(schema.name.?));
    try testing.expectEqualStrings("u", std.mem.span(schema.dictionary.?.format.?));
    try testing.expect(schema.format.? != tree.schema_b.format.?); // copied
    const dictionary = array.array.dictionary.?;
    try testing.expect(dictionary != &tree.array_dict);
    try testing.expect(dictionary.buffers.?[2] == @as(?*const anyopaque, &TestProducer.dict_data));
    try testing.expect(array.array.buffers.?[1] == @as(?*const anyopaque, &TestProducer.b_indices));
    // Move the dictionary out and release the rest: the owner must stay.
    var moved = dictionary.*;
    dictionary.release = null;
    array.array.release.?(&array.array);
    schema.release.?(&schema);
    try testing.expectEqual(@as(u32, 0), TestProducer.releases.load(.acquire));
    moved.release.?(&moved);
    try testing.expectEqual(@as(u32, 1), TestProducer.releases.load(.acquire));
}

test "child, slice, dictionary and shapes select the right rows" {
    var tree: TestProducer.Tree = undefined;
    const owner = try TestProducer.importOwner(&tree, abi.device_cpu);
    defer owner.release();
    var w: Window = undefined;
    // Child a, rows 1..4: slot 3 is null.
    try testing.expectEqual(Status.ok, select(owner, .{ .child = 0, .slice = .{ .offset = 1, .length = 3 } }, &w));
    try testing.expectEqual(Window{ .node = 1, .offset = 1, .length = 3, .null_count = 1 }, w);
    // A sliced struct, then its child: the struct's offset carries over.
    try testing.expectEqual(Status.ok, select(owner, .{ .slice = .{ .offset = 2, .length = 2 } }, &w));
    try testing.expectEqual(Window{ .node = 0, .offset = 2, .length = 2, .null_count = 0 }, w);
    try testing.expectEqual(Status.ok, select(owner, .{ .node = 0, .base = .{ .offset = 2, .length = 2 }, .child = 0 }, &w));
    try testing.expectEqual(Window{ .node = 1, .offset = 2, .length = 2, .null_count = 1 }, w);
    // The dictionary of child b is the whole dictionary.
    try testing.expectEqual(Status.ok, select(owner, .{ .child = 1, .dictionary = true }, &w));
    try testing.expectEqual(@as(i64, 3), w.length);

    // Column -> table -> column.
    var schema: abi.ArrowSchema = undefined;
    var array: abi.ArrowDeviceArray = undefined;
    try testing.expectEqual(Status.ok, reexportDevice(owner, .{ .child = 0, .slice = .{ .offset = 1, .length = 4 }, .shape = .table }, &schema, &array));
    try testing.expectEqualStrings("+s", std.mem.span(schema.format.?));
    try testing.expectEqual(@as(i64, 1), schema.n_children);
    try testing.expectEqualStrings("a", std.mem.span(schema.children.?[0].?.name.?));
    try testing.expectEqual(@as(i64, 4), array.array.length);
    try testing.expectEqual(@as(i64, 0), array.array.null_count);
    const column = array.array.children.?[0].?;
    try testing.expectEqual(@as(i64, 1), column.offset);
    try testing.expectEqual(@as(i64, 4), column.length);
    try testing.expectEqual(@as(i64, 1), column.null_count);
    // Import the one-column table and hand it back as a column.
    var table_owner: ?*Owner = null;
    try testing.expectEqual(Status.ok, owner_mod.import(&schema, &array, .full, &table_owner));
    var column_schema: abi.ArrowSchema = undefined;
    var column_array: abi.ArrowDeviceArray = undefined;
    try testing.expectEqual(Status.ok, reexportDevice(table_owner.?, .{ .shape = .column }, &column_schema, &column_array));
    table_owner.?.release();
    try testing.expectEqualStrings("i", std.mem.span(column_schema.format.?));
    try testing.expectEqualStrings("a", std.mem.span(column_schema.name.?));
    try testing.expectEqualStrings("k", column_schema.metadata.?[8..9]);
    try testing.expectEqual(@as(i64, 1), column_array.array.offset);
    try testing.expectEqual(@as(i64, 4), column_array.array.length);
    try testing.expect(column_array.array.buffers.?[1] == @as(?*const anyopaque, &TestProducer.a_values));
    column_array.array.release.?(&column_array.array);
    column_schema.release.?(&column_schema);
}

test "bad requests get typed errors and retain nothing" {
    var tree: TestProducer.Tree = undefined;
    const owner = try TestProducer.importOwner(&tree, abi.device_cpu);
    const refs = owner.refs.load(.acquire);
    const schemas = counters.get(.live_schema_exports);
    var schema: abi.ArrowSchema = .empty;
    var array: abi.ArrowDeviceArray = .empty;
    try testing.expectEqual(Status.out_of_range, reexportDevice(owner, .{ .child = 2 }, &schema, &array));
    try testing.expect(std.mem.indexOf(u8, std.mem.span(status.lastMessage()), "child 2 is out of the 2 children") != null);
    try testing.expectEqual(Status.out_of_range, reexportDevice(owner, .{ .child = -1 }, &schema, &array));
    try testing.expectEqual(Status.out_of_range, reexportDevice(owner, .{ .slice = .{ .offset = 3, .length = 3 } }, &schema, &array));
    try testing.expect(std.mem.indexOf(u8, std.mem.span(status.lastMessage()), "out of the 5 rows") != null);
    try testing.expectEqual(Status.out_of_range, reexportDevice(owner, .{ .slice = .{ .offset = -1, .length = 1 } }, &schema, &array));
    try testing.expectEqual(Status.out_of_range, reexportDevice(owner, .{ .node = 9 }, &schema, &array));
    try testing.expectEqual(Status.out_of_range, reexportDevice(owner, .{ .node = 1, .base = .{ .offset = 4, .length = 2 } }, &schema, &array));
    try testing.expectEqual(Status.invalid_argument, reexportDevice(owner, .{ .dictionary = true }, &schema, &array));
    try testing.expectEqual(Status.invalid_argument, reexportDevice(owner, .{ .shape = .column }, &schema, &array));
    var request: Request = undefined;
    try testing.expectEqual(Status.invalid_argument, Request.fromWords(&requestWords(2, 0, .{ 0, 0 }, 0.5, .{ 0, 0 }, .as_is), &request));
    try testing.expectEqual(Status.invalid_argument, Request.fromWords(&[_]f64{ 0, 0 }, &request));
    try testing.expectEqual(Status.ok, Request.fromWords(&requestWords(2 | 8, 0, .{ 0, 0 }, 1, .{ 1, 2 }, .table), &request));
    try testing.expectEqual(@as(?i64, 1), request.child);
    try testing.expectEqual(Range{ .offset = 1, .length = 2 }, request.slice.?);
    try testing.expectEqual(Shape.table, request.shape);
    try testing.expect(schema.release == null and array.array.release == null);
    try testing.expectEqual(refs, owner.refs.load(.acquire));
    try testing.expectEqual(schemas, counters.get(.live_schema_exports));
    owner.release();
    try testing.expectEqual(@as(u32, 1), TestProducer.releases.load(.acquire));
}

test "device arrays keep device, id and sync event; reserved is zeroed; never read" {
    var tree: TestProducer.Tree = undefined;
    // CUDA: the host must not read these buffers, and nothing here does
    // (validation at `full` skips every read for non-host memory).
    const owner = try TestProducer.importOwner(&tree, abi.device_cuda);
    var event: u64 = 0;
    owner.array.sync_event = &event;
    var schema: abi.ArrowSchema = undefined;
    var array: abi.ArrowDeviceArray = undefined;
    @memset(std.mem.asBytes(&array), 0xAB);
    try testing.expectEqual(Status.ok, reexportDevice(owner, .{ .child = 0, .slice = .{ .offset = 1, .length = 2 } }, &schema, &array));
    try testing.expectEqual(abi.device_cuda, array.device_type);
    try testing.expectEqual(@as(i64, 3), array.device_id);
    try testing.expect(array.sync_event == @as(?*anyopaque, &event));
    try testing.expectEqual([3]i64{ 0, 0, 0 }, array.reserved);
    try testing.expectEqual(@as(i64, -1), array.array.null_count); // unknown: bitmap unreadable
    var plain: abi.ArrowArray = .empty;
    try testing.expectEqual(Status.unsupported, reexportArray(owner, .{}, &schema, &plain));
    owner.release();
    array.array.release.?(&array.array);
    schema.release.?(&schema);
    try testing.expectEqual(@as(u32, 1), TestProducer.releases.load(.acquire));
}

test "re-exports released concurrently from many threads release the producer once" {
    const threads = 8;
    const Worker = struct {
        fn run(schema: *abi.ArrowSchema, array: *abi.ArrowDeviceArray) void {
            array.array.release.?(&array.array);
            schema.release.?(schema);
        }
    };
    for (0..200) |cycle| {
        var tree: TestProducer.Tree = undefined;
        const owner = try TestProducer.importOwner(&tree, abi.device_cpu);
        var schemas: [threads]abi.ArrowSchema = undefined;
        var arrays: [threads]abi.ArrowDeviceArray = undefined;
        for (&schemas, &arrays, 0..) |*s, *a, i| {
            const request: Request = if (i % 2 == 0) .{} else .{ .child = @intCast(i % 4 / 2), .slice = .{ .offset = 1, .length = 3 } };
            try testing.expectEqual(Status.ok, reexportDevice(owner, request, s, a));
        }
        var handles: [threads]std.Thread = undefined;
        for (&handles, &schemas, &arrays) |*h, *s, *a| h.* = try std.Thread.spawn(.{}, Worker.run, .{ s, a });
        if (cycle % 2 == 0) owner.release();
        for (handles) |h| h.join();
        if (cycle % 2 == 1) {
            try testing.expectEqual(@as(u32, 0), TestProducer.releases.load(.acquire));
            owner.release();
        }
        try testing.expectEqual(@as(u32, 1), TestProducer.releases.load(.acquire));
    }
}

test "a relay moves the data through; a failed relay releases the input once" {
    var tree: TestProducer.Tree = undefined;
    TestProducer.releases.store(0, .release);
    TestProducer.make(&tree, abi.device_cpu);
    var schema: abi.ArrowSchema = undefined;
    var array: abi.ArrowDeviceArray = undefined;
    try testing.expectEqual(Status.ok, relayDevice(&tree.schema, &tree.array, .default, &schema, &array));
    try testing.expect(tree.array.array.release == null and tree.schema.release == null); // moved
    try testing.expect(array.array.children.?[0].?.buffers.?[1] == @as(?*const anyopaque, &TestProducer.a_values));
    try testing.expectEqual(@as(u32, 0), TestProducer.releases.load(.acquire));
    array.array.release.?(&array.array);
    schema.release.?(&schema);
    try testing.expectEqual(@as(u32, 1), TestProducer.releases.load(.acquire));

    TestProducer.make(&tree, abi.device_cpu);
    tree.array_a.null_count = 9; // more nulls than rows
    try testing.expectEqual(Status.invalid_layout, relayDevice(&tree.schema, &tree.array, .default, &schema, &array));
    try testing.expectEqual(@as(u32, 2), TestProducer.releases.load(.acquire));
}

test "null counts of bit ranges match a bit-by-bit count" {
    var prng = std.Random.DefaultPrng.init(0x5eed);
    var bits: [64]u8 = undefined;
    prng.random().bytes(&bits);
    for (0..200) |_| {
        const a = prng.random().uintLessThan(usize, 512);
        const b = prng.random().uintLessThan(usize, 512);
        const start = @min(a, b);
        const end = @max(a, b);
        var expected: i64 = 0;
        for (start..end) |i| {
            if (bits[i / 8] & (@as(u8, 1) << @intCast(i % 8)) == 0) expected += 1;
        }
        try testing.expectEqual(expected, countUnset(&bits, start, end));
    }
}

test "metadata length follows the spec's encoding and rejects negative lengths" {
    try testing.expectEqual(@as(?usize, 4 + 4 + 1 + 4 + 2), metadataLength("\x01\x00\x00\x00\x01\x00\x00\x00k\x02\x00\x00\x00vv"));
    try testing.expectEqual(@as(?usize, 4), metadataLength("\x00\x00\x00\x00"));
    try testing.expectEqual(@as(?usize, null), metadataLength("\x01\x00\x00\x00\xff\xff\xff\xff"));
}
