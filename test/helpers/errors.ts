/**
 * Error checks as users write them: by `error.code` (docs/errors.md).
 * Most error classes are not exported, so a test never checks
 * `instanceof` one of them (test/structure/error_checks.test.ts fails on
 * that); the exported classes (`StreamError`, `CallbackError`, ...) may
 * be checked by class.
 */
import { expect } from "bun:test";
import { type StatusName } from "../../ts/index.ts";

/** Matches an error whose `code` is `code`:
 * `expect(fn).toThrow(withCode("released"))`,
 * `await expect(promise).rejects.toThrow(withCode("unsupported"))`,
 * `expect(error).toEqual(withCode("invalid_layout"))`. */
export function withCode(code: StatusName): ReturnType<typeof expect.objectContaining> {
  return expect.objectContaining({ code });
}

/** Whether `error` is an error whose `code` is `code`. */
export function hasCode(error: unknown, code: StatusName): error is Error & { code: StatusName } {
  return error instanceof Error && (error as { code?: unknown }).code === code;
}
