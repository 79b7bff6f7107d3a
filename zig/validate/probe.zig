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
//! The copies are in probe_copy.zig, the granules one call proved in
//! probe_pages.zig. Nothing here allocates or calls the struct's
//! callbacks; any thread.

const std = @import("std");
const builtin = @import("builtin");
const abi = @import("../core/abi.zig");
const status = @import("../core/status.zig");
const Status = status.Status;
const fail = status.fail;
const probe_copy = @import("probe_copy.zig");
const pages = @import("probe_pages.zig");
const Pages = pages.Pages;
const granule = probe_copy.granule;
const executable = probe_copy.executable;
const Os = probe_copy.Os;
const hintAll = pages.hintAll;
const keepHints = pages.keepHints;

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
