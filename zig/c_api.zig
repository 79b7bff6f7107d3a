//! The library's C API: every exported symbol, and nothing else. Each entry
//! says who owns what. Declared for C in lib/include/arrow_device.h; the TS
//! side binds them in ts/core/ffi/.
//!
//! Conventions:
//! - Functions that can fail return an `abd_status` (status.zig); on failure
//!   `abd_last_error()` explains, until the next failing call on the thread.
//! - "Moves" means: the struct is bitwise-copied and the caller's copy is
//!   marked released, whether or not the call succeeds.

const std = @import("std");
const abi = @import("core/abi.zig");
const status = @import("core/status.zig");
const manifest = @import("manifest.zig");
const counters = @import("core/counters.zig");
const keepalive = @import("export/keepalive.zig");
const js_context = @import("core/js_context.zig");
const export_holds = @import("export/holds.zig");
const owner_holds = @import("import/owner_holds.zig");
const export_array = @import("export/array.zig");
const export_schema = @import("export/schema.zig");
const export_batch = @import("export/batch.zig");
const owner_mod = @import("import/owner.zig");
const validate = @import("validate/validate.zig");
const consumer = @import("import/consumer.zig");
const move = @import("import/move.zig");
const schema_info = @import("validate/schema_info.zig");
const schema_key = @import("validate/schema_key.zig");
const metadata = @import("core/metadata.zig");
const probe = @import("validate/probe.zig");
const adbc_abi = @import("adbc/abi.zig");
const adbc_driver = @import("adbc/driver.zig");
const adbc_call = @import("adbc/call.zig");
const adbc_schema_stream = @import("adbc/schema_stream.zig");
comptime { _ = @import("adbc/exports.zig"); }
const probe_policy = @import("validate/probe_policy.zig");

const Status = status.Status;
const Owner = owner_mod.Owner;

fn code(s: Status) c_int {
    return @intFromEnum(s);
}

fn levelFrom(raw: c_int) ?validate.Level {
    return std.enums.fromInt(validate.Level, raw);
}

// ---------------------------------------------------------------------------
// Library facts and errors
// ---------------------------------------------------------------------------

/// JSON: struct sizes and offsets, device types, flags, status codes,
/// counter names, node-table word layout. Static; never freed.
export fn abd_layout_manifest() [*:0]const u8 {
    return manifest.json.ptr;
}

/// The message of this thread's last failure (empty if none). Valid until
/// the next failing call on this thread.
export fn abd_last_error() [*:0]const u8 {
    return status.lastMessage();
}

export fn abd_last_status() c_int {
    return code(status.lastStatus());
}

/// Copies up to `capacity` counters (counters.zig order) into `out`.
export fn abd_counters_read(out: [*]f64, capacity: u32) u32 {
    return @intCast(counters.read(out[0..capacity]));
}

// ---------------------------------------------------------------------------
// Memory the caller owns
// ---------------------------------------------------------------------------

/// Zeroed native memory, e.g. a place for a base struct that must stay at a
/// stable address. Free with `abd_free`.
export fn abd_alloc_zeroed(size: usize) ?*anyopaque {
    const memory = std.c.malloc(@max(size, 1)) orelse return null;
    @memset(@as([*]u8, @ptrCast(memory))[0..@max(size, 1)], 0);
    return memory;
}

export fn abd_free(memory: ?*anyopaque) void {
    std.c.free(memory);
}

// ---------------------------------------------------------------------------
// Releasing structs from languages that cannot call function pointers
// ---------------------------------------------------------------------------

/// Calls `schema->release` if the schema is not released. NULL is a no-op.
export fn abd_schema_release(schema: ?*abi.ArrowSchema) void {
    const s = schema orelse return;
    if (s.release) |release| release(s);
}

export fn abd_array_release(array: ?*abi.ArrowArray) void {
    const a = array orelse return;
    if (a.release) |release| release(a);
}

export fn abd_device_array_release(array: ?*abi.ArrowDeviceArray) void {
    const a = array orelse return;
    if (a.array.release) |release| release(&a.array);
}

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
        if (out == null) return code(status.fail(.invalid_argument, "out owner pointer is NULL", .{}));
        return code(status.fail(.invalid_argument, "validation level {d} is not 0..3", .{level}));
    }
    return code(owner_mod.import(schema, array, lvl.?, out.?));
}

