/**
 * This library as the consumer of an async device stream: a C producer
 * (test/fixtures/async_peer.c, on its own thread) pushes into the native
 * handler; JS reads raw views. Every test ends with every counter at zero,
 * no generated array alive, and no wake handler registered.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { type Pointer } from "bun:ffi";
import { RecordBatch, Schema, Table, tableFromArrays } from "apache-arrow";
import { DeviceType, exportArray, exportSchema } from "../../ts/index.ts";
import { AsyncRecordBatchStream } from "../../ts/device.ts";
import { AsyncStreamError, CallbackError, ImportedArray } from "../../ts/raw.ts";
import { AsyncStreamConsumer, type AsyncArray } from "../../ts/raw.ts";
import { registeredWakes } from "../helpers/js_live.ts";
import { tasksStillQueued } from "../../ts/native/async_consumer.ts";
import { AsyncConsumerWord, asyncConsumerWords } from "../../ts/core/abi/layout.ts";
import { asyncPeer, CSource, freePeers } from "../helpers/async_peer.ts";
import { goldFiles, readableGoldFiles, readGold, unreadableByApacheArrow } from "../helpers/gold_batches.ts";
import { basename } from "node:path";
import { collectUntil } from "../helpers/gc.ts";
import { addresses, fingerprint, withoutAddresses, type Fingerprint } from "../helpers/fingerprint.ts";
import { jsonBatchCount, jsonOnlyCases, produceJsonBatch } from "../helpers/gold_json_arrays.ts";
import { disposeProduced, producerBuffer, producerClean } from "../helpers/producer.ts";
import { compareBatches, unsharedBuffers } from "../helpers/arrow_compare.ts";
import { Rng } from "../fuzz/generate.ts";
import { withCode } from "../helpers/errors.ts";
import { expectSettled } from "../helpers/settled.ts";

const EIO = 5;
const EPROTO = 71;

afterEach(async () => {
  freePeers(); // what a failed test left running
  await expectSettled();
  expect(asyncPeer.peer_async_generated_live()).toBe(0n);
  expect(registeredWakes()).toBe(0);
});

/** Reads the whole stream; disposes each batch after `inspect`. */
async function readAll(stream: AsyncStreamConsumer, inspect: (batch: AsyncArray) => void = () => {}): Promise<number> {
  let n = 0;
  for await (const batch of stream.arrays()) {
    inspect(batch);
    batch.array.dispose();
    n++;
  }
  return n;
}

/** Joins the source's thread (its handler was released: it is finishing
 * on its own), checks it released exactly once, and frees it. */
function finishSource(source: CSource): void {
  source.join();
  expect(source.stat("done")).toBe(1);
  source.free();
}

function expectEveryTaskExtractedOnce(source: CSource): void {
  expect(source.stat("extracted")).toBe(source.stat("sent"));
  expect(source.stat("extract_twice")).toBe(0);
  expect(source.stat("request_after_release")).toBe(0);
}

/** The rows of a generated struct<v: int32> batch. */
function values(batch: AsyncArray): number[] {
  return Array.from(batch.array.root.child(0).buffer(1) as Int32Array).slice(0, batch.array.root.length);
}

describe("round trips over the gold files (C producer thread -> JS)", () => {
  for (const file of readableGoldFiles()) {
    test(file, async () => {
      const { schema, batches } = readGold(file);
      // What a synchronous export + import of each batch (with the stream's
      // schema) shows: the same tree, values, and JS buffers (addresses).
      const expected = batches.map((batch) => {
        using announced = exportSchema(schema);
        using exported = exportArray(batch);
        using imported = ImportedArray.fromDeviceArray(announced.schema, exported.array);
        return fingerprint(imported.root);
      });
      const source = new CSource({ thread_per_callback: 1, metadata: 1 });
      {
        const announced = exportSchema(schema);
        source.add(announced.schema, null);
        announced.release();
      }
      for (const batch of batches) {
        const exported = exportArray(batch);
        source.add(null, exported.array);
        exported.release();
      }
      const stream = new AsyncStreamConsumer({ queueDepth: 3, validation: "full" });
      source.start(stream.handler);
      const info = await stream.ready();
      expect(info.deviceType).toBe(DeviceType.CPU);
      expect(info.producerMetadata).toEqual(new Map([["source", "async_peer"]]));
      const got: object[] = [];
      await readAll(stream, ({ array, metadata, index }) => {
        expect(metadata).toEqual(new Map([["index", String(index)]]));
        got.push(fingerprint(array.root));
      });
      await stream.closed;
      expect(got).toEqual(expected);
      expectEveryTaskExtractedOnce(source);
      expect(source.stat("max_in_flight")).toBeLessThanOrEqual(3);
      expect(source.stat("callback_threads")).toBe(Math.min(8, batches.length + 3)); // schema, tasks, end, release: each on its own thread
      finishSource(source);
    });
  }
});

