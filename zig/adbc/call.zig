//! Calls into an ADBC driver on behalf of the TS layer.
//!
//! Objects: each AdbcDatabase, AdbcConnection and AdbcStatement lives at the
//! start of an `Object` this module allocates, followed by its guard. ADBC
//! objects allow serialized access from several threads but not concurrent
//! access; the guard enforces that: a call enters it (one atomic exchange)
//! and leaves it when the driver returns, and a call that finds it held
//! (by another thread, or by a call running in the background) is refused
//! with `wrong_thread` instead of racing inside the driver. A statement is
//! guarded by its connection's guard, since drivers share connection state
//! with their statements.
//!
//! The calls are generic: a function pointer from the driver's table and
//! its arguments as machine words (pointers, sizes, ints; all integer-class
//! on the supported ABIs), or with one double for the SetOptionDouble family.
//! `callAsync` runs one on a thread of its own and posts the result to the
//! calling JS thread's work queue (tag `adbc_call_done`).
//!
//! Errors: `takeError` reads an AdbcError (message, vendor code, SQLSTATE and
//! the 1.1.0 details through the driver's ErrorGetDetail), releases it
//! exactly once, zeroes it for reuse, and hands back one malloc'd blob.

const std = @import("std");
const abi = @import("abi.zig");
const driver_mod = @import("driver.zig");
const status = @import("../core/status.zig");
const counters = @import("../core/counters.zig");
const js_queue = @import("../core/js_queue.zig");
const js_context = @import("../core/js_context.zig");
const sync = @import("../core/sync.zig");

const Driver = driver_mod.Driver;
const fail = status.fail;

/// C: an AdbcDatabase / AdbcConnection / AdbcStatement, then its guard.
pub const Object = extern struct {
    handle: abi.Handle,
    /// 0 when free; else the holder's thread id (nonzero).
    holder: u64,
    /// Calls refused since the object was made (a statistic for tests).
    refused: u64,
    /// Holders of this memory: the JS object that made it, and each JS
    /// thread that borrowed it (a shared connection); the last frees it.
    refs: u32,
    /// Set (under the guard) when the owner retires it before releasing
    /// it: from then on every call that enters the guard is refused.
    retired: u32,
    /// Held (a spin lock: cancels are short) by a cancel call, which skips
    /// the guard, and by `retire`: no cancel runs once the owner may
    /// release the object.
    cancel_lock: u32,
};

pub fn objectNew() ?*Object {
    const object = std.heap.c_allocator.create(Object) catch return null;
    object.* = .{ .handle = .{ .private_data = null, .private_driver = null }, .holder = 0, .refused = 0, .refs = 1, .retired = 0, .cancel_lock = 0 };
    counters.add(.live_adbc_objects, 1);
    return object;
}

/// One more holder of `object`'s memory (a borrowing thread).
pub fn objectRetain(object: *Object) void {
    _ = @atomicRmw(u32, &object.refs, .Add, 1, .monotonic);
}

/// Drops one holder; the last frees the object.
pub fn objectFree(object: *Object) void {
    if (@atomicRmw(u32, &object.refs, .Sub, 1, .acq_rel) != 1) return;
    std.heap.c_allocator.destroy(object);
    counters.add(.live_adbc_objects, -1);
}

/// Marks `object` retired, under its guard: false (the reason recorded)
/// when a call holds the guard now. After it, every call is refused, so
/// the owner may release the ADBC object without the guard; it can no
/// longer be borrowed.
pub fn retire(object: *Object) bool {
    shared_mutex.lock();
    defer shared_mutex.unlock();
    if (!enter(object)) return false;
    lockCancel(object);
    @atomicStore(u32, &object.retired, 1, .release);
    unlockCancel(object);
    leave(object);
    for (shared.items, 0..) |entry, i| {
        if (entry.object == object) {
            _ = shared.swapRemove(i);
            break;
        }
    }
    return true;
}

fn lockCancel(object: *Object) void {
    while (@cmpxchgWeak(u32, &object.cancel_lock, 0, 1, .acquire, .monotonic) != null) std.Thread.yield() catch {};
}

