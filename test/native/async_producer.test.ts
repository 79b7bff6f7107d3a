/**
 * This library as the producer of an async device stream: JS pushes into a
 * C consumer (test/fixtures/async_peer.c) whose worker thread requests,
 * extracts and checks. Every test ends with every counter at zero (the
 * keepalive registry drained: every exported JS buffer was released once),
 * no generated array alive, and no wake handler registered.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { CFunction, ptr, toArrayBuffer, type Pointer } from "bun:ffi";
import { RecordBatch, RecordBatchReader, Schema, Table, tableFromArrays, tableToIPC } from "apache-arrow";
import { importRecordBatch, DeviceType, ExportedArray, exportArray, exportSchema } from "../../ts/index.ts";
import { AsyncRecordBatchStream, exportAsyncStream, type AsyncExportItem } from "../../ts/device.ts";
import { ImportedArray, structPointer } from "../../ts/raw.ts";
import { AsyncStreamConsumer, decodeMetadataBytes } from "../../ts/raw.ts";
import { setJsWorkSpin } from "../../ts/diagnostics.ts";
import { counters } from "../helpers/leaks.ts";
import { native } from "../../ts/core/ffi/library.ts";
import { registeredWakes } from "../helpers/js_live.ts";
import { retainedCount } from "../../ts/native/keepalive.ts";
import { asyncPeer, CancelWhere, CSink, freePeers } from "../helpers/async_peer.ts";
import { addresses, fingerprint, withoutAddresses, type Fingerprint } from "../helpers/fingerprint.ts";
import { jsonBatchCount, jsonOnlyCases, produceJsonBatch } from "../helpers/gold_json_arrays.ts";
import { disposeProduced, producerBuffer, producerClean } from "../helpers/producer.ts";
import { compareBatches, unsharedBuffers } from "../helpers/arrow_compare.ts";
import { collectUntil } from "../helpers/gc.ts";
import { goldReader, readableGoldFiles } from "../helpers/gold_batches.ts";
import { Rng } from "../fuzz/generate.ts";
import { withCode } from "../helpers/errors.ts";
import { expectSettled } from "../helpers/settled.ts";

const EINVAL = 22;
const EOPNOTSUPP = 95;

afterEach(async () => {
  freePeers(); // what a failed test left running
  await expectSettled();
  expect(asyncPeer.peer_async_generated_live()).toBe(0n);
  expect(registeredWakes()).toBe(0);
});

/** struct<v: int32> batches, v = 100 * i + row. */
function smallBatches(count: number, rows = 3): RecordBatch[] {
  return Array.from({ length: count }, (_, i) => tableFromArrays({ v: Int32Array.from({ length: rows }, (_, r) => 100 * i + r) }).batches[0]);
}

function sumOf(batches: RecordBatch[]): number {
  let sum = 0;
  for (const batch of batches) for (const v of batch.getChildAt(0)!.toArray() as Int32Array) sum += v;
  return sum;
}

/** Waits for the sink's worker (the handler was released: it finishes on
 * its own) and checks the protocol from the consumer's side. */
function checkSink(sink: CSink, refusedTasks = 0): void {
  sink.join();
  expect(sink.stat("done")).toBe(1);
  expect(sink.stat("releases")).toBe(1);
  expect(sink.stat("after_release")).toBe(0);
  expect(sink.stat("after_reject")).toBe(0);
  expect(sink.stat("before_schema")).toBe(0);
  expect(sink.stat("overruns")).toBe(0);
  expect(sink.stat("reentrant")).toBe(0);
  expect(sink.stat("producer_missing")).toBe(0);
  expect(sink.stat("error_after_cancel")).toBe(0);
  expect(sink.stat("extract_failed")).toBe(0);
  // Every task the sink accepted was extracted exactly once.
  expect(sink.stat("extracted") + sink.stat("extracted_null")).toBe(sink.stat("received") - refusedTasks);
}

async function* asyncItems<T>(items: T[], delayMs = 0): AsyncGenerator<T> {
  for (const item of items) {
    if (delayMs) await Bun.sleep(delayMs);
    yield item;
  }
}

