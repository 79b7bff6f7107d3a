//! Format strings (CDataInterface.rst, "Data type description") parsed into a
//! type and its physical buffer layout. This is the one place that knows how
//! many buffers and children each type has and how big each buffer is; import
//! sizing, validation, relays and device copies all ask it.

const std = @import("std");

pub const TypeId = enum(u8) {
    null = 0,
    boolean,
    int8,
    uint8,
    int16,
    uint16,
    int32,
    uint32,
    int64,
    uint64,
    float16,
    float32,
    float64,
    binary,
    large_binary,
    binary_view,
    utf8,
    large_utf8,
    utf8_view,
    decimal,
    fixed_size_binary,
    date32,
    date64,
    time32,
    time64,
    timestamp,
    duration,
    interval_months,
    interval_day_time,
    interval_month_day_nano,
    list,
    large_list,
    list_view,
    large_list_view,
    fixed_size_list,
    @"struct",
    map,
    dense_union,
    sparse_union,
    run_end_encoded,
};

pub const TimeUnit = enum(u8) { second, millisecond, microsecond, nanosecond };

/// What one physical buffer holds; decides its size and, on the TS side, the
/// typed-array element type of its view. The numbers are part of the C API.
pub const BufferKind = enum(u8) {
    /// One bit per slot (validity bitmaps, boolean values).
    bits = 0,
    /// Fixed-width values, `element_bytes` each (see Layout.element_bytes).
    fixed = 1,
    /// int32 offsets, `length + 1` of them.
    offsets32 = 2,
    /// int64 offsets, `length + 1` of them.
    offsets64 = 3,
    /// Variable-size bytes, sized by the last offset.
    bytes = 4,
    /// 16-byte view structs of binary/utf8 view arrays.
    views = 5,
    /// A variadic data buffer of a view array, sized by the sizes buffer.
    variadic_bytes = 6,
    /// int64 sizes of the variadic buffers (the C interface's extra buffer).
    variadic_sizes = 7,
    /// int8 union type ids.
    type_ids = 8,
    /// int32 list-view offsets or sizes (one per slot, not length + 1).
    view_offsets32 = 9,
    /// int64 list-view offsets or sizes.
    view_offsets64 = 10,
    /// int32 dense-union offsets (one per slot).
    union_offsets = 11,
};

/// Longest format string taken (bytes before the NUL). The spec sets no
/// limit, and a timestamp's time zone may be long: this only bounds the
/// scan for the terminator of a format that has none.
pub const max_format_length = 1 << 20;
/// Union type ids are int8, at most 128 distinct values.
pub const max_union_types = 128;

pub const Type = struct {
    id: TypeId,
    /// Byte width of the data buffer for fixed-width types (0 otherwise;
    /// boolean is bit-packed and reports 0).
    byte_width: u32 = 0,
    /// fixed_size_binary width, fixed_size_list list size.
    fixed_size: i32 = 0,
    decimal_precision: i32 = 0,
    decimal_scale: i32 = 0,
    decimal_bit_width: u32 = 0,
    unit: TimeUnit = .second,
    /// Timestamp time zone (a slice of the format string; may be empty).
    timezone: []const u8 = "",
    /// Union type ids as written in the format.
    union_type_ids: [max_union_types]i8 = undefined,
    union_type_count: u8 = 0,

    /// Number of buffers the C interface carries for this type, not counting
    /// the variadic buffers of view types (`n_buffers` must be at least this
    /// for views, and exactly this for every other type).
    pub fn fixedBufferCount(self: *const Type) u8 {
        return switch (self.id) {
            .null, .run_end_encoded => 0,
            .sparse_union => 1,
            .boolean, .int8, .uint8, .int16, .uint16, .int32, .uint32, .int64, .uint64 => 2,
            .float16, .float32, .float64, .decimal, .fixed_size_binary => 2,
            .date32, .date64, .time32, .time64, .timestamp, .duration => 2,
            .interval_months, .interval_day_time, .interval_month_day_nano => 2,
            .fixed_size_list, .@"struct" => 1,
            .list, .large_list, .map => 2,
            .dense_union => 2,
            .binary, .large_binary, .utf8, .large_utf8 => 3,
            .list_view, .large_list_view => 3,
            // validity, views, and the trailing variadic sizes buffer
            .binary_view, .utf8_view => 3,
        };
    }

    pub fn isView(self: *const Type) bool {
        return self.id == .binary_view or self.id == .utf8_view;
    }

    /// True when buffer 0 is a validity bitmap.
    pub fn hasValidity(self: *const Type) bool {
        return switch (self.id) {
            .null, .run_end_encoded, .sparse_union, .dense_union => false,
            else => true,
        };
    }

    pub fn isInteger(self: *const Type) bool {
        return switch (self.id) {
            .int8, .uint8, .int16, .uint16, .int32, .uint32, .int64, .uint64 => true,
            else => false,
        };
    }

    /// The kind of buffer `index` (of `n_buffers`) for this type.
    pub fn bufferKind(self: *const Type, index: usize, n_buffers: usize) BufferKind {
        if (index == 0 and self.hasValidity()) return .bits;
        return switch (self.id) {
            .boolean => .bits,
            .binary, .utf8 => if (index == 1) .offsets32 else .bytes,
            .large_binary, .large_utf8 => if (index == 1) .offsets64 else .bytes,
            .list, .map => .offsets32,
            .large_list => .offsets64,
            .list_view => .view_offsets32,
            .large_list_view => .view_offsets64,
            .binary_view, .utf8_view => if (index == 1) .views else if (index + 1 == n_buffers) .variadic_sizes else .variadic_bytes,
            .sparse_union => .type_ids,
            .dense_union => if (index == 0) .type_ids else .union_offsets,
            else => .fixed,
        };
    }

    /// How many children the type requires, or null when it takes any
    /// number (struct, unions).
    pub fn requiredChildren(self: *const Type) ?u32 {
        return switch (self.id) {
            .list, .large_list, .list_view, .large_list_view, .fixed_size_list, .map => 1,
            .run_end_encoded => 2,
            .@"struct" => null,
            .dense_union, .sparse_union => self.union_type_count,
            else => 0,
        };
    }
};

