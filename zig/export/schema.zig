//! Builds ArrowSchema trees from a byte plan. Unlike arrays, schemas own all
//! their memory: strings and metadata are copied into the tree block, so the
//! plan may be freed as soon as `build` returns.
//!
//! Plan, little-endian, one node in preorder (children, then dictionary):
//!   u32 format length, format bytes;
//!   i32 name length (-1: NULL), name bytes;
//!   i32 metadata length (-1: NULL), metadata bytes (already in the spec's
//!       binary encoding);
//!   i64 flags; u32 n_children; u8 has_dictionary.
//!
//! Ownership: the caller owns `out`; each struct of the tree holds one
//! reference to the block (tree_block.zig), released exactly once.

const std = @import("std");
const abi = @import("../core/abi.zig");
const status = @import("../core/status.zig");
const counters = @import("../core/counters.zig");
const tree_block = @import("tree_block.zig");
const tree_image = @import("tree_image.zig");
const validate = @import("../validate/validate.zig");
const format = @import("../core/format.zig");
const Status = status.Status;
const fail = status.fail;

pub const max_children_per_node = 1 << 20;

const PlanNode = struct {
    format: []const u8,
    name: ?[]const u8,
    metadata: ?[]const u8,
    flags: i64,
    n_children: usize,
    has_dictionary: bool,
};

const PlanReader = struct {
    bytes: []const u8,
    at: usize = 0,
    nodes: u32 = 0,
    /// Why `node` returned null.
    failure: Status = .ok,
    /// Set for a plan that `measure` already checked: `node` skips the NUL
    /// scans and the format parse (the fill pass, template instances).
    trusted: bool = false,

    fn reject(self: *PlanReader, code: Status) ?PlanNode {
        self.failure = code;
        return null;
    }

    fn take(self: *PlanReader, n: usize) ?[]const u8 {
        if (n > self.bytes.len - self.at) return null;
        defer self.at += n;
        return self.bytes[self.at..][0..n];
    }

    fn int(self: *PlanReader, comptime T: type) ?T {
        const raw = self.take(@sizeOf(T)) orelse return null;
        return std.mem.readInt(T, raw[0..@sizeOf(T)], .little);
    }

    fn optionalBytes(self: *PlanReader) ?(?[]const u8) {
        const len = self.int(i32) orelse return null;
        if (len == -1) return @as(?[]const u8, null);
        if (len < 0) return null;
        const bytes = self.take(@intCast(len)) orelse return null;
        return @as(?[]const u8, bytes);
    }

    fn node(self: *PlanReader) ?PlanNode {
        const truncated = "schema plan is truncated in node {d}";
        const format_len = self.int(u32) orelse return self.reject(fail(.invalid_argument, truncated, .{self.nodes}));
        const format_text = self.take(format_len) orelse return self.reject(fail(.invalid_argument, truncated, .{self.nodes}));
        const name = self.optionalBytes() orelse return self.reject(fail(.invalid_argument, truncated, .{self.nodes}));
        const metadata = self.optionalBytes() orelse return self.reject(fail(.invalid_argument, truncated, .{self.nodes}));
        const flags = self.int(i64) orelse return self.reject(fail(.invalid_argument, truncated, .{self.nodes}));
        const n_children = self.int(u32) orelse return self.reject(fail(.invalid_argument, truncated, .{self.nodes}));
        const has_dictionary = self.int(u8) orelse return self.reject(fail(.invalid_argument, truncated, .{self.nodes}));
        if (n_children > max_children_per_node) return self.reject(fail(.invalid_argument, "schema plan node {d} has {d} children", .{ self.nodes, n_children }));
        if (self.trusted) return .{ .format = format_text, .name = name, .metadata = metadata, .flags = flags, .n_children = n_children, .has_dictionary = has_dictionary != 0 };
        if (std.mem.indexOfScalar(u8, format_text, 0) != null) return self.reject(fail(.invalid_format, "format of schema plan node {d} contains a NUL byte", .{self.nodes}));
        if (name) |n| if (std.mem.indexOfScalar(u8, n, 0) != null) return self.reject(fail(.invalid_argument, "name of schema plan node {d} contains a NUL byte", .{self.nodes}));
        var why: []const u8 = "";
        _ = format.parse(format_text, &why) catch return self.reject(fail(.invalid_format, "format \"{s}\" {s}", .{ format_text[0..@min(64, format_text.len)], why }));
        self.nodes += 1;
        return .{
            .format = format_text,
            .name = name,
            .metadata = metadata,
            .flags = flags,
            .n_children = n_children,
            .has_dictionary = has_dictionary != 0,
        };
    }
};

