/**
 * Argument checks for every public function, run before any native call.
 *
 * Each check names the function, the parameter and what was expected, and
 * throws InvalidArgumentError. A message never contains the value itself
 * (its toString may be megabytes: a whole Table), only its kind, bounded by
 * `describeValue`. This module knows no apache-arrow and no native code: it
 * sits beside core/errors.ts, under every other layer.
 */
import { InvalidArgumentError, Status } from "./errors.ts";

/** Longest description `describeValue` returns. */
const maxDescription = 100;

export function clip(text: string, limit: number): string {
  return text.length <= limit ? text : `${text.slice(0, limit - 1)}…`;
}

function article(name: string): string {
  return /^[aeiou]/i.test(name) ? `an ${name}` : `a ${name}`;
}

/** package.json peerDependencies["apache-arrow"] (test/arrow/arrow_versions.test.ts keeps them equal). */
export const supportedArrowRange = ">=21.2.0 <22";

/** apache-arrow's classes by name, as this package resolves them
 * (registered by ts/arrow/arrow_module.ts: only ts/arrow imports
 * apache-arrow). */
const arrowClasses = new Map<string, Function>();

export function registerArrowClasses(classes: Record<string, unknown>): void {
  for (const [name, value] of Object.entries(classes)) if (typeof value === "function") arrowClasses.set(name, value);
}

/** Whether `value` is an object of an apache-arrow class of another copy
 * of apache-arrow (another version, or a second install): its class has the
 * name of one of apache-arrow's, but is not this package's. */
function isForeignArrow(value: unknown): boolean {
  if (typeof value !== "object" || value === null) return false;
  const ctor = (Object.getPrototypeOf(value) as { constructor?: unknown } | null)?.constructor;
  if (typeof ctor !== "function") return false;
  const ours = arrowClasses.get(ctor.name);
  return ours !== undefined && ours !== ctor && !(value instanceof ours);
}

/** The kind of `value`, in at most `maxDescription` characters: "NaN",
 * "the number 1.5", "a string of 3 characters", "an array of 2 items",
 * "a Uint8Array of 16 bytes", "a Table", "a plain object". Never its
 * contents or toString(). */
export function describeValue(value: unknown): string {
  switch (typeof value) {
    case "undefined": return "undefined";
    case "boolean": return String(value);
    case "number":
      if (Number.isNaN(value)) return "NaN";
      return `the number ${clip(String(value), 30)}`;
    case "bigint": return `the bigint ${clip(String(value), 30)}`;
    case "string": return `a string of ${value.length} characters`;
    case "symbol": return "a symbol";
    case "function": return "a function";
  }
  if (value === null) return "null";
  if (Array.isArray(value)) return `an array of ${value.length} items`;
  if (ArrayBuffer.isView(value)) return clip(`${article(value.constructor?.name ?? "ArrayBufferView")} of ${value.byteLength} bytes`, maxDescription);
  const proto = Object.getPrototypeOf(value);
  if (proto === null || proto === Object.prototype) return "a plain object";
  const name = typeof proto?.constructor?.name === "string" && proto.constructor.name ? proto.constructor.name : "object";
  return clip(article(name), maxDescription);
}

/** Throws the InvalidArgumentError for `fn`'s `param`, which should have
 * been `expected` and was `value`. */
export function argumentError(fn: string, param: string, expected: string, value: unknown): InvalidArgumentError {
  const foreign = isForeignArrow(value) ? ` from another copy of apache-arrow (the app needs one, in ${supportedArrowRange})` : "";
  return new InvalidArgumentError(Status.invalid_argument, `${fn}: ${param} must be ${expected}, not ${describeValue(value)}${foreign}`);
}

function isInteger(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value);
}

/** A safe integer in [min, max]. */
export function integerArg(fn: string, param: string, value: unknown, min = Number.MIN_SAFE_INTEGER, max = Number.MAX_SAFE_INTEGER): number {
  if (!isInteger(value) || value < min || value > max) {
    const range = min === 0 && max === Number.MAX_SAFE_INTEGER ? "a non-negative safe integer"
      : max === Number.MAX_SAFE_INTEGER ? `a safe integer ≥ ${min}` : `an integer in ${min}..${max}`;
    throw argumentError(fn, param, range, value);
  }
  return value;
}


const int64Min = -(2n ** 63n);
const int64Max = 2n ** 63n - 1n;

/** An int64_t (a device_id): a safe integer or a bigint in int64 range.
 * Returned as a bigint, exact. */
