//! ROCm through the HIP runtime in libamdhip64.so, opened at run time.
//!
//! - The soname follows the ROCm major version: libamdhip64.so, then .so.7,
//!   .so.6, .so.5.
//! - HIP selects devices per thread (hipSetDevice). Every call here saves
//!   the thread's current device, selects the one it needs, and restores
//!   the saved one after, so the caller's own HIP code is not disturbed.
//! - hipPointerGetAttributes' struct changed between ROCm 5 and 6; this
//!   uses the single-attribute hipPointerGetAttribute, whose memory-type
//!   numbers also changed (ROCm 6: unregistered 0, host 1, device 2,
//!   managed 3; ROCm 5: host 0, device 1, managed 4, and an error for
//!   plain host memory). The runtime version decides which applies.
//! - Errors name the call and the runtime's error:
//!   "[hipMalloc][hipErrorOutOfMemory] out of memory: ...".

const std = @import("std");
const builtin = @import("builtin");
const status = @import("../core/status.zig");
const dynlib = @import("dynlib.zig");
const runtime = @import("ops.zig");
const Status = status.Status;
const fail = status.fail;

pub const hipError_t = c_int;

pub const success: hipError_t = 0;
pub const error_out_of_memory: hipError_t = 2;
pub const error_insufficient_driver: hipError_t = 35;
pub const error_no_device: hipError_t = 100;
pub const error_not_ready: hipError_t = 600;

const memcpy_host_to_device: c_int = 1;
const memcpy_device_to_host: c_int = 2;
const memcpy_device_to_device: c_int = 3;
const event_disable_timing: c_uint = 2;
const stream_non_blocking: c_uint = 1;
const mem_attach_global: c_uint = 1;
const host_malloc_default: c_uint = 0;
const pointer_attribute_memory_type: c_int = 2;
const pointer_attribute_is_managed: c_int = 8;
const pointer_attribute_device_ordinal: c_int = 9;

/// HIP_VERSION of ROCm 6.0 (major * 10^7 + minor * 10^5 + patch).
const rocm6_version = 60000000;

const StreamCallback = *const fn (stream: runtime.Stream, result: hipError_t, context: ?*anyopaque) callconv(.c) void;

/// Every HIP function this library calls: the one list that declares them
/// and drives their lookup.
pub const Api = struct {
    hipInit: *const fn (flags: c_uint) callconv(.c) hipError_t,
    hipRuntimeGetVersion: *const fn (version: *c_int) callconv(.c) hipError_t,
    hipGetDeviceCount: *const fn (count: *c_int) callconv(.c) hipError_t,
    hipGetDevice: *const fn (device: *c_int) callconv(.c) hipError_t,
    hipSetDevice: *const fn (device: c_int) callconv(.c) hipError_t,
    hipDeviceGet: *const fn (device: *c_int, ordinal: c_int) callconv(.c) hipError_t,
    hipDeviceGetName: *const fn (name: [*]u8, length: c_int, device: c_int) callconv(.c) hipError_t,
    hipDeviceTotalMem: *const fn (bytes: *usize, device: c_int) callconv(.c) hipError_t,
    hipMalloc: *const fn (out: *?*anyopaque, size: usize) callconv(.c) hipError_t,
    hipFree: *const fn (memory: ?*anyopaque) callconv(.c) hipError_t,
    hipHostMalloc: *const fn (out: *?*anyopaque, size: usize, flags: c_uint) callconv(.c) hipError_t,
    hipHostFree: *const fn (memory: ?*anyopaque) callconv(.c) hipError_t,
    hipHostRegister: *const fn (pointer: ?*anyopaque, size: usize, flags: c_uint) callconv(.c) hipError_t,
    hipHostUnregister: *const fn (pointer: ?*anyopaque) callconv(.c) hipError_t,
    hipMallocManaged: *const fn (out: *?*anyopaque, size: usize, flags: c_uint) callconv(.c) hipError_t,
    hipMemcpy: *const fn (dst: ?*anyopaque, src: ?*const anyopaque, size: usize, kind: c_int) callconv(.c) hipError_t,
    hipMemcpyAsync: *const fn (dst: ?*anyopaque, src: ?*const anyopaque, size: usize, kind: c_int, stream: runtime.Stream) callconv(.c) hipError_t,
    hipStreamCreateWithFlags: *const fn (out: *runtime.Stream, flags: c_uint) callconv(.c) hipError_t,
    hipStreamDestroy: *const fn (stream: runtime.Stream) callconv(.c) hipError_t,
    hipStreamSynchronize: *const fn (stream: runtime.Stream) callconv(.c) hipError_t,
    hipStreamWaitEvent: *const fn (stream: runtime.Stream, event: runtime.Event, flags: c_uint) callconv(.c) hipError_t,
    hipStreamAddCallback: *const fn (stream: runtime.Stream, callback: StreamCallback, context: ?*anyopaque, flags: c_uint) callconv(.c) hipError_t,
    hipEventCreateWithFlags: *const fn (out: *runtime.Event, flags: c_uint) callconv(.c) hipError_t,
    hipEventRecord: *const fn (event: runtime.Event, stream: runtime.Stream) callconv(.c) hipError_t,
    hipEventSynchronize: *const fn (event: runtime.Event) callconv(.c) hipError_t,
    hipEventQuery: *const fn (event: runtime.Event) callconv(.c) hipError_t,
    hipEventDestroy: *const fn (event: runtime.Event) callconv(.c) hipError_t,
    hipPointerGetAttribute: *const fn (data: ?*anyopaque, attribute: c_int, pointer: ?*anyopaque) callconv(.c) hipError_t,
    hipGetErrorName: *const fn (result: hipError_t) callconv(.c) ?[*:0]const u8,
    hipGetErrorString: *const fn (result: hipError_t) callconv(.c) ?[*:0]const u8,
};

