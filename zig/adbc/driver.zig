//! Loading an ADBC driver: open its shared library, find its entry point,
//! and let it fill a function table, at revision 1.1.0 or else 1.0.0 (what
//! ADBC's own driver manager does, and no more). A library that is not a
//! driver is refused with its path and what was missing.
//!
//! Ownership: `load` returns a Driver the caller owns; `unload` calls the
//! driver's release once and frees it. The shared library stays mapped for
//! the life of the process: a driver may leave threads or thread-local
//! destructors behind that run after its release, and dlopen counts
//! references so loading it again costs nothing.

const std = @import("std");
const abi = @import("abi.zig");
const status = @import("../core/status.zig");
const counters = @import("../core/counters.zig");

const Status = status.Status;
const fail = status.fail;

/// AdbcDriverInitFunc.
const InitFunc = *const fn (version: c_int, driver: *anyopaque, err: ?*abi.AdbcError) callconv(.c) abi.StatusCode;

/// The function table first: its address is the driver's (the TS layer
/// reads the function pointers at the manifest's AdbcDriver offsets).
pub const Driver = extern struct {
    table: abi.AdbcDriver,
    /// ADBC_VERSION_1_1_0 or ADBC_VERSION_1_0_0: what the driver accepted.
    version: c_int,
    /// Holders: the JS thread that loaded it, and each thread that borrowed
    /// a connection of it. The last one's `unload` releases the driver.
    refs: u32 = 1,
};

/// One more holder of `driver` (a thread borrowing one of its connections).
pub fn retain(driver: *Driver) void {
    _ = @atomicRmw(u32, &driver.refs, .Add, 1, .monotonic);
}

/// Opens `path` and initializes the driver through `entrypoint` (null:
/// "AdbcDriverInit"). On failure returns null with the reason recorded
/// (status.zig): the library that did not open, the entry point that is
/// missing, the revision the driver refused, or the functions it left out.
pub fn load(path: [*:0]const u8, entrypoint: ?[*:0]const u8) ?*Driver {
    const path_text = std.mem.span(path);
    const handle = std.c.dlopen(path, .{ .NOW = true, .GLOBAL = false }) orelse {
        const reason = if (std.c.dlerror()) |message| std.mem.span(message) else "dlopen failed";
        _ = fail(.invalid_argument, "ADBC driver {s}: cannot be opened ({s})", .{ path_text, reason });
        return null;
    };
    const entry_name: [*:0]const u8 = entrypoint orelse "AdbcDriverInit";
    const symbol = std.c.dlsym(handle, entry_name) orelse {
        _ = fail(.invalid_argument, "ADBC driver {s}: not a driver, it exports no entry point {s}", .{ path_text, std.mem.span(entry_name) });
        return null;
    };
    const init: InitFunc = @ptrCast(@alignCast(symbol));
    const driver = std.heap.c_allocator.create(Driver) catch {
        _ = fail(.out_of_memory, "ADBC driver {s}: out of memory", .{path_text});
        return null;
    };
    driver.* = .{ .table = std.mem.zeroes(abi.AdbcDriver), .version = abi.version_1_1_0, .refs = 1 };
    var first = initAt(init, driver, abi.version_1_1_0);
    if (first.code == abi.status_not_implemented) {
        first.deinit();
        driver.table = std.mem.zeroes(abi.AdbcDriver);
        driver.version = abi.version_1_0_0;
        first = initAt(init, driver, abi.version_1_0_0);
    }
    defer first.deinit();
    if (first.code != abi.status_ok) {
        const tried: []const u8 = if (driver.version == abi.version_1_0_0) "revisions 1.1.0 and 1.0.0" else "revision 1.1.0";
        _ = fail(.callback_error, "ADBC driver {s}: {s} refused {s} (ADBC status {d}{s}{s})", .{ path_text, std.mem.span(entry_name), tried, first.code, if (first.message_len > 0) ": " else "", first.message() });
        std.heap.c_allocator.destroy(driver);
        return null;
    }
    inline for (abi.required) |name| {
        if (@field(driver.table, name) == null) {
            _ = fail(.unsupported, "ADBC driver {s}: its function table from {s} has no {s}", .{ path_text, std.mem.span(entry_name), name });
            if (driver.table.release) |release| _ = release(&driver.table, null);
            std.heap.c_allocator.destroy(driver);
            return null;
        }
    }
    counters.add(.live_adbc_objects, 1);
    return driver;
}

/// What one init call said, its error already released.
const InitResult = struct {
    code: abi.StatusCode,
    buffer: [256]u8 = undefined,
    message_len: usize = 0,

    fn deinit(_: *InitResult) void {}

    fn message(self: *const InitResult) []const u8 {
        return self.buffer[0..self.message_len];
    }
};

fn initAt(init: InitFunc, driver: *Driver, version: c_int) InitResult {
    var err = std.mem.zeroes(abi.AdbcError);
    err.vendor_code = abi.vendor_code_private_data;
    var result: InitResult = .{ .code = init(version, &driver.table, &err) };
    if (err.message) |message| {
        const text = std.mem.span(message);
        const n = @min(text.len, result.buffer.len);
        @memcpy(result.buffer[0..n], text[0..n]);
        result.message_len = n;
    }
    if (err.release) |release| release(&err);
    return result;
}

/// Drops one holder; the last calls the driver's release once and frees
/// the table.
pub fn unload(driver: *Driver) void {
    if (@atomicRmw(u32, &driver.refs, .Sub, 1, .acq_rel) != 1) return;
    if (driver.table.release) |release| {
        var err = std.mem.zeroes(abi.AdbcError);
        _ = release(&driver.table, &err);
        if (err.release) |release_error| release_error(&err);
    }
    std.heap.c_allocator.destroy(driver);
    counters.add(.live_adbc_objects, -1);
}