fn unlockCancel(object: *Object) void {
    @atomicStore(u32, &object.cancel_lock, 0, .release);
}

/// Calls a Cancel function without the guard (a call of `object` may be
/// running) but never after `object` was retired: -1 with the reason
/// recorded then, else the AdbcStatusCode.
pub fn callCancel(object: *Object, function: *const anyopaque, words: []const usize) c_int {
    lockCancel(object);
    defer unlockCancel(object);
    if (@atomicLoad(u32, &object.retired, .acquire) != 0) {
        _ = fail(.released, "the ADBC connection is closed (its owner closed it)", .{});
        return -1;
    }
    return callWords(function, words);
}

/// Connections shared with other JS threads: a borrow names an object by
/// its address, which is honoured only while it is listed here (shared,
/// not yet retired), so a stale or made-up address is refused, never read.
const Shared = struct { object: *Object, driver: *Driver };
var shared_mutex: sync.Mutex = .{};
var shared: std.ArrayList(Shared) = .empty;

/// Lists `object` (a connection of `driver`) as borrowable. False when
/// memory is short.
pub fn share(object: *Object, driver: *Driver) bool {
    shared_mutex.lock();
    defer shared_mutex.unlock();
    for (shared.items) |entry| if (entry.object == object) return true;
    shared.append(std.heap.c_allocator, .{ .object = object, .driver = driver }) catch {
        _ = fail(.out_of_memory, "out of memory sharing an ADBC connection", .{});
        return false;
    };
    return true;
}

/// Takes a hold on the shared `object` and its driver (returned); null,
/// the reason recorded, when it is not shared (never, or closed since).
pub fn borrow(object: usize) ?*Driver {
    shared_mutex.lock();
    defer shared_mutex.unlock();
    for (shared.items) |entry| {
        if (@intFromPtr(entry.object) == object) {
            objectRetain(entry.object);
            driver_mod.retain(entry.driver);
            return entry.driver;
        }
    }
    _ = fail(.released, "the shared ADBC connection is closed (or was never shared)", .{});
    return null;
}

fn threadTag() u64 {
    return @as(u64, std.Thread.getCurrentId()) | (1 << 63);
}

/// Takes `guard` for the calling thread, or records why not.
pub fn enter(guard: *Object) bool {
    const me = threadTag();
    if (@cmpxchgStrong(u64, &guard.holder, 0, me, .acquire, .monotonic)) |held| {
        _ = @atomicRmw(u64, &guard.refused, .Add, 1, .monotonic);
        const where: []const u8 = if (held == me) "a call of this thread that has not returned (a background query, or a result stream still being read in the background)" else "another thread";
        _ = fail(.wrong_thread, "the ADBC connection is in use by {s}; ADBC connections take one call at a time: wait for it to finish, or open another connection", .{where});
        return false;
    }
    if (@atomicLoad(u32, &guard.retired, .acquire) != 0) {
        leave(guard);
        _ = fail(.released, "the ADBC connection is closed (its owner closed it)", .{});
        return false;
    }
    return true;
}

pub fn leave(guard: *Object) void {
    @atomicStore(u64, &guard.holder, 0, .release);
}

/// The most arguments an ADBC function takes (ConnectionGetObjects: 9).
pub const max_words = 9;

