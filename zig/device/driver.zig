//! What both device backends (cuda.zig, hip.zig) do the same way around a
//! driver call: make the device current (`enter`), call the driver, turn
//! its result into a status that names the call and the driver's error
//! ("[cuMemAlloc_v2][CUDA_ERROR_OUT_OF_MEMORY] out of memory: <what>"),
//! and leave the thread's device as it found it (`leave`).
//!
//! `Driver(backend)` makes every operation of the runtime table whose shape
//! both drivers share, from what the backend declares (its driver table,
//! result codes, enter/leave, error names, and `shared_calls`: its symbol
//! for each of `shared_jobs`), and the load every backend runs; `Driver.ops` completes
//! the table with the backend's own operations (alloc, copy, host
//! callbacks, pointer queries).

const std = @import("std");
const builtin = @import("builtin");
const dynlib = @import("dynlib.zig");
const status = @import("../core/status.zig");
const device_ops = @import("ops.zig");
const Status = status.Status;
const fail = status.fail;

/// The jobs every backend's `shared_calls` names a symbol for: the calls
/// all drivers make with the same arguments.
const shared_jobs = [_][]const u8{ "device_get", "device_get_name", "device_total_mem", "host_register", "host_unregister", "free_device", "free_pinned", "stream_create", "stream_destroy", "stream_synchronize", "stream_wait_event", "event_create", "event_record", "event_synchronize", "event_query", "event_destroy" };

/// The symbol `Vendor` declares for `job` (one of `shared_jobs`), checked
/// against its `Api`.
fn symbolOf(comptime Vendor: type, comptime job: []const u8) [:0]const u8 {
    const symbol: [:0]const u8 = @field(Vendor.shared_calls, job);
    if (!@hasField(Vendor.Api, symbol)) @compileError(@typeName(Vendor.Api) ++ " declares no " ++ symbol ++ " for " ++ job);
    return symbol;
}

/// Keeps one device current on a thread across several driver calls
/// (`hold` ... `unhold`), so that each call's enter and leave cost no
/// driver call while it is held. `Raw` declares `enterRaw(device)`,
/// `leaveRaw()`, and `saveHeld()` / `restoreHeld()`, which keep what
/// `leaveRaw` restores aside while the hold lasts (nested enters of other
/// devices overwrite it). Calls are strictly nested on a thread: an enter
/// is always followed by its leave before the enclosing one's.
pub fn Holding(comptime Raw: type) type {
    return struct {
        threadlocal var held: i32 = -1;
        /// One bit per nesting level: set when that enter was skipped.
        threadlocal var skipped: u64 = 0;
        threadlocal var depth: u8 = 0;

        pub fn enter(device: i32) Status {
            if (held == device) {
                mark(true);
                return .ok;
            }
            const entered = Raw.enterRaw(device);
            if (entered == .ok) mark(false);
            return entered;
        }

        fn mark(skip: bool) void {
            std.debug.assert(depth < 64);
            if (skip) skipped |= @as(u64, 1) << @intCast(depth) else skipped &= ~(@as(u64, 1) << @intCast(depth));
            depth += 1;
        }

        pub fn leave() void {
            std.debug.assert(depth > 0);
            depth -= 1;
            if (skipped & (@as(u64, 1) << @intCast(depth)) != 0) return;
            Raw.leaveRaw();
        }

        /// Makes `device` current until `unhold`; false (nothing to undo)
        /// when this thread already holds a device or entering failed (the
        /// calls then enter one by one, and report a failure themselves).
        pub fn hold(device: i32) bool {
            if (held != -1 or device < 0) return false;
            if (Raw.enterRaw(device) != .ok) {
                status.clear();
                return false;
            }
            Raw.saveHeld();
            held = device;
            return true;
        }

        pub fn unhold() void {
            std.debug.assert(held != -1);
            held = -1;
            Raw.restoreHeld();
            Raw.leaveRaw();
        }
    };
}

/// A driver call's result (CUresult, hipError_t): a C int in both.
pub const Result = c_int;

