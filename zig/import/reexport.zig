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
pub fn countUnset(bits: [*]const u8, start: usize, end: usize) i64 {
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
pub fn metadataLength(metadata: [*]const u8) ?usize {
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
