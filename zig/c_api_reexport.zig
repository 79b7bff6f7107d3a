//! Re-export and relays: selected parts of an import handed on as new
//! C structs (import/reexport.zig).
//! Part of the C API (c_api.zig: conventions, and the list of areas).

const std = @import("std");
const abi = @import("core/abi.zig");
const status = @import("core/status.zig");
const consumer = @import("import/consumer.zig");
const reexport = @import("import/reexport.zig");
const common = @import("c_api_common.zig");
const Status = common.Status;
const Owner = common.Owner;
const code = common.code;
const levelFrom = common.levelFrom;

// ---------------------------------------------------------------------------
// Re-export and relays (reexport.zig)
// ---------------------------------------------------------------------------


fn requestFrom(words: ?[*]const f64, count: u32, out: *reexport.Request) Status {
    const slice: []const f64 = if (words) |w| w[0..count] else &.{};
    return reexport.Request.fromWords(slice, out);
}

/// Resolves a re-export request (`reexport.RequestWord` words; NULL or 0
/// words: the whole array) into a window: node, C offset, length, null
/// count (`reexport.WindowWord`, 4 words). The caller holds a reference.
export fn abd_owner_select(owner: ?*Owner, request: ?[*]const f64, request_words: u32, out: ?[*]f64) c_int {
    const held = owner orelse return code(status.fail(.invalid_argument, "owner pointer is NULL", .{}));
    const target = out orelse return code(status.fail(.invalid_argument, "out window pointer is NULL", .{}));
    var parsed: reexport.Request = undefined;
    const read = requestFrom(request, request_words, &parsed);
    if (read != .ok) return code(read);
    var window: reexport.Window = undefined;
    const selected = reexport.select(held, parsed, &window);
    if (selected != .ok) return code(selected);
    window.toWords(target[0..reexport.window_words]);
    return 0;
}

/// Re-exports what `request` selects of `owner` as a new ArrowSchema +
/// ArrowDeviceArray, written to `schema_out` and `array_out`, which the
/// caller (the consumer) then owns and releases, from any thread, in any
/// order with other re-exports. The producer's device_type, device_id and
/// sync_event are kept; `reserved` is zeroed. The caller holds a reference
/// to `owner` during the call. On failure the outs are untouched.
export fn abd_owner_reexport(owner: ?*Owner, request: ?[*]const f64, request_words: u32, schema_out: ?*abi.ArrowSchema, array_out: ?*abi.ArrowDeviceArray) c_int {
    const held = owner orelse return code(status.fail(.invalid_argument, "owner pointer is NULL", .{}));
    const schema_target = schema_out orelse return code(status.fail(.invalid_argument, "out schema pointer is NULL", .{}));
    const array_target = array_out orelse return code(status.fail(.invalid_argument, "out device array pointer is NULL", .{}));
    var parsed: reexport.Request = undefined;
    const read = requestFrom(request, request_words, &parsed);
    if (read != .ok) return code(read);
    return code(reexport.reexportDevice(held, parsed, schema_target, array_target));
}

/// Like `abd_owner_reexport` as a plain (CPU) ArrowArray; fails with
/// `unsupported` for memory the host cannot read.
export fn abd_owner_reexport_array(owner: ?*Owner, request: ?[*]const f64, request_words: u32, schema_out: ?*abi.ArrowSchema, array_out: ?*abi.ArrowArray) c_int {
    const held = owner orelse return code(status.fail(.invalid_argument, "owner pointer is NULL", .{}));
    const schema_target = schema_out orelse return code(status.fail(.invalid_argument, "out schema pointer is NULL", .{}));
    const array_target = array_out orelse return code(status.fail(.invalid_argument, "out array pointer is NULL", .{}));
    var parsed: reexport.Request = undefined;
    const read = requestFrom(request, request_words, &parsed);
    if (read != .ok) return code(read);
    return code(reexport.reexportArray(held, parsed, schema_target, array_target));
}

/// Moves `schema` + `array` in (validated at `level`; device memory is never
/// read) and out again into `schema_out` + `array_out`, whose release runs
/// the producer's. On failure what was moved in has been released once.
export fn abd_relay_device_array(schema: ?*abi.ArrowSchema, array: ?*abi.ArrowDeviceArray, level: c_int, schema_out: ?*abi.ArrowSchema, array_out: ?*abi.ArrowDeviceArray) c_int {
    const lvl = levelFrom(level) orelse {
        releaseInputs(schema, if (array) |a| &a.array else null);
        return code(status.fail(.invalid_argument, "validation level {d} is not 0..3", .{level}));
    };
    const schema_target = schema_out orelse {
        releaseInputs(schema, if (array) |a| &a.array else null);
        return code(status.fail(.invalid_argument, "out schema pointer is NULL", .{}));
    };
    const array_target = array_out orelse {
        releaseInputs(schema, if (array) |a| &a.array else null);
        return code(status.fail(.invalid_argument, "out device array pointer is NULL", .{}));
    };
    return code(reexport.relayDevice(schema, array, lvl, schema_target, array_target));
}

/// Like `abd_relay_device_array` for plain (CPU) ArrowArrays.
export fn abd_relay_array(schema: ?*abi.ArrowSchema, array: ?*abi.ArrowArray, level: c_int, schema_out: ?*abi.ArrowSchema, array_out: ?*abi.ArrowArray) c_int {
    const lvl = levelFrom(level) orelse {
        releaseInputs(schema, array);
        return code(status.fail(.invalid_argument, "validation level {d} is not 0..3", .{level}));
    };
    const schema_target = schema_out orelse {
        releaseInputs(schema, array);
        return code(status.fail(.invalid_argument, "out schema pointer is NULL", .{}));
    };
    const array_target = array_out orelse {
        releaseInputs(schema, array);
        return code(status.fail(.invalid_argument, "out array pointer is NULL", .{}));
    };
    return code(reexport.relayArray(schema, array, lvl, schema_target, array_target));
}

/// A relay moves its inputs even when it fails early.
fn releaseInputs(schema: ?*abi.ArrowSchema, array: ?*abi.ArrowArray) void {
    if (array) |a| if (a.release) |release| release(a);
    if (schema) |s| if (s.release) |release| release(s);
}
