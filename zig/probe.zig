//! Fault-safe checks of a C struct that a caller names by address, before
//! anything dereferences it.
//!
//! An address from JS may name anything: the wrong struct (a schema where an
//! array is expected), a released or zeroed struct, random bytes, or no
//! mapped memory at all (8, 4096). Reading such memory directly faults and
//! takes the whole process down. Here every byte is copied through the
//! kernel, which reports an unreadable range as an error instead of a
//! fault: `process_vm_readv` on our own pid on Linux (a `write` to a pipe
//! when that syscall is not permitted), `mach_vm_read_overwrite` on macOS.
//! The struct is then judged from the copy.
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
const abi = @import("abi.zig");
const status = @import("status.zig");
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

/// Longest format string taken as a format (a union of 128 type ids with
/// three-digit codes fits).
pub const max_format_bytes = 4096;
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
    var pipe_mutex: @import("sync.zig").Mutex = .{};

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

    fn copyIn(address: usize, dest: []u8) bool {
        if (dest.len == 0) return true;
        const one = [_]Range{.{ .address = address, .dest = dest }};
        return Linux.copyMany(&one) == 1;
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
    /// known readable, copied directly.
    fn copyMany(ranges: []const Range) usize {
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
    var exec_mutex: @import("sync.zig").Mutex = .{};
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
/// Most ranges one `copyMany` takes.
pub const max_ranges = 32;

const Os = switch (builtin.os.tag) {
    .linux => Linux,
    .macos => Darwin,
    else => @compileError("zig/probe.zig: no fault-safe copy for this OS"),
};

/// Copies `dest.len` bytes from `address` into `dest`; false when any of
/// them is not readable (never faults).
pub fn copyIn(address: usize, dest: []u8) bool {
    if (address == 0 or address +% dest.len < address) return false;
    return Os.copyIn(address, dest);
}

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

/// True when `len` bytes at `address` are readable.
pub fn readable(address: usize, len: usize) bool {
    var buffer: [256]u8 = undefined;
    var done: usize = 0;
    while (done < len) {
        const chunk = @min(len - done, buffer.len);
        if (!copyIn(address + done, buffer[0..chunk])) return false;
        done += chunk;
    }
    return address != 0;
}

/// The length of the NUL-terminated string at `address`, or null when it
/// is unreadable or longer than `limit` bytes. Read in pieces that never
/// cross a page boundary, so a short string at the end of a mapping reads.
pub fn stringLength(address: usize, limit: usize) ?usize {
    if (address == 0) return null;
    var piece: [256]u8 = undefined;
    var at = address;
    var length: usize = 0;
    while (length <= limit) {
        const to_page = 4096 - (at % 4096);
        const n = @min(piece.len, to_page);
        if (!copyIn(at, piece[0..n])) return null;
        if (std.mem.indexOfScalar(u8, piece[0..n], 0)) |end| {
            length += end;
            return if (length <= limit) length else null;
        }
        length += n;
        at += n;
    }
    return null;
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

/// True when `address` names a readable string that could be a format:
/// short, printable ASCII, non-empty.
fn formatLike(address: u64) bool {
    if (address < 4096) return false;
    const n = stringLength(@intCast(address), 64) orelse return false;
    if (n == 0) return false;
    var text: [64]u8 = undefined;
    if (!copyIn(@intCast(address), text[0..n])) return false;
    for (text[0..n]) |ch| if (ch < 0x21 or ch > 0x7e) return false;
    return true;
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

fn notA(comptime fmt: []const u8, kind: Kind, address: usize, args: anytype) Status {
    return fail(.invalid_argument, "0x{x} is not a live {s}: " ++ fmt, .{ address, kind.cName() } ++ args);
}

/// Readable pointer array of `n` entries at `at`, then each non-NULL entry
/// readable for `size` bytes. `what` names them in the message.
fn checkPointers(kind: Kind, address: usize, comptime what: []const u8, at: u64, n: i64, entry_size: usize) Status {
    if (n == 0) return .ok;
    if (at == 0) return .ok; // a NULL array with a count: the validation's to report
    var chunk: [max_ranges]u64 = undefined;
    var i: usize = 0;
    const count: usize = @intCast(n);
    while (i < count) {
        const take = @min(count - i, chunk.len);
        if (!copyIn(@intCast(at + i * 8), std.mem.sliceAsBytes(chunk[0..take])))
            return notA("its {d} " ++ what ++ " at 0x{x} are not readable memory", kind, address, .{ n, at });
        if (entry_size > 0) {
            const s = checkEntries(kind, address, what, chunk[0..take], i, entry_size);
            if (s != .ok) return s;
        }
        i += take;
    }
    return .ok;
}

/// Each non-NULL pointer of `entries` (entries `first..` of the array)
/// readable for `entry_size` bytes, in one call.
fn checkEntries(kind: Kind, address: usize, comptime what: []const u8, entries: []const u64, first: usize, entry_size: usize) Status {
    var scratch: [max_ranges][@sizeOf(abi.ArrowArray)]u8 = undefined;
    var ranges: [max_ranges]Range = undefined;
    var which: [max_ranges]usize = undefined;
    var k: usize = 0;
    for (entries, 0..) |entry, j| {
        if (entry == 0) continue; // a NULL child: the validation's to report
        ranges[k] = .{ .address = @intCast(entry), .dest = scratch[k][0..entry_size] };
        which[k] = first + j;
        k += 1;
    }
    const read = copyMany(ranges[0..k]);
    if (read < k) return notA(what ++ "[{d}] at 0x{x} is not readable memory", kind, address, .{ which[read], ranges[read].address });
    return .ok;
}

fn probeSchema(address: usize, bytes: []const u8, mode: Mode) Status {
    const kind = Kind.schema;
    const release = word(bytes, S.release);
    const format = word(bytes, S.format);
    const name = word(bytes, S.name);
    // The usual case in one call: both strings end within their first
    // piece (never crossing a page). Otherwise each is read on its own.
    var pieces: [2][128]u8 = undefined;
    var child_words: [max_ranges]u64 = undefined;
    var strings_ok = false;
    var children_read = false;
    const n_children_given = signed(bytes, S.n_children);
    const children_at = word(bytes, S.children);
    if (format != 0 and name != 0) {
        // With the children's pointer array when it is short.
        const with_children = n_children_given > 0 and n_children_given <= max_ranges and children_at != 0;
        const nc: usize = if (with_children) @intCast(n_children_given) else 0;
        const ranges = [_]Range{
            .{ .address = @intCast(format), .dest = pieces[0][0..@min(128, 4096 - format % 4096)] },
            .{ .address = @intCast(name), .dest = pieces[1][0..@min(128, 4096 - name % 4096)] },
            .{ .address = @intCast(if (with_children) children_at else format), .dest = std.mem.sliceAsBytes(child_words[0..nc]) },
        };
        const read = copyMany(ranges[0..if (with_children) 3 else 2]);
        strings_ok = read >= 2 and std.mem.indexOfScalar(u8, ranges[0].dest, 0) != null and std.mem.indexOfScalar(u8, ranges[1].dest, 0) != null;
        children_read = strings_ok and with_children and read == 3;
    }
    const format_ok = strings_ok or (format != 0 and stringLength(@intCast(format), max_format_bytes) != null);
    // A NULL format is the validation's to report (a layout error).
    if (!format_ok and (format != 0 or release == 0)) {
        // An ArrowArray where a schema is expected: its first word is a
        // length, not a pointer to the format.
        var array_bytes: [@sizeOf(abi.ArrowArray)]u8 = undefined;
        if (!format_ok and copyIn(address, &array_bytes) and arrayLike(&array_bytes))
            return notA("it looks like an ArrowArray (its first word is {d}, a length, not a format string): are the schema and the array swapped?", kind, address, .{signed(bytes, 0)});
    }
    if (release == 0) return if (mode == .live) released(kind) else .ok;
    if (!executable(@intCast(release))) return notA("its release callback 0x{x} is not in executable memory", kind, address, .{release});
    if (format != 0 and !format_ok) return notA("its format 0x{x} is not a readable NUL-terminated string of at most {d} bytes", kind, address, .{ format, max_format_bytes });
    if (!strings_ok and name != 0 and stringLength(@intCast(name), 1 << 20) == null) return notA("its name 0x{x} is not a readable NUL-terminated string", kind, address, .{name});
    const n_children = n_children_given;
    if (children_read) {
        const s = checkEntries(kind, address, "children", child_words[0..@intCast(n_children)], 0, @sizeOf(abi.ArrowSchema));
        if (s != .ok) return s;
    } else if (n_children > 0 and n_children <= max_count) {
        const s = checkPointers(kind, address, "children", word(bytes, S.children), n_children, @sizeOf(abi.ArrowSchema));
        if (s != .ok) return s;
    }
    const dictionary = word(bytes, S.dictionary);
    if (dictionary != 0 and !readable(@intCast(dictionary), @sizeOf(abi.ArrowSchema))) return notA("its dictionary 0x{x} is not readable memory", kind, address, .{dictionary});
    return .ok;
}

fn probeArray(kind: Kind, address: usize, bytes: []const u8, mode: Mode) Status {
    const release = word(bytes, A.release);
    // An ArrowSchema where an array is expected: its first word points to
    // the format string, where an array has its length.
    // (A released schema still points to its format.)
    if (formatLike(word(bytes, A.length)) and signed(bytes, S.n_children) >= 0 and signed(bytes, S.n_children) <= max_count) {
        var text: [65]u8 = @splat(0);
        const format: usize = @intCast(word(bytes, A.length));
        const n = stringLength(format, 64) orelse 0;
        _ = copyIn(format, text[0..n]);
        return notA("it looks like an ArrowSchema (its first word points to the format \"{s}\"): are the schema and the array swapped?", kind, address, .{text[0..n]});
    }
    if (release == 0) return if (mode == .live) released(kind) else .ok;
    if (!executable(@intCast(release))) return notA("its release callback 0x{x} is not in executable memory", kind, address, .{release});
    // Lengths, offsets and counts are the validation's to judge (it
    // reports them as layout errors before reading what they count); only
    // the memory that a sane count makes the import read is checked here.
    const n_buffers = signed(bytes, A.n_buffers);
    const n_children = signed(bytes, A.n_children);
    const buffers = word(bytes, A.buffers);
    const children = word(bytes, A.children);
    if (n_buffers > 0 and n_buffers <= max_ranges and buffers != 0 and n_children >= 0 and n_children <= max_ranges and (n_children == 0 or children != 0)) {
        // The usual case: both pointer arrays in one call, then the
        // children's structs in one more.
        var buffer_words: [max_ranges]u64 = undefined;
        var child_words: [max_ranges]u64 = undefined;
        const nb: usize = @intCast(n_buffers);
        const nc: usize = @intCast(n_children);
        var ranges = [_]Range{
            .{ .address = @intCast(buffers), .dest = std.mem.sliceAsBytes(buffer_words[0..nb]) },
            .{ .address = @intCast(if (nc == 0) buffers else children), .dest = std.mem.sliceAsBytes(child_words[0..nc]) },
        };
        const read = copyMany(ranges[0..if (nc == 0) 1 else 2]);
        if (read < 1) return notA("its {d} buffers at 0x{x} are not readable memory", kind, address, .{ n_buffers, buffers });
        if (nc > 0) {
            if (read < 2) return notA("its {d} children at 0x{x} are not readable memory", kind, address, .{ n_children, children });
            const s = checkEntries(kind, address, "children", child_words[0..nc], 0, @sizeOf(abi.ArrowArray));
            if (s != .ok) return s;
        }
    } else if (n_buffers > 0 and n_buffers <= max_count) {
        const s = checkPointers(kind, address, "buffers", word(bytes, A.buffers), n_buffers, 0);
        if (s != .ok) return s;
    }
    if (n_children > 0 and n_children <= max_count) {
        const s = checkPointers(kind, address, "children", word(bytes, A.children), n_children, @sizeOf(abi.ArrowArray));
        if (s != .ok) return s;
    }
    const dictionary = word(bytes, A.dictionary);
    if (dictionary != 0 and !readable(@intCast(dictionary), @sizeOf(abi.ArrowArray))) return notA("its dictionary 0x{x} is not readable memory", kind, address, .{dictionary});
    return .ok;
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

fn probeArrayStream(address: usize, bytes: []const u8, mode: Mode) Status {
    const kind = Kind.array_stream;
    const first = word(bytes, 0);
    // An ArrowDeviceArrayStream starts with its int32 device_type (plus
    // padding), where an ArrowArrayStream has the get_schema pointer.
    if (first != 0 and first <= std.math.maxInt(u32) and !readable(@intCast(first), 1)) {
        var device: [@sizeOf(abi.ArrowDeviceArrayStream)]u8 = undefined;
        if (copyIn(address, &device) and word(&device, device_stream_release) != 0)
            return notA("it looks like an ArrowDeviceArrayStream (its first word is {d}, a device_type, not the get_schema callback): use the device-stream import", kind, address, .{first});
    }
    if (formatLike(first) and !executable(@intCast(first)))
        return notA("it looks like an ArrowSchema (its first word points to a format string, not the get_schema callback)", kind, address, .{});
    if (word(bytes, stream_release) == 0) return if (mode == .live) released(kind) else .ok;
    return probeCallbacks(kind, address, bytes, &.{ "get_schema", "get_next", "get_last_error", "release" }, &.{
        @offsetOf(abi.ArrowArrayStream, "get_schema"),
        @offsetOf(abi.ArrowArrayStream, "get_next"),
        @offsetOf(abi.ArrowArrayStream, "get_last_error"),
        stream_release,
    });
}

fn probeDeviceArrayStream(address: usize, bytes: []const u8, mode: Mode) Status {
    const kind = Kind.device_array_stream;
    const first = word(bytes, 0);
    // An ArrowArrayStream starts with its get_schema callback: a readable
    // address, where a device stream has a small device_type.
    if (first > std.math.maxInt(u32) and executable(@intCast(first)) and word(bytes, @offsetOf(abi.ArrowArrayStream, "release")) != 0)
        return notA("it looks like an ArrowArrayStream (its first word 0x{x} is a callback address, not a device_type): use the array-stream import", kind, address, .{first});
    if (formatLike(first) and !executable(@intCast(first)))
        return notA("it looks like an ArrowSchema (its first word points to a format string, not a device_type)", kind, address, .{});
    if (word(bytes, device_stream_release) == 0) return if (mode == .live) released(kind) else .ok;
    return probeCallbacks(kind, address, bytes, &.{ "get_schema", "get_next", "get_last_error", "release" }, &.{
        @offsetOf(abi.ArrowDeviceArrayStream, "get_schema"),
        @offsetOf(abi.ArrowDeviceArrayStream, "get_next"),
        @offsetOf(abi.ArrowDeviceArrayStream, "get_last_error"),
        device_stream_release,
    });
}

fn probeHandler(address: usize, bytes: []const u8, mode: Mode) Status {
    const kind = Kind.async_handler;
    if (word(bytes, handler_release) == 0) return if (mode == .live) released(kind) else .ok;
    return probeCallbacks(kind, address, bytes, &.{ "on_schema", "on_next_task", "on_error", "release" }, &.{
        @offsetOf(abi.ArrowAsyncDeviceStreamHandler, "on_schema"),
        @offsetOf(abi.ArrowAsyncDeviceStreamHandler, "on_next_task"),
        @offsetOf(abi.ArrowAsyncDeviceStreamHandler, "on_error"),
        handler_release,
    });
}

/// Checks that `address` names a `kind` struct that is safe to read (and,
/// in `.view` mode, to write). Returns `.ok`, `.released` (a released
/// struct in `.live` mode) or `.invalid_argument`, with the reason as the
/// thread's last error.
pub fn probeStruct(kind: Kind, address: usize, mode: Mode) Status {
    if (address == 0) return fail(.invalid_argument, "{s} pointer is NULL", .{kind.cName()});
    if (address % 8 != 0) return fail(.invalid_argument, "{s} pointer 0x{x} is not 8-byte aligned", .{ kind.cName(), address });
    var bytes: [128]u8 = undefined;
    const size = kind.size();
    if (!copyIn(address, bytes[0..size])) return fail(.invalid_argument, "0x{x} is not readable memory for an {s} ({d} bytes)", .{ address, kind.cName(), size });
    if (mode == .view and !Os.writeBack(address, bytes[0..size])) return fail(.invalid_argument, "the {s} at 0x{x} is not writable memory", .{ kind.cName(), address });
    const view = bytes[0..size];
    return switch (kind) {
        .schema => probeSchema(address, view, mode),
        .array => probeArray(kind, address, view[0..@sizeOf(abi.ArrowArray)], mode),
        .device_array => probeArray(kind, address, view[0..@sizeOf(abi.ArrowArray)], mode),
        .array_stream => probeArrayStream(address, view, mode),
        .device_array_stream => probeDeviceArrayStream(address, view, mode),
        .async_handler => probeHandler(address, view, mode),
    };
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
