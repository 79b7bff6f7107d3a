/**
 * Streams as apache-arrow objects: RecordBatch iterators (sync and async)
 * and Tables read from C streams, compared slot by slot with apache-arrow's
 * own read of every gold file, and zero-copy (same buffer addresses) when
 * the stream is our own export coming back.
 */
import { afterEach, beforeAll, describe, expect, test } from "bun:test";
import { Dictionary, Int32, Table, Utf8, vectorFromArray, type RecordBatch } from "apache-arrow";
import { DeviceType } from "../../ts/core/abi/layout.ts";
import { ExportedStream, StreamError, exportArray, exportSchema, exportStream, importTable, recordBatches, importSchema, importRecordBatch } from "../../ts/index.ts";
import { structPointer, ImportedStream, type ImportOptions, type ImportedArray } from "../../ts/raw.ts";
import { counters, nonZeroCounters } from "../helpers/leaks.ts";
import { liveStreamSources } from "../helpers/js_live.ts";
import { compareBatches, unsharedBuffers } from "../helpers/arrow_compare.ts";
import { streamPeer } from "../helpers/fixtures.ts";
import { collectUntil } from "../helpers/gc.ts";
import { expectSettled } from "../helpers/settled.ts";
import { goldStreams, openGold, readGold, unreadableByApacheArrow } from "../helpers/streams.ts";

const kinds = [
  // Either kind in one loop: the address is given its struct by structPointer.
  { kind: "stream", code: 0, from: (s: number, o?: ImportOptions) => ImportedStream.fromArrayStream(structPointer("ArrowArrayStream", s), o) },
  { kind: "device_stream", code: 1, from: (s: number, o?: ImportOptions) => ImportedStream.fromDeviceArrayStream(structPointer("ArrowDeviceArrayStream", s), o) },
] as const;

function cStream(code: 0, batches: number, rows: number, options?: { failAt?: number; message?: string; deviceType?: number }): ExportedStream<"stream">;
function cStream(code: 1, batches: number, rows: number, options?: { failAt?: number; message?: string; deviceType?: number }): ExportedStream<"device_stream">;
function cStream(code: 0 | 1, batches: number, rows: number, options?: { failAt?: number; message?: string; deviceType?: number }): ExportedStream;
function cStream(code: 0 | 1, batches: number, rows: number, options: { failAt?: number; message?: string; deviceType?: number } = {}): ExportedStream {
  const slot = new ExportedStream(code === 0 ? "stream" : "device_stream", "C stream slot");
  const message = options.message === undefined ? null : Buffer.from(`${options.message}\0`);
  const device = options.deviceType ?? DeviceType.CPU;
  streamPeer.sp_int_stream(code, batches, rows, options.failAt ?? -1, message, device, device, slot.stream);
  streamPeer.sp_intercept_stream(code, slot.stream);
  return slot;
}

const settled = () => Object.keys(nonZeroCounters()).length === 0 && liveStreamSources() === 0 && streamPeer.sp_produced_live() === 0n && streamPeer.sp_producer_streams_live() === 0n;

// Files that ran before this one in the same process (Workers' releases
// reach the main thread later) settle first, so the peer's counts start
// at zero.
beforeAll(async () => {
  expect(await collectUntil(settled, 200)).toBe(true);
  streamPeer.sp_reset_counts();
});

afterEach(async () => {
  await expectSettled({ liveStreamSources, producerStreamsLive: () => streamPeer.sp_producer_streams_live() }, { heldByImports: { producedLive: () => streamPeer.sp_produced_live() } });
  streamPeer.sp_reset_counts();
});

