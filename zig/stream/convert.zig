//! Stream adapters, C to C, without touching a batch's data:
//! - `cpuAsDevice`: an ArrowArrayStream presented as an
//!   ArrowDeviceArrayStream on the CPU (device_id -1, no sync event).
//! - `deviceAsCpu`: an ArrowDeviceArrayStream whose device the host can
//!   read presented as an ArrowArrayStream. Each array is checked against
//!   the stream's device_type, and its sync event (if any) is waited on
//!   before the array is handed over.
//!
//! Ownership: the adapter moves the source stream in (the caller's struct
//! is left released, success or not) and fills the caller's `out`; its
//! release releases the source once. Arrays pass through by move: they are
//! the source producer's and outlive both streams. Any thread may call the
//! adapter's callbacks, as it may the source's (serialized, per the spec).

const std = @import("std");
const abi = @import("../core/abi.zig");
const status = @import("../core/status.zig");
const counters = @import("../core/counters.zig");
const device_sync = @import("../core/device_sync.zig");
const probe = @import("../validate/probe.zig");
const Status = status.Status;
const fail = status.fail;

const allocator = std.heap.c_allocator;

/// An owned NUL-terminated copy of `bytes`; null when memory is short
/// (then callers report no message rather than fail).
fn copyZ(bytes: []const u8) ?[:0]u8 {
    return allocator.dupeSentinel(u8, bytes, 0) catch null;
}

const CpuAsDevice = struct {
    source: abi.ArrowArrayStream,

    fn of(stream: *abi.ArrowDeviceArrayStream) *CpuAsDevice {
        return @ptrCast(@alignCast(stream.private_data.?));
    }

    fn getSchema(stream: *abi.ArrowDeviceArrayStream, out: *abi.ArrowSchema) callconv(.c) c_int {
        const self = of(stream);
        return self.source.get_schema.?(&self.source, out);
    }

    fn getNext(stream: *abi.ArrowDeviceArrayStream, out: *abi.ArrowDeviceArray) callconv(.c) c_int {
        const self = of(stream);
        out.* = .empty; // CPU, device_id -1, no event, reserved zeroed
        return self.source.get_next.?(&self.source, &out.array);
    }

    fn getLastError(stream: *abi.ArrowDeviceArrayStream) callconv(.c) ?[*:0]const u8 {
        const self = of(stream);
        const f = self.source.get_last_error orelse return null;
        return f(&self.source);
    }

    fn release(stream: *abi.ArrowDeviceArrayStream) callconv(.c) void {
        const self = of(stream);
        stream.release = null;
        stream.private_data = null;
        self.source.release.?(&self.source);
        allocator.destroy(self);
        counters.add(.live_stream_exports, -1);
    }
};

const DeviceAsCpu = struct {
    source: abi.ArrowDeviceArrayStream,
    /// Our own message when the last get_next failed here rather than in
    /// the source (a device mismatch, a failed wait); owned.
    own_error: ?[:0]u8 = null,

    fn of(stream: *abi.ArrowArrayStream) *DeviceAsCpu {
        return @ptrCast(@alignCast(stream.private_data.?));
    }

    fn clearError(self: *DeviceAsCpu) void {
        if (self.own_error) |e| allocator.free(e);
        self.own_error = null;
    }

    fn ownFailure(self: *DeviceAsCpu, code: Status) c_int {
        self.own_error = copyZ(std.mem.span(status.lastMessage()));
        return code.errno();
    }

    fn getSchema(stream: *abi.ArrowArrayStream, out: *abi.ArrowSchema) callconv(.c) c_int {
        const self = of(stream);
        self.clearError();
        return self.source.get_schema.?(&self.source, out);
    }

    fn getNext(stream: *abi.ArrowArrayStream, out: *abi.ArrowArray) callconv(.c) c_int {
        const self = of(stream);
        self.clearError();
        out.* = .empty;
        var device: abi.ArrowDeviceArray = .empty;
        const rc = self.source.get_next.?(&self.source, &device);
        if (rc != 0) return rc;
        if (device.array.release == null) return 0; // the end
        if (device.device_type != self.source.device_type) {
            device.array.release.?(&device.array);
            return self.ownFailure(fail(.invalid_argument, "the device stream returned an array on device {s} ({d}), but its device_type is {s} ({d})", .{
                abi.deviceTypeName(device.device_type) orelse "unknown", device.device_type,
                abi.deviceTypeName(self.source.device_type) orelse "unknown", self.source.device_type,
            }));
        }
        const waited = device_sync.waitForHost(device.device_type, device.device_id, device.sync_event);
        if (waited != .ok) {
            device.array.release.?(&device.array);
            return self.ownFailure(waited);
        }
        out.* = device.array;
        return 0;
    }

    fn getLastError(stream: *abi.ArrowArrayStream) callconv(.c) ?[*:0]const u8 {
        const self = of(stream);
        if (self.own_error) |e| return e.ptr;
        const f = self.source.get_last_error orelse return null;
        return f(&self.source);
    }

    fn release(stream: *abi.ArrowArrayStream) callconv(.c) void {
        const self = of(stream);
        stream.release = null;
        stream.private_data = null;
        self.source.release.?(&self.source);
        self.clearError();
        allocator.destroy(self);
        counters.add(.live_stream_exports, -1);
    }
};

