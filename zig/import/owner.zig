//! Owners of imported Arrow data: a moved-in ArrowSchema + ArrowDeviceArray
//! held in native memory under an atomic reference count, with the node
//! table that describes it (validate.zig).
//!
//! Ownership: `import` takes the caller's structs (they are left released,
//! success or not). The owner starts with one reference, the caller's. Every
//! holder (a JS handle, a JS ArrayBuffer view through its native
//! deallocator, a re-export, a child or slice) takes one with `retain` and
//! gives it back with `release`, from any thread. The last release calls the
//! producer's release callbacks, exactly once, on that thread.

const std = @import("std");
const abi = @import("../core/abi.zig");
const status = @import("../core/status.zig");
const counters = @import("../core/counters.zig");
const validate = @import("../validate/validate.zig");
const device_sync = @import("../core/device_sync.zig");
const block_pool = @import("../core/block_pool.zig");
const js_context = @import("../core/js_context.zig");
const js_queue = @import("../core/js_queue.zig");
const export_array = @import("../export/array.zig");
const Status = status.Status;
const fail = status.fail;

pub const Owner = struct {
    refs: std.atomic.Value(u32),
    schema: abi.ArrowSchema,
    array: abi.ArrowDeviceArray,
    /// Describes the tree; its lists start in `room` (so an import is one
    /// allocation) and move to the heap only for trees that outgrow it.
    table: validate.NodeTable,
    room: validate.NodeTable.Room,
    /// False for device memory, and for host-visible device memory whose
    /// sync event could not be waited on: then no buffer may be read.
    host_readable: bool = false,
    /// The JS thread that imported it (js_context.zig): where a release
    /// that must run on a JS thread is sent.
    context: u32 = 0,

    pub fn retain(self: *Owner, n: u32) void {
        const before = self.refs.fetchAdd(n, .monotonic);
        std.debug.assert(before > 0); // retaining a dead owner is a bug
    }

    pub fn release(self: *Owner) void {
        const before = self.refs.fetchSub(1, .acq_rel);
        std.debug.assert(before > 0);
        if (before == 1) self.destroy();
    }

    fn destroy(self: *Owner) void {
        // A producer written in JS gives release callbacks that are bun:ffi
        // JSCallbacks, which crash when called from another thread or from
        // inside a collection (view deallocators run in both): those run
        // on the importing JS thread instead, queued to it, from its event
        // loop.
        if ((in_deallocator or !js_context.onJsThread()) and self.context != 0 and
            (js_context.isRuntimeCode(@ptrCast(self.array.array.release)) or js_context.isRuntimeCode(@ptrCast(self.schema.release))))
        {
            if (js_queue.postTo(self.context, .{ .tag = .owner_release, .key = 0, .address = @intFromPtr(self) })) return;
            // That JS thread ended, and its callbacks with it: calling one
            // would crash. What the structs hold is left (a leak).
            self.array.array.release = null;
            self.schema.release = null;
        }
        self.destroyNow();
    }

    /// Releases the producer's structs and frees the owner, on this thread.
    pub fn destroyNow(self: *Owner) void {
        // Only the last release gets here (directly, or queued to the JS
        // thread by `destroy`).
        std.debug.assert(self.refs.load(.acquire) == 0);
        std.debug.assert(self.table.bytes_known >= 0);
        counters.add(.imported_bytes_held, -self.table.bytes_known);
        counters.add(.live_owners, -1);
        releaseMovedIn(&self.schema, &self.array.array);
        self.table.deinit();
        freeOwner(self);
    }

};

// glibc serves allocations of up to 1032 bytes from its per-thread cache
// (tcache), several times cheaper than a larger one; an owner, its table
// room included, is allocated and freed once per import and per pull.
comptime {
    if (@sizeOf(Owner) > 1032) @compileError("Owner outgrew glibc's tcache size: shrink NodeTable.Room");
    // `import` fills a new owner field by field (its room stays unwritten):
    // a field added here must be set there too.
    const filled = [_][]const u8{ "refs", "schema", "array", "table", "room", "host_readable", "context" };
    const names = std.meta.fieldNames(Owner);
    if (names.len != filled.len) @compileError("Owner gained or lost a field: update import's field-by-field fill");
    for (names, filled) |name, expected| {
        if (!std.mem.eql(u8, name, expected)) @compileError("Owner's fields changed: update import's field-by-field fill");
    }
}

/// Freed owners kept for the next imports (block_pool.zig: owners die in
/// the collector's bursts, which overflow malloc's per-thread cache). At
/// most 512 (about half a MiB): most of one burst of a stream of small
/// batches.
pub var recycled: block_pool.BlockPool(512) = .{};

