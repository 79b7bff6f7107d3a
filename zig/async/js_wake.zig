//! Waking the JS thread from any thread, once per batch of news.
//!
//! Native objects that JS waits on (async stream consumers and producers)
//! change state on threads JS cannot run on. Each such object embeds a
//! `Waker` holding a numeric token that the JS side chose; `wake()` calls
//! the registered notifier (a Bun threadsafe JSCallback taking that token)
//! only when no wake of this object is already pending, so a producer that
//! pushes 10,000 tasks queues at most one JS callback at a time. JS clears
//! the pending flag (`clear()`) *before* it reads the object's state, so news
//! that arrives after the read always causes a new wake: none is lost.
//!
//! Before it arms and sleeps, JS may wait a few microseconds for news
//! instead (`awaitNews`: a lock-free counter checked between yields of
//! the CPU): a peer thread that keeps up answers sooner than a JS thread
//! asleep in its event loop can run again (tens of microseconds), and
//! everything it pushed meanwhile is then handled in one go. So a stream
//! costs a JS callback only when its peer is really slow, never one per
//! batch.
//!
//! Threads: `wake` from any thread, with no lock of the caller's held (the
//! notifier may take Bun's own locks). `clear` and `awaitNews` from the JS
//! thread; `news` from any.
//! The notifier only carries the token: it never dereferences the object,
//! so a wake that reaches JS after the object was freed is harmless (JS
//! finds no object under that token and ignores it).
//!
//! The sync device streams use the same mechanism; this module is
//! deliberately small and generic so both share it.

const std = @import("std");
const monotonicNs = @import("../core/js_queue.zig").monotonicNs;
const js_context = @import("../core/js_context.zig");

/// A void callback that runs `token`'s handler later on the JS thread.
pub const Notifier = *const fn (token: u32) callconv(.c) void;

/// One notifier per JS thread (js_context.zig): a wake reaches the thread
/// that created the object, and none reaches a thread that ended.
var notifiers: [js_context.max_contexts]std.atomic.Value(?Notifier) = @splat(.init(null));

/// Sets the calling JS thread's notifier.
pub fn setNotifier(callback: ?Notifier) void {
    notifiers[js_context.current()].store(callback, .release);
}

/// js_context close hook.
pub fn forget(context: u32) void {
    notifiers[context].store(null, .release);
}

pub const Waker = struct {
    token: u32,
    /// The JS thread that created the object (js_context.zig).
    context: u32,
    /// True from a wake until JS clears it.
    pending: std.atomic.Value(bool) = .init(false),
    /// Notifications sent so far (diagnostics: tests check that news
    /// arriving while one is pending costs no further JS callback).
    sent: std.atomic.Value(u32) = .init(0),
    /// Counts every piece of news, woken for or not: JS reads it without a
    /// lock while it spins briefly instead of sleeping (see `news`).
    news_seen: std.atomic.Value(u32) = .init(0),

    /// Called on the JS thread that will handle the wakes.
    pub fn init(token: u32) Waker {
        return .{ .token = token, .context = js_context.current() };
    }

    /// Tells JS that this object has news, unless it was already told and
    /// has not looked yet. Returns whether a notification was sent.
    pub fn wake(self: *Waker) bool {
        _ = self.news_seen.fetchAdd(1, .release);
        if (self.pending.swap(true, .acq_rel)) return false;
        const notify = notifiers[self.context].load(.acquire) orelse return false;
        _ = self.sent.fetchAdd(1, .monotonic);
        notify(self.token);
        return true;
    }

    /// How much news there was so far. A JS thread that expects news
    /// within microseconds (a peer thread is working for it) polls this
    /// for a bounded window before it arms and sleeps: a sleeping JS thread
    /// takes tens of microseconds to run again, through its event loop.
    pub fn news(self: *const Waker) u32 {
        return self.news_seen.load(.acquire);
    }

    /// Waits up to `window_ns` for news past `seen` without sleeping in
    /// the event loop: checks, then yields the CPU (so that a peer thread
    /// waiting for this core runs), until news or the window ends. Returns
    /// whether news came. The JS thread calls it before it arms and sleeps.
    pub fn awaitNews(self: *const Waker, seen: u32, window_ns: u64) bool {
        if (self.news() != seen) return true;
        if (window_ns == 0) return false;
        const deadline = monotonicNs() + window_ns;
        while (monotonicNs() < deadline) {
            std.Thread.yield() catch std.atomic.spinLoopHint();
            if (self.news() != seen) return true;
        }
        return false;
    }

    /// Notifications sent so far.
    pub fn sentCount(self: *const Waker) u32 {
        return self.sent.load(.monotonic);
    }

    /// Called by JS before reading the object's state.
    pub fn clear(self: *Waker) void {
        self.pending.store(false, .release);
    }
};

test "wakes coalesce until cleared" {
    const Count = struct {
        var calls: u32 = 0;
        var last: u32 = 0;
        fn notify(token: u32) callconv(.c) void {
            calls += 1;
            last = token;
        }
    };
    setNotifier(Count.notify);
    defer setNotifier(null);
    var waker = Waker.init(42);
    try std.testing.expect(waker.wake());
    try std.testing.expect(!waker.wake());
    try std.testing.expectEqual(@as(u32, 1), Count.calls);
    waker.clear();
    try std.testing.expect(waker.wake());
    try std.testing.expectEqual(@as(u32, 2), Count.calls);
    try std.testing.expectEqual(@as(u32, 2), waker.sentCount());
    try std.testing.expectEqual(@as(u32, 3), waker.news()); // the coalesced one counts as news
    try std.testing.expectEqual(@as(u32, 42), Count.last);
    try std.testing.expect(waker.awaitNews(0, 0)); // news since 0 already
    try std.testing.expect(!waker.awaitNews(waker.news(), 1000)); // none within 1 us
}
