/**
 * JS produces, C pulls: ArrowArrayStream / ArrowDeviceArrayStream from
 * apache-arrow sources, pulled by a C consumer on the JS thread (inside an
 * FFI call) and on its own thread, over every gold file apache-arrow can
 * read, plus empty, failing, early-closed and async streams. Every test
 * ends with every counter at zero.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { ptr, read, type Pointer } from "bun:ffi";
import {
  Field, Float64, RecordBatch, RecordBatchReader, Schema, Table, Utf8, makeVector, tableToIPC,
  vectorFromArray, type Data,
} from "apache-arrow";
import { ArrowDeviceArrayLayout } from "../../ts/core/abi/layout.ts";
import { ExportedArray, exportArray, exportStream, importSchema } from "../../ts/index.ts";
import { ImportedStream, type StreamKind } from "../../ts/raw.ts";
import { consumeNatively, type NativeBufferReport } from "../helpers/native_consumer.ts";
import { counters } from "../helpers/leaks.ts";
import { liveStreamSources } from "../helpers/js_live.ts";
import { SP_CHECK_ERROR_TWICE, SP_HOLD, streamPeer } from "../helpers/fixtures.ts";
import { collectUntil } from "../helpers/gc.ts";
import { consumeInC, goldStreams, openGold, readGold, unreadableByApacheArrow } from "../helpers/streams.ts";
import { withCode } from "../helpers/errors.ts";
import { expectSettled } from "../helpers/settled.ts";

const kinds: { kind: StreamKind; code: 0 | 1 }[] = [{ kind: "stream", code: 0 }, { kind: "device_stream", code: 1 }];
const threads = [{ name: "on the JS thread", threaded: false }, { name: "on a consumer thread", threaded: true }];

function intBatch(start: number, rows: number): RecordBatch {
  const ids = makeVector(Int32Array.from({ length: rows }, (_, i) => start + i));
  const prices = vectorFromArray(Array.from({ length: rows }, (_, i) => (i % 3 === 1 ? null : (start + i) / 4)), new Float64());
  return new Table({ id: ids, price: prices }).batches[0];
}

function intTable(batches: number, rows: number): Table {
  return new Table(Array.from({ length: batches }, (_, b) => intBatch(b * 1000, rows)));
}

/** The native consumer's report for a batch exported on its own (the
 * reference: same buffers, same bytes). */
function referenceReport(data: Data): NativeBufferReport[] {
  const exported = exportArray(data);
  try {
    return consumeNatively(exported.schema, exported.array);
  } finally {
    exported.release();
  }
}

/** Moves held batch i out of the C job and through the native consumer. */
function takeAndConsume(job: Pointer, i: number): NativeBufferReport[] {
  using slot = new ExportedArray("device_array", "test slot");
  expect(streamPeer.sp_job_take(job, i, slot.schema, slot.array)).toBe(0);
  return consumeNatively(slot.schema, slot.array);
}

afterEach(async () => {
  streamPeer.sp_reset_counts();
  await expectSettled({ liveStreamSources });
});

