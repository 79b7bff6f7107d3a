//! ArrowSchema.metadata in the spec's binary encoding: int32 pair count,
//! then per pair int32 key length, key bytes, int32 value length, value
//! bytes (native byte order: little-endian on every supported platform).
//!
//! The encoding carries no total size, so a reader must trust the lengths
//! it finds; these limits bound how far a malformed blob can make us read.

const std = @import("std");

/// Most pairs one metadata blob may hold.
pub const max_pairs = 1 << 20;
/// Longest key or value.
pub const max_item_bytes = 1 << 26;
/// Largest whole blob.
pub const max_total_bytes = 1 << 28;

pub const Error = error{ NegativeCount, TooManyPairs, NegativeLength, TooLong };

pub fn describe(e: Error) []const u8 {
    return switch (e) {
        error.NegativeCount => "has a negative pair count",
        error.TooManyPairs => "has more than 1048576 pairs",
        error.NegativeLength => "has a key or value with a negative length",
        error.TooLong => "is longer than this library accepts (keys and values up to 64 MiB, 256 MiB in all)",
    };
}

fn readI32(bytes: [*]const u8, at: usize) i32 {
    return std.mem.readInt(i32, bytes[at..][0..4], .little);
}

/// The size in bytes of the metadata blob at `bytes`, reading only its
/// length fields, within the limits above.
pub fn encodedLength(bytes: [*]const u8) Error!usize {
    const count = readI32(bytes, 0);
    if (count < 0) return error.NegativeCount;
    if (count > max_pairs) return error.TooManyPairs;
    var at: usize = 4;
    for (0..@intCast(count)) |_| {
        for (0..2) |_| {
            const len = readI32(bytes, at);
            if (len < 0) return error.NegativeLength;
            if (len > max_item_bytes) return error.TooLong;
            at += 4 + @as(usize, @intCast(len));
            if (at > max_total_bytes) return error.TooLong;
        }
    }
    return at;
}

test "lengths of well-formed blobs" {
    const empty = [_]u8{ 0, 0, 0, 0 };
    try std.testing.expectEqual(@as(usize, 4), try encodedLength(&empty));
    // {"ab": ""}
    const one = [_]u8{ 1, 0, 0, 0, 2, 0, 0, 0, 'a', 'b', 0, 0, 0, 0 };
    try std.testing.expectEqual(@as(usize, 14), try encodedLength(&one));
}

test "malformed blobs are refused before anything is read past them" {
    const negative_count = [_]u8{ 0xff, 0xff, 0xff, 0xff };
    try std.testing.expectError(error.NegativeCount, encodedLength(&negative_count));
    const huge_count = [_]u8{ 0, 0, 0, 0x7f };
    try std.testing.expectError(error.TooManyPairs, encodedLength(&huge_count));
    const negative_key = [_]u8{ 1, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff };
    try std.testing.expectError(error.NegativeLength, encodedLength(&negative_key));
    const huge_key = [_]u8{ 1, 0, 0, 0, 0, 0, 0, 0x10 };
    try std.testing.expectError(error.TooLong, encodedLength(&huge_key));
}
