//! Moving Arrow arrays between host and device memory.
//!
//! - `toDevice` copies every buffer of a host array (moved in) into one
//!   device allocation and exports an ArrowDeviceArray over it, whose
//!   `sync_event` points to an event recorded after the copies.
//! - `toHost` copies an imported device array back: it waits on the
//!   producer's event, learns the sizes only the device knows (last
//!   offsets, variadic buffer sizes) with one batch of small copies and one
//!   synchronization, then copies every buffer and exports a CPU array over
//!   the copies. Arrays the host can already read (CPU, or host-visible
//!   device memory after its event) become zero-copy CPU views instead.
//!
//! Device memory is never dereferenced here: every byte of it the host
//! needs goes through the runtime's copy functions.
//!
//! Ownership and threads: see each function. Release callbacks of what
//! this module exports may run on any thread; they wait for the copies
//! they own to finish before freeing anything.

const std = @import("std");
const abi = @import("../core/abi.zig");
const status = @import("../core/status.zig");
const counters = @import("../core/counters.zig");
const validate = @import("../validate/validate.zig");
const format = @import("../core/format.zig");
const owner_mod = @import("../import/owner.zig");
const export_array = @import("../export/array.zig");
const schema_copy = @import("../export/schema_copy.zig");
const runtime = @import("runtime.zig");
const releaser = @import("releaser.zig");
const debug = @import("debug.zig");
const staging = @import("staging.zig");
const host_pool = @import("host_pool.zig");
const pool = @import("pool.zig");
const Status = status.Status;
const fail = status.fail;
const Owner = owner_mod.Owner;
const Runtime = runtime.Runtime;

/// Buffers are placed at this alignment inside one allocation (Arrow's
/// recommended 64-byte alignment).
pub const buffer_alignment = 64;

/// Where each buffer of a node table goes in one block of `total` bytes:
/// `offsets[i]` for buffers with a positive size.
const Placement = struct {
    offsets: []usize,
    total: usize,

    fn init(sizes: []const i64) ?Placement {
        const offsets = std.heap.c_allocator.alloc(usize, sizes.len) catch return null;
        var total: usize = 0;
        for (sizes, offsets) |size, *offset| {
            offset.* = 0;
            if (size <= 0) continue;
            total = std.mem.alignForward(usize, total, buffer_alignment);
            offset.* = total;
            total += @intCast(size);
        }
        return .{ .offsets = offsets, .total = total };
    }

    fn deinit(self: *Placement) void {
        std.heap.c_allocator.free(self.offsets);
    }

    /// The address buffer `i` gets in a block at `base`: NULL stays NULL,
    /// an empty buffer points at the block's start (valid, never read).
    fn address(self: *const Placement, base: usize, original: usize, size: i64, i: usize) usize {
        if (original == 0) return 0;
        if (size <= 0) return base;
        return base + self.offsets[i];
    }
};

/// The staging blocks one transfer holds (staging.zig): none (the pageable
/// path), one, or two for a batch larger than a block. The packed batch
/// (`Placement`, gaps included) goes through them in block-sized chunks,
/// chunk `k` in block `k % count`; a block is packed again only after the
/// copy of its previous chunk, waited on through the block's event, so
/// that with two blocks the host packs or unpacks one chunk while the copy
/// engine moves the other.
const Stage = struct {
    blocks: [2]?*staging.Block = .{ null, null },
    count: usize = 0,
    chunks: usize = 0,

    fn acquire(rt: *Runtime, device: i64, total: usize) Stage {
        var stage: Stage = .{};
        const first = staging.acquire(rt, device, @min(total, staging.block_bytes)) orelse return stage;
        stage.blocks[0] = first;
        stage.count = 1;
        stage.chunks = std.math.divCeil(usize, total, staging.block_bytes) catch unreachable;
        if (stage.chunks > 1) {
            if (staging.acquire(rt, device, staging.block_bytes)) |second| {
                stage.blocks[1] = second;
                stage.count = 2;
            }
        }
        std.debug.assert(stage.chunks >= 1 and stage.count <= stage.chunks);
        return stage;
    }

    fn block(self: *const Stage, k: usize) *staging.Block {
        std.debug.assert(self.count > 0 and k < self.chunks);
        return self.blocks[k % self.count].?;
    }

    /// Bytes [lo, hi) of the packed batch that chunk `k` carries.
    fn range(self: *const Stage, k: usize, total: usize) [2]usize {
        _ = self;
        const lo = k * staging.block_bytes;
        return .{ lo, @min(total, lo + staging.block_bytes) };
    }

    /// Records the event of chunk `k`'s block after its copies (only when a
    /// block carries several chunks: otherwise nothing waits on it).
    fn recordAfter(self: *const Stage, rt: *Runtime, device: i64, stream: runtime.Stream, k: usize) Status {
        if (self.chunks == 1) return .ok;
        const b = self.block(k);
        if (b.event == null) {
            // The block's own event, uncounted like the block (staging.zig).
            const created = rt.ops.eventCreate(@intCast(device), &b.event);
            if (created != .ok) return created;
        }
        return rt.eventRecord(device, b.event, stream);
    }

    /// Waits for the copies recorded last on chunk `k`'s block.
    fn waitFor(self: *const Stage, rt: *Runtime, device: i64, k: usize) Status {
        return rt.eventSynchronize(device, self.block(k).event);
    }

    /// Gives every block back now (nothing in flight touches them).
    fn giveBack(self: *const Stage) void {
        for (self.blocks[0..self.count]) |b| staging.giveBack(b.?);
    }

    /// Gives every block back once the copies queued on `stream` are done
    /// (a host callback that only links it into the pool: no driver call).
    fn giveBackAfter(self: *const Stage, rt: *Runtime, device: i64, stream: runtime.Stream) void {
        for (self.blocks[0..self.count]) |b| {
            if (rt.launchHostFn(device, stream, staging.giveBackCallback, b.?) != .ok) {
                _ = rt.streamSynchronize(device, stream);
                staging.giveBack(b.?);
            }
        }
    }
};