fn measure(reader: *PlanReader, sizer: *tree_block.Sizer, structs: *u32, depth: usize, is_root: bool) Status {
    if (depth > validate.max_nesting_depth) return fail(.too_deep, "schema plan nests deeper than {d} levels", .{validate.max_nesting_depth});
    const node = reader.node() orelse return reader.failure;
    if (!is_root) sizer.add(abi.ArrowSchema, 1);
    sizer.add(?*abi.ArrowSchema, node.n_children);
    sizer.add(u8, node.format.len + 1);
    if (node.name) |name| sizer.add(u8, name.len + 1);
    if (node.metadata) |metadata| sizer.add(u8, metadata.len);
    structs.* += 1;
    for (0..node.n_children) |_| {
        const s = measure(reader, sizer, structs, depth + 1, false);
        if (s != .ok) return s;
    }
    if (node.has_dictionary) {
        const s = measure(reader, sizer, structs, depth + 1, false);
        if (s != .ok) return s;
    }
    return .ok;
}

fn copyZ(carver: *tree_block.Carver, text: []const u8) [*:0]const u8 {
    const copy = carver.take(u8, text.len + 1);
    @memcpy(copy[0..text.len], text);
    copy[text.len] = 0;
    return @ptrCast(copy.ptr);
}

fn fill(reader: *PlanReader, carver: *tree_block.Carver, block: *tree_block.Block, target: *abi.ArrowSchema) void {
    const node = reader.node().?; // measured already
    const children = carver.take(?*abi.ArrowSchema, node.n_children);
    const format_copy = copyZ(carver, node.format);
    const name_copy: ?[*:0]const u8 = if (node.name) |name| copyZ(carver, name) else null;
    var metadata_copy: ?[*]const u8 = null;
    if (node.metadata) |metadata| {
        const copy = carver.take(u8, metadata.len);
        @memcpy(copy, metadata);
        metadata_copy = copy.ptr;
    }
    target.* = .{
        .format = format_copy,
        .name = name_copy,
        .metadata = metadata_copy,
        .flags = node.flags,
        .n_children = @intCast(node.n_children),
        .children = if (node.n_children == 0) null else children.ptr,
        .dictionary = null,
        .release = releaseSchema,
        .private_data = block,
    };
    for (children) |*slot| {
        const child = &carver.take(abi.ArrowSchema, 1)[0];
        fill(reader, carver, block, child);
        slot.* = child;
    }
    if (node.has_dictionary) {
        const dictionary = &carver.take(abi.ArrowSchema, 1)[0];
        fill(reader, carver, block, dictionary);
        target.dictionary = dictionary;
    }
}

/// The release callback of every schema struct built in a tree block
/// (also used by schema_copy.zig).
pub fn releaseSchema(schema: *abi.ArrowSchema) callconv(.c) void {
    std.debug.assert(schema.release != null);
    const block: *tree_block.Block = @ptrCast(@alignCast(schema.private_data.?));
    block.unrefMany(releaseNodes(schema, block));
}

/// Releases `schema` and the descendants still in it; returns how many of
/// them belong to `block` (their references are dropped together, by the
/// caller). Children moved out are already NULL; any other struct is
/// released through its own callback.
fn releaseNodes(schema: *abi.ArrowSchema, block: *tree_block.Block) u32 {
    var mine: u32 = 1;
    if (schema.children) |children| {
        for (children[0..@intCast(schema.n_children)]) |maybe_child| {
            const child = maybe_child orelse continue;
            mine += releaseChild(child, block);
        }
    }
    if (schema.dictionary) |dictionary| mine += releaseChild(dictionary, block);
    schema.release = null;
    schema.private_data = null;
    return mine;
}

fn releaseChild(child: *abi.ArrowSchema, block: *tree_block.Block) u32 {
    const release = child.release orelse return 0;
    if (release == &releaseSchema and child.private_data == @as(?*anyopaque, block)) return releaseNodes(child, block);
    release(child);
    return 0;
}