/// Moves `source` into `moved` (the caller's struct is left released) and
/// checks that it is live and has both callbacks; on error what was moved
/// in has been released.
fn moveIn(comptime Stream: type, source: *Stream, moved: *Stream) Status {
    moved.* = source.*;
    source.release = null;
    if (moved.release == null) return fail(.released, "stream is released (its release callback is NULL)", .{});
    if (moved.get_schema == null or moved.get_next == null) {
        moved.release.?(moved);
        return fail(.invalid_argument, "stream has a NULL get_schema or get_next callback", .{});
    }
    return .ok;
}

/// A new `Adapter` that owns `moved` (counted as a live stream export);
/// when memory is short, `moved` is released instead.
fn adapt(comptime Adapter: type, moved: *@FieldType(Adapter, "source"), out: **Adapter) Status {
    const self = allocator.create(Adapter) catch {
        moved.release.?(moved);
        return fail(.out_of_memory, "out of memory wrapping a stream", .{});
    };
    self.* = .{ .source = moved.* };
    counters.add(.live_stream_exports, 1);
    out.* = self;
    return .ok;
}

/// Moves `source` in and fills `out` with a CPU device stream over it.
pub fn cpuAsDevice(source: *abi.ArrowArrayStream, out: *abi.ArrowDeviceArrayStream) Status {
    var moved: abi.ArrowArrayStream = undefined;
    const taken = moveIn(abi.ArrowArrayStream, source, &moved);
    if (taken != .ok) return taken;
    var self: *CpuAsDevice = undefined;
    const made = adapt(CpuAsDevice, &moved, &self);
    if (made != .ok) return made;
    out.* = .{
        .device_type = abi.device_cpu,
        .get_schema = CpuAsDevice.getSchema,
        .get_next = CpuAsDevice.getNext,
        .get_last_error = CpuAsDevice.getLastError,
        .release = CpuAsDevice.release,
        .private_data = self,
    };
    return .ok;
}

/// Moves `source` in and fills `out` with a plain stream over it. The
/// source's device must be one the host can read (CPU, CUDA_HOST,
/// ROCM_HOST, CUDA_MANAGED); others are rejected (and released).
pub fn deviceAsCpu(source: *abi.ArrowDeviceArrayStream, out: *abi.ArrowArrayStream) Status {
    var moved: abi.ArrowDeviceArrayStream = undefined;
    const taken = moveIn(abi.ArrowDeviceArrayStream, source, &moved);
    if (taken != .ok) return taken;
    if (!abi.isHostAccessible(moved.device_type)) {
        const device_type = moved.device_type;
        moved.release.?(&moved);
        return fail(.unsupported, "a stream on device {s} ({d}) cannot be read as a CPU ArrowArrayStream: the host cannot read its memory; copy its batches to the host first", .{ abi.deviceTypeName(device_type) orelse "unknown", device_type });
    }
    var self: *DeviceAsCpu = undefined;
    const made = adapt(DeviceAsCpu, &moved, &self);
    if (made != .ok) return made;
    probe.noteArrayStreamCallback(@intFromPtr(&DeviceAsCpu.getSchema));
    out.* = .{
        .get_schema = DeviceAsCpu.getSchema,
        .get_next = DeviceAsCpu.getNext,
        .get_last_error = DeviceAsCpu.getLastError,
        .release = DeviceAsCpu.release,
        .private_data = self,
    };
    return .ok;
}

// ---------------------------------------------------------------------------

const testing = std.testing;

