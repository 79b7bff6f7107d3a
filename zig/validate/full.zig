//! The full level of validation (validate.zig): every offset, type id,
//! view, run end and dictionary index read and checked, and UTF-8; and the
//! reads of buffer values the walk shares. `self` is the walk
//! (validate.zig `Walker`): these report through its `failAt`, which
//! prefixes the path of the node being checked. Called only where the host
//! may read the buffers.

const std = @import("std");
const abi = @import("../core/abi.zig");
const format = @import("../core/format.zig");
const status = @import("../core/status.zig");
const Status = status.Status;

/// The bitmap that says which slots are null, or null when every slot is
/// valid. Like Arrow C++'s import, a bitmap is ignored when null_count is 0.
pub fn validityOf(ty: *const format.Type, array: *const abi.ArrowArray, buffers: []const ?*const anyopaque) ?[*]const u8 {
    if (!ty.hasValidity() or array.null_count == 0 or buffers.len == 0) return null;
    return @ptrCast(buffers[0]);
}

pub fn isValid(validity: ?[*]const u8, index: usize) bool {
    const bits = validity orelse return true;
    return bits[index / 8] & (@as(u8, 1) << @intCast(index % 8)) != 0;
}

pub fn readOffset(ty: *const format.Type, offsets: *const anyopaque, index: usize) i64 {
    return switch (ty.id) {
        .large_binary, .large_utf8, .large_list => @as([*]align(1) const i64, @ptrCast(offsets))[index],
        else => @as([*]align(1) const i32, @ptrCast(offsets))[index],
    };
}

/// A union in the pre-1.0 layout: one buffer more than the format needs
/// (a leading validity buffer).
pub fn legacyUnion(ty: *const format.Type, array: *const abi.ArrowArray) bool {
    return (ty.id == .dense_union or ty.id == .sparse_union) and array.n_buffers == @as(i64, ty.fixedBufferCount()) + 1;
}

pub fn readViewValue(ty: *const format.Type, buffer: *const anyopaque, index: usize) i64 {
    return switch (ty.id) {
        .large_list_view => @as([*]align(1) const i64, @ptrCast(buffer))[index],
        else => @as([*]align(1) const i32, @ptrCast(buffer))[index],
    };
}

pub fn readRunEnd(format_char: u8, run_ends: *const abi.ArrowArray, index: i64) i64 {
    const data = run_ends.buffers.?[1] orelse return 0;
    const i: usize = @intCast(index);
    return switch (format_char) {
        's' => @as([*]align(1) const i16, @ptrCast(data))[i],
        'i' => @as([*]align(1) const i32, @ptrCast(data))[i],
        else => @as([*]align(1) const i64, @ptrCast(data))[i],
    };
}

/// Checks the offsets at `start` and `end` and returns the last (the number
/// of value bytes or child slots the array spans).
pub fn readOffsetRange(ty: *const format.Type, offsets: *const anyopaque, start: i64, end: i64) error{ Negative, Decreasing }!i64 {
    const last = readOffset(ty, offsets, @intCast(end));
    const first = readOffset(ty, offsets, @intCast(start));
    if (first < 0) return error.Negative;
    if (last < first) return error.Decreasing;
    return last;
}

