//! Tests of the address probe (probe.zig, probe_pages.zig).

const std = @import("std");
const abi = @import("../core/abi.zig");
const status = @import("../core/status.zig");
const probe = @import("probe.zig");
const pages = @import("probe_pages.zig");
const probe_copy = @import("probe_copy.zig");
const Status = status.Status;
const Pages = pages.Pages;
const Range = probe_copy.Range;
const copyMany = probe_copy.copyMany;
const granule = pages.granule;
const low_half_top = pages.low_half_top;
const readable = pages.readable;
const stringLength = pages.stringLength;
const probeStruct = probe.probeStruct;
const probePair = probe.probePair;
const noteArrayStreamCallback = probe.noteArrayStreamCallback;

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
    pages.n_hints = 0;
    const before = pages.kernel_calls.load(.monotonic);
    try std.testing.expectEqual(Status.ok, probePair(@intFromPtr(&schema), .array, @intFromPtr(&array), false));
    // Roots, then strings and pointer arrays, then children: at most one
    // call each, and none for a level already proven.
    try std.testing.expect(pages.kernel_calls.load(.monotonic) - before <= 3);
    const again = pages.kernel_calls.load(.monotonic);
    try std.testing.expectEqual(Status.ok, probePair(@intFromPtr(&schema), .array, @intFromPtr(&array), false));
    try std.testing.expectEqual(@as(usize, 1), pages.kernel_calls.load(.monotonic) - again);
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
    pages.n_hints = 0;
    const before = pages.kernel_calls.load(.monotonic);
    try std.testing.expectEqual(Status.ok, probeStruct(.schema, @intFromPtr(&schema), .live));
    // Levels of at most 64 pages per call, then batches of 32 children
    // for the pages no longer kept: not one call per child.
    try std.testing.expect(pages.kernel_calls.load(.monotonic) - before <= 10);
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
    pages.n_hints = 0;
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
