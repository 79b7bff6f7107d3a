//! Guards calls into a C producer's `ArrowAsyncProducer` against the
//! producer going away.
//!
//! The spec lets the producer free its `ArrowAsyncProducer` as soon as it
//! calls the handler's release. A consumer that calls `request`/`cancel` from
//! another thread must therefore never be inside (or about to enter) one of
//! those calls when release returns. Every such call goes through `enter` /
//! `leave`; the handler's release calls `close`, which waits for the calls in
//! progress and makes later `enter`s fail.
//!
//! A producer that calls release from inside its own `request`/`cancel`
//! (which the spec forbids) would wait on itself: `close` does not wait for
//! calls made by the thread that closes.

const std = @import("std");
const sync = @import("../core/sync.zig");

/// Threads that may be inside a producer call at once (the JS thread, the
/// producer's thread in on_schema, ...). More wait for a free slot.
const slots = 8;

pub const Gate = struct {
    mutex: sync.Mutex = .{},
    changed: sync.Condition = .{},
    closed: bool = false,
    /// Thread ids of the callers inside a producer call (0: free slot).
    inside: [slots]usize = @splat(0),

    /// Returns true when the caller may call the producer; it must then call
    /// `leave` once the call returned.
    pub fn enter(self: *Gate) bool {
        const me = sync.currentThread();
        self.mutex.lock();
        defer self.mutex.unlock();
        while (true) {
            if (self.closed) return false;
            for (&self.inside) |*slot| {
                if (slot.* == 0) {
                    slot.* = me;
                    return true;
                }
            }
            self.changed.wait(&self.mutex);
        }
    }

    pub fn leave(self: *Gate) void {
        const me = sync.currentThread();
        self.mutex.lock();
        for (&self.inside) |*slot| {
            if (slot.* == me) {
                slot.* = 0;
                break;
            }
        }
        self.mutex.unlock();
        self.changed.broadcast();
    }

    /// Makes every later `enter` fail and waits until no other thread is
    /// inside a producer call.
    pub fn close(self: *Gate) void {
        const me = sync.currentThread();
        self.mutex.lock();
        defer self.mutex.unlock();
        self.closed = true;
        while (self.othersInside(me)) self.changed.wait(&self.mutex);
    }

    fn othersInside(self: *const Gate, me: usize) bool {
        for (self.inside) |slot| {
            if (slot != 0 and slot != me) return true;
        }
        return false;
    }
};

test "close waits for a call in progress on another thread" {
    const Race = struct {
        gate: Gate = .{},
        in_call: std.atomic.Value(bool) = .init(false),
        finished_call: std.atomic.Value(bool) = .init(false),
        fn caller(self: *@This()) void {
            std.debug.assert(self.gate.enter());
            self.in_call.store(true, .release);
            var spins: u32 = 0;
            while (spins < 2000) : (spins += 1) std.atomic.spinLoopHint();
            self.finished_call.store(true, .release);
            self.gate.leave();
        }
    };
    var race: Race = .{};
    const t = try std.Thread.spawn(.{}, Race.caller, .{&race});
    while (!race.in_call.load(.acquire)) std.atomic.spinLoopHint();
    race.gate.close();
    try std.testing.expect(race.finished_call.load(.acquire));
    try std.testing.expect(!race.gate.enter());
    t.join();
}

test "closing from inside a call on the same thread does not wait on itself" {
    var gate: Gate = .{};
    try std.testing.expect(gate.enter());
    gate.close();
    gate.leave();
    try std.testing.expect(!gate.enter());
}