describe("RecordBatch iterators over C streams", () => {
  test("streams of one schema share one Schema; another schema, or one with a dictionary, has its own", () => {
    const schemaOf = (stream: ImportedStream) => {
      const batches = [...recordBatches(stream)];
      expect(batches.length).toBeGreaterThan(0);
      for (const batch of batches) expect(batch.schema).toBe(batches[0].schema);
      return batches[0].schema;
    };
    const ints = (rows: number) => {
      using slot = cStream(1, 2, rows);
      return schemaOf(ImportedStream.fromDeviceArrayStream(slot.stream));
    };
    const fromJs = (table: Table) => {
      using handle = exportStream(table);
      return schemaOf(ImportedStream.fromDeviceArrayStream(handle.stream));
    };
    const first = ints(4);
    expect(ints(7)).toBe(first);
    const floats = fromJs(new Table({ a: vectorFromArray([1.5, 2.5]) }));
    expect(floats).not.toBe(first);
    expect(String(floats.fields[0].type)).toBe("Float64");
    expect(fromJs(new Table({ a: vectorFromArray([0.5]) }))).toBe(floats);
    const words = () => fromJs(new Table({ w: vectorFromArray(["x", "y", "x"], new Dictionary(new Utf8(), new Int32())) }));
    expect(words()).not.toBe(words());
  });

  test("recordBatches yields zero-copy batches; the stream is released once at the end", () => {
    using slot = cStream(1, 3, 4);
    const stream = ImportedStream.fromDeviceArrayStream(slot.stream);
    const seen: number[][] = [];
    for (const batch of recordBatches(stream)) {
      expect(batch.schema.fields.map((f) => f.name)).toEqual(["a"]);
      expect(String(batch.schema.fields[0].type)).toBe("Int32");
      seen.push([...batch.getChild("a")!.toArray()]);
    }
    expect(seen).toEqual([[0, 1, 2, 3], [1000, 1001, 1002, 1003], [2000, 2001, 2002, 2003]]);
    expect(streamPeer.sp_stream_releases()).toBe(1n);
    expect(stream.released).toBe(true);
  });

  test("breaking out early releases the stream once; batches already read stay valid", () => {
    using slot = cStream(0, 50, 2);
    const kept: RecordBatch[] = [];
    for (const batch of recordBatches(ImportedStream.fromArrayStream(slot.stream))) {
      kept.push(batch);
      if (kept.length === 2) break;
    }
    expect(streamPeer.sp_stream_releases()).toBe(1n);
    expect(kept[1].getChild("a")!.get(1)).toBe(1001);
  });

  test("recordBatches after nextAsync takes the batch read ahead first, then pulls the rest on the JS thread", async () => {
    using slot = cStream(1, 4, 2);
    const stream = ImportedStream.fromDeviceArrayStream(slot.stream);
    const first = (await stream.nextAsync())!;
    expect(first.root.child(0).buffer(1)[0]).toBe(0);
    first.dispose();
    const rest = [...recordBatches(stream)].map((batch) => [...batch.getChild("a")!.toArray()]);
    expect(rest).toEqual([[1000, 1001], [2000, 2001], [3000, 3001]]);
    expect(streamPeer.sp_stream_releases()).toBe(1n);
    expect(stream.released).toBe(true);
  });

  test("every validation level converts a stream's batches alike (the per-stream plan, or the generic path where sizes are unknown), nulls and zero-length batches included", async () => {
    const sources: ReturnType<typeof streamPeer.sp_repeat_new>[] = [];
    const read = (rows: number, validation: "none" | "minimal" | "default" | "full") => {
      const source = streamPeer.sp_repeat_new(3, rows)!;
      sources.push(source);
      using slot = new ExportedStream("stream", "C stream slot");
      streamPeer.sp_repeat_stream(source, slot.stream);
      const stream = ImportedStream.fromArrayStream(slot.stream, { validation });
      return [...recordBatches(stream)].map((batch) => ({
        fields: batch.schema.fields.map((f) => `${f.name}: ${f.type}`),
        rows: batch.numRows,
        a: [...batch.getChild("a")!.toArray()],
        b: [...batch.getChild("b")!],
        bNulls: batch.getChild("b")!.nullCount,
      }));
    };
    try {
      for (const rows of [0, 9]) {
        const expected = read(rows, "default");
        expect(expected.length).toBe(3);
        if (rows === 9) {
          expect(expected[0].fields).toEqual(["a: Int32", "b: Float64"]);
          expect(expected[0].a).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
          expect(expected[0].b).toEqual([0, 0.5, 1, null, 2, 2.5, 3, null, 4]);
          expect(expected[0].bNulls).toBe(2);
        } else {
          expect(expected.map((batch) => batch.rows)).toEqual([0, 0, 0]);
        }
        for (const validation of ["none", "minimal", "full"] as const) expect(read(rows, validation)).toEqual(expected);
      }
    } finally {
      // Each batch is released once its views are collected.
      expect(await collectUntil(() => sources.every((source) => streamPeer.sp_repeat_live_batches(source) === 0n))).toBe(true);
      for (const source of sources) streamPeer.sp_repeat_free(source);
    }
  });

  test("a failing get_next throws StreamError with the producer's text and releases once", () => {
    using slot = cStream(1, 5, 1, { failAt: 3, message: "the producer gave up" });
    const got: number[] = [];
    let caught: unknown;
    try {
      for (const batch of recordBatches(ImportedStream.fromDeviceArrayStream(slot.stream))) got.push(batch.getChild("a")!.get(0));
    } catch (error) {
      caught = error;
    }
    expect(got).toEqual([0, 1000, 2000]);
    expect(caught).toBeInstanceOf(StreamError);
    expect((caught as StreamError).producerMessage).toBe("the producer gave up");
    expect(streamPeer.sp_stream_releases()).toBe(1n);
  });

  test("an empty stream reads as an empty Table with the stream's schema, sync and async", async () => {
    using a = cStream(0, 0, 0);
    const table = importTable(ImportedStream.fromArrayStream(a.stream));
    expect(table.numRows).toBe(0);
    expect(table.schema.fields.map((f) => [f.name, String(f.type), f.nullable])).toEqual([["a", "Int32", true]]);
    using b = cStream(1, 0, 0);
    const viaWorker = await importTable(ImportedStream.fromDeviceArrayStream(b.stream), { async: true });
    expect(viaWorker.numRows).toBe(0);
    expect(viaWorker.schema.fields.length).toBe(1);
    expect(streamPeer.sp_stream_releases()).toBe(2n);
  });

  test("importSchema leaves the stream where it was", () => {
    using slot = cStream(1, 2, 3);
    const stream = ImportedStream.fromDeviceArrayStream(slot.stream);
    expect(importSchema(stream).fields[0].name).toBe("a");
    const table = importTable(stream);
    expect(table.numRows).toBe(6);
    expect(table.batches.length).toBe(2);
  });

  test("recordBatches pulls on the worker thread; importTable too", async () => {
    using slot = cStream(0, 3, 2);
    const firsts: number[] = [];
    for await (const batch of recordBatches(ImportedStream.fromArrayStream(slot.stream), { async: true })) firsts.push(batch.getChild("a")!.get(0));
    expect(firsts).toEqual([0, 1000, 2000]);
    using other = cStream(1, 4, 5);
    const table = await importTable(ImportedStream.fromDeviceArrayStream(other.stream), { async: true });
    expect(table.numRows).toBe(20);
    expect(table.getChild("a")!.get(19)).toBe(3004);
    expect(streamPeer.sp_stream_releases()).toBe(2n);
  });

  test("a stream on a device the host cannot read refuses conversion and is released once", () => {
    using slot = cStream(1, 2, 2, { deviceType: DeviceType.CUDA });
    expect(() => [...recordBatches(ImportedStream.fromDeviceArrayStream(slot.stream))]).toThrow("CUDA");
    expect(streamPeer.sp_stream_releases()).toBe(1n);
  });

  test("a JS-produced async source comes back through the worker thread, zero-copy", async () => {
    const batches = readGold(goldStreams().find((f) => f.name.endsWith("generated_primitive.stream"))!);
    async function* source() {
      for (const batch of batches) {
        await Bun.sleep(1);
        yield batch;
      }
    }
    using handle = exportStream(source(), { schema: batches[0].schema, as: "stream" });
    const back = await importTable(ImportedStream.fromArrayStream(handle.stream), { async: true });
    expect(back.batches.length).toBe(batches.length);
    back.batches.forEach((batch, i) => {
      expect(compareBatches(batch, batches[i], `batch ${i}`)).toEqual([]);
      expect(unsharedBuffers(batch.data, batches[i].data)).toEqual([]);
    });
    expect(counters().live_stream_exports).toBe(0);
  });
});