/// The part [s, e) of buffer `i` (placed at `offsets[i]`) inside the packed
/// bytes [lo, hi), or null.
fn overlap(placement: *const Placement, size: i64, i: usize, lo: usize, hi: usize) ?[2]usize {
    if (size <= 0) return null;
    const start = placement.offsets[i];
    const end = start + @as(usize, @intCast(size));
    const s = @max(lo, start);
    const e = @min(hi, end);
    if (s >= e) return null;
    return .{ s, e };
}

/// Writes an export_array plan for the tree `table` describes, with buffer
/// `i` at `addresses[i]`.
fn writePlan(table: *const validate.NodeTable, addresses: []const usize, plan: *std.ArrayList(f64), node: usize) Status {
    const n_buffers: usize = @intFromFloat(table.get(node, .n_buffers));
    const n_children: usize = @intFromFloat(table.get(node, .n_children));
    const first_buffer: usize = @intFromFloat(table.get(node, .first_buffer));
    const first_child: usize = @intFromFloat(table.get(node, .first_child));
    const dictionary = table.get(node, .dictionary);
    const header = [export_array.plan_header_words]f64{
        table.get(node, .length),     table.get(node, .null_count),
        table.get(node, .offset),     @floatFromInt(n_buffers),
        @floatFromInt(n_children),    if (dictionary >= 0) 1 else 0,
    };
    plan.appendSlice(std.heap.c_allocator, &header) catch return fail(.out_of_memory, "out of memory planning a copy", .{});
    for (addresses[first_buffer..][0..n_buffers]) |a| {
        plan.append(std.heap.c_allocator, @floatFromInt(a)) catch return fail(.out_of_memory, "out of memory planning a copy", .{});
    }
    for (0..n_children) |i| {
        const s = writePlan(table, addresses, plan, first_child + i);
        if (s != .ok) return s;
    }
    if (dictionary >= 0) return writePlan(table, addresses, plan, @intFromFloat(dictionary));
    return .ok;
}

/// Builds `out` over `addresses` with the shape of `table`.
fn buildFromTable(table: *const validate.NodeTable, addresses: []const usize, options: export_array.Options, device: export_array.DeviceFields, out: *abi.ArrowDeviceArray) Status {
    var plan: std.ArrayList(f64) = .empty;
    defer plan.deinit(std.heap.c_allocator);
    const planned = writePlan(table, addresses, &plan, 0);
    if (planned != .ok) return planned;
    return export_array.buildDevice(plan.items, options, device, out);
}

/// The thread's last error, saved across cleanup calls that may overwrite
/// it (a failed runtime call during cleanup must not hide the failure that
/// made the cleanup necessary).
const SavedError = struct {
    code: Status,
    text: [status.message_capacity]u8 = undefined,
    len: usize = 0,

    fn capture(code: Status) SavedError {
        var saved: SavedError = .{ .code = code };
        const message = std.mem.span(status.lastMessage());
        saved.len = @min(message.len, saved.text.len);
        @memcpy(saved.text[0..saved.len], message[0..saved.len]);
        return saved;
    }

    fn restore(self: *const SavedError) Status {
        return fail(self.code, "{s}", .{self.text[0..self.len]});
    }
};

/// Waits for `stream` after a failure, so that no copy still in flight
/// writes into memory about to be freed; keeps the failure's message.
fn drainAfter(code: Status, rt: *Runtime, device: i64, stream: runtime.Stream) Status {
    const saved = SavedError.capture(code);
    _ = rt.streamSynchronize(device, stream);
    return saved.restore();
}

// ---------------------------------------------------------------------------
// Host to device
// ---------------------------------------------------------------------------

/// The private state of an array `toDevice` exported. Freed by the tree's
/// last release, on whatever thread runs it.
const DeviceExport = struct {
    rt: *Runtime,
    device_id: i64,
    memory: runtime.MemoryKind,
    base: usize,
    /// Set when `base` is a range of the device pool (pool.zig) rather
    /// than an allocation of its own.
    range: ?pool.Range,
    event: *runtime.EventBox,
};

/// Gives back the device memory of a `toDevice` copy: its pool range, or
/// its own allocation. Only once nothing queued touches it.
fn releaseDeviceMemory(rt: *Runtime, device: i64, memory: runtime.MemoryKind, base: usize, range: ?pool.Range) void {
    if (range) |r| pool.end(r) else _ = rt.free(device, memory, base);
}

