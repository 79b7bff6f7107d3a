//! Builds ArrowArray / ArrowDeviceArray trees over memory the caller keeps
//! alive (JS buffers, device allocations), from a flat plan.
//!
//! The plan is an array of f64 words holding exact integers (Bun hands
//! pointers to JS as numbers, so this is the cheapest shape to fill from JS).
//! One node, in preorder, children before the dictionary:
//!   length, null_count, offset, n_buffers, n_children, has_dictionary,
//!   then n_buffers buffer addresses (0 for NULL),
//!   then the n_children child nodes, then the dictionary node if any.
//!
//! Ownership: the caller owns `out` (the base struct) and nothing else; every
//! other struct lives in one tree block (tree_block.zig). When the last
//! struct of the tree is released, `keepalive_id` is queued for the JS side
//! (keepalive.zig), which then lets go of the buffers. Until then the caller
//! must keep every buffer alive and at the same address.

const std = @import("std");
const abi = @import("../core/abi.zig");
const status = @import("../core/status.zig");
const counters = @import("../core/counters.zig");
const keepalive = @import("keepalive.zig");
const js_context = @import("../core/js_context.zig");
const tree_block = @import("tree_block.zig");
const tree_image = @import("tree_image.zig");
const validate = @import("../validate/validate.zig");
const Status = status.Status;
const fail = status.fail;

pub const plan_header_words = 6;
/// Limits on what one plan may describe; real arrays stay far below.
pub const max_buffers_per_node = 1 << 20;
pub const max_children_per_node = 1 << 20;

const PlanNode = struct {
    length: i64,
    null_count: i64,
    offset: i64,
    n_buffers: usize,
    n_children: usize,
    has_dictionary: bool,
    buffers: []const f64,
};

const PlanReader = struct {
    words: []const f64,
    at: usize = 0,
    nodes: u32 = 0,
    /// Why `node` returned null.
    failure: Status = .ok,

    fn reject(self: *PlanReader, code: Status) ?PlanNode {
        self.failure = code;
        return null;
    }

    fn int(word: f64) ?i64 {
        if (!(word >= -9007199254740992.0 and word <= 9007199254740992.0)) return null;
        const value: i64 = @intFromFloat(word);
        if (@as(f64, @floatFromInt(value)) != word) return null;
        return value;
    }

    fn node(self: *PlanReader) ?PlanNode {
        if (self.at + plan_header_words > self.words.len) return self.reject(fail(.invalid_argument, "export plan ends in the middle of node {d}", .{self.nodes}));
        const w = self.words[self.at..][0..plan_header_words];
        const length = int(w[0]) orelse return self.reject(fail(.invalid_argument, "export plan node {d} has a non-integer length", .{self.nodes}));
        const null_count = int(w[1]) orelse return self.reject(fail(.invalid_argument, "export plan node {d} has a non-integer null_count", .{self.nodes}));
        const offset = int(w[2]) orelse return self.reject(fail(.invalid_argument, "export plan node {d} has a non-integer offset", .{self.nodes}));
        const n_buffers = int(w[3]) orelse -1;
        const n_children = int(w[4]) orelse -1;
        if (length < 0 or offset < 0 or null_count < -1)
            return self.reject(fail(.invalid_layout, "export plan node {d}: length {d}, offset {d}, null_count {d} must not be negative", .{ self.nodes, length, offset, null_count }));
        if (n_buffers < 0 or n_buffers > max_buffers_per_node)
            return self.reject(fail(.invalid_argument, "export plan node {d} has {d} buffers", .{ self.nodes, n_buffers }));
        if (n_children < 0 or n_children > max_children_per_node)
            return self.reject(fail(.invalid_argument, "export plan node {d} has {d} children", .{ self.nodes, n_children }));
        self.at += plan_header_words;
        const nb: usize = @intCast(n_buffers);
        if (self.at + nb > self.words.len) return self.reject(fail(.invalid_argument, "export plan ends inside node {d}'s buffers", .{self.nodes}));
        const buffers = self.words[self.at..][0..nb];
        self.at += nb;
        self.nodes += 1;
        return .{
            .length = length,
            .null_count = null_count,
            .offset = offset,
            .n_buffers = nb,
            .n_children = @intCast(n_children),
            .has_dictionary = w[5] != 0,
            .buffers = buffers,
        };
    }
};