pub fn checkValuesFull(self: anytype, ty: *const format.Type, array: *const abi.ArrowArray, buffers: []const ?*const anyopaque) Status {
    std.debug.assert(self.level == .full and self.host_readable);
    const start: usize = @intCast(array.offset);
    const end: usize = @intCast(array.offset + array.length);
    // A declared null count must be the bitmap's (as Arrow C++ checks).
    if (ty.hasValidity() and array.null_count >= 0 and buffers.len > 0) {
        if (buffers[0]) |bitmap| {
            const bits: [*]const u8 = @ptrCast(bitmap);
            var nulls: i64 = 0;
            for (start..end) |i| nulls += @intFromBool(!isValid(bits, i));
            if (nulls != array.null_count)
                return self.failAt(.invalid_layout, "null_count is {d} but the validity bitmap has {d} nulls", .{ array.null_count, nulls });
        }
    }
    switch (ty.id) {
        .binary, .utf8, .large_binary, .large_utf8 => {
            if (array.length == 0) return .ok;
            const offsets = buffers[1] orelse return .ok;
            var previous = readOffset(ty, offsets, start);
            for (start + 1..end + 1) |i| {
                const current = readOffset(ty, offsets, i);
                if (current < previous) return self.failAt(.invalid_layout, "offset {d} ({d}) is smaller than offset {d} ({d})", .{ i, current, i - 1, previous });
                previous = current;
            }
            if (ty.id == .utf8 or ty.id == .large_utf8) {
                // Per value, as Arrow C++ does: two valid strings do not
                // make a valid whole, nor the reverse. Null slots may
                // hold any bytes (the spec leaves them unspecified).
                const validity = validityOf(ty, array, buffers);
                for (start..end) |i| {
                    if (!isValid(validity, i)) continue;
                    const first = readOffset(ty, offsets, i);
                    const last = readOffset(ty, offsets, i + 1);
                    if (last == first) continue;
                    // Offsets are proven non-decreasing, within the data
                    // buffer (default level), and the buffer non-NULL.
                    const data: [*]const u8 = @ptrCast(buffers[2].?);
                    if (!std.unicode.utf8ValidateSlice(data[@intCast(first)..@intCast(last)]))
                        return self.failAt(.invalid_layout, "string {d} is not valid UTF-8", .{i});
                }
            }
        },
        .binary_view, .utf8_view => {
            if (array.length == 0) return .ok;
            const views: [*]const u8 = @ptrCast(buffers[1].?);
            const n_variadic = buffers.len - 3;
            const sizes: ?[*]align(1) const i64 = if (n_variadic > 0) @ptrCast(buffers[buffers.len - 1].?) else null;
            // Null slots may hold any view (as Arrow C++ accepts).
            const validity = validityOf(ty, array, buffers);
            for (start..end) |i| {
                if (!isValid(validity, i)) continue;
                const view = views[i * 16 ..][0..16];
                const len = std.mem.readInt(i32, view[0..4], .little);
                if (len < 0) return self.failAt(.invalid_layout, "view {d} has negative length {d}", .{ i, len });
                var bytes: []const u8 = undefined;
                if (len <= 12) {
                    bytes = view[4 .. 4 + @as(usize, @intCast(len))];
                    // The format pads inline data with zeros (Arrow C++
                    // checks it): only then do equal values have equal views.
                    for (view[4 + @as(usize, @intCast(len)) ..]) |padding| {
                        if (padding != 0) return self.failAt(.invalid_layout, "view {d} is inline with {d} bytes but its padding is not zero", .{ i, len });
                    }
                } else {
                    const buffer_index = std.mem.readInt(i32, view[8..12], .little);
                    const offset = std.mem.readInt(i32, view[12..16], .little);
                    if (buffer_index < 0 or buffer_index >= n_variadic)
                        return self.failAt(.invalid_layout, "view {d} points at variadic buffer {d} of {d}", .{ i, buffer_index, n_variadic });
                    const size = sizes.?[@intCast(buffer_index)];
                    if (offset < 0 or @as(i64, offset) + len > size)
                        return self.failAt(.invalid_layout, "view {d} ({d} bytes at {d}) is out of variadic buffer {d} ({d} bytes)", .{ i, len, offset, buffer_index, size });
                    const data: [*]const u8 = @ptrCast(buffers[2 + @as(usize, @intCast(buffer_index))].?);
                    bytes = data[@intCast(offset)..][0..@intCast(len)];
                    if (!std.mem.eql(u8, view[4..8], bytes[0..4]))
                        return self.failAt(.invalid_layout, "view {d} prefix does not match its data", .{i});
                }
                if (ty.id == .utf8_view and !std.unicode.utf8ValidateSlice(bytes))
                    return self.failAt(.invalid_layout, "view {d} is not valid UTF-8", .{i});
            }
        },
        .sparse_union, .dense_union => {
            if (array.length == 0) return .ok;
            const ids: [*]const i8 = @ptrCast(buffers[0].?);
            outer: for (start..end) |i| {
                for (ty.union_type_ids[0..ty.union_type_count]) |declared| {
                    if (ids[i] == declared) continue :outer;
                }
                return self.failAt(.invalid_layout, "slot {d} has type id {d}, which the format does not declare", .{ i, ids[i] });
            }
        },
        else => {},
    }
    return .ok;
}

