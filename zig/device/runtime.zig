//! Device runtimes (CUDA, ROCm) behind one table of operations, as
//! nanoarrow's `ArrowDevice`: callers name a device type and an ordinal and
//! never branch on the vendor.
//!
//! Loading. Each runtime is opened with dlopen on first use (cuda.zig,
//! hip.zig); nothing is linked at build time. A runtime that cannot load is
//! "not available": an ordinary state with a message that says why and what
//! was tried. A failed load is retried on the next use (the library may have
//! been installed or the environment variable set meanwhile); a successful
//! one is kept for the life of the process, like libarrow_device itself,
//! because releases of device arrays may run until the process exits.
//!
//! Threads. Every operation may be called from any thread, including
//! release callbacks on threads this library does not own. Backends make
//! their device current around each driver call (a pushed CUDA primary
//! context, a saved and restored HIP device) and leave the thread as they
//! found it.
//!
//! Ownership. The runtime owns nothing the caller allocated; every
//! allocation, stream and event it creates belongs to the caller, who frees
//! it with the matching call. The counters `live_device_allocations` and
//! `live_device_events` track what this library created and has not freed.

const std = @import("std");
const debug = @import("debug.zig");
const abi = @import("../core/abi.zig");
const status = @import("../core/status.zig");
const counters = @import("../core/counters.zig");
const device_sync = @import("../core/device_sync.zig");
const sync = @import("../core/sync.zig");
const Status = status.Status;
const fail = status.fail;

const ops = @import("ops.zig");
pub const MemoryKind = ops.MemoryKind;
pub const Direction = ops.Direction;
pub const PointerKind = ops.PointerKind;
pub const max_devices = ops.max_devices;
pub const Stream = ops.Stream;
pub const Event = ops.Event;
pub const HostFn = ops.HostFn;
pub const DeviceInfo = ops.DeviceInfo;
pub const PointerInfo = ops.PointerInfo;
pub const LoadInfo = ops.LoadInfo;
pub const Ops = ops.Ops;

