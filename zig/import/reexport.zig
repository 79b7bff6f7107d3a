//! Re-export of imported data: from an owner (owner.zig), a new ArrowSchema
//! + ArrowDeviceArray (or plain ArrowArray) for the whole array, one child
//! column, a dictionary or a slice, to any number of consumers at once; and
//! relays, which move a producer's arrays through an owner to a consumer
//! without looking at the data.
//!
//! Ownership. Each re-export is two independent trees:
//! - the array tree lives in one tree block (export/array.zig). Every struct
//!   of it, dictionaries included, is a fresh struct of that block pointing at
//!   the producer's buffers; none of the producer's structs is handed out.
//!   The block holds one owner reference, dropped by its on-free hook when
//!   the consumer has released the last struct of the tree (base, or a child
//!   or dictionary it moved out), on whichever thread that happens. So the
//!   producer's release runs after every re-export is gone, exactly once.
//! - the schema tree is a copy (export/schema.zig: strings and metadata
//!   copied), so it needs no owner reference.
//! `device_type`, `device_id` and `sync_event` are the producer's; the event
//! stays valid because the owner (which holds the producer's array, and so
//! its event) outlives every re-export. `reserved` is zeroed.
//!
//! Threads. The owner's structs and node table never change after import,
//! so any thread holding a reference may re-export concurrently; releases
//! may come from any thread.
//!
//! Selection. A request names what to re-export, in this order:
//!   base window -> column (unwrap a one-column struct) -> child ->
//!   dictionary -> slice -> table (wrap as a one-column struct).
//! A window is a node of the owner's table plus the C `offset`/`length` the
//! re-exported root gets. The child of a struct or sparse union is taken the
//! way Arrow C++'s `field(i)` does it: the child's rows under the parent's
//! window (offset added, parent's validity not merged). Children of other
//! types (list values, union children, run-end children) are taken whole.

const std = @import("std");
const abi = @import("../core/abi.zig");
const status = @import("../core/status.zig");
const counters = @import("../core/counters.zig");
const format = @import("../core/format.zig");
const validate = @import("../validate/validate.zig");
const owner_mod = @import("owner.zig");
const export_array = @import("../export/array.zig");
const export_schema = @import("../export/schema.zig");
const Status = status.Status;
const Owner = owner_mod.Owner;
const fail = status.fail;
const allocator = std.heap.c_allocator;

/// What the selected node becomes. The numbers are part of the C API.
pub const Shape = enum(u8) {
    /// The selected node itself.
    as_is = 0,
    /// Unwrap: the node must be a struct with exactly one child, which is
    /// selected (a one-column table handed over as a column).
    column = 1,
    /// Wrap: the result becomes the only child of a new, non-null struct
    /// (a column handed over as a one-column table / record batch).
    table = 2,
};

/// Words of a re-export request (f64, exact integers). The numbers are part
/// of the C API and of the layout manifest.
pub const RequestWord = enum(u8) {
    /// Bits of `RequestFlag`: which of the optional words below apply.
    flags = 0,
    /// Node of the owner's table to start from (0: the root).
    node = 1,
    /// With `flag_base`: the window of `node` to start from, as the C offset
    /// and length its root would get (a child or slice handle's window).
    base_offset = 2,
    base_length = 3,
    /// With `flag_child`: the child to select.
    child = 4,
    /// With `flag_slice`: rows to keep, relative to the selected window.
    slice_offset = 5,
    slice_length = 6,
    /// A `Shape`.
    shape = 7,
};
pub const request_words = 8;

pub const RequestFlag = enum(u8) { base = 1, child = 2, dictionary = 4, slice = 8 };

/// Words `select` writes. The numbers are part of the C API.
pub const WindowWord = enum(u8) { node = 0, offset = 1, length = 2, null_count = 3 };
pub const window_words = 4;

pub const Range = struct { offset: i64, length: i64 };

pub const Request = struct {
    node: usize = 0,
    base: ?Range = null,
    child: ?i64 = null,
    dictionary: bool = false,
    slice: ?Range = null,
    shape: Shape = .as_is,

    /// Reads request words; an empty slice is the whole array.
    pub fn fromWords(words: []const f64, out: *Request) Status {
        out.* = .{};
        if (words.len == 0) return .ok;
        if (words.len != request_words) return fail(.invalid_argument, "a re-export request has {d} words, not {d}", .{ words.len, request_words });
        var ints: [request_words]i64 = undefined;
        for (words, 0..) |word, i| {
            ints[i] = exactInt(word) orelse return fail(.invalid_argument, "re-export request word {d} ({s}) is {d}, not an integer", .{ i, @tagName(@as(RequestWord, @enumFromInt(i))), word });
        }
        const flags = ints[@intFromEnum(RequestWord.flags)];
        if (flags < 0 or flags > 15) return fail(.invalid_argument, "re-export request flags {d} are not a combination of base, child, dictionary, slice", .{flags});
        const node = ints[@intFromEnum(RequestWord.node)];
        if (node < 0) return fail(.out_of_range, "node {d} is negative", .{node});
        out.node = @intCast(node);
        if (flags & @intFromEnum(RequestFlag.base) != 0)
            out.base = .{ .offset = ints[@intFromEnum(RequestWord.base_offset)], .length = ints[@intFromEnum(RequestWord.base_length)] };
        if (flags & @intFromEnum(RequestFlag.child) != 0) out.child = ints[@intFromEnum(RequestWord.child)];
        out.dictionary = flags & @intFromEnum(RequestFlag.dictionary) != 0;
        if (flags & @intFromEnum(RequestFlag.slice) != 0)
            out.slice = .{ .offset = ints[@intFromEnum(RequestWord.slice_offset)], .length = ints[@intFromEnum(RequestWord.slice_length)] };
        const shape = ints[@intFromEnum(RequestWord.shape)];
        out.shape = switch (shape) {
            0 => .as_is,
            1 => .column,
            2 => .table,
            else => return fail(.invalid_argument, "re-export shape {d} is not 0 (as is), 1 (column) or 2 (table)", .{shape}),
        };
        return .ok;
    }
};

