//! Waiting on a producer's `sync_event` before the host reads its buffers.
//!
//! CPU arrays carry no event. Host-visible device memory (CUDA_HOST,
//! ROCM_HOST, CUDA_MANAGED) becomes readable once its event fired; waiting
//! needs the device runtime, which registers a waiter here when it loads
//! (device/runtime.zig), so that this module stays free of driver code.

const std = @import("std");
const abi = @import("abi.zig");
const status = @import("status.zig");
const Status = status.Status;

/// Blocks until `sync_event` (a pointer to the runtime's event) has fired.
pub const Waiter = *const fn (device_type: abi.DeviceType, device_id: i64, sync_event: *anyopaque) Status;

var waiter: std.atomic.Value(?Waiter) = .init(null);

pub fn setWaiter(w: ?Waiter) void {
    waiter.store(w, .release);
}

/// Waits so that the host may read the array's buffers. Returns `.ok` when
/// there is nothing to wait for.
pub fn waitForHost(device_type: abi.DeviceType, device_id: i64, sync_event: ?*anyopaque) Status {
    const event = sync_event orelse return .ok;
    if (device_type == abi.device_cpu) return .ok; // CPU data is ready by definition
    const wait = waiter.load(.acquire) orelse
        return status.fail(.device_unavailable, "array on device {s} has a sync_event, but no {s} runtime is loaded to wait on it", .{ abi.deviceTypeName(device_type) orelse "unknown", abi.deviceTypeName(device_type) orelse "unknown" });
    return wait(device_type, device_id, event);
}

test "nothing to wait for without an event or on the CPU" {
    try std.testing.expectEqual(Status.ok, waitForHost(abi.device_cuda_host, 0, null));
    var event: u8 = 0;
    try std.testing.expectEqual(Status.ok, waitForHost(abi.device_cpu, -1, &event));
    try std.testing.expectEqual(Status.device_unavailable, waitForHost(abi.device_cuda_host, 0, &event));
}
