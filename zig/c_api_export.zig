//! Export: trees over caller-kept memory, their keepalive ids, and the
//! JS thread contexts whose release wakes those ids ride on.
//! Part of the C API (c_api.zig: conventions, and the list of areas).

const std = @import("std");
const abi = @import("core/abi.zig");
const status = @import("core/status.zig");
const keepalive = @import("export/keepalive.zig");
const js_context = @import("core/js_context.zig");
const export_holds = @import("export/holds.zig");
const owner_holds = @import("import/owner_holds.zig");
const export_array = @import("export/array.zig");
const export_schema = @import("export/schema.zig");
const export_batch = @import("export/batch.zig");
const owner_mod = @import("import/owner.zig");
const consumer = @import("import/consumer.zig");
const adbc_call = @import("adbc/call.zig");
const js_queue = @import("core/js_queue.zig");
const stream_export = @import("stream/export.zig");
const stream_import = @import("stream/import.zig");
const js_wake = @import("async/js_wake.zig");
const common = @import("c_api_common.zig");
const Owner = common.Owner;
const code = common.code;

// ---------------------------------------------------------------------------
// Export: trees over caller-kept memory
// ---------------------------------------------------------------------------

/// Builds a schema tree from a byte plan (export/schema.zig) into `out`.
/// The tree owns copies of every string; `out` is the caller's.
export fn abd_schema_build(plan: ?[*]const u8, plan_bytes: usize, out: ?*abi.ArrowSchema) c_int {
    const target = out orelse return code(status.fail(.invalid_argument, "out schema pointer is NULL", .{}));
    const bytes: []const u8 = if (plan) |p| p[0..plan_bytes] else &.{};
    return code(export_schema.build(bytes, target));
}

/// Builds an ArrowArray tree over the buffers named in `plan`
/// (export/array.zig). The caller keeps every buffer alive and in place
/// until `keepalive_id` comes out of `abd_take_released`.
export fn abd_array_build(plan: ?[*]const f64, plan_words: usize, keepalive_id: f64, out: ?*abi.ArrowArray) c_int {
    const target = out orelse return code(status.fail(.invalid_argument, "out array pointer is NULL", .{}));
    const words: []const f64 = if (plan) |p| p[0..plan_words] else &.{};
    return code(export_array.build(words, .{ .keepalive_id = @intFromFloat(keepalive_id) }, target));
}

/// Like `abd_array_build` for an ArrowDeviceArray; `reserved` is zeroed.
export fn abd_device_array_build(plan: ?[*]const f64, plan_words: usize, keepalive_id: f64, device_type: i32, device_id: i64, sync_event: ?*anyopaque, out: ?*abi.ArrowDeviceArray) c_int {
    const target = out orelse return code(status.fail(.invalid_argument, "out device array pointer is NULL", .{}));
    const words: []const f64 = if (plan) |p| p[0..plan_words] else &.{};
    return code(export_array.buildDevice(words, .{ .keepalive_id = @intFromFloat(keepalive_id) }, .{
        .device_type = device_type,
        .device_id = device_id,
        .sync_event = sync_event,
    }, target));
}

/// Checks and measures a schema plan once (export/schema.zig `Template`);
/// the template is the caller's until `abd_schema_template_free`. NULL on
/// failure (`abd_last_status` / `abd_last_error` say why).
export fn abd_schema_template_new(plan: ?[*]const u8, plan_bytes: usize) ?*export_schema.Template {
    const bytes: []const u8 = if (plan) |p| p[0..plan_bytes] else &.{};
    var template: ?*export_schema.Template = null;
    if (export_schema.Template.create(bytes, &template) != .ok) return null;
    return template;
}

export fn abd_schema_template_free(template: ?*export_schema.Template) void {
    if (template) |t| t.destroy();
}

/// Builds a schema tree from `template` into `out` (the caller's).
export fn abd_schema_template_build(template: ?*export_schema.Template, out: ?*abi.ArrowSchema) c_int {
    const t = template orelse return code(status.fail(.invalid_argument, "schema template is NULL", .{}));
    const target = out orelse return code(status.fail(.invalid_argument, "out schema pointer is NULL", .{}));
    return code(t.instantiate(target));
}

/// One call for a whole export (export/batch.zig): a new slot holding the
/// schema built from `template` and, for kind 1 (ArrowArray) or 2 (CPU
/// ArrowDeviceArray), the array tree of `plan` under `keepalive_id`. The
/// slot is the caller's until `abd_export_slot_free`. NULL on failure
/// (`abd_last_status`); nothing is built then and the id is the caller's
/// to forget.
export fn abd_export_slot_new(template: ?*export_schema.Template, plan: ?[*]const f64, plan_words: usize, keepalive_id: f64, kind: i32) ?*export_batch.Slot {
    const t = template orelse {
        _ = status.fail(.invalid_argument, "schema template is NULL", .{});
        return null;
    };
    const which = std.enums.fromInt(export_batch.Kind, kind) orelse {
        _ = status.fail(.invalid_argument, "export slot kind {d} is not 0, 1 or 2", .{kind});
        return null;
    };
    const words: []const f64 = if (plan) |p| p[0..plan_words] else &.{};
    return export_batch.create(t, words, @intFromFloat(keepalive_id), which);
}