/// The tree block's on-free hook for schemas this library built.
pub fn finishSchema(context: ?*anyopaque) callconv(.c) void {
    _ = context;
    counters.add(.live_schema_exports, -1);
}

/// Builds the schema tree described by `plan` into `out`. On error `out` is
/// left untouched and nothing is allocated.
pub fn build(plan: []const u8, out: *abi.ArrowSchema) Status {
    var sized: Sized = undefined;
    const measured = measurePlan(plan, &sized);
    if (measured != .ok) return measured;
    return buildMeasured(plan, sized, out);
}

/// What `measure` found out about a whole plan.
const Sized = struct { structs: u32, payload_bytes: usize };

fn measurePlan(plan: []const u8, sized: *Sized) Status {
    var reader: PlanReader = .{ .bytes = plan };
    var sizer: tree_block.Sizer = .{};
    var structs: u32 = 0;
    const measured = measure(&reader, &sizer, &structs, 0, true);
    if (measured != .ok) return measured;
    if (reader.at != plan.len) return fail(.invalid_argument, "schema plan has {d} bytes after its last node", .{plan.len - reader.at});
    sized.* = .{ .structs = structs, .payload_bytes = sizer.bytes };
    return .ok;
}

/// Builds a tree from a plan `measurePlan` accepted as `sized`.
fn buildMeasured(plan: []const u8, sized: Sized, out: *abi.ArrowSchema) Status {
    const block = tree_block.Block.create(sized.structs, sized.payload_bytes) orelse return fail(.out_of_memory, "out of memory allocating an exported schema", .{});
    block.on_free = finishSchema;
    counters.add(.live_schema_exports, 1);
    var carver = tree_block.Carver.init(block, sized.payload_bytes);
    var reader: PlanReader = .{ .bytes = plan, .trusted = true };
    fill(&reader, &carver, block, out);
    return .ok;
}

/// A schema plan checked and built once, from which `instantiate` makes
/// any number of trees without reading the plan again: the JS side keeps
/// one per apache-arrow Schema/Field/DataType it exported
/// (arrow/export.ts). It is a relocatable image of one built tree
/// (tree_image.zig): `instantiate` is one allocation, one memcpy and one
/// add per pointer: no parsing, no per-string copies.
///
/// Ownership: whoever `create`d it (the JS schema cache, which `destroy`s it
/// when the apache-arrow object is collected). A tree built from it owns
/// its copy of the image and never points into the template, so trees
/// outlive it and each is released on its own, exactly once.
pub const Template = opaque {
    const Image = tree_image.Image(abi.ArrowSchema, &.{ "format", "name", "metadata", "children", "dictionary" });

    fn image(self: *Template) *Image {
        return @ptrCast(@alignCast(self));
    }

    /// A template of `plan`, or an error status (nothing kept).
    pub fn create(plan: []const u8, out: *?*Template) Status {
        var sized: Sized = undefined;
        const measured = measurePlan(plan, &sized);
        if (measured != .ok) return measured;
        // Build one tree, then record where its pointers are.
        var root: abi.ArrowSchema = .empty;
        const built = buildMeasured(plan, sized, &root);
        if (built != .ok) return built;
        defer root.release.?(&root);
        const captured = Image.capture(&root, sized.structs, sized.payload_bytes) catch |err| return switch (err) {
            error.TooBig => fail(.invalid_argument, "schema plan needs {d} bytes, more than a template holds", .{sized.payload_bytes}),
            error.OutOfMemory => fail(.out_of_memory, "out of memory keeping a schema template of {d} bytes", .{sized.payload_bytes}),
        };
        out.* = @ptrCast(captured);
        return .ok;
    }

    pub fn destroy(self: *Template) void {
        self.image().destroy();
    }

    /// Builds a new, independent tree into `out` (as `build`).
    pub fn instantiate(self: *Template, out: *abi.ArrowSchema) Status {
        const block = self.image().instantiate(out) orelse return fail(.out_of_memory, "out of memory allocating an exported schema", .{});
        finishBlock(block);
        return .ok;
    }

    /// What a block for one tree of this template holds.
    pub fn size(self: *Template) tree_block.Size {
        return self.image().size();
    }

    /// `instantiate` into `block`, a new block of `size()` (one half of a
    /// tree_block.Pair).
    pub fn fill(self: *Template, block: *tree_block.Block, out: *abi.ArrowSchema) void {
        self.image().fill(block, out);
        finishBlock(block);
    }

    fn finishBlock(block: *tree_block.Block) void {
        block.on_free = finishSchema;
        counters.add(.live_schema_exports, 1);
    }
};