fn finishDeviceExport(context: ?*anyopaque) callconv(.c) void {
    const state: *DeviceExport = @ptrCast(@alignCast(context.?));
    const rt = state.rt; // `state` is freed before the hold ends
    const held = rt.ops.hold(@intCast(state.device_id));
    defer if (held) rt.ops.unhold();
    // Nothing is freed before the copies into it are done.
    const waited = state.rt.eventSynchronize(state.device_id, state.event.handle);
    releaseDeviceMemory(state.rt, state.device_id, state.memory, state.base, state.range);
    // A completed event is kept for the next copy; any other is destroyed.
    if (waited == .ok) state.event.recycle() else _ = state.event.destroy();
    std.heap.c_allocator.destroy(state);
}

/// Runs on the driver's callback thread once the copies out of the host
/// source are done. The source's release is the producer's code and may
/// call the driver, which a stream callback must not: the job reserved
/// before the launch (context) is posted to the releaser thread, which runs
/// it. Posting cannot fail, so nothing ever runs here.
fn releaseSourceAfterCopies(context: ?*anyopaque) callconv(.c) void {
    const job: *releaser.Job = @ptrCast(@alignCast(context.?));
    job.post();
}

fn releaseSource(context: ?*anyopaque) callconv(.c) void {
    const source: *Owner = @ptrCast(@alignCast(context.?));
    source.release();
}

pub const ToDeviceOptions = struct {
    /// CUDA, CUDA_HOST, CUDA_MANAGED, ROCM or ROCM_HOST: the runtime and the
    /// kind of memory the copy goes to.
    device_type: abi.DeviceType,
    device_id: i64,
    /// Null: the runtime's default stream.
    stream: runtime.Stream = null,
};

/// Moves `schema` + `array` in (they are left released, success or not),
/// copies every buffer into one allocation of `options.device_type` memory
/// on `options.device_id` (asynchronously, on `options.stream`), and exports
/// the copy into `out_schema` + `out_array` (the caller's structs), with
/// `sync_event` pointing to an event recorded after the copies.
///
/// The source must be host-readable. It is released as soon as the copies
/// out of it are done, on this library's releaser thread (releaser.zig),
/// while the device copy lives on. The export's release (any thread) waits
/// for its event, frees the device memory and destroys the event.
pub fn toDevice(schema: ?*abi.ArrowSchema, array: ?*abi.ArrowDeviceArray, options: ToDeviceOptions, out_schema: *abi.ArrowSchema, out_array: *abi.ArrowDeviceArray) Status {
    var imported: ?*Owner = null;
    const moved = owner_mod.import(schema, array, .default, &imported);
    if (moved != .ok) return moved;
    const source = imported.?;
    std.debug.assert(source.refs.load(.monotonic) == 1); // a new owner: ours alone
    // From here on `source` is released exactly once on every path.
    const found = runtime.require(options.device_type);
    if (found[0] != .ok) {
        source.release();
        return found[0];
    }
    const rt = found[1].?;
    const device = options.device_id;
    const stream = options.stream;
    if (!source.host_readable) {
        const where = abi.deviceTypeName(source.array.device_type) orelse "an unknown device";
        source.release();
        return fail(.invalid_argument, "cannot copy an array on {s} to {s}: its buffers are not readable by the host (copy it to the host first)", .{ where, rt.name });
    }
    const checked = rt.checkDevice(device);
    if (checked != .ok) {
        source.release();
        return checked;
    }
    // One enter and leave for every driver call of this copy.
    const held = rt.ops.hold(@intCast(device));
    defer if (held) rt.ops.unhold();
    const memory = rt.memoryKindOf(options.device_type);
    const table = &source.table;
    const n = table.buffers.items.len / validate.buffer_words;

    const sizes = std.heap.c_allocator.alloc(i64, n) catch {
        source.release();
        return fail(.out_of_memory, "out of memory planning a copy of {d} buffers", .{n});
    };
    defer std.heap.c_allocator.free(sizes);
    for (sizes, 0..) |*size, i| {
        size.* = table.bufferSize(i);
        // A host-readable tree validated at the default level has every size.
        if (size.* < 0) {
            source.release();
            return fail(.internal, "buffer {d} of a host array has no known size", .{i});
        }
    }
    var placement = Placement.init(sizes) orelse {
        source.release();
        return fail(.out_of_memory, "out of memory planning a copy of {d} buffers", .{n});
    };
    defer placement.deinit();

    // Small batches take a range of a pooled device block (pool.zig).
    const range: ?pool.Range = if (memory == .device) pool.acquire(rt, device, .device, @max(placement.total, buffer_alignment)) else null;
    var base: usize = if (range) |r| r.address else 0;
    if (range == null) {
        const allocated = rt.alloc(device, memory, @max(placement.total, buffer_alignment), &base);
        if (allocated != .ok) {
            source.release();
            return allocated;
        }
    }
    // Ordinary host memory going to device memory is packed into a pinned
    // staging block and moved with one asynchronous copy (staging.zig);
    // (in block-sized chunks when larger than a block); pinned sources (by
    // device type, or CPU arrays over pinned or registered memory), pinned
    // or managed targets, and batches arriving while every block is lent
    // are copied buffer by buffer from where they are.
    // A small batch is packed into a range of the pinned pool (pool.zig)
    // rather than a whole staging block.
    const stageable = memory == .device and source.array.device_type == abi.device_cpu and !alreadyPinned(rt, table, sizes);
    const small: ?*pool.Range = if (stageable) stagingRange(rt, device, placement.total) else null;
    var stage: Stage = if (stageable and small == null) Stage.acquire(rt, device, placement.total) else .{};
    var event: ?*runtime.EventBox = null;
    const result = copyAndExport(rt, device, memory, stream, source, sizes, &placement, base, range, small, &stage, options.device_type, &event, out_array);
    if (result != .ok) {
        const saved = SavedError.capture(result);
        _ = rt.streamSynchronize(device, stream);
        if (event) |e| _ = e.destroy();
        releaseDeviceMemory(rt, device, memory, base, range);
        if (small) |r| endStagingRange(r);
        stage.giveBack();
        source.release();
        return saved.restore();
    }
    // The export no longer needs the source's schema: it moves to the
    // caller, and the source keeps only its array.
    out_schema.* = source.schema;
    source.schema.release = null;
    if (small) |r| {
        // The range ends once the copy out of it is done (a host callback
        // that calls no driver function). The source was read by the host
        // memcpys into the range: it goes now, after this call's last
        // driver call (its release is the producer's code).
        if (rt.launchHostFn(device, stream, endStagingRangeCallback, r) != .ok) {
            _ = rt.streamSynchronize(device, stream);
            endStagingRange(r);
        }
        source.release();
    } else if (stage.count > 0) {
        // The blocks come back once the copies out of them are done; the
        // source, read by the host memcpys into them, goes now.
        stage.giveBackAfter(rt, device, stream);
        source.release();
    } else {
        // Without a reserved job or a launched callback, this thread waits
        // for the copies and releases the source itself.
        const job = releaser.reserve(releaseSource, source);
        const launched = if (job) |j| rt.launchHostFn(device, stream, releaseSourceAfterCopies, j) == .ok else false;
        if (!launched) {
            if (job) |j| j.cancel();
            _ = rt.streamSynchronize(device, stream);
            source.release();
        }
    }
    status.clear();
    return .ok;
}

