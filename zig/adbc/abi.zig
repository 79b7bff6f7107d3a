//! The ADBC structs (arrow-adbc c/include/arrow-adbc/adbc.h, API revision
//! 1.1.0), asserted at compile time against the header's layout on 64-bit
//! targets, as core/abi.zig does for the Arrow structs. The manifest
//! (manifest.zig) publishes the same table for the TS layer, which reads
//! the driver's function table by these offsets.

const std = @import("std");

/// AdbcStatusCode: a uint8_t.
pub const StatusCode = u8;
pub const status_ok: StatusCode = 0;
pub const status_not_implemented: StatusCode = 2;
pub const status_invalid_state: StatusCode = 6;

/// ADBC_VERSION_1_0_0 and ADBC_VERSION_1_1_0, as passed to AdbcDriverInit.
pub const version_1_0_0: c_int = 1_000_000;
pub const version_1_1_0: c_int = 1_001_000;

/// ADBC_ERROR_VENDOR_CODE_PRIVATE_DATA: an AdbcError whose vendor_code is
/// this on entry may be filled with the 1.1.0 fields (private_data,
/// private_driver) and so carry details.
pub const vendor_code_private_data: i32 = std.math.minInt(i32);

/// C: struct AdbcError. The caller zero-initializes it (vendor_code set to
/// ADBC_ERROR_VENDOR_CODE_PRIVATE_DATA for a 1.1.0 driver); whoever reads a
/// set one calls `release` exactly once.
pub const AdbcError = extern struct {
    message: ?[*:0]u8,
    vendor_code: i32,
    sqlstate: [5]u8,
    release: ?*const fn (err: *AdbcError) callconv(.c) void,
    private_data: ?*anyopaque,
    private_driver: ?*AdbcDriver,
};

/// C: struct AdbcErrorDetail. Owned by the error; valid until its release.
pub const AdbcErrorDetail = extern struct {
    key: ?[*:0]const u8,
    value: ?[*]const u8,
    value_length: usize,
};

/// C: struct AdbcDatabase, AdbcConnection and AdbcStatement (one shape).
pub const Handle = extern struct {
    private_data: ?*anyopaque,
    private_driver: ?*AdbcDriver,
};

/// C: struct AdbcPartitions. Owned by whoever received it until `release`.
pub const AdbcPartitions = extern struct {
    num_partitions: usize,
    partitions: ?[*]const [*]const u8,
    partition_lengths: ?[*]const usize,
    private_data: ?*anyopaque,
    release: ?*const fn (partitions: *AdbcPartitions) callconv(.c) void,
};

/// A driver function the library only forwards (the TS layer calls it
/// through the generic calls of call.zig, with the arguments adbc.h gives).
pub const Forwarded = ?*const anyopaque;

/// C: struct AdbcDriver, sized for revision 1.1.0. Fields after
/// `StatementSetSubstraitPlan` exist only when the driver was initialized
/// with ADBC_VERSION_1_1_0; for a 1.0.0 driver they stay null.
pub const AdbcDriver = extern struct {
    private_data: ?*anyopaque,
    private_manager: ?*anyopaque,
    release: ?*const fn (driver: *AdbcDriver, err: ?*AdbcError) callconv(.c) StatusCode,

    DatabaseInit: Forwarded,
    DatabaseNew: Forwarded,
    DatabaseSetOption: Forwarded,
    DatabaseRelease: Forwarded,

    ConnectionCommit: Forwarded,
    ConnectionGetInfo: Forwarded,
    ConnectionGetObjects: Forwarded,
    ConnectionGetTableSchema: Forwarded,
    ConnectionGetTableTypes: Forwarded,
    ConnectionInit: Forwarded,
    ConnectionNew: Forwarded,
    ConnectionSetOption: Forwarded,
    ConnectionReadPartition: Forwarded,
    ConnectionRelease: Forwarded,
    ConnectionRollback: Forwarded,

    StatementBind: Forwarded,
    StatementBindStream: Forwarded,
    StatementExecuteQuery: Forwarded,
    StatementExecutePartitions: Forwarded,
    StatementGetParameterSchema: Forwarded,
    StatementNew: Forwarded,
    StatementPrepare: Forwarded,
    StatementRelease: Forwarded,
    StatementSetOption: Forwarded,
    StatementSetSqlQuery: Forwarded,
    StatementSetSubstraitPlan: Forwarded,

    // Revision 1.1.0.
    ErrorGetDetailCount: ?*const fn (err: *const AdbcError) callconv(.c) c_int,
    ErrorGetDetail: ?*const fn (err: *const AdbcError, index: c_int) callconv(.c) AdbcErrorDetail,
    ErrorFromArrayStream: ?*const fn (stream: *anyopaque, status: ?*StatusCode) callconv(.c) ?*const AdbcError,

    DatabaseGetOption: Forwarded,
    DatabaseGetOptionBytes: Forwarded,
    DatabaseGetOptionDouble: Forwarded,
    DatabaseGetOptionInt: Forwarded,
    DatabaseSetOptionBytes: Forwarded,
    DatabaseSetOptionDouble: Forwarded,
    DatabaseSetOptionInt: Forwarded,

    ConnectionCancel: Forwarded,
    ConnectionGetOption: Forwarded,
    ConnectionGetOptionBytes: Forwarded,
    ConnectionGetOptionDouble: Forwarded,
    ConnectionGetOptionInt: Forwarded,
    ConnectionGetStatistics: Forwarded,
    ConnectionGetStatisticNames: Forwarded,
    ConnectionSetOptionBytes: Forwarded,
    ConnectionSetOptionDouble: Forwarded,
    ConnectionSetOptionInt: Forwarded,

    StatementCancel: Forwarded,
    StatementExecuteSchema: Forwarded,
    StatementGetOption: Forwarded,
    StatementGetOptionBytes: Forwarded,
    StatementGetOptionDouble: Forwarded,
    StatementGetOptionInt: Forwarded,
    StatementSetOptionBytes: Forwarded,
    StatementSetOptionDouble: Forwarded,
    StatementSetOptionInt: Forwarded,
};

