//! The Arrow C Data, C Stream and C Device Data Interface structs, exactly as
//! Arrow C++'s `cpp/src/arrow/c/abi.h` lays them out. Every other Zig file
//! takes its layout from here; nothing else declares these structs.
//!
//! Ownership rules that hold for every struct below:
//! - A struct is released when `release == null`.
//! - A consumer calls only the base struct's `release`, never a child's.
//! - Moving is a bitwise copy followed by setting the source's `release` to
//!   null without calling it.
//! - Release callbacks may be invoked from any thread.

const std = @import("std");

// ---------------------------------------------------------------------------
// C Data Interface
// ---------------------------------------------------------------------------

/// ArrowSchema.flags bits.
pub const flag_dictionary_ordered: i64 = 1;
pub const flag_nullable: i64 = 2;
pub const flag_map_keys_sorted: i64 = 4;

pub const SchemaRelease = *const fn (schema: *ArrowSchema) callconv(.c) void;
pub const ArrayRelease = *const fn (array: *ArrowArray) callconv(.c) void;

/// C: struct ArrowSchema
pub const ArrowSchema = extern struct {
    format: ?[*:0]const u8,
    name: ?[*:0]const u8,
    /// The spec's binary metadata encoding: int32 count, then per pair
    /// int32 key length, key bytes, int32 value length, value bytes.
    metadata: ?[*]const u8,
    flags: i64,
    n_children: i64,
    children: ?[*]?*ArrowSchema,
    dictionary: ?*ArrowSchema,
    release: ?SchemaRelease,
    private_data: ?*anyopaque,

    pub const empty: ArrowSchema = .{
        .format = null,
        .name = null,
        .metadata = null,
        .flags = 0,
        .n_children = 0,
        .children = null,
        .dictionary = null,
        .release = null,
        .private_data = null,
    };

    pub fn isReleased(self: *const ArrowSchema) bool {
        return self.release == null;
    }
};

/// C: struct ArrowArray
pub const ArrowArray = extern struct {
    length: i64,
    /// -1 means "not computed".
    null_count: i64,
    offset: i64,
    n_buffers: i64,
    n_children: i64,
    buffers: ?[*]?*const anyopaque,
    children: ?[*]?*ArrowArray,
    dictionary: ?*ArrowArray,
    release: ?ArrayRelease,
    private_data: ?*anyopaque,

    pub const empty: ArrowArray = .{
        .length = 0,
        .null_count = 0,
        .offset = 0,
        .n_buffers = 0,
        .n_children = 0,
        .buffers = null,
        .children = null,
        .dictionary = null,
        .release = null,
        .private_data = null,
    };

    pub fn isReleased(self: *const ArrowArray) bool {
        return self.release == null;
    }
};

// ---------------------------------------------------------------------------
// C Device Data Interface
// ---------------------------------------------------------------------------

/// C: ArrowDeviceType (int32_t). Values equal DLPack's DLDeviceType. Any other
/// value is an "unknown device": accepted, opaque, never dereferenced.
pub const DeviceType = i32;
pub const device_cpu: DeviceType = 1;
pub const device_cuda: DeviceType = 2;
pub const device_cuda_host: DeviceType = 3;
pub const device_opencl: DeviceType = 4;
pub const device_vulkan: DeviceType = 7;
pub const device_metal: DeviceType = 8;
pub const device_vpi: DeviceType = 9;
pub const device_rocm: DeviceType = 10;
pub const device_rocm_host: DeviceType = 11;
pub const device_ext_dev: DeviceType = 12;
pub const device_cuda_managed: DeviceType = 13;
pub const device_oneapi: DeviceType = 14;
pub const device_webgpu: DeviceType = 15;
pub const device_hexagon: DeviceType = 16;

/// All 14 named device types, in value order (used by the manifest and tests).
pub const device_types = [_]struct { name: []const u8, value: DeviceType }{
    .{ .name = "CPU", .value = device_cpu },
    .{ .name = "CUDA", .value = device_cuda },
    .{ .name = "CUDA_HOST", .value = device_cuda_host },
    .{ .name = "OPENCL", .value = device_opencl },
    .{ .name = "VULKAN", .value = device_vulkan },
    .{ .name = "METAL", .value = device_metal },
    .{ .name = "VPI", .value = device_vpi },
    .{ .name = "ROCM", .value = device_rocm },
    .{ .name = "ROCM_HOST", .value = device_rocm_host },
    .{ .name = "EXT_DEV", .value = device_ext_dev },
    .{ .name = "CUDA_MANAGED", .value = device_cuda_managed },
    .{ .name = "ONEAPI", .value = device_oneapi },
    .{ .name = "WEBGPU", .value = device_webgpu },
    .{ .name = "HEXAGON", .value = device_hexagon },
};

pub fn deviceTypeName(device_type: DeviceType) ?[]const u8 {
    for (device_types) |entry| {
        if (entry.value == device_type) return entry.name;
    }
    return null;
}

