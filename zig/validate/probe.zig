//! Fault-safe checks of a C struct that a caller names by address, before
//! anything dereferences it.
//!
//! An address from JS may name anything: the wrong struct (a schema where an
//! array is expected), a released or zeroed struct, random bytes, or no
//! mapped memory at all (8, 4096). Reading such memory directly faults and
//! takes the whole process down. Here memory is first proven readable
//! through the kernel, which reports an unreadable range as an error
//! instead of a fault: one byte of each 4 KiB granule (no page is
//! smaller) goes to a memfd in one `pwritev` on Linux
//! (`process_vm_readv` on our own pid, then a pipe, where that fails),
//! read with `mach_vm_read_overwrite` on macOS. Proven memory is then
//! read directly. `Pages` keeps what one call proved, so a granule is
//! asked about once per call, and the probe asks for a whole tree level
//! (roots; strings and pointer arrays; children) at once: about one
//! syscall per level, none for a level already proven, and usually one
//! per import in all with the previous probe's granules as hints.
//! Another thread that unmaps the memory between the proof and the read
//! breaks the producer's contract, as it would for the import itself.
//!
//! What is checked (`probeStruct`): the struct's own bytes are readable
//! (and, for a destination, writable); a live struct's release callback,
//! and every other callback it sets, lies in executable memory (Linux: the
//! executable ranges of /proc/self/maps, cached and re-read on a miss;
//! macOS: mach_vm_region); its shape is sane (non-negative lengths and counts below the
//! library's limits; an ArrowSchema's format is a readable NUL-terminated
//! string of at most `max_format_bytes`; name, buffer, child and dictionary
//! pointers are readable); and the struct's direct children and dictionary
//! are readable memory. Deeper nodes belong to the producer's contract; the
//! import's validation checks their shape. A struct that looks like the
//! other member of a pair (a schema where an array is expected, an
//! ArrowDeviceArrayStream where an ArrowArrayStream is expected, and the
//! reverse) is refused with a message that says so.
//!
//! Nothing here allocates or calls the struct's callbacks; any thread.

const std = @import("std");
const builtin = @import("builtin");
const abi = @import("../core/abi.zig");
const status = @import("../core/status.zig");
const Status = status.Status;
const fail = status.fail;

/// Which struct `probeStruct` checks (the C API passes these numbers).
pub const Kind = enum(c_int) {
    schema = 0,
    array = 1,
    device_array = 2,
    array_stream = 3,
    device_array_stream = 4,
    async_handler = 5,

    fn cName(kind: Kind) []const u8 {
        return switch (kind) {
            .schema => "ArrowSchema",
            .array => "ArrowArray",
            .device_array => "ArrowDeviceArray",
            .array_stream => "ArrowArrayStream",
            .device_array_stream => "ArrowDeviceArrayStream",
            .async_handler => "ArrowAsyncDeviceStreamHandler",
        };
    }

    /// The word the library's other messages use ("schema is released").
    fn shortName(kind: Kind) []const u8 {
        return switch (kind) {
            .schema => "schema",
            .array, .device_array => "array",
            .array_stream, .device_array_stream => "stream",
            .async_handler => "handler",
        };
    }

    fn size(kind: Kind) usize {
        return switch (kind) {
            .schema => @sizeOf(abi.ArrowSchema),
            .array => @sizeOf(abi.ArrowArray),
            .device_array => @sizeOf(abi.ArrowDeviceArray),
            .array_stream => @sizeOf(abi.ArrowArrayStream),
            .device_array_stream => @sizeOf(abi.ArrowDeviceArrayStream),
            .async_handler => @sizeOf(abi.ArrowAsyncDeviceStreamHandler),
        };
    }
};

/// What the caller accepts.
pub const Mode = enum(c_int) {
    /// A live struct, moved in by the call: a released one is `released`.
    live = 0,
    /// A struct viewed or written in place: a released (zeroed) one is fine
    /// as long as its bytes are readable and writable.
    view = 1,
};

/// Longest format string taken as a format: the format parser's limit
/// (1 MiB; the spec sets none, and a time zone may be long).
pub const max_format_bytes = @import("../core/format.zig").max_format_length;
/// Most buffers or children a node may declare (export_array's limits).
pub const max_count = 1 << 20;

// ---------------------------------------------------------------------------
// Fault-safe copies.

