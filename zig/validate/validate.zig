//! Validation of an (ArrowSchema, ArrowArray) tree, and the node table that
//! describes it: every node's type, lengths, and every buffer's address, size
//! and kind. Import, relays and device copies read the table; nothing else
//! computes buffer sizes.
//!
//! Levels follow nanoarrow's:
//! - none: structure only as far as needed to size buffers; trusts the rest.
//! - minimal: counts, lengths, offsets, null pointers; reads no buffer.
//! - default: also reads O(1) values per node (first/last offsets, variadic
//!   sizes, last run end) and checks child lengths. Never reads out of the
//!   bounds that length and offset imply.
//! - full: also reads every offset, type id, view, run end, dictionary index
//!   and checks UTF-8 (full.zig).
//! Buffers of a device the host cannot read are never dereferenced: sizes that
//! would need a read are reported as unknown (-1) and value checks are skipped.

const std = @import("std");
const abi = @import("../core/abi.zig");
const format = @import("../core/format.zig");
const metadata = @import("../core/metadata.zig");
const status = @import("../core/status.zig");
const validate_flat = @import("flat.zig");
const node_table = @import("node_table.zig");
const full = @import("full.zig");
const validityOf = full.validityOf;
const isValid = full.isValid;
const readOffset = full.readOffset;
const legacyUnion = full.legacyUnion;
const readViewValue = full.readViewValue;
const readRunEnd = full.readRunEnd;
const readOffsetRange = full.readOffsetRange;
pub const Level = node_table.Level;
pub const max_nesting_depth = node_table.max_nesting_depth;
pub const max_nodes = node_table.max_nodes;
pub const max_slots = node_table.max_slots;
pub const max_children = node_table.max_children;
pub const node_words = node_table.node_words;
pub const NodeWord = node_table.NodeWord;
pub const buffer_words = node_table.buffer_words;
pub const BufferWord = node_table.BufferWord;
pub const NodeTable = node_table.NodeTable;
pub const NodeRecord = node_table.NodeRecord;
const Status = status.Status;
const fail = status.fail;

/// Longest child name quoted in an error path.
const max_name_in_path = 256;

/// The bytes of a NUL-terminated string, reading at most `limit` bytes and
/// one at a time: a vectorized scan could read past the terminator into an
/// unmapped page.
fn boundedCString(text: [*:0]const u8, limit: usize) []const u8 {
    var len: usize = 0;
    while (len < limit and text[len] != 0) len += 1;
    return text[0..len];
}

/// One step of the path to the node being checked. The child's name is
/// read from its schema only when a message quotes it.
const Segment = struct { kind: enum { field, child, dictionary }, index: usize, schema: *const abi.ArrowSchema };

fn nameOf(segment: Segment) []const u8 {
    const name = segment.schema.name orelse return "";
    return boundedCString(name, max_name_in_path);
}