describe("round trips over the gold files (JS -> C consumer thread)", () => {
  for (const file of readableGoldFiles()) {
    test(file, async () => {
      // The producer reads the file with apache-arrow as it goes; the
      // batches it sent are recorded to check against afterwards.
      const reader = goldReader(file);
      reader.open();
      const schema = reader.schema;
      const batches: RecordBatch[] = [];
      function* recording(): Generator<RecordBatch> {
        for (const batch of reader) {
          batches.push(batch);
          yield batch;
        }
      }
      const sink = new CSink({ depth: 2, keep_arrays: 1 });
      const run = exportAsyncStream(recording(), sink.handler, { schema, metadata: { file } });
      const result = await run.done;
      // A synchronous export + import of each batch sent, with the stream's
      // schema: the tree, values and JS buffers the consumer must hold.
      const expected = batches.map((batch) => {
        using announced = exportSchema(schema);
        using exported = exportArray(batch);
        using imported = ImportedArray.fromDeviceArray(announced.schema, exported.array);
        return fingerprint(imported.root);
      });
      expect(result).toEqual({ outcome: "ended", sent: batches.length });
      checkSink(sink);
      expect(sink.stat("schemas")).toBe(1);
      expect(sink.stat("ends")).toBe(1);
      expect(sink.stat("errors")).toBe(0);
      expect(sink.stat("producer_device_type")).toBe(DeviceType.CPU);
      expect(decodeMetadataBytes(sink.producerMetadata!)).toEqual([["file", file]]);
      expect(sink.kept).toBe(batches.length);
      // What the consumer holds: the JS buffers themselves, same values,
      // raw and through apache-arrow.
      const got = Array.from({ length: sink.kept }, (_, i) => {
        using announced = exportSchema(schema);
        using imported = ImportedArray.fromDeviceArray(announced.schema, sink.keptArray(i));
        const batch = importRecordBatch(imported);
        expect(compareBatches(batch, batches[i], `batch ${i}`)).toEqual([]);
        expect(unsharedBuffers(batch.data, batches[i].data)).toEqual([]);
        return fingerprint(imported.root);
      });
      expect(got).toEqual(expected);
      sink.free();
    });
  }
});

describe("round trips over the gold files through both roles (apache-arrow -> C ABI -> apache-arrow)", () => {
  for (const file of readableGoldFiles()) {
    test(file, async () => {
      const reader = goldReader(file);
      reader.open();
      const schema = reader.schema;
      const sent = [...reader];
      const stream = new AsyncRecordBatchStream({ queueDepth: 2 });
      const run = exportAsyncStream(asyncItems(sent), stream.handler, { schema, metadata: { file } });
      expect((await stream.ready()).producerMetadata).toEqual(new Map([["file", file]]));
      let i = 0;
      for await (const { batch, array } of stream.batches()) {
        expect(compareBatches(batch, sent[i], `batch ${i}`)).toEqual([]);
        expect(unsharedBuffers(batch.data, sent[i].data)).toEqual([]);
        array.dispose();
        i++;
      }
      expect(i).toBe(sent.length);
      expect(await run.done).toEqual({ outcome: "ended", sent: sent.length });
      await stream.closed;
    });
  }
});

/** The producer's buffer addresses (first four slots per node, preorder)
 * laid out in the order of `print`'s buffers. */
function producerAddresses(print: Fingerprint, perNode: number[][]): number[] {
  const counts: number[] = [];
  const walk = (p: Fingerprint) => {
    counts.push(p.buffers.length);
    p.children.forEach(walk);
    if (p.dictionary) walk(p.dictionary);
  };
  walk(print);
  return counts.flatMap((n, k) => perNode[k].slice(0, n));
}