/** A source holding exports of `batches` (announcing `schema`). */
function sourceOf(schema: Schema, batches: RecordBatch[], options: ConstructorParameters<typeof CSource>[0] = {}): CSource {
  const source = new CSource(options);
  const announced = exportSchema(schema);
  source.add(announced.schema, null);
  announced.release();
  for (const batch of batches) {
    const exported = exportArray(batch);
    source.add(null, exported.array);
    exported.release();
  }
  return source;
}

describe("an async stream's RecordBatches", () => {
  test("share the stream's one Schema, dictionary types included, so that they make one Table", async () => {
    const table = tableFromArrays({ s: ["a", "b", "a"], n: Int32Array.from([1, 2, 3]) })
      .concat(tableFromArrays({ s: ["b", "c"], n: Int32Array.from([4, 5]) }), tableFromArrays({ s: ["c"], n: Int32Array.from([6]) }));
    const source = sourceOf(table.schema, table.batches);
    const stream = new AsyncRecordBatchStream({ queueDepth: 2 });
    source.start(stream.handler);
    const batches: RecordBatch[] = [];
    for await (const batch of stream) batches.push(batch);
    await stream.closed;
    expect(batches.length).toBe(3);
    expect(batches.every((batch) => batch.schema === batches[0].schema)).toBe(true);
    const joined = new Table(batches);
    expect(joined.getChild("s")!.toArray()).toEqual(["a", "b", "a", "b", "c", "c"]);
    expect([...joined.getChild("n")!]).toEqual([1, 2, 3, 4, 5, 6]);
    expectEveryTaskExtractedOnce(source);
    finishSource(source);
  });
});

describe("RecordBatch round trips over the gold files (C producer thread -> apache-arrow)", () => {
  for (const file of readableGoldFiles()) {
    test(file, async () => {
      const { schema, batches } = readGold(file);
      const source = sourceOf(schema, batches, { metadata: 1 });
      const stream = new AsyncRecordBatchStream({ queueDepth: 2 });
      source.start(stream.handler);
      let i = 0;
      for await (const { batch, array, metadata, index } of stream.batches()) {
        expect(index).toBe(i);
        expect(metadata).toEqual(new Map([["index", String(i)]]));
        // Same values, and the very JS buffers that went out.
        expect(compareBatches(batch, batches[i], `batch ${i}`)).toEqual([]);
        expect(unsharedBuffers(batch.data, batches[i].data)).toEqual([]);
        array.dispose();
        // Its memory is released: a read is a typed error, not empty rows.
        expect(() => batch.data.nullBitmap).toThrow("was converted from an ImportedArray that was disposed");
        i++;
      }
      expect(i).toBe(batches.length);
      await stream.closed;
      expectEveryTaskExtractedOnce(source);
      finishSource(source);
    });
  }

  test("for await yields the batches; break cancels", async () => {
    const source = new CSource({ generate: 100, generate_rows: 2 });
    const stream = new AsyncRecordBatchStream({ queueDepth: 4 });
    source.start(stream.handler);
    const rows: number[][] = [];
    for await (const batch of stream) {
      rows.push([...batch.getChildAt(0)!].map(Number));
      if (rows.length === 3) break;
    }
    expect(rows).toEqual([[0, 1], [1000, 1001], [2000, 2001]]);
    expect(source.stat("cancel_calls")).toBe(1);
    expectEveryTaskExtractedOnce(source);
    finishSource(source);
  });

  test("a batch that apache-arrow cannot hold ends the stream with the conversion error", async () => {
    // A producer of plain int32 arrays (not struct batches).
    const { batches } = readGold("1.0.0-littleendian/generated_primitive.stream");
    const column = batches[0].getChildAt(6)!; // int32
    const source = new CSource();
    {
      const exported = exportArray(column);
      source.add(exported.schema, exported.array);
      exported.release();
    }
    const stream = new AsyncRecordBatchStream();
    source.start(stream.handler);
    const failure = await (async () => {
      for await (const _ of stream) { /* never */ }
    })().catch((error) => error);
    expect(failure).toBeInstanceOf(Error);
    expect(String(failure.message)).toContain("struct");
    await stream.closed;
    finishSource(source);
  });
});