/// The release callback of every struct this module builds.
fn releaseArray(array: *abi.ArrowArray) callconv(.c) void {
    std.debug.assert(array.release != null);
    const block: *tree_block.Block = @ptrCast(@alignCast(array.private_data.?));
    block.unrefMany(releaseNodes(array, block));
}

/// Releases `array` and the descendants still in it; returns how many of
/// them belong to `block` (their references are dropped together, by the
/// caller). Children moved out by the consumer are already NULL here; any
/// other struct is released through its own callback.
fn releaseNodes(array: *abi.ArrowArray, block: *tree_block.Block) u32 {
    var mine: u32 = 1;
    if (array.children) |children| {
        for (children[0..@intCast(array.n_children)]) |maybe_child| {
            const child = maybe_child orelse continue;
            mine += releaseChild(child, block);
        }
    }
    if (array.dictionary) |dictionary| mine += releaseChild(dictionary, block);
    array.release = null;
    array.private_data = null;
    return mine;
}

fn releaseChild(child: *abi.ArrowArray, block: *tree_block.Block) u32 {
    const release = child.release orelse return 0;
    if (release == &releaseArray and child.private_data == @as(?*anyopaque, block)) return releaseNodes(child, block);
    release(child);
    return 0;
}

/// The JS thread (js_context.zig) whose memory `array` views, when it is a
/// tree this module built for JS; 0 for any other array.
pub fn jsContextOf(array: *const abi.ArrowArray) u32 {
    if (array.release != &releaseArray) return 0;
    const block: *tree_block.Block = @ptrCast(@alignCast(array.private_data orelse return 0));
    if (block.on_free != &finishExport) return 0;
    return js_context.ofKeepalive(@intFromPtr(block.on_free_context));
}

/// Context of the block's on-free hook for JS-backed exports.
fn finishExport(context: ?*anyopaque) callconv(.c) void {
    counters.add(.live_array_exports, -1);
    keepalive.finish(@intFromPtr(context));
}

pub const Options = struct {
    /// Queued for JS when the tree is fully released (0: nothing to queue).
    keepalive_id: u64 = 0,
    /// Runs after the block is freed, instead of the keepalive hand-off.
    on_free: ?tree_block.OnFree = null,
    on_free_context: ?*anyopaque = null,
};

/// Builds the tree described by `plan` into `out`. On error `out` is left
/// untouched (released) and nothing is allocated.
pub fn build(plan: []const f64, options: Options, out: *abi.ArrowArray) Status {
    var built: Built = undefined;
    const s = buildBlock(plan, &built);
    if (s != .ok) return s;
    finishBlock(built.block, options);
    out.* = built.root;
    return .ok;
}

/// A tree `buildBlock` filled: its root, and its block with no on-free hook
/// yet, `used_bytes` of whose payload the tree points into.
const Built = struct { root: abi.ArrowArray, block: *tree_block.Block, used_bytes: usize };

/// One pass: the block is sized by an upper bound computed from the plan's
/// length alone (every node takes at least `plan_header_words` words, and
/// each other word is one buffer), then the plan is checked while the tree
/// is filled. A bad plan frees the block before any struct left it.
fn buildBlock(plan: []const f64, out: *Built) Status {
    const bound = payloadBound(plan.len);
    const block = tree_block.Block.createUndefined(0, bound) orelse return fail(.out_of_memory, "out of memory allocating {d} bytes for an exported array", .{bound});
    var carver = tree_block.Carver.init(block, bound);
    var reader: PlanReader = .{ .words = plan };
    var structs: u32 = 0;
    var root: abi.ArrowArray = .empty;
    var filled = fillChecked(&reader, &carver, block, &root, &structs, 0);
    if (filled == .ok and reader.at != plan.len) filled = fail(.invalid_argument, "export plan has {d} words after its last node", .{plan.len - reader.at});
    if (filled != .ok) {
        std.c.free(block);
        return filled;
    }
    block.remaining = .init(structs);
    out.* = .{ .root = root, .block = block, .used_bytes = @intFromPtr(carver.next) - @intFromPtr(block.payload()) };
    return .ok;
}

/// Sets the on-free hook of a new tree's block from `options`.
fn finishBlock(block: *tree_block.Block, options: Options) void {
    if (options.on_free) |hook| {
        block.on_free = hook;
        block.on_free_context = options.on_free_context;
    } else {
        block.on_free = finishExport;
        block.on_free_context = @ptrFromInt(options.keepalive_id);
        counters.add(.live_array_exports, 1);
    }
}