describe("gold cases apache-arrow cannot read, as native arrays (ExportedArray items -> C consumer thread)", () => {
  for (const name of jsonOnlyCases) {
    test(name, async () => {
      const count = jsonBatchCount(name);
      const expected = Array.from({ length: count }, (_, b) => {
        const copy = produceJsonBatch(name, b);
        try {
          using imported = ImportedArray.fromDeviceArray(copy.schema, copy.array, { validation: "full" });
          return withoutAddresses(fingerprint(imported.root));
        } finally {
          disposeProduced(copy);
        }
      });
      const sentAddresses: number[][][] = [];
      const items = Array.from({ length: count }, (_, b) => {
        const produced = produceJsonBatch(name, b);
        sentAddresses.push(produced.nodes.map((node) => [0, 1, 2, 3].map((i) => producerBuffer(node, i))));
        const handle = new ExportedArray("device_array");
        native.abd_schema_move(produced.schema.address, handle.schema);
        native.abd_device_array_move(produced.array.address, handle.array);
        disposeProduced(produced);
        return handle;
      });
      const sink = new CSink({ depth: 1, keep_arrays: 1 });
      // No apache-arrow schema: the stream announces the first array's own.
      const result = await exportAsyncStream(items, sink.handler).done;
      expect(result).toEqual({ outcome: "ended", sent: count });
      checkSink(sink);
      const got = Array.from({ length: sink.kept }, (_, i) => {
        const schema = native.abd_alloc_zeroed(72)!;
        expect(native.abd_schema_copy(sink.schema, schema)).toBe(0);
        using imported = ImportedArray.fromDeviceArray(structPointer("ArrowSchema", schema), sink.keptArray(i), { validation: "full" });
        native.abd_free(schema);
        const print = fingerprint(imported.root);
        expect(addresses(print)).toEqual(producerAddresses(print, sentAddresses[i]));
        return withoutAddresses(print);
      });
      expect(got).toEqual(expected);
      sink.free();
      expect(producerClean()).toEqual({ live: 0, doubles: 0 });
    });
  }
});

describe("sources", () => {
  const batches = smallBatches(12);
  const cases: [string, () => Parameters<typeof exportAsyncStream>[0]][] = [
    ["an async generator", () => asyncItems(batches, 1)],
    ["a sync array", () => batches],
    ["a Table", () => new Table(batches)],
    ["a sync RecordBatchReader", () => RecordBatchReader.from(tableToIPC(new Table(batches)))],
    ["items with per-task metadata", () => batches.map((batch, i) => ({ batch, metadata: { i: String(i) } }))],
  ];
  for (const [name, make] of cases) {
    test(name, async () => {
      const sink = new CSink({ depth: 3 });
      const result = await exportAsyncStream(make(), sink.handler).done;
      expect(result).toEqual({ outcome: "ended", sent: 12 });
      checkSink(sink);
      expect(sink.stat("rows")).toBe(36);
      expect(sink.stat("sum")).toBe(sumOf(batches));
      expect(sink.stat("tasks_with_metadata")).toBe(name.includes("metadata") ? 12 : 0);
      sink.free();
    });
  }

  test("JS memory stays alive until the consumer releases it, though JS dropped it", async () => {
    const sink = new CSink({ depth: 4, keep_arrays: 1 });
    const weak = await (async () => {
      const batches = smallBatches(4, 1000);
      const firstValues = batches[0].getChildAt(0)!.data[0].values;
      const result = await exportAsyncStream(batches, sink.handler).done;
      expect(result.outcome).toBe("ended");
      return new WeakRef(firstValues.buffer);
    })();
    sink.join();
    for (let i = 0; i < 20; i++) {
      Bun.gc(true);
      await Bun.sleep(1);
    }
    expect(weak.deref()).toBeDefined();
    expect(counters().js_retained_exports).toBe(4);
    sink.free(); // releases what it kept
    expect(await collectUntil(() => counters().js_retained_exports === 0)).toBe(true);
  });

  test("device arrays (ExportedArray items) keep their device type and sync event", async () => {
    const event = asyncPeer.peer_async_fake_event()!;
    const items = Array.from({ length: 3 }, (_, i) => {
      const handle = new ExportedArray("device_array");
      asyncPeer.peer_async_make_device_batch(4, i * 10, DeviceType.CUDA, 0, event, handle.schema, handle.array);
      return handle;
    });
    const sink = new CSink({ depth: 1 });
    const result = await exportAsyncStream(items, sink.handler, { deviceType: DeviceType.CUDA }).done;
    expect(result).toEqual({ outcome: "ended", sent: 3 });
    checkSink(sink);
    expect(items.every((item) => item.released)).toBe(true);
    expect(sink.stat("producer_device_type")).toBe(DeviceType.CUDA);
    expect(sink.stat("device_type")).toBe(DeviceType.CUDA);
    expect(sink.stat("sync_event")).toBe(Number(event));
    expect(sink.stat("sum")).toBe((0 + 1 + 2 + 3) * 3 + 4 * (0 + 10 + 20));
    sink.free();
  });

  test("an empty source with a schema: schema, end, release", async () => {
    const sink = new CSink();
    const schema = smallBatches(1)[0].schema;
    const result = await exportAsyncStream([], sink.handler, { schema }).done;
    expect(result).toEqual({ outcome: "ended", sent: 0 });
    checkSink(sink);
    expect(sink.stat("schemas")).toBe(1);
    expect(sink.stat("ends")).toBe(1);
    expect(sink.stat("received")).toBe(0);
    sink.free();
  });

  test("an empty Table: schema, end, release", async () => {
    const sink = new CSink();
    const result = await exportAsyncStream(new Table(smallBatches(1)[0].schema), sink.handler).done;
    expect(result.outcome).toBe("ended");
    checkSink(sink);
    expect(sink.stat("ends")).toBe(1);
    sink.free();
  });
});

