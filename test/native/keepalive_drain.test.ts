/**
 * The keepalive queue is drained through a scratch array whose address the
 * native side writes to. That address must stay valid across garbage
 * collections: a small typed array's storage can move (shared
 * notes/bun-ffi.md), and then released ids were written to stale memory and
 * their exports stayed retained forever (found by the Arrow C++ reference
 * tests, after a few hundred exports and a few GCs).
 */
import { expect, test } from "bun:test";
import { makeVector } from "apache-arrow";
import { consumeNatively } from "../helpers/native_consumer.ts";
import { counters } from "../helpers/leaks.ts";
import { exportArray } from "../../ts/index.ts";

test("released exports are dropped from the keepalive registry across many GCs", () => {
  for (let round = 0; round < 8; round++) {
    for (let i = 0; i < 40; i++) {
      using exported = exportArray(makeVector(Int32Array.from({ length: 16 }, (_, j) => i + j)));
      consumeNatively(exported.schema, exported.array); // moves, validates, releases, drains
    }
    expect(counters().js_retained_exports).toBe(0);
    Bun.gc(true);
  }
});