const Linux = struct {
    const linux = std.os.linux;
    const iovec = std.posix.iovec;
    const iovec_const = std.posix.iovec_const;

    /// -1: not known yet; 0: process_vm_readv works; 1: use the pipe.
    var use_pipe = std.atomic.Value(i8).init(-1);
    var pipe_fds: [2]i32 = .{ -1, -1 };
    var pipe_mutex: @import("../core/sync.zig").Mutex = .{};

    /// This process's pid, cached (a getpid per probe doubles its cost);
    /// a forked child clears it (pthread_atfork) and reads its own.
    var cached_pid = std.atomic.Value(i32).init(0);
    var atfork_set = std.atomic.Value(bool).init(false);
    extern "c" fn pthread_atfork(prepare: ?*const fn () callconv(.c) void, parent: ?*const fn () callconv(.c) void, child: ?*const fn () callconv(.c) void) c_int;

    fn forgetPid() callconv(.c) void {
        cached_pid.store(0, .release);
    }

    fn pid() i32 {
        const known = cached_pid.load(.acquire);
        if (known != 0) return known;
        if (!atfork_set.swap(true, .acq_rel)) _ = pthread_atfork(null, null, forgetPid);
        const now = linux.getpid();
        cached_pid.store(now, .release);
        return now;
    }

    /// A memfd that probes write to: a pwritev of unreadable memory fails
    /// (or stops short) with EFAULT, and costs one plain copy, less than a
    /// process_vm_readv. -2: not made yet; -1: unavailable.
    var sink_fd = std.atomic.Value(i32).init(-2);

    fn sink() i32 {
        const fd = sink_fd.load(.acquire);
        if (fd != -2) return fd;
        const rc = linux.memfd_create("abd-probe", 1); // MFD_CLOEXEC
        const made: i32 = if (linux.errno(rc) == .SUCCESS) @intCast(rc) else -1;
        if (sink_fd.cmpxchgStrong(-2, made, .acq_rel, .acquire)) |other| {
            if (made >= 0) _ = linux.close(made);
            return other;
        }
        return made;
    }

    /// Copies each range with one syscall; returns how many leading ranges
    /// were read whole (the kernel stops at the first fault). The ranges
    /// are first written to the sink (which faults safely) and, once
    /// known readable, copied directly. Ranges at or above `low_half_top`
    /// go in calls of their own, as in `proveGranules`.
    fn copyMany(ranges: []const Range) usize {
        var start: usize = 0;
        while (start < ranges.len) {
            const high = ranges[start].address >= low_half_top;
            var end = start + 1;
            while (end < ranges.len and (ranges[end].address >= low_half_top) == high) end += 1;
            const copied = copyRun(ranges[start..end]);
            if (copied < end - start) return start + copied;
            start = end;
        }
        return ranges.len;
    }

    fn copyRun(ranges: []const Range) usize {
        const fd = sink();
        if (fd >= 0) {
            var iov: [max_ranges]iovec_const = undefined;
            for (ranges, 0..) |r, i| iov[i] = .{ .base = @ptrFromInt(r.address), .len = r.dest.len };
            const rc = linux.pwritev(fd, &iov, ranges.len, 0);
            switch (linux.errno(rc)) {
                .SUCCESS => {
                    var left = rc;
                    for (ranges, 0..) |r, i| {
                        if (left < r.dest.len) return i;
                        left -= r.dest.len;
                        const from: [*]const u8 = @ptrFromInt(r.address);
                        @memcpy(r.dest, from[0..r.dest.len]);
                    }
                    return ranges.len;
                },
                .FAULT => return 0,
                else => {}, // a full disk, a limit: the other ways
            }
        }
        if (use_pipe.load(.acquire) != 1) {
            var local: [max_ranges]iovec = undefined;
            var remote: [max_ranges]iovec_const = undefined;
            for (ranges, 0..) |r, i| {
                local[i] = .{ .base = r.dest.ptr, .len = r.dest.len };
                remote[i] = .{ .base = @ptrFromInt(r.address), .len = r.dest.len };
            }
            const rc = linux.process_vm_readv(pid(), local[0..ranges.len], remote[0..ranges.len], 0);
            switch (linux.errno(rc)) {
                .SUCCESS => {
                    use_pipe.store(0, .release);
                    var left = rc;
                    for (ranges, 0..) |r, i| {
                        if (left < r.dest.len) return i;
                        left -= r.dest.len;
                    }
                    return ranges.len;
                },
                .FAULT => return 0,
                .NOSYS, .PERM, .ACCES => use_pipe.store(1, .release),
                else => return 0,
            }
        }
        for (ranges, 0..) |r, i| if (!pipeCopy(r.address, r.dest)) return i;
        return ranges.len;
    }

    /// Proves one byte of each granule readable, in one syscall (more on
    /// the fallbacks); returns how many leading granules were proven.
    /// Granules at or above `low_half_top` go in calls of their own: with
    /// 4-level paging they lie above the user address space, and one such
    /// iovec fails a whole pwritev with EFAULT (Linux 6.x checks every
    /// iovec before copying), which would condemn the readable ones
    /// queued with it.
    fn proveGranules(granules: []const usize) usize {
        var start: usize = 0;
        while (start < granules.len) {
            const high = granules[start] >= low_half_top / granule;
            var end = start + 1;
            while (end < granules.len and (granules[end] >= low_half_top / granule) == high) end += 1;
            const proven = proveRun(granules[start..end]);
            if (proven < end - start) return start + proven;
            start = end;
        }
        return granules.len;
    }

    fn proveRun(granules: []const usize) usize {
        std.debug.assert(granules.len <= max_ranges);
        var iov: [max_ranges]iovec_const = undefined;
        for (granules, 0..) |g, i| {
            if (g == 0) return if (i == 0) 0 else proveRun(granules[0..i]);
            iov[i] = .{ .base = @ptrFromInt(g * granule), .len = 1 };
        }
        const fd = sink();
        if (fd >= 0) {
            const rc = linux.pwritev(fd, &iov, granules.len, 0);
            switch (linux.errno(rc)) {
                .SUCCESS => return rc, // a byte per granule, up to the first fault
                .FAULT => return 0,
                else => {},
            }
        }
        var bytes: [max_ranges]u8 = undefined;
        var ranges: [max_ranges]Range = undefined;
        for (granules, 0..) |g, i| ranges[i] = .{ .address = g * granule, .dest = bytes[i .. i + 1] };
        return Linux.copyMany(ranges[0..granules.len]);
    }

    /// A write() of unreadable memory into a pipe fails with EFAULT; what
    /// was written is read straight back. One pipe, serialized.
    fn pipeCopy(address: usize, dest: []u8) bool {
        pipe_mutex.lock();
        defer pipe_mutex.unlock();
        if (pipe_fds[0] < 0) {
            if (linux.errno(linux.pipe2(&pipe_fds, .{ .CLOEXEC = true, .NONBLOCK = true })) != .SUCCESS) {
                pipe_fds = .{ -1, -1 };
                return false;
            }
        }
        var done: usize = 0;
        while (done < dest.len) {
            const chunk = @min(dest.len - done, 4096);
            const written = linux.write(pipe_fds[1], @ptrFromInt(address + done), chunk);
            if (linux.errno(written) != .SUCCESS or written == 0) return false;
            var got: usize = 0;
            while (got < written) {
                const r = linux.read(pipe_fds[0], dest[done + got ..].ptr, written - got);
                if (linux.errno(r) != .SUCCESS or r == 0) return false;
                got += r;
            }
            done += written;
        }
        return true;
    }

    /// Executable ranges of /proc/self/maps, cached; re-read when an
    /// address is not in them (code mapped since: a library, JIT code).
    var exec_mutex: @import("../core/sync.zig").Mutex = .{};
    var exec_ranges: [2048][2]usize = undefined;
    var exec_count: usize = 0;
    var exec_loaded = false;
    var exec_overflow = false;

    fn inRanges(address: usize) bool {
        for (exec_ranges[0..exec_count]) |r| if (address >= r[0] and address < r[1]) return true;
        return false;
    }

    /// Null when /proc/self/maps cannot be read (then nothing is refused).
    fn executable(address: usize) ?bool {
        exec_mutex.lock();
        defer exec_mutex.unlock();
        if (exec_loaded and inRanges(address)) return true;
        if (!loadRanges()) return null;
        if (inRanges(address)) return true;
        return if (exec_overflow) null else false; // ranges left out: cannot tell
    }

    fn loadRanges() bool {
        const fd_rc = linux.open("/proc/self/maps", .{ .CLOEXEC = true }, 0);
        if (linux.errno(fd_rc) != .SUCCESS) return false;
        const fd: i32 = @intCast(fd_rc);
        defer _ = linux.close(fd);
        exec_count = 0;
        exec_overflow = false;
        var chunk: [4096]u8 = undefined;
        // The first 80 bytes of each line hold "start-end perms".
        var line: [80]u8 = undefined;
        var line_len: usize = 0;
        while (true) {
            const n = linux.read(fd, &chunk, chunk.len);
            if (linux.errno(n) != .SUCCESS) return false;
            if (n == 0) break;
            for (chunk[0..n]) |ch| {
                if (ch == '\n') {
                    addRange(line[0..line_len]);
                    line_len = 0;
                } else if (line_len < line.len) {
                    line[line_len] = ch;
                    line_len += 1;
                }
            }
        }
        if (line_len > 0) addRange(line[0..line_len]);
        exec_loaded = true;
        return true;
    }

    fn addRange(text: []const u8) void {
        const dash = std.mem.indexOfScalar(u8, text, '-') orelse return;
        const space = std.mem.indexOfScalarPos(u8, text, dash, ' ') orelse return;
        if (space + 3 >= text.len or text[space + 3] != 'x') return;
        const start = std.fmt.parseInt(usize, text[0..dash], 16) catch return;
        const end = std.fmt.parseInt(usize, text[dash + 1 .. space], 16) catch return;
        if (exec_count == exec_ranges.len) {
            exec_overflow = true;
            return;
        }
        exec_ranges[exec_count] = .{ start, end };
        exec_count += 1;
    }

    /// Writes `bytes` (just read from `address`) back: fails without a
    /// fault when the range is read-only.
    fn writeBack(address: usize, bytes: []const u8) bool {
        if (use_pipe.load(.acquire) == 1) return true; // not checkable without the syscall
        const local = [_]iovec_const{.{ .base = bytes.ptr, .len = bytes.len }};
        const remote = [_]iovec_const{.{ .base = @ptrFromInt(address), .len = bytes.len }};
        const rc = linux.process_vm_writev(pid(), &local, &remote, 0);
        return switch (linux.errno(rc)) {
            .SUCCESS => rc == bytes.len,
            .NOSYS, .PERM, .ACCES => true,
            else => false,
        };
    }
};

