//! CUDA through the driver API in libcuda.so.1, opened at run time.
//!
//! - Versioned symbols: `cuMemAlloc` is the CUDA 2.0 ABI with 32-bit
//!   sizes; the `_v2` names are today's. The table names each symbol
//!   exactly as it is looked up.
//! - Primary contexts (as the runtime API, cudf, CuPy and PyTorch use):
//!   retained once per device on first use and kept for the life of the
//!   process; pushed around every call that needs a context and popped
//!   after, so the calling thread's context stack is left as it was.
//! - Errors name the call and the driver's error:
//!   "[cuMemAlloc_v2][CUDA_ERROR_OUT_OF_MEMORY] out of memory: ...".

const std = @import("std");
const builtin = @import("builtin");
const status = @import("../core/status.zig");
const sync = @import("../core/sync.zig");
const dynlib = @import("dynlib.zig");
const runtime = @import("ops.zig");
const debug = @import("debug.zig");
const Status = status.Status;
const fail = status.fail;

pub const CUresult = c_int;
pub const CUdevice = c_int;
pub const CUdeviceptr = u64;
pub const CUcontext = ?*anyopaque;

pub const success: CUresult = 0;
pub const error_out_of_memory: CUresult = 2;
pub const error_stub_library: CUresult = 34;
pub const error_insufficient_driver: CUresult = 35;
pub const error_no_device: CUresult = 100;
pub const error_not_ready: CUresult = 600;

const event_disable_timing: c_uint = 2;
const stream_non_blocking: c_uint = 1;
const mem_attach_global: c_uint = 1;
const pointer_attribute_memory_type: c_int = 2;
const pointer_attribute_is_managed: c_int = 8;
const pointer_attribute_device_ordinal: c_int = 9;
const memorytype_host: u64 = 1;
const memorytype_device: u64 = 2;
const memorytype_unified: u64 = 4;

/// The oldest driver this library supports, and the one place that says
/// so (docs/devices.md repeats it): every symbol in `Api` exists in it
/// (the newest, cuLaunchHostFunc, arrived with CUDA 10.0).
pub const min_driver_version = 10000;

