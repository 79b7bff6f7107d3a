//! How deep the address probe (probe.zig) looks at the schema and array
//! that one import takes from JS, by validation level.
//!
//! Structs that a C producer fills in inside the library (get_next of an
//! imported stream, a Python producer's capsule moved in by the shim) are
//! the producer's word and are never probed; nor is a live export slot of
//! this library (probe.probePair's `own_export`). What remains are
//! addresses typed into JS:
//!
//! - `.roots` (validation "minimal" and "default"): one system call. Both
//!   roots' own bytes are copied through the kernel together
//!   (probe_copy.copyMany), then judged from the copy: each release callback in
//!   executable memory, the array's counts sane, the schema's format set;
//!   a schema where an array is expected (or the reverse) is told apart by
//!   which word holds an executable address (a schema's release lies where
//!   an array's dictionary does). Anything else (unreadable roots, a
//!   released struct, a shape that does not look live) takes the whole
//!   probe (probe.probePair), whose verdict and message stand: a wrong
//!   address costs more system calls, a good one costs one. What the
//!   roots name (format and name strings, buffer and child pointer arrays,
//!   children, dictionaries) is the producer's contract at this level, as
//!   it is for Arrow C++ and nanoarrow.
//! - `.tree` (validation "full"): probe.probePair, then probe.probeStruct
//!   of every node below, schema and array trees alike, so that a tree
//!   whose inner pointers are wrong gets a typed error.
//!
//! Reads only; any thread.

const std = @import("std");
const abi = @import("../core/abi.zig");
const status = @import("../core/status.zig");
const probe = @import("probe.zig");
const probe_copy = @import("probe_copy.zig");
const node_table = @import("node_table.zig");
const Status = status.Status;

pub const Depth = enum(c_int) { roots = 0, tree = 1 };

/// A failure: `side` 0 the schema, 1 the array; `deep` when the roots
/// passed and a node below failed (else the caller probes each root on
/// its own to say which failed, and why).
pub const Verdict = struct { status: Status, side: u1 = 0, deep: bool = false };

/// Probes the live `schema` and `array` (an ArrowArray, or an
/// ArrowDeviceArray when `array_kind` is `.device_array`) of one import to
/// `depth`. A NULL address is skipped (the import reports it).
pub fn probeImport(schema: usize, array_kind: probe.Kind, array: usize, depth: Depth) Verdict {
    std.debug.assert(array_kind == .array or array_kind == .device_array);
    if (depth == .roots and rootsLookLive(schema, array_kind, array)) return .{ .status = .ok };
    const pair = probe.probePair(schema, array_kind, array, false);
    if (pair != .ok or depth == .roots) return .{ .status = pair };
    if (schema != 0) {
        const s = walk(.schema, schema, 0);
        if (s != .ok) return .{ .status = s, .side = 0, .deep = true };
    }
    if (array != 0) {
        const s = walk(.array, array, 0);
        if (s != .ok) return .{ .status = s, .side = 1, .deep = true };
    }
    return .{ .status = .ok };
}

const schema_size = @sizeOf(abi.ArrowSchema);
const array_size = @sizeOf(abi.ArrowArray);

fn word(bytes: []const u8, offset: usize) u64 {
    return std.mem.readInt(u64, bytes[offset..][0..8], @import("builtin").cpu.arch.endian());
}

fn signed(bytes: []const u8, offset: usize) i64 {
    return @bitCast(word(bytes, offset));
}

fn count(n: i64) bool {
    return n >= 0 and n <= probe.max_count;
}

