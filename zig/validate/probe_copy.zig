//! Fault-safe copies for the address probe (probe.zig): memory copied in
//! through the kernel, which reports an unreadable range as an error
//! instead of a fault (Linux: a memfd `pwritev`, or `process_vm_readv` on
//! our own pid, then a pipe; macOS: `mach_vm_read_overwrite`), and whether
//! an address lies in executable memory. Nothing here allocates; any thread.

const std = @import("std");
const builtin = @import("builtin");

/// Readability is a property of whole pages, and no page is smaller than
/// 4 KiB: one readable byte proves its 4 KiB granule readable.
pub const granule: usize = 4096;
/// The top of the user address space with 4-level paging (x86-64, and
/// arm64 with 48-bit addresses): where the memory of most processes ends.
/// Memory above it exists only with 5-level paging (or 52-bit arm64).
pub const low_half_top: usize = 1 << 47;
/// No target maps user memory at or above 2^56 (x86-64 with 5-level paging
/// stops there, arm64 at 2^52): granules from here on are never readable,
/// and never reach arithmetic that could overflow.
pub const first_unmapped_granule: usize = (1 << 56) / granule;


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
    pub fn proveGranules(granules: []const usize) usize {
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
    pub fn writeBack(address: usize, bytes: []const u8) bool {
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

    pub fn proveGranules(granules: []const usize) usize {
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
    pub fn writeBack(address: usize, bytes: []const u8) bool {
        _ = address;
        _ = bytes;
        return true;
    }
};

/// One piece of memory to copy in: `dest.len` bytes from `address`.
pub const Range = struct { address: usize, dest: []u8 };
/// Most ranges one `copyMany` takes (one syscall's iovecs).
pub const max_ranges = 64;

pub const Os = switch (builtin.os.tag) {
    .linux => Linux,
    .macos => Darwin,
    else => @compileError("zig/validate/probe_copy.zig: no fault-safe copy for this OS"),
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
