//! Device runtimes: CUDA and ROCm loaded at run time (zig/device/).
//! Part of the C API (c_api.zig: conventions, and the list of areas).

const std = @import("std");
const abi = @import("core/abi.zig");
const status = @import("core/status.zig");
const validate = @import("validate/validate.zig");
const device_runtime = @import("device/runtime.zig");
const device_transfer = @import("device/transfer.zig");
const device_staging = @import("device/staging.zig");
const device_pool = @import("device/pool.zig");
const device_host_pool = @import("device/host_pool.zig");
const common = @import("c_api_common.zig");
const Owner = common.Owner;
const code = common.code;

// ---------------------------------------------------------------------------
// Device runtimes (zig/device/): CUDA and ROCm loaded at run time
// ---------------------------------------------------------------------------
//
// A runtime is named by an Arrow device type: CUDA (2), CUDA_HOST (3) and
// CUDA_MANAGED (13) mean CUDA; ROCM (10) and ROCM_HOST (11) mean ROCm.
// Every call loads the runtime on first use; "not available" is
// `ABD_DEVICE_UNAVAILABLE` with a message saying why and what was tried.
// Streams are raw handles (CUstream / hipStream_t; NULL: the default
// stream); events are passed as pointers to their handle (`CUevent*`,
// `hipEvent_t*`), exactly what `sync_event` holds. Callable from any thread.


fn runtimeFor(device_type: i32) ?*device_runtime.Runtime {
    const found = device_runtime.require(device_type);
    return found[1];
}

fn memoryKindFrom(raw: c_int) ?device_runtime.MemoryKind {
    return std.enums.fromInt(device_runtime.MemoryKind, raw);
}

fn eventHandle(event: ?*anyopaque) device_runtime.Event {
    const pointer = event orelse return null;
    return @as(*const device_runtime.Event, @ptrCast(@alignCast(pointer))).*;
}

/// Loads the runtime of `device_type` from `library_path` (NULL or "": the
/// environment variable ARROW_DEVICE_CUDA_LIBRARY / ARROW_DEVICE_HIP_LIBRARY,
/// else the default sonames). Once loaded, later calls return at once.
export fn abd_device_runtime_load(device_type: i32, library_path: ?[*:0]const u8) c_int {
    const rt = runtimeFor(device_type) orelse return code(status.lastStatus());
    return code(rt.load(if (library_path) |p| std.mem.span(p) else null));
}

/// Words: device count, driver/runtime version. `path_out` (may be NULL)
/// receives the library that was loaded, NUL-terminated.
export fn abd_device_runtime_info(device_type: i32, out: [*]f64, path_out: ?[*]u8, path_capacity: u32) c_int {
    const rt = runtimeFor(device_type) orelse return code(status.lastStatus());
    const loaded = rt.load(null);
    if (loaded != .ok) return code(loaded);
    out[0] = @floatFromInt(rt.info.device_count);
    out[1] = @floatFromInt(rt.info.version);
    if (path_out) |buffer| {
        if (path_capacity > 0) {
            const path = std.mem.sliceTo(&rt.info.library_path, 0);
            const n = @min(path.len, path_capacity - 1);
            @memcpy(buffer[0..n], path[0..n]);
            buffer[n] = 0;
        }
    }
    return 0;
}

/// The device's name (NUL-terminated into `name_out`) and total memory in
/// bytes (`out[0]`).
export fn abd_device_get_info(device_type: i32, ordinal: i32, name_out: [*]u8, name_capacity: u32, out: [*]f64) c_int {
    const rt = runtimeFor(device_type) orelse return code(status.lastStatus());
    var info: device_runtime.DeviceInfo = .{};
    const got = rt.deviceInfo(ordinal, &info);
    if (got != .ok) return code(got);
    const name = info.nameSlice();
    if (name_capacity > 0) {
        const n = @min(name.len, name_capacity - 1);
        @memcpy(name_out[0..n], name[0..n]);
        name_out[n] = 0;
    }
    out[0] = @floatFromInt(info.total_memory_bytes);
    return 0;
}