describe("errors", () => {
  test("an empty source without a schema fails before on_schema (EINVAL)", async () => {
    const sink = new CSink();
    const result = await exportAsyncStream([], sink.handler).done;
    expect(result.outcome).toBe("failed");
    expect(result.code).toBe(EINVAL);
    expect(result.error).toEqual(withCode("invalid_argument"));
    checkSink(sink);
    expect(sink.stat("schemas")).toBe(0);
    expect(sink.stat("errors")).toBe(1);
    expect(sink.stat("error_code")).toBe(EINVAL);
    expect(sink.errorMessage).toContain("no schema was given");
    sink.free();
  });

  test("a JS exception before the schema: on_error with code, message and metadata, then release", async () => {
    const sink = new CSink();
    async function* failing(): AsyncGenerator<RecordBatch> {
      throw new TypeError("no data today");
    }
    const result = await exportAsyncStream(failing(), sink.handler).done;
    expect(result.outcome).toBe("failed");
    expect(result.error).toBeInstanceOf(TypeError);
    checkSink(sink);
    expect(sink.stat("schemas")).toBe(0);
    expect(sink.stat("errors")).toBe(1);
    expect(sink.stat("error_code")).toBe(5); // EIO for a plain JS error
    expect(sink.errorMessage).toBe("TypeError: no data today");
    expect(decodeMetadataBytes(sink.errorMetadata!)).toEqual([["error.name", "TypeError"]]);
    sink.free();
  });

  test("a JS exception after the schema: the batches before it, then on_error; the source is closed", async () => {
    const sink = new CSink({ depth: 8 });
    const batches = smallBatches(5);
    let cleanedUp = false;
    async function* failing(): AsyncGenerator<RecordBatch> {
      try {
        for (const [i, batch] of batches.entries()) {
          if (i === 3) {
            const error = new Error("disk on fire") as Error & { errno: number };
            error.errno = 28; // ENOSPC: an errno-carrying JS error keeps its code
            throw error;
          }
          yield batch;
        }
      } finally {
        cleanedUp = true;
      }
    }
    const result = await exportAsyncStream(failing(), sink.handler, { schema: batches[0].schema }).done;
    expect(result).toMatchObject({ outcome: "failed", sent: 3, code: 28 });
    expect(cleanedUp).toBe(true);
    checkSink(sink);
    expect(sink.stat("received")).toBe(3);
    expect(sink.stat("ends")).toBe(0);
    expect(sink.stat("errors")).toBe(1);
    expect(sink.stat("error_code")).toBe(28);
    expect(sink.errorMessage).toBe("Error: disk on fire");
    sink.free();
  });

  test("a batch that cannot be exported becomes on_error", async () => {
    const sink = new CSink();
    const batches = smallBatches(2);
    const result = await exportAsyncStream(batches, sink.handler, { deviceType: DeviceType.CUDA }).done;
    expect(result.outcome).toBe("failed");
    expect(result.code).toBe(EOPNOTSUPP);
    checkSink(sink);
    expect(sink.stat("schemas")).toBe(1);
    expect(sink.stat("received")).toBe(0);
    expect(sink.errorMessage).toContain("device type 2");
    sink.free();
  });

  test("a batch that does not match the stream's schema becomes on_error (EINVAL)", async () => {
    const sink = new CSink();
    const other = tableFromArrays({ w: Float64Array.from([1, 2]) }).batches[0];
    const items: AsyncExportItem[] = [...smallBatches(1), other];
    const result = await exportAsyncStream(items, sink.handler).done;
    expect(result).toMatchObject({ outcome: "failed", sent: 1, code: EINVAL });
    checkSink(sink);
    expect(sink.errorMessage).toContain("does not match the stream's schema");
    sink.free();
  });

  test("something that is not a batch becomes on_error", async () => {
    const sink = new CSink();
    const result = await exportAsyncStream([42 as never], sink.handler, { schema: smallBatches(1)[0].schema }).done;
    expect(result).toMatchObject({ outcome: "failed", code: EINVAL });
    checkSink(sink);
    expect(sink.errorMessage).toContain("yielded the number 42");
    sink.free();
  });

  test("a handler missing a callback is released and refused", () => {
    const sink = new CSink();
    const copy = native.abd_alloc_zeroed(48)!;
    new Uint8Array(toArrayBuffer(copy, 0, 48)).set(new Uint8Array(toArrayBuffer(sink.handler, 0, 48)));
    new BigUint64Array(toArrayBuffer(copy, 16, 8))[0] = 0n; // on_error = NULL
    expect(() => exportAsyncStream([], structPointer("ArrowAsyncDeviceStreamHandler", copy))).toThrow("handler->on_error is NULL");
    native.abd_free(copy);
    checkSink(sink); // its release ran, once
    sink.free();
  });

  test("bad options are refused, and the handler released", () => {
    const sink = new CSink();
    expect(() => exportAsyncStream([], sink.handler, { deviceType: 0 })).toThrow("not a device type");
    checkSink(sink);
    sink.free();
  });
});

