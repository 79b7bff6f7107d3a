/**
 * callBlocking: a synchronous native call that waits for a thread pulling
 * a JS-produced stream would deadlock (JS cannot answer until the call
 * returns). Inside callBlocking that get_next fails at once with EDEADLK
 * and the call's failure becomes a WrongThreadError. Deterministic
 * counterpart of the DuckDB case (test/peers/duckdb.test.ts): a C fixture that
 * starts a puller thread and joins it.
 */
import { describe, expect, test } from "bun:test";
import { FFIType, dlopen } from "bun:ffi";
import { tableFromArrays } from "apache-arrow";
import { exportStream, importTable } from "../../ts/index.ts";
import { WrongThreadError } from "../../ts/core/errors.ts";
import { callBlocking, ImportedStream } from "../../ts/raw.ts";
import { nonZeroCounters } from "../helpers/leaks.ts";
import { fixturePath } from "../helpers/fixtures.ts";
import { collectUntil } from "../helpers/gc.ts";
import { withCode } from "../helpers/errors.ts";

const fx = dlopen(fixturePath("duckdb_thread"), {
  duckq_pull_on_thread: { args: [FFIType.ptr], returns: FFIType.i32 },
}).symbols;

const EDEADLK = 35;

describe("callBlocking", () => {
  test("a get_next from another thread during the call is refused with EDEADLK; the failure is a WrongThreadError", async () => {
    const table = tableFromArrays({ n: Int32Array.from([1, 2, 3]) });
    const stream = exportStream(table, { as: "stream" });
    let errno = 0;
    let caught: unknown = null;
    try {
      callBlocking(() => {
        errno = fx.duckq_pull_on_thread(stream.stream);
        if (errno !== 0) throw new Error(`get_next failed with errno ${errno}`);
      });
    } catch (error) {
      caught = error;
    }
    expect(errno).toBe(EDEADLK);
    expect(caught).toEqual(withCode("wrong_thread"));
    expect((caught as WrongThreadError).message).toContain("native thread");
    expect(String((caught as WrongThreadError).cause)).toContain(`errno ${EDEADLK}`);
    // The refusal failed that call only: the stream still delivers everything.
    expect(importTable(ImportedStream.fromArrayStream(stream.stream)).getChild("n")!.toArray()).toEqual(Int32Array.from([1, 2, 3]));
    stream.release();
    expect(await collectUntil(() => Object.keys(nonZeroCounters()).length === 0)).toBe(true);
  });

  test("returns the call's value, and errors with no refusal pass through unchanged", () => {
    expect(callBlocking(() => 42)).toBe(42);
    const plain = new RangeError("not ours");
    expect(() => callBlocking(() => { throw plain; })).toThrow(plain);
    // Nested and sequential calls leave get_next from other threads answered again.
    expect(callBlocking(() => callBlocking(() => "inner"))).toBe("inner");
  });
});
