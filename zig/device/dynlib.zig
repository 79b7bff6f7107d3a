//! Opening a shared library at run time and resolving a table of its
//! functions, all or nothing (IREE's dynamic symbol table pattern).
//!
//! A table is a struct whose fields are function pointers named exactly as
//! the symbols they bind: the one list that both declares the functions and
//! drives their lookup. Nothing is linked at build time.

const std = @import("std");

/// What `open` tried, for the "not available" message.
pub const Attempts = struct {
    text: [768]u8 = undefined,
    len: usize = 0,

    fn add(self: *Attempts, path: []const u8, why: []const u8) void {
        const sep = if (self.len == 0) "" else "; ";
        const piece = std.fmt.bufPrint(self.text[self.len..], "{s}{s} ({s})", .{ sep, path, why }) catch return;
        self.len += piece.len;
    }

    pub fn slice(self: *const Attempts) []const u8 {
        return self.text[0..self.len];
    }
};

pub const Opened = struct { handle: *anyopaque, path: [:0]const u8 };

/// Opens the first of `candidates` that loads. On failure every attempt and
/// the loader's reason are in `attempts`.
pub fn open(candidates: []const [:0]const u8, attempts: *Attempts) ?Opened {
    for (candidates) |path| {
        if (std.c.dlopen(path.ptr, .{ .NOW = true, .GLOBAL = false })) |handle| return .{ .handle = handle, .path = path };
        const reason = if (std.c.dlerror()) |message| std.mem.span(message) else "dlopen failed";
        attempts.add(path, shortReason(reason, path));
    }
    return null;
}

/// dlerror() repeats the path; keep only what follows it.
fn shortReason(reason: []const u8, path: []const u8) []const u8 {
    if (std.mem.indexOf(u8, reason, path)) |at| {
        var rest = reason[at + path.len ..];
        rest = std.mem.trimStart(u8, rest, ": ");
        if (rest.len > 0) return rest;
    }
    return reason;
}

pub fn close(handle: *anyopaque) void {
    _ = std.c.dlclose(handle);
}

/// Resolves every field of `Table` in `handle`. Returns null, with the
/// first missing symbol's name in `missing`, unless all of them resolve.
pub fn loadTable(comptime Table: type, handle: *anyopaque, missing: *[]const u8) ?Table {
    var table: Table = undefined;
    const info = @typeInfo(Table).@"struct";
    inline for (info.field_names, info.field_types) |name, FieldType| {
        const symbol = std.c.dlsym(handle, name) orelse {
            missing.* = name;
            return null;
        };
        @field(table, name) = @as(FieldType, @ptrCast(@alignCast(symbol)));
    }
    return table;
}

test "libc resolves a table and a missing symbol is named" {
    var attempts: Attempts = .{};
    const candidates = [_][:0]const u8{ "libabd-does-not-exist.so", "libc.so.6" };
    const opened = open(&candidates, &attempts) orelse return error.TestUnexpectedResult; // libc is always there on Linux
    const handle = opened.handle;
    try std.testing.expectEqualStrings("libc.so.6", opened.path);
    defer close(handle);
    try std.testing.expect(std.mem.indexOf(u8, attempts.slice(), "libabd-does-not-exist.so") != null);
    const Good = struct { strlen: *const fn ([*:0]const u8) callconv(.c) usize };
    var missing: []const u8 = "";
    const good = loadTable(Good, handle, &missing).?;
    try std.testing.expectEqual(@as(usize, 3), good.strlen("abc"));
    const Bad = struct { strlen: *const fn ([*:0]const u8) callconv(.c) usize, abd_no_such_symbol: *const fn () callconv(.c) void };
    try std.testing.expect(loadTable(Bad, handle, &missing) == null);
    try std.testing.expectEqualStrings("abd_no_such_symbol", missing);
}