/// A new owner's memory, unfilled: a safe build's `create` would write
/// 0xAA over all of it, the table room's 736 bytes included, and every
/// word of that room is written before it is read (validate.zig).
fn allocOwner() ?*Owner {
    if (recycled.take()) |block| return @ptrCast(@alignCast(block));
    const bytes = std.heap.c_allocator.rawAlloc(@sizeOf(Owner), .of(Owner), @returnAddress()) orelse return null;
    return @ptrCast(@alignCast(bytes));
}

fn freeOwner(owner: *Owner) void {
    if (recycled.give(owner)) return;
    const bytes: [*]u8 = @ptrCast(owner);
    std.heap.c_allocator.rawFree(bytes[0..@sizeOf(Owner)], .of(Owner), @returnAddress());
}

fn releaseMovedIn(schema: *abi.ArrowSchema, array: *abi.ArrowArray) void {
    if (array.release) |release| release(array);
    if (schema.release) |release| release(schema);
}

/// Moves `schema` and `device_array` into a new owner and validates them at
/// `level`. Either pointer may be NULL only to fail. On any error, whatever
/// was moved in has been released once and `out` is untouched.
pub fn import(schema: ?*abi.ArrowSchema, device_array: ?*abi.ArrowDeviceArray, level: validate.Level, out: *?*Owner) Status {
    // Take ownership first, so that every later failure can release it.
    var moved_schema: abi.ArrowSchema = .empty;
    var moved_array: abi.ArrowDeviceArray = .empty;
    if (schema) |s| {
        moved_schema = s.*;
        s.release = null;
    }
    if (device_array) |a| {
        moved_array = a.*;
        a.array.release = null;
    }
    const problem: ?Status = blk: {
        if (schema == null) break :blk fail(.invalid_argument, "schema pointer is NULL", .{});
        if (device_array == null) break :blk fail(.invalid_argument, "array pointer is NULL", .{});
        if (moved_schema.release == null) break :blk fail(.released, "schema is released (its release callback is NULL)", .{});
        if (moved_array.array.release == null) break :blk fail(.released, "array is released (its release callback is NULL)", .{});
        if (moved_array.device_type <= 0) break :blk fail(.unknown_device, "device_type {d} is not a device type", .{moved_array.device_type});
        if (js_context.foreignWorker(export_array.jsContextOf(&moved_array.array)))
            break :blk fail(.unsupported, "array cannot be imported on this JS thread: {s}", .{js_context.foreign_worker_message});
        // A CPU array's device_id is only recommended to be -1 (the spec's
        // word); any value is taken, as this library's own exporter may
        // emit one (exportRawArray with a deviceId).
        break :blk null;
    };
    if (problem) |code| {
        releaseMovedIn(&moved_schema, &moved_array.array);
        return code;
    }

    const owner = allocOwner() orelse {
        releaseMovedIn(&moved_schema, &moved_array.array);
        return fail(.out_of_memory, "out of memory allocating an import owner", .{});
    };
    // Field by field (every field but `room`, which stays unwritten until
    // validation fills it; the comptime check above lists them).
    owner.refs = .init(1);
    owner.schema = moved_schema;
    owner.array = moved_array;
    owner.table = .inRoom(&owner.room);
    owner.host_readable = false;
    owner.context = js_context.current();
    // The structs now live at their final address: describe them there.
    var host_readable = abi.isHostAccessible(owner.array.device_type);
    if (host_readable and owner.array.sync_event != null) {
        const waited = device_sync.waitForHost(owner.array.device_type, owner.array.device_id, owner.array.sync_event);
        if (waited != .ok) {
            host_readable = false;
        }
    }
    const validated = validate.validate(&owner.schema, &owner.array.array, level, host_readable, &owner.table);
    if (validated != .ok) {
        releaseMovedIn(&owner.schema, &owner.array.array);
        owner.table.deinit();
        freeOwner(owner);
        return validated;
    }
    owner.host_readable = host_readable;
    // A validated tree has its root node, and its buffer sizes add up to
    // at most max_slots (validate.zig).
    std.debug.assert(owner.table.nodeCount() >= 1);
    std.debug.assert(owner.table.bytes_known >= 0 and owner.table.bytes_known <= validate.max_slots);
    counters.add(.live_owners, 1);
    counters.add(.imported_bytes_held, owner.table.bytes_known);
    out.* = owner;
    return .ok;
}

