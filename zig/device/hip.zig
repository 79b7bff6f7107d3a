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
const status = @import("../core/status.zig");
const dynlib = @import("dynlib.zig");
const device_ops = @import("ops.zig");
const driver = @import("driver.zig");
const Status = status.Status;
const fail = status.fail;

pub const hipError_t = driver.Result;


const memcpy_host_to_device: c_int = 1;
const memcpy_device_to_host: c_int = 2;
const memcpy_device_to_device: c_int = 3;
const host_malloc_default: c_uint = 0;

/// HIP_VERSION of ROCm 6.0 (major * 10^7 + minor * 10^5 + patch).
const rocm6_version = 60000000;

const StreamCallback = *const fn (stream: device_ops.Stream, result: hipError_t, context: ?*anyopaque) callconv(.c) void;

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
    hipMemcpyAsync: *const fn (dst: ?*anyopaque, src: ?*const anyopaque, size: usize, kind: c_int, stream: device_ops.Stream) callconv(.c) hipError_t,
    hipStreamCreateWithFlags: *const fn (out: *device_ops.Stream, flags: c_uint) callconv(.c) hipError_t,
    hipStreamDestroy: *const fn (stream: device_ops.Stream) callconv(.c) hipError_t,
    hipStreamSynchronize: *const fn (stream: device_ops.Stream) callconv(.c) hipError_t,
    hipStreamWaitEvent: *const fn (stream: device_ops.Stream, event: device_ops.Event, flags: c_uint) callconv(.c) hipError_t,
    hipStreamAddCallback: *const fn (stream: device_ops.Stream, callback: StreamCallback, context: ?*anyopaque, flags: c_uint) callconv(.c) hipError_t,
    hipEventCreateWithFlags: *const fn (out: *device_ops.Event, flags: c_uint) callconv(.c) hipError_t,
    hipEventRecord: *const fn (event: device_ops.Event, stream: device_ops.Stream) callconv(.c) hipError_t,
    hipEventSynchronize: *const fn (event: device_ops.Event) callconv(.c) hipError_t,
    hipEventQuery: *const fn (event: device_ops.Event) callconv(.c) hipError_t,
    hipEventDestroy: *const fn (event: device_ops.Event) callconv(.c) hipError_t,
    hipPointerGetAttribute: *const fn (data: ?*anyopaque, attribute: c_int, pointer: ?*anyopaque) callconv(.c) hipError_t,
    hipGetErrorName: *const fn (result: hipError_t) callconv(.c) ?[*:0]const u8,
    hipGetErrorString: *const fn (result: hipError_t) callconv(.c) ?[*:0]const u8,
};

/// Set once by `load` (under the runtime's lock); read-only afterwards.
pub var api: Api = undefined;
var runtime_version: c_int = 0;

/// What the kinds table (kinds.zig) and the manifest read of this driver.
pub const label = "ROCm";
pub const library_env_var = "ARROW_DEVICE_HIP_LIBRARY";
pub const default_library_names = [_][:0]const u8{ "libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5" };
/// hipRuntimeGetVersion: 60342134 is 6.3.
pub const version_scale: device_ops.VersionScale = .{ .major_div = 10_000_000, .minor_div = 100_000 };

pub const unopened: driver.Unopened = .{
    .path_too_long = "HIP library path is longer than {d} bytes",
    .on_macos = "ROCm is not available on macOS: AMD's HIP runtime does not exist there (set " ++ library_env_var ++ " to load a compatible library anyway)",
    .not_loaded = "ROCm is not available: the HIP runtime could not be loaded (tried {s}). Install ROCm, or set " ++ library_env_var ++ " to the path of " ++ default_library_names[0],
    .missing_symbol = "ROCm is not available: {s} has no symbol {s} (not a HIP runtime, or too old); nothing was loaded",
};

/// Every symbol of `Api`, or null with the first missing one's name.
pub fn resolve(handle: *anyopaque, missing: *[]const u8) ?Api {
    return dynlib.loadTable(Api, handle, missing);
}

/// Initializes the runtime in `table` (from `loaded_from`) and counts its
/// devices; the runtime version decides how pointer queries read.
pub fn start(table: *const Api, loaded_from: []const u8, device_count: *c_int, hip_version: *c_int) Status {
    const init_result = table.hipInit(0);
    if (init_result != driver.success) {
        return switch (init_result) {
            driver.error_insufficient_driver => fail(.device_unavailable, "ROCm is not available: the amdgpu driver is too old for {s} (hipInit returned hipErrorInsufficientDriver, 35)", .{loaded_from}),
            driver.error_no_device => fail(.device_unavailable, "ROCm is not available: no ROCm device found (hipInit returned hipErrorNoDevice, 100; runtime {s})", .{loaded_from}),
            else => fail(.device_unavailable, "ROCm is not available: hipInit failed with {s} ({d}; runtime {s})", .{ errorNameIn(table, init_result), init_result, loaded_from }),
        };
    }
    var version: c_int = 0;
    if (table.hipRuntimeGetVersion(&version) != driver.success) version = 0;
    var count: c_int = 0;
    const count_result = table.hipGetDeviceCount(&count);
    if (count_result != driver.success or count <= 0)
        return fail(.device_unavailable, "ROCm is not available: no ROCm device found (hipGetDeviceCount: {d} devices, {s}; runtime {s})", .{ count, errorNameIn(table, count_result), loaded_from });
    runtime_version = version;
    device_count.* = count;
    hip_version.* = version;
    return .ok;
}