/// Every driver function this library calls, by its versioned symbol name,
/// and nothing it does not call (a symbol looked up is a symbol required):
/// the one list that declares them and drives their lookup. Primary
/// contexts are retained for the life of the process, so
/// cuDevicePrimaryCtxRelease_v2 (CUDA 11.0) is not among them.
pub const Api = struct {
    cuInit: *const fn (flags: c_uint) callconv(.c) CUresult,
    cuDriverGetVersion: *const fn (version: *c_int) callconv(.c) CUresult,
    cuDeviceGetCount: *const fn (count: *c_int) callconv(.c) CUresult,
    cuDeviceGet: *const fn (device: *CUdevice, ordinal: c_int) callconv(.c) CUresult,
    cuDeviceGetName: *const fn (name: [*]u8, length: c_int, device: CUdevice) callconv(.c) CUresult,
    cuDeviceTotalMem_v2: *const fn (bytes: *usize, device: CUdevice) callconv(.c) CUresult,
    cuDevicePrimaryCtxRetain: *const fn (context: *CUcontext, device: CUdevice) callconv(.c) CUresult,
    cuCtxPushCurrent_v2: *const fn (context: CUcontext) callconv(.c) CUresult,
    cuCtxPopCurrent_v2: *const fn (context: *CUcontext) callconv(.c) CUresult,
    cuMemAlloc_v2: *const fn (out: *CUdeviceptr, size: usize) callconv(.c) CUresult,
    cuMemFree_v2: *const fn (memory: CUdeviceptr) callconv(.c) CUresult,
    cuMemAllocHost_v2: *const fn (out: *?*anyopaque, size: usize) callconv(.c) CUresult,
    cuMemFreeHost: *const fn (memory: ?*anyopaque) callconv(.c) CUresult,
    cuMemHostRegister_v2: *const fn (pointer: ?*anyopaque, size: usize, flags: c_uint) callconv(.c) CUresult,
    cuMemHostUnregister: *const fn (pointer: ?*anyopaque) callconv(.c) CUresult,
    cuMemAllocManaged: *const fn (out: *CUdeviceptr, size: usize, flags: c_uint) callconv(.c) CUresult,
    cuMemcpyHtoD_v2: *const fn (dst: CUdeviceptr, src: ?*const anyopaque, size: usize) callconv(.c) CUresult,
    cuMemcpyDtoH_v2: *const fn (dst: ?*anyopaque, src: CUdeviceptr, size: usize) callconv(.c) CUresult,
    cuMemcpyDtoD_v2: *const fn (dst: CUdeviceptr, src: CUdeviceptr, size: usize) callconv(.c) CUresult,
    cuMemcpyHtoDAsync_v2: *const fn (dst: CUdeviceptr, src: ?*const anyopaque, size: usize, stream: runtime.Stream) callconv(.c) CUresult,
    cuMemcpyDtoHAsync_v2: *const fn (dst: ?*anyopaque, src: CUdeviceptr, size: usize, stream: runtime.Stream) callconv(.c) CUresult,
    cuMemcpyDtoDAsync_v2: *const fn (dst: CUdeviceptr, src: CUdeviceptr, size: usize, stream: runtime.Stream) callconv(.c) CUresult,
    cuStreamCreate: *const fn (out: *runtime.Stream, flags: c_uint) callconv(.c) CUresult,
    cuStreamDestroy_v2: *const fn (stream: runtime.Stream) callconv(.c) CUresult,
    cuStreamSynchronize: *const fn (stream: runtime.Stream) callconv(.c) CUresult,
    cuStreamWaitEvent: *const fn (stream: runtime.Stream, event: runtime.Event, flags: c_uint) callconv(.c) CUresult,
    cuLaunchHostFunc: *const fn (stream: runtime.Stream, function: runtime.HostFn, context: ?*anyopaque) callconv(.c) CUresult,
    cuEventCreate: *const fn (out: *runtime.Event, flags: c_uint) callconv(.c) CUresult,
    cuEventRecord: *const fn (event: runtime.Event, stream: runtime.Stream) callconv(.c) CUresult,
    cuEventSynchronize: *const fn (event: runtime.Event) callconv(.c) CUresult,
    cuEventQuery: *const fn (event: runtime.Event) callconv(.c) CUresult,
    cuEventDestroy_v2: *const fn (event: runtime.Event) callconv(.c) CUresult,
    cuPointerGetAttributes: *const fn (count: c_uint, attributes: [*]const c_int, data: [*]?*anyopaque, pointer: CUdeviceptr) callconv(.c) CUresult,
    cuGetErrorName: *const fn (result: CUresult, name: *?[*:0]const u8) callconv(.c) CUresult,
    cuGetErrorString: *const fn (result: CUresult, text: *?[*:0]const u8) callconv(.c) CUresult,
};

/// Set once by `load` (under the runtime's lock) before the runtime is
/// marked loaded; read-only afterwards.
var api: Api = undefined;
var contexts: [runtime.max_devices]std.atomic.Value(CUcontext) = @splat(.init(null));
var contexts_mutex: sync.Mutex = .{};

pub const default_library_names = [_][:0]const u8{ "libcuda.so.1", "libcuda.so" };