fn exactInt(word: f64) ?i64 {
    if (!(word >= -9007199254740992.0 and word <= 9007199254740992.0)) return null;
    const value: i64 = @intFromFloat(word);
    if (@as(f64, @floatFromInt(value)) != word) return null;
    return value;
}

/// A node of the owner's table and the rows of it that are selected.
pub const Window = struct {
    node: usize,
    /// The C offset the re-exported root gets.
    offset: i64,
    length: i64,
    /// -1 when it cannot be known without reading device memory.
    null_count: i64,

    pub fn toWords(self: Window, out: *[window_words]f64) void {
        out[@intFromEnum(WindowWord.node)] = @floatFromInt(self.node);
        out[@intFromEnum(WindowWord.offset)] = @floatFromInt(self.offset);
        out[@intFromEnum(WindowWord.length)] = @floatFromInt(self.length);
        out[@intFromEnum(WindowWord.null_count)] = @floatFromInt(self.null_count);
    }
};

fn nodeWord(table: *const validate.NodeTable, node: usize, which: validate.NodeWord) i64 {
    return @intFromFloat(table.get(node, which));
}

fn typeOf(table: *const validate.NodeTable, node: usize) format.TypeId {
    return @enumFromInt(@as(u8, @intCast(nodeWord(table, node, .type_id))));
}

fn formatOf(table: *const validate.NodeTable, node: usize) []const u8 {
    const schema: *const abi.ArrowSchema = @ptrFromInt(@as(usize, @intCast(nodeWord(table, node, .schema))));
    return std.mem.span(schema.format.?);
}

fn wholeNode(table: *const validate.NodeTable, node: usize) Window {
    return .{
        .node = node,
        .offset = nodeWord(table, node, .offset),
        .length = nodeWord(table, node, .length),
        .null_count = nodeWord(table, node, .null_count),
    };
}

/// The null count of `window`: the node's own when the window is the whole
/// node, else counted from the validity bitmap when the host may read it,
/// else -1 (unknown), which every consumer must accept.
fn nullCount(owner: *const Owner, window: Window) i64 {
    const table = &owner.table;
    const whole = wholeNode(table, window.node);
    if (window.offset == whole.offset and window.length == whole.length) return whole.null_count;
    const ty: format.Type = .{ .id = typeOf(table, window.node) };
    if (ty.id == .null) return window.length;
    if (!ty.hasValidity() or whole.null_count == 0 or window.length == 0) return 0;
    if (nodeWord(table, window.node, .n_buffers) == 0) return 0;
    const validity_address = table.bufferAddress(@intCast(nodeWord(table, window.node, .first_buffer)));
    if (validity_address == 0) return 0;
    if (!owner.host_readable) return -1;
    const bits: [*]const u8 = @ptrFromInt(validity_address);
    return countUnset(bits, @intCast(window.offset), @intCast(window.offset + window.length));
}

/// Bits in [start, end) of `bits` (LSB first) that are 0: the nulls.
fn countUnset(bits: [*]const u8, start: usize, end: usize) i64 {
    var set: usize = 0;
    var i = start;
    while (i < end and i % 8 != 0) : (i += 1) set += (bits[i / 8] >> @intCast(i % 8)) & 1;
    while (i + 8 <= end) : (i += 8) set += @popCount(bits[i / 8]);
    while (i < end) : (i += 1) set += (bits[i / 8] >> @intCast(i % 8)) & 1;
    return @intCast(end - start - set);
}

/// The node's format, cut to a length fit for a message.
fn describeNode(table: *const validate.NodeTable, node: usize) []const u8 {
    const text = formatOf(table, node);
    return text[0..@min(text.len, 64)];
}