describe("the consumer's answers", () => {
  test("on_schema refused: only release follows; the source is closed", async () => {
    const sink = new CSink({ reject_schema: 12 });
    let closed = false;
    const batches = smallBatches(3);
    const items = (): Iterator<RecordBatch> & Iterable<RecordBatch> => {
      let i = 0;
      const iterator = {
        next: () => (i < batches.length ? { done: false as const, value: batches[i++] } : { done: true as const, value: undefined }),
        return: () => {
          closed = true;
          return { done: true as const, value: undefined };
        },
        [Symbol.iterator]: () => iterator,
      };
      return iterator;
    };
    const result = await exportAsyncStream(items(), sink.handler, { schema: smallBatches(1)[0].schema }).done;
    expect(result).toEqual({ outcome: "refused", code: 12, sent: 0 });
    expect(closed).toBe(true);
    checkSink(sink);
    expect(sink.stat("errors")).toBe(0);
    sink.free();
  });

  test("on_next_task refused, never extracted (Arrow C++'s consumer): reclaimed at the release, only release follows", async () => {
    const sink = new CSink({ reject_task_at: 2, reject_code: 7 });
    const result = await exportAsyncStream(smallBatches(6), sink.handler).done;
    expect(result).toEqual({ outcome: "refused", code: 7, sent: 3 });
    checkSink(sink, 1);
    expect(sink.stat("received")).toBe(3);
    expect(sink.stat("extracted")).toBe(2);
    expect(sink.stat("extracted_null")).toBe(0);
    expect(sink.stat("ends")).toBe(0);
    expect(sink.stat("errors")).toBe(0);
    sink.free(); // afterEach: no task, array or JS buffer left (counters)
  });

  test("on_next_task refused, then extracted with NULL (the spec's consumer): the late extract is harmless, once", async () => {
    const sink = new CSink({ reject_task_at: 2, reject_code: 7, extract_refused: 1 });
    const result = await exportAsyncStream(smallBatches(6), sink.handler).done;
    expect(result).toEqual({ outcome: "refused", code: 7, sent: 3 });
    checkSink(sink);
    expect(sink.stat("received")).toBe(3);
    expect(sink.stat("extracted")).toBe(2);
    expect(sink.stat("extracted_null")).toBe(1); // the refused task, in the handler's release
    expect(sink.stat("extract_failed")).toBe(0);
    sink.free();
  });

  for (const n of [0, -1]) {
    test(`request(${n}) is reported through on_error (EINVAL), then release`, async () => {
      const sink = new CSink({ depth: 2, bad_request: 1, bad_n: n });
      const result = await exportAsyncStream(asyncItems(smallBatches(50), 1), sink.handler).done;
      expect(result.outcome).toBe("failed");
      expect(result.code).toBe(EINVAL);
      checkSink(sink);
      expect(sink.stat("errors")).toBe(1);
      expect(sink.stat("error_code")).toBe(EINVAL);
      expect(sink.errorMessage).toContain(`request(${n})`);
      expect(sink.stat("ends")).toBe(0);
      sink.free();
    });
  }

  test("request() from inside on_next_task never calls back synchronously", async () => {
    const sink = new CSink({ depth: 1, request_in_callback: 1 });
    const batches = smallBatches(30);
    const result = await exportAsyncStream(batches, sink.handler).done;
    expect(result).toEqual({ outcome: "ended", sent: 30 });
    checkSink(sink); // reentrant == 0: no callback while inside request()
    expect(sink.stat("sum")).toBe(sumOf(batches));
    sink.free();
  });

  test("tasks extracted with NULL, and arrays released on other threads", async () => {
    const sink = new CSink({ depth: 4, discard_every: 3, release_on_thread: 1 });
    const result = await exportAsyncStream(smallBatches(30), sink.handler).done;
    expect(result.outcome).toBe("ended");
    checkSink(sink);
    expect(sink.stat("extracted_null")).toBe(10);
    expect(sink.stat("extracted")).toBe(20);
    sink.free();
  });
});