/// A plan checked and built once, from which `instantiate` makes equal
/// trees (the same buffer addresses) without reading the plan again: the
/// JS side keeps one per memoized batch plan (arrow/export.ts `Batch`),
/// so exporting the same batch again costs one allocation, one memcpy and
/// one add per pointer (tree_image.zig).
///
/// Ownership: whoever `create`d it, until `destroy` (the JS memo, when it
/// is collected). Trees made from it never point into it; the buffers they
/// point at are the caller's to keep alive per tree, as for `build`.
pub const Image = opaque {
    const Inner = tree_image.Image(abi.ArrowArray, &.{ "buffers", "children", "dictionary" });

    /// Images not yet destroyed (for tests: `abd_array_images_live`).
    var live: std.atomic.Value(i64) = .init(0);

    fn inner(self: *Image) *Inner {
        return @ptrCast(@alignCast(self));
    }

    /// An image of `plan`, or an error status (nothing kept).
    pub fn create(plan: []const f64, out: *?*Image) Status {
        var built: Built = undefined;
        const s = buildBlock(plan, &built);
        if (s != .ok) return s;
        // The tree built here is only read, then its block freed whole: no
        // struct of it ever left this function.
        defer std.c.free(built.block);
        const captured = Inner.capture(&built.root, built.block.remaining.raw, built.used_bytes) catch |err| return switch (err) {
            error.TooBig => fail(.invalid_argument, "export plan needs {d} bytes, more than an array image holds", .{built.used_bytes}),
            error.OutOfMemory => fail(.out_of_memory, "out of memory keeping an array image of {d} bytes", .{built.used_bytes}),
        };
        _ = live.fetchAdd(1, .monotonic);
        out.* = @ptrCast(captured);
        return .ok;
    }

    pub fn destroy(self: *Image) void {
        _ = live.fetchSub(1, .monotonic);
        self.inner().destroy();
    }

    pub fn liveCount() i64 {
        return live.load(.monotonic);
    }

    /// Makes a new tree equal to the one of the image's plan at `out` (as
    /// `build` with that plan would).
    pub fn instantiate(self: *Image, options: Options, out: *abi.ArrowArray) Status {
        const block = self.inner().instantiate(out) orelse return fail(.out_of_memory, "out of memory allocating an exported array", .{});
        finishBlock(block, options);
        return .ok;
    }

    /// What a block for one tree of this image holds.
    pub fn size(self: *Image) tree_block.Size {
        return self.inner().size();
    }

    /// `instantiate` into `block`, a new block of `size()` (one half of a
    /// tree_block.Pair).
    pub fn fill(self: *Image, block: *tree_block.Block, options: Options, out: *abi.ArrowArray) void {
        self.inner().fill(block, out);
        finishBlock(block, options);
    }
};

/// The most payload a plan of `words` words can need: n nodes take 6n
/// header words and leave `words - 6n` buffer words; each node but the
/// root needs a struct and a child (or dictionary) pointer, so the need
/// grows with n, at most `words / 6`.
fn payloadBound(words: usize) usize {
    const nodes = words / plan_header_words;
    if (nodes == 0) return 0;
    const per_child = @sizeOf(abi.ArrowArray) + @sizeOf(?*abi.ArrowArray);
    return (nodes - 1) * per_child + (words - nodes * plan_header_words) * @sizeOf(?*const anyopaque);
}

