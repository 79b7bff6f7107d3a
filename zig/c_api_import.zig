//! Import: owners of moved-in data, the built-in native consumer, moving
//! structs the caller holds, and an import's schema strings.
//! Part of the C API (c_api.zig: conventions, and the list of areas).

const std = @import("std");
const abi = @import("core/abi.zig");
const status = @import("core/status.zig");
const counters = @import("core/counters.zig");
const owner_mod = @import("import/owner.zig");
const keepalive = @import("export/keepalive.zig");
const validate = @import("validate/validate.zig");
const consumer = @import("import/consumer.zig");
const move = @import("import/move.zig");
const schema_info = @import("validate/schema_info.zig");
const schema_key = @import("validate/schema_key.zig");
const metadata = @import("core/metadata.zig");
const common = @import("c_api_common.zig");
const Owner = common.Owner;
const code = common.code;
const levelFrom = common.levelFrom;

// ---------------------------------------------------------------------------
// Import: owners of moved-in data
// ---------------------------------------------------------------------------

/// Moves `schema` and `array` into a new owner (one reference, the
/// caller's) after validating at `level` (0 none .. 3 full).
/// Even a malformed call (bad level, NULL `out`) moves the structs in and
/// releases them.
export fn abd_import_device_array(schema: ?*abi.ArrowSchema, array: ?*abi.ArrowDeviceArray, level: c_int, out: ?*?*Owner) c_int {
    const lvl = levelFrom(level);
    if (out == null or lvl == null) {
        owner_mod.discard(schema, if (array) |a| &a.array else null);
        std.debug.assert(movedIn(schema, if (array) |a| &a.array else null));
        if (out == null) return code(status.fail(.invalid_argument, "out owner pointer is NULL", .{}));
        return code(status.fail(.invalid_argument, "validation level {d} is not 0..3", .{level}));
    }
    return code(owner_mod.import(schema, array, lvl.?, out.?));
}

/// Whether the caller's structs are left released, as a move leaves them.
fn movedIn(schema: ?*const abi.ArrowSchema, array: ?*const abi.ArrowArray) bool {
    return (schema == null or schema.?.release == null) and (array == null or array.?.release == null);
}

/// Like `abd_import_device_array` for a plain ArrowArray (a CPU array).
export fn abd_import_array(schema: ?*abi.ArrowSchema, array: ?*abi.ArrowArray, level: c_int, out: ?*?*Owner) c_int {
    const lvl = levelFrom(level);
    if (out == null or lvl == null) {
        owner_mod.discard(schema, array);
        std.debug.assert(movedIn(schema, array));
        if (out == null) return code(status.fail(.invalid_argument, "out owner pointer is NULL", .{}));
        return code(status.fail(.invalid_argument, "validation level {d} is not 0..3", .{level}));
    }
    return code(owner_mod.importArray(schema, array, lvl.?, out.?));
}

export fn abd_owner_retain(owner: *Owner, n: u32) void {
    owner.retain(n);
}

/// Drops one reference; the last one runs the producer's release.
export fn abd_owner_release(owner: *Owner) void {
    owner_mod.givenBack(owner);
    owner.release();
}

/// Owner facts, as f64 words: nodes address, node count, buffers address,
/// buffer count, device_type, device_id, sync_event address, bytes held,
/// host readable (0/1), schema address, device array address. Valid while
/// the caller holds a reference.
pub const owner_info_words = 11;
export fn abd_owner_info(owner: *Owner, out: [*]f64) void {
    const table = &owner.table;
    const words = [owner_info_words]f64{
        @floatFromInt(@intFromPtr(table.nodes.items.ptr)),
        @floatFromInt(table.nodeCount()),
        @floatFromInt(@intFromPtr(table.buffers.items.ptr)),
        @floatFromInt(table.buffers.items.len / validate.buffer_words),
        @floatFromInt(owner.array.device_type),
        @floatFromInt(owner.array.device_id),
        @floatFromInt(@intFromPtr(owner.array.sync_event)),
        @floatFromInt(table.bytes_known),
        @floatFromInt(@intFromBool(owner.host_readable)),
        @floatFromInt(@intFromPtr(&owner.schema)),
        @floatFromInt(@intFromPtr(&owner.array)),
    };
    @memcpy(out[0..owner_info_words], &words);
}