/// True when both roots (NULL ones skipped) read in one system call look
/// like live structs of their kinds; false sends them to the whole probe.
fn rootsLookLive(schema: usize, array_kind: probe.Kind, array: usize) bool {
    if (schema % 8 != 0 or array % 8 != 0) return false;
    var schema_bytes: [schema_size]u8 = undefined;
    // The whole struct is proven (an ArrowDeviceArray's device fields
    // are read by the import too); the ArrowArray at its start is judged.
    var array_bytes: [@sizeOf(abi.ArrowDeviceArray)]u8 = undefined;
    const array_len: usize = if (array_kind == .device_array) @sizeOf(abi.ArrowDeviceArray) else array_size;
    var ranges: [2]probe_copy.Range = undefined;
    var n: usize = 0;
    if (schema != 0) {
        ranges[n] = .{ .address = schema, .dest = &schema_bytes };
        n += 1;
    }
    if (array != 0) {
        ranges[n] = .{ .address = array, .dest = array_bytes[0..array_len] };
        n += 1;
    }
    if (n == 0) return false;
    if (probe_copy.copyMany(ranges[0..n]) != n) return false;
    if (schema != 0 and !schemaLooksLive(&schema_bytes)) return false;
    if (array != 0 and !arrayLooksLive(array_bytes[0..array_size])) return false;
    return true;
}

fn schemaLooksLive(b: []const u8) bool {
    const release = word(b, @offsetOf(abi.ArrowSchema, "release"));
    const format = word(b, @offsetOf(abi.ArrowSchema, "format"));
    const n_children = signed(b, @offsetOf(abi.ArrowSchema, "n_children"));
    // An array's first word is its length: a format pointer is at least
    // the first unmapped page's size.
    return release != 0 and format >= 4096 and count(n_children) and probe_copy.executable(@intCast(release));
}

fn arrayLooksLive(b: []const u8) bool {
    const release = word(b, @offsetOf(abi.ArrowArray, "release"));
    const dictionary = word(b, @offsetOf(abi.ArrowArray, "dictionary"));
    if (release == 0 or signed(b, @offsetOf(abi.ArrowArray, "length")) < 0) return false;
    if (signed(b, @offsetOf(abi.ArrowArray, "null_count")) < -1 or signed(b, @offsetOf(abi.ArrowArray, "offset")) < 0) return false;
    if (!count(signed(b, @offsetOf(abi.ArrowArray, "n_buffers"))) or !count(signed(b, @offsetOf(abi.ArrowArray, "n_children")))) return false;
    if (!probe_copy.executable(@intCast(release))) return false;
    // A schema's release callback lies where an array's dictionary does.
    return dictionary == 0 or !probe_copy.executable(@intCast(dictionary));
}

/// probe.probeStruct of every node below `address` (which passed it):
/// children and dictionary, depth first. The probe of a parent proved its
/// child pointer array and each child's bytes readable.
fn walk(kind: probe.Kind, address: usize, depth: usize) Status {
    const size: usize = if (kind == .schema) schema_size else array_size;
    const bytes: [*]const u8 = @ptrFromInt(address);
    const b = bytes[0..size];
    const n_children, const children, const dictionary = if (kind == .schema)
        .{ signed(b, @offsetOf(abi.ArrowSchema, "n_children")), word(b, @offsetOf(abi.ArrowSchema, "children")), word(b, @offsetOf(abi.ArrowSchema, "dictionary")) }
    else
        .{ signed(b, @offsetOf(abi.ArrowArray, "n_children")), word(b, @offsetOf(abi.ArrowArray, "children")), word(b, @offsetOf(abi.ArrowArray, "dictionary")) };
    const has_below = (n_children > 0 and children != 0) or dictionary != 0;
    if (!has_below) return .ok;
    // Deeper trees are refused by the validation before it reads them.
    if (depth >= node_table.max_nesting_depth) return .ok;
    const child_kind: probe.Kind = if (kind == .schema) .schema else .array;
    if (n_children > 0 and n_children <= probe.max_count and children != 0) {
        const entries: [*]align(1) const u64 = @ptrFromInt(@as(usize, @intCast(children)));
        for (0..@intCast(n_children)) |i| {
            const child: usize = @intCast(entries[i]);
            if (child == 0) continue; // the validation's to report
            const s = node(child_kind, child, depth, "child", i);
            if (s != .ok) return s;
        }
    }
    if (dictionary != 0) {
        const s = node(child_kind, @intCast(dictionary), depth, "dictionary", 0);
        if (s != .ok) return s;
    }
    return .ok;
}

