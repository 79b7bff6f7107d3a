/**
 * The typed error for reading memory the host cannot read, shared by the
 * handles (imported_array.ts, raw_array.ts) and the converters.
 */
import { deviceTypeName } from "../core/abi/layout.ts";
import { Status, UnknownDeviceError, UnsupportedError, type ArrowDeviceError } from "../core/errors.ts";
import { integerArg, stringArg } from "../core/args.ts";

/** The typed error for reading memory the host cannot read: unknown device
 * types get UnknownDeviceError, known devices UnsupportedError. Both name
 * the device. */
export function hostAccessError(deviceType: number, deviceId: number | bigint, what: string): ArrowDeviceError {
  integerArg("hostAccessError", "deviceType", deviceType, -(2 ** 31), 2 ** 31 - 1);
  if (typeof deviceId !== "bigint") integerArg("hostAccessError", "deviceId", deviceId);
  stringArg("hostAccessError", "what", what);
  const name = deviceTypeName(deviceType);
  if (name.startsWith("unknown")) {
    return new UnknownDeviceError(Status.unknown_device, `${what}: the data is on device type ${deviceType}, which this library does not know; it can only be read as opaque raw views (addresses, lengths), not converted to host objects`);
  }
  return new UnsupportedError(Status.unsupported, `${what}: the data is in ${name} memory (device ${deviceId}), which the host cannot read; copy it to the host first`);
}
