/**
 * A stream produced in JS (its callbacks are bun:ffi JSCallbacks, which
 * run only on their own JS thread) read with `{ async: true }`: its
 * get_next cannot be called on the stream's worker thread, so the read is
 * refused at once with UnsupportedError (docs/protocol.md, "Producers
 * written in JS"), the stream released once; read without `async` it
 * works, on the JS thread.
 */
import { describe, expect, test } from "bun:test";
import { JSCallback, ptr, toArrayBuffer } from "bun:ffi";
import { importTable, recordBatches } from "../../ts/index.ts";
import { UnsupportedError } from "../../ts/core/errors.ts";
import { withCode } from "../helpers/errors.ts";

/** A stream of `batches` Int32 batches of [1, 2, 3], built and answered
 * in JS; counts its releases. */
function jsStream(batches: number) {
  const counts = { streamReleases: 0, schemaReleases: 0, arrayReleases: 0, getNextCalls: 0 };
  const keep: unknown[] = [];
  const words = (address: number, n: number) => new BigUint64Array(toArrayBuffer(address as never, 0, n * 8));
  const format = new Uint8Array([0x2b, 0x73, 0]); // "+s"
  const childFormat = new Uint8Array([0x69, 0]); // "i"
  const name = new Uint8Array([0x78, 0]); // "x"
  const values = Int32Array.of(1, 2, 3);
  void [format.buffer, childFormat.buffer, name.buffer, values.buffer];
  const releaser = (offset: number, count: () => void) => new JSCallback((address: number) => {
    count();
    words(address, offset / 8 + 1)[offset / 8] = 0n;
  }, { args: ["ptr"], returns: "void" });
  const releaseSchema = releaser(56, () => counts.schemaReleases++);
  const releaseArray = releaser(64, () => counts.arrayReleases++);
  const releaseStream = releaser(24, () => counts.streamReleases++);
  // The child schema and array: static, never released on their own.
  const childSchema = new BigUint64Array(9);
  childSchema[0] = BigInt(ptr(childFormat));
  childSchema[1] = BigInt(ptr(name));
  childSchema[7] = BigInt(releaseSchema.ptr!);
  const childSchemas = BigUint64Array.of(BigInt(ptr(childSchema)));
  const getSchema = new JSCallback((_stream: number, out: number) => {
    const schema = words(out, 9);
    schema.fill(0n);
    schema[0] = BigInt(ptr(format));
    schema[4] = 1n;
    schema[5] = BigInt(ptr(childSchemas));
    schema[7] = BigInt(releaseSchema.ptr!);
    childSchema[7] = BigInt(releaseSchema.ptr!);
    return 0;
  }, { args: ["ptr", "ptr"], returns: "i32" });
  let left = batches;
  const getNext = new JSCallback((_stream: number, out: number) => {
    counts.getNextCalls++;
    const array = words(out, 10);
    array.fill(0n);
    if (left === 0) return 0; // released: the end
    left--;
    const buffers = BigUint64Array.of(0n, BigInt(ptr(values)));
    const child = new BigUint64Array(10);
    child[0] = 3n;
    child[3] = 2n;
    child[5] = BigInt(ptr(buffers));
    child[8] = BigInt(releaseArray.ptr!);
    const children = BigUint64Array.of(BigInt(ptr(child)));
    const parentBuffers = BigUint64Array.of(0n);
    keep.push(buffers, child, children, parentBuffers);
    array[0] = 3n;
    array[3] = 1n;
    array[4] = 1n;
    array[5] = BigInt(ptr(parentBuffers));
    array[6] = BigInt(ptr(children));
    array[8] = BigInt(releaseArray.ptr!);
    return 0;
  }, { args: ["ptr", "ptr"], returns: "i32" });
  const getLastError = new JSCallback(() => null, { args: ["ptr"], returns: "ptr" });
  const stream = new BigUint64Array(5);
  stream[0] = BigInt(getSchema.ptr!);
  stream[1] = BigInt(getNext.ptr!);
  stream[2] = BigInt(getLastError.ptr!);
  stream[3] = BigInt(releaseStream.ptr!);
  keep.push(stream, childSchema, childSchemas, getSchema, getNext, getLastError, releaseSchema, releaseArray, releaseStream);
  return { address: ptr(stream), counts, keep };
}

/** `promise`'s outcome, or "pending" when it has not settled within 5 s. */
async function settled(promise: Promise<unknown>): Promise<unknown> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise((resolve) => { timer = setTimeout(() => resolve("pending"), 5000); });
  try {
    return await Promise.race([promise.then(() => "resolved", (error: unknown) => error), late]);
  } finally {
    clearTimeout(timer);
  }
}

describe("a JS-produced stream (JSCallbacks)", () => {
  test("is read on the JS thread without async: every batch, every struct released once", () => {
    const s = jsStream(2);
    const table = importTable(s.address as never, { as: "stream" });
    expect(table.numRows).toBe(6);
    expect([...table.getChild("x")!]).toEqual([1, 2, 3, 1, 2, 3]);
    expect(s.counts.streamReleases).toBe(1);
  });

  test("importTable with { async: true } is refused at once with UnsupportedError, the stream released once", async () => {
    const s = jsStream(2);
    const outcome = await settled(importTable(s.address as never, { as: "stream", async: true }));
    expect(outcome).toEqual(withCode("unsupported"));
    expect((outcome as Error).message).toContain("get_next is code made at run time (a bun:ffi JSCallback)");
    expect(s.counts).toMatchObject({ streamReleases: 1, getNextCalls: 0 });
  });

  test("recordBatches with { async: true } is refused the same way", async () => {
    const s = jsStream(1);
    const outcome = await settled((async () => {
      for await (const batch of recordBatches(s.address as never, { as: "stream", async: true })) void batch;
    })());
    expect(outcome).toEqual(withCode("unsupported"));
    expect(s.counts).toMatchObject({ streamReleases: 1, getNextCalls: 0 });
  });
});
