//! The C symbols of adbc/result_stream.zig (the rest of the ADBC symbols
//! are in c_api.zig, "ADBC").

const core_abi = @import("../core/abi.zig");
const driver_mod = @import("driver.zig");
const result_stream = @import("result_stream.zig");

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