/// A range of the pinned pool for staging `bytes`, boxed for a host
/// callback's context, or null (too large, or none to be had).
fn stagingRange(rt: *Runtime, device: i64, bytes: usize) ?*pool.Range {
    if (bytes == 0) return null;
    const r = pool.acquire(rt, device, .pinned, bytes) orelse return null;
    const box = std.heap.c_allocator.create(pool.Range) catch {
        pool.end(r);
        return null;
    };
    box.* = r;
    return box;
}

fn endStagingRange(box: *pool.Range) void {
    pool.end(box.*);
    std.heap.c_allocator.destroy(box);
}

/// A driver host callback (`launchHostFn`) that ends a staging range.
fn endStagingRangeCallback(context: ?*anyopaque) callconv(.c) void {
    endStagingRange(@ptrCast(@alignCast(context.?)));
}

/// Whether a CPU array's first non-empty buffer is memory the runtime
/// already knows (pinned, registered or managed): one pointer query. A
/// failed query counts as ordinary memory.
fn alreadyPinned(rt: *Runtime, table: *const validate.NodeTable, sizes: []const i64) bool {
    for (sizes, 0..) |size, i| {
        if (size <= 0) continue;
        var info: runtime.PointerInfo = .{};
        if (rt.pointerQuery(table.bufferAddress(i), &info) != .ok) {
            status.clear();
            return false;
        }
        return info.kind != .host;
    }
    return false;
}

fn copyAndExport(rt: *Runtime, device: i64, memory: runtime.MemoryKind, stream: runtime.Stream, source: *Owner, sizes: []const i64, placement: *const Placement, base: usize, range: ?pool.Range, small: ?*pool.Range, stage: *const Stage, device_type: abi.DeviceType, event_out: *?*runtime.EventBox, out_array: *abi.ArrowDeviceArray) Status {
    const table = &source.table;
    const addresses = std.heap.c_allocator.alloc(usize, sizes.len) catch return fail(.out_of_memory, "out of memory planning a copy", .{});
    defer std.heap.c_allocator.free(addresses);
    var box: *runtime.EventBox = undefined;
    const created = runtime.EventBox.createReused(rt, device, &box);
    if (created != .ok) return created;
    event_out.* = box;
    // The event is recorded after the copies, so that it fires once the
    // data is there (the debug mistake records it before them).
    const early = debug.makes(.@"event-before-copies");
    if (early) {
        const recorded = rt.eventRecord(device, box.handle, stream);
        if (recorded != .ok) return recorded;
    }
    for (sizes, 0..) |size, i| {
        const original = table.bufferAddress(i);
        addresses[i] = placement.address(base, original, size, i);
        if (size <= 0 or stage.count > 0) continue;
        if (small) |r| {
            const from: [*]const u8 = @ptrFromInt(original);
            const to: [*]u8 = @ptrFromInt(r.address + placement.offsets[i]);
            @memcpy(to[0..@intCast(size)], from[0..@intCast(size)]);
            continue;
        }
        const copied = rt.copy(device, .host_to_device, addresses[i], original, @intCast(size), stream, true);
        if (copied != .ok) return copied;
    }
    // Packed: one copy of the whole batch, gaps between buffers included.
    if (small) |r| {
        const copied = rt.copy(device, .host_to_device, base, r.address, placement.total, stream, true);
        if (copied != .ok) return copied;
    }
    // Staged: one copy per chunk, gaps between buffers included.
    for (0..stage.chunks) |k| {
        const lo, const hi = stage.range(k, placement.total);
        if (k >= stage.count) {
            const waited = stage.waitFor(rt, device, k);
            if (waited != .ok) return waited;
        }
        const block = stage.block(k);
        for (sizes, 0..) |size, i| {
            const s, const e = overlap(placement, size, i, lo, hi) orelse continue;
            const from: [*]const u8 = @ptrFromInt(table.bufferAddress(i) + (s - placement.offsets[i]));
            const to: [*]u8 = @ptrFromInt(block.address + (s - lo));
            @memcpy(to[0 .. e - s], from[0 .. e - s]);
        }
        const copied = rt.copy(device, .host_to_device, base + lo, block.address, hi - lo, stream, true);
        if (copied != .ok) return copied;
        const recorded = stage.recordAfter(rt, device, stream, k);
        if (recorded != .ok) return recorded;
    }
    if (!early) {
        const recorded = rt.eventRecord(device, box.handle, stream);
        if (recorded != .ok) return recorded;
    }

    const state = std.heap.c_allocator.create(DeviceExport) catch return fail(.out_of_memory, "out of memory exporting a device array", .{});
    state.* = .{
        .rt = rt,
        .device_id = device,
        .memory = memory,
        .base = base,
        .range = range,
        .event = box,
    };
    const built = buildFromTable(table, addresses, .{ .on_free = finishDeviceExport, .on_free_context = state }, .{
        .device_type = device_type,
        .device_id = device,
        .sync_event = box.syncEvent(),
    }, out_array);
    if (built != .ok) {
        std.heap.c_allocator.destroy(state);
        return built;
    }
    return .ok;
}