const Source = struct {
    var releases: u32 = 0;
    var values = [_]i32{ 4, 5, 6 };
    var buffers = [_]?*const anyopaque{ null, @ptrCast(&values) };
    var left: u32 = 0;
    var array_device: abi.DeviceType = abi.device_cpu;

    fn noopArray(a: *abi.ArrowArray) callconv(.c) void {
        a.release = null;
    }
    fn array() abi.ArrowArray {
        return .{ .length = 3, .null_count = 0, .offset = 0, .n_buffers = 2, .n_children = 0, .buffers = &buffers, .children = null, .dictionary = null, .release = noopArray, .private_data = null };
    }
    fn getSchema(s: *abi.ArrowArrayStream, out: *abi.ArrowSchema) callconv(.c) c_int {
        _ = s;
        _ = out;
        return 22;
    }
    fn getNext(s: *abi.ArrowArrayStream, out: *abi.ArrowArray) callconv(.c) c_int {
        _ = s;
        if (left == 0) {
            out.* = .empty;
            return 0;
        }
        left -= 1;
        out.* = array();
        return 0;
    }
    fn lastError(s: *abi.ArrowArrayStream) callconv(.c) ?[*:0]const u8 {
        _ = s;
        return "no schema today";
    }
    fn release(s: *abi.ArrowArrayStream) callconv(.c) void {
        releases += 1;
        s.release = null;
    }
    fn deviceGetNext(s: *abi.ArrowDeviceArrayStream, out: *abi.ArrowDeviceArray) callconv(.c) c_int {
        _ = s;
        out.* = .empty;
        if (left == 0) return 0;
        left -= 1;
        out.array = array();
        out.device_type = array_device;
        return 0;
    }
    fn deviceRelease(s: *abi.ArrowDeviceArrayStream) callconv(.c) void {
        releases += 1;
        s.release = null;
    }
};

test "a CPU stream wraps as a device stream and back, passing arrays and errors through" {
    Source.releases = 0;
    Source.left = 2;
    var plain: abi.ArrowArrayStream = .{ .get_schema = Source.getSchema, .get_next = Source.getNext, .get_last_error = Source.lastError, .release = Source.release, .private_data = null };
    var device: abi.ArrowDeviceArrayStream = .empty;
    try testing.expectEqual(Status.ok, cpuAsDevice(&plain, &device));
    try testing.expect(plain.release == null);
    var back: abi.ArrowArrayStream = .empty;
    try testing.expectEqual(Status.ok, deviceAsCpu(&device, &back));
    try testing.expect(device.release == null);

    var schema: abi.ArrowSchema = .empty;
    try testing.expectEqual(@as(c_int, 22), back.get_schema.?(&back, &schema));
    try testing.expectEqualStrings("no schema today", std.mem.span(back.get_last_error.?(&back).?));
    var out: abi.ArrowArray = undefined;
    for (0..2) |_| {
        try testing.expectEqual(@as(c_int, 0), back.get_next.?(&back, &out));
        try testing.expectEqual(@intFromPtr(&Source.values), @intFromPtr(out.buffers.?[1].?));
        out.release.?(&out);
    }
    try testing.expectEqual(@as(c_int, 0), back.get_next.?(&back, &out));
    try testing.expect(out.release == null);
    back.release.?(&back);
    try testing.expectEqual(@as(u32, 1), Source.releases);
}

test "device streams the host cannot read are refused, arrays on the wrong device too" {
    Source.releases = 0;
    var cuda: abi.ArrowDeviceArrayStream = .{ .device_type = abi.device_cuda, .get_schema = null, .get_next = Source.deviceGetNext, .get_last_error = null, .release = Source.deviceRelease, .private_data = null };
    var out: abi.ArrowArrayStream = .empty;
    cuda.get_schema = @ptrCast(&Source.getSchema);
    try testing.expectEqual(Status.unsupported, deviceAsCpu(&cuda, &out));
    try testing.expectEqual(@as(u32, 1), Source.releases);

    Source.left = 1;
    Source.array_device = abi.device_cuda_host;
    defer Source.array_device = abi.device_cpu;
    var cpu: abi.ArrowDeviceArrayStream = .{ .device_type = abi.device_cpu, .get_schema = @ptrCast(&Source.getSchema), .get_next = Source.deviceGetNext, .get_last_error = null, .release = Source.deviceRelease, .private_data = null };
    try testing.expectEqual(Status.ok, deviceAsCpu(&cpu, &out));
    var array: abi.ArrowArray = undefined;
    try testing.expectEqual(@as(c_int, 22), out.get_next.?(&out, &array));
    try testing.expect(std.mem.indexOf(u8, std.mem.span(out.get_last_error.?(&out).?), "CUDA_HOST") != null);
    out.release.?(&out);
    try testing.expectEqual(@as(u32, 2), Source.releases);
}
