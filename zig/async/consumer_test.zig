//! Tests of this library as an async device stream consumer
//! (consumer.zig).

const std = @import("std");
const abi = @import("../core/abi.zig");
const counters = @import("../core/counters.zig");
const owner_mod = @import("../import/owner.zig");
const status = @import("../core/status.zig");
const Status = status.Status;
const async_consumer = @import("consumer.zig");
const EPROTO = async_consumer.EPROTO;
const StateWord = async_consumer.StateWord;
const state_words = async_consumer.state_words;
const Consumer = async_consumer.Consumer;
const create = async_consumer.create;
const testing = std.testing;

/// A minimal in-process producer for the unit tests: tasks hand out
/// length-`index` null arrays.
const TestProducer = struct {
    producer: abi.ArrowAsyncProducer = .{
        .device_type = abi.device_cpu,
        .request = request,
        .cancel = cancelStream,
        .additional_metadata = "\x01\x00\x00\x00\x01\x00\x00\x00k\x01\x00\x00\x00v",
        .private_data = null,
    },
    requested: i64 = 0,
    cancels: u32 = 0,
    extracts: u32 = 0,
    null_extracts: u32 = 0,

    var instance: TestProducer = .{};

    fn request(p: *abi.ArrowAsyncProducer, n: i64) callconv(.c) void {
        _ = p;
        instance.requested += n;
    }
    fn cancelStream(p: *abi.ArrowAsyncProducer) callconv(.c) void {
        _ = p;
        instance.cancels += 1;
    }
    fn releaseArray(a: *abi.ArrowArray) callconv(.c) void {
        a.release = null;
    }
    fn releaseSchema(s: *abi.ArrowSchema) callconv(.c) void {
        s.release = null;
    }
    fn extract(task: *abi.ArrowAsyncTask, out: ?*abi.ArrowDeviceArray) callconv(.c) c_int {
        instance.extracts += 1;
        const o = out orelse {
            instance.null_extracts += 1;
            return 0;
        };
        o.* = .empty;
        o.array.length = @intCast(@intFromPtr(task.private_data));
        o.array.null_count = o.array.length;
        o.array.release = releaseArray;
        return 0;
    }
    fn makeTask(index: usize) abi.ArrowAsyncTask {
        return .{ .extract_data = extract, .private_data = @ptrFromInt(index) };
    }
    /// A fresh producer and a consumer (wakes carry `token`) that this
    /// producer's handler has handed a null-typed schema to.
    fn start(token: u32) !*Consumer {
        instance = .{};
        var out: ?*Consumer = null;
        try testing.expectEqual(Status.ok, create(token, &out));
        const c = out.?;
        const h = &c.handler;
        h.producer = &instance.producer;
        var schema: abi.ArrowSchema = .empty;
        schema.format = "n";
        schema.release = releaseSchema;
        try testing.expectEqual(@as(c_int, 0), h.on_schema.?(h, &schema));
        try testing.expect(schema.release == null); // moved in
        return c;
    }
};

test "schema, requested tasks, end and release flow through the queue" {
    const before = counters.get(.live_async);
    const c = try TestProducer.start(7);
    const h = &c.handler;
    try testing.expectEqualSlices(u8, TestProducer.instance.producer.additional_metadata.?[0..14], c.string(.producer_metadata).?);

    // Nothing requested yet: a task now is a protocol violation.
    var early = TestProducer.makeTask(1);
    try testing.expect(c.request(2));
    try testing.expectEqual(@as(i64, 2), TestProducer.instance.requested);
    try testing.expectEqual(@as(c_int, 0), h.on_next_task.?(h, &early, null));
    var second = TestProducer.makeTask(2);
    try testing.expectEqual(@as(c_int, 0), h.on_next_task.?(h, &second, "\x00\x00\x00\x00"));
    var words: [state_words]f64 = undefined;
    c.poll(&words, true);
    try testing.expectEqual(@as(f64, 2), words[@intFromEnum(StateWord.queued)]);

    var got_schema: abi.ArrowSchema = .empty;
    var got_array: abi.ArrowDeviceArray = undefined;
    try testing.expectEqual(Status.ok, c.take(&got_schema, &got_array, true, null));
    try testing.expectEqual(@as(i64, 1), got_array.array.length);
    try testing.expectEqualStrings("n", std.mem.span(got_schema.format.?));
    try testing.expectEqual(@as(i64, 3), TestProducer.instance.requested); // replenished
    got_schema.release.?(&got_schema);
    got_array.array.release.?(&got_array.array);
    try testing.expectEqual(Status.ok, c.take(&got_schema, &got_array, false, null));
    try testing.expectEqualSlices(u8, "\x00\x00\x00\x00", c.string(.task_metadata).?);
    got_schema.release.?(&got_schema);
    got_array.array.release.?(&got_array.array);

    try testing.expectEqual(@as(c_int, 0), h.on_next_task.?(h, null, null));
    h.release.?(h);
    c.poll(&words, true);
    try testing.expectEqual(@as(f64, 1), words[@intFromEnum(StateWord.ended)]);
    try testing.expectEqual(@as(f64, 1), words[@intFromEnum(StateWord.released)]);
    try testing.expect(!c.request(1)); // the producer is gone
    c.close(true);
    try testing.expectEqual(@as(u32, 0), TestProducer.instance.cancels); // nothing to cancel after the end
    try testing.expectEqual(before, counters.get(.live_async));
}

