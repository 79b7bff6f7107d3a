//! The table of operations one device backend implements (cuda.zig,
//! hip.zig) and the types it speaks in: below both the backends and the
//! runtime that dispatches to them (runtime.zig), so that neither imports
//! the other's file.

const std = @import("std");
const Status = @import("../core/status.zig").Status;

/// What kind of memory an allocation is. Numbers are part of the C API.
pub const MemoryKind = enum(c_int) {
    /// Device memory: never readable by the host (CUDA, ROCM).
    device = 0,
    /// Page-locked host memory (CUDA_HOST, ROCM_HOST).
    pinned = 1,
    /// Managed (unified) memory (CUDA_MANAGED).
    managed = 2,
};

pub const Direction = enum(c_int) {
    host_to_device = 0,
    device_to_host = 1,
    device_to_device = 2,
};

/// What a pointer query found. Numbers are part of the C API.
pub const PointerKind = enum(c_int) {
    /// Not known to the runtime: ordinary host memory.
    host = 0,
    device = 1,
    pinned = 2,
    managed = 3,
};

/// Most device ordinals a runtime serves.
pub const max_devices = 64;

/// CUstream / hipStream_t. Null is the default stream.
pub const Stream = ?*anyopaque;
/// CUevent / hipEvent_t (the handle; `sync_event` points to one).
pub const Event = ?*anyopaque;
/// Runs on a driver thread once the stream reaches it. It must not call
/// the driver.
pub const HostFn = *const fn (context: ?*anyopaque) callconv(.c) void;

pub const DeviceInfo = struct {
    name: [256]u8 = @splat(0),
    total_memory_bytes: u64 = 0,

    pub fn nameSlice(self: *const DeviceInfo) []const u8 {
        return std.mem.sliceTo(&self.name, 0);
    }
};

pub const PointerInfo = struct {
    kind: PointerKind = .host,
    /// -1 when the pointer belongs to no device.
    device_id: i32 = -1,
};

/// How a driver's version number reads as major.minor:
/// `major = v / major_div`, `minor = v % major_div / minor_div`.
pub const VersionScale = struct { major_div: i64, minor_div: i64 };

/// What a successful load found.
pub const LoadInfo = struct {
    device_count: i32 = 0,
    /// The driver's (CUDA) or runtime's (HIP) version number.
    version: i32 = 0,
    library_path: [512]u8 = @splat(0),
};

/// One vendor's implementation. Every operation takes a valid, loaded
/// device ordinal (checked by `Runtime` before dispatch).
pub const Ops = struct {
    /// Opens the library at `path` (or the default sonames), resolves every
    /// symbol, initializes the driver. Called with the runtime's lock held.
    load: *const fn (path: ?[]const u8, out: *LoadInfo) Status,
    deviceInfo: *const fn (device: i32, out: *DeviceInfo) Status,
    alloc: *const fn (device: i32, kind: MemoryKind, size: usize, out: *usize) Status,
    free: *const fn (device: i32, kind: MemoryKind, address: usize) Status,
    copy: *const fn (device: i32, direction: Direction, dst: usize, src: usize, size: usize, stream: Stream, is_async: bool) Status,
    streamCreate: *const fn (device: i32, out: *Stream) Status,
    streamDestroy: *const fn (device: i32, stream: Stream) Status,
    streamSynchronize: *const fn (device: i32, stream: Stream) Status,
    streamWaitEvent: *const fn (device: i32, stream: Stream, event: Event) Status,
    launchHostFn: *const fn (device: i32, stream: Stream, function: HostFn, context: ?*anyopaque) Status,
    eventCreate: *const fn (device: i32, out: *Event) Status,
    eventRecord: *const fn (device: i32, event: Event, stream: Stream) Status,
    eventSynchronize: *const fn (device: i32, event: Event) Status,
    eventQuery: *const fn (device: i32, event: Event, ready: *bool) Status,
    eventDestroy: *const fn (device: i32, event: Event) Status,
    pointerQuery: *const fn (address: usize, out: *PointerInfo) Status,
    /// Page-locks `size` bytes of host memory at `address` (allocated by
    /// someone else) for `device`'s copies; undone by `hostUnregister`.
    /// Keeps `device` current on this thread until `unhold`, so that the
    /// calls between cost no enter and leave of their own. False: nothing
    /// held (the thread holds another device, or entering failed), and
    /// `unhold` must not run.
    hold: *const fn (device: i32) bool,
    unhold: *const fn () void,
    hostRegister: *const fn (device: i32, address: usize, size: usize) Status,
    hostUnregister: *const fn (device: i32, address: usize) Status,
};
