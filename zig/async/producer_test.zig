//! Tests of this library as an async device stream producer
//! (producer.zig).

const std = @import("std");
const abi = @import("../core/abi.zig");
const status = @import("../core/status.zig");
const counters = @import("../core/counters.zig");
const Status = status.Status;
const async_producer = @import("producer.zig");
const EINVAL = async_producer.EINVAL;
const StateWord = async_producer.StateWord;
const state_words = async_producer.state_words;
const Producer = async_producer.Producer;
const create = async_producer.create;
const testing = std.testing;

/// A consumer that records what it is sent and can act from inside the
/// callbacks.
const TestConsumer = struct {
    handler: abi.ArrowAsyncDeviceStreamHandler = .{
        .on_schema = onSchema,
        .on_next_task = onNextTask,
        .on_error = onError,
        .release = onRelease,
        .producer = null,
        .private_data = null,
    },
    tasks: [8]abi.ArrowAsyncTask = undefined,
    n_tasks: usize = 0,
    ended: bool = false,
    error_code: c_int = 0,
    releases: u32 = 0,
    request_in_schema: i64 = 0,
    refuse_tasks: bool = false,

    fn from(h: *abi.ArrowAsyncDeviceStreamHandler) *TestConsumer {
        return @fieldParentPtr("handler", h);
    }
    fn onSchema(h: *abi.ArrowAsyncDeviceStreamHandler, schema: *abi.ArrowSchema) callconv(.c) c_int {
        const self = from(h);
        schema.release.?(schema);
        // Allowed from inside on_schema; must not call back synchronously.
        if (self.request_in_schema != 0) h.producer.?.request.?(h.producer.?, self.request_in_schema);
        return 0;
    }
    fn onNextTask(h: *abi.ArrowAsyncDeviceStreamHandler, task: ?*abi.ArrowAsyncTask, metadata: ?[*:0]const u8) callconv(.c) c_int {
        _ = metadata;
        const self = from(h);
        const t = task orelse {
            self.ended = true;
            return 0;
        };
        // A refusing consumer keeps a copy too: the spec-literal one then
        // extracts it with NULL, Arrow C++'s never does.
        self.tasks[self.n_tasks] = t.*;
        self.n_tasks += 1;
        return if (self.refuse_tasks) EINVAL else 0;
    }
    fn onError(h: *abi.ArrowAsyncDeviceStreamHandler, code: c_int, message: ?[*:0]const u8, metadata: ?[*:0]const u8) callconv(.c) void {
        _ = message;
        _ = metadata;
        from(h).error_code = code;
    }
    fn onRelease(h: *abi.ArrowAsyncDeviceStreamHandler) callconv(.c) void {
        from(h).releases += 1;
        h.release = null;
    }
};

fn testSchema(schema: *abi.ArrowSchema) void {
    const Release = struct {
        fn run(s: *abi.ArrowSchema) callconv(.c) void {
            s.release = null;
        }
    };
    schema.* = .empty;
    schema.format = "i";
    schema.release = Release.run;
}