export function int64Arg(fn: string, param: string, value: unknown): bigint {
  if (isInteger(value)) return BigInt(value);
  if (typeof value === "bigint" && value >= int64Min && value <= int64Max) return value;
  throw argumentError(fn, param, "an int64 (a safe integer or a bigint)", value);
}

/** A native address: a safe non-negative integer or a bigint below 2^53,
 * 8-byte aligned (every Arrow C struct and handle is), non-zero unless
 * `nullable` (then 0, null and undefined give 0). */
export function addressArg(fn: string, param: string, value: unknown, nullable = false): number {
  if (nullable && (value === null || value === undefined)) return 0;
  let address: number | null = null;
  if (isInteger(value) && value >= 0) address = value;
  else if (typeof value === "bigint" && value >= 0n && value <= BigInt(Number.MAX_SAFE_INTEGER)) address = Number(value);
  // `& 7` reads the low bits of any safe integer (`% 8` on a double
  // costs a division).
  if (address === null || (address === 0 && !nullable) || (address & 7) !== 0) {
    // Built only here: a template string per call costs more than the checks.
    const what = `${nullable ? "an" : "a non-zero,"} 8-byte aligned address (a non-negative safe integer or bigint)${nullable ? " or null" : ""}`;
    throw argumentError(fn, param, what, value);
  }
  return address;
}

/** One of `choices` (strings compared exactly). */
export function oneOfArg<T extends string>(fn: string, param: string, value: unknown, choices: readonly T[]): T {
  if (typeof value !== "string" || !(choices as readonly string[]).includes(value)) {
    throw argumentError(fn, param, `one of ${choices.map((c) => `"${c}"`).join(", ")}`, value);
  }
  return value as T;
}

/** A function, or undefined when `optional`. */
export function functionArg(fn: string, param: string, value: unknown, optional = false): void {
  if (optional && value === undefined) return;
  if (typeof value !== "function") throw argumentError(fn, param, optional ? "a function or undefined" : "a function", value);
}

/** A boolean, or undefined when `optional`. */
export function booleanArg(fn: string, param: string, value: unknown, optional = false): void {
  if (optional && value === undefined) return;
  if (typeof value !== "boolean") throw argumentError(fn, param, optional ? "true, false or undefined" : "true or false", value);
}

/** A string, or undefined when `optional`. */
export function stringArg(fn: string, param: string, value: unknown, optional = false): void {
  if (optional && value === undefined) return;
  if (typeof value !== "string") throw argumentError(fn, param, optional ? "a string or undefined" : "a string", value);
}

/** Refuses a constructor call from outside the class's module: the
 * constructor is private in TypeScript but reachable from JS, and what it
 * takes (a native address) could be anything. `token` must be the
 * module-private `expected` symbol. */
export function internalConstruction(cls: string, token: unknown, expected: symbol, instead: string): void {
  if (token !== expected) throw new InvalidArgumentError(Status.invalid_argument, `${cls}: the constructor is not public; ${instead}`);
}

/** True for `{...}` literals and Object.create(null). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === null || proto === Object.prototype;
}

/** An options object: undefined (gives {}) or a plain object whose keys
 * are all in `known`. A misspelt key is named in the error. */
export function optionsArg<T extends object>(
  fn: string, param: string, value: T | undefined, known: readonly string[], required = false, expected = "an options object",
): T {
  if (value === undefined && !required) return {} as T;
  if (!isPlainObject(value)) throw argumentError(fn, param, required ? expected : `${expected} or undefined`, value);
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) {
      throw new InvalidArgumentError(Status.invalid_argument, `${fn}: ${param} has an unknown key "${clip(key, 40)}" (known: ${known.join(", ")})`);
    }
  }
  return value;
}

/** An object (not null, not a function), for parameters whose kind the
 * caller checks further. */
export function objectArg(fn: string, param: string, value: unknown, expected: string): object {
  if (typeof value !== "object" || value === null) throw argumentError(fn, param, expected, value);
  return value;
}

/** An ArrowDeviceType: a positive int32 (CPU is 1; 0 and below are not a
 * device type). */
export function deviceTypeArg(fn: string, param: string, value: unknown): number {
  if (!isInteger(value) || value < 1 || value > 2 ** 31 - 1) {
    throw argumentError(fn, param, "an Arrow device type, a positive int32 (0 and below are not a device type)", value);
  }
  return value;
}