fn errorNameIn(table: *const Api, result: hipError_t) []const u8 {
    return if (table.hipGetErrorName(result)) |name| std.mem.span(name) else "hipErrorUnknown";
}

pub fn errorName(result: hipError_t) []const u8 {
    return errorNameIn(&api, result);
}

pub fn errorText(result: hipError_t) []const u8 {
    return if (api.hipGetErrorString(result)) |text| std.mem.span(text) else "unknown error";
}

/// This driver's symbol for each call all drivers make alike
/// (driver.zig's `shared_jobs`).
pub const shared_calls = .{
    .device_get = "hipDeviceGet",
    .device_get_name = "hipDeviceGetName",
    .device_total_mem = "hipDeviceTotalMem",
    .host_register = "hipHostRegister",
    .host_unregister = "hipHostUnregister",
    .free_device = "hipFree",
    .free_pinned = "hipHostFree",
    .stream_create = "hipStreamCreateWithFlags",
    .stream_destroy = "hipStreamDestroy",
    .stream_synchronize = "hipStreamSynchronize",
    .stream_wait_event = "hipStreamWaitEvent",
    .event_create = "hipEventCreateWithFlags",
    .event_record = "hipEventRecord",
    .event_synchronize = "hipEventSynchronize",
    .event_query = "hipEventQuery",
    .event_destroy = "hipEventDestroy",
};

const calls = driver.Driver(@This());
const check = calls.check;

/// The thread's device before `enter`, restored by `leave`.
threadlocal var saved_device: c_int = 0;

/// The thread's device before a `holding.hold`, restored by its unhold.
threadlocal var held_saved_device: c_int = 0;

/// Makes `device` current on this thread until `leave` (nothing to do
/// while the thread holds it: `holding`).
pub fn enter(device: i32) Status {
    return holding.enter(device);
}

pub fn leave() void {
    holding.leave();
}

pub const holding = driver.Holding(struct {
    pub fn enterRaw(device: i32) Status {
        const got = check(api.hipGetDevice(&saved_device), "hipGetDevice", "selecting device {d}", .{device});
        if (got != .ok) return got;
        return check(api.hipSetDevice(device), "hipSetDevice", "device {d}", .{device});
    }
    pub fn leaveRaw() void {
        _ = api.hipSetDevice(saved_device);
    }
    pub fn saveHeld() void {
        held_saved_device = saved_device;
    }
    pub fn restoreHeld() void {
        saved_device = held_saved_device;
    }
});

/// Runs with the device current (driver.zig enters around it).
fn alloc(device: i32, kind: device_ops.MemoryKind, size: usize, out: *usize) Status {
    var address: ?*anyopaque = null;
    const s = switch (kind) {
        .device => check(api.hipMalloc(&address, size), "hipMalloc", "{d} bytes on device {d}", .{ size, device }),
        .pinned => check(api.hipHostMalloc(&address, size, host_malloc_default), "hipHostMalloc", "{d} pinned bytes for device {d}", .{ size, device }),
        .managed => check(api.hipMallocManaged(&address, size, driver.mem_attach_global), "hipMallocManaged", "{d} managed bytes on device {d}", .{ size, device }),
    };
    out.* = @intFromPtr(address);
    return s;
}

/// Runs with the device current (driver.zig enters around it).
fn copy(device: i32, direction: device_ops.Direction, dst: usize, src: usize, size: usize, stream: device_ops.Stream, is_async: bool) Status {
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

/// hipStreamAddCallback passes (stream, status, context); this carries the
/// caller's function and context to it.
const HostCall = struct { function: device_ops.HostFn, context: ?*anyopaque };

fn runHostCall(stream: device_ops.Stream, result: hipError_t, context: ?*anyopaque) callconv(.c) void {
    _ = stream;
    _ = result; // the function runs either way: it releases what the work held
    const call: *HostCall = @ptrCast(@alignCast(context.?));
    const function = call.function;
    const inner = call.context;
    std.heap.c_allocator.destroy(call);
    function(inner);
}

fn launchHostFn(device: i32, stream: device_ops.Stream, function: device_ops.HostFn, context: ?*anyopaque) Status {
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

fn pointerQuery(address: usize, out: *device_ops.PointerInfo) Status {
    var memory_type: u64 = 0;
    const typed = api.hipPointerGetAttribute(@ptrCast(&memory_type), driver.pointer_attribute_memory_type, @ptrFromInt(address));
    const rocm6 = runtime_version >= rocm6_version;
    if (typed != driver.success) {
        // ROCm 5 fails for memory it does not know: plain host memory.
        if (!rocm6) {
            out.* = .{ .kind = .host, .device_id = -1 };
            return .ok;
        }
        return check(typed, "hipPointerGetAttribute", "memory type of 0x{x}", .{address});
    }
    var is_managed: u64 = 0;
    _ = api.hipPointerGetAttribute(@ptrCast(&is_managed), driver.pointer_attribute_is_managed, @ptrFromInt(address));
    var ordinal: i64 = -1;
    var ordinal_word: u64 = 0;
    if (api.hipPointerGetAttribute(@ptrCast(&ordinal_word), driver.pointer_attribute_device_ordinal, @ptrFromInt(address)) == driver.success)
        ordinal = @as(i32, @bitCast(@as(u32, @truncate(ordinal_word))));
    const device_id: i32 = @intCast(ordinal);
    const kind: device_ops.PointerKind = if (is_managed != 0) .managed else if (rocm6) switch (memory_type) {
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

pub const ops = calls.ops(.{ .alloc = alloc, .copy = copy, .launchHostFn = launchHostFn, .pointerQuery = pointerQuery });
