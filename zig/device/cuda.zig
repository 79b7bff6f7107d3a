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
const status = @import("../core/status.zig");
const Status = status.Status;
const fail = status.fail;
const sync = @import("../core/sync.zig");
const debug = @import("debug.zig");
const dynlib = @import("dynlib.zig");
const device_ops = @import("ops.zig");
const driver = @import("driver.zig");

pub const CUresult = driver.Result;
pub const CUdevice = c_int;
pub const CUdeviceptr = u64;
pub const CUcontext = ?*anyopaque;

pub const error_stub_library: CUresult = 34;

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
    cuMemcpyHtoDAsync_v2: *const fn (dst: CUdeviceptr, src: ?*const anyopaque, size: usize, stream: device_ops.Stream) callconv(.c) CUresult,
    cuMemcpyDtoHAsync_v2: *const fn (dst: ?*anyopaque, src: CUdeviceptr, size: usize, stream: device_ops.Stream) callconv(.c) CUresult,
    cuMemcpyDtoDAsync_v2: *const fn (dst: CUdeviceptr, src: CUdeviceptr, size: usize, stream: device_ops.Stream) callconv(.c) CUresult,
    cuStreamCreate: *const fn (out: *device_ops.Stream, flags: c_uint) callconv(.c) CUresult,
    cuStreamDestroy_v2: *const fn (stream: device_ops.Stream) callconv(.c) CUresult,
    cuStreamSynchronize: *const fn (stream: device_ops.Stream) callconv(.c) CUresult,
    cuStreamWaitEvent: *const fn (stream: device_ops.Stream, event: device_ops.Event, flags: c_uint) callconv(.c) CUresult,
    cuLaunchHostFunc: *const fn (stream: device_ops.Stream, function: device_ops.HostFn, context: ?*anyopaque) callconv(.c) CUresult,
    cuEventCreate: *const fn (out: *device_ops.Event, flags: c_uint) callconv(.c) CUresult,
    cuEventRecord: *const fn (event: device_ops.Event, stream: device_ops.Stream) callconv(.c) CUresult,
    cuEventSynchronize: *const fn (event: device_ops.Event) callconv(.c) CUresult,
    cuEventQuery: *const fn (event: device_ops.Event) callconv(.c) CUresult,
    cuEventDestroy_v2: *const fn (event: device_ops.Event) callconv(.c) CUresult,
    cuPointerGetAttributes: *const fn (count: c_uint, attributes: [*]const c_int, data: [*]?*anyopaque, pointer: CUdeviceptr) callconv(.c) CUresult,
    cuGetErrorName: *const fn (result: CUresult, name: *?[*:0]const u8) callconv(.c) CUresult,
    cuGetErrorString: *const fn (result: CUresult, text: *?[*:0]const u8) callconv(.c) CUresult,
};

/// Set once by `load` (under the runtime's lock) before the runtime is
/// marked loaded; read-only afterwards.
pub var api: Api = undefined;
var contexts: [device_ops.max_devices]std.atomic.Value(CUcontext) = @splat(.init(null));
var contexts_mutex: sync.Mutex = .{};

/// What the kinds table (kinds.zig) and the manifest read of this driver.
pub const label = "CUDA";
pub const library_env_var = "ARROW_DEVICE_CUDA_LIBRARY";
pub const default_library_names = [_][:0]const u8{ "libcuda.so.1", "libcuda.so" };
/// cuDriverGetVersion: 12040 is 12.4.
pub const version_scale: device_ops.VersionScale = .{ .major_div = 1000, .minor_div = 10 };

pub const unopened: driver.Unopened = .{
    .path_too_long = "CUDA library path is longer than {d} bytes",
    .on_macos = "CUDA is not available on macOS: NVIDIA's CUDA driver does not exist there (set " ++ library_env_var ++ " to load a compatible library anyway)",
    .not_loaded = "CUDA is not available: the driver library could not be loaded (tried {s}). Install the NVIDIA driver, or set " ++ library_env_var ++ " to the path of " ++ default_library_names[0],
    .missing_symbol = std.fmt.comptimePrint("CUDA is not available: {{s}} has no symbol {{s}} (the driver is older than CUDA {d}.{d}, or not a CUDA driver); nothing was loaded", .{ min_driver_version / 1000, min_driver_version % 1000 / 10 }),
};

/// Every symbol of `Api`, or null with the first missing one's name.
pub fn resolve(handle: *anyopaque, missing: *[]const u8) ?Api {
    if (debug.makes(.@"unversioned-symbols")) {
        // The mistake: the CUDA 2.0 / 3.x names instead of the _v2 ones.
        inline for (@typeInfo(Api).@"struct".field_names) |name| {
            if (comptime std.mem.endsWith(u8, name, "_v2")) {
                const old_name = comptime std.fmt.comptimePrint("{s}", .{name[0 .. name.len - 3]});
                if (std.c.dlsym(handle, old_name) == null) {
                    missing.* = old_name;
                    return null;
                }
            }
        }
    }
    return dynlib.loadTable(Api, handle, missing);
}