fn load(path: ?[]const u8, out: *runtime.LoadInfo) Status {
    var path_z: [512:0]u8 = @splat(0);
    var candidates_buffer: [1][:0]const u8 = undefined;
    const candidates: []const [:0]const u8 = if (path) |p| blk: {
        if (p.len >= path_z.len) return fail(.invalid_argument, "CUDA library path is longer than {d} bytes", .{path_z.len - 1});
        @memcpy(path_z[0..p.len], p);
        candidates_buffer[0] = path_z[0..p.len :0];
        break :blk &candidates_buffer;
    } else if (builtin.os.tag == .macos)
        return fail(.device_unavailable, "CUDA is not available on macOS: NVIDIA's CUDA driver does not exist there (set ARROW_DEVICE_CUDA_LIBRARY to load a compatible library anyway)", .{})
    else
        &default_library_names;

    var attempts: dynlib.Attempts = .{};
    const opened = dynlib.open(candidates, &attempts) orelse
        return fail(.device_unavailable, "CUDA is not available: the driver library could not be loaded (tried {s}). Install the NVIDIA driver, or set ARROW_DEVICE_CUDA_LIBRARY to the path of libcuda.so.1", .{attempts.slice()});
    const handle = opened.handle;
    const loaded_from: []const u8 = opened.path;

    var missing: []const u8 = "";
    if (debug.makes(.@"unversioned-symbols")) {
        // The mistake: the CUDA 2.0 / 3.x names instead of the _v2 ones.
        inline for (@typeInfo(Api).@"struct".field_names) |name| {
            if (comptime std.mem.endsWith(u8, name, "_v2")) {
                const old_name = comptime std.fmt.comptimePrint("{s}", .{name[0 .. name.len - 3]});
                if (missing.len == 0 and std.c.dlsym(handle, old_name) == null) missing = old_name;
            }
        }
    }
    const found: ?Api = if (missing.len > 0) null else dynlib.loadTable(Api, handle, &missing);
    const table = found orelse {
        dynlib.close(handle);
        return fail(.device_unavailable, "CUDA is not available: {s} has no symbol {s} (the driver is older than CUDA {d}.{d}, or not a CUDA driver); nothing was loaded", .{ loaded_from, missing, min_driver_version / 1000, min_driver_version % 1000 / 10 });
    };

    const init_result = table.cuInit(0);
    if (init_result != success) {
        dynlib.close(handle);
        return switch (init_result) {
            error_stub_library => fail(.device_unavailable, "CUDA is not available: {s} is the CUDA stub library, not a driver (cuInit returned CUDA_ERROR_STUB_LIBRARY, 34); install the NVIDIA driver", .{loaded_from}),
            error_insufficient_driver => fail(.device_unavailable, "CUDA is not available: the driver in {s} is too old (cuInit returned CUDA_ERROR_INSUFFICIENT_DRIVER, 35); update the NVIDIA driver", .{loaded_from}),
            error_no_device => fail(.device_unavailable, "CUDA is not available: no CUDA device found (cuInit returned CUDA_ERROR_NO_DEVICE, 100; driver {s})", .{loaded_from}),
            else => fail(.device_unavailable, "CUDA is not available: cuInit failed with {s} ({d}; driver {s})", .{ errorName(&table, init_result), init_result, loaded_from }),
        };
    }
    var version: c_int = 0;
    if (table.cuDriverGetVersion(&version) != success or version < min_driver_version) {
        dynlib.close(handle);
        return fail(.device_unavailable, "CUDA is not available: the driver in {s} reports version {d}, this library needs {d} or later; update the NVIDIA driver", .{ loaded_from, version, min_driver_version });
    }
    var count: c_int = 0;
    const count_result = table.cuDeviceGetCount(&count);
    if (count_result != success or count <= 0) {
        dynlib.close(handle);
        return fail(.device_unavailable, "CUDA is not available: no CUDA device found (cuDeviceGetCount: {d} devices, {s}; driver {s})", .{ count, errorName(&table, count_result), loaded_from });
    }
    api = table;
    out.device_count = @min(count, runtime.max_devices);
    out.version = version;
    const n = @min(loaded_from.len, out.library_path.len - 1);
    @memcpy(out.library_path[0..n], loaded_from[0..n]);
    return .ok;
}