/// Checks the next node of the plan and fills `target` from it, then its
/// children and dictionary (for `build`); counts the structs in `structs`.
fn fillChecked(reader: *PlanReader, carver: *tree_block.Carver, block: *tree_block.Block, target: *abi.ArrowArray, structs: *u32, depth: usize) Status {
    if (depth > validate.max_nesting_depth) return fail(.too_deep, "export plan nests deeper than {d} levels", .{validate.max_nesting_depth});
    const node = reader.node() orelse return reader.failure;
    const too_big = "export plan node {d} needs more memory than its plan's length allows";
    const buffers = carver.takeChecked(?*const anyopaque, node.n_buffers) orelse return fail(.invalid_argument, too_big, .{reader.nodes});
    for (node.buffers, buffers) |word, *slot| {
        const address = PlanReader.int(word) orelse -1;
        if (address < 0) return fail(.invalid_argument, "export plan node {d} has a buffer address that is not a non-negative integer", .{reader.nodes});
        slot.* = if (address == 0) null else @ptrFromInt(@as(usize, @intCast(address)));
    }
    const children = carver.takeChecked(?*abi.ArrowArray, node.n_children) orelse return fail(.invalid_argument, too_big, .{reader.nodes});
    structs.* += 1;
    target.* = .{
        .length = node.length,
        .null_count = node.null_count,
        .offset = node.offset,
        .n_buffers = @intCast(node.n_buffers),
        .n_children = @intCast(node.n_children),
        .buffers = if (node.n_buffers == 0) null else buffers.ptr,
        .children = if (node.n_children == 0) null else children.ptr,
        .dictionary = null,
        .release = releaseArray,
        .private_data = block,
    };
    for (children) |*slot| {
        const child = &(carver.takeChecked(abi.ArrowArray, 1) orelse return fail(.invalid_argument, too_big, .{reader.nodes}))[0];
        const s = fillChecked(reader, carver, block, child, structs, depth + 1);
        if (s != .ok) return s;
        slot.* = child;
    }
    if (node.has_dictionary) {
        const dictionary = &(carver.takeChecked(abi.ArrowArray, 1) orelse return fail(.invalid_argument, too_big, .{reader.nodes}))[0];
        const s = fillChecked(reader, carver, block, dictionary, structs, depth + 1);
        if (s != .ok) return s;
        target.dictionary = dictionary;
    }
    return .ok;
}

pub const DeviceFields = struct {
    device_type: abi.DeviceType = abi.device_cpu,
    device_id: i64 = -1,
    sync_event: ?*anyopaque = null,
};

/// Like `build`, for an ArrowDeviceArray; `reserved` is zeroed. Refuses
/// (before building anything) what a consumer could not take: a device
/// type of 0 or below, and a sync event on a CPU array (there is nothing
/// to wait on in CPU memory), as stream exports do.
pub fn buildDevice(plan: []const f64, options: Options, device: DeviceFields, out: *abi.ArrowDeviceArray) Status {
    if (device.device_type <= 0) return fail(.invalid_argument, "device_type {d} is not an Arrow device type (they are positive)", .{device.device_type});
    if (device.device_type == abi.device_cpu and device.sync_event != null) return fail(.invalid_argument, "a CPU array cannot carry a sync_event", .{});
    var array: abi.ArrowArray = .empty;
    const s = build(plan, options, &array);
    if (s != .ok) return s;
    out.* = .{
        .array = array,
        .device_id = device.device_id,
        .device_type = device.device_type,
        .sync_event = device.sync_event,
        .reserved = .{ 0, 0, 0 },
    };
    return .ok;
}

// ---------------------------------------------------------------------------

const testing = std.testing;

test "a nested plan builds a tree whose releases run once and free the block" {
    var data: [4]i32 = .{ 1, 2, 3, 4 };
    var validity: [1]u8 = .{0b1011};
    const data_word: f64 = @floatFromInt(@intFromPtr(&data));
    const validity_word: f64 = @floatFromInt(@intFromPtr(&validity));
    // struct<a: int32> with one child.
    const plan = [_]f64{
        4, 0, 0, 1, 1, 0, 0, // struct: validity NULL
        4, 1, 0, 2, 0, 0, validity_word, data_word, // int32 child
    };
    const before = counters.get(.live_array_exports);
    var out: abi.ArrowArray = .empty;
    try testing.expectEqual(Status.ok, build(&plan, .{ .keepalive_id = 77 }, &out));
    try testing.expectEqual(@as(i64, 1), out.n_children);
    const child = out.children.?[0].?;
    try testing.expectEqual(@intFromPtr(&data), @intFromPtr(child.buffers.?[1].?));
    try testing.expectEqual(before + 1, counters.get(.live_array_exports));
    out.release.?(&out);
    try testing.expect(out.release == null);
    try testing.expectEqual(before, counters.get(.live_array_exports));
    var ids: [8]f64 = undefined;
    const n = keepalive.take(&ids);
    try testing.expectEqual(@as(usize, 1), n);
    try testing.expectEqual(@as(f64, 77), ids[0]);
}