// ---------------------------------------------------------------------------
// Device to host
// ---------------------------------------------------------------------------

/// Zero-copy CPU view of a host-readable owner: holds one owner reference
/// until the view's last struct is released.
fn finishHostView(context: ?*anyopaque) callconv(.c) void {
    const owner: *Owner = @ptrCast(@alignCast(context.?));
    counters.add(.live_reexports, -1);
    owner.release();
}

fn hostView(owner: *Owner, out_schema: *abi.ArrowSchema, out_array: *abi.ArrowDeviceArray) Status {
    const table = &owner.table;
    const n = table.buffers.items.len / validate.buffer_words;
    const addresses = std.heap.c_allocator.alloc(usize, n) catch return fail(.out_of_memory, "out of memory planning a host view", .{});
    defer std.heap.c_allocator.free(addresses);
    for (addresses, 0..) |*a, i| a.* = table.bufferAddress(i);
    var schema: abi.ArrowSchema = .empty;
    const copied = schema_copy.copy(&owner.schema, &schema);
    if (copied != .ok) return copied;
    owner.retain(1);
    counters.add(.live_reexports, 1);
    const built = buildFromTable(table, addresses, .{ .on_free = finishHostView, .on_free_context = owner }, .{}, out_array);
    if (built != .ok) {
        counters.add(.live_reexports, -1);
        owner.release();
        schema.release.?(&schema);
        return built;
    }
    out_schema.* = schema;
    return .ok;
}

/// A small read of device memory that decides a buffer's size.
const Probe = struct {
    /// Offsets buffer entry (bytes buffers) or the whole variadic sizes
    /// buffer (view arrays).
    source: usize,
    bytes: usize,
    /// Where in the scratch block it lands.
    at: usize,
};

/// A host copy of the device bytes [device, device + size), already made:
/// sizes are read from it instead of from the device.
const Mirror = struct { device: usize, host: usize, size: usize };