fn errorName(table: *const Api, result: CUresult) []const u8 {
    var name: ?[*:0]const u8 = null;
    if (table.cuGetErrorName(result, &name) != success) return "CUDA_ERROR_UNKNOWN";
    return if (name) |n| std.mem.span(n) else "CUDA_ERROR_UNKNOWN";
}

fn errorText(result: CUresult) []const u8 {
    var text: ?[*:0]const u8 = null;
    if (api.cuGetErrorString(result, &text) != success) return "unknown error";
    return if (text) |t| std.mem.span(t) else "unknown error";
}

/// Turns a failed driver call into a status with the call's and the
/// error's names: "[cuMemAlloc_v2][CUDA_ERROR_OUT_OF_MEMORY] out of memory: <what>".
fn check(result: CUresult, comptime call: []const u8, comptime what: []const u8, args: anytype) Status {
    if (result == success) return .ok;
    const code: Status = if (result == error_out_of_memory) .out_of_memory else .device_error;
    return fail(code, "[" ++ call ++ "][{s}] {s}: " ++ what, .{ errorName(&api, result), errorText(result) } ++ args);
}

/// The device's primary context, retained on first use.
fn primaryContext(device: i32) struct { Status, CUcontext } {
    const slot = &contexts[@intCast(device)];
    if (slot.load(.acquire)) |ctx| return .{ .ok, ctx };
    contexts_mutex.lock();
    defer contexts_mutex.unlock();
    if (slot.load(.acquire)) |ctx| return .{ .ok, ctx };
    var handle: CUdevice = 0;
    const got = check(api.cuDeviceGet(&handle, device), "cuDeviceGet", "device {d}", .{device});
    if (got != .ok) return .{ got, null };
    var ctx: CUcontext = null;
    const retained = check(api.cuDevicePrimaryCtxRetain(&ctx, handle), "cuDevicePrimaryCtxRetain", "device {d}", .{device});
    if (retained != .ok) return .{ retained, null };
    slot.store(ctx, .release);
    return .{ .ok, ctx };
}

/// Makes `device`'s primary context current on this thread until `leave`.
fn enter(device: i32) Status {
    if (debug.makes(.@"no-context-push")) return .ok;
    const found = primaryContext(device);
    if (found[0] != .ok) return found[0];
    return check(api.cuCtxPushCurrent_v2(found[1]), "cuCtxPushCurrent_v2", "device {d}", .{device});
}

fn leave() void {
    if (debug.makes(.@"no-context-push")) return;
    var popped: CUcontext = null;
    _ = api.cuCtxPopCurrent_v2(&popped);
}

fn deviceInfo(device: i32, out: *runtime.DeviceInfo) Status {
    var handle: CUdevice = 0;
    const got = check(api.cuDeviceGet(&handle, device), "cuDeviceGet", "device {d}", .{device});
    if (got != .ok) return got;
    const named = check(api.cuDeviceGetName(&out.name, out.name.len - 1, handle), "cuDeviceGetName", "device {d}", .{device});
    if (named != .ok) return named;
    var total: usize = 0;
    const sized = check(api.cuDeviceTotalMem_v2(&total, handle), "cuDeviceTotalMem_v2", "device {d}", .{device});
    if (sized != .ok) return sized;
    out.total_memory_bytes = total;
    return .ok;
}

fn alloc(device: i32, kind: runtime.MemoryKind, size: usize, out: *usize) Status {
    const entered = enter(device);
    if (entered != .ok) return entered;
    defer leave();
    switch (kind) {
        .device => {
            var address: CUdeviceptr = 0;
            const s = check(api.cuMemAlloc_v2(&address, size), "cuMemAlloc_v2", "{d} bytes on device {d}", .{ size, device });
            out.* = @intCast(address);
            return s;
        },
        .pinned => {
            var address: ?*anyopaque = null;
            const s = check(api.cuMemAllocHost_v2(&address, size), "cuMemAllocHost_v2", "{d} pinned bytes for device {d}", .{ size, device });
            out.* = @intFromPtr(address);
            return s;
        },
        .managed => {
            var address: CUdeviceptr = 0;
            const s = check(api.cuMemAllocManaged(&address, size, mem_attach_global), "cuMemAllocManaged", "{d} managed bytes on device {d}", .{ size, device });
            out.* = @intCast(address);
            return s;
        },
    }
}