/** Buffer addresses per produced node, first four slots (the most any
 * node of these cases has), read before the arrays leave. */
function producedAddresses(nodes: Pointer[]): number[][] {
  return nodes.map((node) => [0, 1, 2, 3].map((i) => producerBuffer(node, i)));
}

/** The producer's buffer addresses in the received tree's preorder. */
function expectedAddresses(print: Fingerprint, perNode: number[][]): number[] {
  const counts: number[] = [];
  const walk = (p: Fingerprint) => {
    counts.push(p.buffers.length);
    p.children.forEach(walk);
    if (p.dictionary) walk(p.dictionary);
  };
  walk(print);
  return counts.flatMap((n, k) => perNode[k].slice(0, n));
}

test("every gold file is covered: apache-arrow reads all but the two rebuilt from their JSON", () => {
  const all = goldFiles();
  expect(all).toHaveLength(33);
  const unreadable = all.filter((file) => unreadableByApacheArrow.has(basename(file)));
  expect(unreadable.map((file) => basename(file, ".stream"))).toEqual([...jsonOnlyCases]);
  for (const file of unreadable) expect(() => readGold(file)).toThrow("Unrecognized type");
});

describe("gold cases apache-arrow cannot read, as raw arrays from their JSON (C producer thread -> JS)", () => {
  for (const name of jsonOnlyCases) {
    test(name, async () => {
      const count = jsonBatchCount(name);
      // The same batches, imported synchronously from another copy.
      const expected = Array.from({ length: count }, (_, b) => {
        const copy = produceJsonBatch(name, b);
        try {
          using imported = ImportedArray.fromDeviceArray(copy.schema, copy.array, { validation: "full" });
          return withoutAddresses(fingerprint(imported.root));
        } finally {
          disposeProduced(copy);
        }
      });
      const source = new CSource({ thread_per_callback: 1 });
      const sentAddresses: number[][][] = [];
      for (let b = 0; b < count; b++) {
        const produced = produceJsonBatch(name, b);
        sentAddresses.push(producedAddresses(produced.nodes));
        source.add(b === 0 ? produced.schema.address : null, produced.array.address);
        disposeProduced(produced);
      }
      const stream = new AsyncStreamConsumer({ queueDepth: 2, validation: "full" });
      source.start(stream.handler);
      const got: unknown[] = [];
      await readAll(stream, ({ array, index }) => {
        const print = fingerprint(array.root);
        got.push(withoutAddresses(print));
        // Zero-copy: the views are the C producer's own buffers.
        expect(addresses(print)).toEqual(expectedAddresses(print, sentAddresses[index]));
      });
      await stream.closed;
      expect(got).toEqual(expected);
      expectEveryTaskExtractedOnce(source);
      finishSource(source);
      expect(producerClean()).toEqual({ live: 0, doubles: 0 });
    });
  }
});

