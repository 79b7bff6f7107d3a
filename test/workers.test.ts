// The library on several JS threads at once: each thread's wake-ups and
// queued work reach that thread (zig/js_context.zig), and streams cross
// threads by address.
import { describe, expect, test } from "bun:test";
import { tableFromArrays } from "apache-arrow";
import { ImportedStream, StreamError, exportStream, readTable, readTableAsync } from "../ts/index.ts";
import { drainReleased, retainedCount } from "../ts/lifetime/keepalive.ts";

const fixtures = new URL("./fixtures/workers/", import.meta.url);

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
      const back = await readTableAsync(ImportedStream.fromDeviceArrayStream(out.stream));
      expect(back.numRows).toBe(100);
    }
    await ended(worker);
    using out = exportStream(table(50));
    const back = await readTableAsync(ImportedStream.fromDeviceArrayStream(out.stream));
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
    expect(retainedCount()).toBeGreaterThan(before); // the Worker's tables still view the main thread's buffers
    await ended(worker);
    for (let i = 0; i < 100 && retainedCount() > before; i++) {
      Bun.gc(true);
      await new Promise((resolve) => setTimeout(resolve, 5));
      drainReleased();
    }
    expect(retainedCount()).toBe(before);
  });

  test("the main thread reads a stream a Worker exported; the Worker disposes its handle after", async () => {
    const worker = new Worker(new URL("export.ts", fixtures));
    const { address } = await ask<{ address: number }>(worker, { rows: 200 });
    const back = await readTableAsync(ImportedStream.fromDeviceArrayStream(address as never));
    expect(back.numRows).toBe(200);
    expect(await ask(worker, { dispose: true })).toEqual({ disposed: true });
    await ended(worker);
  });

  test("a stream whose producing Worker ended fails with a StreamError that says so, not a hang", async () => {
    const worker = new Worker(new URL("export.ts", fixtures));
    const { address } = await ask<{ address: number }>(worker, { rows: 10 });
    const stream = ImportedStream.fromDeviceArrayStream(address as never);
    await ended(worker);
    let caught: unknown;
    try {
      readTable(stream);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(StreamError);
    expect((caught as Error).message).toContain("has ended");
  });

  test("8 Workers at once, each round-tripping and reading the main thread's streams", async () => {
    const loaders = Array.from({ length: 8 }, () => new Worker(new URL("load.ts", fixtures)));
    const readers = Array.from({ length: 8 }, () => new Worker(new URL("read.ts", fixtures)));
    const exports = readers.map((_, i) => exportStream(table(100 + i)));
    const results = await Promise.all([
      ...loaders.map((worker, i) => ask<{ asyncRows: number }>(worker, { rows: 10 + i })),
      ...readers.map((worker, i) => ask<{ rows: number }>(worker, { address: exports[i].stream as unknown as number, async: i % 2 === 0 })),
    ]);
    expect(results.slice(0, 8).map((r) => r.asyncRows)).toEqual(Array.from({ length: 8 }, (_, i) => 10 + i));
    expect(results.slice(8).map((r) => r.rows)).toEqual(Array.from({ length: 8 }, (_, i) => 100 + i));
    for (const out of exports) out[Symbol.dispose]();
    await Promise.all([...loaders, ...readers].map(ended));
  });
});