/// Like `abd_import_device_array` for a plain ArrowArray (a CPU array).
export fn abd_import_array(schema: ?*abi.ArrowSchema, array: ?*abi.ArrowArray, level: c_int, out: ?*?*Owner) c_int {
    const lvl = levelFrom(level);
    if (out == null or lvl == null) {
        owner_mod.discard(schema, array);
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
export fn abd_owner_snapshot(owner: *Owner, out: [*]f64, capacity: u32, adopt: u32) u32 {
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
// Re-export and relays (reexport.zig)
// ---------------------------------------------------------------------------

const reexport = @import("import/reexport.zig");

fn requestFrom(words: ?[*]const f64, count: u32, out: *reexport.Request) Status {
    const slice: []const f64 = if (words) |w| w[0..count] else &.{};
    return reexport.Request.fromWords(slice, out);
}

/// Resolves a re-export request (`reexport.RequestWord` words; NULL or 0
/// words: the whole array) into a window: node, C offset, length, null
/// count (`reexport.WindowWord`, 4 words). The caller holds a reference.
export fn abd_owner_select(owner: ?*Owner, request: ?[*]const f64, request_words: u32, out: ?[*]f64) c_int {
    const held = owner orelse return code(status.fail(.invalid_argument, "owner pointer is NULL", .{}));
    const target = out orelse return code(status.fail(.invalid_argument, "out window pointer is NULL", .{}));
    var parsed: reexport.Request = undefined;
    const read = requestFrom(request, request_words, &parsed);
    if (read != .ok) return code(read);
    var window: reexport.Window = undefined;
    const selected = reexport.select(held, parsed, &window);
    if (selected != .ok) return code(selected);
    window.toWords(target[0..reexport.window_words]);
    return 0;
}

/// Re-exports what `request` selects of `owner` as a new ArrowSchema +
/// ArrowDeviceArray, written to `schema_out` and `array_out`, which the
/// caller (the consumer) then owns and releases, from any thread, in any
/// order with other re-exports. The producer's device_type, device_id and
/// sync_event are kept; `reserved` is zeroed. The caller holds a reference
/// to `owner` during the call. On failure the outs are untouched.
export fn abd_owner_reexport(owner: ?*Owner, request: ?[*]const f64, request_words: u32, schema_out: ?*abi.ArrowSchema, array_out: ?*abi.ArrowDeviceArray) c_int {
    const held = owner orelse return code(status.fail(.invalid_argument, "owner pointer is NULL", .{}));
    const schema_target = schema_out orelse return code(status.fail(.invalid_argument, "out schema pointer is NULL", .{}));
    const array_target = array_out orelse return code(status.fail(.invalid_argument, "out device array pointer is NULL", .{}));
    var parsed: reexport.Request = undefined;
    const read = requestFrom(request, request_words, &parsed);
    if (read != .ok) return code(read);
    return code(reexport.reexportDevice(held, parsed, schema_target, array_target));
}

/// Like `abd_owner_reexport` as a plain (CPU) ArrowArray; fails with
/// `unsupported` for memory the host cannot read.
export fn abd_owner_reexport_array(owner: ?*Owner, request: ?[*]const f64, request_words: u32, schema_out: ?*abi.ArrowSchema, array_out: ?*abi.ArrowArray) c_int {
    const held = owner orelse return code(status.fail(.invalid_argument, "owner pointer is NULL", .{}));
    const schema_target = schema_out orelse return code(status.fail(.invalid_argument, "out schema pointer is NULL", .{}));
    const array_target = array_out orelse return code(status.fail(.invalid_argument, "out array pointer is NULL", .{}));
    var parsed: reexport.Request = undefined;
    const read = requestFrom(request, request_words, &parsed);
    if (read != .ok) return code(read);
    return code(reexport.reexportArray(held, parsed, schema_target, array_target));
}

/// Moves `schema` + `array` in (validated at `level`; device memory is never
/// read) and out again into `schema_out` + `array_out`, whose release runs
/// the producer's. On failure what was moved in has been released once.
export fn abd_relay_device_array(schema: ?*abi.ArrowSchema, array: ?*abi.ArrowDeviceArray, level: c_int, schema_out: ?*abi.ArrowSchema, array_out: ?*abi.ArrowDeviceArray) c_int {
    const lvl = levelFrom(level) orelse {
        releaseInputs(schema, if (array) |a| &a.array else null);
        return code(status.fail(.invalid_argument, "validation level {d} is not 0..3", .{level}));
    };
    const schema_target = schema_out orelse {
        releaseInputs(schema, if (array) |a| &a.array else null);
        return code(status.fail(.invalid_argument, "out schema pointer is NULL", .{}));
    };
    const array_target = array_out orelse {
        releaseInputs(schema, if (array) |a| &a.array else null);
        return code(status.fail(.invalid_argument, "out device array pointer is NULL", .{}));
    };
    return code(reexport.relayDevice(schema, array, lvl, schema_target, array_target));
}

/// Like `abd_relay_device_array` for plain (CPU) ArrowArrays.
export fn abd_relay_array(schema: ?*abi.ArrowSchema, array: ?*abi.ArrowArray, level: c_int, schema_out: ?*abi.ArrowSchema, array_out: ?*abi.ArrowArray) c_int {
    const lvl = levelFrom(level) orelse {
        releaseInputs(schema, array);
        return code(status.fail(.invalid_argument, "validation level {d} is not 0..3", .{level}));
    };
    const schema_target = schema_out orelse {
        releaseInputs(schema, array);
        return code(status.fail(.invalid_argument, "out schema pointer is NULL", .{}));
    };
    const array_target = array_out orelse {
        releaseInputs(schema, array);
        return code(status.fail(.invalid_argument, "out array pointer is NULL", .{}));
    };
    return code(reexport.relayArray(schema, array, lvl, schema_target, array_target));
}

/// A relay moves its inputs even when it fails early.
fn releaseInputs(schema: ?*abi.ArrowSchema, array: ?*abi.ArrowArray) void {
    if (array) |a| if (a.release) |release| release(a);
    if (schema) |s| if (s.release) |release| release(s);
}

// ---------------------------------------------------------------------------
// Device runtimes (zig/device/): CUDA and ROCm loaded at run time
// ---------------------------------------------------------------------------
//
// A runtime is named by an Arrow device type: CUDA (2), CUDA_HOST (3) and
// CUDA_MANAGED (13) mean CUDA; ROCM (10) and ROCM_HOST (11) mean ROCm.
// Every call loads the runtime on first use; "not available" is
// `ABD_DEVICE_UNAVAILABLE` with a message saying why and what was tried.
// Streams are raw handles (CUstream / hipStream_t; NULL: the default
// stream); events are passed as pointers to their handle (`CUevent*`,
// `hipEvent_t*`), exactly what `sync_event` holds. Callable from any thread.

const device_runtime = @import("device/runtime.zig");
const device_transfer = @import("device/transfer.zig");
const device_staging = @import("device/staging.zig");
const device_pool = @import("device/pool.zig");
const device_host_pool = @import("device/host_pool.zig");

fn runtimeFor(device_type: i32) ?*device_runtime.Runtime {
    const found = device_runtime.require(device_type);
    return found[1];
}

fn memoryKindFrom(raw: c_int) ?device_runtime.MemoryKind {
    return std.enums.fromInt(device_runtime.MemoryKind, raw);
}

fn eventHandle(event: ?*anyopaque) device_runtime.Event {
    const pointer = event orelse return null;
    return @as(*const device_runtime.Event, @ptrCast(@alignCast(pointer))).*;
}

/// Loads the runtime of `device_type` from `library_path` (NULL or "": the
/// environment variable ARROW_DEVICE_CUDA_LIBRARY / ARROW_DEVICE_HIP_LIBRARY,
/// else the default sonames). Once loaded, later calls return at once.
export fn abd_device_runtime_load(device_type: i32, library_path: ?[*:0]const u8) c_int {
    const rt = runtimeFor(device_type) orelse return code(status.lastStatus());
    return code(rt.load(if (library_path) |p| std.mem.span(p) else null));
}

/// Words: device count, driver/runtime version. `path_out` (may be NULL)
/// receives the library that was loaded, NUL-terminated.
export fn abd_device_runtime_info(device_type: i32, out: [*]f64, path_out: ?[*]u8, path_capacity: u32) c_int {
    const rt = runtimeFor(device_type) orelse return code(status.lastStatus());
    const loaded = rt.load(null);
    if (loaded != .ok) return code(loaded);
    out[0] = @floatFromInt(rt.info.device_count);
    out[1] = @floatFromInt(rt.info.version);
    if (path_out) |buffer| {
        if (path_capacity > 0) {
            const path = std.mem.sliceTo(&rt.info.library_path, 0);
            const n = @min(path.len, path_capacity - 1);
            @memcpy(buffer[0..n], path[0..n]);
            buffer[n] = 0;
        }
    }
    return 0;
}

/// The device's name (NUL-terminated into `name_out`) and total memory in
/// bytes (`out[0]`).
export fn abd_device_get_info(device_type: i32, ordinal: i32, name_out: [*]u8, name_capacity: u32, out: [*]f64) c_int {
    const rt = runtimeFor(device_type) orelse return code(status.lastStatus());
    var info: device_runtime.DeviceInfo = .{};
    const got = rt.deviceInfo(ordinal, &info);
    if (got != .ok) return code(got);
    const name = info.nameSlice();
    if (name_capacity > 0) {
        const n = @min(name.len, name_capacity - 1);
        @memcpy(name_out[0..n], name[0..n]);
        name_out[n] = 0;
    }
    out[0] = @floatFromInt(info.total_memory_bytes);
    return 0;
}

/// Allocates `size` bytes of `memory` (0 device, 1 pinned host, 2 managed)
/// for device `device_id`; the address goes to `out[0]`. The caller frees
/// it with `abd_device_free` and the same kind.
export fn abd_device_alloc(device_type: i32, device_id: i32, memory: c_int, size: usize, out: [*]f64) c_int {
    const rt = runtimeFor(device_type) orelse return code(status.lastStatus());
    const kind = memoryKindFrom(memory) orelse return code(status.fail(.invalid_argument, "memory kind {d} is not 0 (device), 1 (pinned) or 2 (managed)", .{memory}));
    var address: usize = 0;
    const allocated = rt.alloc(device_id, kind, size, &address);
    if (allocated != .ok) return code(allocated);
    out[0] = @floatFromInt(address);
    return 0;
}

export fn abd_device_free(device_type: i32, device_id: i32, memory: c_int, address: ?*anyopaque) c_int {
    const rt = runtimeFor(device_type) orelse return code(status.lastStatus());
    const kind = memoryKindFrom(memory) orelse return code(status.fail(.invalid_argument, "memory kind {d} is not 0 (device), 1 (pinned) or 2 (managed)", .{memory}));
    return code(rt.free(device_id, kind, @intFromPtr(address)));
}

/// Copies `size` bytes; `direction` 0 host to device, 1 device to host,
/// 2 device to device. `is_async` != 0: enqueued on `stream` (the caller
/// keeps both sides alive and unchanged until the stream or an event
/// recorded after it completes); else synchronous.
export fn abd_device_copy(device_type: i32, device_id: i32, direction: c_int, dst: ?*anyopaque, src: ?*const anyopaque, size: usize, stream: ?*anyopaque, is_async: c_int) c_int {
    const rt = runtimeFor(device_type) orelse return code(status.lastStatus());
    const dir = std.enums.fromInt(device_runtime.Direction, direction) orelse return code(status.fail(.invalid_argument, "copy direction {d} is not 0..2", .{direction}));
    return code(rt.copy(device_id, dir, @intFromPtr(dst), @intFromPtr(src), size, stream, is_async != 0));
}

/// Creates a non-blocking stream; its handle goes to `out[0]`.
export fn abd_device_stream_create(device_type: i32, device_id: i32, out: [*]f64) c_int {
    const rt = runtimeFor(device_type) orelse return code(status.lastStatus());
    var stream: device_runtime.Stream = null;
    const created = rt.streamCreate(device_id, &stream);
    if (created != .ok) return code(created);
    out[0] = @floatFromInt(@intFromPtr(stream));
    return 0;
}

export fn abd_device_stream_destroy(device_type: i32, device_id: i32, stream: ?*anyopaque) c_int {
    const rt = runtimeFor(device_type) orelse return code(status.lastStatus());
    return code(rt.streamDestroy(device_id, stream));
}

export fn abd_device_stream_synchronize(device_type: i32, device_id: i32, stream: ?*anyopaque) c_int {
    const rt = runtimeFor(device_type) orelse return code(status.lastStatus());
    return code(rt.streamSynchronize(device_id, stream));
}

/// Makes `stream` wait (on the device) for the event `*event`.
export fn abd_device_stream_wait_event(device_type: i32, device_id: i32, stream: ?*anyopaque, event: ?*anyopaque) c_int {
    const rt = runtimeFor(device_type) orelse return code(status.lastStatus());
    return code(rt.streamWaitEvent(device_id, stream, eventHandle(event)));
}

/// Creates an event (timing disabled) in a box owned by the caller; the
/// box's address, a `CUevent*` / `hipEvent_t*` fit for `sync_event`, goes
/// to `out[0]`. Destroy it with `abd_device_event_destroy`.
export fn abd_device_event_create(device_type: i32, device_id: i32, out: [*]f64) c_int {
    const rt = runtimeFor(device_type) orelse return code(status.lastStatus());
    var box: *device_runtime.EventBox = undefined;
    const created = device_runtime.EventBox.create(rt, device_id, &box);
    if (created != .ok) return code(created);
    out[0] = @floatFromInt(@intFromPtr(box));
    return 0;
}

/// Destroys an event made by `abd_device_event_create` and frees its box.
export fn abd_device_event_destroy(event: ?*device_runtime.EventBox) c_int {
    const box = event orelse return code(status.fail(.invalid_argument, "event is NULL", .{}));
    return code(box.destroy());
}

/// Records `*event` on `stream`.
export fn abd_device_event_record(device_type: i32, device_id: i32, event: ?*anyopaque, stream: ?*anyopaque) c_int {
    const rt = runtimeFor(device_type) orelse return code(status.lastStatus());
    return code(rt.eventRecord(device_id, eventHandle(event), stream));
}

/// Blocks until `*event` fired.
export fn abd_device_event_synchronize(device_type: i32, device_id: i32, event: ?*anyopaque) c_int {
    const rt = runtimeFor(device_type) orelse return code(status.lastStatus());
    return code(rt.eventSynchronize(device_id, eventHandle(event)));
}

/// `out[0]` = 1 if `*event` fired, 0 if not yet.
export fn abd_device_event_query(device_type: i32, device_id: i32, event: ?*anyopaque, out: [*]f64) c_int {
    const rt = runtimeFor(device_type) orelse return code(status.lastStatus());
    var ready = false;
    const queried = rt.eventQuery(device_id, eventHandle(event), &ready);
    if (queried != .ok) return code(queried);
    out[0] = if (ready) 1 else 0;
    return 0;
}

/// What `address` is to the runtime: `out` = pointer kind (0 plain host,
/// 1 device, 2 pinned host, 3 managed), the Arrow device type of such
/// memory (CPU for plain host), device ordinal (-1 for plain host).
export fn abd_device_pointer_query(device_type: i32, address: ?*const anyopaque, out: [*]f64) c_int {
    const rt = runtimeFor(device_type) orelse return code(status.lastStatus());
    var info: device_runtime.PointerInfo = .{};
    const queried = rt.pointerQuery(@intFromPtr(address), &info);
    if (queried != .ok) return code(queried);
    const arrow_type: abi.DeviceType = switch (info.kind) {
        .host => abi.device_cpu,
        .device => rt.device_type,
        .pinned => rt.pinned_device_type,
        .managed => rt.managed_device_type orelse rt.device_type,
    };
    out[0] = @floatFromInt(@intFromEnum(info.kind));
    out[1] = @floatFromInt(arrow_type);
    out[2] = @floatFromInt(info.device_id);
    return 0;
}

/// Moves the host array `schema` + `array` in (left released, success or
/// not), copies it to `device_type` memory (CUDA, CUDA_HOST, CUDA_MANAGED,
/// ROCM, ROCM_HOST) of device `device_id` on `stream`, and exports the copy
/// into `out_schema` + `out_array`, with `sync_event` recorded after the
/// copies. Its release frees the device memory and destroys the event.
export fn abd_device_array_to_device(schema: ?*abi.ArrowSchema, array: ?*abi.ArrowDeviceArray, device_type: i32, device_id: i32, stream: ?*anyopaque, out_schema: ?*abi.ArrowSchema, out_array: ?*abi.ArrowDeviceArray) c_int {
    const schema_target = out_schema orelse return code(status.fail(.invalid_argument, "out schema pointer is NULL", .{}));
    const array_target = out_array orelse return code(status.fail(.invalid_argument, "out device array pointer is NULL", .{}));
    return code(device_transfer.toDevice(schema, array, .{ .device_type = device_type, .device_id = device_id, .stream = stream }, schema_target, array_target));
}

/// Exports `owner`'s data as a CPU array into `out_schema` + `out_array`
/// (device memory copied, host-visible memory viewed in place; see
/// zig/device/transfer.zig). The caller keeps its owner reference. Blocks
/// until the copies are done.
export fn abd_owner_to_host(owner: *Owner, stream: ?*anyopaque, out_schema: ?*abi.ArrowSchema, out_array: ?*abi.ArrowDeviceArray) c_int {
    const schema_target = out_schema orelse return code(status.fail(.invalid_argument, "out schema pointer is NULL", .{}));
    const array_target = out_array orelse return code(status.fail(.invalid_argument, "out device array pointer is NULL", .{}));
    return code(device_transfer.toHost(owner, stream, schema_target, array_target));
}

/// Page-locks `size` bytes of host memory at `address` for the runtime of
/// `device_type` (cuMemHostRegister_v2 / hipHostRegister). The caller keeps
/// the memory alive and calls `abd_device_host_unregister` once.
export fn abd_device_host_register(device_type: i32, device_id: i32, address: ?*anyopaque, size: usize) c_int {
    const rt = runtimeFor(device_type) orelse return code(status.lastStatus());
    return code(rt.hostRegister(device_id, @intFromPtr(address), size));
}

export fn abd_device_host_unregister(device_type: i32, device_id: i32, address: ?*anyopaque) c_int {
    const rt = runtimeFor(device_type) orelse return code(status.lastStatus());
    return code(rt.hostUnregister(device_id, @intFromPtr(address)));
}

/// The pinned staging pool of `device_type`'s runtime (zig/device/staging.zig):
/// `out[0]` = blocks allocated (idle and lent) before, `out[1]` = idle
/// blocks freed when `trim` is non-zero, `out[2]` = the block size; the
/// memory pool (zig/device/pool.zig), counted before the trim: `out[3]` /
/// `out[4]` = device blocks held / high-water mark, `out[5]` / `out[6]` =
/// pinned blocks held / high-water mark, `out[7]` = its block size, `out[8]`
/// = its blocks freed by the trim, `out[9 + d]` / `out[73 + d]` = its
/// blocks (device and pinned) / their live ranges on device `d`, `out[137]`
/// / `out[138]` = live device / pinned ranges; `out[139]` = completed
/// events kept for reuse (zig/device/runtime.zig), counted before the trim,
/// which destroys them. `out` holds 140 numbers.
export fn abd_device_staging(device_type: i32, trim: c_int, out: [*]f64) c_int {
    const rt = runtimeFor(device_type) orelse return code(status.lastStatus());
    const on_device = device_pool.stats(rt, .device);
    const pinned = device_pool.stats(rt, .pinned);
    out[3] = @floatFromInt(on_device.blocks);
    out[4] = @floatFromInt(on_device.high_water);
    out[5] = @floatFromInt(pinned.blocks);
    out[6] = @floatFromInt(pinned.high_water);
    out[7] = @floatFromInt(device_pool.block_bytes);
    for (0..device_pool.max_devices) |d| {
        const on = device_pool.blocksOn(rt, @intCast(d));
        out[9 + d] = @floatFromInt(on.blocks);
        out[9 + device_pool.max_devices + d] = @floatFromInt(on.ranges);
    }
    out[137] = @floatFromInt(on_device.ranges);
    out[138] = @floatFromInt(pinned.ranges);
    out[139] = @floatFromInt(device_runtime.cachedEvents(rt));
    if (trim != 0 and rt.isLoaded()) _ = device_runtime.trimEvents(rt);
    out[8] = if (trim != 0 and rt.isLoaded()) @floatFromInt(device_pool.trim(rt)) else 0;
    out[0] = @floatFromInt(device_staging.allocated(rt));
    out[1] = if (trim != 0 and rt.isLoaded()) @floatFromInt(device_staging.trim(rt)) else 0;
    // Trimming also frees the idle toHost result memory (device/host_pool.zig).
    if (trim != 0) _ = device_host_pool.trim();
    out[2] = @floatFromInt(device_staging.block_bytes);
    return 0;
}

/// Validates `schema` + `array` (not moved) at the minimal level, reading
/// no buffer: for arrays built over memory the host cannot read.
export fn abd_device_array_check(schema: ?*abi.ArrowSchema, array: ?*abi.ArrowDeviceArray) c_int {
    const s = schema orelse return code(status.fail(.invalid_argument, "schema pointer is NULL", .{}));
    const a = array orelse return code(status.fail(.invalid_argument, "array pointer is NULL", .{}));
    return code(validate.validate(s, &a.array, .minimal, false, null));
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
// Fault-safe struct checks (probe.zig)
// ---------------------------------------------------------------------------

/// Checks, without faulting, that `address` names a struct of `kind`
/// (0 schema, 1 array, 2 device array, 3 array stream, 4 device array
/// stream, 5 async device stream handler) that is safe to read: readable
/// bytes, a sane shape, readable strings and child pointers. `mode` 0: it
/// must be live (a released one gives ABD_RELEASED); 1: a view or a
/// destination, released allowed, and writable. Reads only; any thread.
/// Mode 2: as 0, for a struct the call owns (moved in): when it is refused
/// but still safe to release (`probe.refusedReleasable`), its release is
/// called here; any other refused struct is left untouched.
export fn abd_probe_struct(kind: c_int, address: usize, mode: c_int) c_int {
    const k = std.enums.fromInt(probe.Kind, kind) orelse return code(status.fail(.invalid_argument, "unknown struct kind {d}", .{kind}));
    if (mode == 2) return code(probeOwned(k, address));
    const m = std.enums.fromInt(probe.Mode, mode) orelse return code(status.fail(.invalid_argument, "unknown probe mode {d}", .{mode}));
    return code(probe.probeStruct(k, address, m));
}

fn probeOwned(kind: probe.Kind, address: usize) status.Status {
    const s = probe.probeStruct(kind, address, .live);
    if (s != .invalid_argument or !probe.refusedReleasable()) return s;
    // The release may call into this library: keep the probe's reason.
    var reason: [status.message_capacity]u8 = undefined;
    const text = std.mem.span(status.lastMessage());
    @memcpy(reason[0..text.len], text);
    switch (kind) {
        .schema => {
            const schema: *abi.ArrowSchema = @ptrFromInt(address);
            schema.release.?(schema);
        },
        .array, .device_array => {
            const array: *abi.ArrowArray = @ptrFromInt(address);
            array.release.?(array);
        },
        .array_stream => {
            const stream: *abi.ArrowArrayStream = @ptrFromInt(address);
            stream.release.?(stream);
        },
        .device_array_stream => {
            const stream: *abi.ArrowDeviceArrayStream = @ptrFromInt(address);
            stream.release.?(stream);
        },
        .async_handler => {
            const handler: *abi.ArrowAsyncDeviceStreamHandler = @ptrFromInt(address);
            handler.release.?(handler);
        },
    }
    return status.fail(s, "{s}", .{reason[0..text.len]});
}

/// `abd_probe_struct` (mode 0) of the live schema and array (`array_kind`
/// 1) or device array (2) that one import takes, in one call. A NULL
/// address is skipped. Returns the first failure, the schema's first.
/// `array_kind` | 0x100: both lie in a live export slot of this library
/// (abd_export_slot_new), read directly; only their release is checked.
export fn abd_probe_pair(schema: usize, array_kind: c_int, array: usize) c_int {
    const own = array_kind & 0x100 != 0;
    const kind = array_kind & ~@as(c_int, 0x100);
    if (kind != 1 and kind != 2) return code(status.fail(.invalid_argument, "unknown array kind {d}", .{array_kind}));
    return code(probe.probePair(schema, if (kind == 1) .array else .device_array, array, own));
}

/// The probe of the schema and array (`array_kind` 1) or device array (2)
/// that one import takes from JS, to `depth` (probe_policy.zig): 0 the
/// roots, in one system call when they look live (validation "minimal"
/// and "default"); 1 every node (validation "full"). A NULL address is
/// skipped. Returns 0, or the status | 0x10000 when the array's side
/// failed | 0x20000 when a node below the roots failed (its message names
/// the node); a failure of the roots carries neither flag: probe each
/// root with abd_probe_struct to learn which failed.
export fn abd_probe_import(schema: usize, array_kind: c_int, array: usize, depth: c_int) c_int {
    if (array_kind != 1 and array_kind != 2) return code(status.fail(.invalid_argument, "unknown array kind {d}", .{array_kind}));
    const d = std.enums.fromInt(probe_policy.Depth, depth) orelse return code(status.fail(.invalid_argument, "unknown probe depth {d}", .{depth}));
    const v = probe_policy.probeImport(schema, if (array_kind == 1) .array else .device_array, array, d);
    if (v.status == .ok) return 0;
    return code(v.status) | (@as(c_int, v.side) << 16) | (@as(c_int, @intFromBool(v.deep)) << 17);
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

// ---------------------------------------------------------------------------
// Streams: JS-produced streams, imported streams, adapters, and
// the JS work queue they wake JS through. Threads: see stream/export.zig
// and stream/import.zig; the functions below that answer or drain are for
// the JS thread only.
// ---------------------------------------------------------------------------

const js_queue = @import("core/js_queue.zig");
const stream_export = @import("stream/export.zig");
const stream_import = @import("stream/import.zig");
const stream_convert = @import("stream/convert.zig");

/// The errno-compatible code stream callbacks return for status `raw`.
export fn abd_status_errno(raw: c_int) c_int {
    const s = std.enums.fromInt(Status, raw) orelse return Status.internal.errno();
    return s.errno();
}

/// Registers the void threadsafe callback that wakes JS when work is
/// queued for it (js_queue.zig).
export fn abd_js_queue_set_notifier(notifier: ?js_queue.Notifier) void {
    js_queue.mine().setNotifier(notifier);
}

/// Moves up to `capacity` queued entries into `out` (3 words each: tag,
/// key, address); returns how many entries. JS thread.
export fn abd_js_queue_take(out: [*]f64, capacity: u32) u32 {
    return @intCast(js_queue.mine().take(out[0 .. @as(usize, capacity) * js_queue.entry_words]));
}

/// Entries waiting in the JS work queue plus released exports waiting in
/// the keepalive queue, read without locks (for JS's polling loop).
export fn abd_js_work_pending() u32 {
    const released: u32 = keepalive.queuedAddress().*;
    return js_queue.mine().queuedNow() + released;
}

/// JS says it is polling the work and keepalive queues (no wake-ups
/// needed), or that it stopped (it then takes from both once more).
export fn abd_js_queue_polling(on: bool) void {
    js_queue.mine().setPolling(on);
}

/// How long threads waiting across the JS hand-off spin before sleeping
/// (js_queue.zig `spin_ns`); 0 disables spinning.
/// Any f64 is taken: NaN and negatives give 0, values above
/// `js_queue.max_spin_ns` (and +Infinity) give that maximum, so no input
/// reaches @intFromFloat out of range.
export fn abd_set_spin_ns(nanoseconds: f64) void {
    js_queue.spin_ns.store(js_queue.clampSpin(nanoseconds), .monotonic);
}

/// JS enters (true) or leaves (false) a synchronous native call that may
/// wait for consumers of JS-produced streams; returns the number of get_next
/// calls refused so far (stream/export.zig `js_blocked`). JS thread.
export fn abd_js_blocking(enter: bool) f64 {
    if (enter) {
        _ = stream_export.js_blocked.fetchAdd(1, .acq_rel);
    } else {
        _ = stream_export.js_blocked.fetchSub(1, .acq_rel);
    }
    return @floatFromInt(stream_export.blocked_refusals.load(.acquire));
}

/// Registers the non-threadsafe JS callback that answers get_next calls
/// made on the JS thread.
export fn abd_stream_export_set_producer(callback: ?stream_export.SyncProducer) void {
    stream_export.setSyncProducer(callback);
}

/// Fills `out` (ArrowArrayStream for kind 0, ArrowDeviceArrayStream for
/// kind 1) with a JS-produced stream. `out` is the caller's; the stream's
/// release frees everything else and queues `js_key` for JS. JS thread.
export fn abd_stream_export_create(kind: c_int, device_type: i32, schema_plan: ?[*]const u8, plan_bytes: usize, source_is_async: bool, js_key: f64, out: ?*anyopaque) c_int {
    const target = out orelse return code(status.fail(.invalid_argument, "out stream pointer is NULL", .{}));
    const k = std.enums.fromInt(stream_export.Kind, kind) orelse return code(status.fail(.invalid_argument, "stream kind {d} is not 0 (array) or 1 (device)", .{kind}));
    const plan: []const u8 = if (schema_plan) |p| p[0..plan_bytes] else &.{};
    return code(stream_export.create(k, device_type, plan, source_is_async, @intFromFloat(js_key), target));
}

/// Answers the producer's pending get_next with a batch built from `plan`
/// (as `abd_array_build`). On failure the stream fails with that error.
export fn abd_stream_export_deliver(producer: *stream_export.Producer, plan: ?[*]const f64, plan_words: usize, keepalive_id: f64, device_id: i64) c_int {
    const words: []const f64 = if (plan) |p| p[0..plan_words] else &.{};
    return code(stream_export.deliver(producer, words, @intFromFloat(keepalive_id), device_id));
}

/// Answers the producer's pending get_next with the end of the stream.
export fn abd_stream_export_end(producer: *stream_export.Producer) c_int {
    return code(stream_export.end(producer));
}

/// Answers the producer's pending get_next with a final failure: `errno`
/// and the UTF-8 `message` (copied), what get_last_error then returns.
export fn abd_stream_export_fail(producer: *stream_export.Producer, errno: c_int, message: ?[*]const u8, message_bytes: usize) c_int {
    const text: []const u8 = if (message) |m| m[0..message_bytes] else "";
    return code(stream_export.failWith(producer, errno, text));
}

/// Calls `stream->release` if the stream is not released; NULL is a no-op.
export fn abd_array_stream_release(stream: ?*abi.ArrowArrayStream) void {
    const s = stream orelse return;
    if (s.release) |release| release(s);
}

export fn abd_device_array_stream_release(stream: ?*abi.ArrowDeviceArrayStream) void {
    const s = stream orelse return;
    if (s.release) |release| release(s);
}

/// Moves the stream at `stream` (kind 0: ArrowArrayStream, 1:
/// ArrowDeviceArrayStream) into a new imported stream. The caller's struct
/// is left released, success or not.
export fn abd_stream_import(kind: c_int, stream: ?*anyopaque, out: ?*?*stream_import.Imported) c_int {
    const target = out orelse return code(status.fail(.invalid_argument, "out stream pointer is NULL", .{}));
    const k = std.enums.fromInt(stream_import.Kind, kind) orelse return code(status.fail(.invalid_argument, "stream kind {d} is not 0 (array) or 1 (device)", .{kind}));
    return code(stream_import.import(k, stream, target));
}

/// Imported stream facts, as f64 words: serial, kind, device_type.
export fn abd_stream_import_info(imported: *stream_import.Imported, out: [*]f64) void {
    out[0] = @floatFromInt(imported.serial);
    out[1] = @floatFromInt(@intFromEnum(imported.kind));
    out[2] = @floatFromInt(imported.device_type);
}

/// The stream's schema (fetched on first call), as an address in `out[0]`;
/// the stream owns it until it is released or moved out.
export fn abd_stream_import_schema(imported: *stream_import.Imported, out: [*]f64) c_int {
    var schema: *abi.ArrowSchema = undefined;
    const s = stream_import.schemaOf(imported, &schema);
    if (s == .ok) out[0] = @floatFromInt(@intFromPtr(schema));
    return code(s);
}

/// Pulls the next batch on this thread into a new owner (`out[0]`, 0 at the
/// end), validated at `level`.
export fn abd_stream_import_next(imported: *stream_import.Imported, level: c_int, out: [*]f64) c_int {
    const lvl = levelFrom(level) orelse return code(status.fail(.invalid_argument, "validation level {d} is not 0..3", .{level}));
    var owner: ?*Owner = null;
    const s = stream_import.next(imported, lvl, &owner);
    if (owner) |o| owner_mod.noteHanded(o);
    out[0] = @floatFromInt(@intFromPtr(owner));
    return code(s);
}

/// A zero-length batch shaped like the stream's schema, in a new owner
/// (`out[0]`), validated at `level`; the stream's position is unchanged.
export fn abd_stream_import_empty_batch(imported: *stream_import.Imported, level: c_int, out: [*]f64) c_int {
    const lvl = levelFrom(level) orelse return code(status.fail(.invalid_argument, "validation level {d} is not 0..3", .{level}));
    var owner: ?*Owner = null;
    const s = stream_import.emptyBatch(imported, lvl, &owner);
    out[0] = @floatFromInt(@intFromPtr(owner));
    return code(s);
}

/// Starts pulling the next batch on the stream's worker thread; the JS
/// queue reports it done (tag 2), then `abd_stream_import_take_pull`.
export fn abd_stream_import_pull(imported: *stream_import.Imported, level: c_int) c_int {
    const lvl = levelFrom(level) orelse return code(status.fail(.invalid_argument, "validation level {d} is not 0..3", .{level}));
    return code(stream_import.pull(imported, lvl));
}

/// From now on, each batch the stream's worker pulls is copied to host
/// memory on the worker (device_transfer.toHost; host-readable batches
/// become views), and the device batch released once copied: the copy of
/// the batch read ahead overlaps JS's use of the previous one.
export fn abd_stream_import_copy_pulls_to_host(imported: *stream_import.Imported) void {
    stream_import.setPullTransform(imported, pullToHost);
}

fn pullToHost(pulled: *Owner, level: validate.Level, out: *?*Owner) Status {
    defer pulled.release();
    out.* = null;
    var schema: abi.ArrowSchema = .empty;
    var array: abi.ArrowDeviceArray = .empty;
    const copied = device_transfer.toHost(pulled, null, &schema, &array);
    if (copied != .ok) return copied;
    return owner_mod.import(&schema, &array, level, out);
}

/// Takes a finished background pull: its status (and message, as this
/// thread's last error) and owner in `out[0]` (0 at the end or on error).
export fn abd_stream_import_take_pull(imported: *stream_import.Imported, out: [*]f64) c_int {
    var owner: ?*Owner = null;
    const s = stream_import.takePull(imported, &owner);
    if (owner) |o| owner_mod.noteHanded(o);
    out[0] = @floatFromInt(@intFromPtr(owner));
    return code(s);
}

/// Where the background pull is: 0 idle, 1 queued, 2 running, 3 ready (to
/// take with `abd_stream_import_take_pull`).
export fn abd_stream_import_pull_state(imported: *stream_import.Imported) c_int {
    return @intFromEnum(stream_import.pullState(imported));
}

/// JS will wait for the current background pull: its end is posted to the
/// JS work queue from now on. Returns the pull state (3: ready now).
export fn abd_stream_import_wait(imported: *stream_import.Imported) c_int {
    return @intFromEnum(stream_import.wait(imported));
}

/// After a callback_error: the producer's errno in `out_errno` and its
/// get_last_error text (NULL if none). Valid until the next call.
export fn abd_stream_import_producer_error(imported: *stream_import.Imported, out_errno: *c_int) ?[*:0]const u8 {
    out_errno.* = imported.producer_errno;
    return if (imported.producer_error) |text| text.ptr else null;
}

/// Releases the producer's stream once (see stream_import.release).
export fn abd_stream_import_release(imported: *stream_import.Imported) void {
    stream_import.release(imported);
}

/// Relays the producer's stream struct, unconverted, to `out` and frees the
/// imported stream.
export fn abd_stream_import_move(imported: *stream_import.Imported, out: ?*anyopaque) c_int {
    const target = out orelse return code(status.fail(.invalid_argument, "out stream pointer is NULL", .{}));
    return code(stream_import.moveOut(imported, target));
}

/// Moves `source` in; fills `out` with a CPU ArrowDeviceArrayStream over it.
export fn abd_stream_to_device(source: ?*abi.ArrowArrayStream, out: ?*abi.ArrowDeviceArrayStream) c_int {
    const s = source orelse return code(status.fail(.invalid_argument, "source stream pointer is NULL", .{}));
    const target = out orelse {
        abd_array_stream_release(s);
        return code(status.fail(.invalid_argument, "out stream pointer is NULL", .{}));
    };
    return code(stream_convert.cpuAsDevice(s, target));
}

/// Moves `source` (a host-readable device stream) in; fills `out` with a
/// plain ArrowArrayStream over it.
export fn abd_stream_from_device(source: ?*abi.ArrowDeviceArrayStream, out: ?*abi.ArrowArrayStream) c_int {
    const s = source orelse return code(status.fail(.invalid_argument, "source stream pointer is NULL", .{}));
    const target = out orelse {
        abd_device_array_stream_release(s);
        return code(status.fail(.invalid_argument, "out stream pointer is NULL", .{}));
    };
    return code(stream_convert.deviceAsCpu(s, target));
}

// ---------------------------------------------------------------------------
// Async device streams: js_wake.zig, async/consumer.zig,
// async/producer.zig. Unless a comment says otherwise, these are called on
// the JS thread; the C peer only ever sees the handler, producer and task
// structs themselves.
// ---------------------------------------------------------------------------

const js_wake = @import("async/js_wake.zig");
const async_consumer = @import("async/consumer.zig");
const async_producer = @import("async/producer.zig");
const schema_copy = @import("export/schema_copy.zig");

/// Registers the threadsafe callback that wakes JS for a waiting object
/// (its argument is the object's token).
export fn abd_js_wake_set_notifier(notifier: ?js_wake.Notifier) void {
    js_wake.setNotifier(notifier);
}

/// Deep-copies `source` into `out` (the copy owns all its memory).
export fn abd_schema_copy(source: ?*const abi.ArrowSchema, out: ?*abi.ArrowSchema) c_int {
    const s = source orelse return code(status.fail(.invalid_argument, "source schema pointer is NULL", .{}));
    const target = out orelse return code(status.fail(.invalid_argument, "out schema pointer is NULL", .{}));
    return code(schema_copy.copy(s, target));
}

// --- This library as consumer ------------------------------------------------

/// A new consumer; its wakes carry `token`. `*out` holds JS's reference
/// (dropped by `abd_async_consumer_close`); the producer's reference is
/// dropped by the handler's release.
export fn abd_async_consumer_create(token: u32, out: ?*?*async_consumer.Consumer) c_int {
    const target = out orelse return code(status.fail(.invalid_argument, "out consumer pointer is NULL", .{}));
    return code(async_consumer.create(token, target));
}

/// The `ArrowAsyncDeviceStreamHandler*` to give to a producer. Valid until
/// the producer releases it.
export fn abd_async_consumer_handler(stream: *async_consumer.Consumer) *abi.ArrowAsyncDeviceStreamHandler {
    return &stream.handler;
}

/// Writes the consumer's state (async_consumer.StateWord) into `out`;
/// `arm != 0` first clears its pending wake (JS is about to wait).
export fn abd_async_consumer_poll(stream: *async_consumer.Consumer, out: [*]f64, arm: c_int) void {
    stream.poll(out[0..async_consumer.state_words], arm != 0);
}

/// Asks the producer for `n` more tasks. Returns 1 when the request was
/// made, 0 when the stream is over (ended, failed, cancelled, released).
export fn abd_async_consumer_request(stream: *async_consumer.Consumer, n: u32) c_int {
    if (n == 0) return 0;
    return @intFromBool(stream.request(n));
}

/// Takes the next queued task: extracts its array into `array` on this
/// thread and copies the stream schema into `schema` (both then belong to
/// the caller). The library's JS side asks for more itself; `words` (NULL,
/// or state-word room) receives the state after the take.
export fn abd_async_consumer_take(stream: *async_consumer.Consumer, schema: ?*abi.ArrowSchema, array: ?*abi.ArrowDeviceArray, words: ?[*]f64) c_int {
    const s = schema orelse return code(status.fail(.invalid_argument, "out schema pointer is NULL", .{}));
    const a = array orelse return code(status.fail(.invalid_argument, "out array pointer is NULL", .{}));
    const out: ?[]f64 = if (words) |w| w[0..async_consumer.state_words] else null;
    return code(stream.take(s, a, false, out));
}

/// Takes every queued task, up to `capacity`, in one call: each task is
/// extracted here and imported, with a copy of the stream schema, into a
/// new owner validated at `level` (0..3). `out` (room for 1 + 2 *
/// capacity words) receives the count, then per task the owner's address
/// (one reference, the caller's) and its metadata size (-1: none); see
/// async_consumer.takeMany. `arm != 0` first clears the pending wake (JS
/// waits if nothing was taken); `words` receives the state afterwards.
/// Returns the first failure after the tasks taken before it.
export fn abd_async_consumer_take_many(stream: *async_consumer.Consumer, level: c_int, out: ?[*]f64, capacity: u32, arm: c_int, words: ?[*]f64) c_int {
    const target = out orelse return code(status.fail(.invalid_argument, "out pointer is NULL", .{}));
    const lvl = levelFrom(level) orelse {
        target[0] = 0;
        return code(status.fail(.invalid_argument, "validation level {d} is not 0..3", .{level}));
    };
    if (arm != 0) stream.waker.clear();
    const result = stream.takeMany(lvl, target[0 .. 1 + 2 * @as(usize, capacity)], capacity);
    if (words) |w| stream.poll(w[0..async_consumer.state_words], false);
    return code(result);
}

/// How much news the producer sent so far (js_wake.Waker.news); any
/// thread, no lock: JS spins on it briefly before it sleeps.
export fn abd_async_consumer_news(stream: *async_consumer.Consumer) u32 {
    return stream.waker.news();
}

/// Waits up to `window_ns` (clamped as `abd_set_spin_ns`) for news past
/// `seen`, yielding the CPU meanwhile (js_wake.Waker.awaitNews); 1 if news came.
export fn abd_async_consumer_await_news(stream: *async_consumer.Consumer, seen: u32, window_ns: f64) c_int {
    return @intFromBool(stream.waker.awaitNews(seen, js_queue.clampSpin(window_ns)));
}

/// Address and length of one of the consumer's byte strings
/// (async_consumer.StringId) into `out[0..2]`; address 0 when absent.
export fn abd_async_consumer_string(stream: *async_consumer.Consumer, id: u32, out: [*]f64) void {
    const which = std.enums.fromInt(async_consumer.StringId, id) orelse {
        out[0] = 0;
        out[1] = 0;
        return;
    };
    const bytes = stream.string(which);
    out[0] = if (bytes) |b| @floatFromInt(@intFromPtr(b.ptr)) else 0;
    out[1] = if (bytes) |b| @floatFromInt(b.len) else 0;
}

/// Cancels the stream (idempotent): tells the producer, and extracts every
/// queued task with NULL.
export fn abd_async_consumer_cancel(stream: *async_consumer.Consumer) void {
    stream.cancel();
}

/// JS's last call: cancels unless the stream is over, and drops JS's
/// reference. `handed_out == 0` when no producer ever got the handler (it
/// is then released here).
export fn abd_async_consumer_close(stream: *async_consumer.Consumer, handed_out: c_int) void {
    stream.close(handed_out != 0);
}

// --- This library as producer ------------------------------------------------

/// A producer for `handler` (populating `handler->producer`), declaring
/// `device_type`, with additional_metadata copied from `blob`
/// (`metadata_len` bytes of binary-encoded metadata; NULL for none).
export fn abd_async_producer_create(handler: ?*abi.ArrowAsyncDeviceStreamHandler, device_type: i32, blob: ?[*]const u8, metadata_len: usize, token: u32, out: ?*?*async_producer.Producer) c_int {
    const target = out orelse return code(status.fail(.invalid_argument, "out producer pointer is NULL", .{}));
    const bytes: ?[]const u8 = if (blob) |m| m[0..metadata_len] else null;
    return code(async_producer.create(handler, device_type, bytes, token, target));
}

/// Writes the producer's state (async_producer.StateWord) into `out`;
/// `arm != 0` first clears its pending wake (JS is about to wait).
export fn abd_async_producer_poll(stream: *async_producer.Producer, out: [*]f64, arm: c_int) void {
    stream.poll(out[0..async_producer.state_words], arm != 0);
}

/// The address of the producer's published state words
/// (async_producer.Producer.published: StateWord, all but `wakes`), which
/// JS reads without a call between sends; valid until
/// abd_async_producer_release.
export fn abd_async_producer_published(stream: *async_producer.Producer) *const [async_producer.state_words]f64 {
    return &stream.published;
}

/// How much news (requests, cancel) the consumer sent so far
/// (js_wake.Waker.news); no lock: JS spins on it briefly before it sleeps.
export fn abd_async_producer_news(stream: *async_producer.Producer) u32 {
    return stream.waker.news();
}

/// Waits up to `window_ns` for news past `seen`, yielding the CPU
/// meanwhile (js_wake.Waker.awaitNews); 1 if news came.
export fn abd_async_producer_await_news(stream: *async_producer.Producer, seen: u32, window_ns: f64) c_int {
    return @intFromBool(stream.waker.awaitNews(seen, js_queue.clampSpin(window_ns)));
}

/// Calls on_schema with `schema` (moved to the consumer; released here if
/// the consumer left it). Returns the consumer's code.
export fn abd_async_producer_send_schema(stream: *async_producer.Producer, schema: *abi.ArrowSchema) c_int {
    return stream.sendSchema(schema);
}

/// Builds a task over JS memory (an export plan, export/array.zig) and
/// calls on_next_task with it; `*rc` receives the consumer's code. Needs a
/// credit (a requested, unsent task).
export fn abd_async_producer_send_plan(stream: *async_producer.Producer, plan: ?[*]const f64, plan_words: usize, keepalive_id: f64, blob: ?[*]const u8, rc: *c_int) c_int {
    const words: []const f64 = if (plan) |p| p[0..plan_words] else &.{};
    return code(stream.sendPlan(words, @intFromFloat(keepalive_id), blob, rc));
}

/// Moves `array` into a task and calls on_next_task with it; `*rc` receives
/// the consumer's code. On error `array` is left as it was.
export fn abd_async_producer_send_array(stream: *async_producer.Producer, array: ?*abi.ArrowDeviceArray, blob: ?[*]const u8, rc: *c_int) c_int {
    const a = array orelse return code(status.fail(.invalid_argument, "array pointer is NULL", .{}));
    return code(stream.sendArray(a, blob, rc));
}

/// Calls on_next_task(NULL): the end of the stream. Returns the consumer's code.
export fn abd_async_producer_send_end(stream: *async_producer.Producer) c_int {
    return stream.sendEnd();
}

/// Calls on_error(code, message, metadata).
export fn abd_async_producer_send_error(stream: *async_producer.Producer, error_code: c_int, message: ?[*:0]const u8, blob: ?[*]const u8) void {
    stream.sendError(error_code, message, blob);
}

/// Calls the handler's release, then frees the producer.
export fn abd_async_producer_release(stream: *async_producer.Producer) void {
    stream.releaseAndDestroy();
}

// ---------------------------------------------------------------------------
// Device streams from JS: JS-produced streams whose batches are
// arrays made elsewhere (device copies from toDevice, C producers' arrays),
// moved whole into get_next's `out`. JS thread only, as the other answers.
// See stream/export.zig `deliverArray` and schema_match.zig.
// ---------------------------------------------------------------------------

/// `abd_stream_export_create` with the stream's schema read from the C
/// `schema` (copied; the caller keeps it).
export fn abd_stream_export_create_from_schema(kind: c_int, device_type: i32, schema: ?*const abi.ArrowSchema, source_is_async: bool, js_key: f64, out: ?*anyopaque) c_int {
    const target = out orelse return code(status.fail(.invalid_argument, "out stream pointer is NULL", .{}));
    const s = schema orelse return code(status.fail(.invalid_argument, "schema pointer is NULL", .{}));
    const k = std.enums.fromInt(stream_export.Kind, kind) orelse return code(status.fail(.invalid_argument, "stream kind {d} is not 0 (array) or 1 (device)", .{kind}));
    return code(stream_export.createFromSchema(k, device_type, s, source_is_async, @intFromFloat(js_key), target));
}

/// Answers the producer's pending get_next by moving `array` (device type,
/// id and sync event included) into the consumer's `out`; `array` is left
/// released. `schema` (optional) must match the stream's. On failure the
/// stream fails with that error and `array` is left as it was.
export fn abd_stream_export_deliver_array(producer: *stream_export.Producer, schema: ?*const abi.ArrowSchema, array: ?*abi.ArrowDeviceArray) c_int {
    const a = array orelse return code(status.fail(.invalid_argument, "array pointer is NULL", .{}));
    return code(stream_export.deliverArray(producer, schema, a));
}

// ---------------------------------------------------------------------------
// Stream pulls in one call: get_next, validation and the owner
// snapshot a JS handle reads, for a stream read on the JS thread.
// ---------------------------------------------------------------------------

/// `abd_stream_import_next`, then `abd_owner_snapshot(owner, out, capacity,
/// 2)` of the new batch: `head[0]` is the owner (0 at the end), `head[1]`
/// the words its snapshot needs (0 at the end). The owner's reference (the
/// caller's) stays a plain one. When the snapshot did not fit, nothing was
/// written to `out`: call `abd_owner_snapshot` with room.
export fn abd_stream_import_next_snapshot(imported: *stream_import.Imported, level: c_int, out: [*]f64, capacity: u32, head: [*]f64) c_int {
    head[0] = 0;
    head[1] = 0;
    const lvl = levelFrom(level) orelse return code(status.fail(.invalid_argument, "validation level {d} is not 0..3", .{level}));
    var owner: ?*Owner = null;
    const s = stream_import.next(imported, lvl, &owner);
    if (s != .ok) return code(s);
    if (owner) |o| {
        owner_mod.noteHanded(o);
        head[0] = @floatFromInt(@intFromPtr(o));
        head[1] = @floatFromInt(abd_owner_snapshot(o, out, capacity, 2));
    }
    return code(s);
}

// ---------------------------------------------------------------------------
// ADBC: loading drivers and calling them (adbc/). The TS layer owns every
// object it makes here and frees it once.
// ---------------------------------------------------------------------------

/// Opens the driver library at `path` and initializes it through
/// `entrypoint` (NULL: AdbcDriverInit) at ADBC 1.1.0, else 1.0.0. On
/// success `*out` is the driver (its function table at offset 0, the
/// revision at `abd_adbc_driver_version`); free it with
/// `abd_adbc_driver_unload`, after every object made with it is released.
export fn abd_adbc_driver_load(path: ?[*:0]const u8, entrypoint: ?[*:0]const u8, out: ?*?*adbc_driver.Driver) c_int {
    const o = out orelse return code(status.fail(.invalid_argument, "out pointer is NULL", .{}));
    o.* = null;
    const p = path orelse return code(status.fail(.invalid_argument, "path is NULL", .{}));
    o.* = adbc_driver.load(p, entrypoint) orelse return code(status.lastStatus());
    return code(.ok);
}

export fn abd_adbc_driver_version(driver: *const adbc_driver.Driver) c_int {
    return driver.version;
}

/// Calls the driver's release once and frees it.
export fn abd_adbc_driver_unload(driver: ?*adbc_driver.Driver) void {
    adbc_driver.unload(driver orelse return);
}

/// A zeroed AdbcDatabase / AdbcConnection / AdbcStatement (at offset 0) with
/// its guard. Free with `abd_adbc_object_free` after the driver released it.
export fn abd_adbc_object_new() ?*adbc_call.Object {
    return adbc_call.objectNew();
}

export fn abd_adbc_object_free(object: ?*adbc_call.Object) void {
    adbc_call.objectFree(object orelse return);
}

fn wordsFrom(words: ?[*]const f64, n: u32, out: *[adbc_call.max_words]usize) ?[]const usize {
    if (n == 0 or n > adbc_call.max_words) {
        _ = status.fail(.invalid_argument, "an ADBC call takes 1 to {d} arguments, not {d}", .{ adbc_call.max_words, n });
        return null;
    }
    const w = words orelse {
        _ = status.fail(.invalid_argument, "words pointer is NULL", .{});
        return null;
    };
    for (0..n) |i| {
        const value = w[i];
        if (!(value >= -9007199254740992.0 and value <= 9007199254740992.0) or @trunc(value) != value) {
            _ = status.fail(.invalid_argument, "ADBC call argument {d} is {d}, not an integer or address", .{ i, value });
            return null;
        }
        out[i] = @bitCast(@as(i64, @intFromFloat(value)));
    }
    return out[0..n];
}

/// Enters `guard` (NULL: none), calls `function` with the `n` words (f64:
/// addresses and integers, exact to 2^53) as its integer arguments, and
/// leaves the guard. Returns the AdbcStatusCode (0..255), or -1 with
/// `abd_last_error` set when the guard is held by another call or the
/// arguments are bad (nothing was called then).
export fn abd_adbc_call(guard: ?*adbc_call.Object, function: ?*const anyopaque, words: ?[*]const f64, n: u32) c_int {
    const f = function orelse {
        _ = status.fail(.invalid_argument, "ADBC function pointer is NULL", .{});
        return -1;
    };
    var buffer: [adbc_call.max_words]usize = undefined;
    const w = wordsFrom(words, n, &buffer) orelse return -1;
    if (guard) |g| if (!adbc_call.enter(g)) return -1;
    const result = adbc_call.callWords(f, w);
    if (guard) |g| adbc_call.leave(g);
    return result;
}

/// `abd_adbc_call` for the Set*OptionDouble shape: `function(handle, key,
/// value, error)`.
export fn abd_adbc_call_double(guard: ?*adbc_call.Object, function: ?*const anyopaque, handle: ?*anyopaque, key: ?[*:0]const u8, value: f64, err: ?*adbc_abi.AdbcError) c_int {
    const f = function orelse {
        _ = status.fail(.invalid_argument, "ADBC function pointer is NULL", .{});
        return -1;
    };
    if (guard) |g| if (!adbc_call.enter(g)) return -1;
    const result = adbc_call.callDouble(f, @intFromPtr(handle), @intFromPtr(key), value, @intFromPtr(err));
    if (guard) |g| adbc_call.leave(g);
    return result;
}

/// `abd_adbc_call` on a thread of its own: the guard is entered now (NULL
/// on refusal, with `abd_last_error`), left when the driver returns; then
/// the calling JS thread's queue gets (adbc_call_done, `key`, job), and JS
/// takes the status with `abd_adbc_job_finish`, which frees the job. The
/// memory the words point to must stay valid until then.
export fn abd_adbc_call_async(guard: ?*adbc_call.Object, function: ?*const anyopaque, words: ?[*]const f64, n: u32, key: f64) ?*adbc_call.Job {
    const g = guard orelse {
        _ = status.fail(.invalid_argument, "guard is NULL", .{});
        return null;
    };
    const f = function orelse {
        _ = status.fail(.invalid_argument, "ADBC function pointer is NULL", .{});
        return null;
    };
    var buffer: [adbc_call.max_words]usize = undefined;
    const w = wordsFrom(words, n, &buffer) orelse return null;
    if (!(key >= 0 and key <= 9007199254740992.0)) {
        _ = status.fail(.invalid_argument, "key {d} is not a non-negative integer", .{key});
        return null;
    }
    return adbc_call.callAsync(g, f, w, @intFromFloat(key));
}

export fn abd_adbc_job_finish(job: *adbc_call.Job) c_int {
    return adbc_call.finish(job);
}

/// Zeroes `err` for a call into `driver` (vendor_code set to
/// ADBC_ERROR_VENDOR_CODE_PRIVATE_DATA for a 1.1.0 driver).
export fn abd_adbc_error_reset(driver: *const adbc_driver.Driver, err: *adbc_abi.AdbcError) void {
    adbc_call.errorReset(driver, err);
}

/// Reads `err` (set by a call into `driver`) into a malloc'd blob (layout in
/// adbc/call.zig `takeError`; its size in `size_out[0]`; free with
/// `abd_free`), releases the error exactly once and resets it.
export fn abd_adbc_error_take(driver: *const adbc_driver.Driver, err: *adbc_abi.AdbcError, size_out: [*]f64) ?[*]u8 {
    var blob: ?[*]u8 = null;
    const size = adbc_call.takeError(driver, err, &blob);
    size_out[0] = @floatFromInt(size);
    return blob;
}

/// AdbcErrors released by `abd_adbc_error_take` since the process started.
export fn abd_adbc_errors_released() f64 {
    return @floatFromInt(adbc_call.errors_released.load(.monotonic));
}

/// Calls refused by `object`'s guard since it was made.
export fn abd_adbc_object_refused(object: *const adbc_call.Object) f64 {
    return @floatFromInt(@atomicLoad(u64, &object.refused, .monotonic));
}

/// Moves `schema` (a driver's) into a new ArrowArrayStream at `out` that
/// has that schema and no batches; its release releases the schema.
export fn abd_adbc_schema_stream(schema: ?*abi.ArrowSchema, out: ?*abi.ArrowArrayStream) c_int {
    const s = schema orelse return code(status.fail(.invalid_argument, "schema pointer is NULL", .{}));
    const o = out orelse return code(status.fail(.invalid_argument, "out pointer is NULL", .{}));
    if (s.release == null) return code(status.fail(.released, "the schema is released", .{}));
    if (!adbc_schema_stream.wrap(s, o)) return code(status.fail(.out_of_memory, "out of memory for a schema stream", .{}));
    return code(.ok);
}

/// Calls `partitions->release` once (if set) and marks it released.
export fn abd_adbc_partitions_release(partitions: ?*adbc_abi.AdbcPartitions) void {
    const p = partitions orelse return;
    if (p.release) |release| release(p);
    p.release = null;
}
