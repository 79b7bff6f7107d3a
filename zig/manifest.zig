//! The layout manifest: a JSON document, built at compile time from abi.zig
//! and status.zig, that FFI consumers which cannot read C headers (Bun) check
//! their own struct offsets against when they load the library.
//!
//! Shape:
//! {"abi":1,"pointer_size":8,
//!  "structs":{"ArrowSchema":{"size":72,"fields":{"format":0,...}},...},
//!  "device_types":{"CPU":1,...},
//!  "flags":{"DICTIONARY_ORDERED":1,"NULLABLE":2,"MAP_KEYS_SORTED":4},
//!  "status":{"ok":0,...},
//!  ...enum tables: counters, node/buffer words, buffer kinds, type ids,
//!  validation levels, stream kinds, JS work-queue tags}

const std = @import("std");
const abi = @import("core/abi.zig");
const Status = @import("core/status.zig").Status;
const counters = @import("core/counters.zig");
const validate = @import("validate/validate.zig");
const format = @import("core/format.zig");
const reexport = @import("import/reexport.zig");
const device_runtime = @import("device/runtime.zig");
const device_kinds = @import("device/kinds.zig");
const js_queue = @import("core/js_queue.zig");
const async_consumer = @import("async/consumer.zig");
const async_producer = @import("async/producer.zig");
const errno = @import("core/errno.zig");
const adbc = @import("adbc/abi.zig");

/// Bumped when the library's own C API changes incompatibly.
pub const api_version = 1;

pub const json: [:0]const u8 = build: {
    @setEvalBranchQuota(100_000);
    var out: []const u8 = std.fmt.comptimePrint("{{\"abi\":{d},\"pointer_size\":{d},\"structs\":{{", .{ api_version, @sizeOf(usize) });
    for (abi.layouts, 0..) |layout, i| {
        if (i > 0) out = out ++ ",";
        out = out ++ std.fmt.comptimePrint("\"{s}\":{{\"size\":{d},\"fields\":{{", .{ layout.c_name, @sizeOf(layout.type) });
        for (@typeInfo(layout.type).@"struct".field_names, 0..) |field_name, j| {
            if (j > 0) out = out ++ ",";
            out = out ++ std.fmt.comptimePrint("\"{s}\":{d}", .{ field_name, @offsetOf(layout.type, field_name) });
        }
        out = out ++ "}}";
    }
    out = out ++ "},\"adbc_structs\":{";
    for (adbc.layouts, 0..) |layout, i| {
        if (i > 0) out = out ++ ",";
        out = out ++ std.fmt.comptimePrint("\"{s}\":{{\"size\":{d},\"fields\":{{", .{ layout.c_name, @sizeOf(layout.type) });
        for (@typeInfo(layout.type).@"struct".field_names, 0..) |field_name, j| {
            if (j > 0) out = out ++ ",";
            out = out ++ std.fmt.comptimePrint("\"{s}\":{d}", .{ field_name, @offsetOf(layout.type, field_name) });
        }
        out = out ++ "}}";
    }
    out = out ++ "},\"device_types\":{";
    for (abi.device_types, 0..) |entry, i| {
        if (i > 0) out = out ++ ",";
        out = out ++ std.fmt.comptimePrint("\"{s}\":{d}", .{ entry.name, entry.value });
    }
    out = out ++ std.fmt.comptimePrint("}},\"flags\":{{\"DICTIONARY_ORDERED\":{d},\"NULLABLE\":{d},\"MAP_KEYS_SORTED\":{d}}},\"status\":{{", .{ abi.flag_dictionary_ordered, abi.flag_nullable, abi.flag_map_keys_sorted });
    out = out ++ enumFields(Status) ++ "}";
    out = out ++ enumObject("counters", counters.Counter);
    out = out ++ enumObject("node_words", validate.NodeWord);
    out = out ++ std.fmt.comptimePrint(",\"node_stride\":{d}", .{validate.node_words});
    out = out ++ enumObject("buffer_words", validate.BufferWord);
    out = out ++ std.fmt.comptimePrint(",\"buffer_stride\":{d}", .{validate.buffer_words});
    out = out ++ enumObject("buffer_kinds", format.BufferKind);
    out = out ++ enumObject("type_ids", format.TypeId);
    out = out ++ enumObject("validation_levels", validate.Level);
    out = out ++ enumObject("stream_kinds", abi.StreamKind);
    out = out ++ enumObject("js_work_tags", js_queue.Tag);
    out = out ++ std.fmt.comptimePrint(",\"max_nesting_depth\":{d}", .{validate.max_nesting_depth});
    out = out ++ enumObject("reexport_request_words", reexport.RequestWord);
    out = out ++ enumObject("reexport_flags", reexport.RequestFlag);
    out = out ++ enumObject("reexport_shapes", reexport.Shape);
    out = out ++ enumObject("window_words", reexport.WindowWord);
    out = out ++ ",\"device_kinds\":" ++ device_kinds.manifest_json;
    out = out ++ enumObject("memory_kinds", device_runtime.MemoryKind);
    out = out ++ enumObject("copy_directions", device_runtime.Direction);
    out = out ++ enumObject("pointer_kinds", device_runtime.PointerKind);
    out = out ++ enumObject("async_consumer_words", async_consumer.StateWord);
    out = out ++ enumObject("async_consumer_strings", async_consumer.StringId);
    out = out ++ enumObject("async_producer_words", async_producer.StateWord);
    out = out ++ ",\"errno\":{";
    for (@typeInfo(errno.Errno).@"struct".field_names, 0..) |name, i| {
        if (i > 0) out = out ++ ",";
        out = out ++ std.fmt.comptimePrint("\"{s}\":{d}", .{ name, @field(errno.native, name) });
    }
    out = out ++ "}}";
    const terminated = (out ++ "\x00").*;
    break :build terminated[0..out.len :0];
};

/// `,"name":{"field":value,...}` for every field of an enum.
fn enumObject(comptime name: []const u8, comptime E: type) []const u8 {
    return ",\"" ++ name ++ "\":{" ++ enumFields(E) ++ "}";
}

/// `"field":value,...` for every field of an enum.
fn enumFields(comptime E: type) []const u8 {
    const info = @typeInfo(E).@"enum";
    comptime var out: []const u8 = "";
    inline for (info.field_names, info.field_values, 0..) |field_name, value, i| {
        if (i > 0) out = out ++ ",";
        out = out ++ std.fmt.comptimePrint("\"{s}\":{d}", .{ field_name, value });
    }
    return out;
}

test "the manifest lists every struct and parses as JSON" {
    const parsed = try std.json.parseFromSlice(std.json.Value, std.testing.allocator, json, .{});
    defer parsed.deinit();
    const structs = parsed.value.object.get("structs").?.object;
    try std.testing.expectEqual(abi.layouts.len, structs.count());
    const device_array = structs.get("ArrowDeviceArray").?.object;
    try std.testing.expectEqual(@as(i64, 128), device_array.get("size").?.integer);
    try std.testing.expectEqual(@as(i64, 96), device_array.get("fields").?.object.get("sync_event").?.integer);
    const producer = structs.get("ArrowAsyncProducer").?.object.get("fields").?.object;
    try std.testing.expect(producer.get("release") == null);
    try std.testing.expectEqual(@as(usize, 14), parsed.value.object.get("device_types").?.object.count());
}
