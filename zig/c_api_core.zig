//! Library facts and errors, memory the caller owns, and releasing structs
//! from languages that cannot call function pointers.
//! Part of the C API (c_api.zig: conventions, and the list of areas).

const std = @import("std");
const abi = @import("core/abi.zig");
const status = @import("core/status.zig");
const manifest = @import("manifest.zig");
const counters = @import("core/counters.zig");
const common = @import("c_api_common.zig");
const code = common.code;

// ---------------------------------------------------------------------------
// Library facts and errors
// ---------------------------------------------------------------------------

/// JSON: struct sizes and offsets, device types, flags, status codes,
/// counter names, node-table word layout. Static; never freed.
export fn abd_layout_manifest() [*:0]const u8 {
    return manifest.json.ptr;
}

/// The message of this thread's last failure (empty if none). Valid until
/// the next failing call on this thread.
export fn abd_last_error() [*:0]const u8 {
    return status.lastMessage();
}

export fn abd_last_status() c_int {
    return code(status.lastStatus());
}

/// Copies up to `capacity` counters (counters.zig order) into `out`.
export fn abd_counters_read(out: [*]f64, capacity: u32) u32 {
    return @intCast(counters.read(out[0..capacity]));
}

// ---------------------------------------------------------------------------
// Memory the caller owns
// ---------------------------------------------------------------------------

/// Zeroed native memory, e.g. a place for a base struct that must stay at a
/// stable address. Free with `abd_free`.
export fn abd_alloc_zeroed(size: usize) ?*anyopaque {
    const memory = std.c.malloc(@max(size, 1)) orelse return null;
    @memset(@as([*]u8, @ptrCast(memory))[0..@max(size, 1)], 0);
    return memory;
}

export fn abd_free(memory: ?*anyopaque) void {
    std.c.free(memory);
}

// ---------------------------------------------------------------------------
// Releasing structs from languages that cannot call function pointers
// ---------------------------------------------------------------------------

/// Calls `schema->release` if the schema is not released. NULL is a no-op.
export fn abd_schema_release(schema: ?*abi.ArrowSchema) void {
    const s = schema orelse return;
    if (s.release) |release| release(s);
}

export fn abd_array_release(array: ?*abi.ArrowArray) void {
    const a = array orelse return;
    if (a.release) |release| release(a);
}

export fn abd_device_array_release(array: ?*abi.ArrowDeviceArray) void {
    const a = array orelse return;
    if (a.array.release) |release| release(&a.array);
}