/// One call for what a JS handle needs of `owner`: copies the info words
/// (as `abd_owner_info`), then the node table, then the buffer table into
/// `out` (JS memory, `capacity` f64 words) and pays for the handle's own
/// reference. `adopt` 0: a new reference, for the handle's one view of
/// owner memory (its anchor, made next with the view deallocator); 1: the
/// caller's reference becomes that view's; 2: the caller's reference stays
/// a plain one, which the handle gives back itself (`abd_owner_release`).
/// Returns the words needed; when they do not fit, nothing is written or
/// taken (call again with room).
pub export fn abd_owner_snapshot(owner: *Owner, out: [*]f64, capacity: u32, adopt: u32) u32 {
    const table = &owner.table;
    const nodes = table.nodes.items;
    const buffers = table.buffers.items;
    const needed = owner_info_words + nodes.len + buffers.len;
    if (needed > capacity) return @intCast(needed);
    abd_owner_info(owner, out);
    @memcpy(out[owner_info_words..][0..nodes.len], nodes);
    @memcpy(out[owner_info_words + nodes.len ..][0..buffers.len], buffers);
    if (adopt == 0) owner.retain(1);
    if (adopt == 1) owner_mod.givenBack(owner);
    if (adopt != 2) counters.add(.live_imported_views, 1);
    return @intCast(needed);
}

/// Address of the native deallocator for views of imported memory
/// (`toArrayBuffer(ptr, 0, size, owner, deallocator)`). Each view must be
/// paid for with one `abd_owner_retain` reference, and counts as a view.
export fn abd_view_deallocator() *const anyopaque {
    return @ptrCast(&owner_mod.viewDeallocator);
}

/// A new armed anchor (import/owner.zig `Anchor`) for a handle's reference
/// to `owner`, paid for and counted as a view already (abd_owner_snapshot
/// adopt 0 or 1). Null when out of memory: the reference is the caller's
/// still. JS wraps its 8 bytes with `abd_anchor_deallocator` as the
/// ArrayBuffer's deallocator, the anchor as its context.
export fn abd_anchor_new(owner: *Owner) ?*owner_mod.Anchor {
    return owner_mod.Anchor.create(owner);
}

/// Arms a disarmed anchor with a reference to `owner`, paid for and
/// counted as a view already (as for abd_anchor_new): the anchor, and the
/// ArrayBuffer over it, of a disposed handle taken by the next one. False,
/// changing nothing, when it is armed: the reference is the caller's still.
export fn abd_anchor_arm(anchor: *owner_mod.Anchor, owner: *Owner) bool {
    return anchor.arm(owner);
}

/// Ends an anchor's reference now, if its deallocator has not (dispose).
/// Returns the keepalive id of this JS thread's export whose tree finished
/// during the call (an import of this library's own export, released with
/// its last reference; the JS side forgets it at once, it is not queued),
/// or 0.
export fn abd_anchor_disarm(anchor: *owner_mod.Anchor) f64 {
    var finished: u64 = 0;
    keepalive.captured(&finished, owner_mod.Anchor.disarm, .{anchor});
    return @floatFromInt(finished);
}

/// Address of the deallocator of anchors' ArrayBuffers.
export fn abd_anchor_deallocator() *const anyopaque {
    return @ptrCast(&owner_mod.anchorDeallocator);
}

/// Pays for `n` views of `owner` about to be created: n references.
export fn abd_owner_retain_views(owner: *Owner, n: u32) void {
    owner.retain(n);
    counters.add(.live_imported_views, n);
}

/// Gives back `n` references paid by `abd_owner_retain_views` for views
/// that were never made (their ArrayBuffer could not be created).
export fn abd_owner_release_views(owner: *Owner, n: u32) void {
    counters.add(.live_imported_views, -@as(i64, n));
    for (0..n) |_| owner.release();
}

// ---------------------------------------------------------------------------
// The built-in native consumer
// ---------------------------------------------------------------------------