const Darwin = struct {
    // libSystem (<mach/mach_vm.h>, <mach/mach_init.h>).
    extern "c" var mach_task_self_: u32;
    extern "c" fn mach_vm_read_overwrite(target_task: u32, address: u64, size: u64, data: u64, out_size: *u64) c_int;

    fn copyIn(address: usize, dest: []u8) bool {
        if (dest.len == 0) return true;
        var out_size: u64 = 0;
        const rc = mach_vm_read_overwrite(mach_task_self_, address, dest.len, @intFromPtr(dest.ptr), &out_size);
        return rc == 0 and out_size == dest.len;
    }

    fn copyMany(ranges: []const Range) usize {
        for (ranges, 0..) |r, i| if (!Darwin.copyIn(r.address, r.dest)) return i;
        return ranges.len;
    }

    fn proveGranules(granules: []const usize) usize {
        for (granules, 0..) |g, i| {
            var byte: [1]u8 = undefined;
            if (g == 0 or !Darwin.copyIn(g * granule, &byte)) return i;
        }
        return granules.len;
    }

    extern "c" fn mach_vm_region(target_task: u32, address: *u64, size: *u64, flavor: c_int, info: *[16]i32, info_count: *u32, object_name: *u32) c_int;
    const vm_region_basic_info_64 = 9;
    const vm_region_basic_info_count_64 = 9;
    const vm_prot_execute = 4;

    /// Null when the region cannot be queried (then nothing is refused).
    fn executable(address: usize) ?bool {
        var region: u64 = address;
        var size: u64 = 0;
        var info: [16]i32 = @splat(0);
        var count: u32 = vm_region_basic_info_count_64;
        var object: u32 = 0;
        const rc = mach_vm_region(mach_task_self_, &region, &size, vm_region_basic_info_64, &info, &count, &object);
        if (rc == 1) return false; // KERN_INVALID_ADDRESS: no region at or above it
        if (rc != 0) return null;
        if (region > address) return false; // the next region starts above: unmapped
        return info[0] & vm_prot_execute != 0; // info[0]: protection
    }

    /// Read-only memory is not detected here (no fault-safe write probe
    /// is used on macOS); a readable destination is taken as writable.
    fn writeBack(address: usize, bytes: []const u8) bool {
        _ = address;
        _ = bytes;
        return true;
    }
};

/// One piece of memory to copy in: `dest.len` bytes from `address`.
pub const Range = struct { address: usize, dest: []u8 };
/// Most ranges one `copyMany` takes (one syscall's iovecs).
pub const max_ranges = 64;

const Os = switch (builtin.os.tag) {
    .linux => Linux,
    .macos => Darwin,
    else => @compileError("zig/validate/probe.zig: no fault-safe copy for this OS"),
};

/// Copies every range (at most `max_ranges`; a NULL or wrapping one counts
/// as unreadable); returns how many leading ranges were read whole.
pub fn copyMany(ranges: []const Range) usize {
    std.debug.assert(ranges.len <= max_ranges);
    for (ranges, 0..) |r, i| {
        if (r.address == 0 or r.address +% r.dest.len < r.address) return if (i == 0) 0 else copyMany(ranges[0..i]);
    }
    if (ranges.len == 0) return 0;
    return Os.copyMany(ranges);
}

/// True when `address` lies in executable memory, where every callback of
/// a live struct points; true as well when the mappings cannot be queried.
pub fn executable(address: usize) bool {
    if (address == 0) return false;
    return Os.executable(address) orelse true;
}

// ---------------------------------------------------------------------------
// Proven memory, by granule.

/// Readability is a property of whole pages, and no page is smaller than
/// 4 KiB: one readable byte proves its 4 KiB granule readable.
const granule: usize = 4096;
/// The top of the user address space with 4-level paging (x86-64, and
/// arm64 with 48-bit addresses): where the memory of most processes ends.
/// Memory above it exists only with 5-level paging (or 52-bit arm64).
const low_half_top: usize = 1 << 47;
/// No target maps user memory at or above 2^56 (x86-64 with 5-level paging
/// stops there, arm64 at 2^52): granules from here on are never readable,
/// and never reach arithmetic that could overflow.
const first_unmapped_granule: usize = (1 << 56) / granule;