/// Appends one plan node (used by tests and by re-export, which copies a
/// producer's schema through a plan).
pub fn appendNode(list: *std.ArrayList(u8), allocator: std.mem.Allocator, format_text: []const u8, name: ?[]const u8, metadata: ?[]const u8, flags: i64, n_children: u32, has_dictionary: bool) !void {
    var word: [8]u8 = undefined;
    std.mem.writeInt(u32, word[0..4], @intCast(format_text.len), .little);
    try list.appendSlice(allocator, word[0..4]);
    try list.appendSlice(allocator, format_text);
    for ([_]?[]const u8{ name, metadata }) |piece| {
        std.mem.writeInt(i32, word[0..4], if (piece) |p| @intCast(p.len) else -1, .little);
        try list.appendSlice(allocator, word[0..4]);
        if (piece) |p| try list.appendSlice(allocator, p);
    }
    std.mem.writeInt(i64, word[0..8], flags, .little);
    try list.appendSlice(allocator, word[0..8]);
    std.mem.writeInt(u32, word[0..4], n_children, .little);
    try list.appendSlice(allocator, word[0..4]);
    try list.append(allocator, @intFromBool(has_dictionary));
}

test "a dictionary-encoded struct child round-trips through a plan" {
    const allocator = std.testing.allocator;
    var plan: std.ArrayList(u8) = .empty;
    defer plan.deinit(allocator);
    try appendNode(&plan, allocator, "+s", "", null, 0, 1, false);
    try appendNode(&plan, allocator, "i", "colors", "\x01\x00\x00\x00\x01\x00\x00\x00k\x01\x00\x00\x00v", abi.flag_nullable, 0, true);
    try appendNode(&plan, allocator, "u", null, null, 0, 0, false);
    const before = counters.get(.live_schema_exports);
    var out: abi.ArrowSchema = .empty;
    try std.testing.expectEqual(Status.ok, build(plan.items, &out));
    const child = out.children.?[0].?;
    try std.testing.expectEqualStrings("colors", std.mem.span(child.name.?));
    try std.testing.expectEqualStrings("u", std.mem.span(child.dictionary.?.format.?));
    try std.testing.expect(child.dictionary.?.name == null);
    try std.testing.expectEqual(@as(u8, 'k'), child.metadata.?[8]);
    try std.testing.expectEqual(before + 1, counters.get(.live_schema_exports));
    out.release.?(&out);
    try std.testing.expectEqual(before, counters.get(.live_schema_exports));
}

test "a template builds independent trees, each released once, that outlive it" {
    const allocator = std.testing.allocator;
    var plan: std.ArrayList(u8) = .empty;
    defer plan.deinit(allocator);
    try appendNode(&plan, allocator, "+s", "", null, 0, 1, false);
    try appendNode(&plan, allocator, "u", "text", null, abi.flag_nullable, 0, false);
    var maybe: ?*Template = null;
    try std.testing.expectEqual(Status.ok, Template.create(plan.items, &maybe));
    const template = maybe.?;
    const before = counters.get(.live_schema_exports);
    var a: abi.ArrowSchema = .empty;
    var b: abi.ArrowSchema = .empty;
    try std.testing.expectEqual(Status.ok, template.instantiate(&a));
    try std.testing.expectEqual(Status.ok, template.instantiate(&b));
    template.destroy();
    try std.testing.expect(a.private_data != b.private_data);
    try std.testing.expect(a.children.?[0].?.name.? != b.children.?[0].?.name.?);
    try std.testing.expectEqualStrings("text", std.mem.span(b.children.?[0].?.name.?));
    try std.testing.expectEqual(before + 2, counters.get(.live_schema_exports));
    a.release.?(&a);
    try std.testing.expectEqualStrings("u", std.mem.span(b.children.?[0].?.format.?));
    b.release.?(&b);
    try std.testing.expectEqual(before, counters.get(.live_schema_exports));
}

