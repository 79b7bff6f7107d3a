//! One context per JS thread (the main thread and each Worker) that loaded
//! the library.
//!
//! Every JS thread registers its own threadsafe callbacks (wake-ups, the
//! work queue, released exports) and drains its own queues: a callback of
//! one JS thread must never run for another, and news about an object must
//! reach the thread that owns it. So each JS thread gets a context number
//! the first time it touches per-thread state (`current`), and every native
//! object that reports to JS records the number of the thread that created
//! it (`current()` is read on that thread, inside its FFI call). Released
//! exports carry their context in their keepalive id (`keepalive_shift`).
//!
//! Context 0 is never a JS thread's: it serves threads that never loaded
//! the library from JS (the Zig unit tests). Numbers are not reused, so an
//! object that outlives its thread can never report to another thread; a
//! process may open `max_contexts - 1` JS contexts in its life.
//!
//! When a JS thread ends (its OS thread exits: a Worker terminated or
//! finished), a pthread key destructor closes its context: its callbacks
//! are forgotten, so nothing calls into the ended thread, and the modules
//! drop or refuse what was queued for it (`closeHooks`).

const std = @import("std");
const sync = @import("sync.zig");

pub const max_contexts = 1024;
/// Keepalive ids are `context << keepalive_shift | local id`: exact in an
/// f64 (1024 << 32 < 2^53), and unique across JS threads.
pub const keepalive_shift = 32;

pub const State = enum(u8) { unused = 0, open = 1, closed = 2 };

var states: [max_contexts]std.atomic.Value(State) = @splat(.init(.unused));
var next: std.atomic.Value(u32) = .init(1);
/// The main JS thread's context (0 until it opened one). Its memory lives
/// as long as the process, so other JS threads may view it in place.
var main_context: std.atomic.Value(u32) = .init(0);
threadlocal var current_context: u32 = 0;
/// True on a JS thread (one that opened its context), false on every other
/// thread, adopted ones included.
threadlocal var on_js_thread: bool = false;

var key_mutex: sync.Mutex = .{};
var key: std.c.pthread_key_t = undefined;
var key_made = false;

/// Called for a context when its thread ends, after its callbacks are
/// forgotten. Set once by the modules that keep per-context state.
pub const CloseHook = *const fn (context: u32) void;
var close_hooks: [8]?CloseHook = @splat(null);

pub fn onClose(hook: CloseHook) void {
    key_mutex.lock();
    defer key_mutex.unlock();
    for (&close_hooks) |*slot| {
        if (slot.* == hook) return;
        if (slot.* == null) {
            slot.* = hook;
            return;
        }
    }
}

fn threadEnded(value: ?*anyopaque) callconv(.c) void {
    const context: u32 = @intCast(@intFromPtr(value));
    close(context);
}

/// Closes `context`: nothing queues for it any more.
pub fn close(context: u32) void {
    if (context == 0 or context >= max_contexts) return;
    states[context].store(.closed, .seq_cst);
    var hooks: [8]?CloseHook = undefined;
    key_mutex.lock();
    hooks = close_hooks;
    key_mutex.unlock();
    for (hooks) |hook| if (hook) |h| h(context);
}

/// The calling thread's context, opened on its first use. 0 when every
/// context number was used up (`opened` then says false).
pub fn currentOrOpen() u32 {
    if (current_context != 0) return current_context;
    const number = next.fetchAdd(1, .monotonic);
    if (number >= max_contexts) return 0;
    key_mutex.lock();
    if (!key_made) {
        if (std.c.pthread_key_create(&key, threadEnded) != .SUCCESS) {
            key_mutex.unlock();
            return 0;
        }
        key_made = true;
    }
    key_mutex.unlock();
    _ = std.c.pthread_setspecific(key, @ptrFromInt(number));
    states[number].store(.open, .seq_cst);
    current_context = number;
    return number;
}

/// Opens the calling JS thread's context (`currentOrOpen`), recording
/// whether it is the process's main JS thread.
pub fn open(is_main: bool) u32 {
    const context = currentOrOpen();
    if (context != 0 and is_main) main_context.store(context, .release);
    on_js_thread = context != 0;
    return context;
}

/// Whether the calling thread is a JS thread (JS may be called from it).
pub fn onJsThread() bool {
    return on_js_thread;
}