/// Initializes the driver in `table` (from `loaded_from`) and checks its
/// version and devices.
pub fn start(table: *const Api, loaded_from: []const u8, device_count: *c_int, driver_version: *c_int) Status {
    const init_result = table.cuInit(0);
    if (init_result != driver.success) {
        return switch (init_result) {
            error_stub_library => fail(.device_unavailable, "CUDA is not available: {s} is the CUDA stub library, not a driver (cuInit returned CUDA_ERROR_STUB_LIBRARY, 34); install the NVIDIA driver", .{loaded_from}),
            driver.error_insufficient_driver => fail(.device_unavailable, "CUDA is not available: the driver in {s} is too old (cuInit returned CUDA_ERROR_INSUFFICIENT_DRIVER, 35); update the NVIDIA driver", .{loaded_from}),
            driver.error_no_device => fail(.device_unavailable, "CUDA is not available: no CUDA device found (cuInit returned CUDA_ERROR_NO_DEVICE, 100; driver {s})", .{loaded_from}),
            else => fail(.device_unavailable, "CUDA is not available: cuInit failed with {s} ({d}; driver {s})", .{ errorNameIn(table, init_result), init_result, loaded_from }),
        };
    }
    var version: c_int = 0;
    if (table.cuDriverGetVersion(&version) != driver.success or version < min_driver_version)
        return fail(.device_unavailable, "CUDA is not available: the driver in {s} reports version {d}, this library needs {d} or later; update the NVIDIA driver", .{ loaded_from, version, min_driver_version });
    var count: c_int = 0;
    const count_result = table.cuDeviceGetCount(&count);
    if (count_result != driver.success or count <= 0)
        return fail(.device_unavailable, "CUDA is not available: no CUDA device found (cuDeviceGetCount: {d} devices, {s}; driver {s})", .{ count, errorNameIn(table, count_result), loaded_from });
    device_count.* = count;
    driver_version.* = version;
    return .ok;
}

fn errorNameIn(table: *const Api, result: CUresult) []const u8 {
    var name: ?[*:0]const u8 = null;
    if (table.cuGetErrorName(result, &name) != driver.success) return "CUDA_ERROR_UNKNOWN";
    return if (name) |n| std.mem.span(n) else "CUDA_ERROR_UNKNOWN";
}

pub fn errorText(result: CUresult) []const u8 {
    var text: ?[*:0]const u8 = null;
    if (api.cuGetErrorString(result, &text) != driver.success) return "unknown error";
    return if (text) |t| std.mem.span(t) else "unknown error";
}

pub fn errorName(result: CUresult) []const u8 {
    return errorNameIn(&api, result);
}

/// This driver's symbol for each call all drivers make alike
/// (driver.zig's `shared_jobs`).
pub const shared_calls = .{
    .device_get = "cuDeviceGet",
    .device_get_name = "cuDeviceGetName",
    .device_total_mem = "cuDeviceTotalMem_v2",
    .host_register = "cuMemHostRegister_v2",
    .host_unregister = "cuMemHostUnregister",
    .free_device = "cuMemFree_v2",
    .free_pinned = "cuMemFreeHost",
    .stream_create = "cuStreamCreate",
    .stream_destroy = "cuStreamDestroy_v2",
    .stream_synchronize = "cuStreamSynchronize",
    .stream_wait_event = "cuStreamWaitEvent",
    .event_create = "cuEventCreate",
    .event_record = "cuEventRecord",
    .event_synchronize = "cuEventSynchronize",
    .event_query = "cuEventQuery",
    .event_destroy = "cuEventDestroy_v2",
};

const calls = driver.Driver(@This());
const check = calls.check;

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

/// Makes `device`'s primary context current on this thread until `leave`
/// (nothing to do while the thread holds it: `holding`).
pub fn enter(device: i32) Status {
    return holding.enter(device);
}

pub fn leave() void {
    holding.leave();
}

pub const holding = driver.Holding(struct {
    pub fn enterRaw(device: i32) Status {
        if (debug.makes(.@"no-context-push")) return .ok;
        const found = primaryContext(device);
        if (found[0] != .ok) return found[0];
        return check(api.cuCtxPushCurrent_v2(found[1]), "cuCtxPushCurrent_v2", "device {d}", .{device});
    }
    pub fn leaveRaw() void {
        if (debug.makes(.@"no-context-push")) return;
        var popped: CUcontext = null;
        _ = api.cuCtxPopCurrent_v2(&popped);
    }
    // Pushed contexts are a stack: nothing to keep aside.
    pub fn saveHeld() void {}
    pub fn restoreHeld() void {}
});

/// Runs with the device current (driver.zig enters around it).
fn alloc(device: i32, kind: device_ops.MemoryKind, size: usize, out: *usize) Status {
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
            const s = check(api.cuMemAllocManaged(&address, size, driver.mem_attach_global), "cuMemAllocManaged", "{d} managed bytes on device {d}", .{ size, device });
            out.* = @intCast(address);
            return s;
        },
    }
}

/// Runs with the device current (driver.zig enters around it).
fn copy(device: i32, direction: device_ops.Direction, dst: usize, src: usize, size: usize, stream: device_ops.Stream, is_async: bool) Status {
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

fn launchHostFn(device: i32, stream: device_ops.Stream, function: device_ops.HostFn, context: ?*anyopaque) Status {
    const entered = enter(device);
    if (entered != .ok) return entered;
    defer leave();
    return check(api.cuLaunchHostFunc(stream, function, context), "cuLaunchHostFunc", "device {d}", .{device});
}

fn pointerQuery(address: usize, out: *device_ops.PointerInfo) Status {
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
    const attributes = [_]c_int{ driver.pointer_attribute_memory_type, driver.pointer_attribute_is_managed, driver.pointer_attribute_device_ordinal };
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

pub const ops = calls.ops(.{ .alloc = alloc, .copy = copy, .launchHostFn = launchHostFn, .pointerQuery = pointerQuery });