/// Allocates `size` bytes of `memory` (0 device, 1 pinned host, 2 managed)
/// for device `device_id`; the address goes to `out[0]`. The caller frees
/// it with `abd_device_free` and the same kind.
export fn abd_device_alloc(device_type: i32, device_id: i32, memory: c_int, size: usize, out: [*]f64) c_int {
    const rt = runtimeFor(device_type) orelse return code(status.lastStatus());
    const kind = memoryKindFrom(memory) orelse return code(status.fail(.invalid_argument, "memory kind {d} is not 0 (device), 1 (pinned) or 2 (managed)", .{memory}));
    var address: usize = 0;
    const allocated = rt.alloc(device_id, kind, size, &address);
    if (allocated != .ok) return code(allocated);
    out[0] = @floatFromInt(address);
    return 0;
}

export fn abd_device_free(device_type: i32, device_id: i32, memory: c_int, address: ?*anyopaque) c_int {
    const rt = runtimeFor(device_type) orelse return code(status.lastStatus());
    const kind = memoryKindFrom(memory) orelse return code(status.fail(.invalid_argument, "memory kind {d} is not 0 (device), 1 (pinned) or 2 (managed)", .{memory}));
    return code(rt.free(device_id, kind, @intFromPtr(address)));
}

/// Copies `size` bytes; `direction` 0 host to device, 1 device to host,
/// 2 device to device. `is_async` != 0: enqueued on `stream` (the caller
/// keeps both sides alive and unchanged until the stream or an event
/// recorded after it completes); else synchronous.
export fn abd_device_copy(device_type: i32, device_id: i32, direction: c_int, dst: ?*anyopaque, src: ?*const anyopaque, size: usize, stream: ?*anyopaque, is_async: c_int) c_int {
    const rt = runtimeFor(device_type) orelse return code(status.lastStatus());
    const dir = std.enums.fromInt(device_runtime.Direction, direction) orelse return code(status.fail(.invalid_argument, "copy direction {d} is not 0..2", .{direction}));
    return code(rt.copy(device_id, dir, @intFromPtr(dst), @intFromPtr(src), size, stream, is_async != 0));
}

/// Creates a non-blocking stream; its handle goes to `out[0]`.
export fn abd_device_stream_create(device_type: i32, device_id: i32, out: [*]f64) c_int {
    const rt = runtimeFor(device_type) orelse return code(status.lastStatus());
    var stream: device_runtime.Stream = null;
    const created = rt.streamCreate(device_id, &stream);
    if (created != .ok) return code(created);
    out[0] = @floatFromInt(@intFromPtr(stream));
    return 0;
}

export fn abd_device_stream_destroy(device_type: i32, device_id: i32, stream: ?*anyopaque) c_int {
    const rt = runtimeFor(device_type) orelse return code(status.lastStatus());
    return code(rt.streamDestroy(device_id, stream));
}

export fn abd_device_stream_synchronize(device_type: i32, device_id: i32, stream: ?*anyopaque) c_int {
    const rt = runtimeFor(device_type) orelse return code(status.lastStatus());
    return code(rt.streamSynchronize(device_id, stream));
}

/// Makes `stream` wait (on the device) for the event `*event`.
export fn abd_device_stream_wait_event(device_type: i32, device_id: i32, stream: ?*anyopaque, event: ?*anyopaque) c_int {
    const rt = runtimeFor(device_type) orelse return code(status.lastStatus());
    return code(rt.streamWaitEvent(device_id, stream, eventHandle(event)));
}

/// Creates an event (timing disabled) in a box owned by the caller; the
/// box's address, a `CUevent*` / `hipEvent_t*` fit for `sync_event`, goes
/// to `out[0]`. Destroy it with `abd_device_event_destroy`.
export fn abd_device_event_create(device_type: i32, device_id: i32, out: [*]f64) c_int {
    const rt = runtimeFor(device_type) orelse return code(status.lastStatus());
    var box: *device_runtime.EventBox = undefined;
    const created = device_runtime.EventBox.create(rt, device_id, &box);
    if (created != .ok) return code(created);
    out[0] = @floatFromInt(@intFromPtr(box));
    return 0;
}