describe("stream shapes", () => {
  test("an empty stream: schema, then the end", async () => {
    const source = new CSource({ generate: 0 });
    {
      const announced = exportSchema(readGold("1.0.0-littleendian/generated_primitive.stream").schema);
      source.add(announced.schema, null);
      announced.release();
    }
    const stream = new AsyncStreamConsumer();
    source.start(stream.handler);
    expect(await readAll(stream)).toBe(0);
    await stream.closed;
    expect(source.stat("sent")).toBe(0);
    finishSource(source);
  });

  test("generated batches arrive in order with their values and metadata", async () => {
    const source = new CSource({ generate: 50, generate_rows: 3, metadata: 1 });
    const stream = new AsyncStreamConsumer({ queueDepth: 4 });
    source.start(stream.handler);
    const seen: number[][] = [];
    await readAll(stream, (batch) => {
      expect(batch.metadata?.get("index")).toBe(String(batch.index));
      seen.push(values(batch));
    });
    await stream.closed;
    expect(seen).toEqual(Array.from({ length: 50 }, (_, i) => [i * 1000, i * 1000 + 1, i * 1000 + 2]));
    expect(stream.stats).toEqual({ requested: expect.any(Number), received: 50, taken: 50, read: 50, discarded: 0 });
    expectEveryTaskExtractedOnce(source);
    finishSource(source);
  });

  test("device arrays keep their device type and sync event; the host never reads them", async () => {
    const source = new CSource({ generate: 3, device_type: DeviceType.CUDA, sync_event: 1 });
    const stream = new AsyncStreamConsumer();
    source.start(stream.handler);
    expect((await stream.ready()).deviceType).toBe(DeviceType.CUDA);
    const event = Number(asyncPeer.peer_async_fake_event());
    await readAll(stream, ({ array }) => {
      expect(array.deviceType).toBe(DeviceType.CUDA);
      expect(array.syncEvent).toBe(event);
      expect(array.hostReadable).toBe(false);
      expect(array.deviceId).toBe(0);
      expect(() => array.root.child(0).buffer(1)).toThrow("host cannot read");
    });
    await stream.closed;
    expectEveryTaskExtractedOnce(source);
    finishSource(source);
  });
});

describe("errors", () => {
  test("an error before the schema: code, message and metadata, then release", async () => {
    const source = new CSource({ error_before_schema: 1, error_code: 42 });
    const stream = new AsyncStreamConsumer();
    source.start(stream.handler);
    const failure = await stream.ready().catch((error) => error);
    expect(failure).toBeInstanceOf(AsyncStreamError);
    expect(failure.errno).toBe(42);
    expect(failure.local).toBe(false);
    expect(failure.message).toContain("source failed before the schema");
    expect(failure.metadata).toEqual(new Map([["where", "async_peer source"]]));
    await stream.closed;
    expect(source.stat("request_calls")).toBe(0);
    finishSource(source);
  });

  test("the same error from the iterator", async () => {
    const source = new CSource({ error_before_schema: 1 });
    const stream = new AsyncStreamConsumer();
    source.start(stream.handler);
    const failure = await readAll(stream).catch((error) => error);
    expect(failure).toBeInstanceOf(AsyncStreamError);
    expect(failure.errno).toBe(EIO);
    await stream.closed;
    finishSource(source);
  });

  test("an error after the schema: the batches before it, then the error", async () => {
    const source = new CSource({ generate: 10, error_after: 4 });
    const stream = new AsyncStreamConsumer({ queueDepth: 2 });
    source.start(stream.handler);
    const seen: number[] = [];
    const failure = await readAll(stream, (batch) => seen.push(batch.index)).catch((error) => error);
    expect(seen).toEqual([0, 1, 2, 3]);
    expect(failure).toBeInstanceOf(AsyncStreamError);
    expect(failure.message).toContain("source failed mid-stream");
    await stream.closed;
    expectEveryTaskExtractedOnce(source);
    finishSource(source);
  });

  test("a failed extract_data surfaces the producer's on_error", async () => {
    const source = new CSource({ generate: 5, extract_fail_at: 2 });
    const stream = new AsyncStreamConsumer({ queueDepth: 1 });
    source.start(stream.handler);
    const seen: number[] = [];
    const failure = await readAll(stream, (batch) => seen.push(batch.index)).catch((error) => error);
    expect(seen).toEqual([0, 1]);
    expect(failure).toBeInstanceOf(AsyncStreamError);
    expect(failure.errno).toBe(EIO);
    expect(failure.message).toContain("extract_data failed");
    await stream.closed;
    finishSource(source);
  });

  test("a producer that sends more than was requested is stopped (EPROTO)", async () => {
    // This producer runs one task ahead of the requests: its first task
    // comes before anything was requested.
    const source = new CSource({ generate: 10, overrun: 1 });
    const stream = new AsyncStreamConsumer({ queueDepth: 2 });
    source.start(stream.handler);
    await stream.ready();
    // Let it overrun before the first pull requests anything.
    for (let i = 0; i < 2000 && source.stat("sent") < 1; i++) await Bun.sleep(1);
    const failure = await readAll(stream).catch((error) => error);
    expect(failure).toBeInstanceOf(AsyncStreamError);
    expect(failure.local).toBe(true);
    expect(failure.errno).toBe(EPROTO);
    expect(failure.message).toContain("sent task 1 but only 0 were requested");
    await stream.closed;
    // The refused task was extracted with NULL before the refusal returned
    // (the spec's rule), so a producer that cleans up there does not leak;
    // this one (Arrow C++'s convention) then found it extracted.
    expect(source.stat("sent")).toBe(1);
    expect(source.stat("extracted")).toBe(1);
    expect(source.stat("extracted_null")).toBe(1);
    expect(source.stat("extract_twice")).toBe(0);
    finishSource(source);
  });

  test("a release without the end of the stream is an error", async () => {
    const source = new CSource({ generate: 10, release_early: 3 });
    const stream = new AsyncStreamConsumer();
    source.start(stream.handler);
    const seen: number[] = [];
    const failure = await readAll(stream, (batch) => seen.push(batch.index)).catch((error) => error);
    expect(seen).toEqual([0, 1, 2]);
    expect(failure).toBeInstanceOf(CallbackError);
    expect(failure.message).toContain("released the handler before the end");
    await stream.closed;
    finishSource(source);
  });

  test("bad options are refused", () => {
    expect(() => new AsyncStreamConsumer({ queueDepth: 0 })).toThrow(withCode("invalid_argument"));
    expect(() => new AsyncStreamConsumer({ queueDepth: 1.5 })).toThrow("queueDepth");
    expect(() => new AsyncStreamConsumer({ validation: "most" as never })).toThrow("validation level");
  });

  test("a stream can be iterated once", async () => {
    const stream = new AsyncStreamConsumer();
    stream.arrays();
    expect(() => stream.arrays()).toThrow("iterated once");
    await stream.cancel();
  });
});