/// Sizes of every buffer of `table`, reading from the device what only the
/// device knows: one batch of copies, one synchronization (or, given a
/// `mirror` of the bytes, no driver call).
fn resolveSizes(rt: *Runtime, device: i64, stream: runtime.Stream, table: *const validate.NodeTable, sizes: []i64, mirror: ?Mirror) Status {
    for (sizes, 0..) |*size, i| size.* = table.bufferSize(i);
    var probes: std.ArrayList(Probe) = .empty;
    defer probes.deinit(std.heap.c_allocator);
    // Per buffer with an unknown size: the probe that answers it.
    const answer = std.heap.c_allocator.alloc(usize, sizes.len) catch return fail(.out_of_memory, "out of memory sizing buffers", .{});
    defer std.heap.c_allocator.free(answer);
    var scratch_bytes: usize = 0;
    for (0..table.nodeCount()) |node| {
        const n_buffers: usize = @intFromFloat(table.get(node, .n_buffers));
        const first: usize = @intFromFloat(table.get(node, .first_buffer));
        var sizes_probe: ?usize = null;
        for (first..first + n_buffers) |b| {
            if (sizes[b] >= 0) continue;
            const kind: format.BufferKind = @enumFromInt(@as(u8, @intFromFloat(table.buffers.items[b * validate.buffer_words + @intFromEnum(validate.BufferWord.kind)])));
            const probe: Probe = switch (kind) {
                .bytes => blk: {
                    // offsets[offset + length] of this node's offsets buffer.
                    const offsets = first + 1;
                    const width: usize = @intFromFloat(table.buffers.items[offsets * validate.buffer_words + @intFromEnum(validate.BufferWord.element_bytes)]);
                    const slot: usize = @intFromFloat(table.get(node, .offset) + table.get(node, .length));
                    const address = table.bufferAddress(offsets);
                    if (address == 0) {
                        sizes[b] = 0;
                        continue;
                    }
                    break :blk .{ .source = address + slot * width, .bytes = width, .at = 0 };
                },
                .variadic_bytes => blk: {
                    if (sizes_probe) |p| {
                        answer[b] = p;
                        continue;
                    }
                    const sizes_buffer = first + n_buffers - 1;
                    break :blk .{ .source = table.bufferAddress(sizes_buffer), .bytes = @intCast(table.bufferSize(sizes_buffer)), .at = 0 };
                },
                else => return fail(.internal, "buffer {d} of node {d} has an unknown size but is a {s} buffer", .{ b - first, node, @tagName(kind) }),
            };
            var placed = probe;
            placed.at = std.mem.alignForward(usize, scratch_bytes, 8);
            scratch_bytes = placed.at + placed.bytes;
            answer[b] = probes.items.len;
            if (kind == .variadic_bytes) sizes_probe = probes.items.len;
            probes.append(std.heap.c_allocator, placed) catch return fail(.out_of_memory, "out of memory sizing buffers", .{});
        }
    }
    if (probes.items.len == 0) return .ok;

    const scratch = std.heap.c_allocator.alignedAlloc(u8, .@"8", scratch_bytes) catch return fail(.out_of_memory, "out of memory sizing buffers", .{});
    // After a failed synchronization the copies may still be in flight: the
    // scratch is then leaked rather than freed under a copy engine.
    var scratch_in_flight = false;
    defer if (!scratch_in_flight) std.heap.c_allocator.free(scratch);
    for (probes.items) |probe| {
        if (probe.source == 0) return fail(.invalid_layout, "a variadic sizes buffer is NULL", .{});
        if (mirror) |m| {
            if (probe.source < m.device or probe.source + probe.bytes > m.device + m.size)
                return fail(.invalid_layout, "a size at 0x{x} lies outside the device range of its array's other buffers", .{probe.source});
            const from: [*]const u8 = @ptrFromInt(m.host + (probe.source - m.device));
            @memcpy(scratch[probe.at..][0..probe.bytes], from[0..probe.bytes]);
            continue;
        }
        const copied = rt.copy(device, .device_to_host, @intFromPtr(scratch.ptr) + probe.at, probe.source, probe.bytes, stream, true);
        if (copied != .ok) return drainAfter(copied, rt, device, stream);
    }
    if (mirror == null) {
        const synced = rt.streamSynchronize(device, stream);
        if (synced != .ok) {
            scratch_in_flight = true;
            return synced;
        }
    }

    for (0..table.nodeCount()) |node| {
        const n_buffers: usize = @intFromFloat(table.get(node, .n_buffers));
        const first: usize = @intFromFloat(table.get(node, .first_buffer));
        var variadic_index: usize = 0;
        for (first..first + n_buffers) |b| {
            const kind: format.BufferKind = @enumFromInt(@as(u8, @intFromFloat(table.buffers.items[b * validate.buffer_words + @intFromEnum(validate.BufferWord.kind)])));
            const variadic_slot = variadic_index;
            if (kind == .variadic_bytes) variadic_index += 1;
            if (sizes[b] >= 0) continue;
            const probe = probes.items[answer[b]];
            const bytes = scratch[probe.at..][0..probe.bytes];
            const value: i64 = switch (kind) {
                .bytes => if (probe.bytes == 8) std.mem.readInt(i64, bytes[0..8], .little) else std.mem.readInt(i32, bytes[0..4], .little),
                else => std.mem.readInt(i64, bytes[variadic_slot * 8 ..][0..8], .little),
            };
            if (value < 0 or value > validate.max_slots)
                return fail(.invalid_layout, "node {d} buffer {d}: the size read back from the device is {d}", .{ node, b - first, value });
            sizes[b] = value;
        }
    }
    return .ok;
}

/// The host memory of a `toHost` copy (host_pool.zig), given back to the
/// pool by the copy's last release, on whatever thread runs it.
fn finishHostCopy(context: ?*anyopaque) callconv(.c) void {
    host_pool.giveBack(@ptrCast(context.?));
}

/// The pinned pool range (pool.zig) of a pooled `toHost` result, ended by
/// the result's last release, on whatever thread runs it.
fn finishPooledHostCopy(context: ?*anyopaque) callconv(.c) void {
    const range: *pool.Range = @ptrCast(@alignCast(context.?));
    pool.end(range.*);
    std.heap.c_allocator.destroy(range);
}

/// `toHost` of an array whose buffers all lie in one range of the device
/// pool (a `toDevice` copy made by this library, or a view of one): one
/// copy of the whole range into a range of the pinned pool, one
/// synchronization, the unknown sizes read from the copy, and the result's
/// buffers point into it. Null when the array is not in one pooled range
/// or no pinned range can be had (the caller copies buffer by buffer).
/// The producer's event has been waited on (on `stream`) by the caller.
fn pooledToHost(rt: *Runtime, owner: *Owner, stream: runtime.Stream, out_schema: *abi.ArrowSchema, out_array: *abi.ArrowDeviceArray) ?Status {
    const device = owner.array.device_id;
    const table = &owner.table;
    const n = table.buffers.items.len / validate.buffer_words;
    var first: usize = 0;
    for (0..n) |i| {
        first = table.bufferAddress(i);
        if (first != 0) break;
    }
    if (first == 0) return null;
    const span = pool.find(rt, device, first) orelse return null;
    const lo = span[0];
    const hi = span[0] + span[1];
    for (0..n) |i| {
        const address = table.bufferAddress(i);
        if (address == 0) continue;
        const size = table.bufferSize(i);
        if (address < lo or address >= hi or (size > 0 and address + @as(usize, @intCast(size)) > hi)) return null;
    }
    const host = pool.acquire(rt, device, .pinned, span[1]) orelse return null;
    const context = std.heap.c_allocator.create(pool.Range) catch {
        pool.end(host);
        return null;
    };
    context.* = host;
    return copyPooled(rt, device, stream, owner, lo, hi, host, context, out_schema, out_array);
}

