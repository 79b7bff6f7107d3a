//! Status codes returned by every fallible C entry point, and the per-thread
//! last-error message that explains the most recent failure.
//!
//! The numbers are part of the C API and of the TypeScript error mapping
//! (ts/core/errors.ts). They never change meaning; new codes are appended.
//! Each one carries the errno that stream callbacks report for it.

const std = @import("std");
const E = @import("errno.zig").native;

pub const Status = enum(c_int) {
    ok = 0,
    /// A null pointer, a bad enum value, a bad option.
    invalid_argument = 1,
    /// The struct was already released (its `release` is NULL).
    released = 2,
    /// A format string that is malformed or names no known type.
    invalid_format = 3,
    /// Buffers, children, lengths or offsets inconsistent with the format.
    invalid_layout = 4,
    /// A device type this operation does not know how to handle.
    unknown_device = 5,
    /// Nesting deeper than `max_nesting_depth`.
    too_deep = 6,
    out_of_memory = 7,
    /// A child index, slice or other position out of range.
    out_of_range = 8,
    /// The operation is not supported for this type or device.
    unsupported = 9,
    /// A device runtime is not available (library missing, no device, ...).
    device_unavailable = 10,
    /// A device runtime call failed.
    device_error = 11,
    /// A C producer or consumer callback returned an error.
    callback_error = 12,
    /// The stream or task was cancelled.
    cancelled = 13,
    /// The call was made on a thread where it would deadlock or hang.
    wrong_thread = 14,
    /// An internal invariant broke: a bug in this library.
    internal = 15,

    /// The errno-compatible code that stream callbacks return for a status.
    pub fn errno(status: Status) c_int {
        return switch (status) {
            .ok => 0,
            .invalid_argument, .invalid_format, .invalid_layout, .out_of_range, .released => E.EINVAL,
            .out_of_memory => E.ENOMEM,
            .unknown_device, .unsupported => E.EOPNOTSUPP,
            .too_deep => E.E2BIG,
            .device_unavailable => E.ENODEV,
            .device_error, .callback_error, .internal => E.EIO,
            .cancelled => E.ECANCELED,
            .wrong_thread => E.EDEADLK,
        };
    }
};

/// Longest message kept; longer ones are cut with "...".
pub const message_capacity = 1024;

threadlocal var last_message: [message_capacity:0]u8 = @splat(0);
threadlocal var last_status: Status = .ok;

/// Records `message` as this thread's last error and returns `status`, so a
/// call site reads `return fail(.invalid_layout, "...", .{...});`.
pub fn fail(status: Status, comptime fmt: []const u8, args: anytype) Status {
    std.debug.assert(status != .ok);
    last_status = status;
    const written = std.fmt.bufPrint(last_message[0..message_capacity], fmt, args) catch blk: {
        // Too long: keep what fits and mark the cut.
        const cut = last_message[0 .. message_capacity - 3];
        @memcpy(last_message[message_capacity - 3 .. message_capacity], "...");
        break :blk last_message[0 .. cut.len + 3];
    };
    last_message[written.len] = 0;
    return status;
}

/// Prefixes the current message with `prefix` (e.g. a field path), keeping
/// the status. Used while unwinding nested validation.
pub fn prependToMessage(comptime fmt: []const u8, args: anytype) void {
    var old: [message_capacity]u8 = undefined;
    const old_len = std.mem.indexOfScalar(u8, &last_message, 0) orelse message_capacity;
    @memcpy(old[0..old_len], last_message[0..old_len]);
    var head = std.fmt.bufPrint(last_message[0..message_capacity], fmt, args) catch last_message[0..0];
    const room = message_capacity - head.len;
    const keep = @min(room, old_len);
    @memcpy(last_message[head.len .. head.len + keep], old[0..keep]);
    head = last_message[0 .. head.len + keep];
    last_message[head.len] = 0;
}

pub fn lastMessage() [*:0]const u8 {
    return &last_message;
}

pub fn lastStatus() Status {
    return last_status;
}

pub fn clear() void {
    last_status = .ok;
    last_message[0] = 0;
}

test "fail records the message and the status for this thread" {
    clear();
    const s = fail(.invalid_format, "format \"{s}\" is unknown", .{"zz"});
    try std.testing.expectEqual(Status.invalid_format, s);
    try std.testing.expectEqualStrings("format \"zz\" is unknown", std.mem.span(lastMessage()));
    prependToMessage("field \"{s}\": ", .{"a"});
    try std.testing.expectEqualStrings("field \"a\": format \"zz\" is unknown", std.mem.span(lastMessage()));
}

test "an overlong message is cut, not overflowed" {
    const long: [message_capacity * 2]u8 = @splat('x');
    _ = fail(.internal, "{s}", .{&long});
    const msg = std.mem.span(lastMessage());
    try std.testing.expectEqual(@as(usize, message_capacity), msg.len);
    try std.testing.expect(std.mem.endsWith(u8, msg, "..."));
}

test "each thread keeps its own message" {
    _ = fail(.released, "main thread", .{});
    const Worker = struct {
        fn run(out: *[64]u8) void {
            _ = fail(.cancelled, "worker thread", .{});
            const m = std.mem.span(lastMessage());
            @memcpy(out[0..m.len], m);
            out[m.len] = 0;
        }
    };
    var seen: [64]u8 = undefined;
    const t = try std.Thread.spawn(.{}, Worker.run, .{&seen});
    t.join();
    try std.testing.expectEqualStrings("worker thread", std.mem.sliceTo(&seen, 0));
    try std.testing.expectEqualStrings("main thread", std.mem.span(lastMessage()));
}