/// Destroys an event made by `abd_device_event_create` and frees its box.
export fn abd_device_event_destroy(event: ?*device_runtime.EventBox) c_int {
    const box = event orelse return code(status.fail(.invalid_argument, "event is NULL", .{}));
    return code(box.destroy());
}

/// Records `*event` on `stream`.
export fn abd_device_event_record(device_type: i32, device_id: i32, event: ?*anyopaque, stream: ?*anyopaque) c_int {
    const rt = runtimeFor(device_type) orelse return code(status.lastStatus());
    return code(rt.eventRecord(device_id, eventHandle(event), stream));
}

/// Blocks until `*event` fired.
export fn abd_device_event_synchronize(device_type: i32, device_id: i32, event: ?*anyopaque) c_int {
    const rt = runtimeFor(device_type) orelse return code(status.lastStatus());
    return code(rt.eventSynchronize(device_id, eventHandle(event)));
}

/// `out[0]` = 1 if `*event` fired, 0 if not yet.
export fn abd_device_event_query(device_type: i32, device_id: i32, event: ?*anyopaque, out: [*]f64) c_int {
    const rt = runtimeFor(device_type) orelse return code(status.lastStatus());
    var ready = false;
    const queried = rt.eventQuery(device_id, eventHandle(event), &ready);
    if (queried != .ok) return code(queried);
    out[0] = if (ready) 1 else 0;
    return 0;
}

/// What `address` is to the runtime: `out` = pointer kind (0 plain host,
/// 1 device, 2 pinned host, 3 managed), the Arrow device type of such
/// memory (CPU for plain host), device ordinal (-1 for plain host).
export fn abd_device_pointer_query(device_type: i32, address: ?*const anyopaque, out: [*]f64) c_int {
    const rt = runtimeFor(device_type) orelse return code(status.lastStatus());
    var info: device_runtime.PointerInfo = .{};
    const queried = rt.pointerQuery(@intFromPtr(address), &info);
    if (queried != .ok) return code(queried);
    const arrow_type: abi.DeviceType = switch (info.kind) {
        .host => abi.device_cpu,
        .device => rt.device_type,
        .pinned => rt.pinned_device_type,
        .managed => rt.managed_device_type orelse rt.device_type,
    };
    out[0] = @floatFromInt(@intFromEnum(info.kind));
    out[1] = @floatFromInt(arrow_type);
    out[2] = @floatFromInt(info.device_id);
    return 0;
}

/// Moves the host array `schema` + `array` in (left released, success or
/// not), copies it to `device_type` memory (CUDA, CUDA_HOST, CUDA_MANAGED,
/// ROCM, ROCM_HOST) of device `device_id` on `stream`, and exports the copy
/// into `out_schema` + `out_array`, with `sync_event` recorded after the
/// copies. Its release frees the device memory and destroys the event.
export fn abd_device_array_to_device(schema: ?*abi.ArrowSchema, array: ?*abi.ArrowDeviceArray, device_type: i32, device_id: i32, stream: ?*anyopaque, out_schema: ?*abi.ArrowSchema, out_array: ?*abi.ArrowDeviceArray) c_int {
    const schema_target = out_schema orelse return code(status.fail(.invalid_argument, "out schema pointer is NULL", .{}));
    const array_target = out_array orelse return code(status.fail(.invalid_argument, "out device array pointer is NULL", .{}));
    return code(device_transfer.toDevice(schema, array, .{ .device_type = device_type, .device_id = device_id, .stream = stream }, schema_target, array_target));
}

/// Exports `owner`'s data as a CPU array into `out_schema` + `out_array`
/// (device memory copied, host-visible memory viewed in place; see
/// zig/device/transfer.zig). The caller keeps its owner reference. Blocks
/// until the copies are done.
export fn abd_owner_to_host(owner: *Owner, stream: ?*anyopaque, out_schema: ?*abi.ArrowSchema, out_array: ?*abi.ArrowDeviceArray) c_int {
    const schema_target = out_schema orelse return code(status.fail(.invalid_argument, "out schema pointer is NULL", .{}));
    const array_target = out_array orelse return code(status.fail(.invalid_argument, "out device array pointer is NULL", .{}));
    return code(device_transfer.toHost(owner, stream, schema_target, array_target));
}