/// Resolves `request` against `owner`'s node table into `out`. Reads no
/// buffer except a validity bitmap of host-readable memory (null count of a
/// slice). On error `out` is untouched.
pub fn select(owner: *const Owner, request: Request, out: *Window) Status {
    const table = &owner.table;
    const node_count = table.nodeCount();
    if (request.node >= node_count) return fail(.out_of_range, "node {d} is out of the tree's {d} nodes", .{ request.node, node_count });
    var window = wholeNode(table, request.node);
    if (request.base) |base| {
        const whole = window;
        if (base.offset < whole.offset or base.length < 0 or base.offset > whole.offset + whole.length - base.length)
            return fail(.out_of_range, "window (offset {d}, length {d}) is out of node {d} (offset {d}, length {d})", .{ base.offset, base.length, request.node, whole.offset, whole.length });
        window.offset = base.offset;
        window.length = base.length;
        window.null_count = nullCount(owner, window);
    }
    if (request.shape == .column) {
        const children = nodeWord(table, window.node, .n_children);
        if (typeOf(table, window.node) != .@"struct" or children != 1)
            return fail(.invalid_argument, "only a struct (table) with exactly one column can be handed over as a column; this is format \"{s}\" with {d} children", .{ describeNode(table, window.node), children });
        const st = selectChild(owner, window, 0, &window);
        if (st != .ok) return st;
    }
    if (request.child) |index| {
        const children = nodeWord(table, window.node, .n_children);
        if (index < 0 or index >= children)
            return fail(.out_of_range, "child {d} is out of the {d} children of format \"{s}\"", .{ index, children, describeNode(table, window.node) });
        const st = selectChild(owner, window, index, &window);
        if (st != .ok) return st;
    }
    if (request.dictionary) {
        const dictionary = nodeWord(table, window.node, .dictionary);
        if (dictionary < 0)
            return fail(.invalid_argument, "format \"{s}\" is not dictionary-encoded: there is no dictionary to re-export", .{describeNode(table, window.node)});
        window = wholeNode(table, @intCast(dictionary));
    }
    if (request.slice) |slice| {
        if (slice.offset < 0 or slice.length < 0 or slice.offset > window.length - slice.length)
            return fail(.out_of_range, "slice (offset {d}, length {d}) is out of the {d} rows of format \"{s}\"", .{ slice.offset, slice.length, window.length, describeNode(table, window.node) });
        window.offset += slice.offset;
        window.length = slice.length;
        window.null_count = nullCount(owner, window);
    }
    out.* = window;
    return .ok;
}

/// Child `index` (checked by the caller) of `parent`, as `field(i)` takes it
/// for structs and sparse unions, whole for every other type.
fn selectChild(owner: *const Owner, parent: Window, index: i64, out: *Window) Status {
    const table = &owner.table;
    const child: usize = @intCast(nodeWord(table, parent.node, .first_child) + index);
    var window = wholeNode(table, child);
    switch (typeOf(table, parent.node)) {
        .@"struct", .sparse_union => {
            // The parent's C offset applies to its children: rows
            // [parent.offset, parent.offset + parent.length) of the child.
            // Validation proves they lie within the child, except at level
            // `none`, which trusts the producer: checked here too, so that
            // no window ever reaches past a child.
            if (parent.offset + parent.length > window.length)
                return fail(.invalid_layout, "child {d} has {d} rows, fewer than the parent's offset + length {d}", .{ index, window.length, parent.offset + parent.length });
            window.offset += parent.offset;
            window.length = parent.length;
            window.null_count = nullCount(owner, window);
        },
        else => {},
    }
    out.* = window;
    return .ok;
}

// ---------------------------------------------------------------------------
// Plans for the tree builders
// ---------------------------------------------------------------------------

const OutOfMemory = error{OutOfMemory};

/// Appends the array plan (export/array.zig) of `node` and its subtree; the
/// root of the plan gets `window`'s offset, length and null count.
fn appendArrayPlan(plan: *std.ArrayList(f64), table: *const validate.NodeTable, node: usize, window: ?Window) OutOfMemory!void {
    const n_buffers: usize = @intCast(nodeWord(table, node, .n_buffers));
    const n_children: usize = @intCast(nodeWord(table, node, .n_children));
    const dictionary = nodeWord(table, node, .dictionary);
    const rows = window orelse wholeNode(table, node);
    try plan.appendSlice(allocator, &.{
        @floatFromInt(rows.length),
        @floatFromInt(rows.null_count),
        @floatFromInt(rows.offset),
        @floatFromInt(n_buffers),
        @floatFromInt(n_children),
        @floatFromInt(@intFromBool(dictionary >= 0)),
    });
    const first_buffer: usize = @intCast(nodeWord(table, node, .first_buffer));
    for (0..n_buffers) |i| try plan.append(allocator, @floatFromInt(table.bufferAddress(first_buffer + i)));
    const first_child: usize = @intCast(nodeWord(table, node, .first_child));
    for (0..n_children) |i| try appendArrayPlan(plan, table, first_child + i, null);
    if (dictionary >= 0) try appendArrayPlan(plan, table, @intCast(dictionary), null);
}

/// Longest metadata accepted when copying a producer's schema.
const max_metadata_bytes = 1 << 30;

/// The byte length of metadata in the spec's encoding (int32 count, then
/// int32-length-prefixed keys and values), or null when it is malformed.
fn metadataLength(metadata: [*]const u8) ?usize {
    const readI32 = struct {
        fn at(bytes: [*]const u8, offset: usize) i32 {
            return std.mem.readInt(i32, bytes[offset..][0..4], .little);
        }
    }.at;
    const pairs = readI32(metadata, 0);
    if (pairs < 0 or pairs > 1 << 20) return null;
    var at: usize = 4;
    for (0..@intCast(pairs)) |_| {
        for (0..2) |_| {
            const len = readI32(metadata, at);
            if (len < 0) return null;
            at += 4 + @as(usize, @intCast(len));
            if (at > max_metadata_bytes) return null;
        }
    }
    return at;
}