describe("gold files through C streams, compared with apache-arrow's read", () => {
  for (const file of goldStreams()) {
    if (unreadableByApacheArrow.includes(file.name)) {
      test(`${file.name}: apache-arrow cannot read it (raw views cover run-end encoding)`, () => {
        expect(() => readGold(file)).toThrow("Unrecognized type");
      });
      continue;
    }
    for (const { kind, from } of kinds) {
      test(`${file.name}: JS -> ${kind} -> JS gives back the same batches, same memory`, () => {
        const reader = openGold(file);
        const schema = reader.open().schema;
        const source = [...reader];
        using handle = exportStream(source, { schema, as: kind });
        // Raw pulls converted here and disposed at the end: a deterministic
        // release (the GC path is covered by the tests above).
        const pulled = [...from(handle.stream, { validation: "full" })];
        try {
          expect(pulled.length).toBe(source.length);
          pulled.forEach((imported, i) => {
            const batch = importRecordBatch(imported);
            expect(compareBatches(batch, source[i], `batch ${i}`)).toEqual([]);
            expect(unsharedBuffers(batch.data, source[i].data)).toEqual([]);
          });
        } finally {
          for (const imported of pulled) imported.dispose();
        }
      });
    }
    test(`${file.name}: a C producer serving our exports reads back as apache-arrow's Table`, async () => {
      const reader = openGold(file);
      const schema = reader.open().schema;
      const expected = [...reader];
      const schemaHandle = exportSchema(schema);
      const list = streamPeer.sp_list_new(schemaHandle.schema)!;
      schemaHandle.release();
      for (const batch of expected) {
        const exported = exportArray(batch.data);
        streamPeer.sp_list_push(list, exported.array);
        exported.release();
      }
      using slot = new ExportedStream("device_stream", "list stream slot");
      streamPeer.sp_list_finish(list, 1, slot.stream);
      const pulled: ImportedArray[] = [];
      for await (const imported of ImportedStream.fromDeviceArrayStream(slot.stream, { validation: "full" })) pulled.push(imported);
      try {
        const table = importTable(pulled);
        expect(table.batches.length).toBe(expected.length);
        expect(table.schema.fields.map((f) => f.name)).toEqual(schema.fields.map((f) => f.name));
        table.batches.forEach((batch, i) => expect(compareBatches(batch, expected[i], `batch ${i}`)).toEqual([]));
      } finally {
        for (const imported of pulled) imported.dispose();
      }
    });
  }
});
