/**
 * A stream's planned batches are built straight from each pull's snapshot,
 * with no ImportedArray (arrow/stream_import.ts StreamRead.next, then
 * arrow/batch_converter.ts StreamBatchConverter.batch):
 * zero-copy (the views are the producer's buffers), each batch released
 * exactly once after its last view is collected and never while a batch
 * is held, and the general path (a transient handle) for the first batch
 * and for any batch the plan does not fit.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { ptr } from "bun:ffi";
import { Table, makeVector, type RecordBatch } from "apache-arrow";
import { ExportedStream, exportStream, recordBatches } from "../../ts/index.ts";
import { ImportedStream } from "../../ts/raw.ts";
import { StreamRead } from "../../ts/arrow/stream_import.ts";
import { streamPeer } from "../helpers/fixtures.ts";
import { collectUntil } from "../helpers/gc.ts";
import { pullInto } from "../../ts/native/batch_source.ts";
import { withCode } from "../helpers/errors.ts";
import { expectSettled } from "../helpers/settled.ts";

type Source = NonNullable<ReturnType<typeof streamPeer.sp_repeat_new>>;
const sources: Source[] = [];

/** A source of `batches` batches of struct<a: int32, b: float64 (every
 * 4th null)>, every batch over the same `rows`-row buffers. */
function repeatSource(batches: number, rows: number): Source {
  const source = streamPeer.sp_repeat_new(batches, rows)!;
  sources.push(source);
  return source;
}

/** A C stream of `source`'s batches, from the first. */
function streamOf(source: Source, validation?: "none" | "default"): ImportedStream {
  using slot = new ExportedStream("stream", "C stream slot");
  streamPeer.sp_repeat_stream(source, slot.stream);
  return ImportedStream.fromArrayStream(slot.stream, validation ? { validation } : {});
}

function repeatStream(batches: number, rows: number, validation?: "none" | "default"): { source: Source; stream: ImportedStream } {
  const source = repeatSource(batches, rows);
  return { source, stream: streamOf(source, validation) };
}

/** A read of `stream` on the JS thread (host memory, no copy). */
function readOf(stream: ImportedStream): StreamRead {
  return StreamRead.open("recordBatches", stream, {}, false, false);
}

/** Every batch `read.next` gives, until the end. */
function readAll(read: StreamRead): RecordBatch[] {
  const batches: RecordBatch[] = [];
  for (let batch = read.next(); batch !== null; batch = read.next()) batches.push(batch);
  return batches;
}

afterEach(async () => {
  expect(await collectUntil(() => sources.every((source) => streamPeer.sp_repeat_live_batches(source) === 0n), 200)).toBe(true);
  for (const source of sources.splice(0)) streamPeer.sp_repeat_free(source);
  await expectSettled();
});

describe("a stream's batches built without a handle", () => {
  test("every batch after the first is built from its snapshot, over the producer's own buffers", () => {
    const source = repeatSource(6, 100);
    // The producer's addresses, read raw from a batch of the same source.
    const probe = streamOf(source);
    const raw = probe.next()!;
    const expected = {
      a: raw.root.child(0).bufferAddress(1),
      validity: raw.root.child(1).bufferAddress(0),
      b: raw.root.child(1).bufferAddress(1),
    };
    raw.dispose();
    probe.release();
    expect(expected.a).not.toBe(0);
    const stream = streamOf(source);

    const read = readOf(stream);
    const batches = readAll(read);
    expect(batches.length).toBe(6);
    expect(read.converter.builtWithoutHandle).toBe(5);
    expect(stream.released).toBe(false);
    for (const batch of batches) {
      const a = batch.getChild("a")!.data[0];
      const b = batch.getChild("b")!.data[0];
      expect(Number(ptr(a.values))).toBe(expected.a);
      expect(Number(ptr(b.values))).toBe(expected.b);
      expect(Number(ptr(b.nullBitmap!))).toBe(expected.validity);
      expect(batch.numRows).toBe(100);
      expect(batch.getChild("a")!.get(42)).toBe(42);
      expect(batch.getChild("b")!.get(3)).toBeNull();
      expect(batch.getChild("b")!.get(5)).toBe(2.5);
      expect(batch.getChild("b")!.nullCount).toBe(25);
    }
    // All six are alive while held.
    expect(streamPeer.sp_repeat_live_batches(source)).toBe(6n);
    stream.release();
  });

  test("a batch's release runs once its last view is collected, never while the batch is held", async () => {
    const { source, stream } = repeatStream(5, 64);
    const read = readOf(stream);
    // Read in a function of its own, so that no stack slot of this one
    // still points at a batch when it is let go.
    const box: { held: RecordBatch | null } = { held: null };
    (() => {
      let i = 0;
      for (let batch = read.next(); batch !== null; batch = read.next()) if (i++ === 3) box.held = batch;
    })();
    expect(read.converter.builtWithoutHandle).toBe(4);
    stream.release();
    expect(await collectUntil(() => streamPeer.sp_repeat_live_batches(source) === 1n, 200)).toBe(true);
    // Still held: its memory is the producer's, intact.
    const values = () => [box.held!.getChild("a")!.get(63), box.held!.getChild("b")!.get(7)];
    expect(values()).toEqual([63, null]);
    for (let i = 0; i < 5; i++) {
      Bun.gc(true);
      expect(streamPeer.sp_repeat_live_batches(source)).toBe(1n);
    }
    box.held = null;
    expect(await collectUntil(() => streamPeer.sp_repeat_live_batches(source) === 0n, 200)).toBe(true);
    // Exactly once: a second release would take the count below zero.
    for (let i = 0; i < 5; i++) Bun.gc(true);
    expect(streamPeer.sp_repeat_live_batches(source)).toBe(0n);
  });

  test("batches whose buffers share memory go through a handle (which gives shared regions one view), with the same result", () => {
    const shared = Int32Array.from({ length: 8 }, (_, i) => i * 3);
    const batch = new Table({ a: makeVector(shared), b: makeVector(shared) }).batches[0];
    using exported = exportStream([batch, batch, batch], { as: "stream" });
    const stream = ImportedStream.fromArrayStream(exported.stream);
    const read = readOf(stream);
    const batches = readAll(read);
    expect(batches.length).toBe(3);
    expect(read.converter.builtWithoutHandle).toBe(0);
    for (const batch of batches) {
      expect([...batch.getChild("a")!.toArray()]).toEqual([...shared]);
      expect(ptr(batch.getChild("a")!.data[0].values)).toBe(ptr(shared));
      expect(ptr(batch.getChild("b")!.data[0].values)).toBe(ptr(shared));
    }
    stream.release();
  });

  test("zero-length batches are built without a handle too, with no views", () => {
    const { stream } = repeatStream(4, 0);
    const read = readOf(stream);
    const batches = readAll(read);
    expect(read.converter.builtWithoutHandle).toBe(3);
    expect(batches.map((batch) => batch.numRows)).toEqual([0, 0, 0, 0]);
    expect(batches[3].getChild("b")!.toArray().length).toBe(0);
    stream.release();
  });

  test("pullInto refuses anything but a PulledBatch before pulling: the stream is where it was", () => {
    const { stream } = repeatStream(3, 8);
    for (const bad of [null, undefined, 7, {}, { words: new Float32Array(8) }, { words: [1, 2] }]) {
      expect(() => pullInto(stream, bad as never)).toThrow(withCode("invalid_argument"));
    }
    const rows = [...recordBatches(stream)].map((batch) => batch.numRows);
    expect(rows).toEqual([8, 8, 8]);
    expect(stream.released).toBe(true);
  });
});
