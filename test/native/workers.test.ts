// The library on several JS threads at once: each thread's wake-ups and
// queued work reach that thread (zig/core/js_context.zig), and streams cross
// threads by address.
import { afterEach, describe, expect, test } from "bun:test";
import { ptr } from "bun:ffi";
import { tableFromArrays } from "apache-arrow";
import { StreamError, exportArray, exportStream, importRecordBatch, importTable } from "../../ts/index.ts";
import { UnsupportedError } from "../../ts/core/errors.ts";
import { ImportedStream } from "../../ts/raw.ts";
import { drainReleased, retainedCount } from "../../ts/native/keepalive.ts";
import { streamPeer } from "../helpers/fixtures.ts";
import { liveStreamSources } from "../helpers/js_live.ts";
import { collectUntil } from "../helpers/gc.ts";
import { withCode } from "../helpers/errors.ts";
import { expectSettled } from "../helpers/settled.ts";

// What a test's Workers release reaches this thread after they end: each
// test waits for all of it (bounded collections), so the next starts clean.
afterEach(async () => {
  await expectSettled({ liveStreamSources }, { rounds: 1000 });
});

const fixtures = new URL("../fixtures/workers/", import.meta.url);

function ask<T>(worker: Worker, message: unknown): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    worker.onmessage = (event) => resolve(event.data as T);
    worker.onerror = (event) => reject(new Error(event.message));
    worker.postMessage(message);
  });
}

function ended(worker: Worker): Promise<void> {
  return new Promise<void>((resolve) => {
    worker.addEventListener("close", () => resolve());
    worker.terminate();
  });
}

function table(rows: number) {
  return tableFromArrays({ id: Int32Array.from({ length: rows }, (_, i) => i) });
}

const sumTo = (rows: number) => (rows * (rows - 1)) / 2;

