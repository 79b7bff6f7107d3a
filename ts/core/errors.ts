/**
 * Typed errors. Every failure of the native library surfaces as an
 * `ArrowDeviceError` subclass carrying the library's status `code` (see
 * zig/core/status.zig) and the message the library recorded for the failing
 * call (its per-thread last error).
 */

/** Status codes of libarrow_device, as in zig/core/status.zig and the manifest. */
export const Status = {
  ok: 0,
  invalid_argument: 1,
  released: 2,
  invalid_format: 3,
  invalid_layout: 4,
  unknown_device: 5,
  too_deep: 6,
  out_of_memory: 7,
  out_of_range: 8,
  unsupported: 9,
  device_unavailable: 10,
  device_error: 11,
  callback_error: 12,
  cancelled: 13,
  wrong_thread: 14,
  internal: 15,
} as const;
/** A status by name: "ok", "invalid_argument", ... */
export type StatusName = keyof typeof Status;
/** A status by number (0 = ok). */
export type StatusCode = (typeof Status)[StatusName];

/** What a wrong constructor argument was, briefly (never its contents). */
function kindOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "number") return Number.isNaN(value) ? "NaN" : `the number ${String(value).slice(0, 30)}`;
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

/** The error classes check their own arguments (they are public
 * constructors): a wrong one is an InvalidArgumentError naming it. */
function errorArg(cls: string, param: string, ok: boolean, expected: string, value: unknown): void {
  if (!ok) throw new InvalidArgumentError(Status.invalid_argument, `${cls}: ${param} must be ${expected}, not ${kindOf(value)}`);
}

const isStatus = (value: unknown): boolean => typeof value === "number" && Number.isSafeInteger(value);
const isStrings = (value: unknown): boolean => Array.isArray(value) && value.every((item) => typeof item === "string");

/** The base class of every error the native library reports: its status
 * (`code` by name, `status` by number) and the message it recorded. */
export class ArrowDeviceError extends Error {
  override name = "ArrowDeviceError";
  /** The library status name, e.g. "invalid_layout". */
  readonly code: StatusName;
  /** The numeric status. */
  readonly status: number;
  constructor(status: number, message: string) {
    errorArg(new.target.name, "status", isStatus(status), "an integer status", status);
    errorArg(new.target.name, "message", typeof message === "string", "a string", message);
    super(message);
    this.status = status;
    this.code = statusName(status);
  }
}

/** Bad arguments to an API call (null pointers, bad options). */
export class InvalidArgumentError extends ArrowDeviceError { override name = "InvalidArgumentError"; }
/** The struct was already released or moved. */
export class ReleasedError extends ArrowDeviceError { override name = "ReleasedError"; }
/** A malformed or unknown format string. */
export class InvalidFormatError extends ArrowDeviceError { override name = "InvalidFormatError"; }
/** Buffers, children, lengths or offsets inconsistent with the type. */
export class InvalidLayoutError extends ArrowDeviceError { override name = "InvalidLayoutError"; }
/** A device type this operation cannot handle. */
export class UnknownDeviceError extends ArrowDeviceError { override name = "UnknownDeviceError"; }
/** Nesting deeper than the library's limit. */
export class TooDeepError extends ArrowDeviceError { override name = "TooDeepError"; }
/** An allocation failed (native memory, a slot, a queue). */
export class OutOfMemoryError extends ArrowDeviceError { override name = "OutOfMemoryError"; }
/** A child index, slice or position out of range. */
export class OutOfRangeError extends ArrowDeviceError { override name = "OutOfRangeError"; }
/** Not supported for this type or device (names which). */
export class UnsupportedError extends ArrowDeviceError { override name = "UnsupportedError"; }
/** A device runtime is not available; the message says what was tried. */
export class DeviceUnavailableError extends ArrowDeviceError { override name = "DeviceUnavailableError"; }
/** A device runtime call failed. */
export class DeviceError extends ArrowDeviceError { override name = "DeviceError"; }
/** A C producer or consumer callback reported an error (errno in `errno`). */
export class CallbackError extends ArrowDeviceError {
  override name = "CallbackError";
  /** The errno-compatible code the callback returned, when known. */
  errno?: number;
}
/** The stream or task was cancelled. */
export class CancelledError extends ArrowDeviceError { override name = "CancelledError"; }
/** The call would deadlock or hang on this thread. */
export class WrongThreadError extends ArrowDeviceError { override name = "WrongThreadError"; }
/** A bug in this library. */
export class InternalError extends ArrowDeviceError { override name = "InternalError"; }

