//! The fast path of validate.zig for the commonest trees: one flat leaf,
//! or a struct (a record batch) whose children are all flat leaves. Flat:
//! a validity bitmap plus one fixed-width or bit-packed values buffer
//! (boolean, integers, floats, decimals, fixed-size binary, dates, times,
//! timestamps, durations, intervals), no children, no dictionary.
//!
//! It applies exactly the rules the full walker applies to such nodes at
//! levels none, minimal and default, in one pass without the walker's
//! error-path bookkeeping, and writes the same node table. It only says
//! yes or "not mine": on anything it does not accept (another shape, a
//! broken rule, level full) it leaves the table as it found it, and
//! `validate` runs the full walker, which decides and words the error.
//! So the fast path can make validation cheaper, never more lenient: the
//! test below compares both on every rule and on random trees.
//!
//! Ownership: reads the caller's structs, writes the caller's table.

const std = @import("std");
const abi = @import("../core/abi.zig");
const format = @import("../core/format.zig");
const metadata = @import("../core/metadata.zig");
const node_table = @import("node_table.zig");
const NodeTable = node_table.NodeTable;
const Level = node_table.Level;

/// Validates and describes the tree at (`schema`, `array`) into `table`
/// (empty, as `validate` gets it) if it is flat and valid at `level`;
/// returns false, with `table` untouched, otherwise.
pub fn describe(schema: *const abi.ArrowSchema, array: *const abi.ArrowArray, level: Level, table: *NodeTable) bool {
    if (level == .full) return false; // full reads every value: the walker's job
    std.debug.assert(table.nodes.items.len == 0 and table.buffers.items.len == 0 and table.bytes_known == 0);
    if (describeTree(schema, array, level, table)) return true;
    // Back to empty. A list that moved out of the holder's room stays on
    // the heap (the table owns it; the walker grows it, deinit frees it).
    table.nodes.items.len = 0;
    table.buffers.items.len = 0;
    table.bytes_known = 0;
    return false;
}

fn describeTree(schema: *const abi.ArrowSchema, array: *const abi.ArrowArray, level: Level, table: *NodeTable) bool {
    table.addWords(&table.nodes, node_table.node_words) catch return false;
    const root = nodeType(schema, array) orelse return false;
    if (root.id != .@"struct") {
        if (!isFlat(root.id) or schema.n_children != 0) return false;
        return describeNode(schema, array, &root, 0, -1, table);
    }
    // A struct root: its children must be flat leaves. The walker counts
    // nodes (root included) against max_nodes.
    if (schema.n_children < 0 or schema.n_children >= node_table.max_nodes) return false;
    if (!describeNode(schema, array, &root, 0, -1, table)) return false;
    const n: usize = @intCast(schema.n_children);
    const end = array.offset + array.length;
    for (0..n) |i| {
        const child_schema = schema.children.?[i] orelse return false;
        const child_array = array.children.?[i] orelse return false;
        const child = nodeType(child_schema, child_array) orelse return false;
        if (!isFlat(child.id) or child_schema.n_children != 0) return false;
        if (!describeNode(child_schema, child_array, &child, 1 + i, 0, table)) return false;
        // The struct's rule for each child (checkChild; not at level none).
        if (level != .none and child_array.length < end) return false;
    }
    return true;
}

/// Types of one validity bitmap plus one values buffer (bits or fixed).
fn isFlat(id: format.TypeId) bool {
    return switch (id) {
        .boolean, .int8, .uint8, .int16, .uint16, .int32, .uint32, .int64, .uint64 => true,
        .float16, .float32, .float64, .decimal, .fixed_size_binary => true,
        .date32, .date64, .time32, .time64, .timestamp, .duration => true,
        .interval_months, .interval_day_time, .interval_month_day_nano => true,
        else => false,
    };
}

/// The node's parsed format, after the walker's checks that come before
/// it (released structs, NULL format); null when any fails.
fn nodeType(schema: *const abi.ArrowSchema, array: *const abi.ArrowArray) ?format.Type {
    if (schema.release == null or array.release == null) return null;
    const format_ptr = schema.format orelse return null;
    var len: usize = 0;
    // One byte at a time, as the walker reads it (never past the NUL).
    while (len <= format.max_format_length and format_ptr[len] != 0) len += 1;
    var why: []const u8 = "";
    return format.parse(format_ptr[0..len], &why) catch null;
}

/// The walker's checks of one node whose type is flat or struct (both have
/// a validity bitmap and need no dictionary), and its records: the node at
/// `node_index` (reserved already) and its buffers, its children's nodes
/// reserved after every node so far.
fn describeNode(schema: *const abi.ArrowSchema, array: *const abi.ArrowArray, ty: *const format.Type, node_index: usize, parent: i64, table: *NodeTable) bool {
    if (schema.metadata) |blob| _ = metadata.encodedLength(blob) catch return false;
    const length = array.length;
    const offset = array.offset;
    const null_count = array.null_count;
    if (length < 0 or offset < 0 or null_count < -1) return false;
    if (length > node_table.max_slots or offset > node_table.max_slots - length) return false;
    if (null_count > length) return false;
    const n_buffers = ty.fixedBufferCount();
    if (array.n_buffers != n_buffers or array.buffers == null) return false;
    if (array.n_children < 0 or schema.n_children < 0 or schema.n_children > node_table.max_children) return false;
    if (array.n_children != schema.n_children) return false;
    const n_children: usize = @intCast(schema.n_children);
    if (n_children > 0 and (schema.children == null or array.children == null)) return false;
    if (schema.dictionary != null or array.dictionary != null) return false;

    const first_buffer = table.buffers.items.len / node_table.buffer_words;
    table.addWords(&table.buffers, n_buffers * node_table.buffer_words) catch return false;
    const first_child = table.nodeCount();
    table.addWords(&table.nodes, n_children * node_table.node_words) catch return false;
    table.setNode(node_index, .{
        .schema = schema,
        .array = array,
        .type_id = ty.id,
        .length = length,
        .null_count = null_count,
        .offset = offset,
        .n_buffers = n_buffers,
        .first_buffer = first_buffer,
        .n_children = n_children,
        .first_child = first_child,
        .dictionary = -1,
        .parent = parent,
    });

    const end = offset + length;
    const buffers = array.buffers.?[0..n_buffers];
    for (buffers, 0..) |address, i| {
        // Buffer 0 is the validity bitmap; a boolean's values are bits too.
        const bits = i == 0 or ty.id == .boolean;
        const element_bytes: u32 = if (bits) 0 else ty.byte_width;
        var size: i64 = if (bits) @divFloor(end + 7, 8) else std.math.mul(i64, end, ty.byte_width) catch return false;
        if (size > node_table.max_slots) return false;
        if (address == null) {
            if (i == 0) {
                if (null_count > 0) return false;
                size = 0;
            } else if (size > 0 and length > 0) return false else size = 0;
        }
        if (!table.recordBuffer(first_buffer + i, address, size, if (bits) .bits else .fixed, element_bytes)) return false;
    }
    return true;
}