/// Set once by `load` (under the runtime's lock); read-only afterwards.
var api: Api = undefined;
var runtime_version: c_int = 0;

pub const default_library_names = [_][:0]const u8{ "libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5" };

fn load(path: ?[]const u8, out: *runtime.LoadInfo) Status {
    var path_z: [512:0]u8 = @splat(0);
    var candidates_buffer: [1][:0]const u8 = undefined;
    const candidates: []const [:0]const u8 = if (path) |p| blk: {
        if (p.len >= path_z.len) return fail(.invalid_argument, "HIP library path is longer than {d} bytes", .{path_z.len - 1});
        @memcpy(path_z[0..p.len], p);
        candidates_buffer[0] = path_z[0..p.len :0];
        break :blk &candidates_buffer;
    } else if (builtin.os.tag == .macos)
        return fail(.device_unavailable, "ROCm is not available on macOS: AMD's HIP runtime does not exist there (set ARROW_DEVICE_HIP_LIBRARY to load a compatible library anyway)", .{})
    else
        &default_library_names;

    var attempts: dynlib.Attempts = .{};
    const opened = dynlib.open(candidates, &attempts) orelse
        return fail(.device_unavailable, "ROCm is not available: the HIP runtime could not be loaded (tried {s}). Install ROCm, or set ARROW_DEVICE_HIP_LIBRARY to the path of libamdhip64.so", .{attempts.slice()});
    const handle = opened.handle;
    const loaded_from: []const u8 = opened.path;

    var missing: []const u8 = "";
    const table = dynlib.loadTable(Api, handle, &missing) orelse {
        dynlib.close(handle);
        return fail(.device_unavailable, "ROCm is not available: {s} has no symbol {s} (not a HIP runtime, or too old); nothing was loaded", .{ loaded_from, missing });
    };

    const init_result = table.hipInit(0);
    if (init_result != success) {
        dynlib.close(handle);
        return switch (init_result) {
            error_insufficient_driver => fail(.device_unavailable, "ROCm is not available: the amdgpu driver is too old for {s} (hipInit returned hipErrorInsufficientDriver, 35)", .{loaded_from}),
            error_no_device => fail(.device_unavailable, "ROCm is not available: no ROCm device found (hipInit returned hipErrorNoDevice, 100; runtime {s})", .{loaded_from}),
            else => fail(.device_unavailable, "ROCm is not available: hipInit failed with {s} ({d}; runtime {s})", .{ errorNameOf(&table, init_result), init_result, loaded_from }),
        };
    }
    var version: c_int = 0;
    if (table.hipRuntimeGetVersion(&version) != success) version = 0;
    var count: c_int = 0;
    const count_result = table.hipGetDeviceCount(&count);
    if (count_result != success or count <= 0) {
        dynlib.close(handle);
        return fail(.device_unavailable, "ROCm is not available: no ROCm device found (hipGetDeviceCount: {d} devices, {s}; runtime {s})", .{ count, errorNameOf(&table, count_result), loaded_from });
    }
    api = table;
    runtime_version = version;
    out.device_count = @min(count, runtime.max_devices);
    out.version = version;
    const n = @min(loaded_from.len, out.library_path.len - 1);
    @memcpy(out.library_path[0..n], loaded_from[0..n]);
    return .ok;
}