/// True when the host may read the device's buffers directly (after waiting
/// on the sync event where there is one).
pub fn isHostAccessible(device_type: DeviceType) bool {
    return switch (device_type) {
        device_cpu, device_cuda_host, device_rocm_host, device_cuda_managed => true,
        else => false,
    };
}

/// C: struct ArrowDeviceArray
pub const ArrowDeviceArray = extern struct {
    array: ArrowArray,
    /// -1 for CPU arrays.
    device_id: i64,
    device_type: DeviceType,
    /// Pointer to the event (CUevent*, hipEvent_t*), not the event itself.
    /// NULL when the data is ready as is.
    sync_event: ?*anyopaque,
    /// Producers zero these; consumers must not trust them.
    reserved: [3]i64,

    pub const empty: ArrowDeviceArray = .{
        .array = ArrowArray.empty,
        .device_id = -1,
        .device_type = device_cpu,
        .sync_event = null,
        .reserved = .{ 0, 0, 0 },
    };
};

// ---------------------------------------------------------------------------
// C Stream Interface and Device Stream Interface
// ---------------------------------------------------------------------------

/// Which of the two stream structs a library call takes or fills. The
/// values are part of the library's C API (and of the layout manifest).
pub const StreamKind = enum(c_int) {
    /// struct ArrowArrayStream
    array = 0,
    /// struct ArrowDeviceArrayStream
    device = 1,
};

/// C: struct ArrowArrayStream
pub const ArrowArrayStream = extern struct {
    get_schema: ?*const fn (stream: *ArrowArrayStream, out: *ArrowSchema) callconv(.c) c_int,
    get_next: ?*const fn (stream: *ArrowArrayStream, out: *ArrowArray) callconv(.c) c_int,
    /// Valid only after a non-zero return, until the next call on the stream.
    get_last_error: ?*const fn (stream: *ArrowArrayStream) callconv(.c) ?[*:0]const u8,
    release: ?*const fn (stream: *ArrowArrayStream) callconv(.c) void,
    private_data: ?*anyopaque,

    pub const empty: ArrowArrayStream = .{
        .get_schema = null,
        .get_next = null,
        .get_last_error = null,
        .release = null,
        .private_data = null,
    };
};

/// C: struct ArrowDeviceArrayStream
pub const ArrowDeviceArrayStream = extern struct {
    /// Every array of the stream has this device type; device_id may vary.
    device_type: DeviceType,
    get_schema: ?*const fn (stream: *ArrowDeviceArrayStream, out: *ArrowSchema) callconv(.c) c_int,
    get_next: ?*const fn (stream: *ArrowDeviceArrayStream, out: *ArrowDeviceArray) callconv(.c) c_int,
    get_last_error: ?*const fn (stream: *ArrowDeviceArrayStream) callconv(.c) ?[*:0]const u8,
    release: ?*const fn (stream: *ArrowDeviceArrayStream) callconv(.c) void,
    private_data: ?*anyopaque,

    pub const empty: ArrowDeviceArrayStream = .{
        .device_type = device_cpu,
        .get_schema = null,
        .get_next = null,
        .get_last_error = null,
        .release = null,
        .private_data = null,
    };
};

// ---------------------------------------------------------------------------
// Async Device Stream Interface (header layout: the producer has no release)
// ---------------------------------------------------------------------------

/// C: struct ArrowAsyncTask
pub const ArrowAsyncTask = extern struct {
    /// Called exactly once per task. `out == NULL` means "not wanted; clean up".
    extract_data: ?*const fn (self: *ArrowAsyncTask, out: ?*ArrowDeviceArray) callconv(.c) c_int,
    private_data: ?*anyopaque,
};

/// C: struct ArrowAsyncProducer (40 bytes; no `release`, see ABI-NOTES.md)
pub const ArrowAsyncProducer = extern struct {
    device_type: DeviceType,
    /// `n <= 0` is invalid and reported through on_error (EINVAL).
    request: ?*const fn (self: *ArrowAsyncProducer, n: i64) callconv(.c) void,
    cancel: ?*const fn (self: *ArrowAsyncProducer) callconv(.c) void,
    additional_metadata: ?[*]const u8,
    private_data: ?*anyopaque,
};

/// C: struct ArrowAsyncDeviceStreamHandler
pub const ArrowAsyncDeviceStreamHandler = extern struct {
    on_schema: ?*const fn (self: *ArrowAsyncDeviceStreamHandler, stream_schema: *ArrowSchema) callconv(.c) c_int,
    on_next_task: ?*const fn (self: *ArrowAsyncDeviceStreamHandler, task: ?*ArrowAsyncTask, metadata: ?[*:0]const u8) callconv(.c) c_int,
    on_error: ?*const fn (self: *ArrowAsyncDeviceStreamHandler, code: c_int, message: ?[*:0]const u8, metadata: ?[*:0]const u8) callconv(.c) void,
    release: ?*const fn (self: *ArrowAsyncDeviceStreamHandler) callconv(.c) void,
    producer: ?*ArrowAsyncProducer,
    private_data: ?*anyopaque,
};