/// Releases what no consumer moved out of `slot` and frees it. Returns the
/// keepalive id whose tree finished during this call (the JS side forgets
/// it at once; it is not queued), or 0.
export fn abd_export_slot_free(slot: ?*export_batch.Slot, kind: i32) f64 {
    const s = slot orelse return 0;
    const which = std.enums.fromInt(export_batch.Kind, kind) orelse .device_array;
    return @floatFromInt(export_batch.destroy(s, which));
}

/// Checks and builds an array plan once (export/array.zig `Image`); the
/// image is the caller's until `abd_array_image_free`. NULL on failure
/// (`abd_last_status` / `abd_last_error` say why).
export fn abd_array_image_new(plan: ?[*]const f64, plan_words: usize) ?*export_array.Image {
    const words: []const f64 = if (plan) |p| p[0..plan_words] else &.{};
    var image: ?*export_array.Image = null;
    if (export_array.Image.create(words, &image) != .ok) return null;
    return image;
}

export fn abd_array_image_free(image: ?*export_array.Image) void {
    if (image) |i| i.destroy();
}

/// Array images not yet freed (for tests).
export fn abd_array_images_live() f64 {
    return @floatFromInt(export_array.Image.liveCount());
}

/// `abd_export_slot_new` with the array tree copied from `image` (numbers
/// only: no plan to pass or read). The caller keeps the image's buffers
/// alive under `keepalive_id`, as for a plan.
export fn abd_export_slot_from_image(template: ?*export_schema.Template, image: ?*export_array.Image, keepalive_id: f64, kind: i32) ?*export_batch.Slot {
    const t = template orelse {
        _ = status.fail(.invalid_argument, "schema template is NULL", .{});
        return null;
    };
    const i = image orelse {
        _ = status.fail(.invalid_argument, "array image is NULL", .{});
        return null;
    };
    const which = std.enums.fromInt(export_batch.Kind, kind) orelse {
        _ = status.fail(.invalid_argument, "export slot kind {d} is not 0, 1 or 2", .{kind});
        return null;
    };
    return export_batch.createFrom(t, .{ .image = i }, @intFromFloat(keepalive_id), which);
}

/// The address of the number of queued keepalive ids (a u32 the JS side
/// reads without a call, to drain only when it is non-zero).
export fn abd_keepalive_queued_address() *const u32 {
    return keepalive.queuedAddress();
}

/// Opens the calling JS thread's context (js_context.zig): the JS layer
/// calls it once per thread, before it registers any callback, saying
/// whether it is the process's main JS thread. Returns the
/// context number (the high bits of that thread's keepalive ids), or 0 when
/// this process has used up every context number.
export fn abd_js_context_open(is_main: bool) u32 {
    // What each module drops or answers when a JS thread ends (registered
    // once; later calls find them there).
    js_context.onClose(js_wake.forget);
    js_context.onClose(keepalive.closed);
    js_context.onClose(stream_export.forgetSyncProducer);
    js_context.onClose(js_queue.orphan);
    js_context.onClose(stream_import.releaseClosed);
    js_context.onClose(owner_mod.releaseHanded);
    js_queue.on_orphan = orphaned;
    return js_context.open(is_main);
}

/// Entries left in an ended JS thread's queue, by their owners.
fn orphaned(entry: js_queue.Entry) void {
    stream_export.orphaned(entry);
    adbc_call.orphaned(entry);
}

/// Runs an import's deferred release on the JS thread (js_queue tag
/// owner_release): its producer's release callbacks are JS code.
export fn abd_owner_release_deferred(owner: ?*Owner) void {
    (owner orelse return).destroyNow();
}

/// Registers the callback that wakes JS when keepalive ids are queued.
export fn abd_set_release_notifier(notifier: ?keepalive.Notifier) void {
    keepalive.setNotifier(notifier);
}

/// Takes one reference on each of the `n` import owners in `owners` (f64
/// addresses; the caller holds references on them) for the export built
/// under `keepalive_id`; its release drops them (any thread), as does
/// `abd_export_drop_owners` for an export that was never built.
export fn abd_export_hold_owners(keepalive_id: f64, owners: ?[*]const f64, n: u32) c_int {
    const words = owners orelse return code(status.fail(.invalid_argument, "owners pointer is NULL", .{}));
    const list = std.heap.c_allocator.alloc(*Owner, n) catch return code(status.fail(.out_of_memory, "out of memory listing {d} import owners", .{n}));
    defer std.heap.c_allocator.free(list);
    for (words[0..n], list) |word, *slot| {
        const address: usize = if (word >= 1 and word <= 9007199254740992.0) @intFromFloat(word) else 0;
        if (address == 0 or address % @alignOf(Owner) != 0) return code(status.fail(.invalid_argument, "import owner address {d} is not an owner", .{word}));
        slot.* = @ptrFromInt(address);
    }
    return code(owner_holds.hold(@intFromFloat(keepalive_id), list));
}

/// Drops what `abd_export_hold_owners` took for `keepalive_id` (an export
/// whose tree was never built).
export fn abd_export_drop_owners(keepalive_id: f64) void {
    export_holds.drop(@intFromFloat(keepalive_id));
}

/// Called by the release notifier's JS side when it runs, before it drains:
/// the next queued id may post a wake again.
export fn abd_release_wake_done() void {
    keepalive.wakeDone();
}

/// Wakes the release notifier was called for, in total.
export fn abd_release_wakes_posted() f64 {
    return @floatFromInt(keepalive.wakesPosted());
}

/// Moves up to `capacity` released keepalive ids into `out`.
export fn abd_take_released(out: [*]f64, capacity: u32) u32 {
    return @intCast(keepalive.take(out[0..capacity]));
}