const classes: Record<number, new (status: number, message: string) => ArrowDeviceError> = {
  [Status.invalid_argument]: InvalidArgumentError,
  [Status.released]: ReleasedError,
  [Status.invalid_format]: InvalidFormatError,
  [Status.invalid_layout]: InvalidLayoutError,
  [Status.unknown_device]: UnknownDeviceError,
  [Status.too_deep]: TooDeepError,
  [Status.out_of_memory]: OutOfMemoryError,
  [Status.out_of_range]: OutOfRangeError,
  [Status.unsupported]: UnsupportedError,
  [Status.device_unavailable]: DeviceUnavailableError,
  [Status.device_error]: DeviceError,
  [Status.callback_error]: CallbackError,
  [Status.cancelled]: CancelledError,
  [Status.wrong_thread]: WrongThreadError,
  [Status.internal]: InternalError,
};

/** The name of `status`; "internal" for a number the library never returns. */
export function statusName(status: number): StatusName {
  if (typeof status !== "number") throw new InvalidArgumentError(Status.invalid_argument, `statusName: status must be a number, not ${status === null ? "null" : typeof status}`);
  for (const [name, value] of Object.entries(Status)) if (value === status) return name as StatusName;
  return "internal";
}

/** The typed error for `status` with `message`. */
export function errorFor(status: number, message: string): ArrowDeviceError {
  // Checked here, not with ts/core/args.ts (which builds on this module).
  if (typeof status !== "number") throw new InvalidArgumentError(Status.invalid_argument, `errorFor: status must be a number, not ${status === null ? "null" : typeof status}`);
  if (typeof message !== "string") throw new InvalidArgumentError(Status.invalid_argument, `errorFor: message must be a string, not ${message === null ? "null" : typeof message}`);
  const ErrorClass = classes[status] ?? InternalError;
  return new ErrorClass(status, message || `libarrow_device failed with status ${status} (${statusName(status)})`);
}

/** The library is missing, built for another platform, or out of date. */
export class LibraryLoadError extends Error {
  override name = "LibraryLoadError";
  /**
   * @param path the library file that failed (or the last one looked for).
   * @param tried every place the loader looked, in order.
   * @param platformId the platform the loader looked for (linux-x64-gnu, ...).
   */
  constructor(message: string, readonly path: string, readonly tried: readonly string[] = [path], readonly platformId: string = "") {
    errorArg("LibraryLoadError", "message", typeof message === "string", "a string", message);
    errorArg("LibraryLoadError", "path", typeof path === "string", "a string", path);
    errorArg("LibraryLoadError", "tried", isStrings(tried), "an array of strings", tried);
    errorArg("LibraryLoadError", "platformId", typeof platformId === "string", "a string", platformId);
    super(message);
  }
}

/** The TS and native struct layouts disagree. */
export class LayoutMismatchError extends Error {
  override name = "LayoutMismatchError";
  constructor(readonly problems: string[]) {
    errorArg("LayoutMismatchError", "problems", isStrings(problems), "an array of strings", problems);
    super(`libarrow_device and the TypeScript layer disagree on the ABI layout:\n  ${problems.join("\n  ")}`);
  }
}

/** A stream producer's callback (get_schema, get_next) returned non-zero.
 * `errno` is its code; `producerMessage` its get_last_error text, intact
 * (null when it gave none). */
