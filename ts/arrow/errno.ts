/**
 * The errno-compatible code a JS exception becomes when it has to cross
 * into C (a stream's get_next, an async producer's on_error).
 */
import { ArrowDeviceError, CallbackError } from "../core/errors.ts";
import { Errno } from "../core/abi/layout.ts";
import { native } from "../core/ffi/library.ts";

/** EIO (this platform's): what an exception without a better code becomes. */
export const EIO = Errno.EIO;

/**
 * A callback error's own errno (what a C peer reported); a library error's
 * status mapped as the library maps it (zig/core/status.zig `Status.errno`); an
 * `errno` property of any other exception (Node-style system errors);
 * else EIO. Always positive.
 */
export function errnoOfException(error: unknown): number {
  if (error instanceof CallbackError && typeof error.errno === "number" && error.errno > 0) return error.errno;
  if (error instanceof ArrowDeviceError) return native.abd_status_errno(error.status);
  const errno = (error as { errno?: unknown } | null)?.errno;
  if (typeof errno === "number" && Number.isInteger(errno) && errno !== 0) return Math.abs(errno);
  return EIO;
}
