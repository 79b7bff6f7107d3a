//! The errno values this library reports through stream and async
//! callbacks (EINVAL for bad input, EDEADLK for a pull that would hang, ...),
//! for the platform the library is built for. They differ between
//! platforms (EDEADLK is 35 on Linux, 11 on macOS, 36 on Windows), so none
//! is written as a bare number anywhere else: Zig code uses `native`, and
//! TypeScript reads the same table from the layout manifest ("errno").

const std = @import("std");
const builtin = @import("builtin");

/// The errno names this library uses, with their values on one platform.
pub const Errno = struct {
    EIO: c_int,
    E2BIG: c_int,
    EDEADLK: c_int,
    ENOMEM: c_int,
    ENODEV: c_int,
    EINVAL: c_int,
    EOPNOTSUPP: c_int,
    ECANCELED: c_int,
    EPROTO: c_int,
};

/// Linux (asm-generic/errno.h; x86, arm and riscv share it).
pub const linux: Errno = .{ .EIO = 5, .E2BIG = 7, .EDEADLK = 35, .ENOMEM = 12, .ENODEV = 19, .EINVAL = 22, .EOPNOTSUPP = 95, .ECANCELED = 125, .EPROTO = 71 };
/// macOS and the other Darwin systems (<sys/errno.h>).
pub const darwin: Errno = .{ .EIO = 5, .E2BIG = 7, .EDEADLK = 11, .ENOMEM = 12, .ENODEV = 19, .EINVAL = 22, .EOPNOTSUPP = 102, .ECANCELED = 89, .EPROTO = 100 };
/// Windows (the UCRT's <errno.h>).
pub const windows: Errno = .{ .EIO = 5, .E2BIG = 7, .EDEADLK = 36, .ENOMEM = 12, .ENODEV = 19, .EINVAL = 22, .EOPNOTSUPP = 130, .ECANCELED = 105, .EPROTO = 134 };

/// The table for an operating system (Linux's for the others).
pub fn forOs(tag: std.Target.Os.Tag) Errno {
    if (tag.isDarwin()) return darwin;
    if (tag == .windows) return windows;
    return linux;
}

/// The values for the platform this library is built for.
pub const native: Errno = forOs(builtin.os.tag);

const testing = std.testing;

test "the darwin table is the one a darwin target gets, with <sys/errno.h>'s values" {
    const table = forOs(.macos);
    try testing.expectEqual(@as(c_int, 11), table.EDEADLK);
    try testing.expectEqual(@as(c_int, 102), table.EOPNOTSUPP);
    try testing.expectEqual(@as(c_int, 100), table.EPROTO);
    try testing.expectEqual(@as(c_int, 89), table.ECANCELED);
    try testing.expectEqual(@as(c_int, 22), table.EINVAL);
    try testing.expectEqual(forOs(.ios), table);
    try testing.expectEqual(@as(c_int, 36), forOs(.windows).EDEADLK);
}

test "on Linux the native table agrees with std.posix.E" {
    if (builtin.os.tag != .linux) return error.SkipZigTest;
    const E = std.posix.E;
    try testing.expectEqual(@as(c_int, @intFromEnum(E.IO)), native.EIO);
    try testing.expectEqual(@as(c_int, @intFromEnum(E.@"2BIG")), native.E2BIG);
    try testing.expectEqual(@as(c_int, @intFromEnum(E.DEADLK)), native.EDEADLK);
    try testing.expectEqual(@as(c_int, @intFromEnum(E.NOMEM)), native.ENOMEM);
    try testing.expectEqual(@as(c_int, @intFromEnum(E.NODEV)), native.ENODEV);
    try testing.expectEqual(@as(c_int, @intFromEnum(E.INVAL)), native.EINVAL);
    try testing.expectEqual(@as(c_int, @intFromEnum(E.OPNOTSUPP)), native.EOPNOTSUPP);
    try testing.expectEqual(@as(c_int, @intFromEnum(E.CANCELED)), native.ECANCELED);
    try testing.expectEqual(@as(c_int, @intFromEnum(E.PROTO)), native.EPROTO);
}