/// Granules proven readable (or not) during one probe call, so that each
/// is asked of the kernel at most once per call, and the granules that one
/// level of a struct tree needs (strings, pointer arrays, children) are
/// asked together: one syscall per level, none for a level whose memory
/// lies in granules proven already. Once a granule is proven, its bytes
/// are read directly. Nothing is kept between calls but `hints`: memory
/// may be unmapped at any time, so a granule is proven again by each call.
const Pages = struct {
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

    const State = enum { unknown, good, bad };

    fn state(p: *Pages, g: usize) State {
        if (g == 0 or g >= first_unmapped_granule) return .bad; // the first 4 KiB are never mapped
        if (g == p.last_good) return .good; // neighbours share granules
        for (p.good[0..@min(p.n_good, ring)]) |known| if (known == g) {
            p.last_good = g;
            return .good;
        };
        for (p.bad[0..@min(p.n_bad, p.bad.len)]) |known| if (known == g) return .bad;
        return .unknown;
    }

    fn queued(p: *const Pages, g: usize) bool {
        return std.mem.indexOfScalar(usize, p.pending[0..p.n_pending], g) != null;
    }

    /// Queues the unknown granules of `len` bytes at `address` (proven by
    /// the next `flush`).
    fn want(p: *Pages, address: usize, len: usize) void {
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
    fn hint(p: *Pages, g: usize) void {
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
    fn flush(p: *Pages) void {
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
    fn readable(p: *Pages, address: usize, len: usize) bool {
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
    fn copy(p: *Pages, address: usize, dest: []u8) bool {
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
    fn stringLength(p: *Pages, address: usize, limit: usize) ?usize {
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
var kernel_calls = std.atomic.Value(usize).init(0);

/// Granules the last probe on this thread proved, tried with the next
/// one's struct roots: a producer tends to build each tree in the memory
/// of the one before, so that one syscall often proves a whole tree.
threadlocal var hints: [8]usize = @splat(0);
threadlocal var n_hints: usize = 0;

fn hintAll(p: *Pages) void {
    for (hints[0..n_hints]) |g| p.hint(g);
}

fn keepHints(p: *const Pages) void {
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

// ---------------------------------------------------------------------------
// Shapes.

fn word(bytes: []const u8, offset: usize) u64 {
    return std.mem.readInt(u64, bytes[offset..][0..8], builtin.cpu.arch.endian());
}

fn signed(bytes: []const u8, offset: usize) i64 {
    return @bitCast(word(bytes, offset));
}

const S = struct {
    const format = @offsetOf(abi.ArrowSchema, "format");
    const name = @offsetOf(abi.ArrowSchema, "name");
    const n_children = @offsetOf(abi.ArrowSchema, "n_children");
    const children = @offsetOf(abi.ArrowSchema, "children");
    const dictionary = @offsetOf(abi.ArrowSchema, "dictionary");
    const release = @offsetOf(abi.ArrowSchema, "release");
};

const A = struct {
    const length = @offsetOf(abi.ArrowArray, "length");
    const null_count = @offsetOf(abi.ArrowArray, "null_count");
    const offset = @offsetOf(abi.ArrowArray, "offset");
    const n_buffers = @offsetOf(abi.ArrowArray, "n_buffers");
    const n_children = @offsetOf(abi.ArrowArray, "n_children");
    const buffers = @offsetOf(abi.ArrowArray, "buffers");
    const children = @offsetOf(abi.ArrowArray, "children");
    const dictionary = @offsetOf(abi.ArrowArray, "dictionary");
    const release = @offsetOf(abi.ArrowArray, "release");
};

const stream_release = @offsetOf(abi.ArrowArrayStream, "release");
const device_stream_release = @offsetOf(abi.ArrowDeviceArrayStream, "release");
const handler_release = @offsetOf(abi.ArrowAsyncDeviceStreamHandler, "release");

/// A count the probe follows: positive and within the library's limits.
fn sane(n: i64) bool {
    return n > 0 and n <= max_count;
}

/// True when `address` names a readable string that could be a format:
/// short, printable ASCII, non-empty.
fn formatLike(p: *Pages, address: u64) bool {
    if (address < granule) return false;
    const n = p.stringLength(@intCast(address), 64) orelse return false;
    if (n == 0) return false;
    const text: [*]const u8 = @ptrFromInt(address); // proven readable
    for (text[0..n]) |ch| if (ch < 0x21 or ch > 0x7e) return false;
    return true;
}

/// Whether an array's first word (`length`) should be looked at as a
/// format pointer (the swapped-pair check): only when the rest allows it.
fn mayBeSchema(bytes: []const u8) bool {
    const n = signed(bytes, S.n_children);
    return word(bytes, A.length) >= granule and n >= 0 and n <= max_count;
}

/// True when `bytes` (an ArrowArray's) look like a live array, without
/// following any pointer but its release.
fn arrayLike(bytes: []const u8) bool {
    const length = signed(bytes, A.length);
    const n_buffers = signed(bytes, A.n_buffers);
    const n_children = signed(bytes, A.n_children);
    return length >= 0 and signed(bytes, A.null_count) >= -1 and signed(bytes, A.offset) >= 0 and
        n_buffers >= 0 and n_buffers <= max_count and n_children >= 0 and n_children <= max_count and
        word(bytes, A.release) != 0 and executable(@intCast(word(bytes, A.release)));
}

fn released(kind: Kind) Status {
    return fail(.released, "{s} is released (its release callback is NULL)", .{kind.shortName()});
}

/// Set by a refusal that took the struct for another kind (a swapped
/// pair, a stream of the other kind): its release word is not one.
threadlocal var refused_as_other_kind = false;
/// Whether the last refusal of `probeStruct` on this thread (`releasable`).
threadlocal var last_refused_releasable = false;

fn notA(comptime fmt: []const u8, kind: Kind, address: usize, args: anytype) Status {
    if (comptime std.mem.startsWith(u8, fmt, "it looks like")) refused_as_other_kind = true;
    return fail(.invalid_argument, "0x{x} is not a live {s}: " ++ fmt, .{ address, kind.cName() } ++ args);
}

/// The `i`th entry of a pointer array proven readable.
fn entryAt(at: u64, i: usize) u64 {
    const entries: [*]align(1) const u64 = @ptrFromInt(@as(usize, @intCast(at)));
    return entries[i];
}

/// Readable pointer array of `n` entries at `at`, then each non-NULL entry
/// readable for `entry_size` bytes. `what` names them in the message.
fn checkPointers(p: *Pages, kind: Kind, address: usize, comptime what: []const u8, at: u64, n: i64, entry_size: usize) Status {
    if (n == 0) return .ok;
    if (at == 0) return .ok; // a NULL array with a count: the validation's to report
    const count: usize = @intCast(n);
    if (!p.readable(@intCast(at), count * 8)) return notA("its {d} " ++ what ++ " at 0x{x} are not readable memory", kind, address, .{ n, at });
    if (entry_size == 0) return .ok;
    // Proven already by the prefetch (`wantLevel2`) in the usual case; a
    // tree spread over more granules than `Pages` keeps is proven again,
    // a batch of entries per syscall.
    var first: usize = 0;
    while (first < count) : (first += 32) {
        const end = @min(count, first + 32);
        for (first..end) |i| p.want(@intCast(entryAt(at, i)), entry_size);
        p.flush();
        for (first..end) |i| {
            const entry = entryAt(at, i);
            if (entry == 0) continue; // a NULL child: the validation's to report
            if (!p.readable(@intCast(entry), entry_size)) return notA(what ++ "[{d}] at 0x{x} is not readable memory", kind, address, .{ i, entry });
        }
    }
    return .ok;
}

// ---------------------------------------------------------------------------
// What one struct needs proven, level by level (prefetched together).

/// A struct named by address, with its bytes once read.
const Root = struct {
    kind: Kind,
    address: usize,
    bytes: [128]u8 = undefined,
    /// Its bytes were read (its memory is readable).
    read: bool = false,

    fn size(r: *const Root) usize {
        return r.kind.size();
    }
    fn view(r: *const Root) []const u8 {
        return r.bytes[0..r.size()];
    }
};

/// A live schema's or array's children: where their pointer array is,
/// how many, and each one's size; null for none (or a count the checks do
/// not follow).
fn childrenOf(r: *const Root) ?struct { at: usize, count: usize, size: usize } {
    const b = r.view();
    const release, const n, const at, const size: usize = switch (r.kind) {
        .schema => .{ word(b, S.release), signed(b, S.n_children), word(b, S.children), @sizeOf(abi.ArrowSchema) },
        .array, .device_array => .{ word(b, A.release), signed(b, A.n_children), word(b, A.children), @sizeOf(abi.ArrowArray) },
        else => return null,
    };
    if (release == 0 or !sane(n) or at == 0) return null;
    return .{ .at = @intCast(at), .count = @intCast(n), .size = size };
}

/// Queues what a live schema's or array's checks read next to the struct
/// itself: strings, pointer arrays, dictionary.
fn wantLevel1(p: *Pages, r: *const Root) void {
    const b = r.view();
    switch (r.kind) {
        .schema => {
            if (word(b, S.release) == 0) return;
            p.want(@intCast(word(b, S.format)), 1);
            p.want(@intCast(word(b, S.name)), 1);
            p.want(@intCast(word(b, S.dictionary)), @sizeOf(abi.ArrowSchema));
        },
        .array, .device_array => {
            if (word(b, A.release) == 0) return;
            if (sane(signed(b, A.n_buffers))) p.want(@intCast(word(b, A.buffers)), @as(usize, @intCast(signed(b, A.n_buffers))) * 8);
            p.want(@intCast(word(b, A.dictionary)), @sizeOf(abi.ArrowArray));
        },
        else => {},
    }
    if (childrenOf(r)) |c| p.want(c.at, c.count * 8);
}

/// Queues guesses after everything wanted (a failed guess costs no
/// syscall of its own): where the children structs usually lie, right
/// after their pointer array (one block per level, as many producers
/// allocate), so that level 2 is often proven with level 1; and the
/// swapped-pair check's read of an array's first word as a format
/// pointer (a length is rarely readable memory).
fn guessLevel1(p: *Pages, r: *const Root) void {
    if (childrenOf(r)) |c| {
        const start = c.at + c.count * 8;
        const len = @min(c.count * c.size, 4 * granule);
        var g = start / granule;
        while (g <= (start + len - 1) / granule) : (g += 1) p.hint(g);
    }
    if (r.kind != .array and r.kind != .device_array) return;
    if (mayBeSchema(r.view())) p.hint(@as(usize, @intCast(word(r.view(), A.length))) / granule);
}

/// Queues a live schema's or array's children structs, where its pointer
/// array was proven readable.
fn wantLevel2(p: *Pages, r: *const Root) void {
    const c = childrenOf(r) orelse return;
    if (!p.readable(c.at, c.count * 8)) return; // reported by the checks
    for (0..c.count) |i| p.want(@intCast(entryAt(c.at, i)), c.size);
}

// ---------------------------------------------------------------------------
// Judgements, from the bytes read.

fn probeSchema(p: *Pages, address: usize, bytes: []const u8, mode: Mode) Status {
    const kind = Kind.schema;
    const release = word(bytes, S.release);
    const format = word(bytes, S.format);
    const name = word(bytes, S.name);
    const format_ok = format != 0 and p.stringLength(@intCast(format), max_format_bytes) != null;
    // A NULL format is the validation's to report (a layout error).
    if (!format_ok and (format != 0 or release == 0)) {
        // An ArrowArray where a schema is expected: its first word is a
        // length, not a pointer to the format.
        var array_bytes: [@sizeOf(abi.ArrowArray)]u8 = undefined;
        if (p.copy(address, &array_bytes) and arrayLike(&array_bytes))
            return notA("it looks like an ArrowArray (its first word is {d}, a length, not a format string): are the schema and the array swapped?", kind, address, .{signed(bytes, 0)});
    }
    if (release == 0) {
        if (mode == .live) return released(kind);
        // A view reads the format and the name in place: a released
        // struct may keep them (a zeroed one has neither), but what it
        // keeps must be strings (a released ArrowArray's length is not).
        if (format != 0 and !format_ok) return notA("it is released, and its format 0x{x} is not a readable NUL-terminated string of at most {d} bytes", kind, address, .{ format, max_format_bytes });
        if (name != 0 and p.stringLength(@intCast(name), 1 << 20) == null) return notA("it is released, and its name 0x{x} is not a readable NUL-terminated string", kind, address, .{name});
        return .ok;
    }
    if (!executable(@intCast(release))) return notA("its release callback 0x{x} is not in executable memory", kind, address, .{release});
    if (format != 0 and !format_ok) return notA("its format 0x{x} is not a readable NUL-terminated string of at most {d} bytes", kind, address, .{ format, max_format_bytes });
    if (name != 0 and p.stringLength(@intCast(name), 1 << 20) == null) return notA("its name 0x{x} is not a readable NUL-terminated string", kind, address, .{name});
    return probeTree(p, kind, address, signed(bytes, S.n_children), word(bytes, S.children), word(bytes, S.dictionary), @sizeOf(abi.ArrowSchema));
}

/// The children pointer array (with a sane count) and the dictionary of a
/// live schema or array, each `struct_size` bytes: readable memory.
fn probeTree(p: *Pages, kind: Kind, address: usize, n_children: i64, children: u64, dictionary: u64, struct_size: usize) Status {
    if (sane(n_children)) {
        const s = checkPointers(p, kind, address, "children", children, n_children, struct_size);
        if (s != .ok) return s;
    }
    if (dictionary != 0 and !p.readable(@intCast(dictionary), struct_size)) return notA("its dictionary 0x{x} is not readable memory", kind, address, .{dictionary});
    return .ok;
}

fn probeArray(p: *Pages, kind: Kind, address: usize, bytes: []const u8, mode: Mode) Status {
    const release = word(bytes, A.release);
    // An ArrowSchema where an array is expected: its first word points to
    // the format string, where an array has its length.
    // (A released schema still points to its format.)
    if (mayBeSchema(bytes) and formatLike(p, word(bytes, A.length))) {
        var text: [65]u8 = @splat(0);
        const format: usize = @intCast(word(bytes, A.length));
        const n = p.stringLength(format, 64) orelse 0;
        _ = p.copy(format, text[0..n]);
        return notA("it looks like an ArrowSchema (its first word points to the format \"{s}\"): are the schema and the array swapped?", kind, address, .{text[0..n]});
    }
    if (release == 0) return if (mode == .live) released(kind) else .ok;
    if (!executable(@intCast(release))) return notA("its release callback 0x{x} is not in executable memory", kind, address, .{release});
    // Lengths, offsets and counts are the validation's to judge (it
    // reports them as layout errors before reading what they count); only
    // the memory that a sane count makes the import read is checked here.
    const n_buffers = signed(bytes, A.n_buffers);
    if (sane(n_buffers)) {
        const s = checkPointers(p, kind, address, "buffers", word(bytes, A.buffers), n_buffers, 0);
        if (s != .ok) return s;
    }
    return probeTree(p, kind, address, signed(bytes, A.n_children), word(bytes, A.children), word(bytes, A.dictionary), @sizeOf(abi.ArrowArray));
}

/// Every non-NULL function pointer in `offsets` readable. A NULL callback
/// (other than release, checked first) is left to the caller, which
/// reports it and still releases the struct it was given.
fn probeCallbacks(kind: Kind, address: usize, bytes: []const u8, comptime names: []const []const u8, comptime offsets: []const usize) Status {
    inline for (names, offsets) |field, offset| {
        const f = word(bytes, offset);
        if (f != 0 and !executable(@intCast(f))) return notA(field ++ " 0x{x} is not in executable memory", kind, address, .{f});
    }
    return .ok;
}

fn probeArrayStream(p: *Pages, address: usize, bytes: []const u8, mode: Mode) Status {
    const kind = Kind.array_stream;
    const first = word(bytes, 0);
    // An ArrowDeviceArrayStream starts with its int32 device_type (plus
    // padding), where an ArrowArrayStream has the get_schema pointer.
    if (first != 0 and first <= std.math.maxInt(u32) and !p.readable(@intCast(first), 1)) {
        var device: [@sizeOf(abi.ArrowDeviceArrayStream)]u8 = undefined;
        if (p.copy(address, &device) and word(&device, device_stream_release) != 0)
            return notA("it looks like an ArrowDeviceArrayStream (its first word is {d}, a device_type, not the get_schema callback): use the device-stream import", kind, address, .{first});
    }
    if (!executable(@intCast(first)) and formatLike(p, first))
        return notA("it looks like an ArrowSchema (its first word points to a format string, not the get_schema callback)", kind, address, .{});
    if (word(bytes, stream_release) == 0) return if (mode == .live) released(kind) else .ok;
    return probeCallbacks(kind, address, bytes, &.{ "get_schema", "get_next", "get_last_error", "release" }, &.{
        @offsetOf(abi.ArrowArrayStream, "get_schema"),
        @offsetOf(abi.ArrowArrayStream, "get_next"),
        @offsetOf(abi.ArrowArrayStream, "get_last_error"),
        stream_release,
    });
}

fn probeDeviceArrayStream(p: *Pages, address: usize, bytes: []const u8, mode: Mode) Status {
    const kind = Kind.device_array_stream;
    const first = word(bytes, 0);
    // An ArrowArrayStream starts with its get_schema callback: a readable
    // address, where a device stream has a small device_type.
    if (first > std.math.maxInt(u32) and executable(@intCast(first)) and word(bytes, @offsetOf(abi.ArrowArrayStream, "release")) != 0)
        return notA("it looks like an ArrowArrayStream (its first word 0x{x} is a callback address, not a device_type): use the array-stream import", kind, address, .{first});
    if (formatLike(p, first) and !executable(@intCast(first)))
        return notA("it looks like an ArrowSchema (its first word points to a format string, not a device_type)", kind, address, .{});
    if (word(bytes, device_stream_release) == 0) return if (mode == .live) released(kind) else .ok;
    return probeCallbacks(kind, address, bytes, &.{ "get_schema", "get_next", "get_last_error", "release" }, &.{
        @offsetOf(abi.ArrowDeviceArrayStream, "get_schema"),
        @offsetOf(abi.ArrowDeviceArrayStream, "get_next"),
        @offsetOf(abi.ArrowDeviceArrayStream, "get_last_error"),
        device_stream_release,
    });
}

/// The get_schema callbacks of the ArrowArrayStreams this library makes
/// (`noteArrayStreamCallback`): their four callbacks lie where a handler's
/// do, so that only the callbacks' identity tells one from a handler.
var own_stream_callbacks: [4]std.atomic.Value(usize) = @splat(std.atomic.Value(usize).init(0));

/// Records `get_schema` as the callback of an ArrowArrayStream this
/// library makes, so that such a stream passed as a handler is refused.
/// Cheap when recorded already (called by each stream's creation).
pub fn noteArrayStreamCallback(get_schema: usize) void {
    for (&own_stream_callbacks) |*slot| {
        const known = slot.load(.acquire);
        if (known == get_schema) return;
        if (known == 0 and slot.cmpxchgStrong(0, get_schema, .acq_rel, .acquire) == null) return;
        if (slot.load(.acquire) == get_schema) return;
    }
    std.debug.assert(false); // more kinds of stream than slots
}

fn ownArrayStreamCallback(f: u64) bool {
    for (&own_stream_callbacks) |*slot| if (slot.load(.acquire) == f) return f != 0;
    return false;
}

fn probeHandler(address: usize, bytes: []const u8, mode: Mode) Status {
    const kind = Kind.async_handler;
    // An ArrowArrayStream has four callbacks where a handler does, and no
    // layout check tells them apart; one of this library's streams is
    // known by its get_schema. (Another producer's stream is not: see
    // docs/validation.md.)
    const first = word(bytes, 0);
    if (ownArrayStreamCallback(first))
        return notA("it looks like an ArrowArrayStream (its first word 0x{x} is this library's stream get_schema callback, not on_schema)", kind, address, .{first});
    if (word(bytes, handler_release) == 0) return if (mode == .live) released(kind) else .ok;
    return probeCallbacks(kind, address, bytes, &.{ "on_schema", "on_next_task", "on_error", "release" }, &.{
        @offsetOf(abi.ArrowAsyncDeviceStreamHandler, "on_schema"),
        @offsetOf(abi.ArrowAsyncDeviceStreamHandler, "on_next_task"),
        @offsetOf(abi.ArrowAsyncDeviceStreamHandler, "on_error"),
        handler_release,
    });
}

/// Where each kind keeps its release callback.
fn releaseOffset(kind: Kind) usize {
    return switch (kind) {
        .schema => S.release,
        .array, .device_array => A.release,
        .array_stream => stream_release,
        .device_array_stream => device_stream_release,
        .async_handler => handler_release,
    };
}

/// The checks of one root whose memory was proven or refused; records
/// whether a refused live struct is one whose release can be called.
fn judge(p: *Pages, r: *Root, mode: Mode) Status {
    refused_as_other_kind = false;
    const s = judgeRoot(p, r, mode);
    last_refused_releasable = s == .invalid_argument and mode == .live and r.read and !refused_as_other_kind and
        releaseIsCode(word(r.view(), releaseOffset(r.kind)));
    return s;
}

fn releaseIsCode(release: u64) bool {
    return release != 0 and executable(@intCast(release));
}

/// True when the last `probeStruct` (mode `.live`) on this thread refused
/// a struct that is still safe to release: its bytes were read, it does
/// not look like a struct of another kind, and its release callback lies
/// in executable memory. What made it fail lies beyond its own bytes (a
/// format, name, child or buffer pointer that is not readable memory, a
/// callback other than release that is not code). An import owns what it
/// is given, so the caller releases such a struct, as Arrow C++ does on a
/// failed import; any other refused struct is left untouched.
pub fn refusedReleasable() bool {
    return last_refused_releasable;
}

fn judgeRoot(p: *Pages, r: *Root, mode: Mode) Status {
    const kind = r.kind;
    const address = r.address;
    if (address == 0) return fail(.invalid_argument, "{s} pointer is NULL", .{kind.cName()});
    if (address % 8 != 0) return fail(.invalid_argument, "{s} pointer 0x{x} is not 8-byte aligned", .{ kind.cName(), address });
    const size = r.size();
    if (!r.read) return fail(.invalid_argument, "0x{x} is not readable memory for an {s} ({d} bytes)", .{ address, kind.cName(), size });
    if (mode == .view and !Os.writeBack(address, r.bytes[0..size])) return fail(.invalid_argument, "the {s} at 0x{x} is not writable memory", .{ kind.cName(), address });
    const view = r.bytes[0..size];
    return switch (kind) {
        .schema => probeSchema(p, address, view, mode),
        .array => probeArray(p, kind, address, view[0..@sizeOf(abi.ArrowArray)], mode),
        .device_array => probeArray(p, kind, address, view[0..@sizeOf(abi.ArrowArray)], mode),
        .array_stream => probeArrayStream(p, address, view, mode),
        .device_array_stream => probeDeviceArrayStream(p, address, view, mode),
        .async_handler => probeHandler(address, view, mode),
    };
}

/// Proves and reads the roots (with this thread's hints), then what their
/// checks read, a level at a time: about one syscall per level, none
/// where the hints proved the memory already.
fn prefetch(p: *Pages, roots: []Root) void {
    for (roots) |*r| if (r.address != 0 and r.address % 8 == 0) p.want(r.address, r.size());
    hintAll(p);
    p.flush();
    for (roots) |*r| {
        if (r.address == 0 or r.address % 8 != 0) continue;
        r.read = p.copy(r.address, r.bytes[0..r.size()]);
    }
    for (roots) |*r| if (r.read) wantLevel1(p, r);
    for (roots) |*r| if (r.read) guessLevel1(p, r);
    p.flush();
    for (roots) |*r| if (r.read) wantLevel2(p, r);
    p.flush();
}

/// Checks that `address` names a `kind` struct that is safe to read (and,
/// in `.view` mode, to write). Returns `.ok`, `.released` (a released
/// struct in `.live` mode) or `.invalid_argument`, with the reason as the
/// thread's last error.
pub fn probeStruct(kind: Kind, address: usize, mode: Mode) Status {
    var p: Pages = .{};
    var roots = [_]Root{.{ .kind = kind, .address = address }};
    prefetch(&p, &roots);
    const s = judge(&p, &roots[0], mode);
    if (s == .ok) keepHints(&p);
    return s;
}

/// `probeStruct` of a live schema and a live array (or device array) that
/// one import takes, in one call: their levels are proven together. A NULL
/// address is skipped (the import reports it). Returns the first failure
/// (the schema's before the array's); a caller that must know which
/// struct failed probes each on its own then. `own_export`: both lie in
/// a live export slot of this library (memory it allocated, trees it
/// built), so they are read directly and only their release is checked.
pub fn probePair(schema: usize, array_kind: Kind, array: usize, own_export: bool) Status {
    std.debug.assert(array_kind == .array or array_kind == .device_array);
    if (own_export) {
        if (schema != 0 and @as(*const abi.ArrowSchema, @ptrFromInt(schema)).release == null) return released(.schema);
        if (array != 0 and @as(*const abi.ArrowArray, @ptrFromInt(array)).release == null) return released(array_kind);
        return .ok;
    }
    var p: Pages = .{};
    var roots = [_]Root{ .{ .kind = .schema, .address = schema }, .{ .kind = array_kind, .address = array } };
    prefetch(&p, &roots);
    for (&roots) |*r| {
        if (r.address == 0) continue;
        const s = judge(&p, r, .live);
        if (s != .ok) return s;
    }
    keepHints(&p);
    return .ok;
}

// ---------------------------------------------------------------------------

fn noopSchemaRelease(schema: *abi.ArrowSchema) callconv(.c) void {
    schema.release = null;
}

fn noopArrayRelease(array: *abi.ArrowArray) callconv(.c) void {
    array.release = null;
}

test "unreadable addresses are reported, not faulted on" {
    try std.testing.expect(!readable(8, 8));
    try std.testing.expect(!readable(4096, 8));
    try std.testing.expectEqual(Status.invalid_argument, probeStruct(.schema, 8, .live));
    try std.testing.expectEqual(Status.invalid_argument, probeStruct(.array, 4096, .live));
    try std.testing.expectEqual(Status.invalid_argument, probeStruct(.array_stream, 16, .live));
}

test "addresses at the top of the address space are unreadable, with no overflow" {
    const top = std.math.maxInt(usize);
    try std.testing.expect(!readable(top - 10, 1));
    try std.testing.expect(!readable(top - granule + 1, granule - 1));
    try std.testing.expectEqual(@as(?usize, null), stringLength(top - 100, 64));
    var p: Pages = .{};
    p.hint(top / granule); // a length (-1) read as a pointer
    p.flush();
    try std.testing.expectEqual(Pages.State.bad, p.state(top / granule));
}

test "a live schema and array pass; swapped they are named" {
    var schema = abi.ArrowSchema.empty;
    schema.format = "i";
    schema.release = noopSchemaRelease;
    var buffers = [_]?*const anyopaque{ null, null };
    var array: abi.ArrowArray = std.mem.zeroes(abi.ArrowArray);
    array.length = 3;
    array.n_buffers = 2;
    array.buffers = &buffers;
    array.release = noopArrayRelease;
    try std.testing.expectEqual(Status.ok, probeStruct(.schema, @intFromPtr(&schema), .live));
    try std.testing.expectEqual(Status.ok, probeStruct(.array, @intFromPtr(&array), .live));
    try std.testing.expectEqual(Status.invalid_argument, probeStruct(.array, @intFromPtr(&schema), .live));
    try std.testing.expect(std.mem.indexOf(u8, std.mem.span(status.lastMessage()), "swapped") != null);
    try std.testing.expectEqual(Status.invalid_argument, probeStruct(.schema, @intFromPtr(&array), .live));
    try std.testing.expect(std.mem.indexOf(u8, std.mem.span(status.lastMessage()), "swapped") != null);
}

test "a zeroed struct is released when moved in, fine as a destination" {
    var zero: abi.ArrowSchema = std.mem.zeroes(abi.ArrowSchema);
    try std.testing.expectEqual(Status.released, probeStruct(.schema, @intFromPtr(&zero), .live));
    try std.testing.expectEqual(Status.ok, probeStruct(.schema, @intFromPtr(&zero), .view));
}

/// A child node for the tests below: `format` "i", released by a no-op.
fn testChildren(schemas: []abi.ArrowSchema, schema_ptrs: []?*abi.ArrowSchema, arrays: []abi.ArrowArray, array_ptrs: []?*abi.ArrowArray, buffers: *[2]?*const anyopaque) void {
    for (schemas, schema_ptrs, arrays, array_ptrs) |*schema, *schema_ptr, *array, *array_ptr| {
        schema.* = abi.ArrowSchema.empty;
        schema.format = "i";
        schema.name = "c";
        schema.release = noopSchemaRelease;
        schema_ptr.* = schema;
        array.* = std.mem.zeroes(abi.ArrowArray);
        array.length = 3;
        array.n_buffers = 2;
        array.buffers = buffers;
        array.release = noopArrayRelease;
        array_ptr.* = array;
    }
}

test "a pair is proven a level at a time, then in one call with the hints" {
    var buffers = [_]?*const anyopaque{ null, null };
    var schemas: [3]abi.ArrowSchema = undefined;
    var schema_ptrs: [3]?*abi.ArrowSchema = undefined;
    var arrays: [3]abi.ArrowArray = undefined;
    var array_ptrs: [3]?*abi.ArrowArray = undefined;
    testChildren(&schemas, &schema_ptrs, &arrays, &array_ptrs, &buffers);
    var schema = abi.ArrowSchema.empty;
    schema.format = "+s";
    schema.name = "";
    schema.n_children = 3;
    schema.children = &schema_ptrs;
    schema.release = noopSchemaRelease;
    var array: abi.ArrowArray = std.mem.zeroes(abi.ArrowArray);
    array.length = 3;
    array.n_buffers = 1;
    array.buffers = buffers[0..1];
    array.n_children = 3;
    array.children = &array_ptrs;
    array.release = noopArrayRelease;
    n_hints = 0;
    const before = kernel_calls.load(.monotonic);
    try std.testing.expectEqual(Status.ok, probePair(@intFromPtr(&schema), .array, @intFromPtr(&array), false));
    // Roots, then strings and pointer arrays, then children: at most one
    // call each, and none for a level already proven.
    try std.testing.expect(kernel_calls.load(.monotonic) - before <= 3);
    const again = kernel_calls.load(.monotonic);
    try std.testing.expectEqual(Status.ok, probePair(@intFromPtr(&schema), .array, @intFromPtr(&array), false));
    try std.testing.expectEqual(@as(usize, 1), kernel_calls.load(.monotonic) - again);
}

test "an unreadable child is named by its index, and a NULL root is skipped" {
    var buffers = [_]?*const anyopaque{ null, null };
    var schemas: [3]abi.ArrowSchema = undefined;
    var schema_ptrs: [3]?*abi.ArrowSchema = undefined;
    var arrays: [3]abi.ArrowArray = undefined;
    var array_ptrs: [3]?*abi.ArrowArray = undefined;
    testChildren(&schemas, &schema_ptrs, &arrays, &array_ptrs, &buffers);
    var array: abi.ArrowArray = std.mem.zeroes(abi.ArrowArray);
    array.length = 3;
    array.n_buffers = 1;
    array.buffers = buffers[0..1];
    array.n_children = 3;
    array.children = &array_ptrs;
    array.release = noopArrayRelease;
    array_ptrs[1] = @ptrFromInt(4096 + 8);
    try std.testing.expectEqual(Status.invalid_argument, probePair(0, .array, @intFromPtr(&array), false));
    try std.testing.expect(std.mem.indexOf(u8, std.mem.span(status.lastMessage()), "children[1] at 0x1008 is not readable memory") != null);
}

test "a string is followed across a page boundary, and stops at an unreadable page" {
    const page = std.heap.pageSize();
    const memory = try std.posix.mmap(null, 2 * page, .{ .READ = true, .WRITE = true }, .{ .TYPE = .PRIVATE, .ANONYMOUS = true }, -1, 0);
    defer std.posix.munmap(memory);
    const text = "+s";
    const at = page - 1; // "+" on the first page, "s\x00" on the second
    @memcpy(memory[at..][0..text.len], text);
    memory[at + text.len] = 0;
    try std.testing.expectEqual(@as(?usize, 2), stringLength(@intFromPtr(memory.ptr) + at, 64));
    try std.testing.expectEqual(@as(c_int, 0), std.c.mprotect(@ptrCast(@alignCast(memory[page..].ptr)), page, .{}));
    try std.testing.expectEqual(@as(?usize, null), stringLength(@intFromPtr(memory.ptr) + at, 64));
    var schema = abi.ArrowSchema.empty;
    schema.format = @ptrCast(&memory[at]);
    schema.release = noopSchemaRelease;
    try std.testing.expectEqual(Status.invalid_argument, probeStruct(.schema, @intFromPtr(&schema), .live));
    try std.testing.expect(std.mem.indexOf(u8, std.mem.span(status.lastMessage()), "is not a readable NUL-terminated string") != null);
}

test "children spread over more pages than a call keeps are proven in batches" {
    const page = std.heap.pageSize();
    const n = 100;
    const memory = try std.posix.mmap(null, n * page, .{ .READ = true, .WRITE = true }, .{ .TYPE = .PRIVATE, .ANONYMOUS = true }, -1, 0);
    defer std.posix.munmap(memory);
    var children: [n]?*abi.ArrowSchema = undefined;
    for (&children, 0..) |*child, i| {
        const schema: *abi.ArrowSchema = @ptrCast(@alignCast(&memory[i * page]));
        schema.* = abi.ArrowSchema.empty;
        schema.format = "i";
        schema.release = noopSchemaRelease;
        child.* = schema;
    }
    var schema = abi.ArrowSchema.empty;
    schema.format = "+s";
    schema.n_children = n;
    schema.children = &children;
    schema.release = noopSchemaRelease;
    n_hints = 0;
    const before = kernel_calls.load(.monotonic);
    try std.testing.expectEqual(Status.ok, probeStruct(.schema, @intFromPtr(&schema), .live));
    // Levels of at most 64 pages per call, then batches of 32 children
    // for the pages no longer kept: not one call per child.
    try std.testing.expect(kernel_calls.load(.monotonic) - before <= 10);
    children[77] = @ptrFromInt(4096);
    try std.testing.expectEqual(Status.invalid_argument, probeStruct(.schema, @intFromPtr(&schema), .live));
    try std.testing.expect(std.mem.indexOf(u8, std.mem.span(status.lastMessage()), "children[77] at 0x1000 is not readable memory") != null);
}

test "a readable granule queued with one above 2^47 is still proven readable" {
    var bytes: [64]u8 align(8) = @splat(1);
    const low = @intFromPtr(&bytes);
    var p: Pages = .{};
    // Firm, in this order: a readable granule, then addresses no 4-level
    // process maps (a length of 2^47 rows read as a format pointer).
    p.want(low, bytes.len);
    p.want(low_half_top + 3 * granule, 1);
    p.want(low_half_top << 5, 1);
    p.flush();
    try std.testing.expectEqual(Pages.State.good, p.state(low / granule));
    // As a guess after it, too.
    var q: Pages = .{};
    q.want(low, bytes.len);
    q.hint((low_half_top << 2) / granule);
    q.flush();
    try std.testing.expectEqual(Pages.State.good, q.state(low / granule));
    var dest: [16]u8 = undefined;
    var ranges = [_]Range{ .{ .address = low, .dest = dest[0..8] }, .{ .address = low_half_top + granule, .dest = dest[8..16] } };
    try std.testing.expectEqual(@as(usize, 1), copyMany(&ranges));
}

test "an honest array of 2^47 rows passes (its length is no format pointer)" {
    var buffers = [_]?*const anyopaque{ null, null };
    var array: abi.ArrowArray = std.mem.zeroes(abi.ArrowArray);
    array.length = 1 << 47;
    array.null_count = 1 << 47;
    array.n_buffers = 2;
    array.buffers = &buffers;
    array.release = noopArrayRelease;
    n_hints = 0;
    try std.testing.expectEqual(Status.ok, probeStruct(.array, @intFromPtr(&array), .live));
    var schema = abi.ArrowSchema.empty;
    schema.format = "n";
    schema.release = noopSchemaRelease;
    try std.testing.expectEqual(Status.ok, probePair(@intFromPtr(&schema), .array, @intFromPtr(&array), false));
}

test "a released array viewed as a schema is refused: its length is no format" {
    var array: abi.ArrowArray = std.mem.zeroes(abi.ArrowArray);
    array.length = 3;
    array.n_buffers = 2;
    try std.testing.expectEqual(Status.invalid_argument, probeStruct(.schema, @intFromPtr(&array), .view));
    try std.testing.expect(std.mem.indexOf(u8, std.mem.span(status.lastMessage()), "it is released, and its format 0x3 is not a readable") != null);
    // A released schema that keeps its strings is a fine view.
    var schema = abi.ArrowSchema.empty;
    schema.format = "i";
    schema.name = "x";
    try std.testing.expectEqual(Status.ok, probeStruct(.schema, @intFromPtr(&schema), .view));
}

fn testGetSchema(stream: *abi.ArrowArrayStream, out: *abi.ArrowSchema) callconv(.c) c_int {
    _ = stream;
    _ = out;
    return 0;
}

test "one of this library's array streams is refused as a handler" {
    var stream = std.mem.zeroes(abi.ArrowArrayStream);
    stream.get_schema = testGetSchema;
    stream.release = @ptrCast(&noopSchemaRelease);
    var handler: [6]usize = .{ @intFromPtr(&testGetSchema), @intFromPtr(&testGetSchema), @intFromPtr(&testGetSchema), @intFromPtr(&noopSchemaRelease), 0, 0 };
    try std.testing.expectEqual(Status.ok, probeStruct(.async_handler, @intFromPtr(&handler), .live));
    noteArrayStreamCallback(@intFromPtr(&testGetSchema));
    noteArrayStreamCallback(@intFromPtr(&testGetSchema)); // once is kept
    try std.testing.expectEqual(Status.invalid_argument, probeStruct(.async_handler, @intFromPtr(&handler), .live));
    try std.testing.expect(std.mem.indexOf(u8, std.mem.span(status.lastMessage()), "it looks like an ArrowArrayStream") != null);
}
