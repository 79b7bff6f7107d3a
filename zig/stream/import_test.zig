//! Tests of imported C streams (import.zig): pulls, the JS thread's
//! background pulls, errors and releases.

const std = @import("std");
const abi = @import("../core/abi.zig");
const status = @import("../core/status.zig");
const js_queue = @import("../core/js_queue.zig");
const Status = status.Status;
const owner_mod = @import("../import/owner.zig");
const Owner = owner_mod.Owner;
const fail = status.fail;
const stream_import = @import("import.zig");
const Imported = stream_import.Imported;
const import = stream_import.import;
const next = stream_import.next;
const pull = stream_import.pull;
const wait = stream_import.wait;
const pullState = stream_import.pullState;
const takePull = stream_import.takePull;
const release = stream_import.release;
const errnoName = stream_import.errnoName;
const testing = std.testing;

/// A C-style producer for these tests: `batches` int32 arrays of 2 rows,
/// then the end; `fail_at` makes that get_next fail with EIO.
const TestStream = struct {
    var values = [_]i32{ 7, 8 };
    var buffers = [_]?*const anyopaque{ null, @ptrCast(&values) };
    var stream_releases: u32 = 0;
    var schema_releases: u32 = 0;
    var array_releases: u32 = 0;

    const State = struct { left: u32, fail_at: ?u32, served: u32 = 0, device_type: abi.DeviceType = abi.device_cpu };

    fn releaseSchema(s: *abi.ArrowSchema) callconv(.c) void {
        schema_releases += 1;
        s.release = null;
    }
    fn releaseArray(a: *abi.ArrowArray) callconv(.c) void {
        array_releases += 1;
        a.release = null;
    }
    fn getSchema(stream: *abi.ArrowDeviceArrayStream, out: *abi.ArrowSchema) callconv(.c) c_int {
        _ = stream;
        out.* = .empty;
        out.format = "i";
        out.release = releaseSchema;
        return 0;
    }
    fn getNext(stream: *abi.ArrowDeviceArrayStream, out: *abi.ArrowDeviceArray) callconv(.c) c_int {
        const state: *State = @ptrCast(@alignCast(stream.private_data.?));
        if (state.fail_at) |at| if (state.served == at) return 5;
        out.* = .empty;
        if (state.left == 0) return 0;
        state.left -= 1;
        state.served += 1;
        out.device_type = state.device_type;
        out.array = .{ .length = 2, .null_count = 0, .offset = 0, .n_buffers = 2, .n_children = 0, .buffers = &buffers, .children = null, .dictionary = null, .release = releaseArray, .private_data = null };
        return 0;
    }
    fn getLastError(stream: *abi.ArrowDeviceArrayStream) callconv(.c) ?[*:0]const u8 {
        _ = stream;
        return "disk on fire";
    }
    fn release(stream: *abi.ArrowDeviceArrayStream) callconv(.c) void {
        stream_releases += 1;
        stream.release = null;
    }
    fn make(state: *State) abi.ArrowDeviceArrayStream {
        stream_releases = 0;
        schema_releases = 0;
        array_releases = 0;
        return .{ .device_type = abi.device_cpu, .get_schema = getSchema, .get_next = getNext, .get_last_error = getLastError, .release = TestStream.release, .private_data = state };
    }
};

test "batches share the schema; every release runs once, batches outlive the stream" {
    var state: TestStream.State = .{ .left = 2, .fail_at = null };
    var stream = TestStream.make(&state);
    var imported: ?*Imported = null;
    try testing.expectEqual(Status.ok, import(.device, &stream, &imported));
    try testing.expect(stream.release == null);
    var owners: [2]*Owner = undefined;
    for (&owners) |*o| {
        var owner: ?*Owner = null;
        try testing.expectEqual(Status.ok, next(imported.?, .full, &owner));
        o.* = owner.?;
    }
    var last: ?*Owner = null;
    try testing.expectEqual(Status.ok, next(imported.?, .full, &last));
    try testing.expect(last == null);
    try testing.expectEqual(Status.ok, next(imported.?, .full, &last)); // the end repeats
    try testing.expect(last == null);
    release(imported.?);
    try testing.expectEqual(@as(u32, 1), TestStream.stream_releases);
    try testing.expectEqual(@as(u32, 0), TestStream.schema_releases); // batches still hold it
    owners[0].release();
    owners[1].release();
    try testing.expectEqual(@as(u32, 1), TestStream.schema_releases);
    try testing.expectEqual(@as(u32, 2), TestStream.array_releases);
}

test "a failing get_next carries the errno and the producer's message" {
    var state: TestStream.State = .{ .left = 3, .fail_at = 1 };
    var stream = TestStream.make(&state);
    var imported: ?*Imported = null;
    try testing.expectEqual(Status.ok, import(.device, &stream, &imported));
    var owner: ?*Owner = null;
    try testing.expectEqual(Status.ok, next(imported.?, .default, &owner));
    owner.?.release();
    try testing.expectEqual(Status.callback_error, next(imported.?, .default, &owner));
    try testing.expectEqual(@as(c_int, 5), imported.?.producer_errno);
    try testing.expectEqualStrings("disk on fire", imported.?.producer_error.?);
    try testing.expectEqualStrings("get_next failed with errno 5 (EIO): disk on fire", std.mem.span(status.lastMessage()));
    release(imported.?);
    try testing.expectEqual(@as(u32, 1), TestStream.stream_releases);
    try testing.expectEqual(@as(u32, 1), TestStream.schema_releases);
}

