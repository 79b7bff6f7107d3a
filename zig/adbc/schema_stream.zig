//! A stream with a schema and no batches, over an ArrowSchema a driver
//! filled (AdbcConnectionGetTableSchema, AdbcStatementGetParameterSchema,
//! AdbcStatementExecuteSchema, AdbcStatementExecutePartitions): the TS
//! layer converts a schema through the stream import it already has.
//!
//! Ownership: `wrap` moves the schema in; the stream's release releases it
//! once. get_schema hands out copies (export/schema_copy.zig).

const std = @import("std");
const abi = @import("../core/abi.zig");
const schema_copy = @import("../export/schema_copy.zig");
const counters = @import("../core/counters.zig");
const Status = @import("../core/status.zig").Status;

const Private = struct { schema: abi.ArrowSchema };

/// Moves `schema` into a new stream at `out`. False (and `schema`
/// released) when out of memory.
pub fn wrap(schema: *abi.ArrowSchema, out: *abi.ArrowArrayStream) bool {
    const private = std.heap.c_allocator.create(Private) catch {
        if (schema.release) |release_schema| release_schema(schema);
        return false;
    };
    private.schema = schema.*;
    schema.release = null;
    out.* = .{ .get_schema = getSchema, .get_next = getNext, .get_last_error = getLastError, .release = release, .private_data = private };
    counters.add(.live_adbc_objects, 1);
    return true;
}

fn getSchema(stream: *abi.ArrowArrayStream, out: *abi.ArrowSchema) callconv(.c) c_int {
    const private: *Private = @ptrCast(@alignCast(stream.private_data.?));
    return if (schema_copy.copy(&private.schema, out) == Status.ok) 0 else @import("../core/errno.zig").native.ENOMEM;
}

fn getNext(_: *abi.ArrowArrayStream, out: *abi.ArrowArray) callconv(.c) c_int {
    out.release = null;
    return 0;
}

fn getLastError(_: *abi.ArrowArrayStream) callconv(.c) ?[*:0]const u8 {
    return null;
}

fn release(stream: *abi.ArrowArrayStream) callconv(.c) void {
    const private: *Private = @ptrCast(@alignCast(stream.private_data.?));
    if (private.schema.release) |release_schema| release_schema(&private.schema);
    std.heap.c_allocator.destroy(private);
    stream.release = null;
    counters.add(.live_adbc_objects, -1);
}