fn free(device: i32, kind: runtime.MemoryKind, address: usize) Status {
    const entered = enter(device);
    if (entered != .ok) return entered;
    defer leave();
    return switch (kind) {
        .device, .managed => check(api.cuMemFree_v2(address), "cuMemFree_v2", "0x{x} on device {d}", .{ address, device }),
        .pinned => check(api.cuMemFreeHost(@ptrFromInt(address)), "cuMemFreeHost", "0x{x} for device {d}", .{ address, device }),
    };
}

fn copy(device: i32, direction: runtime.Direction, dst: usize, src: usize, size: usize, stream: runtime.Stream, is_async: bool) Status {
    const entered = enter(device);
    if (entered != .ok) return entered;
    defer leave();
    const what = "{d} bytes from 0x{x} to 0x{x} (device {d})";
    const args = .{ size, src, dst, device };
    if (is_async) return switch (direction) {
        .host_to_device => check(api.cuMemcpyHtoDAsync_v2(dst, @ptrFromInt(src), size, stream), "cuMemcpyHtoDAsync_v2", what, args),
        .device_to_host => check(api.cuMemcpyDtoHAsync_v2(@ptrFromInt(dst), src, size, stream), "cuMemcpyDtoHAsync_v2", what, args),
        .device_to_device => check(api.cuMemcpyDtoDAsync_v2(dst, src, size, stream), "cuMemcpyDtoDAsync_v2", what, args),
    };
    return switch (direction) {
        .host_to_device => check(api.cuMemcpyHtoD_v2(dst, @ptrFromInt(src), size), "cuMemcpyHtoD_v2", what, args),
        .device_to_host => check(api.cuMemcpyDtoH_v2(@ptrFromInt(dst), src, size), "cuMemcpyDtoH_v2", what, args),
        .device_to_device => check(api.cuMemcpyDtoD_v2(dst, src, size), "cuMemcpyDtoD_v2", what, args),
    };
}

fn hostRegister(device: i32, address: usize, size: usize) Status {
    const entered = enter(device);
    if (entered != .ok) return entered;
    defer leave();
    return check(api.cuMemHostRegister_v2(@ptrFromInt(address), size, 0), "cuMemHostRegister_v2", "{d} bytes at 0x{x} for device {d}", .{ size, address, device });
}

fn hostUnregister(device: i32, address: usize) Status {
    const entered = enter(device);
    if (entered != .ok) return entered;
    defer leave();
    return check(api.cuMemHostUnregister(@ptrFromInt(address)), "cuMemHostUnregister", "0x{x} for device {d}", .{ address, device });
}

fn streamCreate(device: i32, out: *runtime.Stream) Status {
    const entered = enter(device);
    if (entered != .ok) return entered;
    defer leave();
    return check(api.cuStreamCreate(out, stream_non_blocking), "cuStreamCreate", "device {d}", .{device});
}

fn streamDestroy(device: i32, stream: runtime.Stream) Status {
    const entered = enter(device);
    if (entered != .ok) return entered;
    defer leave();
    return check(api.cuStreamDestroy_v2(stream), "cuStreamDestroy_v2", "device {d}", .{device});
}

fn streamSynchronize(device: i32, stream: runtime.Stream) Status {
    const entered = enter(device);
    if (entered != .ok) return entered;
    defer leave();
    return check(api.cuStreamSynchronize(stream), "cuStreamSynchronize", "device {d}", .{device});
}

fn streamWaitEvent(device: i32, stream: runtime.Stream, event: runtime.Event) Status {
    const entered = enter(device);
    if (entered != .ok) return entered;
    defer leave();
    return check(api.cuStreamWaitEvent(stream, event, 0), "cuStreamWaitEvent", "device {d}", .{device});
}

