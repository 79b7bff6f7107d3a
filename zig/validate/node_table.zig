//! The node table: what validation (validate.zig, flat.zig) writes about a
//! tree and import, relays and device copies read. Every node's type,
//! lengths and links, and every buffer's address, size and kind, as f64
//! words; and the limits validation holds producer-supplied trees to.
//!
//! Ownership: a table belongs to its holder (an import owner, a test),
//! which calls `deinit`; its lists may start in the holder's room.

const std = @import("std");
const abi = @import("../core/abi.zig");
const format = @import("../core/format.zig");

pub const Level = enum(c_int) { none = 0, minimal = 1, default = 2, full = 3 };

/// Deepest nesting accepted (the root is depth 0). Real schemas stay far
/// below; the limit keeps recursion bounded on hostile input.
pub const max_nesting_depth = 64;
/// Most nodes one tree may have.
pub const max_nodes = 1 << 20;
/// Largest offset + length accepted (keeps every size computation in i64).
pub const max_slots: i64 = 1 << 53;
/// Most children one node may have (a struct of a million columns).
pub const max_children: i64 = max_nodes;

/// Node record, in f64 words (exact integers; pointers fit in 53 bits on
/// every supported platform). TS reads it through one typed-array view.
pub const node_words = 12;
pub const NodeWord = enum(u8) {
    schema = 0,
    array = 1,
    type_id = 2,
    length = 3,
    null_count = 4,
    offset = 5,
    n_buffers = 6,
    first_buffer = 7,
    n_children = 8,
    /// Children are stored contiguously from here.
    first_child = 9,
    /// -1 when the node is not dictionary-encoded.
    dictionary = 10,
    /// -1 for the root.
    parent = 11,
};
pub const buffer_words = 4;
pub const BufferWord = enum(u8) { address = 0, size_bytes = 1, kind = 2, element_bytes = 3 };