test "an array on another device than the stream's is rejected and released" {
    var state: TestStream.State = .{ .left = 1, .fail_at = null, .device_type = abi.device_cuda_host };
    var stream = TestStream.make(&state);
    var imported: ?*Imported = null;
    try testing.expectEqual(Status.ok, import(.device, &stream, &imported));
    var owner: ?*Owner = null;
    try testing.expectEqual(Status.invalid_argument, next(imported.?, .default, &owner));
    try testing.expect(std.mem.indexOf(u8, std.mem.span(status.lastMessage()), "CUDA_HOST") != null);
    try testing.expectEqual(@as(u32, 1), TestStream.array_releases);
    release(imported.?);
}

test "background pulls post to the JS queue and can be released mid-stream" {
    // Each get_next waits for its turn, so that JS calls `wait` before the
    // pull can end: a pull that ended first is not posted (`wait` returns
    // `ready` and JS takes it at once), and this test would wait forever
    // for a post that never comes.
    const Gated = struct {
        var turns: std.atomic.Value(u32) = .init(0);
        var calls: u32 = 0; // the worker thread's own
        fn getNext(s: *abi.ArrowDeviceArrayStream, out: *abi.ArrowDeviceArray) callconv(.c) c_int {
            calls += 1;
            while (turns.load(.acquire) < calls) std.Thread.yield() catch {};
            return TestStream.getNext(s, out);
        }
    };
    var state: TestStream.State = .{ .left = 5, .fail_at = null };
    var stream = TestStream.make(&state);
    stream.get_next = Gated.getNext;
    var imported: ?*Imported = null;
    try testing.expectEqual(Status.ok, import(.device, &stream, &imported));
    var out: [js_queue.entry_words * 4]f64 = undefined;
    for (0..2) |i| {
        try testing.expectEqual(Status.ok, pull(imported.?, .default));
        try testing.expectEqual(Status.invalid_argument, pull(imported.?, .default)); // one at a time
        // From now on the end of the pull is posted.
        try testing.expect(wait(imported.?) != .ready);
        Gated.turns.store(@intCast(i + 1), .release);
        var taken: usize = 0;
        while (taken == 0) {
            taken = js_queue.of(0).take(&out);
            if (taken == 0) std.Thread.yield() catch {};
        }
        try testing.expectEqual(@as(f64, @floatFromInt(imported.?.serial)), out[1]);
        var owner: ?*Owner = null;
        try testing.expectEqual(Status.ok, takePull(imported.?, &owner));
        owner.?.release();
    }
    // A pull left untaken is dropped by the release; one nobody waits for
    // is not posted.
    try testing.expectEqual(Status.ok, pull(imported.?, .default));
    Gated.turns.store(3, .release);
    while (pullState(imported.?) != .ready) std.Thread.yield() catch {};
    try testing.expectEqual(@as(usize, 0), js_queue.of(0).take(&out));
    release(imported.?);
    try testing.expectEqual(@as(u32, 1), TestStream.stream_releases);
    try testing.expectEqual(@as(u32, 3), TestStream.array_releases);
    try testing.expectEqual(@as(u32, 1), TestStream.schema_releases);
}

test "a release during a running pull is finished by the worker, once" {
    const Slow = struct {
        var gate: std.atomic.Value(bool) = .init(false);
        fn getNext(stream: *abi.ArrowDeviceArrayStream, out: *abi.ArrowDeviceArray) callconv(.c) c_int {
            while (!gate.load(.acquire)) std.Thread.yield() catch {};
            return TestStream.getNext(stream, out);
        }
    };
    var state: TestStream.State = .{ .left = 3, .fail_at = null };
    var stream = TestStream.make(&state);
    stream.get_next = Slow.getNext;
    var imported: ?*Imported = null;
    try testing.expectEqual(Status.ok, import(.device, &stream, &imported));
    try testing.expectEqual(Status.ok, pull(imported.?, .default));
    while (pullState(imported.?) != .running) std.Thread.yield() catch {};
    release(imported.?); // returns at once: the worker is inside get_next
    try testing.expectEqual(@as(u32, 0), TestStream.stream_releases);
    Slow.gate.store(true, .release);
    while (@atomicLoad(u32, &TestStream.stream_releases, .acquire) == 0) std.Thread.yield() catch {};
    try testing.expectEqual(@as(u32, 1), TestStream.stream_releases);
    try testing.expectEqual(@as(u32, 1), TestStream.array_releases); // the batch it pulled
}

test "errno names" {
    try testing.expectEqualStrings("EIO", errnoName(5));
    try testing.expectEqualStrings("EDEADLK", errnoName(35));
    try testing.expectEqualStrings("unknown", errnoName(-3));
}