fn node(kind: probe.Kind, address: usize, depth: usize, comptime what: []const u8, index: usize) Status {
    const s = probe.probeStruct(kind, address, .live);
    if (s != .ok) {
        status.prependToMessage("{s} {d} at depth {d}: ", .{ what, index, depth + 1 });
        return s;
    }
    return walk(kind, address, depth + 1);
}

fn noopSchemaRelease(schema: *abi.ArrowSchema) callconv(.c) void {
    schema.release = null;
}

fn noopArrayRelease(array: *abi.ArrowArray) callconv(.c) void {
    array.release = null;
}

test "roots that look live pass; a swapped pair and a bad child are refused where they should be" {
    var child_schema: abi.ArrowSchema = .empty;
    child_schema.format = "i";
    child_schema.release = noopSchemaRelease;
    var child_schemas = [_]?*abi.ArrowSchema{&child_schema};
    var schema: abi.ArrowSchema = .empty;
    schema.format = "+s";
    schema.n_children = 1;
    schema.children = @ptrCast(&child_schemas);
    schema.release = noopSchemaRelease;
    var buffers = [_]?*const anyopaque{ null, null };
    var child_array: abi.ArrowArray = .empty;
    child_array.n_buffers = 2;
    child_array.buffers = @ptrCast(&buffers);
    child_array.release = noopArrayRelease;
    var child_arrays = [_]?*abi.ArrowArray{&child_array};
    var array: abi.ArrowArray = .empty;
    array.n_buffers = 1;
    array.buffers = @ptrCast(&buffers);
    array.n_children = 1;
    array.children = @ptrCast(&child_arrays);
    array.release = noopArrayRelease;
    const s = @intFromPtr(&schema);
    const a = @intFromPtr(&array);
    try std.testing.expectEqual(Status.ok, probeImport(s, .array, a, .roots).status);
    try std.testing.expectEqual(Status.ok, probeImport(s, .array, a, .tree).status);
    // Swapped: refused by the whole probe at every depth.
    try std.testing.expectEqual(Status.invalid_argument, probeImport(a, .array, s, .roots).status);
    try std.testing.expectEqual(Status.invalid_argument, probeImport(a, .array, s, .tree).status);
    // A child format on the first page: the roots' business only at `.tree`.
    child_schema.format = @ptrFromInt(8);
    try std.testing.expectEqual(Status.ok, probeImport(s, .array, a, .roots).status);
    const v = probeImport(s, .array, a, .tree);
    try std.testing.expectEqual(Status.invalid_argument, v.status);
    try std.testing.expect(v.deep and v.side == 0);
    child_schema.format = "i";
    // A child array's buffers on the first page: the array's side.
    child_array.buffers = @ptrFromInt(8);
    const w = probeImport(s, .array, a, .tree);
    try std.testing.expect(w.status == .invalid_argument and w.deep and w.side == 1);
}

test "a device array whose last bytes are unmapped is refused, not read past" {
    const page = std.heap.pageSize();
    const mem = try std.posix.mmap(null, 2 * page, .{ .READ = true, .WRITE = true }, .{ .TYPE = .PRIVATE, .ANONYMOUS = true }, -1, 0);
    defer std.posix.munmap(mem);
    try std.testing.expectEqual(@as(c_int, 0), std.c.mprotect(@ptrCast(@alignCast(mem[page..].ptr)), page, .{}));
    // Its ArrowArray part (80 bytes) ends the mapped page: a live array.
    const array: *abi.ArrowArray = @ptrCast(@alignCast(mem.ptr + page - @sizeOf(abi.ArrowArray)));
    array.* = .empty;
    array.release = noopArrayRelease;
    var schema: abi.ArrowSchema = .empty;
    schema.format = "i";
    schema.release = noopSchemaRelease;
    try std.testing.expectEqual(Status.ok, probeImport(@intFromPtr(&schema), .array, @intFromPtr(array), .roots).status);
    try std.testing.expectEqual(Status.invalid_argument, probeImport(@intFromPtr(&schema), .device_array, @intFromPtr(array), .roots).status);
}