describe("JS-produced streams pulled by C", () => {
  for (const { kind, code } of kinds) {
    for (const { name, threaded } of threads) {
      test(`${kind} ${name}: every batch arrives zero-copy, then the end, twice`, async () => {
        const table = intTable(3, 100);
        using handle = exportStream(table, { as: kind });
        expect(counters().live_stream_exports).toBe(1);
        streamPeer.sp_intercept_stream(code, handle.stream);
        const { job, summary } = await consumeInC(code, handle.stream, { threaded, flags: SP_HOLD });
        try {
          expect(handle.streamReleased).toBe(true); // moved into the consumer
          expect(summary).toMatchObject({ schemaRc: 0, schemaFormat: "+s", schemaChildren: 2, batches: 3, rows: 300, error: 0, endedTwice: true });
          expect(summary.lastValue).toBe(2000);
          expect(streamPeer.sp_stream_releases()).toBe(1n);
          expect(counters().live_stream_exports).toBe(0);
          // Arrays outlive the stream, and are the JS buffers themselves.
          for (let i = 0; i < 3; i++) {
            const batch = table.batches[i];
            const report = takeAndConsume(job, i);
            const id = batch.getChild("id")!.data[0];
            const price = batch.getChild("price")!.data[0];
            expect(report.map((b) => b.address)).toContain(ptr(id.values as Int32Array));
            expect(report.map((b) => b.address)).toContain(ptr(price.values as Float64Array));
            expect(report).toEqual(referenceReport(batch.data));
          }
          expect(streamPeer.sp_array_releases()).toBe(3n);
        } finally {
          streamPeer.sp_job_free(job);
        }
      });
    }
  }

  test("device stream fields: CPU, device_id -1, reserved zeroed", async () => {
    using handle = exportStream(intTable(1, 5));
    expect(handle.kind).toBe("device_stream");
    const { job, summary } = await consumeInC(1, handle.stream, { threaded: true, flags: SP_HOLD });
    try {
      expect(summary.deviceTypeMismatches).toBe(0);
      expect(summary.deviceIdsSeen).toBe(1); // only device_id -1
      using slot = new ExportedArray("device_array", "test slot");
      expect(streamPeer.sp_job_take(job, 0, slot.schema, slot.array)).toBe(0);
      expect(read.i64(slot.array, ArrowDeviceArrayLayout.fields.device_id)).toBe(-1n);
      for (let i = 0; i < 3; i++) expect(read.i64(slot.array, ArrowDeviceArrayLayout.fields.reserved + 8 * i)).toBe(0n);
    } finally {
      streamPeer.sp_job_free(job);
    }
  });

  for (const { name, threaded } of threads) {
    test(`an empty stream ${name}: the schema, then the end at once, repeated`, async () => {
      const schema = new Schema([new Field("x", new Utf8(), true)]);
      using handle = exportStream(new Table(schema));
      const { job, summary } = await consumeInC(1, handle.stream, { threaded });
      streamPeer.sp_job_free(job);
      expect(summary).toMatchObject({ schemaRc: 0, schemaFormat: "+s", schemaChildren: 1, batches: 0, rows: 0, error: 0, endedTwice: true });
    });

    test(`a source failing midway ${name}: EIO and its message, intact, on every later call`, async () => {
      let finallyRan = 0;
      const message = `source broke at batch 2: ünïcödé ✓ ${"x".repeat(3000)}`;
      function* source() {
        try {
          yield intBatch(0, 10);
          yield intBatch(10, 10);
          throw new Error(message);
        } finally {
          finallyRan++;
        }
      }
      using handle = exportStream(source(), { as: "stream" });
      const { job, summary } = await consumeInC(0, handle.stream, { threaded, flags: SP_CHECK_ERROR_TWICE });
      streamPeer.sp_job_free(job);
      expect(summary).toMatchObject({ batches: 2, rows: 20, error: 5, repeatError: 5, repeatSameMessage: true });
      expect(summary.message).toBe(message);
      expect(finallyRan).toBe(1);
    });

    test(`closing early ${name} releases the stream once and closes the source`, async () => {
      let finallyRan = 0;
      let produced = 0;
      function* source() {
        try {
          for (let i = 0; i < 100; i++) {
            produced++;
            yield intBatch(i, 4);
          }
        } finally {
          finallyRan++;
        }
      }
      using handle = exportStream(source());
      streamPeer.sp_intercept_stream(1, handle.stream);
      const { job, summary } = await consumeInC(1, handle.stream, { threaded, maxBatches: 2 });
      streamPeer.sp_job_free(job);
      expect(summary.batches).toBe(2);
      expect(produced).toBe(2);
      expect(streamPeer.sp_stream_releases()).toBe(1n);
      expect(await collectUntil(() => finallyRan === 1)).toBe(true);
      expect(streamPeer.sp_array_releases()).toBe(2n);
    });
  }

  test("an error carrying an errno keeps it; a library error maps to its errno", async () => {
    function* withErrno() {
      yield intBatch(0, 1);
      throw Object.assign(new Error("no such thing"), { errno: -2 }); // node style: -ENOENT
    }
    using first = exportStream(withErrno());
    const a = await consumeInC(1, first.stream, { threaded: true });
    streamPeer.sp_job_free(a.job);
    expect(a.summary).toMatchObject({ batches: 1, error: 2, message: "no such thing" });

    const wrongType = new Table({ other: makeVector(Float64Array.from([1, 2])) }).batches[0];
    using second = exportStream([intBatch(0, 2), wrongType]);
    const b = await consumeInC(1, second.stream, { threaded: false });
    streamPeer.sp_job_free(b.job);
    expect(b.summary.batches).toBe(1);
    expect(b.summary.error).toBe(22); // EINVAL
    expect(b.summary.message).toContain("batch 1's schema differs from the stream's");

    function* notBatches() {
      yield intBatch(0, 1);
      yield 42 as unknown as RecordBatch; // what an untyped JS caller can pass
    }
    using third = exportStream(notBatches());
    const c = await consumeInC(1, third.stream, { threaded: true });
    streamPeer.sp_job_free(c.job);
    expect(c.summary.error).toBe(22);
    expect(c.summary.message).toContain("yielded the number 42 as batch 1, not an apache-arrow RecordBatch");
  });

  test("an async source is pulled by a consumer thread, awaiting each batch", async () => {
    async function* source() {
      for (let i = 0; i < 4; i++) {
        await Bun.sleep(2);
        yield intBatch(i * 1000, 50);
      }
    }
    using handle = await exportStream(source(), { async: true, as: "stream" });
    const { job, summary } = await consumeInC(0, handle.stream, { threaded: true });
    streamPeer.sp_job_free(job);
    expect(summary).toMatchObject({ schemaChildren: 2, batches: 4, rows: 200, error: 0, endedTwice: true, lastValue: 3000 });
  });

  test("an async source pulled on the JS thread fails with EDEADLK instead of hanging", async () => {
    async function* source() {
      yield intBatch(0, 5);
    }
    const schema = intBatch(0, 1).schema;
    using handle = exportStream(source(), { schema });
    const { job, summary } = await consumeInC(1, handle.stream, { threaded: false, flags: SP_CHECK_ERROR_TWICE });
    streamPeer.sp_job_free(job);
    expect(summary.schemaRc).toBe(0);
    expect(summary.error).toBe(35);
    expect(summary.message).toContain("JS thread");
    expect(summary.message).toContain("async");
  });

  test("an async RecordBatchReader is opened by exportStream", async () => {
    const table = intTable(3, 7);
    async function* bytes() {
      yield tableToIPC(table, "stream");
    }
    const reader = await RecordBatchReader.from(bytes());
    expect(() => exportStream(reader)).toThrow(withCode("invalid_argument"));
    using handle = await exportStream(reader, { async: true });
    const { job, summary } = await consumeInC(1, handle.stream, { threaded: true });
    streamPeer.sp_job_free(job);
    expect(summary).toMatchObject({ batches: 3, rows: 21, error: 0 });
  });

  test("sources: an array of batches, a sync iterable read ahead, a given schema", async () => {
    const batches = [intBatch(0, 3), intBatch(3, 3)];
    using fromArray = exportStream(batches);
    const a = await consumeInC(1, fromArray.stream, { threaded: true });
    streamPeer.sp_job_free(a.job);
    expect(a.summary).toMatchObject({ batches: 2, rows: 6 });

    using fromSet = exportStream(new Set(batches));
    const b = await consumeInC(1, fromSet.stream, { threaded: false });
    streamPeer.sp_job_free(b.job);
    expect(b.summary).toMatchObject({ batches: 2, rows: 6, lastValue: 3 });

    using empty = exportStream([], { schema: batches[0].schema });
    const c = await consumeInC(1, empty.stream, { threaded: false });
    streamPeer.sp_job_free(c.job);
    expect(c.summary).toMatchObject({ batches: 0, schemaChildren: 2, endedTwice: true });

    expect(() => exportStream([])).toThrow("options.schema");
    expect(() => exportStream(42 as never)).toThrow("exportStream: source must be an apache-arrow Table");
  });

  test("a Table whose columns repeat a name exports with its columns' own types (Table.schema merges them)", () => {
    const [batch] = readGold(goldStreams().find((f) => f.name.endsWith("generated_duplicate_fieldnames.stream"))!);
    const table = new Table([batch]);
    const types = (fields: Field[]) => fields.map((f) => String(f.type));
    expect(types(table.schema.fields)).not.toEqual(types(batch.data.type.children));
    using handle = exportStream(table);
    const [back] = [...ImportedStream.fromDeviceArrayStream(handle.stream, { validation: "full" })];
    try {
      expect(types(importSchema(back.root).fields)).toEqual(types(batch.data.type.children));
      expect(back.root.child(0).bufferAddress(1)).toBe(ptr(batch.data.children[0].values));
    } finally {
      back.dispose();
    }
  });

  test("a handle released before any consumer took it releases the stream and closes the source", async () => {
    let finallyRan = 0;
    function* source() {
      try {
        yield intBatch(0, 1);
        yield intBatch(1, 1);
      } finally {
        finallyRan++;
      }
    }
    const handle = exportStream(source());
    streamPeer.sp_intercept_stream(1, handle.stream);
    expect(counters().live_stream_exports).toBe(1);
    handle.release();
    handle.release();
    expect(streamPeer.sp_stream_releases()).toBe(1n);
    expect(counters().live_stream_exports).toBe(0);
    expect(await collectUntil(() => finallyRan === 1)).toBe(true);
    expect(() => handle.stream).toThrow("released");
  });

  test("JS buffers stay alive for arrays held after the stream and the table are gone", async () => {
    const { job, expected } = await (async () => {
      const table = intTable(2, 1000);
      const expected = table.batches.map((b) => referenceReport(b.data));
      const handle = exportStream(table);
      const { job } = await consumeInC(1, handle.stream, { threaded: true, flags: SP_HOLD });
      handle.release();
      return { job, expected };
    })();
    for (let i = 0; i < 20; i++) {
      Bun.gc(true);
      await Bun.sleep(1);
      new Float64Array(2000).fill(-1);
    }
    expect(counters().js_retained_exports).toBe(2);
    expect(takeAndConsume(job, 0)).toEqual(expected[0]);
    expect(takeAndConsume(job, 1)).toEqual(expected[1]);
    streamPeer.sp_job_free(job);
  });
});