/// Numbers HIP took over from CUDA unchanged, the same in both drivers:
/// result codes (CUDA_SUCCESS / hipSuccess, ..._OUT_OF_MEMORY,
/// ..._INSUFFICIENT_DRIVER, ..._NO_DEVICE, ..._NOT_READY), the flag of
/// managed allocations visible to every stream, and pointer attributes.
pub const success = 0;
pub const error_out_of_memory = 2;
pub const error_insufficient_driver = 35;
pub const error_no_device = 100;
pub const error_not_ready = 600;
pub const mem_attach_global: c_uint = 1;
pub const pointer_attribute_memory_type: c_int = 2;
pub const pointer_attribute_is_managed: c_int = 8;
pub const pointer_attribute_device_ordinal: c_int = 9;

/// Flags of every stream and event created, the same number in both
/// drivers: non-blocking streams (CU_STREAM_NON_BLOCKING,
/// hipStreamNonBlocking), events without timing (CU_EVENT_DISABLE_TIMING,
/// hipEventDisableTiming).
const stream_non_blocking: c_uint = 1;
const event_disable_timing: c_uint = 2;

/// The shared operations of the backend `Vendor` (cuda.zig or hip.zig,
/// passing itself), which declares: `Api` (its driver table) and `api`
/// (that table, filled by its load before any operation runs and
/// read-only afterwards); `enter(device)`, which
/// makes the device current on this thread (on error the thread is as it
/// was and `leave` must not run), and `leave()`; `errorName(result)` and
/// `errorText(result)` for messages.
pub fn Driver(comptime Vendor: type) type {
    const Api = Vendor.Api;
    comptime {
        for (shared_jobs) |job| _ = symbolOf(Vendor, job);
    }
    const names = struct {
        const device_get = symbolOf(Vendor, "device_get");
        const device_get_name = symbolOf(Vendor, "device_get_name");
        const device_total_mem = symbolOf(Vendor, "device_total_mem");
        const host_register = symbolOf(Vendor, "host_register");
        const host_unregister = symbolOf(Vendor, "host_unregister");
        const free_device = symbolOf(Vendor, "free_device");
        const free_pinned = symbolOf(Vendor, "free_pinned");
        const stream_create = symbolOf(Vendor, "stream_create");
        const stream_destroy = symbolOf(Vendor, "stream_destroy");
        const stream_synchronize = symbolOf(Vendor, "stream_synchronize");
        const stream_wait_event = symbolOf(Vendor, "stream_wait_event");
        const event_create = symbolOf(Vendor, "event_create");
        const event_record = symbolOf(Vendor, "event_record");
        const event_synchronize = symbolOf(Vendor, "event_synchronize");
        const event_query = symbolOf(Vendor, "event_query");
        const event_destroy = symbolOf(Vendor, "event_destroy");
    };
    return struct {
        /// Turns a failed driver call into a status with the call's and the
        /// error's names.
        pub fn check(result: Result, comptime call_name: []const u8, comptime what: []const u8, args: anytype) Status {
            if (result == success) return .ok;
            const code: Status = if (result == error_out_of_memory) .out_of_memory else .device_error;
            return fail(code, "[" ++ call_name ++ "][{s}] {s}: " ++ what, .{ Vendor.errorName(result), Vendor.errorText(result) } ++ args);
        }

        /// Calls `symbol` with `args` with `device` current: enter, call,
        /// check, leave.
        pub fn call(device: i32, comptime symbol: [:0]const u8, args: anytype, comptime what: []const u8, what_args: anytype) Status {
            const entered = Vendor.enter(device);
            if (entered != .ok) return entered;
            defer Vendor.leave();
            return check(@call(.auto, @field(Vendor.api, symbol), args), symbol, what, what_args);
        }

        fn deviceInfo(device: i32, out: *device_ops.DeviceInfo) Status {
            var handle: c_int = 0;
            const got = check(@field(Vendor.api, names.device_get)(&handle, device), names.device_get, "device {d}", .{device});
            if (got != .ok) return got;
            const named = check(@field(Vendor.api, names.device_get_name)(&out.name, out.name.len - 1, handle), names.device_get_name, "device {d}", .{device});
            if (named != .ok) return named;
            var total: usize = 0;
            const sized = check(@field(Vendor.api, names.device_total_mem)(&total, handle), names.device_total_mem, "device {d}", .{device});
            if (sized != .ok) return sized;
            out.total_memory_bytes = total;
            return .ok;
        }

        /// Frees device or managed memory with the device call, pinned host
        /// memory with the host one.
        fn free(device: i32, kind: device_ops.MemoryKind, address: usize) Status {
            return switch (kind) {
                .device, .managed => call(device, names.free_device, .{addressArg(names.free_device, address)}, "0x{x} on device {d}", .{ address, device }),
                .pinned => call(device, names.free_pinned, .{addressArg(names.free_pinned, address)}, "0x{x} for device {d}", .{ address, device }),
            };
        }

        fn FirstParam(comptime symbol: [:0]const u8) type {
            return @typeInfo(@typeInfo(@FieldType(Api, symbol)).pointer.child).@"fn".param_types[0].?;
        }

        /// `address` as the first parameter of `symbol` takes it: a
        /// CUdeviceptr (an integer) or a pointer.
        fn addressArg(comptime symbol: [:0]const u8, address: usize) FirstParam(symbol) {
            const Param = FirstParam(symbol);
            return if (@typeInfo(Param) == .int) @intCast(address) else @ptrFromInt(address);
        }

        fn hostRegister(device: i32, address: usize, size: usize) Status {
            return call(device, names.host_register, .{ @as(?*anyopaque, @ptrFromInt(address)), size, 0 }, "{d} bytes at 0x{x} for device {d}", .{ size, address, device });
        }

        fn hostUnregister(device: i32, address: usize) Status {
            return call(device, names.host_unregister, .{@as(?*anyopaque, @ptrFromInt(address))}, "0x{x} for device {d}", .{ address, device });
        }

        fn streamCreate(device: i32, out: *device_ops.Stream) Status {
            return call(device, names.stream_create, .{ out, stream_non_blocking }, "device {d}", .{device});
        }

        fn streamDestroy(device: i32, stream: device_ops.Stream) Status {
            return call(device, names.stream_destroy, .{stream}, "device {d}", .{device});
        }

        fn streamSynchronize(device: i32, stream: device_ops.Stream) Status {
            return call(device, names.stream_synchronize, .{stream}, "device {d}", .{device});
        }

        fn streamWaitEvent(device: i32, stream: device_ops.Stream, event: device_ops.Event) Status {
            return call(device, names.stream_wait_event, .{ stream, event, 0 }, "device {d}", .{device});
        }

        fn eventCreate(device: i32, out: *device_ops.Event) Status {
            return call(device, names.event_create, .{ out, event_disable_timing }, "device {d}", .{device});
        }

        fn eventRecord(device: i32, event: device_ops.Event, stream: device_ops.Stream) Status {
            return call(device, names.event_record, .{ event, stream }, "device {d}", .{device});
        }

        fn eventSynchronize(device: i32, event: device_ops.Event) Status {
            return call(device, names.event_synchronize, .{event}, "device {d}", .{device});
        }

        /// Not fired yet is an answer (`ready` false), not an error.
        fn eventQuery(device: i32, event: device_ops.Event, ready: *bool) Status {
            const entered = Vendor.enter(device);
            if (entered != .ok) return entered;
            defer Vendor.leave();
            const result = @field(Vendor.api, names.event_query)(event);
            if (result == error_not_ready) {
                ready.* = false;
                return .ok;
            }
            ready.* = result == success;
            return check(result, names.event_query, "device {d}", .{device});
        }

        fn eventDestroy(device: i32, event: device_ops.Event) Status {
            return call(device, names.event_destroy, .{event}, "device {d}", .{device});
        }

        /// The backend's load: opens its library (`path`, else its
        /// `default_library_names`), resolves its `Api` (`Vendor.resolve`),
        /// starts the driver (`Vendor.start`: init, version, device count)
        /// and keeps the table in `Vendor.api`. On any error the library is
        /// closed again and nothing is kept. Runs under the runtime's lock.
        pub fn load(path: ?[]const u8, out: *device_ops.LoadInfo) Status {
            var path_z: [512:0]u8 = @splat(0);
            const found = openLibrary(path, &path_z, &Vendor.default_library_names, Vendor.unopened);
            const opened = found[1] orelse return found[0];
            var missing: []const u8 = "";
            const table = Vendor.resolve(opened.handle, &missing) orelse {
                dynlib.close(opened.handle);
                return fail(.device_unavailable, Vendor.unopened.missing_symbol, .{ opened.path, missing });
            };
            var device_count: c_int = 0;
            var version: c_int = 0;
            const started = Vendor.start(&table, opened.path, &device_count, &version);
            if (started != .ok) {
                dynlib.close(opened.handle);
                return started;
            }
            Vendor.api = table;
            describeLoad(out, device_count, version, opened.path);
            return .ok;
        }

        /// The operations each backend implements its own way. `alloc` and
        /// `copy` run with the device current (`ops` enters and leaves
        /// around them); the others make it current themselves if needed.
        pub const Own = struct {
            alloc: *const fn (device: i32, kind: device_ops.MemoryKind, size: usize, out: *usize) Status,
            copy: *const fn (device: i32, direction: device_ops.Direction, dst: usize, src: usize, size: usize, stream: device_ops.Stream, is_async: bool) Status,
            launchHostFn: *const fn (device: i32, stream: device_ops.Stream, function: device_ops.HostFn, context: ?*anyopaque) Status,
            pointerQuery: *const fn (address: usize, out: *device_ops.PointerInfo) Status,
        };

        /// The backend's runtime table: its own operations and the shared ones.
        pub fn ops(comptime own: Own) device_ops.Ops {
            const entered = struct {
                fn alloc(device: i32, kind: device_ops.MemoryKind, size: usize, out: *usize) Status {
                    const made_current = Vendor.enter(device);
                    if (made_current != .ok) return made_current;
                    defer Vendor.leave();
                    return own.alloc(device, kind, size, out);
                }
                fn copy(device: i32, direction: device_ops.Direction, dst: usize, src: usize, size: usize, stream: device_ops.Stream, is_async: bool) Status {
                    const made_current = Vendor.enter(device);
                    if (made_current != .ok) return made_current;
                    defer Vendor.leave();
                    return own.copy(device, direction, dst, src, size, stream, is_async);
                }
            };
            return .{
                .load = load,
                .deviceInfo = deviceInfo,
                .alloc = entered.alloc,
                .free = free,
                .copy = entered.copy,
                .streamCreate = streamCreate,
                .streamDestroy = streamDestroy,
                .streamSynchronize = streamSynchronize,
                .streamWaitEvent = streamWaitEvent,
                .launchHostFn = own.launchHostFn,
                .eventCreate = eventCreate,
                .eventRecord = eventRecord,
                .eventSynchronize = eventSynchronize,
                .eventQuery = eventQuery,
                .eventDestroy = eventDestroy,
                .pointerQuery = own.pointerQuery,
                .hostRegister = hostRegister,
                .hostUnregister = hostUnregister,
                .hold = Vendor.holding.hold,
                .unhold = Vendor.holding.unhold,
            };
        }
    };
}