const Walker = struct {
    level: Level,
    host_readable: bool,
    table: ?*NodeTable,
    path: [max_nesting_depth + 1]Segment = undefined,
    depth: usize = 0,
    nodes_seen: usize = 0,

    /// Records `message` prefixed with the path of the node being checked.
    pub fn failAt(self: *Walker, code: Status, comptime fmt: []const u8, args: anytype) Status {
        _ = fail(code, fmt, args);
        if (self.depth > 0) {
            var prefix: [512]u8 = undefined;
            var len: usize = 0;
            const segments = self.path[1 .. self.depth + 1];
            // Deep paths keep their first and last levels: the rest is noise.
            const head = 3;
            const tail = 4;
            const elide = segments.len > head + tail + 1;
            for (segments, 0..) |segment, i| {
                if (elide and i >= head and i < segments.len - tail) {
                    if (i == head) {
                        const gap = std.fmt.bufPrint(prefix[len..], " > ... {d} levels ...", .{segments.len - head - tail}) catch break;
                        len += gap.len;
                    }
                    continue;
                }
                const sep = if (i == 0) "" else " > ";
                const piece = switch (segment.kind) {
                    .field => std.fmt.bufPrint(prefix[len..], "{s}field \"{s}\"", .{ sep, nameOf(segment) }),
                    .child => std.fmt.bufPrint(prefix[len..], "{s}child {d} \"{s}\"", .{ sep, segment.index, nameOf(segment) }),
                    .dictionary => std.fmt.bufPrint(prefix[len..], "{s}dictionary", .{sep}),
                } catch break;
                len += piece.len;
            }
            status.prependToMessage("{s}: ", .{prefix[0..len]});
        }
        return code;
    }

    fn walk(self: *Walker, schema: *const abi.ArrowSchema, array: *const abi.ArrowArray, node_index: usize, parent: i64) Status {
        self.nodes_seen += 1;
        if (self.nodes_seen > max_nodes) return self.failAt(.too_deep, "the tree has more than {d} nodes", .{max_nodes});
        if (schema.release == null) return self.failAt(.released, "schema is released (its release callback is NULL)", .{});
        if (array.release == null) return self.failAt(.released, "array is released (its release callback is NULL)", .{});
        const format_ptr = schema.format orelse return self.failAt(.invalid_format, "schema format is NULL", .{});
        const format_text = boundedCString(format_ptr, format.max_format_length + 1);
        var why: []const u8 = "";
        const ty = format.parse(format_text, &why) catch
            return self.failAt(.invalid_format, "format \"{s}\" {s}", .{ format_text[0..@min(format_text.len, 64)], why });

        // Metadata has no size of its own: its length fields must be sane
        // before anyone reads it (at every level; schemas are host memory).
        if (schema.metadata) |blob| {
            _ = metadata.encodedLength(blob) catch |e| return self.failAt(.invalid_layout, "metadata {s}", .{metadata.describe(e)});
        }

        if (array.length < 0) return self.failAt(.invalid_layout, "length is negative ({d})", .{array.length});
        if (array.offset < 0) return self.failAt(.invalid_layout, "offset is negative ({d})", .{array.offset});
        if (array.null_count < -1) return self.failAt(.invalid_layout, "null_count is {d} (must be -1 or at least 0)", .{array.null_count});
        if (array.length > max_slots or array.offset > max_slots - array.length)
            return self.failAt(.invalid_layout, "offset + length ({d} + {d}) is too large", .{ array.offset, array.length });
        if (array.null_count > array.length)
            return self.failAt(.invalid_layout, "null_count {d} exceeds length {d}", .{ array.null_count, array.length });
        // Unions and run-end encoded arrays have no validity bitmap: their
        // nulls are their children's (Arrow C++ refuses a count here too;
        // -1, "not computed", stays allowed as the spec says).
        if (!ty.hasValidity() and ty.id != .null and array.null_count > 0)
            return self.failAt(.invalid_layout, "null_count is {d}, but a {s} array has no nulls of its own (its children have them)", .{ array.null_count, @tagName(ty.id) });

        // Buffer count.
        const fixed_buffers = ty.fixedBufferCount();
        if (ty.isView()) {
            if (array.n_buffers < fixed_buffers)
                return self.failAt(.invalid_layout, "n_buffers is {d} but format \"{s}\" needs at least {d}", .{ array.n_buffers, format_text, fixed_buffers });
            if (array.n_buffers > 1 << 24)
                return self.failAt(.invalid_layout, "n_buffers is {d}, more than this library accepts", .{array.n_buffers});
        } else if (array.n_buffers != fixed_buffers and !(ty.id == .null and array.n_buffers == 1) and !legacyUnion(&ty, array)) {
            return self.failAt(.invalid_layout, "n_buffers is {d} but format \"{s}\" needs {d}", .{ array.n_buffers, format_text, fixed_buffers });
        }
        // Deviation (docs/validation.md): Polars, like Arrow C++ before 2021,
        // exports a null array with one (validity) buffer, which Arrow C++
        // still accepts and ignores. So does this library: the node is
        // described with no buffer, and the pointer is never read.
        if (array.n_buffers > 0 and array.buffers == null)
            return self.failAt(.invalid_layout, "buffers is NULL but n_buffers is {d}", .{array.n_buffers});
        // Deviation (docs/validation.md): a union exported before Arrow 1.0
        // carries a leading validity buffer (3 for dense, 2 for sparse),
        // which Arrow C++ still accepts when it is NULL. So does this
        // library: the node is described without it, and it is never read.
        const skipped: usize = if (legacyUnion(&ty, array)) 1 else 0;
        if (skipped == 1 and array.buffers.?[0] != null)
            return self.failAt(.invalid_layout, "n_buffers is {d}, the pre-1.0 union layout, but its validity buffer (buffer 0) is not NULL (unions have no validity bitmap)", .{array.n_buffers});
        const n_buffers: usize = if (ty.id == .null) 0 else @as(usize, @intCast(array.n_buffers)) - skipped;

        // Child count.
        if (array.n_children < 0 or schema.n_children < 0)
            return self.failAt(.invalid_layout, "n_children is negative", .{});
        if (schema.n_children > max_children)
            return self.failAt(.invalid_layout, "n_children is {d}, more than this library accepts ({d})", .{ schema.n_children, max_children });
        if (array.n_children != schema.n_children)
            return self.failAt(.invalid_layout, "array has {d} children but schema has {d}", .{ array.n_children, schema.n_children });
        if (ty.requiredChildren()) |required| {
            if (schema.n_children != required)
                return self.failAt(.invalid_layout, "n_children is {d} but format \"{s}\" needs {d}", .{ schema.n_children, format_text, required });
        }
        const n_children: usize = @intCast(schema.n_children);
        if (n_children > 0 and (schema.children == null or array.children == null))
            return self.failAt(.invalid_layout, "children is NULL but n_children is {d}", .{n_children});

        // Dictionary.
        if ((schema.dictionary == null) != (array.dictionary == null))
            return self.failAt(.invalid_layout, "schema {s} a dictionary but the array {s}", .{
                if (schema.dictionary == null) "has no" else "has",
                if (array.dictionary == null) "has none" else "has one",
            });
        if (schema.dictionary != null and !ty.isInteger())
            return self.failAt(.invalid_format, "format \"{s}\" is not an integer type, so it cannot index a dictionary", .{format_text});

        // Record the node, reserving contiguous slots for its children.
        var first_buffer: usize = 0;
        var first_child: usize = 0;
        var dictionary_index: i64 = -1;
        if (self.table) |table| {
            // Reserved, not zeroed: checkBuffers writes every buffer's
            // record, and each child's walk its node's (a failed walk's
            // table is discarded unread: see validate).
            first_buffer = table.buffers.items.len / buffer_words;
            table.addWords(&table.buffers, n_buffers * buffer_words) catch return fail(.out_of_memory, "out of memory describing buffers", .{});
            first_child = table.nodeCount();
            const reserve = n_children + @intFromBool(schema.dictionary != null);
            table.addWords(&table.nodes, reserve * node_words) catch return fail(.out_of_memory, "out of memory describing children", .{});
            if (schema.dictionary != null) dictionary_index = @intCast(first_child + n_children);
            // The node's own record was reserved by its parent (the root's
            // by validateByWalk), before any of its siblings' subtrees.
            std.debug.assert(node_index < table.nodeCount());
            table.setNode(node_index, .{
                .schema = schema,
                .array = array,
                .type_id = ty.id,
                .length = array.length,
                .null_count = array.null_count,
                .offset = array.offset,
                .n_buffers = n_buffers,
                .first_buffer = first_buffer,
                .n_children = n_children,
                .first_child = first_child,
                .dictionary = dictionary_index,
                .parent = parent,
            });
        }

        const buffers: []const ?*const anyopaque = if (n_buffers == 0) &.{} else array.buffers.?[skipped .. skipped + n_buffers];
        const st = self.checkBuffers(&ty, array, buffers, first_buffer);
        if (st != .ok) return st;

        // Children, then the dictionary.
        if (self.depth == max_nesting_depth and (n_children > 0 or schema.dictionary != null))
            return self.failAt(.too_deep, "nesting is deeper than {d} levels", .{max_nesting_depth});
        for (0..n_children) |i| {
            const child_schema = schema.children.?[i] orelse return self.failAt(.invalid_layout, "schema child {d} is NULL", .{i});
            const child_array = array.children.?[i] orelse return self.failAt(.invalid_layout, "array child {d} is NULL", .{i});
            // The depth check above keeps the path within its slots.
            std.debug.assert(self.depth < max_nesting_depth);
            self.depth += 1;
            self.path[self.depth] = .{ .kind = if (self.depth == 1 and ty.id == .@"struct") .field else .child, .index = i, .schema = child_schema };
            const child_status = self.walk(child_schema, child_array, first_child + i, @intCast(node_index));
            if (child_status != .ok) return child_status;
            const relation_status = self.checkChild(&ty, array, buffers, i, child_schema, child_array);
            if (relation_status != .ok) return relation_status;
            self.depth -= 1;
        }
        if (schema.dictionary) |dict_schema| {
            std.debug.assert(self.depth < max_nesting_depth);
            self.depth += 1;
            self.path[self.depth] = .{ .kind = .dictionary, .index = 0, .schema = dict_schema };
            // Without a table there are no node indices to record (0 is unused).
            const dict_node: usize = if (dictionary_index < 0) 0 else @intCast(dictionary_index);
            const dict_status = self.walk(dict_schema, array.dictionary.?, dict_node, @intCast(node_index));
            if (dict_status != .ok) return dict_status;
            self.depth -= 1;
            if (self.level == .full and self.host_readable) {
                const st2 = full.checkDictionaryIndices(self, &ty, array, buffers, array.dictionary.?.length);
                if (st2 != .ok) return st2;
            }
        }
        return .ok;
    }

    fn recordBuffer(self: *Walker, index: usize, address: ?*const anyopaque, size: i64, kind: format.BufferKind, element_bytes: u32) Status {
        if (self.table) |table| {
            if (!table.recordBuffer(index, address, size, kind, element_bytes))
                return self.failAt(.invalid_layout, "the buffers of the tree add up to more than 2^53 bytes", .{});
        }
        return .ok;
    }

    fn checkBuffers(self: *Walker, ty: *const format.Type, array: *const abi.ArrowArray, buffers: []const ?*const anyopaque, first_buffer: usize) Status {
        const end: i64 = array.offset + array.length;
        const readable = self.host_readable and self.level != .minimal;
        var variadic_index: usize = 0;
        for (buffers, 0..) |address, i| {
            const kind = ty.bufferKind(i, buffers.len);
            var element_bytes: u32 = 0;
            var size: i64 = switch (kind) {
                .bits => @divFloor(end + 7, 8),
                .fixed => blk: {
                    element_bytes = ty.byte_width;
                    break :blk std.math.mul(i64, end, ty.byte_width) catch
                        return self.failAt(.invalid_layout, "offset + length ({d}) times the value width {d} overflows", .{ end, ty.byte_width });
                },
                .offsets32, .offsets64 => blk: {
                    element_bytes = if (kind == .offsets32) 4 else 8;
                    // A zero-length array may omit its offsets entirely.
                    if (address == null and array.length == 0) break :blk 0;
                    break :blk (end + 1) * element_bytes;
                },
                .bytes => blk: {
                    element_bytes = 1;
                    if (!readable) break :blk -1;
                    break :blk self.lastOffset(ty, array, buffers) catch |e| return self.offsetError(e);
                },
                .views => blk: {
                    element_bytes = 16;
                    break :blk end * 16;
                },
                .variadic_sizes => blk: {
                    element_bytes = 8;
                    break :blk @as(i64, @intCast(buffers.len - 3)) * 8;
                },
                .variadic_bytes => blk: {
                    element_bytes = 1;
                    defer variadic_index += 1;
                    if (!readable) break :blk -1;
                    const sizes = buffers[buffers.len - 1] orelse
                        return self.failAt(.invalid_layout, "buffer {d} (variadic buffer sizes) is NULL but there are {d} variadic buffers", .{ buffers.len - 1, buffers.len - 3 });
                    const values: [*]align(1) const i64 = @ptrCast(sizes);
                    const variadic_size = values[variadic_index];
                    if (variadic_size < 0) return self.failAt(.invalid_layout, "variadic buffer {d} has negative size {d}", .{ variadic_index, variadic_size });
                    break :blk variadic_size;
                },
                .type_ids => blk: {
                    element_bytes = 1;
                    break :blk end;
                },
                .union_offsets => blk: {
                    element_bytes = 4;
                    break :blk end * 4;
                },
                .view_offsets32 => blk: {
                    element_bytes = 4;
                    break :blk end * 4;
                },
                .view_offsets64 => blk: {
                    element_bytes = 8;
                    break :blk end * 8;
                },
            };
            // Sizes read from the producer (last offsets, variadic sizes)
            // are bounded like offset + length, so that every address +
            // size computed from them stays in range.
            if (size > max_slots)
                return self.failAt(.invalid_layout, "buffer {d} ({s}) would hold {d} bytes, more than this library accepts (2^53)", .{ i, @tagName(kind), size });
            if (address == null) {
                const is_validity = (i == 0 and ty.hasValidity());
                if (is_validity) {
                    if (array.null_count > 0)
                        return self.failAt(.invalid_layout, "validity buffer is NULL but null_count is {d}", .{array.null_count});
                    size = 0;
                } else if (size > 0 and array.length > 0) {
                    return self.failAt(.invalid_layout, "buffer {d} ({s}) is NULL but must hold {d} bytes", .{ i, @tagName(kind), size });
                } else {
                    // Unknown size, or a zero-length array (whose offset
                    // may be past 0: no slot reads a byte, and the spec
                    // lets a buffer of no needed bytes be NULL).
                    size = 0;
                }
            }
            const recorded = self.recordBuffer(first_buffer + i, address, size, kind, element_bytes);
            if (recorded != .ok) return recorded;
        }
        if (self.level == .full and self.host_readable) return full.checkValuesFull(self, ty, array, buffers);
        return .ok;
    }

    const OffsetError = error{ Negative, Decreasing };

    fn offsetError(self: *Walker, e: OffsetError) Status {
        return switch (e) {
            error.Negative => self.failAt(.invalid_layout, "first offset is negative", .{}),
            error.Decreasing => self.failAt(.invalid_layout, "last offset is smaller than the first", .{}),
        };
    }

    /// Reads offsets[offset] and offsets[offset + length]; returns the last,
    /// which is the size of the value bytes the array spans.
    fn lastOffset(self: *Walker, ty: *const format.Type, array: *const abi.ArrowArray, buffers: []const ?*const anyopaque) OffsetError!i64 {
        _ = self;
        const offsets = buffers[1] orelse return 0;
        return readOffsetRange(ty, offsets, array.offset, array.offset + array.length);
    }

    fn checkChild(self: *Walker, ty: *const format.Type, array: *const abi.ArrowArray, buffers: []const ?*const anyopaque, child_index: usize, child_schema: *const abi.ArrowSchema, child: *const abi.ArrowArray) Status {
        if (self.level == .none) return .ok;
        const end = array.offset + array.length;
        switch (ty.id) {
            .@"struct", .sparse_union => {
                if (child.length < end)
                    return self.failAt(.invalid_layout, "child {d} has length {d}, less than the parent's offset + length {d}", .{ child_index, child.length, end });
            },
            .fixed_size_list => {
                const needed = std.math.mul(i64, end, ty.fixed_size) catch
                    return self.failAt(.invalid_layout, "(offset + length) * list size ({d} * {d}) overflows", .{ end, ty.fixed_size });
                if (child.length < needed)
                    return self.failAt(.invalid_layout, "child has length {d}, less than (offset + length) * list size = {d}", .{ child.length, needed });
            },
            .list, .large_list, .map => {
                var key_why: []const u8 = "";
                if (ty.id == .map) {
                    const child_format = std.mem.span(child_schema.format.?);
                    if (!std.mem.eql(u8, child_format, "+s") or child_schema.n_children != 2)
                        return self.failAt(.invalid_layout, "map entries must be a struct of two children (key, value), got format \"{s}\" with {d} children", .{ child_format, child_schema.n_children });
                    // Keys may not be null (the format says so; Arrow C++
                    // checks it): a declared count at every level, the
                    // bitmap itself at full when the count is unknown.
                    const keys = child.children.?[0].?;
                    if (keys.null_count > 0)
                        return self.failAt(.invalid_layout, "map keys have {d} nulls; keys may not be null", .{keys.null_count});
                    if (keys.null_count < 0 and self.level == .full and self.host_readable and keys.n_buffers > 0) {
                        const key_format = std.mem.span(child_schema.children.?[0].?.format.?);
                        const key_type = format.parse(key_format, &key_why) catch unreachable; // validated by the walk
                        if (key_type.hasValidity()) {
                            if (keys.buffers.?[0]) |bitmap| {
                                const bits: [*]const u8 = @ptrCast(bitmap);
                                const first: usize = @intCast(keys.offset);
                                for (first..first + @as(usize, @intCast(keys.length))) |i| {
                                    if (!isValid(bits, i)) return self.failAt(.invalid_layout, "map key {d} is null; keys may not be null", .{i - first});
                                }
                            }
                        }
                    }
                }
                // (A zero-length list reads nothing here; full checks its
                // first offset, as Arrow C++ does.)
                if (self.host_readable and self.level != .minimal and array.length > 0) {
                    if (buffers[1]) |offsets| {
                        // Offsets index the child's logical slots (its own
                        // offset applies on top), so they may not pass its
                        // length.
                        const last = readOffsetRange(ty, offsets, array.offset, end) catch |e| return self.offsetError(e);
                        if (last > child.length)
                            return self.failAt(.invalid_layout, "last offset {d} is past the end of the child's {d} values", .{ last, child.length });
                    }
                }
            },
            .run_end_encoded => {
                if (child_index == 0) {
                    const re_format = std.mem.span(child_schema.format.?);
                    if (!(std.mem.eql(u8, re_format, "s") or std.mem.eql(u8, re_format, "i") or std.mem.eql(u8, re_format, "l")))
                        return self.failAt(.invalid_layout, "run_ends must be int16, int32 or int64, got format \"{s}\"", .{re_format});
                    if (child_schema.dictionary != null)
                        return self.failAt(.invalid_layout, "run_ends must be plain int16, int32 or int64, not dictionary-encoded", .{});
                    if (child.null_count > 0)
                        return self.failAt(.invalid_layout, "run_ends has {d} nulls; it must have none", .{child.null_count});
                    const max_run_end: i64 = switch (re_format[0]) {
                        's' => std.math.maxInt(i16),
                        'i' => std.math.maxInt(i32),
                        else => std.math.maxInt(i64),
                    };
                    if (end > max_run_end)
                        return self.failAt(.invalid_layout, "offset + length {d} is more than run ends of format \"{s}\" can reach", .{ end, re_format });
                    if (array.length > 0 and child.length == 0)
                        return self.failAt(.invalid_layout, "run_ends is empty but the array has length {d}", .{array.length});
                    if (self.host_readable and self.level != .minimal and child.length > 0) {
                        const last = readRunEnd(re_format[0], child, child.offset + child.length - 1);
                        if (last < end)
                            return self.failAt(.invalid_layout, "last run end {d} is less than offset + length {d}", .{ last, end });
                    }
                } else {
                    const run_ends = array.children.?[0].?;
                    if (child.length < run_ends.length)
                        return self.failAt(.invalid_layout, "values has length {d}, less than run_ends' {d}", .{ child.length, run_ends.length });
                }
            },
            else => {},
        }
        if (self.level == .full and self.host_readable) return full.checkChildFull(self, ty, array, buffers, child_index, child_schema, child);
        return .ok;
    }
};

