//! Moving Arrow arrays between host and device memory.
//!
//! - `toDevice` copies every buffer of a host array (moved in) into one
//!   device allocation and exports an ArrowDeviceArray over it, whose
//!   `sync_event` points to an event recorded after the copies.
//! - `toHost` copies an imported device array back: it waits on the
//!   producer's event, learns the sizes only the device knows (last
//!   offsets, variadic buffer sizes) with one batch of small copies and one
//!   synchronization, then copies every buffer and exports a CPU array over
//!   the copies. Arrays the host can already read (CPU, or host-visible
//!   device memory after its event) become zero-copy CPU views instead.
//!
//! Device memory is never dereferenced here: every byte of it the host
//! needs goes through the runtime's copy functions.
//!
//! Ownership and threads: see each function. Release callbacks of what
//! this module exports may run on any thread; they wait for the copies
//! they own to finish before freeing anything.
//!
//! The work is in three files, one job each: to_device.zig, to_host.zig,
//! and transfer_plan.zig (the layout both share).

const to_device = @import("to_device.zig");
const to_host = @import("to_host.zig");

pub const buffer_alignment = @import("transfer_plan.zig").buffer_alignment;
pub const ToDeviceOptions = to_device.ToDeviceOptions;
pub const toDevice = to_device.toDevice;
pub const toHost = to_host.toHost;

test {
    _ = @import("transfer_plan.zig");
    _ = to_device;
    _ = to_host;
}