describe("the library in Workers", () => {
  test("a Worker loads it and round-trips its own streams, sync and async", async () => {
    const worker = new Worker(new URL("load.ts", fixtures));
    const got = await ask<{ syncRows: number; asyncRows: number; sum: number }>(worker, { rows: 1000 });
    expect(got).toEqual({ syncRows: 1000, asyncRows: 1000, sum: sumTo(1000) });
    await ended(worker);
  });

  test("the main thread's async reads work once a Worker loaded the library and after it was terminated", async () => {
    const worker = new Worker(new URL("load.ts", fixtures));
    await ask(worker, { rows: 10 });
    {
      using out = exportStream(table(100));
      const back = await importTable(ImportedStream.fromDeviceArrayStream(out.stream), { async: true });
      expect(back.numRows).toBe(100);
    }
    await ended(worker);
    using out = exportStream(table(50));
    const back = await importTable(ImportedStream.fromDeviceArrayStream(out.stream), { async: true });
    expect(back.numRows).toBe(50);
  });

  test("a Worker reads a stream the main thread exported (sync and async); its end releases what it held", async () => {
    drainReleased();
    const before = retainedCount();
    const worker = new Worker(new URL("read.ts", fixtures));
    for (const async of [false, true]) {
      using out = exportStream(table(300));
      const got = await ask<{ rows: number; sum: number }>(worker, { address: out.stream as unknown as number, async });
      expect(got).toEqual({ rows: 300, sum: sumTo(300) });
      expect(out.streamReleased).toBe(true);
    }
    // The Worker's two tables still view the main thread's buffers: one
    // retained export each.
    expect(retainedCount() - before).toBe(2);
    await ended(worker);
    expect(await collectUntil(() => retainedCount() === before, 1000)).toBe(true);
  });

  test("a Worker's export is refused on another JS thread with an UnsupportedError that says why; the Worker sees it released", async () => {
    const worker = new Worker(new URL("export.ts", fixtures));
    const { address } = await ask<{ address: number }>(worker, { rows: 20 });
    expect(() => ImportedStream.fromDeviceArrayStream(address as never)).toThrow(withCode("unsupported"));
    const arrays = await ask<{ schema: number; array: number }>(worker, { rows: 20, as: "array" });
    let caught: unknown;
    try {
      importRecordBatch(arrays.schema as never, arrays.array as never);
    } catch (error) {
      caught = error;
    }
    expect(caught).toEqual(withCode("unsupported"));
    expect((caught as Error).message).toContain("exported by this library on another JS thread, a Worker");
    expect((caught as Error).message).toContain("freed when the Worker ends");
    expect(await ask(worker, { query: true })).toEqual({ streamReleased: true, arrayReleased: true });
    expect(await ask(worker, { dispose: true })).toEqual({ disposed: true });
    await ended(worker);
  });

  test("get_next on a stream whose producing Worker ended fails with a StreamError that says so, not a hang", async () => {
    const worker = new Worker(new URL("export.ts", fixtures));
    const { address } = await ask<{ address: number }>(worker, { rows: 10 });
    // A C pass-through in between (as a C library that wraps streams
    // would be): the library cannot tell the stream's origin, so it is
    // imported, and only the producer can refuse.
    streamPeer.sp_reset_counts();
    streamPeer.sp_intercept_stream(1, address as never);
    using stream = ImportedStream.fromDeviceArrayStream(address as never);
    await ended(worker);
    let caught: unknown;
    try {
      importTable(stream);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(StreamError);
    expect((caught as Error).message).toContain("the JS thread (Worker or main thread) that produces this stream has ended");
    stream[Symbol.dispose]();
    expect(streamPeer.sp_stream_releases()).toBe(1n); // the C wrapper's release ran, once
    streamPeer.sp_reset_counts();
  });

  test("a stream a Worker imported and still held when it was terminated is released to the main thread", async () => {
    drainReleased();
    const before = liveStreamSources();
    const worker = new Worker(new URL("hold.ts", fixtures));
    using out = exportStream(table(3));
    expect(await ask(worker, { address: out.stream as unknown as number })).toEqual({ held: 1 });
    expect(out.streamReleased).toBe(true);
    expect(liveStreamSources()).toBe(before + 1);
    await ended(worker);
    expect(await collectUntil(() => liveStreamSources() === before, 1000)).toBe(true);
  });

  test("an array the main thread exported, imported on a Worker and disposed there, is released to the main thread at once", async () => {
    drainReleased();
    const before = retainedCount();
    const worker = new Worker(new URL("import_array.ts", fixtures));
    using out = exportArray(table(64).batches[0]);
    expect(retainedCount()).toBe(before + 1);
    const got = await ask<{ rows: number; sum: number }>(worker, { schema: out.schema as unknown as number, array: out.array as unknown as number });
    expect(got).toEqual({ rows: 64, sum: sumTo(64) });
    expect(out.arrayReleased).toBe(true);
    // Released on the Worker's thread, queued for this one, which drains it
    // when woken: no collection needed.
    // Event-loop turns only, as many as a loaded machine needs (bounded).
    for (let i = 0; i < 2000 && retainedCount() > before; i++) await Bun.sleep(1);
    expect(retainedCount()).toBe(before);
    await ended(worker);
  });

  test("a stream released while its pull is in flight, on a Worker then terminated, is released once", async () => {
    streamPeer.sp_reset_counts();
    const slot = new BigUint64Array(5); // an ArrowArrayStream
    streamPeer.sp_int_stream(0, 3, 4, -1, null, 1, 1, slot);
    streamPeer.sp_intercept_stream(0, slot);
    streamPeer.sp_set_delay_us(200_000); // get_next sleeps: the Worker ends during it
    try {
      const worker = new Worker(new URL("release_pulling.ts", fixtures));
      expect(await ask(worker, { address: Number(ptr(slot)) })).toEqual({ released: true });
      await ended(worker);
      expect(await collectUntil(() => streamPeer.sp_stream_releases() >= 1n, 1000)).toBe(true);
      await collectUntil(() => false, 20); // room for a second release, were there one
      expect(streamPeer.sp_stream_releases()).toBe(1n);
    } finally {
      streamPeer.sp_set_delay_us(0);
    }
  });

  test("8 Workers at once, each round-tripping and reading the main thread's streams", async () => {
    const loaders = Array.from({ length: 8 }, () => new Worker(new URL("load.ts", fixtures)));
    const readers = Array.from({ length: 8 }, () => new Worker(new URL("read.ts", fixtures)));
    const exports = readers.map((_, i) => exportStream(table(100 + i)));
    const [loaded, read] = await Promise.all([
      Promise.all(loaders.map((worker, i) => ask<{ asyncRows: number }>(worker, { rows: 10 + i }))),
      Promise.all(readers.map((worker, i) => ask<{ rows: number }>(worker, { address: exports[i].stream as unknown as number, async: i % 2 === 0 }))),
    ]);
    expect(loaded.map((r) => r.asyncRows)).toEqual(Array.from({ length: 8 }, (_, i) => 10 + i));
    expect(read.map((r) => r.rows)).toEqual(Array.from({ length: 8 }, (_, i) => 100 + i));
    for (const out of exports) out[Symbol.dispose]();
    await Promise.all([...loaders, ...readers].map(ended));
  });
});