describe("cancel at every point", () => {
  test("before any request (inside on_schema): no task, no on_error", async () => {
    const sink = new CSink({ cancel_at: 0, cancel_where: CancelWhere.before_request });
    const result = await exportAsyncStream(smallBatches(5), sink.handler).done;
    expect(result).toEqual({ outcome: "cancelled", sent: 0 });
    checkSink(sink);
    expect(sink.stat("received")).toBe(0);
    expect(sink.stat("errors")).toBe(0);
    expect(sink.stat("ends")).toBe(0);
    sink.free();
  });

  test("mid-stream, from the consumer's thread: the source is closed, no on_error", async () => {
    const sink = new CSink({ depth: 2, cancel_at: 4, cancel_where: CancelWhere.worker });
    let closed = false;
    async function* items(): AsyncGenerator<RecordBatch> {
      try {
        for (const batch of smallBatches(1000)) {
          await Bun.sleep(0);
          yield batch;
        }
      } finally {
        closed = true;
      }
    }
    const result = await exportAsyncStream(items(), sink.handler, { schema: smallBatches(1)[0].schema }).done;
    expect(result.outcome).toBe("cancelled");
    expect(closed).toBe(true);
    checkSink(sink);
    expect(sink.stat("errors")).toBe(0);
    // Up to the requested count may still arrive after cancel (extracted
    // with NULL by the sink), never more.
    expect(sink.stat("received")).toBeGreaterThanOrEqual(4);
    expect(sink.stat("received")).toBeLessThanOrEqual(4 + 2);
    sink.free();
  });

  test("mid-stream, synchronously inside on_next_task", async () => {
    const sink = new CSink({ depth: 8, cancel_at: 3, cancel_where: CancelWhere.in_next_task });
    const result = await exportAsyncStream(smallBatches(100), sink.handler).done;
    expect(result).toEqual({ outcome: "cancelled", sent: 3 });
    checkSink(sink);
    expect(sink.stat("errors")).toBe(0);
    sink.free();
  });

  test("after the end (inside on_next_task(NULL)): cancel and request are no-ops", async () => {
    const sink = new CSink({ cancel_at: 0, cancel_where: CancelWhere.after_end });
    const result = await exportAsyncStream(smallBatches(3), sink.handler).done;
    expect(result).toEqual({ outcome: "ended", sent: 3 });
    checkSink(sink);
    expect(sink.stat("ends")).toBe(1);
    expect(sink.stat("errors")).toBe(0);
    sink.free();
  });
});