/// Like `import` for a plain ArrowArray: it becomes a CPU device array.
pub fn importArray(schema: ?*abi.ArrowSchema, array: ?*abi.ArrowArray, level: validate.Level, out: *?*Owner) Status {
    if (array == null) return import(schema, null, level, out);
    var wrapped: abi.ArrowDeviceArray = .empty;
    wrapped.array = array.?.*;
    array.?.release = null;
    return import(schema, &wrapped, level, out);
}

/// Moves `schema` and `array` in and releases them at once: what an import
/// does with its input when the call itself is malformed (bad level, no
/// out pointer), so that "moved in, success or not" holds for every error.
/// Either may be NULL or released already.
pub fn discard(schema: ?*abi.ArrowSchema, array: ?*abi.ArrowArray) void {
    var moved_schema: abi.ArrowSchema = .empty;
    var moved_array: abi.ArrowArray = .empty;
    if (schema) |s| {
        moved_schema = s.*;
        s.release = null;
    }
    if (array) |a| {
        moved_array = a.*;
        a.release = null;
    }
    releaseMovedIn(&moved_schema, &moved_array);
}

/// The native deallocator given to Bun's `toArrayBuffer` for views of
/// imported memory: `context` is the owner. Runs on the GC thread, or on
/// the JS thread when a view is detached; touches no JS state.
pub fn viewDeallocator(bytes: ?*anyopaque, context: ?*anyopaque) callconv(.c) void {
    _ = bytes;
    const owner: *Owner = @ptrCast(@alignCast(context orelse return));
    counters.add(.live_imported_views, -1);
    const outer = in_deallocator;
    in_deallocator = true;
    defer in_deallocator = outer;
    owner.release();
}

/// True while a view deallocator runs on this thread: JS may not be called
/// (it may be inside a collection), even on a JS thread.
threadlocal var in_deallocator: bool = false;

/// A JS handle's anchor (native/imported_array.ts): the 8 bytes a JS
/// ArrayBuffer wraps, holding the handle's one owner reference. The
/// handle's `dispose()` disarms it (`disarm`: the reference ends at once,
/// one native call where detaching the ArrayBuffer would cost a
/// `transfer`); a handle dropped without `dispose()` leaves that to the
/// ArrayBuffer's deallocator (`anchorDeallocator`), which runs when it is
/// collected or its JS thread ends, and which frees the anchor either way.
/// Whichever comes first takes the reference (an atomic swap), so it ends
/// exactly once.
pub const Anchor = extern struct {
    owner: std.atomic.Value(usize),

    /// A new armed anchor holding a reference the caller paid for (and
    /// counted as a view); null when out of memory (the caller then still
    /// holds that reference).
    pub fn create(owner: *Owner) ?*Anchor {
        const anchor: *Anchor = @ptrCast(@alignCast(std.c.malloc(@sizeOf(Anchor)) orelse return null));
        anchor.* = .{ .owner = .init(@intFromPtr(owner)) };
        return anchor;
    }

    /// Arms a disarmed anchor again with a reference to `owner` the caller
    /// paid for (a disposed handle's anchor, taken by the next handle of
    /// its JS thread with its ArrayBuffer). False, changing nothing, when
    /// it still holds a reference.
    pub fn arm(self: *Anchor, owner: *Owner) bool {
        return self.owner.cmpxchgStrong(0, @intFromPtr(owner), .acq_rel, .acquire) == null;
    }

    /// Ends the anchor's reference now if it still holds it; the anchor
    /// itself stays (its ArrayBuffer frees it).
    pub fn disarm(self: *Anchor) void {
        const held = self.owner.swap(0, .acq_rel);
        if (held == 0) return;
        counters.add(.live_imported_views, -1);
        const owner: *Owner = @ptrFromInt(held);
        owner.release();
    }
};

comptime {
    // native/owner_stamp.ts wraps exactly this many bytes (`anchorBytes`).
    std.debug.assert(@sizeOf(Anchor) == 8);
}

/// The deallocator of an anchor's ArrayBuffer: `context` is the anchor.
/// Ends its reference if `disarm` did not, then frees it. Runs on the GC
/// thread, or on a JS thread at its end; touches no JS state.
pub fn anchorDeallocator(bytes: ?*anyopaque, context: ?*anyopaque) callconv(.c) void {
    _ = bytes;
    const anchor: *Anchor = @ptrCast(@alignCast(context orelse return));
    const outer = in_deallocator;
    in_deallocator = true;
    defer in_deallocator = outer;
    anchor.disarm();
    std.c.free(anchor);
}

// ---------------------------------------------------------------------------
// References a stream pull handed to JS, not yet taken back.
//
// A pull on a JS thread hands JS the batch's own reference, which JS
// holds plainly (no view anchors it) until it gives it back
// (`givenBack`: abd_owner_release) or turns it into a view's
// (abd_owner_snapshot adopting it). A Worker terminated in between runs no
// more JS, and no deallocator holds that reference: its thread's end
// releases it (`releaseHanded`), so the batch does not outlive the Worker.

