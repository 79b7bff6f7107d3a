//! The size of metadata in the C Data Interface's binary encoding (used by
//! ArrowSchema.metadata, ArrowAsyncProducer.additional_metadata, and the
//! metadata arguments of the async handler callbacks): int32 pair count,
//! then per pair int32 key length, key bytes, int32 value length, value
//! bytes. The encoding is self-delimiting but carries no total length, so
//! copying it means walking it first.

const std = @import("std");

/// Limits a walk of untrusted metadata: more pairs or bytes than this is
/// treated as malformed rather than read.
pub const max_pairs = 1 << 20;
pub const max_bytes = 1 << 26;

/// Total encoded size in bytes, or null when the encoding is malformed
/// (negative counts or lengths, or past the limits above).
pub fn byteLength(metadata: [*]const u8) ?usize {
    const count = readInt(metadata, 0);
    if (count < 0 or count > max_pairs) return null;
    var at: usize = 4;
    for (0..@intCast(count)) |_| {
        for (0..2) |_| { // key, then value
            const len = readInt(metadata, at);
            if (len < 0) return null;
            at += 4 + @as(usize, @intCast(len));
            if (at > max_bytes) return null;
        }
    }
    return at;
}

fn readInt(bytes: [*]const u8, at: usize) i32 {
    return std.mem.readInt(i32, bytes[at..][0..4], .little);
}

/// A heap copy of `metadata` (null stays null). `error.Malformed` when the
/// encoding is malformed, `error.OutOfMemory` when no copy could be made.
pub fn dupe(metadata: ?[*]const u8) error{ Malformed, OutOfMemory }!?[]u8 {
    const source = metadata orelse return null;
    const len = byteLength(source) orelse return error.Malformed;
    return try std.heap.c_allocator.dupe(u8, source[0..len]);
}

pub fn free(copy: ?[]u8) void {
    if (copy) |bytes| std.heap.c_allocator.free(bytes);
}

test "byte length of well-formed and malformed metadata" {
    const two = "\x02\x00\x00\x00" ++ "\x01\x00\x00\x00k" ++ "\x02\x00\x00\x00vv" ++ "\x00\x00\x00\x00" ++ "\x00\x00\x00\x00";
    try std.testing.expectEqual(@as(?usize, two.len), byteLength(two));
    try std.testing.expectEqual(@as(?usize, 4), byteLength("\x00\x00\x00\x00"));
    try std.testing.expectEqual(@as(?usize, null), byteLength("\xff\xff\xff\xff"));
    try std.testing.expectEqual(@as(?usize, null), byteLength("\x01\x00\x00\x00\xfe\xff\xff\xff"));
    const copy = (try dupe(two)).?;
    defer free(copy);
    try std.testing.expectEqualSlices(u8, two, copy);
    try std.testing.expectEqual(@as(?[]u8, null), try dupe(null));
}
