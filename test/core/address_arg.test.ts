/**
 * ts/core/args.ts addressArg: the alignment check must be exact across the
 * whole range an address may take: above 2^32 (doubles in JSC), near 2^53,
 * and as bigints.
 */
import { describe, expect, test } from "bun:test";
import { addressArg } from "../../ts/core/args.ts";
import { hasCode } from "../helpers/errors.ts";

const refused = (value: unknown, nullable = false) => {
  let error: unknown = null;
  try {
    addressArg("f", "p", value, nullable);
  } catch (caught) {
    error = caught;
  }
  return hasCode(error, "invalid_argument") && /f: p must be/.test(error.message);
};

describe("addressArg alignment", () => {
  test("8-byte aligned addresses are taken, below and above 2^32 and up to 2^53 - 8", () => {
    for (const a of [8, 0x1000, 2 ** 32, 2 ** 32 + 8, 0x7f0012345678, 2 ** 52, 2 ** 53 - 8]) {
      expect(addressArg("f", "p", a)).toBe(a);
      expect(addressArg("f", "p", BigInt(a))).toBe(a);
    }
  });

  test("every misalignment is refused, at every magnitude", () => {
    const bad: number[] = [];
    for (const base of [0, 2 ** 32, 0x7f0012345678, 2 ** 52, 2 ** 53 - 16]) {
      for (let k = 1; k < 8; k++) if (!refused(base + k)) bad.push(base + k);
    }
    expect(bad).toEqual([]);
    expect(refused(2 ** 53 - 1)).toBe(true);
    expect(refused(BigInt(2 ** 53 - 1))).toBe(true);
    expect(refused(0x7f0012345679n)).toBe(true);
  });

  test("zero, fractions and values past 2^53 are refused; nullable takes 0, null and undefined", () => {
    expect(refused(0)).toBe(true);
    expect(refused(8.5)).toBe(true);
    expect(refused(2 ** 53)).toBe(true);
    expect(refused(2n ** 53n)).toBe(true);
    expect(addressArg("f", "p", 0, true)).toBe(0);
    expect(addressArg("f", "p", null, true)).toBe(0);
    expect(addressArg("f", "p", undefined, true)).toBe(0);
    expect(refused(12, true)).toBe(true);
  });
});
