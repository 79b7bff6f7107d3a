//! A native consumer, shipped in the library so that anyone can check what a
//! producer hands over: it imports (moves in) a schema + device array,
//! validates it, records every buffer's address and size with an FNV-1a
//! checksum of its bytes, then releases it. The demo and the tests use it as
//! "the C side" that proves zero-copy (same addresses) and correct data
//! (same checksums).

const std = @import("std");
const abi = @import("../core/abi.zig");
const status = @import("../core/status.zig");
const owner_mod = @import("owner.zig");
const validate = @import("../validate/validate.zig");
const Status = status.Status;

/// Report words: buffer count, then per buffer (preorder over the tree):
/// address, size in bytes, FNV-1a 32-bit checksum of those bytes (-1 when
/// the memory is not host-readable).
pub const words_per_buffer = 3;

pub fn fnv1a32(bytes: []const u8) u32 {
    var hash: u32 = 0x811c9dc5;
    for (bytes) |b| {
        hash ^= b;
        hash *%= 0x01000193;
    }
    return hash;
}

/// Consumes (moves in and releases) the arrays; writes the report into
/// `report` (which must hold 1 + 3 * buffers words, else `.out_of_range`).
pub fn consume(schema: ?*abi.ArrowSchema, array: ?*abi.ArrowDeviceArray, level: validate.Level, report: []f64) Status {
    var owner: ?*owner_mod.Owner = null;
    const imported = owner_mod.import(schema, array, level, &owner);
    if (imported != .ok) return imported;
    defer owner.?.release();
    const table = &owner.?.table;
    const n = table.buffers.items.len / validate.buffer_words;
    if (report.len < 1 + n * words_per_buffer)
        return status.fail(.out_of_range, "report holds {d} words but {d} buffers need {d}", .{ report.len, n, 1 + n * words_per_buffer });
    report[0] = @floatFromInt(n);
    for (0..n) |i| {
        const address = table.bufferAddress(i);
        const size = table.bufferSize(i);
        const base = 1 + i * words_per_buffer;
        report[base] = @floatFromInt(address);
        report[base + 1] = @floatFromInt(size);
        report[base + 2] = if (!owner.?.host_readable or size < 0)
            -1
        else if (address == 0 or size == 0)
            @floatFromInt(fnv1a32(""))
        else
            @floatFromInt(fnv1a32(@as([*]const u8, @ptrFromInt(address))[0..@intCast(size)]));
    }
    return .ok;
}

test "fnv1a32 matches the reference vectors" {
    try std.testing.expectEqual(@as(u32, 0x811c9dc5), fnv1a32(""));
    try std.testing.expectEqual(@as(u32, 0xe40c292c), fnv1a32("a"));
    try std.testing.expectEqual(@as(u32, 0xbf9cf968), fnv1a32("foobar"));
}