/// What a backend says when its library cannot be opened.
pub const Unopened = struct {
    /// Takes the longest path accepted ({d}).
    path_too_long: []const u8,
    /// On macOS, where no default library exists.
    on_macos: []const u8,
    /// Takes what was tried ({s}).
    not_loaded: []const u8,
    /// Takes the library's path and the first symbol it lacks ({s}, {s}).
    missing_symbol: []const u8,
};

/// Opens the library at `path` (copied NUL-terminated into `path_z`, which
/// must outlive the result), or else the first of `defaults` that loads.
fn openLibrary(path: ?[]const u8, path_z: *[512:0]u8, defaults: []const [:0]const u8, comptime unopened: Unopened) struct { Status, ?dynlib.Opened } {
    var candidates_buffer: [1][:0]const u8 = undefined;
    const candidates: []const [:0]const u8 = if (path) |p| blk: {
        if (p.len >= path_z.len) return .{ fail(.invalid_argument, unopened.path_too_long, .{path_z.len - 1}), null };
        @memcpy(path_z[0..p.len], p);
        path_z[p.len] = 0;
        candidates_buffer[0] = path_z[0..p.len :0];
        break :blk &candidates_buffer;
    } else if (builtin.os.tag == .macos)
        return .{ fail(.device_unavailable, unopened.on_macos, .{}), null }
    else
        defaults;
    var attempts: dynlib.Attempts = .{};
    const opened = dynlib.open(candidates, &attempts) orelse
        return .{ fail(.device_unavailable, unopened.not_loaded, .{attempts.slice()}), null };
    return .{ .ok, opened };
}

/// Fills what a successful load found.
fn describeLoad(out: *device_ops.LoadInfo, device_count: c_int, version: c_int, loaded_from: []const u8) void {
    std.debug.assert(device_count > 0);
    out.device_count = @min(device_count, device_ops.max_devices);
    out.version = version;
    const n = @min(loaded_from.len, out.library_path.len - 1);
    @memcpy(out.library_path[0..n], loaded_from[0..n]);
}
