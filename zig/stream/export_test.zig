//! Tests of JS-produced streams (export.zig): get_next answered on the JS
//! thread and from the queue, failures, arrays made elsewhere.

const std = @import("std");
const abi = @import("../core/abi.zig");
const counters = @import("../core/counters.zig");
const keepalive = @import("../export/keepalive.zig");
const export_schema = @import("../export/schema.zig");
const js_queue = @import("../core/js_queue.zig");
const sync = @import("../core/sync.zig");
const status = @import("../core/status.zig");
const Status = status.Status;
const stream_export = @import("export.zig");
const setSyncProducer = stream_export.setSyncProducer;
const Producer = stream_export.Producer;
const deliver = stream_export.deliver;
const deliverArray = stream_export.deliverArray;
const end = stream_export.end;
const failWith = stream_export.failWith;
const released = stream_export.released;
const create = stream_export.create;
const createFromSchema = stream_export.createFromSchema;
const testing = std.testing;

/// A stand-in for JS in these tests: answers requests from the queue.
const TestJs = struct {
    var int_values = [_]i32{ 1, 2, 3 };
    var batches_left: u32 = 0;
    var fail_message: ?[]const u8 = null;

    fn plan() [15]f64 {
        const address: f64 = @floatFromInt(@intFromPtr(&int_values));
        // struct<a: int32> of 3 rows.
        return .{ 3, 0, 0, 1, 1, 0, 0, 3, 0, 0, 2, 0, 0, 0, address };
    }

    fn answerOne(self: *Producer) void {
        if (fail_message) |message| {
            _ = failWith(self, 5, message);
        } else if (batches_left == 0) {
            _ = end(self);
        } else {
            batches_left -= 1;
            const words = plan();
            std.debug.assert(deliver(self, &words, 0, -1) == .ok);
        }
    }

    fn produceSync(js_key: f64, self: *Producer) callconv(.c) void {
        _ = js_key;
        answerOne(self);
    }

    /// Answers every queued request until `stop` is set.
    fn serve(stop: *std.atomic.Value(bool)) void {
        var out: [js_queue.entry_words * 8]f64 = undefined;
        while (!stop.load(.acquire)) {
            const n = js_queue.of(0).take(&out);
            for (0..n) |i| {
                const address: usize = @intFromFloat(out[i * js_queue.entry_words + 2]);
                answerOne(@ptrFromInt(address));
            }
            if (n == 0) std.Thread.yield() catch {};
        }
    }
};

fn schemaPlan(list: *std.ArrayList(u8)) !void {
    try export_schema.appendNode(list, testing.allocator, "+s", "", null, 0, 1, false);
    try export_schema.appendNode(list, testing.allocator, "i", "a", null, abi.flag_nullable, 0, false);
}

fn drainKeepalive() void {
    var ids: [16]f64 = undefined;
    while (keepalive.take(&ids) > 0) {}
}

test "on the JS thread get_next is answered synchronously; the end repeats" {
    var plan: std.ArrayList(u8) = .empty;
    defer plan.deinit(testing.allocator);
    try schemaPlan(&plan);
    setSyncProducer(TestJs.produceSync);
    TestJs.batches_left = 2;
    TestJs.fail_message = null;
    const before = counters.get(.live_stream_exports);
    var stream: abi.ArrowArrayStream = .empty;
    try testing.expectEqual(Status.ok, create(.array, abi.device_cpu, plan.items, false, 99, &stream));
    try testing.expectEqual(before + 1, counters.get(.live_stream_exports));

    var schema: abi.ArrowSchema = .empty;
    try testing.expectEqual(@as(c_int, 0), stream.get_schema.?(&stream, &schema));
    try testing.expectEqualStrings("+s", std.mem.span(schema.format.?));
    schema.release.?(&schema);

    var arrays: [2]abi.ArrowArray = undefined;
    for (&arrays) |*array| {
        try testing.expectEqual(@as(c_int, 0), stream.get_next.?(&stream, array));
        try testing.expect(array.release != null);
        try testing.expectEqual(@intFromPtr(&TestJs.int_values), @intFromPtr(array.children.?[0].?.buffers.?[1].?));
    }
    for (0..2) |_| {
        var end_array: abi.ArrowArray = undefined;
        try testing.expectEqual(@as(c_int, 0), stream.get_next.?(&stream, &end_array));
        try testing.expect(end_array.release == null);
    }
    stream.release.?(&stream);
    try testing.expect(stream.release == null);
    try testing.expectEqual(before, counters.get(.live_stream_exports));
    // Arrays outlive the stream.
    for (&arrays) |*array| array.release.?(array);
    // The release queued the stream's js_key for JS.
    var ids: [64]f64 = undefined;
    const n = keepalive.take(&ids);
    try testing.expect(std.mem.indexOfScalar(f64, ids[0..n], 99) != null);
}