fn launchHostFn(device: i32, stream: runtime.Stream, function: runtime.HostFn, context: ?*anyopaque) Status {
    const entered = enter(device);
    if (entered != .ok) return entered;
    defer leave();
    return check(api.cuLaunchHostFunc(stream, function, context), "cuLaunchHostFunc", "device {d}", .{device});
}

fn eventCreate(device: i32, out: *runtime.Event) Status {
    const entered = enter(device);
    if (entered != .ok) return entered;
    defer leave();
    return check(api.cuEventCreate(out, event_disable_timing), "cuEventCreate", "device {d}", .{device});
}

fn eventRecord(device: i32, event: runtime.Event, stream: runtime.Stream) Status {
    const entered = enter(device);
    if (entered != .ok) return entered;
    defer leave();
    return check(api.cuEventRecord(event, stream), "cuEventRecord", "device {d}", .{device});
}

fn eventSynchronize(device: i32, event: runtime.Event) Status {
    const entered = enter(device);
    if (entered != .ok) return entered;
    defer leave();
    return check(api.cuEventSynchronize(event), "cuEventSynchronize", "device {d}", .{device});
}

fn eventQuery(device: i32, event: runtime.Event, ready: *bool) Status {
    const entered = enter(device);
    if (entered != .ok) return entered;
    defer leave();
    const result = api.cuEventQuery(event);
    if (result == error_not_ready) {
        ready.* = false;
        return .ok;
    }
    ready.* = result == success;
    return check(result, "cuEventQuery", "device {d}", .{device});
}

fn eventDestroy(device: i32, event: runtime.Event) Status {
    const entered = enter(device);
    if (entered != .ok) return entered;
    defer leave();
    return check(api.cuEventDestroy_v2(event), "cuEventDestroy_v2", "device {d}", .{device});
}

fn pointerQuery(address: usize, out: *runtime.PointerInfo) Status {
    // cuPointerGetAttributes needs a current context; with unified
    // addressing any device's answers for all, so device 0's is pushed.
    const entered = enter(0);
    if (entered != .ok) return entered;
    defer leave();
    // Each attribute gets 8 zeroed bytes: the driver writes a 4-byte
    // unsigned (memory type), a bool (managed) or an int (ordinal).
    var memory_type: u64 = 0;
    var is_managed: u64 = 0;
    var ordinal: i64 = 0;
    const attributes = [_]c_int{ pointer_attribute_memory_type, pointer_attribute_is_managed, pointer_attribute_device_ordinal };
    var data = [_]?*anyopaque{ @ptrCast(&memory_type), @ptrCast(&is_managed), @ptrCast(&ordinal) };
    const queried = check(api.cuPointerGetAttributes(attributes.len, &attributes, &data, address), "cuPointerGetAttributes", "pointer 0x{x}", .{address});
    if (queried != .ok) return queried;
    const device_id: i32 = @truncate(ordinal);
    out.* = if (is_managed != 0)
        .{ .kind = .managed, .device_id = device_id }
    else switch (memory_type) {
        memorytype_device, memorytype_unified => .{ .kind = .device, .device_id = device_id },
        memorytype_host => .{ .kind = .pinned, .device_id = device_id },
        else => .{ .kind = .host, .device_id = -1 },
    };
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

test "a missing driver library is an explained state" {
    var info: runtime.LoadInfo = .{};
    try std.testing.expectEqual(Status.device_unavailable, load("/nonexistent/libcuda.so.1", &info));
    const message = std.mem.span(status.lastMessage());
    try std.testing.expect(std.mem.indexOf(u8, message, "/nonexistent/libcuda.so.1") != null);
    try std.testing.expect(std.mem.indexOf(u8, message, "ARROW_DEVICE_CUDA_LIBRARY") != null);
}
