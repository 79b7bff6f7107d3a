//! A relocatable image of a tree built in one tree block (tree_block.zig),
//! from which `instantiate` makes any number of equal trees with one
//! allocation, one memcpy and one add per pointer: no plan to read again.
//! Schema templates (export/schema.zig) and array images of memoized batch
//! plans (export/array.zig) are both this, over their own struct type.
//!
//! The image holds a copy of the block's payload (every struct but the
//! root, the pointer arrays, the strings) with each pointer into the
//! payload stored as an offset from its start, the places of those
//! pointers (`payload` relocs) and of the structs' `private_data` (`block`
//! relocs), and the root struct with its payload pointers as offsets too.
//! Pointers that lead out of the payload (an array's buffer addresses) are
//! copied as they are.
//!
//! Ownership: whoever `capture`d it, until `destroy`. A tree made from it
//! owns its own block and never points into the image, so trees outlive
//! the image and each is released on its own, exactly once.

const std = @import("std");
const tree_block = @import("tree_block.zig");

/// `T` is ArrowSchema or ArrowArray (both have n_children, children,
/// dictionary and private_data); `pointer_fields` are the fields of `T`
/// that point into the payload when set (at most 8).
pub fn Image(comptime T: type, comptime pointer_fields: []const []const u8) type {
    comptime std.debug.assert(pointer_fields.len <= 8);
    return struct {
        const Self = @This();

        /// Structs of one tree (each holds one reference to its block).
        structs: u32,
        payload_bytes: usize,
        /// The root; its set `pointer_fields` are payload offsets (one bit
        /// each in `root_relocs`: an offset may be 0); private_data unset.
        root: T,
        root_relocs: u8,
        n_payload_relocs: usize,
        n_block_relocs: usize,

        pub const Error = error{ OutOfMemory, TooBig };

        fn tail(self: *Self) [*]u8 {
            const bytes: [*]u8 = @ptrCast(self);
            return bytes + @sizeOf(Self);
        }

        fn image(self: *Self) []u8 {
            return self.tail()[0..self.payload_bytes];
        }

        fn relocs(self: *Self) []align(1) u32 {
            const words: [*]align(1) u32 = @ptrCast(self.tail() + self.payload_bytes);
            return words[0 .. self.n_payload_relocs + self.n_block_relocs];
        }

        /// An image of the tree at `root`: `structs` structs, all in the
        /// block its private_data names, whose first `payload_bytes` bytes
        /// of payload hold everything the tree points into. The tree is
        /// only read (its owner releases it as before).
        pub fn capture(root: *const T, structs: u32, payload_bytes: usize) Error!*Self {
            if (payload_bytes > std.math.maxInt(u32)) return error.TooBig;
            const block: *tree_block.Block = @ptrCast(@alignCast(root.private_data.?));
            const base = @intFromPtr(block.payload());
            var finder: Finder = .{ .base = base, .end = base + payload_bytes, .block = block };
            defer finder.payload.deinit(std.heap.c_allocator);
            defer finder.blocks.deinit(std.heap.c_allocator);
            try finder.visitChildren(root);
            const n_relocs = finder.payload.items.len + finder.blocks.items.len;
            const memory = std.c.malloc(@sizeOf(Self) + payload_bytes + n_relocs * @sizeOf(u32)) orelse return error.OutOfMemory;
            const self: *Self = @ptrCast(@alignCast(memory));
            self.* = .{ .structs = structs, .payload_bytes = payload_bytes, .root = root.*, .root_relocs = 0, .n_payload_relocs = finder.payload.items.len, .n_block_relocs = finder.blocks.items.len };
            const copy = self.image();
            @memcpy(copy, block.payload()[0..payload_bytes]);
            for (finder.payload.items) |at| {
                const word: *align(1) usize = @ptrCast(copy.ptr + at);
                word.* -= base;
            }
            for (finder.blocks.items) |at| {
                const word: *align(1) usize = @ptrCast(copy.ptr + at);
                word.* = 0;
            }
            @memcpy(self.relocs()[0..finder.payload.items.len], finder.payload.items);
            @memcpy(self.relocs()[finder.payload.items.len..], finder.blocks.items);
            inline for (pointer_fields, 0..) |field, bit| {
                const address = @intFromPtr(@field(self.root, field));
                if (address != 0) {
                    std.debug.assert(address >= base and address <= finder.end);
                    @field(self.root, field) = @ptrFromInt(address - base);
                    self.root_relocs |= 1 << bit;
                }
            }
            self.root.private_data = null;
            return self;
        }

        pub fn destroy(self: *Self) void {
            std.c.free(self);
        }

        /// What a block for one tree of this image must hold.
        pub fn size(self: *Self) tree_block.Size {
            return .{ .structs = self.structs, .payload_bytes = self.payload_bytes };
        }

        /// Makes a new tree equal to the captured one at `out` (the
        /// caller's); returns its block, with `remaining` set to the tree's
        /// structs and no on-free hook (the caller sets one). Null when out
        /// of memory (nothing allocated, `out` untouched).
        pub fn instantiate(self: *Self, out: *T) ?*tree_block.Block {
            const block = tree_block.Block.createUndefined(self.structs, self.payload_bytes) orelse return null;
            self.fill(block, out);
            return block;
        }

        /// `instantiate` into `block`, a new block of `size()` (its
        /// `remaining` already the tree's structs).
        pub fn fill(self: *Self, block: *tree_block.Block, out: *T) void {
            std.debug.assert(block.remaining.raw == self.structs);
            const payload_bytes = self.payload_bytes;
            const payload = block.payload();
            const base = @intFromPtr(payload);
            @memcpy(payload[0..payload_bytes], self.image());
            const all = self.relocs();
            for (all[0..self.n_payload_relocs]) |at| {
                const word: *align(1) usize = @ptrCast(payload + at);
                word.* += base;
            }
            for (all[self.n_payload_relocs..]) |at| {
                const word: *align(1) usize = @ptrCast(payload + at);
                word.* = @intFromPtr(block);
            }
            var root = self.root;
            inline for (pointer_fields, 0..) |field, bit| {
                if (self.root_relocs & (1 << bit) != 0) @field(root, field) = @ptrFromInt(@intFromPtr(@field(root, field)) + base);
            }
            root.private_data = block;
            out.* = root;
        }

        /// Collects the payload offsets of every pointer into the payload
        /// and of every `private_data` of a built tree.
        const Finder = struct {
            base: usize,
            end: usize,
            block: *tree_block.Block,
            payload: std.ArrayList(u32) = .empty,
            blocks: std.ArrayList(u32) = .empty,

            fn offsetOf(self: *Finder, place: usize) u32 {
                return @intCast(place - self.base);
            }

            /// Records `place` unless it holds NULL: every pointer field
            /// in `pointer_fields` that a built tree sets points into its
            /// own payload.
            fn pointer(self: *Finder, place: usize, value: usize) error{OutOfMemory}!void {
                if (value == 0) return;
                std.debug.assert(value >= self.base and value <= self.end);
                try self.payload.append(std.heap.c_allocator, self.offsetOf(place));
            }

            /// Records the pointers of `node`'s children and dictionary
            /// (which live in the payload), recursively; not `node`'s own.
            fn visitChildren(self: *Finder, node: *const T) error{OutOfMemory}!void {
                if (node.children) |children| {
                    for (children[0..@intCast(node.n_children)]) |*slot| {
                        try self.pointer(@intFromPtr(slot), @intFromPtr(slot.*));
                        try self.visitStruct(slot.*.?);
                    }
                }
                if (node.dictionary) |dictionary| try self.visitStruct(dictionary);
            }

            fn visitStruct(self: *Finder, node: *T) error{OutOfMemory}!void {
                std.debug.assert(node.private_data == @as(?*anyopaque, self.block));
                inline for (pointer_fields) |field| {
                    try self.pointer(@intFromPtr(&@field(node, field)), @intFromPtr(@field(node, field)));
                }
                try self.blocks.append(std.heap.c_allocator, self.offsetOf(@intFromPtr(&node.private_data)));
                try self.visitChildren(node);
            }
        };
    };
}
