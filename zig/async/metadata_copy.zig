//! Heap copies of metadata in the C Data Interface's binary encoding (as in
//! ArrowSchema.metadata, ArrowAsyncProducer.additional_metadata, and the
//! metadata arguments of the async handler callbacks). The encoding carries
//! no total size: metadata.zig walks its length fields, within limits.

const std = @import("std");
const metadata = @import("../core/metadata.zig");

/// The encoded size of `blob`, or null when its lengths are out of bounds.
pub fn byteLength(blob: [*]const u8) ?usize {
    return metadata.encodedLength(blob) catch null;
}

/// A heap copy of `blob` (null stays null). `error.Malformed` when its
/// lengths are out of bounds, `error.OutOfMemory` when no copy could be made.
pub fn dupe(blob: ?[*]const u8) error{ Malformed, OutOfMemory }!?[]u8 {
    const source = blob orelse return null;
    const len = byteLength(source) orelse return error.Malformed;
    return try std.heap.c_allocator.dupe(u8, source[0..len]);
}

pub fn free(copy: ?[]u8) void {
    if (copy) |bytes| std.heap.c_allocator.free(bytes);
}

test "copies of well-formed metadata; malformed is refused" {
    const two = "\x02\x00\x00\x00" ++ "\x01\x00\x00\x00k" ++ "\x02\x00\x00\x00vv" ++ "\x00\x00\x00\x00" ++ "\x00\x00\x00\x00";
    const copy = (try dupe(two)).?;
    defer free(copy);
    try std.testing.expectEqualSlices(u8, two, copy);
    try std.testing.expectEqual(@as(?[]u8, null), try dupe(null));
    try std.testing.expectError(error.Malformed, dupe("\xff\xff\xff\xff"));
}
