/**
 * Typed arrays handed to native code by address are made over an
 * ArrayBuffer of their own (ts/core/ffi/native_arrays.ts): a small typed
 * array made with `new Float64Array(n)` keeps its bytes inline in JSC's
 * heap, and JSC moves them out to a new ArrayBuffer when asked for one, so
 * an address a native call writes through can go stale under it.
 */
import { describe, expect, test } from "bun:test";
import { ptr } from "bun:ffi";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { nativeArray, nativeArrayOf } from "../../ts/core/ffi/native_arrays.ts";

const tsRoot = join(import.meta.dir, "../../ts");

/** The modules that pass typed arrays to native calls by address. */
const handingOut = ["native", "adbc", "device", "python", "cli/raw_driver.ts", "arrow/async_producer.ts", "arrow/array_plan.ts"];

function modules(path: string): string[] {
  const full = join(tsRoot, path);
  if (!statSync(full).isDirectory()) return [full];
  return readdirSync(full).flatMap((name) => modules(join(path, name)));
}

/** Each `new XArray(...)` of `source` that makes its own (inline) storage:
 * a length or a list, not a buffer, a view of native memory, a copy of
 * one, or no bytes at all. */
export function inlineTypedArrays(source: string): string[] {
  const found: string[] = [];
  source.split("\n").forEach((line, i) => {
    for (const match of line.matchAll(/new (?:Big)?(?:Int|Uint|Float)(?:8|16|32|64)(?:Clamped)?Array\(([^)]*\)?)/g)) {
      const argument = match[1]!;
      if (/\.buffer\b|toArrayBuffer|^buffer\b|^bytes\b|^memory\b|^empty\b|^0\)$/.test(argument.trim())) continue;
      found.push(`${i + 1}: ${line.trim()}`);
    }
  });
  return found;
}

describe("typed arrays handed to native code", () => {
  test("a small typed array's bytes move when its buffer is asked for; a nativeArray's never do", () => {
    const inline = new Float64Array(4);
    const before = ptr(inline);
    void inline.buffer;
    expect(ptr(inline)).not.toBe(before);
    const own = nativeArray(Float64Array, 4);
    const at = ptr(own);
    void own.buffer;
    void own.subarray(1);
    expect(ptr(own)).toBe(at);
    expect([...nativeArrayOf(BigUint64Array, [1n, 2n])]).toEqual([1n, 2n]);
  });

  test("the modules that pass typed arrays to native code make them with nativeArray", () => {
    const problems: Record<string, string[]> = {};
    for (const path of handingOut.flatMap(modules).filter((file) => file.endsWith(".ts"))) {
      const found = inlineTypedArrays(readFileSync(path, "utf8"));
      if (found.length > 0) problems[relative(tsRoot, path)] = found;
    }
    expect(problems).toEqual({});
  });

  test("the check finds a planted inline array and lets buffers and native views pass", () => {
    expect(inlineTypedArrays("const words = new Float64Array(4);\nconst ids = new BigUint64Array(list.map(BigInt));")).toEqual([
      "1: const words = new Float64Array(4);",
      "2: const ids = new BigUint64Array(list.map(BigInt));",
    ]);
    expect(inlineTypedArrays("const a = new Uint8Array(toArrayBuffer(p, 0, 4));\nconst b = new Int32Array(bytes.buffer, 0, 2);\nconst c = nativeArray(Float64Array, 4);")).toEqual([]);
  });
});
