//! Where a batch's buffers go when it moves between host and device as
//! one block (`Placement`), how the block goes through the staging pool
//! in chunks (`Stage`), and the export plan over the moved buffers; used
//! by both directions (to_device.zig, to_host.zig). Also the error
//! bookkeeping of their cleanup paths.

const std = @import("std");
const abi = @import("../core/abi.zig");
const status = @import("../core/status.zig");
const validate = @import("../validate/validate.zig");
const export_array = @import("../export/array.zig");
const runtime = @import("runtime.zig");
const debug = @import("debug.zig");
const staging = @import("staging.zig");
const pool = @import("pool.zig");
const Status = status.Status;
const fail = status.fail;
const Runtime = runtime.Runtime;

/// Buffers are placed at this alignment inside one allocation (Arrow's
/// recommended 64-byte alignment).
pub const buffer_alignment = 64;

/// Where each buffer of a node table goes in one block of `total` bytes:
/// `offsets[i]` for buffers with a positive size.
pub const Placement = struct {
    offsets: []usize,
    total: usize,

    pub fn init(sizes: []const i64) ?Placement {
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

    pub fn deinit(self: *Placement) void {
        std.heap.c_allocator.free(self.offsets);
    }

    /// The address buffer `i` gets in a block at `base`: NULL stays NULL,
    /// an empty buffer points at the block's start (valid, never read).
    pub fn address(self: *const Placement, base: usize, original: usize, size: i64, i: usize) usize {
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
pub const Stage = struct {
    blocks: [2]?*staging.Block = .{ null, null },
    count: usize = 0,
    chunks: usize = 0,

    pub fn acquire(rt: *Runtime, device: i64, total: usize) Stage {
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

    pub fn block(self: *const Stage, k: usize) *staging.Block {
        std.debug.assert(self.count > 0 and k < self.chunks);
        return self.blocks[k % self.count].?;
    }

    /// Bytes [lo, hi) of the packed batch that chunk `k` carries.
    pub fn range(self: *const Stage, k: usize, total: usize) [2]usize {
        _ = self;
        const lo = k * staging.block_bytes;
        return .{ lo, @min(total, lo + staging.block_bytes) };
    }

    /// Records the event of chunk `k`'s block after its copies (only when a
    /// block carries several chunks: otherwise nothing waits on it).
    pub fn recordAfter(self: *const Stage, rt: *Runtime, device: i64, stream: runtime.Stream, k: usize) Status {
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
    pub fn waitFor(self: *const Stage, rt: *Runtime, device: i64, k: usize) Status {
        return rt.eventSynchronize(device, self.block(k).event);
    }

    /// Gives every block back now (nothing in flight touches them).
    pub fn giveBack(self: *const Stage) void {
        for (self.blocks[0..self.count]) |b| staging.giveBack(b.?);
    }

    /// Gives every block back once the copies queued on `stream` are done
    /// (a host callback that only links it into the pool: no driver call).
    pub fn giveBackAfter(self: *const Stage, rt: *Runtime, device: i64, stream: runtime.Stream) void {
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
pub fn overlap(placement: *const Placement, size: i64, i: usize, lo: usize, hi: usize) ?[2]usize {
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
pub fn buildFromTable(table: *const validate.NodeTable, addresses: []const usize, options: export_array.Options, device: export_array.DeviceFields, out: *abi.ArrowDeviceArray) Status {
    var plan: std.ArrayList(f64) = .empty;
    defer plan.deinit(std.heap.c_allocator);
    const planned = writePlan(table, addresses, &plan, 0);
    if (planned != .ok) return planned;
    return export_array.buildDevice(plan.items, options, device, out);
}

/// The thread's last error, saved across cleanup calls that may overwrite
/// it (a failed runtime call during cleanup must not hide the failure that
/// made the cleanup necessary).
pub const SavedError = struct {
    code: Status,
    text: [status.message_capacity]u8 = undefined,
    len: usize = 0,

    pub fn capture(code: Status) SavedError {
        var saved: SavedError = .{ .code = code };
        const message = std.mem.span(status.lastMessage());
        saved.len = @min(message.len, saved.text.len);
        @memcpy(saved.text[0..saved.len], message[0..saved.len]);
        return saved;
    }

    pub fn restore(self: *const SavedError) Status {
        return fail(self.code, "{s}", .{self.text[0..self.len]});
    }
};

/// Waits for `stream` after a failure, so that no copy still in flight
/// writes into memory about to be freed; keeps the failure's message.
pub fn drainAfter(code: Status, rt: *Runtime, device: i64, stream: runtime.Stream) Status {
    const saved = SavedError.capture(code);
    _ = rt.streamSynchronize(device, stream);
    return saved.restore();
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