test "a failure is final and its message stays until the next call" {
    var plan: std.ArrayList(u8) = .empty;
    defer plan.deinit(testing.allocator);
    try schemaPlan(&plan);
    setSyncProducer(TestJs.produceSync);
    TestJs.fail_message = "source exploded: ünïcode kept";
    defer TestJs.fail_message = null;
    var stream: abi.ArrowDeviceArrayStream = .empty;
    try testing.expectEqual(Status.ok, create(.device, abi.device_cpu, plan.items, false, 1, &stream));
    try testing.expectEqual(abi.device_cpu, stream.device_type);
    var out: abi.ArrowDeviceArray = undefined;
    for (0..2) |_| {
        try testing.expectEqual(@as(c_int, 5), stream.get_next.?(&stream, &out));
        try testing.expect(out.array.release == null);
        try testing.expectEqualStrings("source exploded: ünïcode kept", std.mem.span(stream.get_last_error.?(&stream).?));
    }
    stream.release.?(&stream);
    drainKeepalive();
}

test "an async source on the JS thread fails with EDEADLK instead of hanging" {
    var plan: std.ArrayList(u8) = .empty;
    defer plan.deinit(testing.allocator);
    try schemaPlan(&plan);
    var stream: abi.ArrowArrayStream = .empty;
    try testing.expectEqual(Status.ok, create(.array, abi.device_cpu, plan.items, true, 2, &stream));
    var out: abi.ArrowArray = undefined;
    try testing.expectEqual(@import("../core/errno.zig").native.EDEADLK, stream.get_next.?(&stream, &out));
    try testing.expect(std.mem.indexOf(u8, std.mem.span(stream.get_last_error.?(&stream).?), "async") != null);
    // get_schema works on any thread and clears the message's validity.
    var schema: abi.ArrowSchema = .empty;
    try testing.expectEqual(@as(c_int, 0), stream.get_schema.?(&stream, &schema));
    try testing.expect(stream.get_last_error.?(&stream) == null);
    schema.release.?(&schema);
    stream.release.?(&stream);
    drainKeepalive();
}

test "a consumer thread blocks until the JS side answers from the queue" {
    var plan: std.ArrayList(u8) = .empty;
    defer plan.deinit(testing.allocator);
    try schemaPlan(&plan);
    TestJs.batches_left = 3;
    TestJs.fail_message = null;
    var stream: abi.ArrowArrayStream = .empty;
    try testing.expectEqual(Status.ok, create(.array, abi.device_cpu, plan.items, true, 3, &stream));
    var stop: std.atomic.Value(bool) = .init(false);
    const server = try std.Thread.spawn(.{}, TestJs.serve, .{&stop});
    const Consumer = struct {
        fn run(s: *abi.ArrowArrayStream, rows: *i64) void {
            while (true) {
                var array: abi.ArrowArray = undefined;
                if (s.get_next.?(s, &array) != 0) return;
                if (array.release == null) return;
                rows.* += array.length;
                array.release.?(&array);
            }
        }
    };
    var rows: i64 = 0;
    const consumer = try std.Thread.spawn(.{}, Consumer.run, .{ &stream, &rows });
    consumer.join();
    stop.store(true, .release);
    server.join();
    try testing.expectEqual(@as(i64, 9), rows);
    stream.release.?(&stream);
    drainKeepalive();
}

/// A stand-in for JS handing out arrays made elsewhere (device arrays whose
/// buffers are never read here: the addresses are fake).
const ArrayJs = struct {
    var releases: u32 = 0;
    var next_device_type: abi.DeviceType = abi.device_cpu;
    var next_device_id: i64 = 0;
    var last_status: Status = .ok;
    var left: u32 = 0;
    var schema: ?*const abi.ArrowSchema = null;
    var children_storage: [1]?*abi.ArrowArray = .{null};
    var child: abi.ArrowArray = .empty;
    var buffers: [2]?*const anyopaque = .{ null, @ptrFromInt(0x1000) };
    var root_buffers: [1]?*const anyopaque = .{null};
    var event: u64 = 0;
    /// The array offered last, as JS's handle would hold it.
    var held: abi.ArrowDeviceArray = .empty;

    fn release(array: *abi.ArrowArray) callconv(.c) void {
        releases += 1;
        array.release = null;
    }

    fn make() abi.ArrowDeviceArray {
        child = .{ .length = 3, .null_count = 0, .offset = 0, .n_buffers = 2, .n_children = 0, .buffers = @ptrCast(&buffers), .children = null, .dictionary = null, .release = null, .private_data = null };
        children_storage[0] = &child;
        var out: abi.ArrowDeviceArray = .empty;
        out.array = .{ .length = 3, .null_count = 0, .offset = 0, .n_buffers = 1, .n_children = 1, .buffers = @ptrCast(&root_buffers), .children = @ptrCast(&children_storage), .dictionary = null, .release = release, .private_data = null };
        out.device_type = next_device_type;
        out.device_id = next_device_id;
        out.sync_event = &event;
        return out;
    }

    fn produce(js_key: f64, self: *Producer) callconv(.c) void {
        _ = js_key;
        if (left == 0) {
            _ = end(self);
            return;
        }
        left -= 1;
        held = make();
        last_status = deliverArray(self, schema, &held);
        if (last_status != .ok and held.array.release != null) held.array.release.?(&held.array); // JS releases what it still holds
        next_device_id += 1;
    }
};

