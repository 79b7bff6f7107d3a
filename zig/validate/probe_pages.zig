//! Proven memory, by granule, for the address probe (probe.zig): which
//! 4 KiB granules one probe call proved readable, asked of the kernel
//! together (probe_copy.zig), and the hints one call leaves the next on
//! the same thread.

const std = @import("std");
const builtin = @import("builtin");
const probe_copy = @import("probe_copy.zig");
const Os = probe_copy.Os;
const max_ranges = probe_copy.max_ranges;
pub const granule = probe_copy.granule;
pub const low_half_top = probe_copy.low_half_top;
const first_unmapped_granule = probe_copy.first_unmapped_granule;

/// Granules proven readable (or not) during one probe call, so that each
/// is asked of the kernel at most once per call, and the granules that one
/// level of a struct tree needs (strings, pointer arrays, children) are
/// asked together: one syscall per level, none for a level whose memory
/// lies in granules proven already. Once a granule is proven, its bytes
/// are read directly. Nothing is kept between calls but `hints`: memory
/// may be unmapped at any time, so a granule is proven again by each call.
pub const Pages = struct {
    const ring = 64;
    good: [ring]usize = undefined,
    n_good: usize = 0,
    bad: [8]usize = undefined,
    n_bad: usize = 0,
    pending: [max_ranges]usize = undefined,
    /// Granules from `pending[n_firm..]` are guesses (`hint`): a failed
    /// one drops the guesses after it instead of costing another syscall.
    n_pending: usize = 0,
    n_firm: usize = 0,
    last_good: usize = std.math.maxInt(usize), // none yet

    pub const State = enum { unknown, good, bad };

    pub fn state(p: *Pages, g: usize) State {
        if (g == 0 or g >= first_unmapped_granule) return .bad; // the first 4 KiB are never mapped
        if (g == p.last_good) return .good; // neighbours share granules
        for (p.good[0..@min(p.n_good, ring)]) |known| if (known == g) {
            p.last_good = g;
            return .good;
        };
        for (p.bad[0..@min(p.n_bad, p.bad.len)]) |known| if (known == g) return .bad;
        return .unknown;
    }

    pub fn queued(p: *const Pages, g: usize) bool {
        return std.mem.indexOfScalar(usize, p.pending[0..p.n_pending], g) != null;
    }

    /// Queues the unknown granules of `len` bytes at `address` (proven by
    /// the next `flush`).
    pub fn want(p: *Pages, address: usize, len: usize) void {
        if (address == 0 or len == 0 or address +% len < address) return;
        var g = address / granule;
        const last = (address + len - 1) / granule;
        if (g == last and g == p.last_good) return;
        while (g <= last) : (g += 1) {
            if (p.state(g) != .unknown or p.queued(g)) continue;
            if (p.n_pending == max_ranges) p.flush();
            p.pending[p.n_pending] = g;
            p.n_pending += 1;
            p.n_firm = p.n_pending;
        }
    }

    /// Queues a granule that is probably readable (one the last call on
    /// this thread proved), after everything wanted.
    pub fn hint(p: *Pages, g: usize) void {
        if (g == 0 or p.n_pending == max_ranges or p.state(g) != .unknown or p.queued(g)) return;
        p.pending[p.n_pending] = g;
        p.n_pending += 1;
    }

    fn addGood(p: *Pages, g: usize) void {
        p.good[p.n_good % ring] = g;
        p.n_good += 1;
    }

    /// Proves every queued granule: one syscall, more only when one fails
    /// (the kernel stops at the first unreadable one).
    pub fn flush(p: *Pages) void {
        var start: usize = 0;
        while (start < p.n_pending) {
            const unproven = p.pending[start..p.n_pending];
            if (builtin.is_test) _ = kernel_calls.fetchAdd(1, .monotonic);
            const read = Os.proveGranules(unproven);
            for (unproven[0..read]) |g| p.addGood(g);
            if (read == unproven.len) break;
            const failed = start + read;
            p.bad[p.n_bad % p.bad.len] = p.pending[failed];
            p.n_bad += 1;
            if (failed >= p.n_firm) break; // a guess: the guesses after it are dropped
            start = failed + 1;
        }
        p.n_pending = 0;
        p.n_firm = 0;
    }

    /// True when `len` bytes at `address` are readable (proving what is
    /// not known yet).
    pub fn readable(p: *Pages, address: usize, len: usize) bool {
        if (address == 0 or address +% len < address) return false;
        if (address / granule >= first_unmapped_granule) return false;
        if (len == 0) return true;
        var g = address / granule;
        const last = (address + len - 1) / granule;
        if (g == last and g == p.last_good) return true;
        while (g <= last) {
            // At most max_ranges granules at a time: the ring keeps them.
            const chunk_last = @min(last, g + max_ranges - 1);
            p.want(g * granule, (chunk_last - g + 1) * granule);
            p.flush();
            while (g <= chunk_last) : (g += 1) if (p.state(g) != .good) return false;
        }
        return true;
    }

    /// Copies `dest.len` bytes from `address`; false (nothing read) when
    /// any of them is not readable.
    pub fn copy(p: *Pages, address: usize, dest: []u8) bool {
        if (!p.readable(address, dest.len)) return false;
        if (dest.len > 0) {
            const from: [*]const u8 = @ptrFromInt(address);
            @memcpy(dest, from[0..dest.len]);
        }
        return true;
    }

    /// The length of the NUL-terminated string at `address`, or null when
    /// it is unreadable or longer than `limit` bytes. Scanned in place, a
    /// granule at a time.
    pub fn stringLength(p: *Pages, address: usize, limit: usize) ?usize {
        var at = address;
        while (at - address <= limit) {
            if (!p.readable(at, 1)) return null;
            const end = (at / granule + 1) * granule; // below 2^56: readable
            const from: [*]const u8 = @ptrFromInt(at);
            if (std.mem.indexOfScalar(u8, from[0 .. end - at], 0)) |n| {
                const length = at - address + n;
                return if (length <= limit) length else null;
            }
            at = end;
        }
        return null;
    }
};

/// How many times the kernel was asked to prove granules (tests only).
pub var kernel_calls = std.atomic.Value(usize).init(0);

/// Granules the last probe on this thread proved, tried with the next
/// one's struct roots: a producer tends to build each tree in the memory
/// of the one before, so that one syscall often proves a whole tree.
pub threadlocal var hints: [8]usize = @splat(0);
pub threadlocal var n_hints: usize = 0;

pub fn hintAll(p: *Pages) void {
    for (hints[0..n_hints]) |g| p.hint(g);
}

pub fn keepHints(p: *const Pages) void {
    const n = @min(p.n_good, hints.len);
    for (0..n) |i| hints[i] = p.good[(p.n_good - 1 - i) % Pages.ring];
    n_hints = n;
}

/// True when `len` bytes at `address` are readable.
pub fn readable(address: usize, len: usize) bool {
    var p: Pages = .{};
    return p.readable(address, len);
}

/// The length of the NUL-terminated string at `address`, or null when it
/// is unreadable or longer than `limit` bytes.
pub fn stringLength(address: usize, limit: usize) ?usize {
    if (address == 0) return null;
    var p: Pages = .{};
    return p.stringLength(address, limit);
}