pub const ParseError = error{InvalidFormat};

/// Parses a format string. On error, `why` names what was wrong.
pub fn parse(format: []const u8, why: *[]const u8) ParseError!Type {
    if (format.len == 0) return bad(why, "is empty");
    if (format.len > max_format_length) return bad(why, "is longer than 1 MiB (1048576 bytes)");
    if (format.len == 1) {
        return switch (format[0]) {
            'n' => .{ .id = .null },
            'b' => .{ .id = .boolean },
            'c' => .{ .id = .int8, .byte_width = 1 },
            'C' => .{ .id = .uint8, .byte_width = 1 },
            's' => .{ .id = .int16, .byte_width = 2 },
            'S' => .{ .id = .uint16, .byte_width = 2 },
            'i' => .{ .id = .int32, .byte_width = 4 },
            'I' => .{ .id = .uint32, .byte_width = 4 },
            'l' => .{ .id = .int64, .byte_width = 8 },
            'L' => .{ .id = .uint64, .byte_width = 8 },
            'e' => .{ .id = .float16, .byte_width = 2 },
            'f' => .{ .id = .float32, .byte_width = 4 },
            'g' => .{ .id = .float64, .byte_width = 8 },
            'z' => .{ .id = .binary },
            'Z' => .{ .id = .large_binary },
            'u' => .{ .id = .utf8 },
            'U' => .{ .id = .large_utf8 },
            else => bad(why, "is not a known type"),
        };
    }
    switch (format[0]) {
        'v' => {
            if (std.mem.eql(u8, format, "vz")) return .{ .id = .binary_view, .byte_width = 16 };
            if (std.mem.eql(u8, format, "vu")) return .{ .id = .utf8_view, .byte_width = 16 };
            return bad(why, "is not a known view type (vz, vu)");
        },
        'd' => return parseDecimal(format, why),
        'w' => {
            if (format[1] != ':') return bad(why, "needs ':' after 'w' (fixed-size binary, e.g. w:16)");
            // Width 0 is allowed (the spec sets no minimum; Arrow C++
            // accepts it): every value is empty, the data buffer holds 0 bytes.
            const width = parseNonNegative(format[2..]) orelse return bad(why, "has a fixed-size binary width that is not a non-negative integer");
            return .{ .id = .fixed_size_binary, .fixed_size = width, .byte_width = @intCast(width) };
        },
        't' => return parseTemporal(format, why),
        '+' => return parseNested(format, why),
        else => return bad(why, "is not a known type"),
    }
}

fn bad(why: *[]const u8, message: []const u8) ParseError {
    why.* = message;
    return error.InvalidFormat;
}

/// A decimal integer in [1, 2^31).
fn parsePositive(text: []const u8) ?i32 {
    const value = parseNonNegative(text) orelse return null;
    return if (value == 0) null else value;
}

/// A decimal integer in [0, 2^31), digits only.
fn parseNonNegative(text: []const u8) ?i32 {
    if (text.len == 0 or text[0] == '+' or text[0] == '-') return null;
    return std.fmt.parseInt(i32, text, 10) catch null;
}

