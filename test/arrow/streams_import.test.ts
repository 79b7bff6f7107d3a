/**
 * C produces, JS pulls: ArrowArrayStream / ArrowDeviceArrayStream moved in
 * from C producers (test/fixtures/stream_peer.c) and from our own exports,
 * read as ImportedArray raw views, sync and async; relays and adapters, C
 * to C. Every stream and every batch is released exactly once, and every
 * test ends with every counter at zero.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { ptr } from "bun:ffi";
import { Float64, RecordBatch, Table, makeVector, vectorFromArray } from "apache-arrow";
import { BufferWord, DeviceType } from "../../ts/core/abi/layout.ts";
import { ExportedStream, StreamError, exportArray, exportSchema, exportStream } from "../../ts/index.ts";
import { InvalidArgumentError } from "../../ts/core/errors.ts";
import { structPointer, ImportedStream, type ImportOptions, type ImportedArray } from "../../ts/raw.ts";
import { arrayStreamAsDeviceStream, deviceStreamAsArrayStream } from "../../ts/raw.ts";
import { consumeNatively } from "../helpers/native_consumer.ts";
import { counters } from "../helpers/leaks.ts";
import { liveStreamSources } from "../helpers/js_live.ts";
import { bufferWordOf } from "../../ts/native/batch_source.ts";
import { streamPeer } from "../helpers/fixtures.ts";
import { collectUntil } from "../helpers/gc.ts";
import { consumeInC, goldStreams, openGold, readGold, unreadableByApacheArrow } from "../helpers/streams.ts";
import { withCode } from "../helpers/errors.ts";
import { expectSettled } from "../helpers/settled.ts";

const kinds = [
  // Either kind in one loop: the address is given its struct by structPointer.
  { kind: "stream", code: 0, from: (s: number, o?: ImportOptions) => ImportedStream.fromArrayStream(structPointer("ArrowArrayStream", s), o) },
  { kind: "device_stream", code: 1, from: (s: number, o?: ImportOptions) => ImportedStream.fromDeviceArrayStream(structPointer("ArrowDeviceArrayStream", s), o) },
] as const;

/** A C int stream (stream_peer.c) in a fresh slot; batch b holds rows
 * values b * 1000 + j in child "a". */
function cStream(code: 0, batches: number, rows: number, options?: { failAt?: number; message?: string; deviceType?: number; arrayDeviceType?: number }): ExportedStream<"stream">;
function cStream(code: 1, batches: number, rows: number, options?: { failAt?: number; message?: string; deviceType?: number; arrayDeviceType?: number }): ExportedStream<"device_stream">;
function cStream(code: 0 | 1, batches: number, rows: number, options?: { failAt?: number; message?: string; deviceType?: number; arrayDeviceType?: number }): ExportedStream;
function cStream(code: 0 | 1, batches: number, rows: number, options: { failAt?: number; message?: string; deviceType?: number; arrayDeviceType?: number } = {}): ExportedStream {
  const slot = new ExportedStream(code === 0 ? "stream" : "device_stream", "C stream slot");
  const message = options.message === undefined ? null : Buffer.from(`${options.message}\0`);
  streamPeer.sp_int_stream(code, batches, rows, options.failAt ?? -1, message, options.deviceType ?? DeviceType.CPU, options.arrayDeviceType ?? options.deviceType ?? DeviceType.CPU, slot.stream);
  streamPeer.sp_intercept_stream(code, slot.stream);
  return slot;
}

function valuesOf(batch: ImportedArray): Int32Array {
  return batch.root.child(0).buffer(1) as Int32Array;
}

/** Every buffer address of an imported tree, in node-table order. */
function bufferAddresses(imported: ImportedArray): number[] {
  let total = 0;
  for (let n = 0; n < imported.nodeCount; n++) total += imported.node(n).nBuffers;
  return Array.from({ length: total }, (_, i) => bufferWordOf(imported, i, BufferWord.address));
}

afterEach(async () => {
  await expectSettled({ liveStreamSources, producerStreamsLive: () => streamPeer.sp_producer_streams_live() }, { heldByImports: { producedLive: () => streamPeer.sp_produced_live() } });
  streamPeer.sp_reset_counts();
});