/// Moves in and releases `schema` + `array` after validating at `level`,
/// reporting every buffer's address, size and FNV-1a checksum
/// (consumer.zig) into `report` (`capacity` words).
export fn abd_consume_device_array(schema: ?*abi.ArrowSchema, array: ?*abi.ArrowDeviceArray, level: c_int, report: [*]f64, capacity: u32) c_int {
    const lvl = levelFrom(level) orelse return code(status.fail(.invalid_argument, "validation level {d} is not 0..3", .{level}));
    return code(consumer.consume(schema, array, lvl, report[0..capacity]));
}

// ---------------------------------------------------------------------------
// Moving structs the caller holds (move.zig)
// ---------------------------------------------------------------------------

/// Moves `src` to `dst` (bitwise copy, then `src->release = NULL`). `dst`
/// must be released or zeroed. On failure nothing changes. Any thread.
export fn abd_schema_move(src: ?*abi.ArrowSchema, dst: ?*abi.ArrowSchema) c_int {
    return code(move.moveSchema(src, dst));
}

export fn abd_array_move(src: ?*abi.ArrowArray, dst: ?*abi.ArrowArray) c_int {
    return code(move.moveArray(src, dst));
}

export fn abd_device_array_move(src: ?*abi.ArrowDeviceArray, dst: ?*abi.ArrowDeviceArray) c_int {
    return code(move.moveDeviceArray(src, dst));
}

/// Moves child `index` of `parent` to `dst`. The caller must release the
/// parent next; its release skips the moved child.
export fn abd_schema_move_child(parent: ?*abi.ArrowSchema, index: i64, dst: ?*abi.ArrowSchema) c_int {
    return code(move.moveSchemaChild(parent, index, dst));
}

export fn abd_array_move_child(parent: ?*abi.ArrowArray, index: i64, dst: ?*abi.ArrowArray) c_int {
    return code(move.moveArrayChild(parent, index, dst));
}

// ---------------------------------------------------------------------------
// Schema strings of an import, in one call (schema_info.zig)
// ---------------------------------------------------------------------------

/// Copies the flags, format, name and metadata of every node of `owner`
/// into `out` (layout in schema_info.zig) when `capacity` suffices; returns
/// the bytes needed either way. The caller holds a reference to `owner`.
export fn abd_owner_schema_info(owner: *Owner, out: ?[*]u8, capacity: usize) usize {
    const bytes: []u8 = if (out) |o| o[0..capacity] else &.{};
    return schema_info.fill(&owner.table, bytes);
}

/// An exact key of `owner`'s schema tree, for caches of what JS builds from
/// it (arrow/import.ts; layout in schema_key.zig), as int32 words into
/// `out` (`capacity` words). Returns the words needed (nothing is written
/// when they do not fit), or 0 when a node is dictionary-encoded (such
/// schemas are not cached).
export fn abd_owner_schema_key(owner: *Owner, out: [*]i32, capacity: u32) u32 {
    if (!schema_key.hasKey(&owner.table)) return 0;
    return @intCast(schema_key.write(&owner.table, out[0..capacity]));
}

/// 1 when `key` (`words` int32 words from abd_owner_schema_key) is the key
/// of `owner`'s schema tree, 0 when it is not, -1 when the tree has no key
/// (a node is dictionary-encoded). Reads the tree once, copies nothing.
export fn abd_owner_schema_matches(owner: *Owner, key: [*]const i32, words: u32) i32 {
    const equal = schema_key.matches(&owner.table, key[0..words]) orelse return -1;
    return @intFromBool(equal);
}

/// Size in bytes of an ArrowSchema.metadata blob, reading only its length
/// fields within metadata.zig's limits; -1 (with the reason as last error)
/// when they are out of bounds. NULL has size 0. A double (an exact
/// integer): the cheapest return type for bun:ffi.
export fn abd_metadata_length(blob: ?[*]const u8) f64 {
    const bytes = blob orelse return 0;
    const len = metadata.encodedLength(bytes) catch |e| {
        _ = status.fail(.invalid_layout, "metadata {s}", .{metadata.describe(e)});
        return -1;
    };
    return @floatFromInt(len);
}