threadlocal var handed: [16]?*Owner = @splat(null);
threadlocal var n_handed: u32 = 0;

/// Records that a pull on this JS thread handed JS `owner`'s reference.
/// (With every slot taken it is not recorded: only a Worker's end inside
/// that window would then leave it.)
pub fn noteHanded(owner: *Owner) void {
    if (n_handed == handed.len) return;
    for (&handed) |*slot| if (slot.* == null) {
        slot.* = owner;
        n_handed += 1;
        return;
    };
}

/// JS took back or passed on a reference of `owner`: no longer the pull's.
pub fn givenBack(owner: *Owner) void {
    if (n_handed == 0) return;
    for (&handed) |*slot| if (slot.* == owner) {
        slot.* = null;
        n_handed -= 1;
        return;
    };
}

/// A JS thread ended (js_context's close hook, on that thread): releases
/// the references its pulls handed to JS and JS never gave back.
pub fn releaseHanded(context: u32) void {
    if (js_context.current() != context) return; // closed from elsewhere: not this thread's slots
    for (&handed) |*slot| if (slot.*) |owner| {
        slot.* = null;
        owner.release();
    };
    n_handed = 0;
}

// ---------------------------------------------------------------------------

const testing = std.testing;

const TestProducer = struct {
    var schema_releases: u32 = 0;
    var array_releases: u32 = 0;
    var data = [_]i32{ 10, 20, 30, 40, 50 };
    var buffers = [_]?*const anyopaque{ null, @ptrCast(&data) };

    fn releaseSchema(s: *abi.ArrowSchema) callconv(.c) void {
        schema_releases += 1;
        s.release = null;
    }
    fn releaseArray(a: *abi.ArrowArray) callconv(.c) void {
        array_releases += 1;
        a.release = null;
    }
    fn make(format_text: [*:0]const u8, schema: *abi.ArrowSchema, array: *abi.ArrowDeviceArray) void {
        schema.* = .empty;
        schema.format = format_text;
        schema.release = releaseSchema;
        array.* = .empty;
        array.array = .{ .length = 5, .null_count = 0, .offset = 0, .n_buffers = 2, .n_children = 0, .buffers = &buffers, .children = null, .dictionary = null, .release = releaseArray, .private_data = null };
    }
    /// A new import of an int32 array, its release counts zeroed.
    fn imported() !*Owner {
        schema_releases = 0;
        array_releases = 0;
        var schema: abi.ArrowSchema = undefined;
        var array: abi.ArrowDeviceArray = undefined;
        make("i", &schema, &array);
        var owner: ?*Owner = null;
        try testing.expectEqual(Status.ok, import(&schema, &array, .default, &owner));
        return owner.?;
    }
};

test "the producer's release runs once, after the last holder" {
    TestProducer.schema_releases = 0;
    TestProducer.array_releases = 0;
    var schema: abi.ArrowSchema = undefined;
    var array: abi.ArrowDeviceArray = undefined;
    TestProducer.make("i", &schema, &array);
    var owner: ?*Owner = null;
    try testing.expectEqual(Status.ok, import(&schema, &array, .default, &owner));
    try testing.expect(schema.release == null and array.array.release == null);
    try testing.expectEqual(@as(i64, 20), owner.?.table.bytes_known);
    // A one-node tree is described in the owner's own room: the import
    // made one allocation (the release below frees it, and only it).
    try testing.expectEqual(@intFromPtr(&owner.?.room.nodes), @intFromPtr(owner.?.table.nodes.items.ptr));
    try testing.expectEqual(@intFromPtr(&owner.?.room.buffers), @intFromPtr(owner.?.table.buffers.items.ptr));
    owner.?.retain(2);
    owner.?.release();
    owner.?.release();
    try testing.expectEqual(@as(u32, 0), TestProducer.array_releases);
    owner.?.release();
    try testing.expectEqual(@as(u32, 1), TestProducer.array_releases);
    try testing.expectEqual(@as(u32, 1), TestProducer.schema_releases);
}