describe("C-produced streams read as raw views", () => {
  for (const { kind, code, from } of kinds) {
    test(`${kind}: for...of yields zero-copy batches, then releases the stream once`, () => {
      using slot = cStream(code, 3, 10);
      const stream = from(slot.stream);
      expect(slot.streamReleased).toBe(true); // moved in
      expect(counters().live_stream_imports).toBe(1);
      expect(stream.kind).toBe(kind);
      expect(stream.schemaFormat).toBe("+s");
      const seen: number[][] = [];
      for (const batch of stream) {
        using held = batch;
        const values = valuesOf(held);
        expect<number>(ptr(values)).toBe(held.root.child(0).bufferAddress(1)); // the producer's memory
        expect(held.deviceType).toBe(DeviceType.CPU);
        expect(held.deviceId).toBe(-1);
        seen.push([...values]);
      }
      expect(seen).toEqual([0, 1, 2].map((b) => Array.from({ length: 10 }, (_, j) => b * 1000 + j)));
      expect(stream.released).toBe(true);
      expect(streamPeer.sp_stream_releases()).toBe(1n);
      expect(counters().live_stream_imports).toBe(0);
      expect(streamPeer.sp_produced_live()).toBe(0n); // each batch released by dispose
    });
  }

  test("breaking out early releases the stream once; pulled batches outlive it", () => {
    using slot = cStream(1, 10, 4);
    const kept: ImportedArray[] = [];
    for (const batch of ImportedStream.fromDeviceArrayStream(slot.stream)) {
      kept.push(batch);
      if (kept.length === 2) break;
    }
    expect(streamPeer.sp_stream_releases()).toBe(1n);
    expect(streamPeer.sp_produced_live()).toBe(2n);
    expect([...valuesOf(kept[1])]).toEqual([1000, 1001, 1002, 1003]);
    for (const batch of kept) batch.dispose();
    expect(streamPeer.sp_produced_live()).toBe(0n);
  });

  test("a failing get_next throws StreamError with the errno and the producer's message, intact", () => {
    const message = `disk on fire ✓ ${"é".repeat(1500)} end`;
    using slot = cStream(0, 5, 2, { failAt: 2, message });
    const stream = ImportedStream.fromArrayStream(slot.stream);
    const got: number[] = [];
    let caught: unknown;
    try {
      for (const batch of stream) {
        using held = batch;
        got.push(valuesOf(held)[0]);
      }
    } catch (error) {
      caught = error;
    }
    expect(got).toEqual([0, 1000]);
    expect(caught).toBeInstanceOf(StreamError);
    const error = caught as StreamError;
    expect(error.errno).toBe(5);
    expect(error.producerMessage).toBe(message);
    expect(error.message.startsWith("get_next failed with errno 5 (EIO): disk on fire")).toBe(true);
    expect(error.message.endsWith(message)).toBe(true);
    expect(stream.released).toBe(true);
    expect(streamPeer.sp_stream_releases()).toBe(1n);
  });

  test("an empty stream yields nothing and is released", () => {
    using slot = cStream(1, 0, 0);
    const stream = ImportedStream.fromDeviceArrayStream(slot.stream);
    expect(stream.next()).toBeNull();
    expect(stream.next()).toBeNull(); // the end repeats
    expect([...stream]).toEqual([]);
    expect(streamPeer.sp_stream_releases()).toBe(1n);
  });

  test("device_id may vary per array; device_type must match the stream's", () => {
    using hostSlot = cStream(1, 3, 2, { deviceType: DeviceType.CUDA_HOST });
    const ids: number[] = [];
    for (const batch of ImportedStream.fromDeviceArrayStream(hostSlot.stream)) {
      using held = batch;
      expect(held.deviceTypeName).toBe("CUDA_HOST");
      expect(held.hostReadable).toBe(true); // no sync event: readable now
      ids.push(held.deviceId);
      expect(valuesOf(held)[1]).toBe(ids.length * 1000 - 999);
    }
    expect(ids).toEqual([0, 1, 0]);

    using mixed = cStream(1, 3, 2, { deviceType: DeviceType.CPU, arrayDeviceType: DeviceType.CUDA });
    const stream = ImportedStream.fromDeviceArrayStream(mixed.stream);
    expect(() => stream.next()).toThrow(withCode("invalid_argument"));
    expect(() => stream.next()).toThrow("get_next returned an array on device CUDA (2), but the stream's device_type is CPU (1)");
    stream.release();
    expect(streamPeer.sp_produced_live()).toBe(0n); // rejected arrays were released
    expect(streamPeer.sp_stream_releases()).toBe(2n);
  });

  test("a run-end-encoded stream (a type apache-arrow lacks) reads as raw views", () => {
    using slot = new ExportedStream("stream", "REE slot");
    streamPeer.sp_ree_stream(2, slot.stream);
    const batches = [...ImportedStream.fromArrayStream(slot.stream, { validation: "full" })];
    expect(batches).toHaveLength(2);
    for (const [i, batch] of batches.entries()) {
      const ree = batch.root.child(0);
      expect(ree.typeId).toBe("run_end_encoded");
      expect(ree.length).toBe(5);
      expect([...ree.child(0).buffer(1)]).toEqual([2, 5]);
      expect([...ree.child(1).buffer(1)]).toEqual([10 * (i + 1), 20 * (i + 1)]);
      batch.dispose();
    }
  });

  test("a device stream the host cannot read imports opaque, and relays to C unconverted", async () => {
    using slot = cStream(1, 4, 3, { deviceType: DeviceType.CUDA });
    const stream = ImportedStream.fromDeviceArrayStream(slot.stream);
    const first = stream.next()!;
    expect(first.hostReadable).toBe(false);
    expect(first.deviceTypeName).toBe("CUDA");
    expect(() => first.root.child(0).buffer(1)).toThrow(withCode("unsupported"));
    first.dispose();
    expect(counters().live_stream_imports).toBe(1);
    using relayed = stream.relay();
    expect(stream.released).toBe(true);
    expect(counters().live_stream_imports).toBe(0);
    const { job, summary } = await consumeInC(1, relayed.stream, { threaded: true });
    streamPeer.sp_job_free(job);
    expect(summary).toMatchObject({ batches: 3, rows: 9, error: 0, deviceTypeMismatches: 0 });
    expect(summary.deviceIdsSeen).toBe(0b110); // device ids 0 and 1
    expect(streamPeer.sp_stream_releases()).toBe(1n);
  });
});