test "an unrequested task is refused, and cancel discards the queue once" {
    const c = try TestProducer.start(8);
    const h = &c.handler;
    var t1 = TestProducer.makeTask(1);
    try testing.expect(c.request(1));
    try testing.expectEqual(@as(c_int, 0), h.on_next_task.?(h, &t1, null));
    var t2 = TestProducer.makeTask(2);
    try testing.expectEqual(EPROTO, h.on_next_task.?(h, &t2, null));
    try testing.expectEqual(@as(u32, 1), TestProducer.instance.null_extracts); // refused: extracted with NULL
    var words: [state_words]f64 = undefined;
    c.poll(&words, true);
    try testing.expectEqual(@as(f64, 1), words[@intFromEnum(StateWord.errored)]);
    try testing.expectEqual(@as(f64, 1), words[@intFromEnum(StateWord.error_local)]);
    try testing.expect(std.mem.indexOf(u8, c.string(.error_message).?, "only 1 were requested") != null);
    c.cancel();
    c.cancel();
    try testing.expectEqual(@as(u32, 2), TestProducer.instance.null_extracts); // and the queued one at cancel
    try testing.expectEqual(@as(u32, 0), TestProducer.instance.cancels); // failed streams are not cancelled
    h.release.?(h);
    c.close(true);
}

test "takeMany takes every ready task in one call; a task with metadata ends the call" {
    const before = counters.get(.live_async);
    const owners_before = counters.get(.live_owners);
    const c = try TestProducer.start(10);
    const h = &c.handler;
    try testing.expect(c.request(5));
    var tasks: [5]abi.ArrowAsyncTask = undefined;
    for (&tasks, 0..) |*t, i| {
        t.* = TestProducer.makeTask(i + 1);
        const metadata: ?[*:0]const u8 = if (i == 3) "\x00\x00\x00\x00" else null;
        try testing.expectEqual(@as(c_int, 0), h.on_next_task.?(h, t, metadata));
    }
    var taken: [1 + 2 * 8]f64 = undefined;
    // Tasks 1-4 in one call (the 4th has metadata, so the call ends there).
    try testing.expectEqual(Status.ok, c.takeMany(.full, &taken, 8));
    try testing.expectEqual(@as(f64, 4), taken[0]);
    for (0..4) |i| {
        const owner: *owner_mod.Owner = @ptrFromInt(@as(usize, @intFromFloat(taken[1 + 2 * i])));
        try testing.expectEqual(@as(i64, @intCast(i + 1)), owner.array.array.length);
        try testing.expectEqual(@as(f64, if (i == 3) 4 else -1), taken[2 + 2 * i]);
        owner.release();
    }
    try testing.expectEqualSlices(u8, "\x00\x00\x00\x00", c.string(.task_metadata).?);
    try testing.expectEqual(Status.ok, c.takeMany(.full, &taken, 8));
    try testing.expectEqual(@as(f64, 1), taken[0]);
    @as(*owner_mod.Owner, @ptrFromInt(@as(usize, @intFromFloat(taken[1])))).release();
    // Nothing queued: nothing taken, no turn counted.
    try testing.expectEqual(Status.ok, c.takeMany(.full, &taken, 8));
    try testing.expectEqual(@as(f64, 0), taken[0]);
    var words: [state_words]f64 = undefined;
    c.poll(&words, false);
    try testing.expectEqual(@as(f64, 2), words[@intFromEnum(StateWord.take_turns)]);
    try testing.expectEqual(@as(f64, 5), words[@intFromEnum(StateWord.taken)]);
    try testing.expectEqual(@as(u32, 5), TestProducer.instance.extracts);
    try testing.expectEqual(owners_before, counters.get(.live_owners));
    try testing.expectEqual(@as(c_int, 0), h.on_next_task.?(h, null, null));
    h.release.?(h);
    c.close(true);
    try testing.expectEqual(before, counters.get(.live_async));
}

test "a handler never handed out is released by close" {
    const before = counters.get(.live_async);
    var out: ?*Consumer = null;
    try testing.expectEqual(Status.ok, create(9, &out));
    out.?.close(false);
    try testing.expectEqual(before, counters.get(.live_async));
}