/// Appends the schema plan (export/schema.zig) of `node` and its subtree,
/// copying the producer's format, name, metadata and flags.
fn appendSchemaPlan(plan: *std.ArrayList(u8), table: *const validate.NodeTable, node: usize) Status {
    const schema: *const abi.ArrowSchema = @ptrFromInt(@as(usize, @intCast(nodeWord(table, node, .schema))));
    const format_text = std.mem.span(schema.format.?);
    const name: ?[]const u8 = if (schema.name) |n| std.mem.span(n) else null;
    var metadata: ?[]const u8 = null;
    if (schema.metadata) |m| {
        const len = metadataLength(m) orelse {
            const shown: []const u8 = name orelse "";
            return fail(.invalid_format, "the metadata of field \"{s}\" is malformed", .{shown[0..@min(shown.len, 64)]});
        };
        metadata = m[0..len];
    }
    const n_children: usize = @intCast(nodeWord(table, node, .n_children));
    const dictionary = nodeWord(table, node, .dictionary);
    export_schema.appendNode(plan, allocator, format_text, name, metadata, schema.flags, @intCast(n_children), dictionary >= 0) catch
        return fail(.out_of_memory, "out of memory copying a schema for re-export", .{});
    const first_child: usize = @intCast(nodeWord(table, node, .first_child));
    for (0..n_children) |i| {
        const s = appendSchemaPlan(plan, table, first_child + i);
        if (s != .ok) return s;
    }
    if (dictionary >= 0) return appendSchemaPlan(plan, table, @intCast(dictionary));
    return .ok;
}

// ---------------------------------------------------------------------------
// Re-export
// ---------------------------------------------------------------------------

/// The on-free hook of a re-exported array tree: `context` is the owner.
fn finishReexport(context: ?*anyopaque) callconv(.c) void {
    const owner: *Owner = @ptrCast(@alignCast(context.?));
    counters.add(.live_reexports, -1);
    owner.release();
}

/// Builds the schema and array trees for `request` into `schema_out` and
/// `array_out`. On error nothing is allocated or retained and the outs are
/// untouched.
fn build(owner: *Owner, request: Request, schema_out: *abi.ArrowSchema, array_out: *abi.ArrowArray) Status {
    var window: Window = undefined;
    const selected = select(owner, request, &window);
    if (selected != .ok) return selected;
    const table = &owner.table;

    var schema_plan: std.ArrayList(u8) = .empty;
    defer schema_plan.deinit(allocator);
    var array_plan: std.ArrayList(f64) = .empty;
    defer array_plan.deinit(allocator);
    const wrap = request.shape == .table;
    if (wrap) {
        export_schema.appendNode(&schema_plan, allocator, "+s", "", null, 0, 1, false) catch
            return fail(.out_of_memory, "out of memory copying a schema for re-export", .{});
        // A record batch: a struct of the column's length, no nulls.
        array_plan.appendSlice(allocator, &.{ @floatFromInt(window.length), 0, 0, 1, 1, 0, 0 }) catch
            return fail(.out_of_memory, "out of memory planning a re-export", .{});
    }
    const schema_status = appendSchemaPlan(&schema_plan, table, window.node);
    if (schema_status != .ok) return schema_status;
    appendArrayPlan(&array_plan, table, window.node, window) catch
        return fail(.out_of_memory, "out of memory planning a re-export", .{});

    var schema: abi.ArrowSchema = .empty;
    const built_schema = export_schema.build(schema_plan.items, &schema);
    if (built_schema != .ok) return built_schema;

    // The array tree's block holds this reference until its last struct is
    // released.
    owner.retain(1);
    counters.add(.live_reexports, 1);
    var array: abi.ArrowArray = .empty;
    const built_array = export_array.build(array_plan.items, .{ .on_free = finishReexport, .on_free_context = owner }, &array);
    if (built_array != .ok) {
        counters.add(.live_reexports, -1);
        owner.release(); // never the last: the caller holds one
        schema.release.?(&schema);
        return built_array;
    }
    schema_out.* = schema;
    array_out.* = array;
    return .ok;
}

/// Re-exports `request` of `owner` as a new ArrowSchema + ArrowDeviceArray
/// with the producer's device_type, device_id and sync_event, `reserved`
/// zeroed. The caller must hold a reference to `owner` during the call; the
/// outputs are the caller's (the consumer's) to release, from any thread.
pub fn reexportDevice(owner: *Owner, request: Request, schema_out: *abi.ArrowSchema, array_out: *abi.ArrowDeviceArray) Status {
    var array: abi.ArrowArray = .empty;
    const built = build(owner, request, schema_out, &array);
    if (built != .ok) return built;
    array_out.* = .{
        .array = array,
        .device_id = owner.array.device_id,
        .device_type = owner.array.device_type,
        .sync_event = owner.array.sync_event,
        .reserved = .{ 0, 0, 0 },
    };
    return .ok;
}

/// Like `reexportDevice`, as a plain ArrowArray, which says "CPU memory,
/// ready to read": only for owners whose memory the host may read now.
pub fn reexportArray(owner: *Owner, request: Request, schema_out: *abi.ArrowSchema, array_out: *abi.ArrowArray) Status {
    if (!owner.host_readable)
        return fail(.unsupported, "the array is on device {s} and cannot be re-exported as a plain (CPU) ArrowArray; re-export it as an ArrowDeviceArray", .{abi.deviceTypeName(owner.array.device_type) orelse "unknown"});
    return build(owner, request, schema_out, array_out);
}

