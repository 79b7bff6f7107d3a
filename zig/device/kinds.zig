//! The device kinds this library drives: the one table that says which
//! runtimes exist, which Arrow device types each serves, and which driver
//! module (zig/device/<module>) implements it. Everything else, in Zig and
//! in TypeScript, reads this table: the runtimes (runtime.zig), the pools
//! indexed by runtime, the messages that list what is supported, and the
//! manifest's "device_kinds" (zig/manifest.zig), from which the TS layer
//! takes kind names, device types, environment variables and libraries.
//!
//! Adding a device type (docs/architecture.md, "Adding a device type"):
//! one entry here, its driver module beside this file (its `ops`, library
//! names, environment variable and version scale), a fake driver under
//! test/fixtures/ for the tests, and docs/devices.md.

const std = @import("std");
const abi = @import("../core/abi.zig");
const ops = @import("ops.zig");

pub const VersionScale = ops.VersionScale;

pub const Kind = struct {
    /// The kind's name in TS, the CLI and JSON ("cuda").
    name: [:0]const u8,
    /// The driver module's file name under zig/device/ (checked by
    /// test/structure/device_kinds.test.ts).
    module: []const u8,
    /// The driver module itself: declares `ops`, `label`,
    /// `default_library_names`, `library_env_var` and `version_scale`.
    driver: type,
    /// The Arrow device type of its device memory.
    device_type: abi.DeviceType,
    /// The Arrow device type of its page-locked host memory.
    host_type: abi.DeviceType,
    /// The Arrow device type of its managed memory; null when Arrow has none.
    managed_type: ?abi.DeviceType,

    /// Every Arrow device type this kind serves.
    pub fn serves(comptime self: Kind, device_type: abi.DeviceType) bool {
        if (device_type == self.device_type or device_type == self.host_type) return true;
        return if (self.managed_type) |managed| device_type == managed else false;
    }
};

pub const table = [_]Kind{
    .{ .name = "cuda", .module = "cuda.zig", .driver = @import("cuda.zig"), .device_type = abi.device_cuda, .host_type = abi.device_cuda_host, .managed_type = abi.device_cuda_managed },
    .{ .name = "rocm", .module = "hip.zig", .driver = @import("hip.zig"), .device_type = abi.device_rocm, .host_type = abi.device_rocm_host, .managed_type = null },
};

pub const count = table.len;

/// "CUDA (2, 3, 13) and ROCm (10, 11)": what `runtime.require` says is
/// supported.
pub const supported_text: []const u8 = blk: {
    var out: []const u8 = "";
    for (table, 0..) |kind, i| {
        const sep = if (i == 0) "" else if (i + 1 == table.len) " and " else ", ";
        out = out ++ sep ++ kind.driver.label ++ std.fmt.comptimePrint(" ({d}, {d}", .{ kind.device_type, kind.host_type });
        if (kind.managed_type) |managed| out = out ++ std.fmt.comptimePrint(", {d}", .{managed});
        out = out ++ ")";
    }
    break :blk out;
};

/// The "device_kinds" array of the manifest: one object per kind.
pub const manifest_json: []const u8 = blk: {
    var out: []const u8 = "[";
    for (table, 0..) |kind, i| {
        if (i > 0) out = out ++ ",";
        const d = kind.driver;
        out = out ++ std.fmt.comptimePrint("{{\"name\":\"{s}\",\"driver\":\"{s}\",\"label\":\"{s}\",\"device_type\":{d},\"host_type\":{d},\"managed_type\":", .{ kind.name, kind.module[0 .. kind.module.len - ".zig".len], d.label, kind.device_type, kind.host_type });
        out = out ++ (if (kind.managed_type) |managed| std.fmt.comptimePrint("{d}", .{managed}) else "null");
        out = out ++ std.fmt.comptimePrint(",\"env_var\":\"{s}\",\"libraries\":[", .{d.library_env_var});
        for (d.default_library_names, 0..) |library, j| {
            out = out ++ (if (j > 0) "," else "") ++ "\"" ++ library ++ "\"";
        }
        out = out ++ std.fmt.comptimePrint("],\"version_scale\":[{d},{d}]}}", .{ d.version_scale.major_div, d.version_scale.minor_div });
    }
    break :blk out ++ "]";
};

comptime {
    // Every driver module declares what the table and the manifest read,
    // and no two kinds share a name or a device type.
    for (table, 0..) |kind, i| {
        const d = kind.driver;
        const _ops: ops.Ops = d.ops;
        const _scale: VersionScale = d.version_scale;
        const _label: []const u8 = d.label;
        const _env: [:0]const u8 = d.library_env_var;
        _ = .{ _ops, _scale, _label, _env, d.default_library_names };
        for (table[0..i]) |other| {
            if (std.mem.eql(u8, other.name, kind.name)) @compileError("device kind named twice: " ++ kind.name);
            if (other.serves(kind.device_type) or other.serves(kind.host_type)) @compileError("device type served twice: " ++ kind.name);
        }
        if (!std.mem.endsWith(u8, kind.module, ".zig")) @compileError("a driver module is a .zig file: " ++ kind.module);
        if (!std.mem.endsWith(u8, @typeName(kind.driver), "." ++ kind.module[0 .. kind.module.len - ".zig".len]))
            @compileError(kind.name ++ ": .module " ++ kind.module ++ " is not the file .driver imports (" ++ @typeName(kind.driver) ++ ")");
        for (table[0..i]) |other| {
            if (std.mem.eql(u8, other.module, kind.module)) @compileError("driver module used twice: " ++ kind.module);
        }
    }
}

test {
    // The driver modules' own tests run with this file's.
    inline for (table) |kind| _ = kind.driver;
}

test "the table serves each device type once and says so" {
    try std.testing.expect(table.len >= 1);
    inline for (table) |kind| {
        try std.testing.expect(kind.serves(kind.device_type));
        try std.testing.expect(kind.serves(kind.host_type));
        try std.testing.expect(!kind.serves(abi.device_cpu));
        try std.testing.expect(std.mem.indexOf(u8, supported_text, kind.driver.label) != null);
        try std.testing.expect(std.mem.indexOf(u8, manifest_json, kind.driver.library_env_var) != null);
    }
    const parsed = try std.json.parseFromSlice(std.json.Value, std.testing.allocator, manifest_json, .{});
    defer parsed.deinit();
    try std.testing.expectEqual(table.len, parsed.value.array.items.len);
}