/// Calls `function` with `words` as its integer-class arguments and returns
/// its AdbcStatusCode.
pub fn callWords(function: *const anyopaque, words: []const usize) abi.StatusCode {
    const w = words;
    return switch (w.len) {
        1 => @as(*const fn (usize) callconv(.c) u8, @ptrCast(@alignCast(function)))(w[0]),
        2 => @as(*const fn (usize, usize) callconv(.c) u8, @ptrCast(@alignCast(function)))(w[0], w[1]),
        3 => @as(*const fn (usize, usize, usize) callconv(.c) u8, @ptrCast(@alignCast(function)))(w[0], w[1], w[2]),
        4 => @as(*const fn (usize, usize, usize, usize) callconv(.c) u8, @ptrCast(@alignCast(function)))(w[0], w[1], w[2], w[3]),
        5 => @as(*const fn (usize, usize, usize, usize, usize) callconv(.c) u8, @ptrCast(@alignCast(function)))(w[0], w[1], w[2], w[3], w[4]),
        6 => @as(*const fn (usize, usize, usize, usize, usize, usize) callconv(.c) u8, @ptrCast(@alignCast(function)))(w[0], w[1], w[2], w[3], w[4], w[5]),
        7 => @as(*const fn (usize, usize, usize, usize, usize, usize, usize) callconv(.c) u8, @ptrCast(@alignCast(function)))(w[0], w[1], w[2], w[3], w[4], w[5], w[6]),
        8 => @as(*const fn (usize, usize, usize, usize, usize, usize, usize, usize) callconv(.c) u8, @ptrCast(@alignCast(function)))(w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]),
        9 => @as(*const fn (usize, usize, usize, usize, usize, usize, usize, usize, usize) callconv(.c) u8, @ptrCast(@alignCast(function)))(w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8]),
        else => unreachable,
    };
}

/// `function(a0, a1, value, a3)`: the Set*OptionDouble shape.
pub fn callDouble(function: *const anyopaque, a0: usize, a1: usize, value: f64, a3: usize) abi.StatusCode {
    return @as(*const fn (usize, usize, f64, usize) callconv(.c) u8, @ptrCast(@alignCast(function)))(a0, a1, value, a3);
}

/// One call running on a thread of its own. Owned by the thread until it
/// posts the entry; then by the JS thread, which frees it with `finish`.
pub const Job = struct {
    guard: *Object,
    function: *const anyopaque,
    words: [max_words]usize,
    n: usize,
    code: abi.StatusCode = 0,
    context: u32,
    key: u64,
};

/// Enters `guard` on the caller's behalf and runs the call on a new
/// thread; the guard is left when the driver returns, and the result is
/// posted (tag adbc_call_done, `key`, the job's address). Null with the
/// reason recorded when the guard is held or no thread can start.
pub fn callAsync(guard: *Object, function: *const anyopaque, words: []const usize, key: u64) ?*Job {
    if (words.len == 0 or words.len > max_words) {
        _ = fail(.invalid_argument, "an ADBC call takes 1 to {d} arguments, not {d}", .{ max_words, words.len });
        return null;
    }
    if (!enter(guard)) return null;
    const job = std.heap.c_allocator.create(Job) catch {
        leave(guard);
        _ = fail(.out_of_memory, "out of memory for a background ADBC call", .{});
        return null;
    };
    job.* = .{ .guard = guard, .function = function, .words = @splat(0), .n = words.len, .context = js_context.current(), .key = key };
    @memcpy(job.words[0..words.len], words);
    const thread = std.Thread.spawn(.{ .stack_size = 8 << 20 }, run, .{job}) catch {
        std.heap.c_allocator.destroy(job);
        leave(guard);
        _ = fail(.out_of_memory, "no thread could start for a background ADBC call", .{});
        return null;
    };
    thread.detach();
    counters.add(.live_async, 1);
    return job;
}

fn run(job: *Job) void {
    // The guard passes to this thread for the call: record it as holder.
    @atomicStore(u64, &job.guard.holder, threadTag(), .release);
    job.code = callWords(job.function, job.words[0..job.n]);
    leave(job.guard);
    const entry: js_queue.Entry = .{ .tag = .adbc_call_done, .key = job.key, .address = @intFromPtr(job) };
    if (!js_queue.postTo(job.context, entry)) destroy(job);
}

fn destroy(job: *Job) void {
    std.heap.c_allocator.destroy(job);
    counters.add(.live_async, -1);
}

/// The JS thread takes a posted job: returns its status and frees it.
pub fn finish(job: *Job) abi.StatusCode {
    const code = job.code;
    destroy(job);
    return code;
}