/// Moves `schema` + `array` in (validated at `level`) and out again as a
/// re-export of the whole array, without looking at more than validation
/// does (nothing at all in device memory). The producer's release runs when
/// the consumer releases the output. On error whatever was moved in has been
/// released once and the outs are untouched.
pub fn relayDevice(schema: ?*abi.ArrowSchema, array: ?*abi.ArrowDeviceArray, level: validate.Level, schema_out: *abi.ArrowSchema, array_out: *abi.ArrowDeviceArray) Status {
    var owner: ?*Owner = null;
    const imported = owner_mod.import(schema, array, level, &owner);
    if (imported != .ok) return imported;
    defer owner.?.release();
    return reexportDevice(owner.?, .{}, schema_out, array_out);
}

/// Like `relayDevice` for plain ArrowArrays (CPU memory).
pub fn relayArray(schema: ?*abi.ArrowSchema, array: ?*abi.ArrowArray, level: validate.Level, schema_out: *abi.ArrowSchema, array_out: *abi.ArrowArray) Status {
    var owner: ?*Owner = null;
    const imported = owner_mod.importArray(schema, array, level, &owner);
    if (imported != .ok) return imported;
    defer owner.?.release();
    return reexportArray(owner.?, .{}, schema_out, array_out);
}

// ---------------------------------------------------------------------------

const testing = std.testing;

/// A producer of struct<a: int32 (2 nulls), b: dictionary<int8, utf8>>,
/// 5 rows, in static memory, counting its root releases.
const TestProducer = struct {
    var releases = std.atomic.Value(u32).init(0);
    var schema_releases = std.atomic.Value(u32).init(0);

    var a_validity = [_]u8{0b10110};
    var a_values = [_]i32{ 1, 2, 3, 4, 5 };
    var a_buffers = [_]?*const anyopaque{ &a_validity, &a_values };
    var b_indices = [_]i8{ 0, 1, 0, 2, 1 };
    var b_buffers = [_]?*const anyopaque{ null, &b_indices };
    var dict_offsets = [_]i32{ 0, 3, 6, 10 };
    var dict_data = "redgrnblue".*;
    var dict_buffers = [_]?*const anyopaque{ null, &dict_offsets, &dict_data };
    var root_buffers = [_]?*const anyopaque{null};

    const Tree = struct {
        schema: abi.ArrowSchema,
        schema_a: abi.ArrowSchema,
        schema_b: abi.ArrowSchema,
        schema_dict: abi.ArrowSchema,
        schema_children: [2]?*abi.ArrowSchema,
        array: abi.ArrowDeviceArray,
        array_a: abi.ArrowArray,
        array_b: abi.ArrowArray,
        array_dict: abi.ArrowArray,
        array_children: [2]?*abi.ArrowArray,
    };

    fn noop(array: *abi.ArrowArray) callconv(.c) void {
        array.release = null;
    }
    fn noopSchema(schema: *abi.ArrowSchema) callconv(.c) void {
        schema.release = null;
    }
    fn releaseRoot(array: *abi.ArrowArray) callconv(.c) void {
        for (array.children.?[0..2]) |child| if (child.?.release) |r| r(child.?);
        _ = releases.fetchAdd(1, .acq_rel);
        array.release = null;
    }
    fn releaseRootSchema(schema: *abi.ArrowSchema) callconv(.c) void {
        _ = schema_releases.fetchAdd(1, .acq_rel);
        schema.release = null;
    }

    fn make(tree: *Tree, device_type: abi.DeviceType) void {
        tree.schema_dict = .{ .format = "u", .name = null, .metadata = null, .flags = abi.flag_nullable, .n_children = 0, .children = null, .dictionary = null, .release = noopSchema, .private_data = null };
        tree.schema_a = .{ .format = "i", .name = "a", .metadata = "\x01\x00\x00\x00\x01\x00\x00\x00k\x02\x00\x00\x00vv", .flags = abi.flag_nullable, .n_children = 0, .children = null, .dictionary = null, .release = noopSchema, .private_data = null };
        tree.schema_b = .{ .format = "c", .name = "b", .metadata = null, .flags = 0, .n_children = 0, .children = null, .dictionary = &tree.schema_dict, .release = noopSchema, .private_data = null };
        tree.schema_children = .{ &tree.schema_a, &tree.schema_b };
        tree.schema = .{ .format = "+s", .name = "", .metadata = null, .flags = 0, .n_children = 2, .children = &tree.schema_children, .dictionary = null, .release = releaseRootSchema, .private_data = null };
        tree.array_dict = .{ .length = 3, .null_count = 0, .offset = 0, .n_buffers = 3, .n_children = 0, .buffers = &dict_buffers, .children = null, .dictionary = null, .release = noop, .private_data = null };
        tree.array_a = .{ .length = 5, .null_count = 2, .offset = 0, .n_buffers = 2, .n_children = 0, .buffers = &a_buffers, .children = null, .dictionary = null, .release = noop, .private_data = null };
        tree.array_b = .{ .length = 5, .null_count = 0, .offset = 0, .n_buffers = 2, .n_children = 0, .buffers = &b_buffers, .children = null, .dictionary = &tree.array_dict, .release = noop, .private_data = null };
        tree.array_children = .{ &tree.array_a, &tree.array_b };
        tree.array = .empty;
        tree.array.array = .{ .length = 5, .null_count = 0, .offset = 0, .n_buffers = 1, .n_children = 2, .buffers = &root_buffers, .children = &tree.array_children, .dictionary = null, .release = releaseRoot, .private_data = null };
        if (device_type != abi.device_cpu) {
            tree.array.device_type = device_type;
            tree.array.device_id = 3;
        }
    }

    fn importOwner(tree: *Tree, device_type: abi.DeviceType) !*Owner {
        releases.store(0, .release);
        schema_releases.store(0, .release);
        make(tree, device_type);
        var owner: ?*Owner = null;
        try testing.expectEqual(Status.ok, owner_mod.import(&tree.schema, &tree.array, .full, &owner));
        return owner.?;
    }
};