describe("background pulls (async iterator)", () => {
  test("for await reads every batch on the stream's worker thread", async () => {
    using slot = cStream(0, 4, 3);
    const first: number[] = [];
    for await (const batch of ImportedStream.fromArrayStream(slot.stream)) {
      using held = batch;
      first.push(valuesOf(held)[0]);
    }
    expect(first).toEqual([0, 1000, 2000, 3000]);
    expect(streamPeer.sp_stream_releases()).toBe(1n);
  });

  test("breaking out of for await releases once; errors reject with StreamError", async () => {
    using early = cStream(1, 9, 1);
    let n = 0;
    for await (const batch of ImportedStream.fromDeviceArrayStream(early.stream)) {
      batch.dispose();
      if (++n === 3) break;
    }
    // The break released the stream; if the read-ahead pull was still in
    // the producer's get_next (a loaded machine), the worker releases it
    // when that returns (zig/stream/import.zig `release`): once, soon.
    for (let i = 0; i < 10_000 && streamPeer.sp_stream_releases() === 0n; i++) await Bun.sleep(1);
    expect(streamPeer.sp_stream_releases()).toBe(1n);
    await Bun.sleep(5);
    expect(streamPeer.sp_stream_releases()).toBe(1n);

    using failing = cStream(1, 9, 1, { failAt: 1, message: "async trouble" });
    const stream = ImportedStream.fromDeviceArrayStream(failing.stream);
    (await stream.nextAsync())!.dispose();
    const rejected = await stream.nextAsync().catch((e: unknown) => e);
    expect(rejected).toBeInstanceOf(StreamError);
    expect((rejected as StreamError).producerMessage).toBe("async trouble");
    expect((rejected as StreamError).errno).toBe(5);
    stream.release();
    expect(streamPeer.sp_stream_releases()).toBe(2n);
  });

  test("one call at a time; a release during a pull rejects it and still releases once", async () => {
    using slot = cStream(1, 5, 2);
    const stream = ImportedStream.fromDeviceArrayStream(slot.stream);
    streamPeer.sp_set_delay_us(30_000); // a slow producer: the pull is surely in flight
    try {
      const pending = stream.nextAsync();
      expect(() => stream.next()).toThrow("in flight");
      expect(() => stream.nextAsync()).toThrow("in flight");
      expect(() => stream.emptyBatch()).toThrow("in flight");
      stream.release();
      expect(await pending.catch((e: unknown) => e)).toEqual(withCode("released"));
      // At once if the worker had not started the pull yet; else when its
      // get_next returns (the worker then releases). Once either way.
      expect(await collectUntil(() => streamPeer.sp_stream_releases() === 1n)).toBe(true);
      await Bun.sleep(40);
      expect(streamPeer.sp_stream_releases()).toBe(1n);
      expect(() => stream.next()).toThrow(withCode("released"));
    } finally {
      streamPeer.sp_set_delay_us(0);
    }
  });

  test("a next() while the read-ahead is still in flight waits for it and takes it", async () => {
    using slot = cStream(1, 3, 2);
    const stream = ImportedStream.fromDeviceArrayStream(slot.stream);
    // A slow producer (every get_next sleeps 30 ms), so when nextAsync()
    // resolves, the read-ahead of batch 1 has just started: surely in flight.
    streamPeer.sp_set_delay_us(30_000);
    try {
      (await stream.nextAsync())!.dispose();
      const ahead = stream.next()!; // was: InvalidArgumentError "still in flight"
      expect(ahead.root.child(0).buffer(1)[0]).toBe(1000);
      ahead.dispose();
    } finally {
      streamPeer.sp_set_delay_us(0);
    }
    using last = stream.next()!;
    expect(last.root.child(0).buffer(1)[0]).toBe(2000);
    expect(stream.next()).toBeNull();
    stream.release();
    expect(streamPeer.sp_stream_releases()).toBe(1n);
  });

  test("after a batch, the next one is read ahead; next() takes it once it is there", async () => {
    using slot = cStream(1, 3, 2);
    const stream = ImportedStream.fromDeviceArrayStream(slot.stream);
    (await stream.nextAsync())!.dispose();
    // The worker pulls batch 1 ahead: once it is there, next() takes it.
    expect(await collectUntil(() => streamPeer.sp_produced_live() === 1n)).toBe(true);
    const ahead = stream.next()!;
    expect(ahead.root.child(0).buffer(1)[0]).toBe(1000);
    ahead.dispose();
    using last = stream.next()!;
    expect(last.root.child(0).buffer(1)[0]).toBe(2000);
    stream.release();
    expect(streamPeer.sp_stream_releases()).toBe(1n);
  });
});

