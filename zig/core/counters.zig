//! Live-object counters, for tests and for users chasing leaks. Every test
//! ends with all of them at zero. Updated atomically from any thread.
//!
//! The order is part of the C API (`abd_counters_read`); the names are in the
//! layout manifest, and the TS side reads them by name.

const std = @import("std");

pub const Counter = enum(u8) {
    /// Array trees exported from JS memory whose release has not run yet.
    live_array_exports,
    /// Schema trees exported by this library, not yet released.
    live_schema_exports,
    /// Keepalive ids released natively but not yet drained by JS.
    keepalive_pending,
    /// Imported arrays (owners) whose producer release has not run yet.
    live_owners,
    /// JS ArrayBuffer views of imported memory not yet collected or detached.
    live_imported_views,
    /// Re-exports of imported data not yet released by their consumers.
    live_reexports,
    /// Bytes of imported buffers held by live owners.
    imported_bytes_held,
    /// Streams produced by this library whose release has not run yet.
    live_stream_exports,
    /// Streams imported from C producers not yet released.
    live_stream_imports,
    /// Device allocations made by this library and not yet freed.
    live_device_allocations,
    /// Device events created by this library and not yet destroyed.
    live_device_events,
    /// Async producers or handlers of this library not yet finished.
    live_async,
    /// ADBC drivers, databases, connections and statements this library
    /// holds (zig/adbc/), not yet released.
    live_adbc_objects,
};

pub const count = @typeInfo(Counter).@"enum".field_names.len;

/// One counter per cache line: the JS thread, Bun's GC threads (view
/// deallocators) and C consumer threads (export releases) update different
/// counters at once, and must not bounce one line between their cores.
const Slot = struct {
    value: std.atomic.Value(i64) align(std.atomic.cache_line) = .init(0),
};

var values: [count]Slot = @splat(.{});

pub fn add(counter: Counter, delta: i64) void {
    _ = values[@intFromEnum(counter)].value.fetchAdd(delta, .monotonic);
}

pub fn get(counter: Counter) i64 {
    return values[@intFromEnum(counter)].value.load(.monotonic);
}

/// Copies every counter, in enum order, as f64 (exact up to 2^53).
pub fn read(out: []f64) usize {
    const n = @min(out.len, count);
    for (0..n) |i| out[i] = @floatFromInt(values[i].value.load(.monotonic));
    return n;
}

test "each counter has a cache line of its own" {
    try std.testing.expect(@sizeOf(Slot) >= std.atomic.cache_line);
    const first = @intFromPtr(&values[0].value);
    const second = @intFromPtr(&values[1].value);
    try std.testing.expect(second - first >= std.atomic.cache_line);
    try std.testing.expectEqual(@as(usize, 0), first % std.atomic.cache_line);
}

test "counters add and read back in order" {
    const before = get(.live_owners);
    add(.live_owners, 2);
    add(.live_owners, -1);
    try std.testing.expectEqual(before + 1, get(.live_owners));
    var out: [count]f64 = undefined;
    try std.testing.expectEqual(@as(usize, count), read(&out));
    try std.testing.expectEqual(@as(f64, @floatFromInt(before + 1)), out[@intFromEnum(Counter.live_owners)]);
    add(.live_owners, -1);
}
