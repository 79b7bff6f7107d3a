//! A driver's result stream, wrapped so that a failing get_next keeps the
//! driver's AdbcError. ADBC 1.1.0 offers it through the driver's
//! ErrorFromArrayStream, owned by the stream and valid only until the
//! stream's next call or its release; the stream import (stream/import.zig)
//! keeps only get_last_error's text. The wrapper asks right after the
//! failing get_next, on the thread that called it (the JS thread, or the
//! import's worker for an async read), and copies the error (encodeError in
//! call.zig: message, vendor code, SQLSTATE, details) into a `Slot` the JS
//! side reads. The AdbcError itself stays the stream's: the driver releases
//! it with the stream, never this library (adbc.h: the caller must not).
//!
//! Ownership: `wrap` moves the driver's stream into the wrapper (in place);
//! the wrapper's release releases the driver's stream once, then drops its
//! reference to the slot. The slot has two references, the wrapper's and
//! the caller's (`slotRelease`); the last one frees it. Everything else is
//! forwarded unchanged: the batches are the driver's arrays, not copies.

const std = @import("std");
const core_abi = @import("../core/abi.zig");
const counters = @import("../core/counters.zig");
const abi = @import("abi.zig");
const call = @import("call.zig");
const Driver = @import("driver.zig").Driver;

/// One failure copied out of the driver's AdbcError.
pub const Captured = struct {
    /// encodeError's blob (malloc'd), and its size; null when memory was short.
    blob: ?[*]u8,
    size: usize,
    /// The AdbcStatusCode ErrorFromArrayStream reported.
    status: abi.StatusCode,
    /// What get_next returned.
    errno: c_int,
};

pub const Slot = struct {
    refs: std.atomic.Value(u32) = .init(2),
    /// The latest failure, swapped in by the wrapper, taken by the caller.
    captured: std.atomic.Value(?*Captured) = .init(null),
};

const Private = struct {
    inner: core_abi.ArrowArrayStream,
    driver: *const Driver,
    slot: *Slot,
};

/// Wraps the stream at `stream` (a driver's, just returned) in place when
/// `driver` has ErrorFromArrayStream; returns the slot (the caller holds
/// one reference), or null when the driver has none (the stream is left
/// as it is) or memory is short (likewise).
pub fn wrap(driver: *const Driver, stream: *core_abi.ArrowArrayStream) ?*Slot {
    if (driver.version < abi.version_1_1_0 or driver.table.ErrorFromArrayStream == null) return null;
    if (stream.release == null) return null;
    const a = std.heap.c_allocator;
    const slot = a.create(Slot) catch return null;
    const private = a.create(Private) catch {
        a.destroy(slot);
        return null;
    };
    slot.* = .{};
    private.* = .{ .inner = stream.*, .driver = driver, .slot = slot };
    stream.* = .{ .get_schema = getSchema, .get_next = getNext, .get_last_error = getLastError, .release = release, .private_data = private };
    counters.add(.live_adbc_objects, 2);
    return slot;
}

fn privateOf(stream: *core_abi.ArrowArrayStream) *Private {
    return @ptrCast(@alignCast(stream.private_data.?));
}

fn getSchema(stream: *core_abi.ArrowArrayStream, out: *core_abi.ArrowSchema) callconv(.c) c_int {
    const p = privateOf(stream);
    return p.inner.get_schema.?(&p.inner, out);
}

fn getNext(stream: *core_abi.ArrowArrayStream, out: *core_abi.ArrowArray) callconv(.c) c_int {
    const p = privateOf(stream);
    const rc = p.inner.get_next.?(&p.inner, out);
    if (rc != 0) capture(p, rc);
    return rc;
}

fn getLastError(stream: *core_abi.ArrowArrayStream) callconv(.c) ?[*:0]const u8 {
    const p = privateOf(stream);
    return if (p.inner.get_last_error) |f| f(&p.inner) else null;
}

fn release(stream: *core_abi.ArrowArrayStream) callconv(.c) void {
    const p = privateOf(stream);
    // The driver's release frees its AdbcError too.
    if (p.inner.release) |inner_release| inner_release(&p.inner);
    const slot = p.slot;
    std.heap.c_allocator.destroy(p);
    stream.release = null;
    counters.add(.live_adbc_objects, -1);
    slotRelease(slot);
}

/// Copies the driver's error for the get_next that returned `rc`, if it
/// gives one, into the slot (replacing an earlier one).
fn capture(p: *Private, rc: c_int) void {
    var code: abi.StatusCode = 0;
    const err = p.driver.table.ErrorFromArrayStream.?(@ptrCast(&p.inner), &code) orelse return;
    const captured = std.heap.c_allocator.create(Captured) catch return;
    var blob: ?[*]u8 = null;
    const size = call.encodeError(p.driver, err, &blob);
    captured.* = .{ .blob = blob, .size = size, .status = code, .errno = rc };
    if (p.slot.captured.swap(captured, .acq_rel)) |old| freeCaptured(old);
}

fn freeCaptured(captured: *Captured) void {
    if (captured.blob) |b| std.c.free(b);
    std.heap.c_allocator.destroy(captured);
}

/// Takes the latest failure (the caller frees it with `freeCaptured`).
pub fn take(slot: *Slot) ?*Captured {
    return slot.captured.swap(null, .acq_rel);
}

/// Hands the blob of `captured` over (the caller frees it) and frees the rest.
pub fn takeBlob(captured: *Captured) ?[*]u8 {
    const blob = captured.blob;
    std.heap.c_allocator.destroy(captured);
    return blob;
}

/// Drops one reference; the last frees the slot and what it holds.
pub fn slotRelease(slot: *Slot) void {
    if (slot.refs.fetchSub(1, .acq_rel) != 1) return;
    if (take(slot)) |captured| freeCaptured(captured);
    std.heap.c_allocator.destroy(slot);
    counters.add(.live_adbc_objects, -1);
}