describe("cancel at every point", () => {
  test("a handler never handed to a producer is released by cancel", async () => {
    const stream = new AsyncStreamConsumer();
    await stream.cancel();
    expect(() => stream.handler).toThrow("closed");
  });

  test("before the schema: the producer is told as soon as it populated itself", async () => {
    const source = new CSource({ generate: 5 });
    const stream = new AsyncStreamConsumer();
    const handler = stream.handler;
    const cancelled = stream.cancel();
    source.start(handler);
    await cancelled;
    expect(source.stat("cancel_calls")).toBe(1);
    expect(source.stat("request_calls")).toBe(0);
    expect(source.stat("sent")).toBe(0);
    finishSource(source);
  });

  test("after the schema, before any request", async () => {
    const source = new CSource({ generate: 5 });
    const stream = new AsyncStreamConsumer();
    source.start(stream.handler);
    await stream.ready();
    await stream.cancel();
    expect(source.stat("cancel_calls")).toBe(1);
    expect(source.stat("request_calls")).toBe(0);
    expect(source.stat("sent")).toBe(0);
    finishSource(source);
  });

  test("mid-stream (break): tasks still queued and late ones are extracted with NULL, those taken and not read are released", async () => {
    const source = new CSource({ generate: 100, finish_after_cancel: 1 });
    const stream = new AsyncStreamConsumer({ queueDepth: 8 });
    source.start(stream.handler);
    let taken = 0;
    for await (const batch of stream.arrays()) {
      batch.array.dispose();
      if (++taken === 5) {
        await Bun.sleep(10); // let tasks queue up
        break;
      }
    }
    // break awaited the producer's release.
    expect(source.stat("done")).toBe(1);
    expect(source.stat("cancel_calls")).toBe(1);
    const stats = stream.stats;
    expect(stats.read).toBe(5);
    // JS takes every ready task at once: some may have been taken (with an
    // array) and not read; cancel released those.
    expect(stats.taken).toBeGreaterThanOrEqual(5);
    expect(stats.received).toBe(source.stat("sent"));
    expect(stats.discarded).toBe(stats.received - stats.taken);
    expect(stats.discarded).toBeGreaterThan(0);
    expect(source.stat("extracted_null")).toBe(stats.discarded);
    expect(asyncPeer.peer_async_generated_live()).toBe(0n); // every array released
    expectEveryTaskExtractedOnce(source);
    finishSource(source);
  });

  test("after the end: harmless, the producer is not called", async () => {
    const source = new CSource({ generate: 3 });
    const stream = new AsyncStreamConsumer();
    source.start(stream.handler);
    expect(await readAll(stream)).toBe(3);
    await stream.cancel();
    await stream.cancel(); // idempotent
    expect(source.stat("cancel_calls")).toBe(0);
    finishSource(source);
  });

  test("a dropped consumer is cancelled by its safety net", async () => {
    const source = new CSource({ generate: 1000 });
    await (async () => {
      const stream = new AsyncStreamConsumer({ queueDepth: 2 });
      source.start(stream.handler);
      const iterator = stream.arrays();
      const first = await iterator.next();
      (first.value as AsyncArray).array.dispose();
    })();
    expect(await collectUntil(() => source.stat("done") === 1, 200)).toBe(true);
    expect(source.stat("cancel_calls")).toBe(1);
    expectEveryTaskExtractedOnce(source);
    finishSource(source);
  });
});