fn errorNameOf(table: *const Api, result: hipError_t) []const u8 {
    return if (table.hipGetErrorName(result)) |name| std.mem.span(name) else "hipErrorUnknown";
}

fn check(result: hipError_t, comptime call: []const u8, comptime what: []const u8, args: anytype) Status {
    if (result == success) return .ok;
    const code: Status = if (result == error_out_of_memory) .out_of_memory else .device_error;
    const text = if (api.hipGetErrorString(result)) |t| std.mem.span(t) else "unknown error";
    return fail(code, "[" ++ call ++ "][{s}] {s}: " ++ what, .{ errorNameOf(&api, result), text } ++ args);
}

/// The thread's device before `enter`, restored by `leave`.
threadlocal var saved_device: c_int = 0;

fn enter(device: i32) Status {
    const got = check(api.hipGetDevice(&saved_device), "hipGetDevice", "selecting device {d}", .{device});
    if (got != .ok) return got;
    return check(api.hipSetDevice(device), "hipSetDevice", "device {d}", .{device});
}

fn leave() void {
    _ = api.hipSetDevice(saved_device);
}

fn deviceInfo(device: i32, out: *runtime.DeviceInfo) Status {
    var handle: c_int = 0;
    const got = check(api.hipDeviceGet(&handle, device), "hipDeviceGet", "device {d}", .{device});
    if (got != .ok) return got;
    const named = check(api.hipDeviceGetName(&out.name, out.name.len - 1, handle), "hipDeviceGetName", "device {d}", .{device});
    if (named != .ok) return named;
    var total: usize = 0;
    const sized = check(api.hipDeviceTotalMem(&total, handle), "hipDeviceTotalMem", "device {d}", .{device});
    if (sized != .ok) return sized;
    out.total_memory_bytes = total;
    return .ok;
}

fn alloc(device: i32, kind: runtime.MemoryKind, size: usize, out: *usize) Status {
    const entered = enter(device);
    if (entered != .ok) return entered;
    defer leave();
    var address: ?*anyopaque = null;
    const s = switch (kind) {
        .device => check(api.hipMalloc(&address, size), "hipMalloc", "{d} bytes on device {d}", .{ size, device }),
        .pinned => check(api.hipHostMalloc(&address, size, host_malloc_default), "hipHostMalloc", "{d} pinned bytes for device {d}", .{ size, device }),
        .managed => check(api.hipMallocManaged(&address, size, mem_attach_global), "hipMallocManaged", "{d} managed bytes on device {d}", .{ size, device }),
    };
    out.* = @intFromPtr(address);
    return s;
}

fn free(device: i32, kind: runtime.MemoryKind, address: usize) Status {
    const entered = enter(device);
    if (entered != .ok) return entered;
    defer leave();
    return switch (kind) {
        .device, .managed => check(api.hipFree(@ptrFromInt(address)), "hipFree", "0x{x} on device {d}", .{ address, device }),
        .pinned => check(api.hipHostFree(@ptrFromInt(address)), "hipHostFree", "0x{x} for device {d}", .{ address, device }),
    };
}