/// Page-locks `size` bytes of host memory at `address` for the runtime of
/// `device_type` (cuMemHostRegister_v2 / hipHostRegister). The caller keeps
/// the memory alive and calls `abd_device_host_unregister` once.
export fn abd_device_host_register(device_type: i32, device_id: i32, address: ?*anyopaque, size: usize) c_int {
    const rt = runtimeFor(device_type) orelse return code(status.lastStatus());
    return code(rt.hostRegister(device_id, @intFromPtr(address), size));
}

export fn abd_device_host_unregister(device_type: i32, device_id: i32, address: ?*anyopaque) c_int {
    const rt = runtimeFor(device_type) orelse return code(status.lastStatus());
    return code(rt.hostUnregister(device_id, @intFromPtr(address)));
}

/// The pinned staging pool of `device_type`'s runtime (zig/device/staging.zig):
/// `out[0]` = blocks allocated (idle and lent) before, `out[1]` = idle
/// blocks freed when `trim` is non-zero, `out[2]` = the block size; the
/// memory pool (zig/device/pool.zig), counted before the trim: `out[3]` /
/// `out[4]` = device blocks held / high-water mark, `out[5]` / `out[6]` =
/// pinned blocks held / high-water mark, `out[7]` = its block size, `out[8]`
/// = its blocks freed by the trim, `out[9 + d]` / `out[73 + d]` = its
/// blocks (device and pinned) / their live ranges on device `d`, `out[137]`
/// / `out[138]` = live device / pinned ranges; `out[139]` = completed
/// events kept for reuse (zig/device/runtime.zig), counted before the trim,
/// which destroys them. `out` holds 140 numbers.
export fn abd_device_staging(device_type: i32, trim: c_int, out: [*]f64) c_int {
    const rt = runtimeFor(device_type) orelse return code(status.lastStatus());
    const on_device = device_pool.stats(rt, .device);
    const pinned = device_pool.stats(rt, .pinned);
    out[3] = @floatFromInt(on_device.blocks);
    out[4] = @floatFromInt(on_device.high_water);
    out[5] = @floatFromInt(pinned.blocks);
    out[6] = @floatFromInt(pinned.high_water);
    out[7] = @floatFromInt(device_pool.block_bytes);
    for (0..device_pool.max_devices) |d| {
        const on = device_pool.blocksOn(rt, @intCast(d));
        out[9 + d] = @floatFromInt(on.blocks);
        out[9 + device_pool.max_devices + d] = @floatFromInt(on.ranges);
    }
    out[137] = @floatFromInt(on_device.ranges);
    out[138] = @floatFromInt(pinned.ranges);
    out[139] = @floatFromInt(device_runtime.cachedEvents(rt));
    if (trim != 0 and rt.isLoaded()) _ = device_runtime.trimEvents(rt);
    out[8] = if (trim != 0 and rt.isLoaded()) @floatFromInt(device_pool.trim(rt)) else 0;
    out[0] = @floatFromInt(device_staging.allocated(rt));
    out[1] = if (trim != 0 and rt.isLoaded()) @floatFromInt(device_staging.trim(rt)) else 0;
    // Trimming also frees the idle toHost result memory (device/host_pool.zig).
    if (trim != 0) _ = device_host_pool.trim();
    out[2] = @floatFromInt(device_staging.block_bytes);
    return 0;
}

/// Validates `schema` + `array` (not moved) at the minimal level, reading
/// no buffer: for arrays built over memory the host cannot read.
export fn abd_device_array_check(schema: ?*abi.ArrowSchema, array: ?*abi.ArrowDeviceArray) c_int {
    const s = schema orelse return code(status.fail(.invalid_argument, "schema pointer is NULL", .{}));
    const a = array orelse return code(status.fail(.invalid_argument, "array pointer is NULL", .{}));
    return code(validate.validate(s, &a.array, .minimal, false, null));
}
