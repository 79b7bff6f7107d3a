/**
 * The vertical slice: a non-null int32 column and a nullable float64
 * column leave as ArrowDeviceArray on the CPU device, are read in place by
 * native code (same addresses, same bytes), and are released exactly once,
 * with the JS buffers alive until then even when JS dropped them.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { ptr, read } from "bun:ffi";
import { Float64, makeVector, vectorFromArray, type Vector } from "apache-arrow";
import { ArrowDeviceArrayLayout, DeviceType } from "../../ts/core/abi/layout.ts";
import { consumeNatively, fnv1a32 } from "../helpers/native_consumer.ts";
import { counters } from "../helpers/leaks.ts";
import { exportArray } from "../../ts/index.ts";
import { peer } from "../helpers/fixtures.ts";
import { collectUntil } from "../helpers/gc.ts";
import { expectSettled } from "../helpers/settled.ts";

const D = ArrowDeviceArrayLayout.fields;

function int32Column(): Vector {
  return makeVector(Int32Array.from({ length: 1000 }, (_, i) => i * 3 - 7));
}

function float64Column(): Vector {
  return vectorFromArray(Array.from({ length: 1000 }, (_, i) => (i % 4 === 1 ? null : i / 8)), new Float64());
}

function bytesOf(view: ArrayBufferView, byteLength = view.byteLength): Uint8Array {
  return new Uint8Array(view.buffer, view.byteOffset, byteLength);
}

/** Exports a float64 column, lets the C peer take (move) it, and forgets
 * every JS reference to it except a WeakRef to its memory. */
function exportAndHandOver() {
  const column = float64Column();
  const values = column.data[0].values as Float64Array;
  let expectedSum = 0;
  for (let i = 0; i < column.length; i++) expectedSum += column.get(i) ?? 0;
  const exported = exportArray(column);
  peer.peer_intercept_array(exported.array);
  const held = peer.peer_take(exported.schema, exported.array)!;
  exported.release();
  return {
    held,
    weak: new WeakRef(values.buffer),
    expectedAddress: ptr(values),
    // Checksum a copy: a view of the original held by the JIT could keep it
    // alive and hide a broken keepalive.
    expectedChecksum: fnv1a32(new Uint8Array(values.slice().buffer)),
    expectedSum,
  };
}

afterEach(async () => {
  peer.peer_reset_counts();
  await expectSettled();
});

describe("CPU device array export", () => {
  test("device fields: CPU, device_id -1, sync_event NULL, reserved zeroed", () => {
    using exported = exportArray(int32Column());
    expect(read.i32(exported.array, D.device_type)).toBe(DeviceType.CPU);
    expect(read.i64(exported.array, D.device_id)).toBe(-1n);
    expect(read.ptr(exported.array, D.sync_event)).toBe(0);
    for (let i = 0; i < 3; i++) expect(read.i64(exported.array, D.reserved + 8 * i)).toBe(0n);
  });

  test("int32: native code sees the JS buffer itself and the same bytes", () => {
    const column = int32Column();
    const values = column.data[0].values as Int32Array;
    using exported = exportArray(column);
    const report = consumeNatively(exported.schema, exported.array);
    expect(report).toHaveLength(2);
    expect(report[0].address).toBe(0); // no validity buffer: no nulls
    expect(report[1].address).toBe(ptr(values));
    expect(report[1].size).toBe(4000);
    expect(report[1].checksum).toBe(fnv1a32(bytesOf(values)));
    expect(exported.arrayReleased && exported.schemaReleased).toBe(true);
  });

  test("nullable float64: validity and values are the JS memory", () => {
    const column = float64Column();
    const data = column.data[0];
    using exported = exportArray(column);
    const report = consumeNatively(exported.schema, exported.array);
    expect(report[0].address).toBe(ptr(data.nullBitmap!));
    expect(report[0].size).toBe(125);
    expect(report[0].checksum).toBe(fnv1a32(bytesOf(data.nullBitmap!, 125)));
    expect(report[1].address).toBe(ptr(data.values as Float64Array));
    expect(report[1].checksum).toBe(fnv1a32(bytesOf(data.values as Float64Array)));
  });

  test("release runs exactly once, from the consumer", () => {
    using exported = exportArray(float64Column());
    peer.peer_intercept_array(exported.array);
    peer.peer_intercept_schema(exported.schema);
    consumeNatively(exported.schema, exported.array);
    expect(peer.peer_intercepted_array_releases()).toBe(1n);
    expect(peer.peer_intercepted_schema_releases()).toBe(1n);
    exported.release(); // the consumer moved both: nothing left to release
    expect(peer.peer_intercepted_array_releases()).toBe(1n);
  });

  test("JS buffers stay alive until C releases, though JS dropped them and GC ran", async () => {
    // Everything JS-side lives in another function's frame only, so that
    // conservative stack scanning cannot keep it alive.
    const { held, weak, expectedAddress, expectedChecksum, expectedSum } = exportAndHandOver();
    for (let i = 0; i < 40; i++) {
      Bun.gc(true);
      await Bun.sleep(1);
      new Float64Array(1000).fill(-1); // garbage that could reuse freed memory
    }
    expect(counters().js_retained_exports).toBe(1);
    expect(weak.deref()).toBeDefined(); // kept alive for C, not collected
    expect(peer.peer_intercepted_array_releases()).toBe(0n);
    expect(peer.peer_buffer_address(held, -1, 1)).toBe(expectedAddress);
    expect(peer.peer_checksum_primitive(held, -1, 1)).toBe(expectedChecksum);
    expect(peer.peer_sum_primitive(held, -1)).toBe(expectedSum);
    peer.peer_release_held_on_thread(held); // another thread releases
    expect(peer.peer_intercepted_array_releases()).toBe(1n);
    expect(await collectUntil(() => counters().js_retained_exports === 0)).toBe(true);
    // Once C released, nothing holds the JS memory any more.
    expect(await collectUntil(() => weak.deref() === undefined)).toBe(true);
  });

  test("a release on another thread, later, wakes JS to drop its references", async () => {
    {
      const exported = exportArray(int32Column());
      peer.peer_intercept_array(exported.array);
      const held = peer.peer_take(exported.schema, exported.array)!;
      exported.release();
      expect(peer.peer_release_held_later(held, 20)).toBe(0);
    }
    expect(counters().js_retained_exports).toBe(1);
    // No API call drains here: only the library's threadsafe wake-up can.
    // Counted from here (retainedCount is the process's count, which an
    // earlier file's leftover would offset): this test's one id goes.
    const { retainedCount } = await import("../../ts/native/keepalive.ts");
    const retainedWithOurs = retainedCount();
    const oursDropped = () => retainedCount() <= retainedWithOurs - 1;
    for (let i = 0; i < 2000 && !oursDropped(); i++) await Bun.sleep(5); // bounded, for a loaded machine
    peer.peer_wait_background();
    expect(oursDropped()).toBe(true);
    expect(peer.peer_intercepted_array_releases()).toBe(1n);
  });

  test("an export the consumer never took is released by the handle", () => {
    const exported = exportArray(int32Column());
    peer.peer_intercept_array(exported.array);
    expect(counters().live_array_exports).toBe(1);
    exported.release();
    exported.release(); // idempotent
    expect(peer.peer_intercepted_array_releases()).toBe(1n);
    expect(counters().live_array_exports).toBe(0);
    expect(() => exported.schema).toThrow("released");
  });
});