fn copyPooled(rt: *Runtime, device: i64, stream: runtime.Stream, owner: *Owner, lo: usize, hi: usize, host: pool.Range, context: *pool.Range, out_schema: *abi.ArrowSchema, out_array: *abi.ArrowDeviceArray) Status {
    const table = &owner.table;
    const n = table.buffers.items.len / validate.buffer_words;
    const copied = rt.copy(device, .device_to_host, host.address, lo, hi - lo, stream, true);
    if (copied != .ok) {
        // Nothing of this copy may still write into the range once it is ended.
        const kept = drainAfter(copied, rt, device, stream);
        pool.end(host);
        std.heap.c_allocator.destroy(context);
        return kept;
    }
    // After a failed wait the copy may be in flight: the range is kept
    // (never reused), not ended under it.
    const synced = rt.streamSynchronize(device, stream);
    if (synced != .ok) {
        std.heap.c_allocator.destroy(context);
        return synced;
    }
    // From here on the range is ended on every path but the export's.
    var exported = false;
    defer if (!exported) {
        pool.end(host);
        std.heap.c_allocator.destroy(context);
    };
    const sizes = std.heap.c_allocator.alloc(i64, n) catch return fail(.out_of_memory, "out of memory sizing {d} buffers", .{n});
    defer std.heap.c_allocator.free(sizes);
    const sized = resolveSizes(rt, device, stream, table, sizes, .{ .device = lo, .host = host.address, .size = hi - lo });
    if (sized != .ok) return sized;
    const addresses = std.heap.c_allocator.alloc(usize, n) catch return fail(.out_of_memory, "out of memory planning a copy", .{});
    defer std.heap.c_allocator.free(addresses);
    for (sizes, addresses, 0..) |size, *a, i| {
        const original = table.bufferAddress(i);
        if (original != 0 and original + @as(usize, @intCast(size)) > hi)
            return fail(.invalid_layout, "buffer {d} ({d} bytes at 0x{x}) runs past the device range of its array's other buffers", .{ i, size, original });
        a.* = if (original == 0) 0 else host.address + (original - lo);
    }
    var schema: abi.ArrowSchema = .empty;
    const schema_copied = schema_copy.copy(&owner.schema, &schema);
    if (schema_copied != .ok) return schema_copied;
    const built = buildFromTable(table, addresses, .{ .on_free = finishPooledHostCopy, .on_free_context = context }, .{}, out_array);
    if (built != .ok) {
        schema.release.?(&schema);
        return built;
    }
    exported = true;
    out_schema.* = schema;
    return .ok;
}