// ---------------------------------------------------------------------------
// Layout, asserted at compile time against Arrow C++'s abi.h
// (64-bit targets). A changed field order or type fails the build here.
// ---------------------------------------------------------------------------

/// One row per struct: its size and every field's offset, in declaration
/// order. The manifest (manifest.zig) and the tests read this same table.
pub const Layout = struct {
    c_name: []const u8,
    type: type,
    size: usize,
    fields: []const struct { []const u8, usize },
};

pub const layouts = [_]Layout{
    .{ .c_name = "ArrowSchema", .type = ArrowSchema, .size = 72, .fields = &.{
        .{ "format", 0 },      .{ "name", 8 },       .{ "metadata", 16 },
        .{ "flags", 24 },      .{ "n_children", 32 }, .{ "children", 40 },
        .{ "dictionary", 48 }, .{ "release", 56 },   .{ "private_data", 64 },
    } },
    .{ .c_name = "ArrowArray", .type = ArrowArray, .size = 80, .fields = &.{
        .{ "length", 0 },    .{ "null_count", 8 }, .{ "offset", 16 },
        .{ "n_buffers", 24 }, .{ "n_children", 32 }, .{ "buffers", 40 },
        .{ "children", 48 }, .{ "dictionary", 56 }, .{ "release", 64 },
        .{ "private_data", 72 },
    } },
    .{ .c_name = "ArrowArrayStream", .type = ArrowArrayStream, .size = 40, .fields = &.{
        .{ "get_schema", 0 }, .{ "get_next", 8 }, .{ "get_last_error", 16 },
        .{ "release", 24 },   .{ "private_data", 32 },
    } },
    .{ .c_name = "ArrowDeviceArray", .type = ArrowDeviceArray, .size = 128, .fields = &.{
        .{ "array", 0 },       .{ "device_id", 80 }, .{ "device_type", 88 },
        .{ "sync_event", 96 }, .{ "reserved", 104 },
    } },
    .{ .c_name = "ArrowDeviceArrayStream", .type = ArrowDeviceArrayStream, .size = 48, .fields = &.{
        .{ "device_type", 0 },     .{ "get_schema", 8 }, .{ "get_next", 16 },
        .{ "get_last_error", 24 }, .{ "release", 32 },   .{ "private_data", 40 },
    } },
    .{ .c_name = "ArrowAsyncTask", .type = ArrowAsyncTask, .size = 16, .fields = &.{
        .{ "extract_data", 0 }, .{ "private_data", 8 },
    } },
    .{ .c_name = "ArrowAsyncProducer", .type = ArrowAsyncProducer, .size = 40, .fields = &.{
        .{ "device_type", 0 },          .{ "request", 8 }, .{ "cancel", 16 },
        .{ "additional_metadata", 24 }, .{ "private_data", 32 },
    } },
    .{ .c_name = "ArrowAsyncDeviceStreamHandler", .type = ArrowAsyncDeviceStreamHandler, .size = 48, .fields = &.{
        .{ "on_schema", 0 }, .{ "on_next_task", 8 }, .{ "on_error", 16 },
        .{ "release", 24 },  .{ "producer", 32 },    .{ "private_data", 40 },
    } },
};

comptime {
    std.debug.assert(@sizeOf(usize) == 8); // the table above is for 64-bit targets
    for (layouts) |layout| {
        if (@sizeOf(layout.type) != layout.size)
            @compileError(layout.c_name ++ " has the wrong size");
        const declared = @typeInfo(layout.type).@"struct".field_names;
        if (declared.len != layout.fields.len)
            @compileError(layout.c_name ++ " has a field the layout table does not list");
        for (layout.fields, declared) |expected, actual| {
            if (!std.mem.eql(u8, expected[0], actual))
                @compileError(layout.c_name ++ "." ++ actual ++ " is out of order");
            if (@offsetOf(layout.type, actual) != expected[1])
                @compileError(layout.c_name ++ "." ++ actual ++ " has the wrong offset");
        }
    }
}

test "device type names cover the 14 spec values and nothing else" {
    try std.testing.expectEqual(@as(usize, 14), device_types.len);
    try std.testing.expectEqualStrings("ROCM_HOST", deviceTypeName(11).?);
    try std.testing.expect(deviceTypeName(5) == null);
    try std.testing.expect(deviceTypeName(0) == null);
}

test "host accessibility follows the spec's device kinds" {
    try std.testing.expect(isHostAccessible(device_cpu));
    try std.testing.expect(isHostAccessible(device_cuda_managed));
    try std.testing.expect(!isHostAccessible(device_cuda));
    try std.testing.expect(!isHostAccessible(device_rocm));
    try std.testing.expect(!isHostAccessible(99));
}
