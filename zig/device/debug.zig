//! Deliberate mistakes, for the tests that prove the fake drivers catch
//! them (docs/devices.md, "Debug switches"). Off unless the environment
//! variable ARROW_DEVICE_DEBUG_MISTAKE names the mistake when a runtime is
//! first used; one getenv, cached.

const std = @import("std");

pub const Mistake = enum {
    /// Calls the driver without pushing the device's context first.
    @"no-context-push",
    /// Looks CUDA functions up by their unversioned names (cuMemAlloc
    /// instead of cuMemAlloc_v2: the CUDA 2.0 ABI with 32-bit sizes).
    @"unversioned-symbols",
    /// Copies an imported device array without making the stream wait
    /// for its sync_event (cuStreamWaitEvent skipped).
    @"no-stream-wait",
    /// Reads host-visible imported memory without synchronizing its
    /// sync_event first.
    @"no-event-sync",
    /// toDevice records its event before the copies instead of after.
    @"event-before-copies",
};

var cached: std.atomic.Value(u8) = .init(0); // 0 unknown, 1 none, 2 + tag

fn load() u8 {
    const value = std.c.getenv("ARROW_DEVICE_DEBUG_MISTAKE") orelse return 1;
    const name = std.mem.span(value);
    const mistake = std.meta.stringToEnum(Mistake, name) orelse return 1;
    return 2 + @as(u8, @intFromEnum(mistake));
}

/// Whether the library is asked to make `mistake`.
pub fn makes(mistake: Mistake) bool {
    var v = cached.load(.monotonic);
    if (v == 0) {
        v = load();
        cached.store(v, .monotonic);
    }
    return v == 2 + @as(u8, @intFromEnum(mistake));
}