test "credits follow requests; request inside on_schema does not call back" {
    var consumer: TestConsumer = .{ .request_in_schema = 2 };
    const before = counters.get(.live_async);
    var out: ?*Producer = null;
    try testing.expectEqual(Status.ok, create(&consumer.handler, abi.device_cpu, null, 3, &out));
    const p = out.?;
    try testing.expect(consumer.handler.producer == &p.producer);
    var schema: abi.ArrowSchema = undefined;
    testSchema(&schema);
    try testing.expectEqual(@as(c_int, 0), p.sendSchema(&schema));
    try testing.expectEqual(@as(usize, 0), consumer.n_tasks); // request only counted
    var words: [state_words]f64 = undefined;
    p.poll(&words, true);
    try testing.expectEqual(@as(f64, 2), words[@intFromEnum(StateWord.credits)]);

    const plan = [_]f64{ 3, 0, 0, 0, 0, 0 }; // a null array of length 3
    var rc: c_int = -1;
    try testing.expectEqual(Status.ok, p.sendPlan(&plan, 0, null, &rc));
    try testing.expectEqual(@as(c_int, 0), rc);
    try testing.expectEqual(Status.ok, p.sendPlan(&plan, 0, null, &rc));
    try testing.expectEqual(Status.out_of_range, p.sendPlan(&plan, 0, null, &rc)); // no credit left
    try testing.expectEqual(@as(usize, 2), consumer.n_tasks);

    // Every change is published as it happens, word for word what poll
    // reads (but the wake count, which poll alone gives).
    p.poll(&words, false);
    words[@intFromEnum(StateWord.wakes)] = 0;
    try testing.expectEqualSlices(f64, &words, &p.published);
    try testing.expectEqual(@as(f64, 0), p.published[@intFromEnum(StateWord.credits)]);
    try testing.expectEqual(@as(f64, 2), p.published[@intFromEnum(StateWord.sent)]);
    p.producer.request.?(&p.producer, 3);
    try testing.expectEqual(@as(f64, 3), p.published[@intFromEnum(StateWord.credits)]);
    try testing.expectEqual(@as(f64, 5), p.published[@intFromEnum(StateWord.requested)]);
    // A send that fails after taking its credit gives it back, published.
    const bad_plan = [_]f64{ 3, 0, 0, 0, 0, 0, 99 }; // one word too many
    try testing.expect(p.sendPlan(&bad_plan, 0, null, &rc) != .ok);
    try testing.expectEqual(@as(f64, 3), p.published[@intFromEnum(StateWord.credits)]);
    try testing.expectEqual(@as(f64, 2), p.published[@intFromEnum(StateWord.sent)]);

    p.producer.request.?(&p.producer, 0);
    try testing.expectEqual(@as(f64, 1), p.published[@intFromEnum(StateWord.bad_request)]);
    p.poll(&words, true);
    try testing.expectEqual(@as(f64, 1), words[@intFromEnum(StateWord.bad_request)]);
    p.producer.cancel.?(&p.producer);
    p.producer.cancel.?(&p.producer); // idempotent
    p.producer.request.?(&p.producer, 5); // a no-op after cancel
    try testing.expectEqual(@as(f64, 1), p.published[@intFromEnum(StateWord.cancelled)]);
    p.poll(&words, true);
    try testing.expectEqual(@as(f64, 1), words[@intFromEnum(StateWord.cancelled)]);
    try testing.expectEqual(@as(f64, 3), words[@intFromEnum(StateWord.credits)]);
    p.releaseAndDestroy();
    try testing.expectEqual(@as(u32, 1), consumer.releases);

    // Tasks outlive the producer: one extracted, one not wanted.
    var array: abi.ArrowDeviceArray = undefined;
    try testing.expectEqual(@as(c_int, 0), consumer.tasks[0].extract_data.?(&consumer.tasks[0], &array));
    try testing.expectEqual(@as(i64, 3), array.array.length);
    try testing.expectEqual(@as(c_int, EINVAL), consumer.tasks[0].extract_data.?(&consumer.tasks[0], &array));
    array.array.release.?(&array.array);
    try testing.expectEqual(@as(c_int, 0), consumer.tasks[1].extract_data.?(&consumer.tasks[1], null));
    try testing.expectEqual(before, counters.get(.live_async));
}

test "the producer outlives the release while a task is out: a late request is a no-op (Arrow C++'s consumer makes one)" {
    var consumer: TestConsumer = .{ .request_in_schema = 2 };
    const before = counters.get(.live_async);
    var out: ?*Producer = null;
    try testing.expectEqual(Status.ok, create(&consumer.handler, abi.device_cpu, null, 6, &out));
    const p = out.?;
    var schema: abi.ArrowSchema = undefined;
    testSchema(&schema);
    try testing.expectEqual(@as(c_int, 0), p.sendSchema(&schema));
    var rc: c_int = -1;
    const plan = [_]f64{ 2, 0, 0, 0, 0, 0 };
    try testing.expectEqual(Status.ok, p.sendPlan(&plan, 0, null, &rc));
    try testing.expectEqual(Status.ok, p.sendPlan(&plan, 0, null, &rc));
    try testing.expectEqual(@as(c_int, 0), p.sendEnd());
    const producer = consumer.handler.producer.?;
    p.releaseAndDestroy();
    try testing.expectEqual(@as(u32, 1), consumer.releases);
    // The producer and two tasks are still out.
    try testing.expectEqual(before + 3, counters.get(.live_async));
    // Arrow C++'s pattern: take a task, request(1), then extract it.
    producer.request.?(producer, 1);
    producer.cancel.?(producer);
    try testing.expectEqual(@as(c_int, 0), consumer.tasks[0].extract_data.?(&consumer.tasks[0], null));
    try testing.expectEqual(before + 2, counters.get(.live_async));
    producer.request.?(producer, 1);
    var array: abi.ArrowDeviceArray = undefined;
    try testing.expectEqual(@as(c_int, 0), consumer.tasks[1].extract_data.?(&consumer.tasks[1], &array));
    // The last task extracted: the producer is gone with it.
    try testing.expectEqual(before, counters.get(.live_async));
    try testing.expectEqual(@as(i64, 2), array.array.length);
    array.array.release.?(&array.array);
}

