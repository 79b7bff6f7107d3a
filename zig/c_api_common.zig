//! What every area of the C API (c_api.zig) shares: the status code a C
//! caller sees, and the validation level it names.

const std = @import("std");
const status = @import("core/status.zig");
const validate = @import("validate/validate.zig");
const owner_mod = @import("import/owner.zig");

pub const Status = status.Status;
pub const Owner = owner_mod.Owner;

/// The `abd_status` a C caller sees for `s`.
pub fn code(s: Status) c_int {
    return @intFromEnum(s);
}

/// The validation level `raw` names, or null when it names none.
pub fn levelFrom(raw: c_int) ?validate.Level {
    return std.enums.fromInt(validate.Level, raw);
}