pub const Runtime = struct {
    /// Its entry's position in the kinds table (and in `runtimes`): the
    /// index of everything kept per runtime (pools, event caches).
    index: usize,
    /// The driver's label ("CUDA"), for messages.
    name: []const u8,
    /// The environment variable that names the library path.
    env_var: [:0]const u8,
    device_type: abi.DeviceType,
    pinned_device_type: abi.DeviceType,
    /// Null when the vendor has no device type for managed memory.
    managed_device_type: ?abi.DeviceType,
    ops: Ops,
    mutex: sync.Mutex = .{},
    loaded: std.atomic.Value(bool) = .init(false),
    info: LoadInfo = .{},

    /// Loads the runtime if it is not loaded yet. `path` overrides the
    /// environment variable; null or empty means "the variable, else the
    /// default sonames".
    pub fn load(self: *Runtime, path: ?[]const u8) Status {
        if (self.loaded.load(.acquire)) return .ok;
        self.mutex.lock();
        defer self.mutex.unlock();
        if (self.loaded.load(.acquire)) return .ok;
        var chosen: ?[]const u8 = if (path) |p| (if (p.len > 0) p else null) else null;
        if (chosen == null) {
            if (std.c.getenv(self.env_var)) |value| {
                const text = std.mem.span(value);
                if (text.len > 0) chosen = text;
            }
        }
        var info: LoadInfo = .{};
        const loaded = self.ops.load(chosen, &info);
        if (loaded != .ok) return loaded;
        self.info = info;
        self.loaded.store(true, .release);
        device_sync.setWaiter(waitForHost);
        return .ok;
    }

    pub fn isLoaded(self: *const Runtime) bool {
        return self.loaded.load(.acquire);
    }

    /// Checks that `device` is an ordinal of this (loaded) runtime.
    pub fn checkDevice(self: *Runtime, device: i64) Status {
        const loaded = self.load(null);
        if (loaded != .ok) return loaded;
        if (device < 0 or device >= self.info.device_count)
            return fail(.invalid_argument, "{s} device {d} does not exist: there {s} {d} {s} device{s} (ordinals 0..{d})", .{
                self.name,                                            device,
                if (self.info.device_count == 1) "is" else "are",     self.info.device_count,
                self.name,                                            if (self.info.device_count == 1) "" else "s",
                self.info.device_count - 1,
            });
        return .ok;
    }

    pub fn deviceInfo(self: *Runtime, device: i64, out: *DeviceInfo) Status {
        const checked = self.checkDevice(device);
        if (checked != .ok) return checked;
        return self.ops.deviceInfo(@intCast(device), out);
    }

    pub fn alloc(self: *Runtime, device: i64, kind: MemoryKind, size: usize, out: *usize) Status {
        const checked = self.checkDevice(device);
        if (checked != .ok) return checked;
        if (size == 0) return fail(.invalid_argument, "cannot allocate 0 bytes of {s} {s} memory", .{ self.name, @tagName(kind) });
        if (kind == .managed and self.managed_device_type == null)
            return fail(.unsupported, "{s} managed memory has no Arrow device type; allocate device or pinned memory", .{self.name});
        const allocated = self.ops.alloc(@intCast(device), kind, size, out);
        if (allocated == .ok) counters.add(.live_device_allocations, 1);
        return allocated;
    }

    pub fn free(self: *Runtime, device: i64, kind: MemoryKind, address: usize) Status {
        const checked = self.checkDevice(device);
        if (checked != .ok) return checked;
        if (address == 0) return .ok;
        const freed = self.ops.free(@intCast(device), kind, address);
        if (freed == .ok) counters.add(.live_device_allocations, -1);
        return freed;
    }

    pub fn copy(self: *Runtime, device: i64, direction: Direction, dst: usize, src: usize, size: usize, stream: Stream, is_async: bool) Status {
        const checked = self.checkDevice(device);
        if (checked != .ok) return checked;
        if (size == 0) return .ok;
        if (dst == 0 or src == 0) return fail(.invalid_argument, "{s} copy of {d} bytes from 0x{x} to 0x{x}: NULL address", .{ self.name, size, src, dst });
        return self.ops.copy(@intCast(device), direction, dst, src, size, stream, is_async);
    }

    pub fn streamCreate(self: *Runtime, device: i64, out: *Stream) Status {
        const checked = self.checkDevice(device);
        if (checked != .ok) return checked;
        return self.ops.streamCreate(@intCast(device), out);
    }

    pub fn streamDestroy(self: *Runtime, device: i64, stream: Stream) Status {
        const checked = self.checkDevice(device);
        if (checked != .ok) return checked;
        if (stream == null) return fail(.invalid_argument, "the default {s} stream cannot be destroyed", .{self.name});
        return self.ops.streamDestroy(@intCast(device), stream);
    }

    pub fn streamSynchronize(self: *Runtime, device: i64, stream: Stream) Status {
        const checked = self.checkDevice(device);
        if (checked != .ok) return checked;
        return self.ops.streamSynchronize(@intCast(device), stream);
    }

    pub fn streamWaitEvent(self: *Runtime, device: i64, stream: Stream, event: Event) Status {
        const checked = self.checkDevice(device);
        if (checked != .ok) return checked;
        if (event == null) return fail(.invalid_argument, "{s} event handle is NULL", .{self.name});
        return self.ops.streamWaitEvent(@intCast(device), stream, event);
    }

    pub fn launchHostFn(self: *Runtime, device: i64, stream: Stream, function: HostFn, context: ?*anyopaque) Status {
        const checked = self.checkDevice(device);
        if (checked != .ok) return checked;
        return self.ops.launchHostFn(@intCast(device), stream, function, context);
    }

    pub fn eventCreate(self: *Runtime, device: i64, out: *Event) Status {
        const checked = self.checkDevice(device);
        if (checked != .ok) return checked;
        const created = self.ops.eventCreate(@intCast(device), out);
        if (created == .ok) counters.add(.live_device_events, 1);
        return created;
    }

    pub fn eventRecord(self: *Runtime, device: i64, event: Event, stream: Stream) Status {
        const checked = self.checkDevice(device);
        if (checked != .ok) return checked;
        if (event == null) return fail(.invalid_argument, "{s} event handle is NULL", .{self.name});
        return self.ops.eventRecord(@intCast(device), event, stream);
    }

    pub fn eventSynchronize(self: *Runtime, device: i64, event: Event) Status {
        const checked = self.checkDevice(device);
        if (checked != .ok) return checked;
        if (event == null) return fail(.invalid_argument, "{s} event handle is NULL", .{self.name});
        return self.ops.eventSynchronize(@intCast(device), event);
    }

    pub fn eventQuery(self: *Runtime, device: i64, event: Event, ready: *bool) Status {
        const checked = self.checkDevice(device);
        if (checked != .ok) return checked;
        if (event == null) return fail(.invalid_argument, "{s} event handle is NULL", .{self.name});
        return self.ops.eventQuery(@intCast(device), event, ready);
    }

    /// Destroys an event this library created (counted).
    pub fn eventDestroy(self: *Runtime, device: i64, event: Event) Status {
        const checked = self.checkDevice(device);
        if (checked != .ok) return checked;
        if (event == null) return fail(.invalid_argument, "{s} event handle is NULL", .{self.name});
        const destroyed = self.ops.eventDestroy(@intCast(device), event);
        if (destroyed == .ok) counters.add(.live_device_events, -1);
        return destroyed;
    }

    /// Page-locks host memory the caller owns; the caller unregisters it,
    /// once, before that memory is freed.
    pub fn hostRegister(self: *Runtime, device: i64, address: usize, size: usize) Status {
        const checked = self.checkDevice(device);
        if (checked != .ok) return checked;
        if (address == 0 or size == 0) return fail(.invalid_argument, "cannot register {d} bytes at 0x{x} with {s}: empty or NULL", .{ size, address, self.name });
        return self.ops.hostRegister(@intCast(device), address, size);
    }

    pub fn hostUnregister(self: *Runtime, device: i64, address: usize) Status {
        const checked = self.checkDevice(device);
        if (checked != .ok) return checked;
        if (address == 0) return fail(.invalid_argument, "cannot unregister NULL with {s}", .{self.name});
        return self.ops.hostUnregister(@intCast(device), address);
    }

    pub fn pointerQuery(self: *Runtime, address: usize, out: *PointerInfo) Status {
        const loaded = self.load(null);
        if (loaded != .ok) return loaded;
        return self.ops.pointerQuery(address, out);
    }

    /// The Arrow device type of memory of `kind` on this runtime.
    pub fn deviceTypeOf(self: *const Runtime, kind: MemoryKind) abi.DeviceType {
        return switch (kind) {
            .device => self.device_type,
            .pinned => self.pinned_device_type,
            .managed => self.managed_device_type orelse self.device_type,
        };
    }

    /// The memory kind that an array of `device_type` lives in.
    pub fn memoryKindOf(self: *const Runtime, device_type: abi.DeviceType) MemoryKind {
        if (device_type == self.pinned_device_type) return .pinned;
        if (self.managed_device_type) |managed| {
            if (device_type == managed) return .managed;
        }
        return .device;
    }
};