fn parseDecimal(format: []const u8, why: *[]const u8) ParseError!Type {
    if (format.len < 3 or format[1] != ':') return bad(why, "needs 'd:precision,scale[,bitwidth]'");
    var parts = std.mem.splitScalar(u8, format[2..], ',');
    const precision_text = parts.next() orelse return bad(why, "has no decimal precision");
    const scale_text = parts.next() orelse return bad(why, "has no decimal scale");
    const width_text = parts.next();
    if (parts.next() != null) return bad(why, "has more than three decimal parameters");
    const precision = parsePositive(precision_text) orelse return bad(why, "has a decimal precision that is not a positive integer");
    const scale = std.fmt.parseInt(i32, scale_text, 10) catch return bad(why, "has a decimal scale that is not an integer");
    var bit_width: u32 = 128;
    if (width_text) |text| {
        bit_width = std.fmt.parseInt(u32, text, 10) catch return bad(why, "has a decimal bit width that is not an integer");
    }
    const max_precision: i32 = switch (bit_width) {
        32 => 9,
        64 => 18,
        128 => 38,
        256 => 76,
        else => return bad(why, "has a decimal bit width other than 32, 64, 128 or 256"),
    };
    if (precision > max_precision) return bad(why, "has a decimal precision too large for its bit width");
    return .{
        .id = .decimal,
        .byte_width = bit_width / 8,
        .decimal_precision = precision,
        .decimal_scale = scale,
        .decimal_bit_width = bit_width,
    };
}

fn unitFromChar(c: u8) ?TimeUnit {
    return switch (c) {
        's' => .second,
        'm' => .millisecond,
        'u' => .microsecond,
        'n' => .nanosecond,
        else => null,
    };
}

fn parseTemporal(format: []const u8, why: *[]const u8) ParseError!Type {
    if (format.len < 3) return bad(why, "is not a known temporal type");
    const kind = format[1];
    const code = format[2];
    if (kind == 's') {
        const unit = unitFromChar(code) orelse return bad(why, "has an unknown timestamp unit (s, m, u, n)");
        if (format.len < 4 or format[3] != ':') return bad(why, "needs ':' after the timestamp unit (the time zone may be empty)");
        return .{ .id = .timestamp, .byte_width = 8, .unit = unit, .timezone = format[4..] };
    }
    if (format.len != 3) return bad(why, "is not a known temporal type");
    return switch (kind) {
        'd' => switch (code) {
            'D' => .{ .id = .date32, .byte_width = 4 },
            'm' => .{ .id = .date64, .byte_width = 8 },
            else => bad(why, "has an unknown date unit (D, m)"),
        },
        't' => switch (code) {
            's' => .{ .id = .time32, .byte_width = 4, .unit = .second },
            'm' => .{ .id = .time32, .byte_width = 4, .unit = .millisecond },
            'u' => .{ .id = .time64, .byte_width = 8, .unit = .microsecond },
            'n' => .{ .id = .time64, .byte_width = 8, .unit = .nanosecond },
            else => bad(why, "has an unknown time unit (s, m, u, n)"),
        },
        'D' => .{ .id = .duration, .byte_width = 8, .unit = unitFromChar(code) orelse return bad(why, "has an unknown duration unit (s, m, u, n)") },
        'i' => switch (code) {
            'M' => .{ .id = .interval_months, .byte_width = 4 },
            'D' => .{ .id = .interval_day_time, .byte_width = 8 },
            'n' => .{ .id = .interval_month_day_nano, .byte_width = 16 },
            else => bad(why, "has an unknown interval unit (M, D, n)"),
        },
        else => bad(why, "is not a known temporal type"),
    };
}

