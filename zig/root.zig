//! Root of libarrow_device: pulls in the exported C API and every module's
//! tests. The folders are layers, each importing only its own folder and
//! those before it (CONTRIBUTING.md, "Zig layers"; test/structure/
//! zig_layers.test.ts checks it):
//!   core <- validate <- export <- import <- stream <- async <- device <- adbc
//!   <- c_api.zig (every exported C symbol), manifest.zig, root.zig

const std = @import("std");

comptime {
    _ = @import("c_api.zig");
}

test {
    _ = @import("core/abi.zig");
    _ = @import("core/status.zig");
    _ = @import("core/errno.zig");
    _ = @import("core/sync.zig");
    _ = @import("core/counters.zig");
    _ = @import("manifest.zig");
    _ = @import("core/format.zig");
    _ = @import("validate/node_table.zig");
    _ = @import("validate/validate.zig");
    _ = @import("validate/full.zig");
    _ = @import("validate/validate_test.zig");
    _ = @import("validate/validate_types_test.zig");
    _ = @import("validate/validate_limits_test.zig");
    _ = @import("validate/flat_test.zig");
    _ = @import("core/block_pool.zig");
    _ = @import("export/tree_block.zig");
    _ = @import("export/keepalive.zig");
    _ = @import("export/holds.zig");
    _ = @import("export/array.zig");
    _ = @import("export/schema.zig");
    _ = @import("export/batch.zig");
    _ = @import("import/owner.zig");
    _ = @import("import/owner_holds.zig");
    _ = @import("core/device_sync.zig");
    _ = @import("import/consumer.zig");
    _ = @import("import/reexport.zig");
    _ = @import("import/reexport_test.zig");
    _ = @import("export/schema_copy.zig");
    _ = @import("stream/schema_match.zig");
    _ = @import("device/dynlib.zig");
    _ = @import("adbc/abi.zig");
    _ = @import("adbc/call.zig");
    _ = @import("device/ops.zig");
    _ = @import("device/driver.zig");
    _ = @import("device/runtime.zig");
    _ = @import("device/kinds.zig");
    _ = @import("device/releaser.zig");
    _ = @import("device/transfer.zig");
    _ = @import("device/staging.zig");
    _ = @import("device/host_pool.zig");
    _ = @import("async/js_wake.zig");
    _ = @import("async/metadata_copy.zig");
    _ = @import("async/producer_gate.zig");
    _ = @import("stream/shared_schema.zig");
    _ = @import("async/consumer.zig");
    _ = @import("async/consumer_test.zig");
    _ = @import("async/producer.zig");
    _ = @import("async/producer_test.zig");
    _ = @import("import/move.zig");
    _ = @import("validate/probe.zig");
    _ = @import("validate/probe_copy.zig");
    _ = @import("validate/probe_pages.zig");
    _ = @import("validate/probe_test.zig");
    _ = @import("validate/probe_policy.zig");
    _ = @import("core/metadata.zig");
    _ = @import("validate/schema_info.zig");
    _ = @import("validate/schema_key.zig");
    _ = @import("core/js_queue.zig");
    _ = @import("core/js_context.zig");
    _ = @import("stream/export.zig");
    _ = @import("stream/export_test.zig");
    _ = @import("stream/import.zig");
    _ = @import("stream/import_test.zig");
    _ = @import("stream/convert.zig");
    _ = @import("export/empty_batch.zig");
    _ = @import("c_api.zig");
}
