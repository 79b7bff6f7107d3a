//! One producer schema lent to many imported batches, never copied.
//!
//! An async stream's batches all have the schema the producer sent once
//! with on_schema. Rather than deep-copying it into every batch's owner,
//! the stream keeps it behind a reference count and gives each batch a
//! root struct of its own (`lend`): the producer's fields (children,
//! strings, metadata: still the producer's, never moved out) with a release
//! that drops one reference. The producer's own release runs once, when the
//! stream and every batch let go, on whichever thread lets go last
//! (batches are released on any thread, e.g. a GC thread).

const std = @import("std");
const abi = @import("../core/abi.zig");

pub const SharedSchema = struct {
    refs: std.atomic.Value(u32),
    /// Moved in from the producer; released with the last reference.
    schema: abi.ArrowSchema,

    /// Takes `schema` (moved: its release is cleared) with one reference,
    /// the caller's. Null when memory is short (`schema` is left as it was).
    pub fn create(schema: *abi.ArrowSchema) ?*SharedSchema {
        const self = std.heap.c_allocator.create(SharedSchema) catch return null;
        self.* = .{ .refs = .init(1), .schema = schema.* };
        schema.release = null;
        return self;
    }

    /// A root struct for one batch, holding one more reference.
    pub fn lend(self: *SharedSchema) abi.ArrowSchema {
        _ = self.refs.fetchAdd(1, .monotonic);
        var root = self.schema;
        root.release = releaseLent;
        root.private_data = self;
        return root;
    }

    /// Any thread.
    pub fn unref(self: *SharedSchema) void {
        const before = self.refs.fetchSub(1, .acq_rel);
        std.debug.assert(before > 0);
        if (before != 1) return;
        if (self.schema.release) |producer_release| producer_release(&self.schema);
        std.heap.c_allocator.destroy(self);
    }

    fn releaseLent(root: *abi.ArrowSchema) callconv(.c) void {
        const self: *SharedSchema = @ptrCast(@alignCast(root.private_data.?));
        root.release = null;
        root.private_data = null;
        self.unref();
    }
};

test "the producer's release runs once, after the holder and every lent root let go" {
    const Producer = struct {
        var releases: u32 = 0;
        fn release(s: *abi.ArrowSchema) callconv(.c) void {
            releases += 1;
            s.release = null;
        }
    };
    var schema: abi.ArrowSchema = .empty;
    schema.format = "+s";
    schema.release = Producer.release;
    const shared = SharedSchema.create(&schema).?;
    try std.testing.expect(schema.release == null); // moved in
    var a = shared.lend();
    var b = shared.lend();
    try std.testing.expectEqualStrings("+s", std.mem.span(a.format.?));
    shared.unref();
    a.release.?(&a);
    try std.testing.expectEqual(@as(u32, 0), Producer.releases);
    b.release.?(&b);
    try std.testing.expectEqual(@as(u32, 1), Producer.releases);
    try std.testing.expect(b.release == null);
}