pub fn checkChildFull(self: anytype, ty: *const format.Type, array: *const abi.ArrowArray, buffers: []const ?*const anyopaque, child_index: usize, child_schema: *const abi.ArrowSchema, child: *const abi.ArrowArray) Status {
    std.debug.assert(self.level == .full and self.host_readable);
    // Zero-length arrays are checked too (what their buffers hold is
    // still read by consumers: the first offset, the run ends).
    const start: usize = @intCast(array.offset);
    const end: usize = @intCast(array.offset + array.length);
    switch (ty.id) {
        .list, .large_list, .map => {
            const offsets = buffers[1] orelse return .ok;
            var previous = readOffset(ty, offsets, start);
            if (previous < 0) return self.failAt(.invalid_layout, "first offset is negative ({d})", .{previous});
            for (start + 1..end + 1) |i| {
                const current = readOffset(ty, offsets, i);
                if (current < previous) return self.failAt(.invalid_layout, "offset {d} ({d}) is smaller than offset {d} ({d})", .{ i, current, i - 1, previous });
                previous = current;
            }
        },
        .list_view, .large_list_view => {
            const offsets = buffers[1] orelse return .ok;
            const sizes = buffers[2] orelse return .ok;
            const limit = child.length; // logical child slots, as for lists
            for (start..end) |i| {
                const o = readViewValue(ty, offsets, i);
                const s = readViewValue(ty, sizes, i);
                // o and s may be anything up to INT64_MAX: compare
                // without adding them.
                if (o < 0 or s < 0 or o > limit or s > limit - o)
                    return self.failAt(.invalid_layout, "list view {d} (offset {d}, size {d}) is out of the child's {d} values", .{ i, o, s, limit });
            }
        },
        .dense_union => {
            if (array.length == 0) return .ok; // its buffers may be NULL
            const ids: [*]const i8 = @ptrCast(buffers[0].?);
            const offsets: [*]align(1) const i32 = @ptrCast(buffers[1].?);
            const declared = ty.union_type_ids[child_index];
            // Each child's offsets may not go back (as Arrow C++ checks):
            // slots of one type id take the child's values in order.
            var previous: i32 = 0;
            for (start..end) |i| {
                if (ids[i] != declared) continue;
                if (offsets[i] < 0 or offsets[i] >= child.length)
                    return self.failAt(.invalid_layout, "slot {d} has offset {d} into child {d} of length {d}", .{ i, offsets[i], child_index, child.length });
                if (offsets[i] < previous)
                    return self.failAt(.invalid_layout, "slot {d} has offset {d} into child {d}, smaller than the offset before it ({d})", .{ i, offsets[i], child_index, previous });
                previous = offsets[i];
            }
        },
        .run_end_encoded => {
            if (child_index != 0 or child.length == 0) return .ok;
            const format_char = child_schema.format.?[0];
            var previous: i64 = 0;
            var i: i64 = child.offset;
            while (i < child.offset + child.length) : (i += 1) {
                const run_end = readRunEnd(format_char, child, i);
                if (run_end <= previous)
                    return self.failAt(.invalid_layout, "run end {d} ({d}) is not greater than the one before ({d})", .{ i, run_end, previous });
                previous = run_end;
            }
        },
        else => {},
    }
    return .ok;
}

pub fn checkDictionaryIndices(self: anytype, ty: *const format.Type, array: *const abi.ArrowArray, buffers: []const ?*const anyopaque, dictionary_length: i64) Status {
    std.debug.assert(self.level == .full and self.host_readable);
    if (array.length == 0) return .ok;
    const data = buffers[1] orelse return .ok;
    const validity = validityOf(ty, array, buffers);
    const start: usize = @intCast(array.offset);
    const end: usize = @intCast(array.offset + array.length);
    for (start..end) |i| {
        if (!isValid(validity, i)) continue;
        const index: i64 = switch (ty.id) {
            .int8 => @as([*]const i8, @ptrCast(data))[i],
            .uint8 => @as([*]const u8, @ptrCast(data))[i],
            .int16 => @as([*]align(1) const i16, @ptrCast(data))[i],
            .uint16 => @as([*]align(1) const u16, @ptrCast(data))[i],
            .int32 => @as([*]align(1) const i32, @ptrCast(data))[i],
            .uint32 => @as([*]align(1) const u32, @ptrCast(data))[i],
            .int64 => @as([*]align(1) const i64, @ptrCast(data))[i],
            .uint64 => @intCast(@min(@as([*]align(1) const u64, @ptrCast(data))[i], std.math.maxInt(i64))),
            else => unreachable,
        };
        if (index < 0 or index >= dictionary_length)
            return self.failAt(.invalid_layout, "dictionary index {d} at slot {d} is out of the dictionary's {d} values", .{ index, i, dictionary_length });
    }
    return .ok;
}