fn requestWords(flags: u8, node: f64, base: [2]f64, child: f64, slice: [2]f64, shape: Shape) [request_words]f64 {
    return .{ @floatFromInt(flags), node, base[0], base[1], child, slice[0], slice[1], @floatFromInt(@intFromEnum(shape)) };
}

test "re-exports of one owner release the producer once, after the last, in any order" {
    var tree: TestProducer.Tree = undefined;
    const owner = try TestProducer.importOwner(&tree, abi.device_cpu);
    const live_before = counters.get(.live_reexports);
    var schemas: [3]abi.ArrowSchema = undefined;
    var arrays: [3]abi.ArrowDeviceArray = undefined;
    for (&schemas, &arrays) |*s, *a| try testing.expectEqual(Status.ok, reexportDevice(owner, .{}, s, a));
    try testing.expectEqual(live_before + 3, counters.get(.live_reexports));
    owner.release(); // the import's reference goes first
    arrays[1].array.release.?(&arrays[1].array);
    arrays[0].array.release.?(&arrays[0].array);
    try testing.expectEqual(@as(u32, 0), TestProducer.releases.load(.acquire));
    // Schemas are copies: releasing them never touches the owner.
    for (&schemas) |*s| s.release.?(s);
    try testing.expectEqual(@as(u32, 0), TestProducer.releases.load(.acquire));
    arrays[2].array.release.?(&arrays[2].array);
    try testing.expectEqual(@as(u32, 1), TestProducer.releases.load(.acquire));
    try testing.expectEqual(@as(u32, 1), TestProducer.schema_releases.load(.acquire));
    try testing.expectEqual(live_before, counters.get(.live_reexports));
}

test "a re-export points at the producer's buffers from fresh structs, dictionaries included" {
    var tree: TestProducer.Tree = undefined;
    const owner = try TestProducer.importOwner(&tree, abi.device_cpu);
    var schema: abi.ArrowSchema = undefined;
    var array: abi.ArrowDeviceArray = undefined;
    try testing.expectEqual(Status.ok, reexportDevice(owner, .{ .child = 1 }, &schema, &array));
    owner.release();
    try testing.expectEqualStrings("c", std.mem.span(schema.format.?));
    try testing.expectEqualStrings("b", std.mem.span(schema.name.?));
    try testing.expectEqualStrings("u", std.mem.span(schema.dictionary.?.format.?));
    try testing.expect(schema.format.? != tree.schema_b.format.?); // copied
    const dictionary = array.array.dictionary.?;
    try testing.expect(dictionary != &tree.array_dict);
    try testing.expect(dictionary.buffers.?[2] == @as(?*const anyopaque, &TestProducer.dict_data));
    try testing.expect(array.array.buffers.?[1] == @as(?*const anyopaque, &TestProducer.b_indices));
    // Move the dictionary out and release the rest: the owner must stay.
    var moved = dictionary.*;
    dictionary.release = null;
    array.array.release.?(&array.array);
    schema.release.?(&schema);
    try testing.expectEqual(@as(u32, 0), TestProducer.releases.load(.acquire));
    moved.release.?(&moved);
    try testing.expectEqual(@as(u32, 1), TestProducer.releases.load(.acquire));
}

