//! Thread primitives for code that runs on threads this library does not
//! own (consumer threads calling release, GC threads running deallocators,
//! producer threads calling async handlers). Plain pthreads: they need no
//! `std.Io` instance, and they are what every C peer of ours uses too.

const std = @import("std");
const c = std.c;

pub const Mutex = struct {
    inner: c.pthread_mutex_t = c.PTHREAD_MUTEX_INITIALIZER,

    pub fn lock(self: *Mutex) void {
        std.debug.assert(c.pthread_mutex_lock(&self.inner) == .SUCCESS);
    }

    pub fn unlock(self: *Mutex) void {
        std.debug.assert(c.pthread_mutex_unlock(&self.inner) == .SUCCESS);
    }
};

pub const Condition = struct {
    inner: c.pthread_cond_t = c.PTHREAD_COND_INITIALIZER,

    pub fn wait(self: *Condition, mutex: *Mutex) void {
        std.debug.assert(c.pthread_cond_wait(&self.inner, &mutex.inner) == .SUCCESS);
    }

    pub fn signal(self: *Condition) void {
        _ = c.pthread_cond_signal(&self.inner);
    }

    pub fn broadcast(self: *Condition) void {
        _ = c.pthread_cond_broadcast(&self.inner);
    }
};

/// An identifier of the calling thread, comparable across calls.
pub fn currentThread() usize {
    return @intFromPtr(c.pthread_self());
}

test "mutex and condition hand a value between threads" {
    const Box = struct {
        mutex: Mutex = .{},
        ready: Condition = .{},
        value: u32 = 0,
        fn produce(self: *@This()) void {
            self.mutex.lock();
            self.value = 7;
            self.mutex.unlock();
            self.ready.signal();
        }
    };
    var box: Box = .{};
    const t = try std.Thread.spawn(.{}, Box.produce, .{&box});
    box.mutex.lock();
    while (box.value == 0) box.ready.wait(&box.mutex);
    box.mutex.unlock();
    t.join();
    try std.testing.expectEqual(@as(u32, 7), box.value);
}