/// Validates a tree. `table`, when given, receives its description; the root
/// is node 0. `host_readable` is false for device memory the host must not
/// read. The table is the caller's (an import owner's, in the owner's room
/// while the tree fits, and freed with the owner; see NodeTable.inRoom); on
/// any status but ok its words are unspecified (records are reserved
/// without zeroing and some are never written), so the caller discards it
/// without reading it, as owner.import does.
pub fn validate(schema: *const abi.ArrowSchema, array: *const abi.ArrowArray, level: Level, host_readable: bool, table: ?*NodeTable) Status {
    // Flat trees (a record batch of fixed-width columns) first: the same
    // rules without the walker's bookkeeping (validate/flat.zig). Anything
    // it does not accept is walked, which decides and words any error.
    if (table) |t| {
        if (validate_flat.describe(schema, array, level, t)) return .ok;
    }
    return validateByWalk(schema, array, level, host_readable, table);
}

/// `validate` without the fast path: every tree walked (tests compare).
pub fn validateByWalk(schema: *const abi.ArrowSchema, array: *const abi.ArrowArray, level: Level, host_readable: bool, table: ?*NodeTable) Status {
    var walker: Walker = .{ .level = level, .host_readable = host_readable, .table = table };
    if (table) |t| {
        t.addWords(&t.nodes, node_words) catch return fail(.out_of_memory, "out of memory describing the root", .{});
    }
    return walker.walk(schema, array, 0, -1);
}