test "arrays made elsewhere are moved into out with their device id and sync event" {
    var plan: std.ArrayList(u8) = .empty;
    defer plan.deinit(testing.allocator);
    try schemaPlan(&plan);
    var source_schema: abi.ArrowSchema = .empty;
    try testing.expectEqual(Status.ok, export_schema.build(plan.items, &source_schema));
    defer source_schema.release.?(&source_schema);
    setSyncProducer(ArrayJs.produce);
    ArrayJs.releases = 0;
    ArrayJs.left = 2;
    ArrayJs.next_device_type = abi.device_cuda;
    ArrayJs.next_device_id = 0;
    ArrayJs.schema = &source_schema;
    var stream: abi.ArrowDeviceArrayStream = .empty;
    try testing.expectEqual(Status.ok, createFromSchema(.device, abi.device_cuda, &source_schema, false, 7, &stream));
    try testing.expectEqual(abi.device_cuda, stream.device_type);
    var schema: abi.ArrowSchema = .empty;
    try testing.expectEqual(@as(c_int, 0), stream.get_schema.?(&stream, &schema));
    try testing.expectEqualStrings("a", std.mem.span(schema.children.?[0].?.name.?));
    schema.release.?(&schema);
    var out: [2]abi.ArrowDeviceArray = undefined;
    for (&out, 0..) |*array, i| {
        try testing.expectEqual(@as(c_int, 0), stream.get_next.?(&stream, array));
        try testing.expectEqual(abi.device_cuda, array.device_type);
        try testing.expectEqual(@as(i64, @intCast(i)), array.device_id);
        try testing.expectEqual(@intFromPtr(&ArrayJs.event), @intFromPtr(array.sync_event.?));
        try testing.expectEqual(@as(usize, 0x1000), @intFromPtr(array.array.children.?[0].?.buffers.?[1].?));
        try testing.expect(ArrayJs.held.array.release == null); // moved: the holder sees it released
    }
    var end_array: abi.ArrowDeviceArray = undefined;
    try testing.expectEqual(@as(c_int, 0), stream.get_next.?(&stream, &end_array));
    try testing.expect(end_array.array.release == null);
    try testing.expectEqual(abi.device_cuda, end_array.device_type);
    stream.release.?(&stream);
    try testing.expectEqual(@as(u32, 0), ArrayJs.releases); // the consumer's to release
    for (&out) |*array| array.array.release.?(&array.array);
    try testing.expectEqual(@as(u32, 2), ArrayJs.releases);
    drainKeepalive();
}

test "an array on another device type, or of another schema, fails the stream and stays with its holder" {
    var plan: std.ArrayList(u8) = .empty;
    defer plan.deinit(testing.allocator);
    try schemaPlan(&plan);
    setSyncProducer(ArrayJs.produce);
    for ([_]bool{ false, true }) |wrong_schema| {
        ArrayJs.releases = 0;
        ArrayJs.left = 1;
        ArrayJs.next_device_id = 0;
        ArrayJs.next_device_type = if (wrong_schema) abi.device_rocm else abi.device_cuda;
        var other_plan: std.ArrayList(u8) = .empty;
        defer other_plan.deinit(testing.allocator);
        try export_schema.appendNode(&other_plan, testing.allocator, "+s", "", null, 0, 1, false);
        try export_schema.appendNode(&other_plan, testing.allocator, "l", "a", null, abi.flag_nullable, 0, false);
        var other: abi.ArrowSchema = .empty;
        try testing.expectEqual(Status.ok, export_schema.build(other_plan.items, &other));
        defer other.release.?(&other);
        ArrayJs.schema = if (wrong_schema) &other else null;
        var stream: abi.ArrowDeviceArrayStream = .empty;
        try testing.expectEqual(Status.ok, create(.device, abi.device_rocm, plan.items, false, 8, &stream));
        var out: abi.ArrowDeviceArray = undefined;
        try testing.expectEqual(@as(c_int, 22), stream.get_next.?(&stream, &out));
        try testing.expect(out.array.release == null);
        const message = std.mem.span(stream.get_last_error.?(&stream).?);
        if (wrong_schema) {
            try testing.expectEqualStrings("the array's schema does not match the stream's: child 0 has format \"l\", the stream's has \"i\"", message);
        } else {
            try testing.expectEqualStrings("the array is on device CUDA (2) id 0, but this ArrowDeviceArrayStream's device_type is ROCM (10)", message);
        }
        try testing.expectEqual(@as(u32, 1), ArrayJs.releases); // released by its holder, once
        try testing.expectEqual(@as(c_int, 22), stream.get_next.?(&stream, &out)); // final
        stream.release.?(&stream);
        drainKeepalive();
    }
}