describe("back-pressure", () => {
  test("a slow consumer with queue depth 1 gets one task at a time", async () => {
    const sink = new CSink({ depth: 1, delay_us: 2000 });
    const batches = smallBatches(15);
    const run = exportAsyncStream(batches, sink.handler);
    const result = await run.done;
    expect(result).toEqual({ outcome: "ended", sent: 15 });
    checkSink(sink); // overruns == 0: never a task beyond what was requested
    expect(sink.stat("sum")).toBe(sumOf(batches));
    sink.free();
  });

  test("nothing is sent before the consumer requests", async () => {
    const sink = new CSink({ depth: 0 }); // never requests on its own
    const run = exportAsyncStream(smallBatches(3), sink.handler);
    await Bun.sleep(20);
    expect(run.sent).toBe(0);
    expect(sink.stat("schemas")).toBe(1);
    expect(sink.stat("received")).toBe(0);
    // Let it go: a cancel from the test, as a consumer thread would.
    const producer = new BigUint64Array(toArrayBuffer(sink.handler, 32, 8))[0];
    const cancel = new BigUint64Array(toArrayBuffer(Number(producer) as Pointer, 16, 8))[0];
    CFunction({ ptr: Number(cancel) as Pointer, args: ["ptr"], returns: "void" })(Number(producer));
    expect((await run.done).outcome).toBe("cancelled");
    checkSink(sink);
    sink.free();
  });
});

describe("batched hand-offs", () => {
  test("k tasks requested at once are sent in one burst, and the consumer's requests cost at most one wake per wait", async () => {
    const sink = new CSink({ depth: 8 }); // request(8) once, then request(1) per task extracted
    const batches = smallBatches(8);
    const run = exportAsyncStream(batches, sink.handler);
    const result = await run.done;
    expect(result).toEqual({ outcome: "ended", sent: 8 });
    // Eight credits arrive in one request: all eight tasks go in one turn.
    expect(run.handoffs.bursts).toBe(1);
    // JS waits at most twice (for the first request, then for a credit
    // before it learns the source is done); each wait takes one wake.
    expect(run.handoffs.wakes).toBeLessThanOrEqual(2);
    checkSink(sink);
    expect(sink.stat("sum")).toBe(sumOf(batches));
    sink.free();
  });

  test("while credits last, JS sends without reading the native state under its lock: no poll per batch", async () => {
    const sink = new CSink({ depth: 50 }); // one request covers the whole stream and its end
    const batches = smallBatches(40);
    const run = exportAsyncStream(batches, sink.handler);
    const result = await run.done;
    expect(result).toEqual({ outcome: "ended", sent: 40 });
    expect(run.handoffs.bursts).toBe(1);
    // At most two polls, both before the request came (none if it came
    // first; else one plain, one arming the wake): the 40 sends and the end
    // read the published words.
    expect(run.handoffs.polls).toBeLessThanOrEqual(2);
    checkSink(sink);
    expect(sink.stat("sum")).toBe(sumOf(batches));
    sink.free();
  });

  test("a long stream from a sync source, JS never sleeping: released batches are drained as it goes, not kept until the end", async () => {
    // JS waits for each credit in its native spin, never in the event loop
    // (where the release wake would drain): only the loop's own drain
    // lets go of what the consumer released.
    const previous = setJsWorkSpin(1_000_000_000);
    try {
      const depth = 4;
      const sink = new CSink({ depth });
      const batches = smallBatches(16);
      const before = retainedCount();
      let most = 0;
      function* items(): Generator<RecordBatch> {
        for (let i = 0; i < 600; i++) {
          most = Math.max(most, retainedCount() - before);
          yield batches[i % batches.length];
        }
      }
      const result = await exportAsyncStream(items(), sink.handler).done;
      expect(result).toEqual({ outcome: "ended", sent: 600 });
      // Sent and not released: at most `depth` (the sink requests again only
      // after a release); released and not drained: under 64 at each check.
      expect(most).toBeLessThanOrEqual(depth + 64);
      checkSink(sink);
      sink.free();
    } finally {
      setJsWorkSpin(previous);
    }
  });
});