fn hostRegister(device: i32, address: usize, size: usize) Status {
    const entered = enter(device);
    if (entered != .ok) return entered;
    defer leave();
    return check(api.hipHostRegister(@ptrFromInt(address), size, 0), "hipHostRegister", "{d} bytes at 0x{x} for device {d}", .{ size, address, device });
}

fn hostUnregister(device: i32, address: usize) Status {
    const entered = enter(device);
    if (entered != .ok) return entered;
    defer leave();
    return check(api.hipHostUnregister(@ptrFromInt(address)), "hipHostUnregister", "0x{x} for device {d}", .{ address, device });
}

fn copy(device: i32, direction: runtime.Direction, dst: usize, src: usize, size: usize, stream: runtime.Stream, is_async: bool) Status {
    const entered = enter(device);
    if (entered != .ok) return entered;
    defer leave();
    const kind: c_int = switch (direction) {
        .host_to_device => memcpy_host_to_device,
        .device_to_host => memcpy_device_to_host,
        .device_to_device => memcpy_device_to_device,
    };
    const what = "{d} bytes from 0x{x} to 0x{x} ({s}, device {d})";
    const args = .{ size, src, dst, @tagName(direction), device };
    if (is_async) return check(api.hipMemcpyAsync(@ptrFromInt(dst), @ptrFromInt(src), size, kind, stream), "hipMemcpyAsync", what, args);
    return check(api.hipMemcpy(@ptrFromInt(dst), @ptrFromInt(src), size, kind), "hipMemcpy", what, args);
}

fn streamCreate(device: i32, out: *runtime.Stream) Status {
    const entered = enter(device);
    if (entered != .ok) return entered;
    defer leave();
    return check(api.hipStreamCreateWithFlags(out, stream_non_blocking), "hipStreamCreateWithFlags", "device {d}", .{device});
}

fn streamDestroy(device: i32, stream: runtime.Stream) Status {
    const entered = enter(device);
    if (entered != .ok) return entered;
    defer leave();
    return check(api.hipStreamDestroy(stream), "hipStreamDestroy", "device {d}", .{device});
}

fn streamSynchronize(device: i32, stream: runtime.Stream) Status {
    const entered = enter(device);
    if (entered != .ok) return entered;
    defer leave();
    return check(api.hipStreamSynchronize(stream), "hipStreamSynchronize", "device {d}", .{device});
}

fn streamWaitEvent(device: i32, stream: runtime.Stream, event: runtime.Event) Status {
    const entered = enter(device);
    if (entered != .ok) return entered;
    defer leave();
    return check(api.hipStreamWaitEvent(stream, event, 0), "hipStreamWaitEvent", "device {d}", .{device});
}

/// hipStreamAddCallback passes (stream, status, context); this carries the
/// caller's function and context to it.
const HostCall = struct { function: runtime.HostFn, context: ?*anyopaque };

fn runHostCall(stream: runtime.Stream, result: hipError_t, context: ?*anyopaque) callconv(.c) void {
    _ = stream;
    _ = result; // the function runs either way: it releases what the work held
    const call: *HostCall = @ptrCast(@alignCast(context.?));
    const function = call.function;
    const inner = call.context;
    std.heap.c_allocator.destroy(call);
    function(inner);
}

fn launchHostFn(device: i32, stream: runtime.Stream, function: runtime.HostFn, context: ?*anyopaque) Status {
    const call = std.heap.c_allocator.create(HostCall) catch return fail(.out_of_memory, "out of memory queueing a host callback", .{});
    call.* = .{ .function = function, .context = context };
    const entered = enter(device);
    if (entered != .ok) {
        std.heap.c_allocator.destroy(call);
        return entered;
    }
    defer leave();
    const added = check(api.hipStreamAddCallback(stream, runHostCall, call, 0), "hipStreamAddCallback", "device {d}", .{device});
    if (added != .ok) std.heap.c_allocator.destroy(call);
    return added;
}

fn eventCreate(device: i32, out: *runtime.Event) Status {
    const entered = enter(device);
    if (entered != .ok) return entered;
    defer leave();
    return check(api.hipEventCreateWithFlags(out, event_disable_timing), "hipEventCreateWithFlags", "device {d}", .{device});
}