fn deviceToHost(rt: *Runtime, owner: *Owner, stream: runtime.Stream, out_schema: *abi.ArrowSchema, out_array: *abi.ArrowDeviceArray) Status {
    const device = owner.array.device_id;
    const checked = rt.checkDevice(device);
    if (checked != .ok) return checked;
    const held = rt.ops.hold(@intCast(device));
    defer if (held) rt.ops.unhold();
    if (if (debug.makes(.@"no-stream-wait")) null else owner.array.sync_event) |event| {
        const handle: *const runtime.Event = @ptrCast(@alignCast(event));
        const waited = rt.streamWaitEvent(device, stream, handle.*);
        if (waited != .ok) return waited;
    }
    const table = &owner.table;
    const n = table.buffers.items.len / validate.buffer_words;
    const sizes = std.heap.c_allocator.alloc(i64, n) catch return fail(.out_of_memory, "out of memory sizing {d} buffers", .{n});
    defer std.heap.c_allocator.free(sizes);
    if (pooledToHost(rt, owner, stream, out_schema, out_array)) |done| return done;
    const sized = resolveSizes(rt, device, stream, table, sizes, null);
    if (sized != .ok) return sized;

    var placement = Placement.init(sizes) orelse return fail(.out_of_memory, "out of memory planning a copy of {d} buffers", .{n});
    defer placement.deinit();
    // Reused result memory: warm pages for repeated same-size batches.
    const block: ?*anyopaque = host_pool.acquire(@max(placement.total, buffer_alignment)) orelse
        return fail(.out_of_memory, "out of memory allocating {d} bytes for a host copy", .{placement.total});
    const base = @intFromPtr(block.?);
    const addresses = std.heap.c_allocator.alloc(usize, n) catch {
        host_pool.giveBack(@ptrCast(block.?));
        return fail(.out_of_memory, "out of memory planning a copy", .{});
    };
    defer std.heap.c_allocator.free(addresses);
    // Device memory comes back through pinned staging blocks (in
    // block-sized chunks when the batch is larger than one; staging.zig),
    // then is copied into the result by the host; without a block, straight
    // into the result.
    const stage = Stage.acquire(rt, device, placement.total);
    for (sizes, 0..) |size, i| {
        const original = table.bufferAddress(i);
        addresses[i] = placement.address(base, original, size, i);
        if (size > 0 and stage.count == 0) {
            const copied = rt.copy(device, .device_to_host, addresses[i], original, @intCast(size), stream, true);
            if (copied != .ok) {
                const kept = drainAfter(copied, rt, device, stream);
                host_pool.giveBack(@ptrCast(block.?));
                return kept;
            }
        }
    }
    if (stage.count == 0) {
        const synced = rt.streamSynchronize(device, stream);
        if (synced != .ok) return synced; // copies may be in flight: `block` is leaked, not freed under them
    }
    // Chunk k is unpacked while chunk k + 1 (in the other block) is copied.
    var issued: usize = 0;
    for (0..stage.chunks) |k| {
        while (issued < stage.chunks and issued < k + stage.count) : (issued += 1) {
            const lo, const hi = stage.range(issued, placement.total);
            const landing = stage.block(issued).address;
            for (sizes, 0..) |size, i| {
                const s, const e = overlap(&placement, size, i, lo, hi) orelse continue;
                const copied = rt.copy(device, .device_to_host, landing + (s - lo), table.bufferAddress(i) + (s - placement.offsets[i]), e - s, stream, true);
                if (copied != .ok) {
                    const kept = drainAfter(copied, rt, device, stream);
                    stage.giveBack();
                    host_pool.giveBack(@ptrCast(block.?));
                    return kept;
                }
            }
            const recorded = stage.recordAfter(rt, device, stream, issued);
            if (recorded != .ok) {
                const kept = drainAfter(recorded, rt, device, stream);
                stage.giveBack();
                host_pool.giveBack(@ptrCast(block.?));
                return kept;
            }
        }
        // Copies may be in flight after a failed wait: `block` and the
        // stage are leaked, not freed under them.
        const waited = if (stage.chunks == 1) rt.streamSynchronize(device, stream) else stage.waitFor(rt, device, k);
        if (waited != .ok) return waited;
        const lo, const hi = stage.range(k, placement.total);
        const from: [*]const u8 = @ptrFromInt(stage.block(k).address);
        const to: [*]u8 = @ptrFromInt(base + lo);
        @memcpy(to[0 .. hi - lo], from[0 .. hi - lo]);
    }
    stage.giveBack();
    var schema: abi.ArrowSchema = .empty;
    const schema_copied = schema_copy.copy(&owner.schema, &schema);
    if (schema_copied != .ok) {
        host_pool.giveBack(@ptrCast(block.?));
        return schema_copied;
    }
    const built = buildFromTable(table, addresses, .{ .on_free = finishHostCopy, .on_free_context = block }, .{}, out_array);
    if (built != .ok) {
        host_pool.giveBack(@ptrCast(block.?));
        schema.release.?(&schema);
        return built;
    }
    out_schema.* = schema;
    return .ok;
}

/// Exports the data of `owner` (the caller keeps its reference) as a CPU
/// array into `out_schema` + `out_array` (the caller's structs):
/// - device memory (CUDA, ROCM) is copied: the producer's `sync_event` is
///   waited on (on `stream`), the unknown sizes are read back in one batch,
///   every buffer is copied, and the call returns once the copies are done.
///   The copy owns its memory; its release frees it.
/// - host-readable memory (CPU, and CUDA_HOST, ROCM_HOST, CUDA_MANAGED once
///   their event fired, waiting for it here if import could not) is viewed
///   in place: the view holds a reference to `owner` until released.
/// Blocks the calling thread; never dereferences device memory.
pub fn toHost(owner: *Owner, stream: runtime.Stream, out_schema: *abi.ArrowSchema, out_array: *abi.ArrowDeviceArray) Status {
    const device_type = owner.array.device_type;
    if (owner.host_readable) return hostView(owner, out_schema, out_array);
    const found = runtime.require(device_type);
    if (found[0] != .ok) return found[0];
    const rt = found[1].?;
    if (abi.isHostAccessible(device_type)) {
        if (if (debug.makes(.@"no-event-sync")) null else owner.array.sync_event) |event| {
            const handle: *const runtime.Event = @ptrCast(@alignCast(event));
            const waited = rt.eventSynchronize(owner.array.device_id, handle.*);
            if (waited != .ok) return waited;
        }
        return hostView(owner, out_schema, out_array);
    }
    return deviceToHost(rt, owner, stream, out_schema, out_array);
}

test "placement aligns every non-empty buffer and leaves empty ones at the base" {
    const sizes = [_]i64{ 0, 5, -1, 130, 0 };
    var placement = Placement.init(&sizes).?;
    defer placement.deinit();
    try std.testing.expectEqual(@as(usize, 0), placement.offsets[1]);
    try std.testing.expectEqual(@as(usize, 64), placement.offsets[3]);
    try std.testing.expectEqual(@as(usize, 194), placement.total);
    try std.testing.expectEqual(@as(usize, 0), placement.address(4096, 0, 0, 0));
    try std.testing.expectEqual(@as(usize, 4096), placement.address(4096, 77, 0, 4));
    try std.testing.expectEqual(@as(usize, 4096 + 64), placement.address(4096, 77, 130, 3));
}
