//! Fault-safe struct checks of addresses the caller names
//! (validate/probe.zig).
//! Part of the C API (c_api.zig: conventions, and the list of areas).

const std = @import("std");
const abi = @import("core/abi.zig");
const status = @import("core/status.zig");
const probe = @import("validate/probe.zig");
const probe_policy = @import("validate/probe_policy.zig");
const common = @import("c_api_common.zig");
const Status = common.Status;
const code = common.code;

// ---------------------------------------------------------------------------
// Fault-safe struct checks (probe.zig)
// ---------------------------------------------------------------------------

/// Checks, without faulting, that `address` names a struct of `kind`
/// (0 schema, 1 array, 2 device array, 3 array stream, 4 device array
/// stream, 5 async device stream handler) that is safe to read: readable
/// bytes, a sane shape, readable strings and child pointers. `mode` 0: it
/// must be live (a released one gives ABD_RELEASED); 1: a view or a
/// destination, released allowed, and writable. Reads only; any thread.
/// Mode 2: as 0, for a struct the call owns (moved in): when it is refused
/// but still safe to release (`probe.refusedReleasable`), its release is
/// called here; any other refused struct is left untouched.
export fn abd_probe_struct(kind: c_int, address: usize, mode: c_int) c_int {
    const k = std.enums.fromInt(probe.Kind, kind) orelse return code(status.fail(.invalid_argument, "unknown struct kind {d}", .{kind}));
    if (mode == 2) return code(probeOwned(k, address));
    const m = std.enums.fromInt(probe.Mode, mode) orelse return code(status.fail(.invalid_argument, "unknown probe mode {d}", .{mode}));
    return code(probe.probeStruct(k, address, m));
}

fn probeOwned(kind: probe.Kind, address: usize) status.Status {
    const s = probe.probeStruct(kind, address, .live);
    if (s != .invalid_argument or !probe.refusedReleasable()) return s;
    // The release may call into this library: keep the probe's reason.
    var reason: [status.message_capacity]u8 = undefined;
    const text = std.mem.span(status.lastMessage());
    @memcpy(reason[0..text.len], text);
    switch (kind) {
        .schema => {
            const schema: *abi.ArrowSchema = @ptrFromInt(address);
            schema.release.?(schema);
        },
        .array, .device_array => {
            const array: *abi.ArrowArray = @ptrFromInt(address);
            array.release.?(array);
        },
        .array_stream => {
            const stream: *abi.ArrowArrayStream = @ptrFromInt(address);
            stream.release.?(stream);
        },
        .device_array_stream => {
            const stream: *abi.ArrowDeviceArrayStream = @ptrFromInt(address);
            stream.release.?(stream);
        },
        .async_handler => {
            const handler: *abi.ArrowAsyncDeviceStreamHandler = @ptrFromInt(address);
            handler.release.?(handler);
        },
    }
    return status.fail(s, "{s}", .{reason[0..text.len]});
}

/// `abd_probe_struct` (mode 0) of the live schema and array (`array_kind`
/// 1) or device array (2) that one import takes, in one call. A NULL
/// address is skipped. Returns the first failure, the schema's first.
/// `array_kind` | 0x100: both lie in a live export slot of this library
/// (abd_export_slot_new), read directly; only their release is checked.
export fn abd_probe_pair(schema: usize, array_kind: c_int, array: usize) c_int {
    const own = array_kind & 0x100 != 0;
    const kind = array_kind & ~@as(c_int, 0x100);
    if (kind != 1 and kind != 2) return code(status.fail(.invalid_argument, "unknown array kind {d}", .{array_kind}));
    return code(probe.probePair(schema, if (kind == 1) .array else .device_array, array, own));
}

/// The probe of the schema and array (`array_kind` 1) or device array (2)
/// that one import takes from JS, to `depth` (probe_policy.zig): 0 the
/// roots, in one system call when they look live (validation "minimal"
/// and "default"); 1 every node (validation "full"). A NULL address is
/// skipped. Returns 0, or the status | 0x10000 when the array's side
/// failed | 0x20000 when a node below the roots failed (its message names
/// the node); a failure of the roots carries neither flag: probe each
/// root with abd_probe_struct to learn which failed.
export fn abd_probe_import(schema: usize, array_kind: c_int, array: usize, depth: c_int) c_int {
    if (array_kind != 1 and array_kind != 2) return code(status.fail(.invalid_argument, "unknown array kind {d}", .{array_kind}));
    const d = std.enums.fromInt(probe_policy.Depth, depth) orelse return code(status.fail(.invalid_argument, "unknown probe depth {d}", .{depth}));
    const v = probe_policy.probeImport(schema, if (array_kind == 1) .array else .device_array, array, d);
    if (v.status == .ok) return 0;
    return code(v.status) | (@as(c_int, v.side) << 16) | (@as(c_int, @intFromBool(v.deep)) << 17);
}