fn eventRecord(device: i32, event: runtime.Event, stream: runtime.Stream) Status {
    const entered = enter(device);
    if (entered != .ok) return entered;
    defer leave();
    return check(api.hipEventRecord(event, stream), "hipEventRecord", "device {d}", .{device});
}

fn eventSynchronize(device: i32, event: runtime.Event) Status {
    const entered = enter(device);
    if (entered != .ok) return entered;
    defer leave();
    return check(api.hipEventSynchronize(event), "hipEventSynchronize", "device {d}", .{device});
}

fn eventQuery(device: i32, event: runtime.Event, ready: *bool) Status {
    const entered = enter(device);
    if (entered != .ok) return entered;
    defer leave();
    const result = api.hipEventQuery(event);
    if (result == error_not_ready) {
        ready.* = false;
        return .ok;
    }
    ready.* = result == success;
    return check(result, "hipEventQuery", "device {d}", .{device});
}

fn eventDestroy(device: i32, event: runtime.Event) Status {
    const entered = enter(device);
    if (entered != .ok) return entered;
    defer leave();
    return check(api.hipEventDestroy(event), "hipEventDestroy", "device {d}", .{device});
}

fn pointerQuery(address: usize, out: *runtime.PointerInfo) Status {
    var memory_type: u64 = 0;
    const typed = api.hipPointerGetAttribute(@ptrCast(&memory_type), pointer_attribute_memory_type, @ptrFromInt(address));
    const rocm6 = runtime_version >= rocm6_version;
    if (typed != success) {
        // ROCm 5 fails for memory it does not know: plain host memory.
        if (!rocm6) {
            out.* = .{ .kind = .host, .device_id = -1 };
            return .ok;
        }
        return check(typed, "hipPointerGetAttribute", "memory type of 0x{x}", .{address});
    }
    var is_managed: u64 = 0;
    _ = api.hipPointerGetAttribute(@ptrCast(&is_managed), pointer_attribute_is_managed, @ptrFromInt(address));
    var ordinal: i64 = -1;
    var ordinal_word: u64 = 0;
    if (api.hipPointerGetAttribute(@ptrCast(&ordinal_word), pointer_attribute_device_ordinal, @ptrFromInt(address)) == success)
        ordinal = @as(i32, @bitCast(@as(u32, @truncate(ordinal_word))));
    const device_id: i32 = @intCast(ordinal);
    const kind: runtime.PointerKind = if (is_managed != 0) .managed else if (rocm6) switch (memory_type) {
        1 => .pinned,
        2 => .device,
        3 => .managed,
        else => .host,
    } else switch (memory_type) {
        0 => .pinned,
        1 => .device,
        4 => .managed,
        else => .host,
    };
    out.* = .{ .kind = kind, .device_id = if (kind == .host) -1 else device_id };
    return .ok;
}

pub const ops: runtime.Ops = .{
    .load = load,
    .deviceInfo = deviceInfo,
    .alloc = alloc,
    .free = free,
    .copy = copy,
    .streamCreate = streamCreate,
    .streamDestroy = streamDestroy,
    .streamSynchronize = streamSynchronize,
    .streamWaitEvent = streamWaitEvent,
    .launchHostFn = launchHostFn,
    .eventCreate = eventCreate,
    .eventRecord = eventRecord,
    .eventSynchronize = eventSynchronize,
    .eventQuery = eventQuery,
    .eventDestroy = eventDestroy,
    .pointerQuery = pointerQuery,
    .hostRegister = hostRegister,
    .hostUnregister = hostUnregister,
};

test "a missing HIP runtime is an explained state" {
    var info: runtime.LoadInfo = .{};
    try std.testing.expectEqual(Status.device_unavailable, load("/nonexistent/libamdhip64.so", &info));
    const message = std.mem.span(status.lastMessage());
    try std.testing.expect(std.mem.indexOf(u8, message, "/nonexistent/libamdhip64.so") != null);
    try std.testing.expect(std.mem.indexOf(u8, message, "ARROW_DEVICE_HIP_LIBRARY") != null);
}
