//! ADBC: loading drivers and calling them (adbc/).
//! Part of the C API (c_api.zig: conventions, and the list of areas).

const std = @import("std");
const abi = @import("core/abi.zig");
const status = @import("core/status.zig");
const adbc_abi = @import("adbc/abi.zig");
const adbc_driver = @import("adbc/driver.zig");
const adbc_call = @import("adbc/call.zig");
const adbc_schema_stream = @import("adbc/schema_stream.zig");
const common = @import("c_api_common.zig");
const code = common.code;

// ---------------------------------------------------------------------------
// ADBC: loading drivers and calling them (adbc/). The TS layer owns every
// object it makes here and frees it once.
// ---------------------------------------------------------------------------

/// Opens the driver library at `path` and initializes it through
/// `entrypoint` (NULL: AdbcDriverInit) at ADBC 1.1.0, else 1.0.0. On
/// success `*out` is the driver (its function table at offset 0, the
/// revision at `abd_adbc_driver_version`); free it with
/// `abd_adbc_driver_unload`, after every object made with it is released.
export fn abd_adbc_driver_load(path: ?[*:0]const u8, entrypoint: ?[*:0]const u8, out: ?*?*adbc_driver.Driver) c_int {
    const o = out orelse return code(status.fail(.invalid_argument, "out pointer is NULL", .{}));
    o.* = null;
    const p = path orelse return code(status.fail(.invalid_argument, "path is NULL", .{}));
    o.* = adbc_driver.load(p, entrypoint) orelse return code(status.lastStatus());
    return code(.ok);
}

export fn abd_adbc_driver_version(driver: *const adbc_driver.Driver) c_int {
    return driver.version;
}

/// Calls the driver's release once and frees it.
export fn abd_adbc_driver_unload(driver: ?*adbc_driver.Driver) void {
    adbc_driver.unload(driver orelse return);
}

/// A zeroed AdbcDatabase / AdbcConnection / AdbcStatement (at offset 0) with
/// its guard. Free with `abd_adbc_object_free` after the driver released it.
export fn abd_adbc_object_new() ?*adbc_call.Object {
    return adbc_call.objectNew();
}

export fn abd_adbc_object_free(object: ?*adbc_call.Object) void {
    adbc_call.objectFree(object orelse return);
}

fn wordsFrom(words: ?[*]const f64, n: u32, out: *[adbc_call.max_words]usize) ?[]const usize {
    if (n == 0 or n > adbc_call.max_words) {
        _ = status.fail(.invalid_argument, "an ADBC call takes 1 to {d} arguments, not {d}", .{ adbc_call.max_words, n });
        return null;
    }
    const w = words orelse {
        _ = status.fail(.invalid_argument, "words pointer is NULL", .{});
        return null;
    };
    for (0..n) |i| {
        const value = w[i];
        if (!(value >= -9007199254740992.0 and value <= 9007199254740992.0) or @trunc(value) != value) {
            _ = status.fail(.invalid_argument, "ADBC call argument {d} is {d}, not an integer or address", .{ i, value });
            return null;
        }
        out[i] = @bitCast(@as(i64, @intFromFloat(value)));
    }
    return out[0..n];
}

/// Enters `guard` (NULL: none), calls `function` with the `n` words (f64:
/// addresses and integers, exact to 2^53) as its integer arguments, and
/// leaves the guard. Returns the AdbcStatusCode (0..255), or -1 with
/// `abd_last_error` set when the guard is held by another call or the
/// arguments are bad (nothing was called then).
export fn abd_adbc_call(guard: ?*adbc_call.Object, function: ?*const anyopaque, words: ?[*]const f64, n: u32) c_int {
    const f = function orelse {
        _ = status.fail(.invalid_argument, "ADBC function pointer is NULL", .{});
        return -1;
    };
    var buffer: [adbc_call.max_words]usize = undefined;
    const w = wordsFrom(words, n, &buffer) orelse return -1;
    if (guard) |g| if (!adbc_call.enter(g)) return -1;
    const result = adbc_call.callWords(f, w);
    if (guard) |g| adbc_call.leave(g);
    return result;
}