describe("adapters and relays, C to C", () => {
  test("a CPU ArrowArrayStream wraps as an ArrowDeviceArrayStream and back", async () => {
    using plain = cStream(0, 3, 5);
    using device = arrayStreamAsDeviceStream(plain.stream);
    expect(plain.streamReleased).toBe(true);
    expect(counters().live_stream_exports).toBe(1);
    const { job, summary } = await consumeInC(1, device.stream, { threaded: true });
    streamPeer.sp_job_free(job);
    expect(summary).toMatchObject({ batches: 3, rows: 15, deviceIdsSeen: 1, deviceTypeMismatches: 0, endedTwice: true });
    expect(streamPeer.sp_stream_releases()).toBe(1n);

    using cpuDevice = cStream(1, 2, 3, { deviceType: DeviceType.CPU });
    using back = deviceStreamAsArrayStream(cpuDevice.stream);
    const values = [...ImportedStream.fromArrayStream(back.stream)].map((batch) => {
      const first = valuesOf(batch)[2];
      batch.dispose();
      return first;
    });
    expect(values).toEqual([2, 1002]);
    expect(streamPeer.sp_stream_releases()).toBe(2n);
  });

  test("a device stream the host cannot read is refused as a CPU stream, and released", () => {
    using cuda = cStream(1, 2, 3, { deviceType: DeviceType.CUDA });
    expect(() => deviceStreamAsArrayStream(cuda.stream)).toThrow("cannot be read as a CPU ArrowArrayStream");
    expect(cuda.streamReleased).toBe(true);
    expect(streamPeer.sp_stream_releases()).toBe(1n);
  });

  test("the producer's errors pass through an adapter", () => {
    using plain = cStream(0, 3, 1, { failAt: 1, message: "through the adapter" });
    using device = arrayStreamAsDeviceStream(plain.stream);
    const stream = ImportedStream.fromDeviceArrayStream(device.stream);
    stream.next()!.dispose();
    expect(() => stream.next()).toThrow("through the adapter");
    stream.release();
  });
});

