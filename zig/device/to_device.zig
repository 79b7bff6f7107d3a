//! Host to device (`toDevice`): every buffer of a host array copied into
//! one device allocation or pool range, exported as an ArrowDeviceArray
//! whose `sync_event` points to an event recorded after the copies
//! (transfer.zig has the whole picture).

const std = @import("std");
const abi = @import("../core/abi.zig");
const status = @import("../core/status.zig");
const validate = @import("../validate/validate.zig");
const owner_mod = @import("../import/owner.zig");
const runtime = @import("runtime.zig");
const releaser = @import("releaser.zig");
const debug = @import("debug.zig");
const staging = @import("staging.zig");
const pool = @import("pool.zig");
const Status = status.Status;
const fail = status.fail;
const Owner = owner_mod.Owner;
const Runtime = runtime.Runtime;
const transfer_plan = @import("transfer_plan.zig");
const buffer_alignment = transfer_plan.buffer_alignment;
const Placement = transfer_plan.Placement;
const Stage = transfer_plan.Stage;
const SavedError = transfer_plan.SavedError;
const overlap = transfer_plan.overlap;
const buildFromTable = transfer_plan.buildFromTable;

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