const DlInfo = extern struct {
    fname: ?[*:0]const u8,
    fbase: ?*anyopaque,
    sname: ?[*:0]const u8,
    saddr: ?*anyopaque,
};
extern "c" fn dladdr(address: ?*const anyopaque, info: *DlInfo) c_int;

/// Whether `function` lies outside every loaded object file: code made at
/// run time, as bun:ffi's JSCallbacks are. Such a callback may run only on
/// its own JS thread (unless threadsafe), so the library calls it there.
pub fn isRuntimeCode(function: ?*const anyopaque) bool {
    const address = function orelse return false;
    // A collection releases many imports of one producer in a row, and
    // each asks about two callbacks (its array's release and its
    // schema's): the last answers are kept per thread, so dladdr (a search
    // of every loaded object, slow in a process with many) runs once per
    // callback, not once or twice per import.
    for (code_addresses, code_answers) |known, answer| if (known == @intFromPtr(address)) return answer;
    var info: DlInfo = undefined;
    if (@import("builtin").is_test) dladdr_calls += 1;
    const answer = dladdr(address, &info) == 0;
    code_addresses[next_code_slot] = @intFromPtr(address);
    code_answers[next_code_slot] = answer;
    next_code_slot = (next_code_slot + 1) % code_addresses.len;
    return answer;
}
threadlocal var code_addresses: [4]usize = @splat(0);
threadlocal var code_answers: [4]bool = @splat(false);
threadlocal var next_code_slot: usize = 0;
/// How many times dladdr ran on this thread (tests only).
threadlocal var dladdr_calls: usize = 0;

/// Why memory exported on JS thread `context` cannot be viewed in place
/// from the calling thread, or null when it can: the calling thread's own
/// exports and the main thread's can (the main thread's memory lives as
/// long as the process); a Worker's cannot, as its heap is freed when it
/// ends, whatever another thread still views.
pub fn foreignWorker(context: u32) bool {
    if (context == 0 or context == current_context) return false;
    return context != main_context.load(.acquire);
}

pub const foreign_worker_message = "it was exported by this library on another JS thread, a Worker, so its buffers live in that Worker's JS heap, which is freed when the Worker ends whatever this thread still views. Only the main thread's exports (or a thread's own) can be imported on another JS thread without copying; send a Worker's data to another thread by postMessage (a copy), or import it on that Worker";

/// Makes the calling native thread act for JS thread `context` (a thread
/// the library runs for one JS thread: what it imports is that thread's).
/// It does not own the context: its exit closes nothing.
pub fn adopt(context: u32) void {
    current_context = context;
}

/// The calling thread's context (0 if it never opened one).
pub fn current() u32 {
    return current_context;
}

pub fn isOpen(context: u32) bool {
    if (context == 0) return true;
    if (context >= max_contexts) return false;
    return states[context].load(.seq_cst) == .open;
}

/// The context a keepalive id reports to.
pub fn ofKeepalive(id: u64) u32 {
    const context = id >> keepalive_shift;
    return if (context < max_contexts) @intCast(context) else 0;
}

test "code in a loaded object is not runtime code" {
    try std.testing.expect(!isRuntimeCode(@ptrCast(&currentOrOpen)));
    try std.testing.expect(!isRuntimeCode(@ptrCast(&currentOrOpen))); // the kept answer
    try std.testing.expect(!isRuntimeCode(null));
}

test "two callbacks asked in turn cost one dladdr each" {
    const before = dladdr_calls;
    for (0..10) |_| {
        try std.testing.expect(!isRuntimeCode(@ptrCast(&currentOrOpen)));
        try std.testing.expect(!isRuntimeCode(@ptrCast(&isOpen)));
    }
    try std.testing.expect(dladdr_calls - before <= 2);
}

test "contexts are per thread and closed at thread exit" {
    const Seen = struct {
        var closed: std.atomic.Value(u32) = .init(0);
        fn hook(context: u32) void {
            closed.store(context, .seq_cst);
        }
        fn run(out: *u32) void {
            out.* = currentOrOpen();
        }
    };
    onClose(Seen.hook);
    var other: u32 = 0;
    const t = try std.Thread.spawn(.{}, Seen.run, .{&other});
    t.join();
    try std.testing.expect(other != 0);
    try std.testing.expectEqual(other, Seen.closed.load(.seq_cst));
    try std.testing.expect(!isOpen(other));
    try std.testing.expect(isOpen(0));
}