test "child, slice, dictionary and shapes select the right rows" {
    var tree: TestProducer.Tree = undefined;
    const owner = try TestProducer.importOwner(&tree, abi.device_cpu);
    defer owner.release();
    var w: Window = undefined;
    // Child a, rows 1..4: slot 3 is null.
    try testing.expectEqual(Status.ok, select(owner, .{ .child = 0, .slice = .{ .offset = 1, .length = 3 } }, &w));
    try testing.expectEqual(Window{ .node = 1, .offset = 1, .length = 3, .null_count = 1 }, w);
    // A sliced struct, then its child: the struct's offset carries over.
    try testing.expectEqual(Status.ok, select(owner, .{ .slice = .{ .offset = 2, .length = 2 } }, &w));
    try testing.expectEqual(Window{ .node = 0, .offset = 2, .length = 2, .null_count = 0 }, w);
    try testing.expectEqual(Status.ok, select(owner, .{ .node = 0, .base = .{ .offset = 2, .length = 2 }, .child = 0 }, &w));
    try testing.expectEqual(Window{ .node = 1, .offset = 2, .length = 2, .null_count = 1 }, w);
    // The dictionary of child b is the whole dictionary.
    try testing.expectEqual(Status.ok, select(owner, .{ .child = 1, .dictionary = true }, &w));
    try testing.expectEqual(@as(i64, 3), w.length);

    // Column -> table -> column.
    var schema: abi.ArrowSchema = undefined;
    var array: abi.ArrowDeviceArray = undefined;
    try testing.expectEqual(Status.ok, reexportDevice(owner, .{ .child = 0, .slice = .{ .offset = 1, .length = 4 }, .shape = .table }, &schema, &array));
    try testing.expectEqualStrings("+s", std.mem.span(schema.format.?));
    try testing.expectEqual(@as(i64, 1), schema.n_children);
    try testing.expectEqualStrings("a", std.mem.span(schema.children.?[0].?.name.?));
    try testing.expectEqual(@as(i64, 4), array.array.length);
    try testing.expectEqual(@as(i64, 0), array.array.null_count);
    const column = array.array.children.?[0].?;
    try testing.expectEqual(@as(i64, 1), column.offset);
    try testing.expectEqual(@as(i64, 4), column.length);
    try testing.expectEqual(@as(i64, 1), column.null_count);
    // Import the one-column table and hand it back as a column.
    var table_owner: ?*Owner = null;
    try testing.expectEqual(Status.ok, owner_mod.import(&schema, &array, .full, &table_owner));
    var column_schema: abi.ArrowSchema = undefined;
    var column_array: abi.ArrowDeviceArray = undefined;
    try testing.expectEqual(Status.ok, reexportDevice(table_owner.?, .{ .shape = .column }, &column_schema, &column_array));
    table_owner.?.release();
    try testing.expectEqualStrings("i", std.mem.span(column_schema.format.?));
    try testing.expectEqualStrings("a", std.mem.span(column_schema.name.?));
    try testing.expectEqualStrings("k", column_schema.metadata.?[8..9]);
    try testing.expectEqual(@as(i64, 1), column_array.array.offset);
    try testing.expectEqual(@as(i64, 4), column_array.array.length);
    try testing.expect(column_array.array.buffers.?[1] == @as(?*const anyopaque, &TestProducer.a_values));
    column_array.array.release.?(&column_array.array);
    column_schema.release.?(&column_schema);
}

test "bad requests get typed errors and retain nothing" {
    var tree: TestProducer.Tree = undefined;
    const owner = try TestProducer.importOwner(&tree, abi.device_cpu);
    const refs = owner.refs.load(.acquire);
    const schemas = counters.get(.live_schema_exports);
    var schema: abi.ArrowSchema = .empty;
    var array: abi.ArrowDeviceArray = .empty;
    try testing.expectEqual(Status.out_of_range, reexportDevice(owner, .{ .child = 2 }, &schema, &array));
    try testing.expect(std.mem.indexOf(u8, std.mem.span(status.lastMessage()), "child 2 is out of the 2 children") != null);
    try testing.expectEqual(Status.out_of_range, reexportDevice(owner, .{ .child = -1 }, &schema, &array));
    try testing.expectEqual(Status.out_of_range, reexportDevice(owner, .{ .slice = .{ .offset = 3, .length = 3 } }, &schema, &array));
    try testing.expect(std.mem.indexOf(u8, std.mem.span(status.lastMessage()), "out of the 5 rows") != null);
    try testing.expectEqual(Status.out_of_range, reexportDevice(owner, .{ .slice = .{ .offset = -1, .length = 1 } }, &schema, &array));
    try testing.expectEqual(Status.out_of_range, reexportDevice(owner, .{ .node = 9 }, &schema, &array));
    try testing.expectEqual(Status.out_of_range, reexportDevice(owner, .{ .node = 1, .base = .{ .offset = 4, .length = 2 } }, &schema, &array));
    try testing.expectEqual(Status.invalid_argument, reexportDevice(owner, .{ .dictionary = true }, &schema, &array));
    try testing.expectEqual(Status.invalid_argument, reexportDevice(owner, .{ .shape = .column }, &schema, &array));
    var request: Request = undefined;
    try testing.expectEqual(Status.invalid_argument, Request.fromWords(&requestWords(2, 0, .{ 0, 0 }, 0.5, .{ 0, 0 }, .as_is), &request));
    try testing.expectEqual(Status.invalid_argument, Request.fromWords(&[_]f64{ 0, 0 }, &request));
    try testing.expectEqual(Status.ok, Request.fromWords(&requestWords(2 | 8, 0, .{ 0, 0 }, 1, .{ 1, 2 }, .table), &request));
    try testing.expectEqual(@as(?i64, 1), request.child);
    try testing.expectEqual(Range{ .offset = 1, .length = 2 }, request.slice.?);
    try testing.expectEqual(Shape.table, request.shape);
    try testing.expect(schema.release == null and array.array.release == null);
    try testing.expectEqual(refs, owner.refs.load(.acquire));
    try testing.expectEqual(schemas, counters.get(.live_schema_exports));
    owner.release();
    try testing.expectEqual(@as(u32, 1), TestProducer.releases.load(.acquire));
}