/// The description of one validated tree.
pub const NodeTable = struct {
    nodes: std.ArrayList(f64) = .empty,
    buffers: std.ArrayList(f64) = .empty,
    /// Sum of known buffer sizes (what the tree holds in memory).
    bytes_known: i64 = 0,
    /// Room the lists start in that belongs to the table's holder (an
    /// import owner embeds one, so that an import is one allocation, not
    /// three). A list still in it is not the allocator's: it is moved to
    /// the heap when it outgrows the room, and never freed from it.
    room: ?*Room = null,

    /// Inline room for a small tree: `room_nodes` nodes and `room_buffers`
    /// buffers (736 bytes: a struct of up to four columns, up to eight
    /// buffers in all): no larger, so that its holder stays a small
    /// allocation (see owner.zig). A table without a room (`.{}`, tests)
    /// grows from empty.
    pub const Room = struct {
        nodes: [room_nodes * node_words]f64,
        buffers: [room_buffers * buffer_words]f64,
    };
    pub const room_nodes = 5;
    pub const room_buffers = 8;

    /// An empty table whose lists start in `room` (left unwritten: each
    /// word is written before it is read). `room` must outlive the table.
    pub fn inRoom(room: *Room) NodeTable {
        return .{
            .nodes = .{ .items = room.nodes[0..0], .capacity = room.nodes.len, .pointer_stability = .{} },
            .buffers = .{ .items = room.buffers[0..0], .capacity = room.buffers.len, .pointer_stability = .{} },
            .room = room,
        };
    }

    fn inHoldersRoom(self: *const NodeTable, list: *const std.ArrayList(f64)) bool {
        const room = self.room orelse return false;
        const start = @intFromPtr(list.items.ptr);
        return start == @intFromPtr(&room.nodes) or start == @intFromPtr(&room.buffers);
    }

    pub fn deinit(self: *NodeTable) void {
        if (!self.inHoldersRoom(&self.nodes)) self.nodes.deinit(std.heap.c_allocator);
        if (!self.inHoldersRoom(&self.buffers)) self.buffers.deinit(std.heap.c_allocator);
    }

    /// `n` more words at the end of `list` (one of this table's), reserved
    /// and unwritten (the caller writes them through `items`). A list in
    /// the holder's room moves to the heap first when the room is too small.
    pub inline fn addWords(self: *NodeTable, list: *std.ArrayList(f64), n: usize) error{OutOfMemory}!void {
        if (n <= list.capacity - list.items.len) {
            list.items.len += n;
            return;
        }
        return self.growWords(list, n);
    }

    fn growWords(self: *NodeTable, list: *std.ArrayList(f64), n: usize) error{OutOfMemory}!void {
        if (self.inHoldersRoom(list)) {
            const needed = std.math.add(usize, list.items.len, n) catch return error.OutOfMemory;
            var moved = try std.ArrayList(f64).initCapacity(std.heap.c_allocator, @max(needed, 2 * list.capacity));
            moved.appendSliceAssumeCapacity(list.items);
            list.* = moved;
        }
        _ = try list.addManyAsSlice(std.heap.c_allocator, n);
    }

    pub fn nodeCount(self: *const NodeTable) usize {
        return self.nodes.items.len / node_words;
    }

    pub fn get(self: *const NodeTable, node: usize, word: NodeWord) f64 {
        return self.nodes.items[node * node_words + @intFromEnum(word)];
    }

    /// Writes node `node`'s whole record (its words reserved already): one
    /// slice of the list, not a bounds-checked store per word.
    pub fn setNode(self: *NodeTable, node: usize, record: NodeRecord) void {
        var words: [node_words]f64 = undefined;
        inline for (@typeInfo(NodeRecord).@"struct".field_names) |name| {
            words[@intFromEnum(@field(NodeWord, name))] = toWord(@field(record, name));
        }
        self.nodes.items[node * node_words ..][0..node_words].* = words;
    }

    /// Writes buffer `index`'s record (its words reserved already) and
    /// adds its size to `bytes_known`; false when the tree's buffers would
    /// then add up to more than max_slots bytes. Each size is at most
    /// max_slots (the caller checks), but a tree has many buffers: their
    /// sum must stay at most max_slots too (the held-bytes counter adds it
    /// up across owners).
    pub fn recordBuffer(self: *NodeTable, index: usize, address: ?*const anyopaque, size: i64, kind: format.BufferKind, element_bytes: u32) bool {
        var words: [buffer_words]f64 = undefined;
        words[@intFromEnum(BufferWord.address)] = toWord(address);
        words[@intFromEnum(BufferWord.size_bytes)] = @floatFromInt(size);
        words[@intFromEnum(BufferWord.kind)] = @floatFromInt(@intFromEnum(kind));
        words[@intFromEnum(BufferWord.element_bytes)] = @floatFromInt(element_bytes);
        self.buffers.items[index * buffer_words ..][0..buffer_words].* = words;
        if (size > 0) {
            const total = std.math.add(i64, self.bytes_known, size) catch max_slots + 1;
            if (total > max_slots) return false;
            self.bytes_known = total;
        }
        return true;
    }

    pub fn bufferAddress(self: *const NodeTable, index: usize) usize {
        return @intFromFloat(self.buffers.items[index * buffer_words]);
    }

    pub fn bufferSize(self: *const NodeTable, index: usize) i64 {
        return @intFromFloat(self.buffers.items[index * buffer_words + 1]);
    }
};

/// A node's record by name, one field per NodeWord (setNode writes every
/// word: the comptime check below keeps the two in step).
pub const NodeRecord = struct {
    schema: *const abi.ArrowSchema,
    array: *const abi.ArrowArray,
    type_id: format.TypeId,
    length: i64,
    null_count: i64,
    offset: i64,
    n_buffers: usize,
    first_buffer: usize,
    n_children: usize,
    first_child: usize,
    dictionary: i64,
    parent: i64,
};

comptime {
    const names = @typeInfo(NodeRecord).@"struct".field_names;
    if (names.len != node_words) @compileError("NodeRecord must name every NodeWord");
    for (names) |name| _ = @field(NodeWord, name);
}

fn toWord(value: anytype) f64 {
    const T = @TypeOf(value);
    return switch (@typeInfo(T)) {
        .pointer => @floatFromInt(@intFromPtr(value)),
        .optional => if (value) |v| toWord(v) else 0,
        .int, .comptime_int => @floatFromInt(value),
        .@"enum" => @floatFromInt(@intFromEnum(value)),
        else => @compileError("not a node word"),
    };
}
