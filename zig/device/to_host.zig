//! Device to host (`toHost`): an imported device array copied back (its
//! producer's event waited on, the sizes only the device knows read in one
//! batch), or viewed in place when the host can already read it
//! (transfer.zig has the whole picture).

const std = @import("std");
const abi = @import("../core/abi.zig");
const status = @import("../core/status.zig");
const counters = @import("../core/counters.zig");
const validate = @import("../validate/validate.zig");
const format = @import("../core/format.zig");
const owner_mod = @import("../import/owner.zig");
const schema_copy = @import("../export/schema_copy.zig");
const runtime = @import("runtime.zig");
const debug = @import("debug.zig");
const staging = @import("staging.zig");
const host_pool = @import("host_pool.zig");
const pool = @import("pool.zig");
const Status = status.Status;
const fail = status.fail;
const Owner = owner_mod.Owner;
const Runtime = runtime.Runtime;
const transfer_plan = @import("transfer_plan.zig");
const buffer_alignment = transfer_plan.buffer_alignment;
const Placement = transfer_plan.Placement;
const Stage = transfer_plan.Stage;
const overlap = transfer_plan.overlap;
const buildFromTable = transfer_plan.buildFromTable;
const drainAfter = transfer_plan.drainAfter;

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