const kinds = @import("kinds.zig");

/// One runtime per entry of the kinds table (kinds.zig), in its order.
pub var runtimes: [kinds.count]Runtime = blk: {
    var out: [kinds.count]Runtime = undefined;
    for (kinds.table, 0..) |kind, i| out[i] = .{
        .index = i,
        .name = kind.driver.label,
        .env_var = kind.driver.library_env_var,
        .device_type = kind.device_type,
        .pinned_device_type = kind.host_type,
        .managed_device_type = kind.managed_type,
        .ops = kind.driver.ops,
    };
    break :blk out;
};

/// The runtime that serves arrays of `device_type` (the kinds table says
/// which), or null.
pub fn forDeviceType(device_type: abi.DeviceType) ?*Runtime {
    inline for (kinds.table, 0..) |kind, i| {
        if (kind.serves(device_type)) return &runtimes[i];
    }
    return null;
}

/// Like `forDeviceType`, failing with a message for other device types.
pub fn require(device_type: abi.DeviceType) struct { Status, ?*Runtime } {
    if (forDeviceType(device_type)) |rt| return .{ .ok, rt };
    return .{ fail(.unknown_device, "device type {d} ({s}) has no runtime here: only " ++ kinds.supported_text ++ " do", .{ device_type, abi.deviceTypeName(device_type) orelse "unknown" }), null };
}

/// `device_sync`'s waiter: blocks until the event behind `sync_event` (a
/// `CUevent*` / `hipEvent_t*`) fired, loading the runtime if needed.
fn waitForHost(device_type: abi.DeviceType, device_id: i64, sync_event: *anyopaque) Status {
    if (debug.makes(.@"no-event-sync")) return .ok;
    const found = require(device_type);
    if (found[0] != .ok) return found[0];
    const handle: *const Event = @ptrCast(@alignCast(sync_event));
    return found[1].?.eventSynchronize(device_id, handle.*);
}

