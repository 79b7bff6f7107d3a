//! Root of libarrow_device: pulls in the exported C API and every module's
//! tests. Layers point one way:
//!   abi <- format <- validate <- owner/export_* <- consumer <- c_api
//!   (async: js_wake, metadata_copy, schema_copy, producer_gate <-
//!    async_consumer, async_producer <- c_api)
//!   abi <- move <- c_api
//!   metadata <- validate; validate <- schema_info <- c_api

const std = @import("std");

comptime {
    _ = @import("c_api.zig");
}

test {
    _ = @import("abi.zig");
    _ = @import("status.zig");
    _ = @import("sync.zig");
    _ = @import("counters.zig");
    _ = @import("manifest.zig");
    _ = @import("format.zig");
    _ = @import("validate.zig");
    _ = @import("validate_test.zig");
    _ = @import("tree_block.zig");
    _ = @import("keepalive.zig");
    _ = @import("export_array.zig");
    _ = @import("export_schema.zig");
    _ = @import("owner.zig");
    _ = @import("device_sync.zig");
    _ = @import("consumer.zig");
    _ = @import("js_wake.zig");
    _ = @import("metadata_copy.zig");
    _ = @import("schema_copy.zig");
    _ = @import("producer_gate.zig");
    _ = @import("async_consumer.zig");
    _ = @import("async_producer.zig");
    _ = @import("move.zig");
    _ = @import("metadata.zig");
    _ = @import("schema_info.zig");
    _ = @import("c_api.zig");
}