test "a child moved out keeps the block alive until it is released too" {
    const plan = [_]f64{ 2, 0, 0, 1, 2, 0, 0, 2, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0 };
    var out: abi.ArrowArray = .empty;
    try testing.expectEqual(Status.ok, build(&plan, .{ .keepalive_id = 5 }, &out));
    // Move child 1 out, the way a consumer would.
    const child_slot = out.children.?[1].?;
    var moved = child_slot.*;
    child_slot.release = null;
    out.release.?(&out);
    var ids: [4]f64 = undefined;
    try testing.expectEqual(@as(usize, 0), keepalive.take(&ids));
    moved.release.?(&moved);
    try testing.expectEqual(@as(usize, 1), keepalive.take(&ids));
    try testing.expectEqual(@as(f64, 5), ids[0]);
}

test "malformed plans are rejected without allocating" {
    var out: abi.ArrowArray = .empty;
    // More children than the plan's words could describe, a bad address.
    try testing.expectEqual(Status.invalid_argument, build(&[_]f64{ 1, 0, 0, 0, 1000, 0 }, .{}, &out));
    try testing.expectEqual(Status.invalid_argument, build(&[_]f64{ 1, 0, 0, 1, 0, 0, -8 }, .{}, &out));
    try testing.expectEqual(Status.invalid_argument, build(&[_]f64{ 1, 0, 0, 1, 1, 0, 0, 1, 0, 0, 0, 0 }, .{}, &out));
    try testing.expectEqual(Status.invalid_argument, build(&[_]f64{ 1, 0, 0 }, .{}, &out));
    try testing.expectEqual(Status.invalid_layout, build(&[_]f64{ -1, 0, 0, 0, 0, 0 }, .{}, &out));
    try testing.expectEqual(Status.invalid_argument, build(&[_]f64{ 1, 0, 0, 0, 0, 0, 9 }, .{}, &out));
    try testing.expectEqual(Status.invalid_argument, build(&[_]f64{ 1, 0.5, 0, 0, 0, 0 }, .{}, &out));
    try testing.expect(out.release == null);
}

test "device fields are set and reserved is zeroed" {
    var out: abi.ArrowDeviceArray = undefined;
    @memset(std.mem.asBytes(&out), 0xAB);
    try testing.expectEqual(Status.ok, buildDevice(&[_]f64{ 0, 0, 0, 0, 0, 0 }, .{}, .{}, &out));
    try testing.expectEqual(@as(i64, -1), out.device_id);
    try testing.expectEqual(abi.device_cpu, out.device_type);
    try testing.expect(out.sync_event == null);
    try testing.expectEqual([3]i64{ 0, 0, 0 }, out.reserved);
    out.array.release.?(&out.array);
    var ids: [4]f64 = undefined;
    _ = keepalive.take(&ids);
}

test "buildDevice refuses device type 0, negative ones and a sync event on the CPU; device_id is an int64" {
    var data: [2]i32 = .{ 1, 2 };
    const plan = [_]f64{ 2, 0, 0, 2, 0, 0, 0, @floatFromInt(@intFromPtr(&data)) };
    var out: abi.ArrowDeviceArray = undefined;
    try testing.expectEqual(Status.invalid_argument, buildDevice(&plan, .{}, .{ .device_type = 0 }, &out));
    try testing.expectEqual(Status.invalid_argument, buildDevice(&plan, .{}, .{ .device_type = -3 }, &out));
    var event: u64 = 0;
    try testing.expectEqual(Status.invalid_argument, buildDevice(&plan, .{}, .{ .sync_event = &event }, &out));
    const big: i64 = (1 << 32) + 5;
    try testing.expectEqual(Status.ok, buildDevice(&plan, .{}, .{ .device_type = abi.device_cpu, .device_id = big }, &out));
    try testing.expectEqual(big, out.device_id);
    out.array.release.?(&out.array);
}