test "template instances relocate every pointer: nested children, a dictionary, metadata, a child moved out" {
    const allocator = std.testing.allocator;
    var plan: std.ArrayList(u8) = .empty;
    defer plan.deinit(allocator);
    try appendNode(&plan, allocator, "+s", "", "\x01\x00\x00\x00\x01\x00\x00\x00k\x01\x00\x00\x00v", 0, 2, false);
    try appendNode(&plan, allocator, "+l", "list", null, abi.flag_nullable, 1, false);
    try appendNode(&plan, allocator, "i", "item", null, abi.flag_nullable, 0, false);
    try appendNode(&plan, allocator, "i", "colors", null, abi.flag_nullable, 0, true);
    try appendNode(&plan, allocator, "u", null, null, 0, 0, false);
    var maybe: ?*Template = null;
    try std.testing.expectEqual(Status.ok, Template.create(plan.items, &maybe));
    const template = maybe.?;
    defer template.destroy();
    const before = counters.get(.live_schema_exports);
    var trees: [2]abi.ArrowSchema = .{ .empty, .empty };
    for (&trees) |*tree| try std.testing.expectEqual(Status.ok, template.instantiate(tree));
    for (trees) |tree| {
        const block: *tree_block.Block = @ptrCast(@alignCast(tree.private_data.?));
        const start = @intFromPtr(block);
        const end = start + block.total_bytes;
        const inside = struct {
            fn check(lo: usize, hi: usize, address: usize) !void {
                try std.testing.expect(address > lo and address < hi);
            }
        }.check;
        try inside(start, end, @intFromPtr(tree.format.?));
        try inside(start, end, @intFromPtr(tree.metadata.?));
        try inside(start, end, @intFromPtr(tree.children.?));
        const list = tree.children.?[0].?;
        const colors = tree.children.?[1].?;
        try inside(start, end, @intFromPtr(list));
        try std.testing.expectEqual(tree.private_data, list.private_data);
        try std.testing.expectEqual(tree.private_data, list.children.?[0].?.private_data);
        try std.testing.expectEqual(tree.private_data, colors.dictionary.?.private_data);
        try std.testing.expectEqualStrings("+l", std.mem.span(list.format.?));
        try std.testing.expectEqualStrings("item", std.mem.span(list.children.?[0].?.name.?));
        try std.testing.expectEqualStrings("colors", std.mem.span(colors.name.?));
        try std.testing.expectEqualStrings("u", std.mem.span(colors.dictionary.?.format.?));
        try std.testing.expect(colors.dictionary.?.name == null);
        try std.testing.expect(list.metadata == null and list.dictionary == null);
        try std.testing.expectEqual(@as(u8, 'k'), tree.metadata.?[8]);
        try std.testing.expectEqual(abi.flag_nullable, colors.flags);
    }
    try std.testing.expect(trees[0].private_data != trees[1].private_data);
    // Move a child out of the first tree: the block outlives the root's release.
    const slot = trees[0].children.?[1].?;
    var moved = slot.*;
    slot.release = null;
    trees[0].release.?(&trees[0]);
    try std.testing.expectEqual(before + 2, counters.get(.live_schema_exports));
    try std.testing.expectEqualStrings("colors", std.mem.span(moved.name.?));
    moved.release.?(&moved);
    trees[1].release.?(&trees[1]);
    try std.testing.expectEqual(before, counters.get(.live_schema_exports));
}

test "a template refuses a bad plan without allocating" {
    const allocator = std.testing.allocator;
    var plan: std.ArrayList(u8) = .empty;
    defer plan.deinit(allocator);
    try appendNode(&plan, allocator, "+q", null, null, 0, 0, false);
    var maybe: ?*Template = null;
    try std.testing.expectEqual(Status.invalid_format, Template.create(plan.items, &maybe));
    try std.testing.expect(maybe == null);
}

test "bad schema plans name the problem" {
    const allocator = std.testing.allocator;
    var plan: std.ArrayList(u8) = .empty;
    defer plan.deinit(allocator);
    try appendNode(&plan, allocator, "+q", null, null, 0, 0, false);
    var out: abi.ArrowSchema = .empty;
    try std.testing.expectEqual(Status.invalid_format, build(plan.items, &out));
    try std.testing.expect(std.mem.indexOf(u8, std.mem.span(status.lastMessage()), "+q") != null);
    try std.testing.expectEqual(Status.invalid_argument, build(plan.items[0..5], &out));
}