fn parseNested(format: []const u8, why: *[]const u8) ParseError!Type {
    const rest = format[1..];
    // The one-letter kinds (every batch's struct root is "+s") by one switch.
    if (rest.len == 1) switch (rest[0]) {
        'l' => return .{ .id = .list },
        'L' => return .{ .id = .large_list },
        's' => return .{ .id = .@"struct" },
        'm' => return .{ .id = .map },
        'r' => return .{ .id = .run_end_encoded },
        else => {},
    };
    if (std.mem.eql(u8, rest, "vl")) return .{ .id = .list_view };
    if (std.mem.eql(u8, rest, "vL")) return .{ .id = .large_list_view };
    if (std.mem.startsWith(u8, rest, "w")) {
        if (rest.len < 2 or rest[1] != ':') return bad(why, "needs ':' after '+w' (fixed-size list, e.g. +w:4)");
        // Size 0 is allowed, as for fixed-size binary: every list is empty.
        const size = parseNonNegative(rest[2..]) orelse return bad(why, "has a fixed-size list size that is not a non-negative integer");
        return .{ .id = .fixed_size_list, .fixed_size = size };
    }
    if (std.mem.startsWith(u8, rest, "ud") or std.mem.startsWith(u8, rest, "us")) {
        var result: Type = .{ .id = if (rest[1] == 'd') .dense_union else .sparse_union };
        if (rest.len < 3 or rest[2] != ':') return bad(why, "needs ':' and type ids after '+ud'/'+us'");
        const ids = rest[3..];
        if (ids.len == 0) {
            return result; // a union with no children
        }
        var it = std.mem.splitScalar(u8, ids, ',');
        while (it.next()) |text| {
            const id = std.fmt.parseInt(i8, text, 10) catch return bad(why, "has a union type id that is not an integer in [0, 127]");
            if (id < 0) return bad(why, "has a negative union type id");
            for (result.union_type_ids[0..result.union_type_count]) |seen| {
                if (seen == id) return bad(why, "repeats a union type id");
            }
            if (result.union_type_count == max_union_types) return bad(why, "has more than 128 union type ids");
            result.union_type_ids[result.union_type_count] = id;
            result.union_type_count += 1;
        }
        return result;
    }
    return bad(why, "is not a known nested type");
}

test "primitive formats parse to their widths" {
    var why: []const u8 = "";
    try std.testing.expectEqual(TypeId.int32, (try parse("i", &why)).id);
    try std.testing.expectEqual(@as(u32, 8), (try parse("g", &why)).byte_width);
    try std.testing.expectEqual(@as(u8, 3), (try parse("u", &why)).fixedBufferCount());
    try std.testing.expectEqual(@as(u8, 0), (try parse("n", &why)).fixedBufferCount());
}

test "parameterized formats keep their parameters" {
    var why: []const u8 = "";
    const dec = try parse("d:19,10,256", &why);
    try std.testing.expectEqual(@as(u32, 32), dec.byte_width);
    try std.testing.expectEqual(@as(i32, 10), dec.decimal_scale);
    const ts = try parse("tsn:Europe/Paris", &why);
    try std.testing.expectEqualStrings("Europe/Paris", ts.timezone);
    try std.testing.expectEqual(TimeUnit.nanosecond, ts.unit);
    const ts_utc_less = try parse("tsm:", &why);
    try std.testing.expectEqualStrings("", ts_utc_less.timezone);
    const un = try parse("+ud:4,5,127", &why);
    try std.testing.expectEqual(@as(u8, 3), un.union_type_count);
    try std.testing.expectEqual(@as(i8, 127), un.union_type_ids[2]);
    try std.testing.expectEqual(@as(i32, 123), (try parse("+w:123", &why)).fixed_size);
    const empty_binary = try parse("w:0", &why);
    try std.testing.expectEqual(@as(i32, 0), empty_binary.fixed_size);
    try std.testing.expectEqual(@as(u32, 0), empty_binary.byte_width);
    try std.testing.expectEqual(@as(i32, 0), (try parse("+w:0", &why)).fixed_size);
}

test "malformed formats are rejected with a reason" {
    const cases = [_][]const u8{ "", "x", "d:", "d:40,2", "d:5,2,100", "w:", "w:-1", "w:+1", "+w:-1", "ts", "tsx:", "tsn", "tdX", "+q", "+w", "+w:", "+ud", "+ud:1,1", "+us:200", "vv", "ttq" };
    for (cases) |format| {
        var why: []const u8 = "";
        try std.testing.expectError(error.InvalidFormat, parse(format, &why));
        try std.testing.expect(why.len > 0);
    }
}

test "buffer kinds follow the columnar layout" {
    var why: []const u8 = "";
    const view = try parse("vu", &why);
    try std.testing.expectEqual(BufferKind.bits, view.bufferKind(0, 5));
    try std.testing.expectEqual(BufferKind.views, view.bufferKind(1, 5));
    try std.testing.expectEqual(BufferKind.variadic_bytes, view.bufferKind(3, 5));
    try std.testing.expectEqual(BufferKind.variadic_sizes, view.bufferKind(4, 5));
    const dense = try parse("+ud:0,1", &why);
    try std.testing.expectEqual(BufferKind.type_ids, dense.bufferKind(0, 2));
    try std.testing.expectEqual(BufferKind.union_offsets, dense.bufferKind(1, 2));
    const large = try parse("U", &why);
    try std.testing.expectEqual(BufferKind.offsets64, large.bufferKind(1, 3));
}
