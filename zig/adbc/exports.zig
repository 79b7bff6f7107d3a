//! The C symbols of adbc/result_stream.zig and of sharing a connection
//! between JS threads (the rest of the ADBC symbols are in c_api.zig,
//! "ADBC").

const core_abi = @import("../core/abi.zig");
const driver_mod = @import("driver.zig");
const result_stream = @import("result_stream.zig");
const call = @import("call.zig");
const status = @import("../core/status.zig");

/// Wraps the driver's result stream at `stream` in place so that a failing
/// get_next keeps the driver's AdbcError (ErrorFromArrayStream). Returns
/// the slot to read it from (release it with `abd_adbc_result_slot_release`),
/// or NULL when the driver offers no such error (the stream is unchanged).
export fn abd_adbc_result_stream(driver: ?*const driver_mod.Driver, stream: ?*core_abi.ArrowArrayStream) ?*result_stream.Slot {
    return result_stream.wrap(driver orelse return null, stream orelse return null);
}

/// Takes the latest failure the slot holds: `out[0]` its blob's size (the
/// layout of call.zig `encodeError`; -1 when none was captured), `out[1]`
/// the AdbcStatusCode, `out[2]` what get_next returned. Returns the blob
/// (free it with abd_free), NULL when none or memory was short.
export fn abd_adbc_result_error(slot: ?*result_stream.Slot, out: [*]f64) ?[*]u8 {
    out[0] = -1;
    const captured = result_stream.take(slot orelse return null) orelse return null;
    out[0] = @floatFromInt(captured.size);
    out[1] = @floatFromInt(captured.status);
    out[2] = @floatFromInt(captured.errno);
    return result_stream.takeBlob(captured);
}

/// Drops the caller's reference to the slot.
export fn abd_adbc_result_slot_release(slot: ?*result_stream.Slot) void {
    result_stream.slotRelease(slot orelse return);
}

/// Lets other JS threads borrow the connection `object` of `driver`
/// (`abd_adbc_object_borrow`) until its owner retires it. 0 or a status.
export fn abd_adbc_object_share(object: ?*call.Object, driver: ?*driver_mod.Driver) c_int {
    const o = object orelse return @intFromEnum(status.fail(.invalid_argument, "object is NULL", .{}));
    const d = driver orelse return @intFromEnum(status.fail(.invalid_argument, "driver is NULL", .{}));
    if (!call.share(o, d)) return @intFromEnum(status.lastStatus());
    return 0;
}

/// Holds the shared connection at `address` (a number from another JS
/// thread) and its driver: `out[0]` the driver's address. 0, or released
/// when the address names no shared connection now (nothing is read at it).
/// Drop the holds with `abd_adbc_object_free` and `abd_adbc_driver_unload`.
export fn abd_adbc_object_borrow(address: f64, out: [*]f64) c_int {
    if (!(address > 0 and address <= 9007199254740992.0) or @trunc(address) != address) {
        return @intFromEnum(status.fail(.invalid_argument, "a shared connection's address must be a positive integer, not {d}", .{address}));
    }
    const driver = call.borrow(@intFromFloat(address)) orelse return @intFromEnum(status.lastStatus());
    out[0] = @floatFromInt(@intFromPtr(driver));
    return 0;
}

/// Retires `object` under its guard before its owner releases it: every
/// later call, and every later borrow, is refused. 0, or the status
/// (wrong_thread) when a call holds it now (with abd_last_error).
export fn abd_adbc_object_retire(object: ?*call.Object) c_int {
    const o = object orelse return @intFromEnum(status.fail(.invalid_argument, "object is NULL", .{}));
    if (!call.retire(o)) return @intFromEnum(status.lastStatus());
    return 0;
}

/// Calls the Cancel function `function` with the `n` words (addresses,
/// as abd_adbc_call takes them) without entering the guard of `object`
/// (the connection: a call of it may be running), but never once it was
/// retired. The AdbcStatusCode, or -1 with abd_last_error.
export fn abd_adbc_call_cancel(object: ?*call.Object, function: ?*const anyopaque, words: ?[*]const f64, n: u32) c_int {
    const o = object orelse return refuse("object is NULL");
    const f = function orelse return refuse("ADBC function pointer is NULL");
    const w = words orelse return refuse("words pointer is NULL");
    if (n == 0 or n > call.max_words) return refuse("an ADBC cancel takes 1 to 9 arguments");
    var buffer: [call.max_words]usize = undefined;
    for (0..n) |i| {
        const value = w[i];
        if (!(value >= 0 and value <= 9007199254740992.0) or @trunc(value) != value) return refuse("an ADBC cancel argument is not an address");
        buffer[i] = @intFromFloat(value);
    }
    return call.callCancel(o, f, buffer[0..n]);
}

fn refuse(comptime message: []const u8) c_int {
    _ = status.fail(.invalid_argument, message, .{});
    return -1;
}
