//! The library's C API: every exported symbol, and nothing else. Each entry
//! says who owns what. Declared for C in lib/include/arrow_device.h; the TS
//! side binds them in ts/core/ffi/.
//!
//! Conventions:
//! - Functions that can fail return an `abd_status` (status.zig); on failure
//!   `abd_last_error()` explains, until the next failing call on the thread.
//! - "Moves" means: the struct is bitwise-copied and the caller's copy is
//!   marked released, whether or not the call succeeds.
//!
//! The symbols are in one file per area; this file pulls them all in:
//! - c_api_core.zig: library facts and errors, memory the caller owns,
//!   releasing structs from languages that cannot call function pointers;
//! - c_api_export.zig: export trees over caller-kept memory, keepalive ids,
//!   JS thread contexts;
//! - c_api_import.zig: owners of moved-in data, the built-in native
//!   consumer, moving structs, an import's schema strings;
//! - c_api_reexport.zig: re-export and relays;
//! - c_api_device.zig: device runtimes (CUDA, ROCm);
//! - c_api_probe.zig: fault-safe struct checks;
//! - c_api_streams.zig: streams, device streams from JS, the JS work queue;
//! - c_api_async.zig: async device streams;
//! - c_api_adbc.zig: ADBC drivers and calls (adbc/exports.zig: result
//!   streams, connections shared across threads);
//! - c_api_common.zig: the status code and validation level they share.

comptime {
    _ = @import("c_api_core.zig");
    _ = @import("c_api_export.zig");
    _ = @import("c_api_import.zig");
    _ = @import("c_api_reexport.zig");
    _ = @import("c_api_device.zig");
    _ = @import("c_api_probe.zig");
    _ = @import("c_api_streams.zig");
    _ = @import("c_api_async.zig");
    _ = @import("c_api_adbc.zig");
    _ = @import("adbc/exports.zig");
}