export class StreamError extends CallbackError {
  override name = "StreamError";
  constructor(status: number, message: string, errno: number, readonly producerMessage: string | null) {
    errorArg("StreamError", "errno", isStatus(errno), "an integer errno", errno);
    errorArg("StreamError", "producerMessage", producerMessage === null || typeof producerMessage === "string", "a string or null", producerMessage);
    super(status, message);
    this.errno = errno;
  }
}

/**
 * An async device stream failed. Either the producer reported it through
 * `on_error` (`errno`, `message` and `metadata` are its, copied before the
 * callback returned), or (`local`) the producer broke the protocol and this
 * library ended the stream.
 */
export class AsyncStreamError extends CallbackError {
  override name = "AsyncStreamError";
  /** on_error's metadata, decoded (empty when it sent none). */
  readonly metadata: Map<string, string>;
  /** True when this library detected the failure (a protocol violation). */
  readonly local: boolean;
  constructor(errno: number, message: string, metadata: Map<string, string>, local: boolean) {
    errorArg("AsyncStreamError", "errno", isStatus(errno), "an integer errno", errno);
    errorArg("AsyncStreamError", "metadata", metadata instanceof Map, "a Map", metadata);
    errorArg("AsyncStreamError", "local", typeof local === "boolean", "true or false", local);
    super(Status.callback_error, message);
    this.errno = errno;
    this.metadata = metadata;
    this.local = local;
  }
}

/** ADBC status codes (AdbcStatusCode in arrow-adbc's adbc.h), by name. */
export const AdbcStatus = {
  ok: 0, unknown: 1, not_implemented: 2, not_found: 3, already_exists: 4, invalid_argument: 5,
  invalid_state: 6, invalid_data: 7, integrity: 8, internal: 9, io: 10, cancelled: 11, timeout: 12,
  unauthenticated: 13, unauthorized: 14,
} as const;
/** An ADBC status by name: "not_implemented", "invalid_state", ... */
export type AdbcStatusName = keyof typeof AdbcStatus;

/**
 * An ADBC driver call failed. `code` is "callback_error" (a driver
 * reported it); `adbcStatus` is the driver's AdbcStatusCode by name
 * ("unknown" for a number adbc.h does not define), `adbcCode` its number.
 * `sqlstate` (5 characters, or null when the driver set none),
 * `vendorCode` (null when none) and `details` (the ADBC 1.1.0 error
 * details, values as bytes) are the driver's AdbcError, copied before it
 * was released.
 */
export class AdbcError extends CallbackError {
  override name = "AdbcError";
  /** The driver's AdbcStatusCode by name. */
  readonly adbcStatus: AdbcStatusName;
  /** The driver's AdbcStatusCode. */
  readonly adbcCode: number;
  /** The SQLSTATE (5 characters), or null when the driver set none. */
  readonly sqlstate: string | null;
  /** The driver's vendor code, or null when it set none. */
  readonly vendorCode: number | null;
  /** The ADBC 1.1.0 error details: key -> value bytes. */
  readonly details: ReadonlyMap<string, Uint8Array>;
  constructor(adbcCode: number, message: string, sqlstate: string | null, vendorCode: number | null, details: ReadonlyMap<string, Uint8Array>) {
    errorArg("AdbcError", "adbcCode", Number.isInteger(adbcCode) && adbcCode >= 0 && adbcCode <= 255, "an AdbcStatusCode (0..255)", adbcCode);
    errorArg("AdbcError", "sqlstate", sqlstate === null || (typeof sqlstate === "string" && sqlstate.length === 5), "a 5-character string or null", sqlstate);
    errorArg("AdbcError", "vendorCode", vendorCode === null || isStatus(vendorCode), "an integer or null", vendorCode);
    errorArg("AdbcError", "details", details instanceof Map, "a Map", details);
    super(Status.callback_error, message);
    this.adbcCode = adbcCode;
    this.adbcStatus = (Object.entries(AdbcStatus).find(([, v]) => v === adbcCode)?.[0] ?? "unknown") as AdbcStatusName;
    this.sqlstate = sqlstate;
    this.vendorCode = vendorCode;
    this.details = details;
  }
}