test "device arrays keep device, id and sync event; reserved is zeroed; never read" {
    var tree: TestProducer.Tree = undefined;
    // CUDA: the host must not read these buffers, and nothing here does
    // (validation at `full` skips every read for non-host memory).
    const owner = try TestProducer.importOwner(&tree, abi.device_cuda);
    var event: u64 = 0;
    owner.array.sync_event = &event;
    var schema: abi.ArrowSchema = undefined;
    var array: abi.ArrowDeviceArray = undefined;
    @memset(std.mem.asBytes(&array), 0xAB);
    try testing.expectEqual(Status.ok, reexportDevice(owner, .{ .child = 0, .slice = .{ .offset = 1, .length = 2 } }, &schema, &array));
    try testing.expectEqual(abi.device_cuda, array.device_type);
    try testing.expectEqual(@as(i64, 3), array.device_id);
    try testing.expect(array.sync_event == @as(?*anyopaque, &event));
    try testing.expectEqual([3]i64{ 0, 0, 0 }, array.reserved);
    try testing.expectEqual(@as(i64, -1), array.array.null_count); // unknown: bitmap unreadable
    var plain: abi.ArrowArray = .empty;
    try testing.expectEqual(Status.unsupported, reexportArray(owner, .{}, &schema, &plain));
    owner.release();
    array.array.release.?(&array.array);
    schema.release.?(&schema);
    try testing.expectEqual(@as(u32, 1), TestProducer.releases.load(.acquire));
}

test "re-exports released concurrently from many threads release the producer once" {
    const threads = 8;
    const Worker = struct {
        fn run(schema: *abi.ArrowSchema, array: *abi.ArrowDeviceArray) void {
            array.array.release.?(&array.array);
            schema.release.?(schema);
        }
    };
    for (0..200) |cycle| {
        var tree: TestProducer.Tree = undefined;
        const owner = try TestProducer.importOwner(&tree, abi.device_cpu);
        var schemas: [threads]abi.ArrowSchema = undefined;
        var arrays: [threads]abi.ArrowDeviceArray = undefined;
        for (&schemas, &arrays, 0..) |*s, *a, i| {
            const request: Request = if (i % 2 == 0) .{} else .{ .child = @intCast(i % 4 / 2), .slice = .{ .offset = 1, .length = 3 } };
            try testing.expectEqual(Status.ok, reexportDevice(owner, request, s, a));
        }
        var handles: [threads]std.Thread = undefined;
        for (&handles, &schemas, &arrays) |*h, *s, *a| h.* = try std.Thread.spawn(.{}, Worker.run, .{ s, a });
        if (cycle % 2 == 0) owner.release();
        for (handles) |h| h.join();
        if (cycle % 2 == 1) {
            try testing.expectEqual(@as(u32, 0), TestProducer.releases.load(.acquire));
            owner.release();
        }
        try testing.expectEqual(@as(u32, 1), TestProducer.releases.load(.acquire));
    }
}

test "a relay moves the data through; a failed relay releases the input once" {
    var tree: TestProducer.Tree = undefined;
    TestProducer.releases.store(0, .release);
    TestProducer.make(&tree, abi.device_cpu);
    var schema: abi.ArrowSchema = undefined;
    var array: abi.ArrowDeviceArray = undefined;
    try testing.expectEqual(Status.ok, relayDevice(&tree.schema, &tree.array, .default, &schema, &array));
    try testing.expect(tree.array.array.release == null and tree.schema.release == null); // moved
    try testing.expect(array.array.children.?[0].?.buffers.?[1] == @as(?*const anyopaque, &TestProducer.a_values));
    try testing.expectEqual(@as(u32, 0), TestProducer.releases.load(.acquire));
    array.array.release.?(&array.array);
    schema.release.?(&schema);
    try testing.expectEqual(@as(u32, 1), TestProducer.releases.load(.acquire));

    TestProducer.make(&tree, abi.device_cpu);
    tree.array_a.null_count = 9; // more nulls than rows
    try testing.expectEqual(Status.invalid_layout, relayDevice(&tree.schema, &tree.array, .default, &schema, &array));
    try testing.expectEqual(@as(u32, 2), TestProducer.releases.load(.acquire));
}

test "null counts of bit ranges match a bit-by-bit count" {
    var prng = std.Random.DefaultPrng.init(0x5eed);
    var bits: [64]u8 = undefined;
    prng.random().bytes(&bits);
    for (0..200) |_| {
        const a = prng.random().uintLessThan(usize, 512);
        const b = prng.random().uintLessThan(usize, 512);
        const start = @min(a, b);
        const end = @max(a, b);
        var expected: i64 = 0;
        for (start..end) |i| {
            if (bits[i / 8] & (@as(u8, 1) << @intCast(i % 8)) == 0) expected += 1;
        }
        try testing.expectEqual(expected, countUnset(&bits, start, end));
    }
}

test "metadata length follows the spec's encoding and rejects negative lengths" {
    try testing.expectEqual(@as(?usize, 4 + 4 + 1 + 4 + 2), metadataLength("\x01\x00\x00\x00\x01\x00\x00\x00k\x02\x00\x00\x00vv"));
    try testing.expectEqual(@as(?usize, 4), metadataLength("\x00\x00\x00\x00"));
    try testing.expectEqual(@as(?usize, null), metadataLength("\x01\x00\x00\x00\xff\xff\xff\xff"));
}