describe("JS-produced streams over every gold file", () => {
  for (const file of goldStreams()) {
    if (unreadableByApacheArrow.includes(file.name)) {
      test(`${file.name}: apache-arrow cannot read it (covered by the raw-view import tests)`, () => {
        expect(() => readGold(file)).toThrow("Unrecognized type");
      });
      continue;
    }
    for (const { name, threaded } of threads) {
      test(`${file.name} ${name}: C receives apache-arrow's batches, zero-copy`, async () => {
        const expected = readGold(file);
        // The stream's source is another read of the same bytes: compare
        // checksums with `expected`, addresses with the source's batches.
        const source: RecordBatch[] = [];
        const reader = openGold(file);
        function* tap() {
          for (const batch of reader) {
            source.push(batch);
            yield batch;
          }
        }
        const schema = reader.open().schema;
        using handle = exportStream(tap(), { schema });
        const { job, summary } = await consumeInC(1, handle.stream, { threaded, flags: SP_HOLD });
        try {
          expect(summary.error).toBe(0);
          expect(summary.message).toBeNull();
          expect(summary.batches).toBe(expected.length);
          expect(summary.rows).toBe(expected.reduce((n, b) => n + b.numRows, 0));
          expect(summary.schemaChildren).toBe(schema.fields.length);
          for (let i = 0; i < expected.length; i++) {
            const got = takeAndConsume(job, i);
            // Buffers that export.ts makes afresh (variadic buffer sizes of
            // view types) differ between two exports of the same batch; every
            // other buffer is the source's own memory, at the same address.
            const ofSource = referenceReport(source[i].data);
            const again = referenceReport(source[i].data);
            const stable = ofSource.map((b, k) => b.address === again[k].address);
            expect(stable.filter((s) => !s).length).toBeLessThanOrEqual(schema.fields.length);
            expect(got.map((b, k) => (stable[k] ? b.address : "fresh"))).toEqual(ofSource.map((b, k) => (stable[k] ? b.address : "fresh")));
            expect(got.map((b) => [b.size, b.checksum])).toEqual(referenceReport(expected[i].data).map((b) => [b.size, b.checksum]));
          }
        } finally {
          streamPeer.sp_job_free(job);
        }
      });
    }
  }
});