test "an image makes trees equal to the plan's, each in its own block, released once, outliving the image" {
    var ints: [4]i32 = .{ 1, 2, 3, 4 };
    var validity: [1]u8 = .{0b1011};
    var offsets: [3]i32 = .{ 0, 1, 3 };
    var chars: [3]u8 = .{ 'a', 'b', 'c' };
    const w = struct {
        fn of(p: anytype) f64 {
            return @floatFromInt(@intFromPtr(p));
        }
    }.of;
    // struct<a: int32, s: utf8 (2 of 4), d: dictionary int32 -> int32>.
    const plan = [_]f64{
        4, 0, 0, 1, 3, 0, 0, // struct: validity NULL
        4, 1, 0, 2, 0, 0, w(&validity), w(&ints), // int32
        2, 0, 1, 3, 0, 0, 0, w(&offsets), w(&chars), // utf8 at offset 1
        4, 0, 0, 2, 0, 1, 0, w(&ints), // dictionary indices
        3, 0, 0, 2, 0, 0, 0, w(&ints), // its dictionary
    };
    const before = Image.liveCount();
    var maybe: ?*Image = null;
    try testing.expectEqual(Status.ok, Image.create(&plan, &maybe));
    const image = maybe.?;
    try testing.expectEqual(before + 1, Image.liveCount());
    const arrays = counters.get(.live_array_exports);
    var planned: abi.ArrowArray = .empty;
    try testing.expectEqual(Status.ok, build(&plan, .{ .keepalive_id = 60 }, &planned));
    var copies: [2]abi.ArrowArray = .{ .empty, .empty };
    try testing.expectEqual(Status.ok, image.instantiate(.{ .keepalive_id = 61 }, &copies[0]));
    try testing.expectEqual(Status.ok, image.instantiate(.{ .keepalive_id = 62 }, &copies[1]));
    image.destroy();
    try testing.expectEqual(before, Image.liveCount());
    try testing.expectEqual(arrays + 3, counters.get(.live_array_exports));
    try testing.expect(copies[0].private_data != copies[1].private_data);
    for (copies) |copy| {
        try expectSameTree(&planned, &copy);
        const block: *tree_block.Block = @ptrCast(@alignCast(copy.private_data.?));
        const start = @intFromPtr(block);
        const end = start + block.total_bytes;
        const child = copy.children.?[2].?;
        try testing.expect(@intFromPtr(child) > start and @intFromPtr(child) < end);
        try testing.expect(@intFromPtr(child.dictionary.?) > start and @intFromPtr(child.dictionary.?) < end);
        try testing.expect(@intFromPtr(copy.buffers.?) > start and @intFromPtr(copy.buffers.?) < end);
        try testing.expectEqual(copy.private_data, child.dictionary.?.private_data);
    }
    // A child moved out of one copy keeps that copy's block alone alive.
    const slot = copies[0].children.?[1].?;
    var moved = slot.*;
    slot.release = null;
    copies[0].release.?(&copies[0]);
    planned.release.?(&planned);
    copies[1].release.?(&copies[1]);
    var ids: [8]f64 = undefined;
    try testing.expectEqual(@as(usize, 2), keepalive.take(&ids));
    try testing.expectEqual([2]f64{ 60, 62 }, ids[0..2].*);
    try testing.expectEqual(@as(i64, 1), moved.offset);
    try testing.expectEqual(@intFromPtr(&chars), @intFromPtr(moved.buffers.?[2].?));
    moved.release.?(&moved);
    try testing.expectEqual(@as(usize, 1), keepalive.take(&ids));
    try testing.expectEqual(@as(f64, 61), ids[0]);
    try testing.expectEqual(arrays, counters.get(.live_array_exports));
}

/// Two trees agree field by field (every buffer address too), recursively.
fn expectSameTree(a: *const abi.ArrowArray, b: *const abi.ArrowArray) !void {
    try testing.expectEqual(a.length, b.length);
    try testing.expectEqual(a.null_count, b.null_count);
    try testing.expectEqual(a.offset, b.offset);
    try testing.expectEqual(a.n_buffers, b.n_buffers);
    try testing.expectEqual(a.n_children, b.n_children);
    try testing.expect(a.release == b.release and b.release != null);
    for (0..@intCast(a.n_buffers)) |i| try testing.expectEqual(a.buffers.?[i], b.buffers.?[i]);
    for (0..@intCast(a.n_children)) |i| try expectSameTree(a.children.?[i].?, b.children.?[i].?);
    try testing.expectEqual(a.dictionary == null, b.dictionary == null);
    if (a.dictionary) |dictionary| try expectSameTree(dictionary, b.dictionary.?);
}

test "an image refuses a bad plan without keeping anything" {
    const before = Image.liveCount();
    var maybe: ?*Image = null;
    try testing.expectEqual(Status.invalid_argument, Image.create(&[_]f64{ 1, 0, 0, 1, 1, 0, 0, 1, 0, 0, 0, 0 }, &maybe));
    try testing.expect(maybe == null);
    try testing.expectEqual(before, Image.liveCount());
}