describe("JS -> C ABI -> JS (both roles of this library)", () => {
  test("the consumer reads what the producer sends, same memory", async () => {
    const batches = smallBatches(20, 5);
    const stream = new AsyncStreamConsumer({ queueDepth: 3 });
    const run = exportAsyncStream(asyncItems(batches), stream.handler, { metadata: { from: "js" } });
    expect((await stream.ready()).producerMetadata).toEqual(new Map([["from", "js"]]));
    let i = 0;
    for await (const { array } of stream.arrays()) {
      const values = array.root.child(0).buffer(1) as Int32Array;
      expect(Array.from(values)).toEqual(Array.from(batches[i].getChildAt(0)!.toArray() as Int32Array));
      expect(array.root.child(0).bufferAddress(1)).toBe(ptr(batches[i].getChildAt(0)!.data[0].values));
      array.dispose();
      i++;
    }
    expect(i).toBe(20);
    expect(await run.done).toEqual({ outcome: "ended", sent: 20 });
    await stream.closed;
  });

  test("repeated column names: a batch or Table without a schema is announced with its columns' own types; a schema misnaming them is refused", async () => {
    const [batch] = [...goldReader("1.0.0-littleendian/generated_duplicate_fieldnames.stream")];
    // apache-arrow's RecordBatch.schema merges fields that share a name
    // (both "ints" read int32 there; the data holds int8 and int32).
    expect(batch.schema.fields.map((f) => String(f.type))).not.toEqual(batch.data.type.children.map((f) => String(f.type)));
    const stream = new AsyncRecordBatchStream({ queueDepth: 1, validation: "full" });
    const run = exportAsyncStream([batch], stream.handler);
    let n = 0;
    for await (const { batch: back, array } of stream.batches()) {
      expect(back.data.type.children.map((f) => String(f.type))).toEqual(batch.data.type.children.map((f) => String(f.type)));
      expect(compareBatches(back, batch)).toEqual([]);
      expect(unsharedBuffers(back.data, batch.data)).toEqual([]);
      array.dispose();
      n++;
    }
    expect(n).toBe(1);
    expect(await run.done).toEqual({ outcome: "ended", sent: 1 });
    await stream.closed;

    // A Table of it (Table.schema merges the names too), and a schema given
    // that misnames the columns' types: refused, never sent under it.
    for (const [source, options, outcome] of [[new Table([batch]), {}, "ended"], [[batch], { schema: batch.schema }, "failed"]] as const) {
      const again = new AsyncRecordBatchStream({ validation: "full" });
      const sent = exportAsyncStream(source, again.handler, options);
      const got = await (async () => {
        const out: RecordBatch[] = [];
        for await (const back of again) out.push(back);
        return out;
      })().catch((error: unknown) => error);
      const result = await sent.done;
      expect(result.outcome).toBe(outcome);
      if (outcome === "ended") expect(compareBatches((got as RecordBatch[])[0], batch)).toEqual([]);
      else expect(String((got as Error).message)).toContain("batch 0 does not match the stream's schema");
      await again.closed;
    }
  });

  test("break on the consumer side cancels the producer quietly", async () => {
    const stream = new AsyncStreamConsumer({ queueDepth: 2 });
    const run = exportAsyncStream(smallBatches(100), stream.handler);
    let i = 0;
    for await (const { array } of stream.arrays()) {
      array.dispose();
      if (++i === 5) break;
    }
    const result = await run.done;
    expect(result.outcome).toBe("cancelled");
    expect(result.sent).toBeLessThanOrEqual(5 + 2);
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
    const batches = smallBatches(16, 2);
    const started = performance.now();
    for (const seed of [11, 12, 13, 14, 15, 16, 17, 18]) {
      const next = random(seed);
      const depth = 1 + Math.floor(next() * 16);
      const cancelAt = seed === 18 ? -1 : 1 + Math.floor(next() * (total - 1));
      const where = seed % 2 === 0 ? CancelWhere.worker : CancelWhere.in_next_task;
      const sink = new CSink({ depth, cancel_at: cancelAt, cancel_where: where, discard_every: 1 + (seed % 4) });
      function* items(): Generator<RecordBatch> {
        for (let i = 0; i < total; i++) yield batches[i % batches.length];
      }
      const result = await exportAsyncStream(items(), sink.handler).done;
      const label = `seed ${seed} (depth ${depth}, cancel at ${cancelAt})`;
      expect({ label, outcome: result.outcome }).toEqual({ label, outcome: cancelAt < 0 ? "ended" : "cancelled" });
      checkSink(sink);
      const received = sink.stat("received");
      expect(received).toBe(result.sent);
      if (cancelAt >= 0) {
        expect(received).toBeGreaterThanOrEqual(cancelAt);
        expect(received).toBeLessThanOrEqual(cancelAt + depth);
      } else {
        expect(received).toBe(total);
      }
      sink.free();
    }
    expect(performance.now() - started).toBeLessThan(60_000); // bounded, not a benchmark
  }, 90_000);
});
