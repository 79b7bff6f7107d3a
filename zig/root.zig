//! Root of libarrow_device: pulls in the exported C API and every module's
//! tests. Layers point one way:
//!   abi <- format <- validate <- owner/export_* <- consumer/reexport/streams <- c_api
//!   device/{dynlib, cuda, hip} <- device/runtime <- device/transfer <- c_api
//!   (async: js_wake, metadata_copy, schema_copy, shared_schema, producer_gate <-
//!    async_consumer, async_producer <- c_api)
//!   abi <- move <- c_api
//!   metadata <- validate; validate <- schema_info <- schema_key <- c_api

const std = @import("std");

comptime {
    _ = @import("c_api.zig");
}

test {
    _ = @import("abi.zig");
    _ = @import("status.zig");
    _ = @import("errno.zig");
    _ = @import("sync.zig");
    _ = @import("counters.zig");
    _ = @import("manifest.zig");
    _ = @import("format.zig");
    _ = @import("validate.zig");
    _ = @import("validate_test.zig");
    _ = @import("validate_flat_test.zig");
    _ = @import("block_pool.zig");
    _ = @import("tree_block.zig");
    _ = @import("keepalive.zig");
    _ = @import("export_holds.zig");
    _ = @import("export_array.zig");
    _ = @import("export_schema.zig");
    _ = @import("export_batch.zig");
    _ = @import("owner.zig");
    _ = @import("device_sync.zig");
    _ = @import("consumer.zig");
    _ = @import("reexport.zig");
    _ = @import("schema_copy.zig");
    _ = @import("schema_match.zig");
    _ = @import("device/dynlib.zig");
    _ = @import("device/runtime.zig");
    _ = @import("device/cuda.zig");
    _ = @import("device/hip.zig");
    _ = @import("device/releaser.zig");
    _ = @import("device/transfer.zig");
    _ = @import("device/staging.zig");
    _ = @import("js_wake.zig");
    _ = @import("metadata_copy.zig");
    _ = @import("producer_gate.zig");
    _ = @import("shared_schema.zig");
    _ = @import("async_consumer.zig");
    _ = @import("async_producer.zig");
    _ = @import("move.zig");
    _ = @import("probe.zig");
    _ = @import("metadata.zig");
    _ = @import("schema_info.zig");
    _ = @import("schema_key.zig");
    _ = @import("js_queue.zig");
    _ = @import("js_context.zig");
    _ = @import("stream_export.zig");
    _ = @import("stream_import.zig");
    _ = @import("stream_convert.zig");
    _ = @import("empty_batch.zig");
    _ = @import("c_api.zig");
}