/// A posted job whose JS thread ended before taking it.
pub fn orphaned(entry: js_queue.Entry) void {
    if (entry.tag != .adbc_call_done) return;
    destroy(@ptrFromInt(entry.address));
}

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/// Prepares `err` for a call into `driver`: zeroed, and marked as able to
/// take the 1.1.0 fields when the driver is at 1.1.0.
pub fn errorReset(driver: *const Driver, err: *abi.AdbcError) void {
    err.* = std.mem.zeroes(abi.AdbcError);
    if (driver.version >= abi.version_1_1_0) err.vendor_code = abi.vendor_code_private_data;
}

/// Releases of AdbcErrors this library made (a statistic for tests).
pub var errors_released: std.atomic.Value(u64) = .init(0);

/// Reads `err` into a malloc'd blob (`out`, its size returned), releases
/// it once and resets it for `driver`. Blob layout: `encodeError`.
/// Returns 0 (and no blob) when out of memory; the error is released anyway.
pub fn takeError(driver: *const Driver, err: *abi.AdbcError, out: *?[*]u8) usize {
    const size = encodeError(driver, err, out);
    if (err.release) |release| {
        release(err);
        _ = errors_released.fetchAdd(1, .monotonic);
    }
    errorReset(driver, err);
    return size;
}

/// Copies `err` (a set AdbcError of `driver`; left as it is) into a
/// malloc'd blob (`out`, its size returned; 0 and no blob when out of
/// memory). Little-endian: u32 message bytes, message, i32 vendor code,
/// u8 has-vendor-code, 5 bytes SQLSTATE, u32 detail count, then per
/// detail u32 key bytes, key, u32 value bytes, value.
pub fn encodeError(driver: *const Driver, err: *const abi.AdbcError, out: *?[*]u8) usize {
    out.* = null;
    var blob: std.ArrayList(u8) = .empty;
    defer blob.deinit(std.heap.c_allocator);
    const a = std.heap.c_allocator;
    const ok = build: {
        const message: []const u8 = if (err.message) |m| std.mem.span(m) else "";
        appendBytes(&blob, a, message) catch break :build false;
        const private = err.vendor_code == abi.vendor_code_private_data;
        blob.appendSlice(a, std.mem.asBytes(&@as(i32, if (private) 0 else err.vendor_code))) catch break :build false;
        blob.append(a, if (private) 0 else 1) catch break :build false;
        blob.appendSlice(a, &err.sqlstate) catch break :build false;
        var details: c_int = 0;
        const has_details = private and err.private_data != null and driver.version >= abi.version_1_1_0;
        if (has_details) {
            if (driver.table.ErrorGetDetailCount) |count| {
                if (driver.table.ErrorGetDetail != null) details = @max(count(err), 0);
            }
        }
        blob.appendSlice(a, std.mem.asBytes(&@as(u32, @intCast(details)))) catch break :build false;
        var i: c_int = 0;
        while (i < details) : (i += 1) {
            const detail = driver.table.ErrorGetDetail.?(err, i);
            const key: []const u8 = if (detail.key) |k| std.mem.span(k) else "";
            const value: []const u8 = if (detail.value) |v| v[0..detail.value_length] else "";
            appendBytes(&blob, a, key) catch break :build false;
            appendBytes(&blob, a, value) catch break :build false;
        }
        break :build true;
    };
    if (!ok) return 0;
    const memory: [*]u8 = @ptrCast(std.c.malloc(@max(blob.items.len, 1)) orelse return 0);
    @memcpy(memory[0..blob.items.len], blob.items);
    out.* = memory;
    return blob.items.len;
}

fn appendBytes(blob: *std.ArrayList(u8), a: std.mem.Allocator, bytes: []const u8) !void {
    try blob.appendSlice(a, std.mem.asBytes(&@as(u32, @intCast(@min(bytes.len, std.math.maxInt(u32))))));
    try blob.appendSlice(a, bytes);
}

test "a guard admits one holder and counts refusals" {
    const object = objectNew().?;
    defer objectFree(object);
    try std.testing.expect(enter(object));
    try std.testing.expect(!enter(object));
    try std.testing.expectEqual(@as(u64, 1), object.refused);
    leave(object);
    try std.testing.expect(enter(object));
    leave(object);
}