test "an anchor's reference ends once: at disarm, or else in its deallocator" {
    for ([_]bool{ true, false }) |disarm_first| {
        const owner = try TestProducer.imported();
        const views = counters.get(.live_imported_views);
        // The handle's reference, counted as a view (abd_owner_snapshot).
        owner.retain(1);
        counters.add(.live_imported_views, 1);
        const anchor = Anchor.create(owner).?;
        owner.release(); // the import's own reference
        try testing.expectEqual(@as(u32, 0), TestProducer.array_releases);
        if (disarm_first) {
            anchor.disarm();
            try testing.expectEqual(@as(u32, 1), TestProducer.array_releases);
            try testing.expectEqual(views, counters.get(.live_imported_views));
            anchor.disarm(); // a second disarm ends nothing
        }
        anchorDeallocator(anchor, anchor); // its ArrayBuffer is collected
        try testing.expectEqual(@as(u32, 1), TestProducer.array_releases);
        try testing.expectEqual(@as(u32, 1), TestProducer.schema_releases);
        try testing.expectEqual(views, counters.get(.live_imported_views));
    }
}

test "a disarmed anchor is armed again for another owner; an armed one refuses" {
    const views = counters.get(.live_imported_views);
    const first = try TestProducer.imported(); // holds the import's reference
    counters.add(.live_imported_views, 1);
    const anchor = Anchor.create(first).?;
    anchor.disarm();
    try testing.expectEqual(@as(u32, 1), TestProducer.array_releases);
    const second = try TestProducer.imported();
    counters.add(.live_imported_views, 1);
    try testing.expect(anchor.arm(second));
    try testing.expect(!anchor.arm(second)); // armed: the caller keeps its reference
    try testing.expectEqual(@as(u32, 0), TestProducer.array_releases);
    anchorDeallocator(anchor, anchor); // its ArrayBuffer is collected
    try testing.expectEqual(@as(u32, 1), TestProducer.array_releases);
    try testing.expectEqual(views, counters.get(.live_imported_views));
}

test "a released owner's memory serves the next import" {
    var schema: abi.ArrowSchema = undefined;
    var array: abi.ArrowDeviceArray = undefined;
    TestProducer.make("i", &schema, &array);
    var first: ?*Owner = null;
    try testing.expectEqual(Status.ok, import(&schema, &array, .default, &first));
    const kept = recycled.count();
    const address = @intFromPtr(first.?);
    first.?.release();
    try testing.expectEqual(kept + 1, recycled.count());
    TestProducer.make("i", &schema, &array);
    var second: ?*Owner = null;
    try testing.expectEqual(Status.ok, import(&schema, &array, .default, &second));
    try testing.expectEqual(address, @intFromPtr(second.?));
    try testing.expectEqual(kept, recycled.count());
    // Described afresh in its own room, whatever the last owner left there.
    try testing.expectEqual(@intFromPtr(&second.?.room.nodes), @intFromPtr(second.?.table.nodes.items.ptr));
    try testing.expectEqual(@as(i64, 20), second.?.table.bytes_known);
    second.?.release();
}

test "a failed import still releases what was moved in, once" {
    TestProducer.schema_releases = 0;
    TestProducer.array_releases = 0;
    var schema: abi.ArrowSchema = undefined;
    var array: abi.ArrowDeviceArray = undefined;
    TestProducer.make("u", &schema, &array); // utf8 needs 3 buffers, has 2
    var owner: ?*Owner = null;
    try testing.expectEqual(Status.invalid_layout, import(&schema, &array, .default, &owner));
    try testing.expect(owner == null);
    try testing.expectEqual(@as(u32, 1), TestProducer.array_releases);
    try testing.expectEqual(@as(u32, 1), TestProducer.schema_releases);
    try testing.expect(std.mem.indexOf(u8, std.mem.span(status.lastMessage()), "n_buffers is 2") != null);

    TestProducer.make("i", &schema, &array);
    try testing.expectEqual(Status.invalid_argument, import(&schema, null, .default, &owner));
    try testing.expectEqual(@as(u32, 2), TestProducer.schema_releases);
    try testing.expectEqual(@as(u32, 1), TestProducer.array_releases);
    array.array.release.?(&array.array);
}

test "discard moves in and releases once, whatever is NULL or released" {
    TestProducer.schema_releases = 0;
    TestProducer.array_releases = 0;
    var schema: abi.ArrowSchema = undefined;
    var array: abi.ArrowDeviceArray = undefined;
    TestProducer.make("i", &schema, &array);
    discard(&schema, &array.array);
    try testing.expect(schema.release == null and array.array.release == null);
    try testing.expectEqual(@as(u32, 1), TestProducer.schema_releases);
    try testing.expectEqual(@as(u32, 1), TestProducer.array_releases);
    discard(&schema, &array.array); // both released now: nothing to do
    discard(null, null);
    try testing.expectEqual(@as(u32, 1), TestProducer.schema_releases);
    try testing.expectEqual(@as(u32, 1), TestProducer.array_releases);
}