describe("batched hand-offs", () => {
  test("tasks pushed while JS is busy reach it by at most one wake and are taken by one native call", async () => {
    const n = 12;
    const source = new CSource({ generate: n });
    const stream = new AsyncStreamConsumer({ queueDepth: n });
    source.start(stream.handler);
    await stream.ready();
    const before = stream.handoffs;
    const iterator = stream.arrays();
    // The first pull requests all n; JS then stays busy (never yields)
    // while the producer thread pushes every task, the end and its release.
    const first = iterator.next();
    const deadline = Date.now() + 10_000;
    while (source.stat("done") !== 1 && Date.now() < deadline) Bun.sleepSync(1);
    expect(source.stat("sent")).toBe(n);
    let read = 0;
    for (let next = await first; !next.done; next = await iterator.next()) {
      expect(next.value.index).toBe(read++);
      next.value.array.dispose();
    }
    expect(read).toBe(n);
    const after = stream.handoffs;
    // The first pull may have caught a task or two before JS got busy;
    // everything pushed meanwhile came with one wake (or none, if JS had
    // not armed one) and was taken by one native call.
    expect(after.wakes - before.wakes).toBeLessThanOrEqual(1);
    expect(after.takes - before.takes).toBeLessThanOrEqual(2);
    expect(stream.stats).toEqual({ requested: n, received: n, taken: n, read: n, discarded: 0 });
    await stream.closed;
    expectEveryTaskExtractedOnce(source);
    finishSource(source);
  });

  test("tasks pushed between a take that found none and the state read are read before the end, an error or a release stops the stream", () => {
    // The state comes from one locked read after the take: the producer
    // may push its last tasks and the end between the two. Stopping at that
    // "ended" lost the last batches.
    const words = new Float64Array(asyncConsumerWords);
    for (const stop of [AsyncConsumerWord.ended, AsyncConsumerWord.errored, AsyncConsumerWord.released]) {
      words.fill(0);
      words[stop] = 1;
      words[AsyncConsumerWord.queued] = 2;
      expect(tasksStillQueued(words)).toBe(true);
      words[AsyncConsumerWord.queued] = 0;
      expect(tasksStillQueued(words)).toBe(false);
    }
  });

  test("many short streams lose no batch at their end (each value read once)", async () => {
    // The race above needs the end to land in a microsecond window; many
    // short streams with the producer running flat out give it chances.
    for (let run = 0; run < 200; run++) {
      const k = 3 + (run % 5);
      const source = new CSource({ generate: k, generate_rows: 4 });
      const stream = new AsyncStreamConsumer({ queueDepth: run % 2 ? 1 : 16 });
      source.start(stream.handler);
      const firsts: number[] = [];
      for await (const { array } of stream.arrays()) {
        firsts.push((array.root.child(0).buffer(1) as Int32Array)[0]);
        array.dispose();
      }
      await stream.closed;
      source.free();
      expect({ run, firsts }).toEqual({ run, firsts: Array.from({ length: k }, (_, i) => i * 1000) });
    }
  });

  test("one take hands over every task ready, and the reader still gets them one by one, in order, with their metadata", async () => {
    const n = 6;
    const source = new CSource({ generate: n, metadata: 1 });
    const stream = new AsyncStreamConsumer({ queueDepth: n });
    source.start(stream.handler);
    const seen: string[] = [];
    expect(await readAll(stream, (batch) => seen.push(batch.metadata?.get("index") ?? "none"))).toBe(n);
    // Every task carries metadata, so each take ends after one task: none is lost.
    expect(seen).toEqual(["0", "1", "2", "3", "4", "5"]);
    await stream.closed;
    finishSource(source);
  });
});