fn refusedTaskProducer(consumer: *TestConsumer) !*Producer {
    var out: ?*Producer = null;
    try testing.expectEqual(Status.ok, create(&consumer.handler, abi.device_cpu, "\x00\x00\x00\x00", 4, &out));
    const p = out.?;
    try testing.expectEqual(@as(u8, 0), p.producer.additional_metadata.?[0]);
    var schema: abi.ArrowSchema = undefined;
    testSchema(&schema);
    _ = p.sendSchema(&schema);
    var rc: c_int = 0;
    try testing.expectEqual(Status.ok, p.sendPlan(&[_]f64{ 1, 0, 0, 0, 0, 0 }, 0, null, &rc));
    try testing.expectEqual(EINVAL, rc);
    return p;
}

test "a refused task nobody extracts (Arrow C++'s consumer) is reclaimed at the handler's release" {
    var consumer: TestConsumer = .{ .request_in_schema = 1, .refuse_tasks = true };
    const before = counters.get(.live_async);
    const arrays_before = counters.get(.live_array_exports);
    const p = try refusedTaskProducer(&consumer);
    // Parked: the producer and the task, whose array is still alive.
    try testing.expectEqual(before + 2, counters.get(.live_async));
    try testing.expectEqual(arrays_before + 1, counters.get(.live_array_exports));
    p.releaseAndDestroy();
    try testing.expectEqual(before, counters.get(.live_async));
    try testing.expectEqual(arrays_before, counters.get(.live_array_exports));
}

test "a refused task extracted afterwards (the spec's consumer) is disposed of once, the late extract harmless" {
    var consumer: TestConsumer = .{ .request_in_schema = 1, .refuse_tasks = true };
    const before = counters.get(.live_async);
    const arrays_before = counters.get(.live_array_exports);
    const p = try refusedTaskProducer(&consumer);
    try testing.expectEqual(@as(usize, 1), consumer.n_tasks);
    // After on_next_task returned non-zero: still valid.
    try testing.expectEqual(@as(c_int, 0), consumer.tasks[0].extract_data.?(&consumer.tasks[0], null));
    try testing.expectEqual(arrays_before, counters.get(.live_array_exports));
    try testing.expectEqual(before + 1, counters.get(.live_async)); // the producer only
    p.releaseAndDestroy(); // nothing parked is left to reclaim
    try testing.expectEqual(before, counters.get(.live_async));

    // Extracting the data itself after refusing works too.
    var consumer2: TestConsumer = .{ .request_in_schema = 1, .refuse_tasks = true };
    const p2 = try refusedTaskProducer(&consumer2);
    var array: abi.ArrowDeviceArray = undefined;
    try testing.expectEqual(@as(c_int, 0), consumer2.tasks[0].extract_data.?(&consumer2.tasks[0], &array));
    try testing.expectEqual(@as(i64, 1), array.array.length);
    p2.releaseAndDestroy();
    try testing.expectEqual(arrays_before + 1, counters.get(.live_array_exports)); // the consumer's now
    array.array.release.?(&array.array);
    try testing.expectEqual(arrays_before, counters.get(.live_array_exports));
    try testing.expectEqual(before, counters.get(.live_async));
}

test "a handler with a missing callback is refused and released" {
    var consumer: TestConsumer = .{};
    consumer.handler.on_error = null;
    var out: ?*Producer = null;
    try testing.expectEqual(Status.invalid_argument, create(&consumer.handler, abi.device_cpu, null, 5, &out));
    try testing.expectEqual(@as(u32, 1), consumer.releases);
    try testing.expect(std.mem.indexOf(u8, std.mem.span(status.lastMessage()), "on_error") != null);
}
