/**
 * Typed errors of `bun-arrow-device/python`.
 */
import { InvalidArgumentError, Status } from "../core/errors.ts";

/** The constructors check their arguments: a wrong one is an
 * InvalidArgumentError naming it. */
function stringsArg(cls: string, param: string, value: unknown, list: boolean): void {
  const ok = list ? Array.isArray(value) && value.every((item) => typeof item === "string") : typeof value === "string";
  if (!ok) throw new InvalidArgumentError(Status.invalid_argument, `${cls}: ${param} must be ${list ? "an array of strings" : "a string"}, not ${value === null ? "null" : Array.isArray(value) ? "an array" : typeof value}`);
}

/** No usable libpython: none found, a static-only Python build, or the
 * shim or the interpreter could not be loaded. `tried` lists every place
 * looked at and why it was refused, in order. */
export class PythonUnavailableError extends Error {
  override name = "PythonUnavailableError";
  constructor(message: string, readonly tried: string[]) {
    stringsArg("PythonUnavailableError", "message", message, false);
    stringsArg("PythonUnavailableError", "tried", tried, true);
    super(tried.length > 0 ? `${message}\n  tried:\n    ${tried.join("\n    ")}` : message);
  }
}

/** Python raised: `pythonType` is the exception's class name, `pythonMessage`
 * its str(). */
export class PythonError extends Error {
  override name = "PythonError";
  /** The Python exception's class name. */
  readonly pythonType: string;
  /** The Python exception's str(). */
  readonly pythonMessage: string;
  constructor(what: string, raised: string) {
    stringsArg("PythonError", "what", what, false);
    stringsArg("PythonError", "raised", raised, false);
    super(`${what}: ${raised}`);
    const colon = raised.indexOf(": ");
    this.pythonType = colon > 0 ? raised.slice(0, colon) : "Exception";
    this.pythonMessage = colon > 0 ? raised.slice(colon + 2) : raised;
  }
}