/// Bytes of the 1.0.0 function table: everything through
/// StatementSetSubstraitPlan (ADBC_DRIVER_1_0_0_SIZE).
pub const driver_1_0_0_size = @offsetOf(AdbcDriver, "ErrorGetDetailCount");
/// ADBC_DRIVER_1_1_0_SIZE.
pub const driver_1_1_0_size = @sizeOf(AdbcDriver);

/// The functions a driver must provide at any revision for this library
/// (`release` is optional: DuckDB leaves it null)
/// to use it: without them no query can run. Others missing answer
/// ADBC_STATUS_NOT_IMPLEMENTED when called.
pub const required = [_][]const u8{
    "DatabaseNew",       "DatabaseSetOption",    "DatabaseInit",
    "DatabaseRelease",   "ConnectionNew",        "ConnectionInit",        "ConnectionRelease",
    "StatementNew",      "StatementSetSqlQuery", "StatementExecuteQuery", "StatementRelease",
};

pub const Layout = struct {
    c_name: []const u8,
    type: type,
    size: usize,
    fields: []const struct { []const u8, usize },
};

/// One row per struct, as adbc.h declares it (64-bit). The driver table is
/// checked field by field: 58 pointers, 464 bytes at 1.1.0, 232 at 1.0.0.
pub const layouts = [_]Layout{
    .{ .c_name = "AdbcError", .type = AdbcError, .size = 48, .fields = &.{
        .{ "message", 0 },      .{ "vendor_code", 8 },     .{ "sqlstate", 12 },
        .{ "release", 24 },     .{ "private_data", 32 },   .{ "private_driver", 40 },
    } },
    .{ .c_name = "AdbcErrorDetail", .type = AdbcErrorDetail, .size = 24, .fields = &.{
        .{ "key", 0 }, .{ "value", 8 }, .{ "value_length", 16 },
    } },
    .{ .c_name = "AdbcHandle", .type = Handle, .size = 16, .fields = &.{
        .{ "private_data", 0 }, .{ "private_driver", 8 },
    } },
    .{ .c_name = "AdbcPartitions", .type = AdbcPartitions, .size = 40, .fields = &.{
        .{ "num_partitions", 0 }, .{ "partitions", 8 },  .{ "partition_lengths", 16 },
        .{ "private_data", 24 },  .{ "release", 32 },
    } },
    .{ .c_name = "AdbcDriver", .type = AdbcDriver, .size = 464, .fields = &driver_fields },
};

/// Every AdbcDriver field at 8 bytes apart, in header order.
const driver_fields = build: {
    const names = @typeInfo(AdbcDriver).@"struct".field_names;
    var out: [names.len]struct { []const u8, usize } = undefined;
    for (names, 0..) |name, i| out[i] = .{ name, i * 8 };
    break :build out;
};

comptime {
    std.debug.assert(@sizeOf(usize) == 8);
    std.debug.assert(driver_fields.len == 58);
    std.debug.assert(driver_1_0_0_size == 232);
    for (layouts) |layout| {
        if (@sizeOf(layout.type) != layout.size) @compileError(layout.c_name ++ " has the wrong size");
        const declared = @typeInfo(layout.type).@"struct".field_names;
        if (declared.len != layout.fields.len) @compileError(layout.c_name ++ " has a field the layout table does not list");
        for (layout.fields, declared) |expected, actual| {
            if (!std.mem.eql(u8, expected[0], actual)) @compileError(layout.c_name ++ "." ++ actual ++ " is out of order");
            if (@offsetOf(layout.type, actual) != expected[1]) @compileError(layout.c_name ++ "." ++ actual ++ " has the wrong offset");
        }
    }
}

test "the 1.1.0 driver table ends with the statement option setters" {
    try std.testing.expectEqual(@as(usize, 456), @offsetOf(AdbcDriver, "StatementSetOptionInt"));
    try std.testing.expectEqual(@as(usize, 224), @offsetOf(AdbcDriver, "StatementSetSubstraitPlan"));
}