/// `abd_adbc_call` for the Set*OptionDouble shape: `function(handle, key,
/// value, error)`.
export fn abd_adbc_call_double(guard: ?*adbc_call.Object, function: ?*const anyopaque, handle: ?*anyopaque, key: ?[*:0]const u8, value: f64, err: ?*adbc_abi.AdbcError) c_int {
    const f = function orelse {
        _ = status.fail(.invalid_argument, "ADBC function pointer is NULL", .{});
        return -1;
    };
    if (guard) |g| if (!adbc_call.enter(g)) return -1;
    const result = adbc_call.callDouble(f, @intFromPtr(handle), @intFromPtr(key), value, @intFromPtr(err));
    if (guard) |g| adbc_call.leave(g);
    return result;
}

/// `abd_adbc_call` on a thread of its own: the guard is entered now (NULL
/// on refusal, with `abd_last_error`), left when the driver returns; then
/// the calling JS thread's queue gets (adbc_call_done, `key`, job), and JS
/// takes the status with `abd_adbc_job_finish`, which frees the job. The
/// memory the words point to must stay valid until then.
export fn abd_adbc_call_async(guard: ?*adbc_call.Object, function: ?*const anyopaque, words: ?[*]const f64, n: u32, key: f64) ?*adbc_call.Job {
    const g = guard orelse {
        _ = status.fail(.invalid_argument, "guard is NULL", .{});
        return null;
    };
    const f = function orelse {
        _ = status.fail(.invalid_argument, "ADBC function pointer is NULL", .{});
        return null;
    };
    var buffer: [adbc_call.max_words]usize = undefined;
    const w = wordsFrom(words, n, &buffer) orelse return null;
    if (!(key >= 0 and key <= 9007199254740992.0)) {
        _ = status.fail(.invalid_argument, "key {d} is not a non-negative integer", .{key});
        return null;
    }
    return adbc_call.callAsync(g, f, w, @intFromFloat(key));
}

export fn abd_adbc_job_finish(job: *adbc_call.Job) c_int {
    return adbc_call.finish(job);
}

/// Zeroes `err` for a call into `driver` (vendor_code set to
/// ADBC_ERROR_VENDOR_CODE_PRIVATE_DATA for a 1.1.0 driver).
export fn abd_adbc_error_reset(driver: *const adbc_driver.Driver, err: *adbc_abi.AdbcError) void {
    adbc_call.errorReset(driver, err);
}

/// Reads `err` (set by a call into `driver`) into a malloc'd blob (layout in
/// adbc/call.zig `takeError`; its size in `size_out[0]`; free with
/// `abd_free`), releases the error exactly once and resets it.
export fn abd_adbc_error_take(driver: *const adbc_driver.Driver, err: *adbc_abi.AdbcError, size_out: [*]f64) ?[*]u8 {
    var blob: ?[*]u8 = null;
    const size = adbc_call.takeError(driver, err, &blob);
    size_out[0] = @floatFromInt(size);
    return blob;
}

/// AdbcErrors released by `abd_adbc_error_take` since the process started.
export fn abd_adbc_errors_released() f64 {
    return @floatFromInt(adbc_call.errors_released.load(.monotonic));
}

/// Calls refused by `object`'s guard since it was made.
export fn abd_adbc_object_refused(object: *const adbc_call.Object) f64 {
    return @floatFromInt(@atomicLoad(u64, &object.refused, .monotonic));
}

/// Moves `schema` (a driver's) into a new ArrowArrayStream at `out` that
/// has that schema and no batches; its release releases the schema.
export fn abd_adbc_schema_stream(schema: ?*abi.ArrowSchema, out: ?*abi.ArrowArrayStream) c_int {
    const s = schema orelse return code(status.fail(.invalid_argument, "schema pointer is NULL", .{}));
    const o = out orelse return code(status.fail(.invalid_argument, "out pointer is NULL", .{}));
    if (s.release == null) return code(status.fail(.released, "the schema is released", .{}));
    if (!adbc_schema_stream.wrap(s, o)) return code(status.fail(.out_of_memory, "out of memory for a schema stream", .{}));
    return code(.ok);
}

/// Calls `partitions->release` once (if set) and marks it released.
export fn abd_adbc_partitions_release(partitions: ?*adbc_abi.AdbcPartitions) void {
    const p = partitions orelse return;
    if (p.release) |release| release(p);
    p.release = null;
}