describe("back-pressure", () => {
  for (const depth of [1, 4, 16]) {
    test(`never more than ${depth} in flight, even with a slow consumer`, async () => {
      const source = new CSource({ generate: 40, generate_rows: 1 });
      const stream = new AsyncStreamConsumer({ queueDepth: depth });
      source.start(stream.handler);
      await readAll(stream, (batch) => {
        if (batch.index % 8 === 0) Bun.sleepSync(3); // slow now and then: the producer runs ahead
      });
      await stream.closed;
      // requested - extracted is what is in flight; it reaches the depth
      // (the producer is faster) and never exceeds it.
      expect(source.stat("max_in_flight")).toBe(depth);
      expect(source.stat("max_unextracted")).toBeLessThanOrEqual(depth);
      expectEveryTaskExtractedOnce(source);
      finishSource(source);
    });
  }

  test("queue depth 1 with a slow consumer delivers everything, one at a time", async () => {
    const source = new CSource({ generate: 20 });
    const stream = new AsyncStreamConsumer({ queueDepth: 1 });
    source.start(stream.handler);
    const seen: number[] = [];
    for await (const batch of stream.arrays()) {
      seen.push(values(batch)[0]);
      batch.array.dispose();
      await Bun.sleep(2);
    }
    await stream.closed;
    expect(seen).toEqual(Array.from({ length: 20 }, (_, i) => i * 1000));
    expect(source.stat("max_unextracted")).toBe(1);
    expect(source.stat("max_in_flight")).toBe(1);
    finishSource(source);
  });
});

/** A small seeded PRNG (mulberry32): failures reproduce from the seed. */
function random(seed: number): () => number {
  const rng = new Rng(seed);
  return () => rng.next();
}

describe("stress", () => {
  test("10,000 small batches, cancelled at random points (seeded)", async () => {
    const total = 10_000;
    const started = performance.now();
    for (const seed of [1, 2, 3, 4, 5]) {
      const next = random(seed);
      const depth = 1 + Math.floor(next() * 16);
      // One run in five reads to the end; the others cancel somewhere.
      const cancelAt = seed === 5 ? total : Math.floor(next() * total);
      const source = new CSource({ generate: total, generate_rows: 2, finish_after_cancel: seed % 2 });
      const stream = new AsyncStreamConsumer({ queueDepth: depth });
      source.start(stream.handler);
      let taken = 0;
      let checksum = 0;
      for await (const batch of stream.arrays()) {
        checksum += values(batch)[0];
        batch.array.dispose();
        if (++taken >= cancelAt) break;
      }
      await stream.closed;
      const label = `seed ${seed} (depth ${depth}, cancel at ${cancelAt})`;
      expect({ label, taken }).toEqual({ label, taken: Math.min(cancelAt, total) });
      expect({ label, checksum }).toEqual({ label, checksum: 1000 * (taken * (taken - 1)) / 2 });
      const stats = stream.stats;
      expect(stats.received).toBe(source.stat("sent"));
      expect(stats.taken + stats.discarded).toBe(stats.received);
      expect(source.stat("max_in_flight")).toBeLessThanOrEqual(depth);
      expectEveryTaskExtractedOnce(source);
      finishSource(source);
    }
    expect(performance.now() - started).toBeLessThan(60_000); // bounded, not a benchmark
  }, 90_000);
});