function intTable(batches: number, rows: number): Table {
  return new Table(Array.from({ length: batches }, (_, b) => new Table({
    id: makeVector(Int32Array.from({ length: rows }, (_, i) => b * 1000 + i)),
    price: vectorFromArray(Array.from({ length: rows }, (_, i) => (i % 2 ? null : i / 2)), new Float64()),
  }).batches[0]));
}

describe("our own streams imported back", () => {
  for (const { kind, from } of kinds) {
    test(`a JS-produced ${kind} reads back as the JS buffers themselves`, () => {
      const table = intTable(3, 8);
      using handle = exportStream(table, { as: kind });
      const batches = [...from(handle.stream)];
      expect(batches).toHaveLength(3);
      for (const [i, batch] of batches.entries()) {
        const js = table.batches[i].getChild("id")!.data[0].values as Int32Array;
        expect(valuesOf(batch)).toEqual(js);
        expect(batch.root.child(0).bufferAddress(1)).toBe(ptr(js));
        batch.dispose();
      }
      expect(counters().live_stream_exports).toBe(0);
    });
  }

  test("a JS-produced async stream: EDEADLK on the JS thread, read by the worker thread", async () => {
    async function* source() {
      for (let i = 0; i < 3; i++) {
        await Bun.sleep(1);
        yield intTable(1, 4).batches[0];
      }
    }
    using handle = exportStream(source(), { schema: intTable(1, 1).schema });
    const stream = ImportedStream.fromDeviceArrayStream(handle.stream);
    let deadlock: unknown;
    try {
      stream.next();
    } catch (error) {
      deadlock = error;
    }
    expect(deadlock).toBeInstanceOf(StreamError);
    expect((deadlock as StreamError).errno).toBe(35);
    expect((deadlock as StreamError).producerMessage).toContain("source is async");
    let n = 0;
    for await (const batch of stream) {
      expect(valuesOf(batch)[3]).toBe(3);
      batch.dispose();
      n++;
    }
    expect(n).toBe(3);
  });
});

describe("C-produced streams of our own exports, over every gold file", () => {
  for (const file of goldStreams()) {
    if (unreadableByApacheArrow.includes(file.name)) {
      test(`${file.name}: apache-arrow cannot read it (run-end encoding is covered by the REE fixture)`, () => {
        expect(() => readGold(file)).toThrow("Unrecognized type");
      });
      continue;
    }
    for (const { kind, code, from } of kinds) {
      test(`${file.name} as ${kind}: every batch comes back zero-copy, validated in full`, () => {
        const reader = openGold(file);
        const schema = reader.open().schema;
        const batches: RecordBatch[] = [...reader];
        // A C producer (stream_peer.c's list stream) serves our exports.
        const schemaHandle = exportSchema(schema);
        const list = streamPeer.sp_list_new(schemaHandle.schema)!;
        schemaHandle.release();
        const expected = batches.map((batch) => {
          const reference = exportArray(batch.data);
          const report = consumeNatively(reference.schema, reference.array);
          reference.release();
          const exported = exportArray(batch.data);
          streamPeer.sp_list_push(list, exported.array);
          exported.release();
          return report;
        });
        using slot = new ExportedStream(kind, "list stream slot");
        streamPeer.sp_list_finish(list, code, slot.stream);
        const stream = from(slot.stream, { validation: "full" });
        expect(stream.schemaFormat).toBe("+s");
        let i = 0;
        for (const imported of stream) {
          using held = imported;
          expect(held.root.length).toBe(batches[i].numRows);
          expect(held.root.nChildren).toBe(schema.fields.length);
          held.root.children.forEach((child, c) => expect(child.name).toBe(schema.fields[c].name));
          const addresses = bufferAddresses(held);
          expect(addresses.length).toBe(expected[i].length);
          // Zero-copy: the same addresses the reference export reported,
          // except buffers export.ts makes afresh per export (variadic sizes).
          const same = addresses.filter((a, k) => a === expected[i][k].address).length;
          expect(same).toBeGreaterThanOrEqual(addresses.length - schema.fields.length);
          i++;
        }
        expect(i).toBe(batches.length);
        expect(counters().live_stream_imports).toBe(0);
      });
    }
  }
});