/// An event this library created, boxed so that the box's address is the
/// `CUevent*` / `hipEvent_t*` that `sync_event` holds.
pub const EventBox = extern struct {
    /// First field: `&box.handle == &box` is the sync_event pointer.
    handle: Event,
    device_type: abi.DeviceType,
    device_id: i32,

    pub fn create(rt: *Runtime, device: i64, out: **EventBox) Status {
        const box = std.heap.c_allocator.create(EventBox) catch return fail(.out_of_memory, "out of memory allocating an event", .{});
        box.* = .{ .handle = null, .device_type = rt.device_type, .device_id = @intCast(device) };
        const created = rt.eventCreate(device, &box.handle);
        if (created != .ok) {
            std.heap.c_allocator.destroy(box);
            return created;
        }
        out.* = box;
        return .ok;
    }

    /// Destroys the event and frees the box.
    pub fn destroy(self: *EventBox) Status {
        const rt = forDeviceType(self.device_type).?;
        const destroyed = rt.eventDestroy(self.device_id, self.handle);
        std.heap.c_allocator.destroy(self);
        return destroyed;
    }

    /// `create`, taking a handle of `recycle`'s cache when one is there
    /// (no driver call). For events recorded once by this library.
    pub fn createReused(rt: *Runtime, device: i64, out: **EventBox) Status {
        const cache = cacheOf(rt, device) orelse return create(rt, device, out);
        cache.mutex.lock();
        const handle: ?Event = if (cache.count > 0) blk: {
            cache.count -= 1;
            break :blk cache.handles[cache.count];
        } else null;
        cache.mutex.unlock();
        const h = handle orelse return create(rt, device, out);
        const box = std.heap.c_allocator.create(EventBox) catch {
            _ = rt.ops.eventDestroy(@intCast(device), h);
            return fail(.out_of_memory, "out of memory allocating an event", .{});
        };
        box.* = .{ .handle = h, .device_type = rt.device_type, .device_id = @intCast(device) };
        counters.add(.live_device_events, 1);
        out.* = box;
        return .ok;
    }

    /// `destroy` for an event of `createReused` known to have completed
    /// (waited on successfully): its handle goes to the cache of its
    /// runtime and device (up to `max_cached_events`) instead of the
    /// driver. Cached handles are the library's own: not counted in
    /// `live_device_events`; `trimEvents` destroys them.
    pub fn recycle(self: *EventBox) void {
        const rt = forDeviceType(self.device_type).?;
        const cache = cacheOf(rt, self.device_id) orelse {
            _ = self.destroy();
            return;
        };
        cache.mutex.lock();
        const kept = cache.count < max_cached_events;
        if (kept) {
            cache.handles[cache.count] = self.handle;
            cache.count += 1;
        }
        cache.mutex.unlock();
        if (!kept) {
            _ = self.destroy();
            return;
        }
        counters.add(.live_device_events, -1);
        std.heap.c_allocator.destroy(self);
    }

    pub fn syncEvent(self: *EventBox) *anyopaque {
        return @ptrCast(&self.handle);
    }
};

comptime {
    std.debug.assert(@offsetOf(EventBox, "handle") == 0);
}

/// Most completed event handles kept per runtime and device for reuse.
pub const max_cached_events = 64;

const EventCache = struct {
    mutex: sync.Mutex = .{},
    handles: [max_cached_events]Event = undefined,
    count: usize = 0,
};

var event_caches: [kinds.count][max_devices]EventCache = @splat(@splat(.{}));

fn cacheOf(rt: *Runtime, device: i64) ?*EventCache {
    if (device < 0 or device >= max_devices) return null;
    return &event_caches[rt.index][@intCast(device)];
}

/// Destroys every cached event handle of `rt`; returns how many.
pub fn trimEvents(rt: *Runtime) usize {
    var total: usize = 0;
    for (0..max_devices) |device| {
        const cache = cacheOf(rt, @intCast(device)).?;
        cache.mutex.lock();
        var handles: [max_cached_events]Event = undefined;
        const n = cache.count;
        @memcpy(handles[0..n], cache.handles[0..n]);
        cache.count = 0;
        cache.mutex.unlock();
        for (handles[0..n]) |h| _ = rt.ops.eventDestroy(@intCast(device), h);
        total += n;
    }
    return total;
}

/// Cached event handles of `rt`, every device.
pub fn cachedEvents(rt: *Runtime) usize {
    var total: usize = 0;
    for (0..max_devices) |device| {
        const cache = cacheOf(rt, @intCast(device)).?;
        cache.mutex.lock();
        total += cache.count;
        cache.mutex.unlock();
    }
    return total;
}

test "device types map to their runtime" {
    inline for (kinds.table, 0..) |kind, i| {
        const rt = &runtimes[i];
        try std.testing.expectEqual(i, rt.index);
        try std.testing.expect(forDeviceType(kind.device_type) == rt);
        try std.testing.expect(forDeviceType(kind.host_type) == rt);
        try std.testing.expectEqual(MemoryKind.pinned, rt.memoryKindOf(kind.host_type));
        try std.testing.expectEqual(kind.host_type, rt.deviceTypeOf(.pinned));
        if (kind.managed_type) |managed| try std.testing.expect(forDeviceType(managed) == rt);
    }
    try std.testing.expect(forDeviceType(abi.device_cpu) == null);
    try std.testing.expect(forDeviceType(abi.device_metal) == null);
    const found = require(abi.device_opencl);
    try std.testing.expectEqual(Status.unknown_device, found[0]);
}

test "a missing driver library is an explained state" {
    inline for (kinds.table) |kind| {
        const path = "/nonexistent/" ++ kind.driver.default_library_names[0];
        var info: LoadInfo = .{};
        try std.testing.expectEqual(Status.device_unavailable, kind.driver.ops.load(path, &info));
        const message = std.mem.span(status.lastMessage());
        try std.testing.expect(std.mem.indexOf(u8, message, path) != null);
        try std.testing.expect(std.mem.indexOf(u8, message, kind.driver.library_env_var) != null);
    }
}
