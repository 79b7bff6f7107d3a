/**
 * Proof against the reference implementation for streams: Arrow
 * C++ (the pyarrow wheel's libarrow, through test/reference/arrow_shim.h)
 * on the other end of ArrowArrayStream and ArrowDeviceArrayStream, over
 * every gold file of both folders, in both directions.
 *
 * - C -> JS: Arrow C++'s ExportRecordBatchReader /
 *   ExportDeviceRecordBatchReader feed this library's importers
 *   (ImportedStream raw views, recordBatches, importTable; sync, and async on
 *   the stream's worker thread). Each batch is Arrow C++'s own memory (same
 *   layout and buffer addresses as its export of that batch) and equals
 *   apache-arrow's own read of the file. The two files apache-arrow cannot
 *   read (list-view, run-end encoded) are read as raw views.
 * - JS -> C: this library's exportStream (an ArrowArrayStream or an
 *   ArrowDeviceArrayStream, from a reader, an array, a Table, a generator
 *   or an async generator) is read by Arrow C++'s ImportRecordBatchReader /
 *   ImportDeviceRecordBatchReader, on the JS thread (get_next answered
 *   inside the FFI call) and on a consumer thread of its own, each batch
 *   validated (ValidateFull) and compared equal to Arrow C++'s own read.
 * - C -> C: an Arrow C++ stream relayed through this library (relay(), the
 *   adapters) to Arrow C++ again; this is how the two files apache-arrow
 *   cannot read travel JS -> C.
 * - Empty streams, streams failing midway (the message arrives intact),
 *   early close, both directions.
 *
 * Releases: every Arrow C++ stream is wrapped by stream_peer.c's
 * interceptor, which counts the stream's release and each batch's: exactly
 * once each. Our own exports are counted the same way on their way to
 * Arrow C++. Every test ends with every counter at zero and no live shim
 * handle, but for a batch only apache-arrow views hold (a stale stack
 * word keeps it until the next test: test/helpers/settled.ts), whose
 * release is then all that may be missing. The JS thread never blocks on
 * a shim thread: jobs are polled.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { read } from "bun:ffi";
import { readFileSync } from "node:fs";
import { RecordBatchReader, Table, type RecordBatch } from "apache-arrow";
import { ArrowArrayStreamLayout, ArrowDeviceArrayStreamLayout, DeviceType } from "../../ts/core/abi/layout.ts";
import { StreamError, exportStream, importTable, recordBatches, importSchema, importRecordBatch, type ExportedStream } from "../../ts/index.ts";
import { ImportedStream, type ImportedArray, type StreamKind } from "../../ts/raw.ts";
import { arrayStreamAsDeviceStream, deviceStreamAsArrayStream, structPointer } from "../../ts/raw.ts";
import { liveStreamSources } from "../helpers/js_live.ts";
import { compareBatches, unsharedBuffers } from "../helpers/arrow_compare.ts";
import {
  ArrowCppRead, ArrowStatusCode, arrowCppLive, consumeStream, consumeStreamOnThread, CSlot, exportStream as cppExportStream,
  ShimStatus, type StreamReport, type StreamSourceOptions,
} from "../helpers/arrow_cpp.ts";
import { CppBatches, readGold, schemaSignature, type Gold } from "../helpers/arrow_cpp_gold.ts";
import { streamPeer } from "../helpers/fixtures.ts";
import { collectUntil } from "../helpers/gc.ts";
import { expectSettled } from "../helpers/settled.ts";
import type { Counters } from "../../ts/diagnostics.ts";
import { goldFiles, rejectedByArrowCppValidation, unreadableByApacheArrow, type GoldFile } from "../helpers/shared_gold.ts";
import { withCode } from "../helpers/errors.ts";

const files: GoldFile[] = goldFiles();
const multiBatch = files.find((f) => f.label === "1.0.0-littleendian/generated_primitive")!;
const noBatches = files.find((f) => f.label === "1.0.0-littleendian/generated_primitive_no_batches")!;
const EIO = 5;
const EINVAL = 22;
/** A consumer thread gets this long (the longest gold file takes a few ms). */
const jobTimeoutMs = 20_000;

/** The counted releases a test expects once everything it handed to the
 * garbage collector was collected; checked after the test (below). */
let releasesAtEnd: { streams: number; batches: number } | null = null;

/** Batches of the test before that only apache-arrow views held at its
 * end (see the after-each below): each may be released during this one. */
let carried = 0;

beforeEach(() => {
  streamPeer.sp_reset_counts();
  releasesAtEnd = null;
});

afterEach(async () => {
  const want = releasesAtEnd;
  // An import of one of Arrow C++'s batches that only apache-arrow views
  // still hold (a stale stack word: test/helpers/settled.ts) holds back
  // that batch's release until the word is overwritten, in a later test:
  // each one left here may be one release short, and one more there.
  const released = (left: Partial<Counters>) => want === null || (releases().streams >= want.streams && releases().batches >= want.batches - (left.live_owners ?? 0));
  const left = await expectSettled({ liveStreamSources, arrowCppJobs: () => arrowCppLive().jobs }, { ready: released });
  const held = left.live_owners ?? 0;
  expect(arrowCppLive()).toEqual({ ipc: 0, held: 0, jobs: 0 });
  if (want) {
    const got = releases();
    const label = "each stream and each batch released exactly once, batches handed to the GC included";
    expect(got.streams, label).toBe(want.streams);
    const withinHeld = got.batches >= want.batches - held && got.batches <= want.batches + carried;
    expect(withinHeld ? want.batches : got.batches, label).toBe(want.batches);
  }
  carried = held;
  streamPeer.sp_reset_counts(); // counts are global to the process: leave none to the next file
});

const codeOf = (kind: StreamKind): 0 | 1 => (kind === "stream" ? 0 : 1);

/** Arrow C++ exports `gold`'s batches as a stream of `kind` into a new
 * slot, wrapped so that the stream's release and each batch's are counted
 * (sp_stream_releases, sp_array_releases). */
function cppStream(cpp: ArrowCppRead, kind: StreamKind, options: StreamSourceOptions = {}): CSlot {
  const slot = new CSlot(kind);
  try {
    cppExportStream(cpp, slot, options);
  } catch (error) {
    slot.free();
    throw error;
  }
  streamPeer.sp_intercept_stream_batches(codeOf(kind), slot.body);
  return slot;
}

/** Whether the stream in `slot` is released (or was moved out). */
function slotReleased(slot: CSlot): boolean {
  const at = slot.kind === "stream" ? ArrowArrayStreamLayout.fields.release : ArrowDeviceArrayStreamLayout.fields.release;
  return read.ptr(slot.body, at) === 0;
}

/** Moves Arrow C++'s stream in, validating every batch in full. */
function importCpp(slot: CSlot): ImportedStream {
  const stream = slot.kind === "stream"
    ? ImportedStream.fromArrayStream(structPointer("ArrowArrayStream", slot.body), { validation: "full" })
    : ImportedStream.fromDeviceArrayStream(structPointer("ArrowDeviceArrayStream", slot.body), { validation: "full" });
  expect(slotReleased(slot), "the stream was moved in").toBe(true);
  expect(stream.kind as string).toBe(slot.kind);
  expect(stream.deviceType).toBe(DeviceType.CPU);
  return stream;
}

/** Releases counted so far by the interceptor. */
function releases(): { streams: number; batches: number } {
  return { streams: Number(streamPeer.sp_stream_releases()), batches: Number(streamPeer.sp_array_releases()) };
}

/** Checks the counted releases are exactly `expected`: once each, never
 * more. For deterministic releases (dispose, a loop's end, Arrow C++'s
 * reader closing); batches handed to the GC are checked after the test,
 * through `releasesAtEnd`. */
async function expectReleases(expected: { streams: number; batches: number }, label: string): Promise<void> {
  await collectUntil(() => releases().streams >= expected.streams && releases().batches >= expected.batches, 20);
  const got = releases();
  // A batch the test before left to views may be released meanwhile.
  const batches = got.batches >= expected.batches && got.batches <= expected.batches + carried ? expected.batches : got.batches;
  expect({ streams: got.streams, batches }, `${label}: each stream and each batch released exactly once`).toEqual(expected);
}

/** A consumer's report that read every batch of the reference and found
 * each valid (or, for the files Arrow C++ rejects, as invalid as its own
 * read) and equal. */
function expectWholeStream(report: StreamReport, batches: number, label: string, deviceType: number = DeviceType.CPU): void {
  expect({ status: report.status, message: report.message }, label).toEqual({ status: ShimStatus.ok, message: "" });
  const failure = report.firstFailure ? `batch ${report.firstFailed}: ${JSON.stringify(report.firstFailure.messages)}` : "";
  expect({ batches: report.batches, passed: report.passed, ended: report.ended, schemaEqual: report.schemaEqual }, `${label} ${failure}`)
    .toEqual({ batches, passed: batches, ended: true, schemaEqual: 1 });
  expect(report.deviceType, label).toBe(deviceType);
}

/** Batch i of what came through: equal to apache-arrow's own read, and
 * over Arrow C++'s memory (no buffer of its own). */
function expectBatch(gold: Gold, reference: CppBatches, got: RecordBatch, i: number, label: string): void {
  expect(compareBatches(got, gold.own!.batches[i], `${label} batch ${i}`)).toEqual([]);
  expect(unsharedBuffers(got.data, reference.batches[i]!.data), `${label} batch ${i}: zero-copy`).toEqual([]);
}

/** recordBatches / recordBatches over Arrow C++'s stream; the batches
 * are dropped on return (for the GC to release). */
async function readAsRecordBatches(gold: Gold, reference: CppBatches, kind: StreamKind, pull: "sync" | "async"): Promise<void> {
  const label = `${gold.file.label} recordBatches ${kind} (${pull})`;
  const streams = releases().streams;
  using slot = cppStream(gold.cpp, kind);
  const got: RecordBatch[] = [];
  if (pull === "sync") for (const batch of recordBatches(importCpp(slot))) got.push(batch);
  else for await (const batch of recordBatches(importCpp(slot), { async: true })) got.push(batch);
  expect(releases().streams, `${label}: the stream released at the end`).toBe(streams + 1);
  expect(got.length, label).toBe(gold.cpp.batchCount);
  got.forEach((batch, i) => expectBatch(gold, reference, batch, i, label));
}

/** importTable / importTable over Arrow C++'s stream (an empty stream:
 * the schema alone). */
async function readAsTable(gold: Gold, reference: CppBatches, kind: StreamKind, pull: "sync" | "async"): Promise<void> {
  const label = `${gold.file.label} importTable ${kind} (${pull})`;
  const streams = releases().streams;
  using slot = cppStream(gold.cpp, kind);
  const table = pull === "sync" ? importTable(importCpp(slot)) : await importTable(importCpp(slot), { async: true });
  expect(releases().streams, `${label}: the stream released at the end`).toBe(streams + 1);
  expect(table.batches.length, label).toBe(gold.cpp.batchCount);
  table.batches.forEach((batch, i) => expectBatch(gold, reference, batch, i, label));
  expect(schemaSignature(table.schema), `${label}: the schema`).toEqual(schemaSignature(gold.own!.schema));
}

describe("C -> JS: Arrow C++'s stream exports read by this library's importers", () => {
  for (const file of files) {
    const readable = !unreadableByApacheArrow.has(file.label);
    test(`${file.label}: ImportedStream raw views, sync and async, both stream kinds${readable ? "; recordBatches and importTable equal apache-arrow's read" : ""}`, async () => {
      const gold = readGold(file);
      using cpp = gold.cpp;
      using reference = new CppBatches(cpp, readable);
      const n = cpp.batchCount;
      let expected = { streams: 0, batches: 0 };
      const counted = async (label: string) => {
        expected = { streams: expected.streams + 1, batches: expected.batches + n };
        await expectReleases(expected, `${file.label} ${label}`);
      };

      // Raw views, pulled on the JS thread (device stream) and on the
      // stream's worker thread (plain stream).
      for (const [kind, pull] of [["device_stream", "sync"], ["stream", "async"]] as const) {
        const label = `raw ${kind} (${pull})`;
        using slot = cppStream(cpp, kind);
        const stream = importCpp(slot);
        let i = 0;
        const check = (imported: ImportedArray) => {
          reference.expectSameMemory(imported, i, `${file.label} ${label} batch ${i}`);
          expect(imported.deviceType).toBe(DeviceType.CPU);
          expect(imported.deviceId).toBe(-1);
          if (readable) expectBatch(gold, reference, importRecordBatch(imported), i, `${file.label} ${label}`);
          expect(releases().batches, `${label}: nothing released while imported`).toBe(expected.batches + i);
          imported.dispose();
          i++;
        };
        if (pull === "sync") for (const imported of stream) check(imported);
        else for await (const imported of stream) check(imported);
        expect(i).toBe(n);
        expect(stream.released).toBe(true);
        await counted(label);
      }

      if (!readable) {
        // apache-arrow cannot hold these types: conversion is refused with a
        // typed error, and the stream and the batch are still released once.
        using slot = cppStream(cpp, "device_stream");
        const what = file.name.includes("list_view") ? "list-view" : "run-end encoded";
        expect(() => [...recordBatches(importCpp(slot))]).toThrow(withCode("unsupported"));
        expect(releases()).toEqual({ streams: expected.streams + 1, batches: expected.batches + 1 });
        expected = { streams: expected.streams + 1, batches: expected.batches + 1 };
        using again = cppStream(cpp, "stream");
        expect(() => [...recordBatches(importCpp(again))]).toThrow(what);
        expected = { streams: expected.streams + 1, batches: expected.batches + 1 };
        await expectReleases(expected, `${file.label} refused conversion`);
        // Copied into types it has ({ materialize: true }): same rows. The
        // batches' memory goes to the GC (checked after the test).
        using copied = cppStream(cpp, "stream");
        const table = importTable(importCpp(copied), { materialize: true });
        expect(table.batches.map((b) => b.numRows)).toEqual(Array.from({ length: n }, (_, i) => cpp.batchLength(i)));
        expect(releases().streams, "importTable { materialize: true } released the stream").toBe(expected.streams + 1);
        releasesAtEnd = { streams: expected.streams + 1, batches: expected.batches + n };
        return;
      }

      // apache-arrow RecordBatches and Tables: each batch's memory goes to
      // the GC, released once its views are collected (checked after the
      // test); each stream is released at the end of its read.
      for (const [kind, pull] of [["device_stream", "sync"], ["stream", "async"]] as const) {
        await readAsRecordBatches(gold, reference, kind, pull);
        await readAsTable(gold, reference, kind, pull);
      }
      releasesAtEnd = { streams: expected.streams + 4, batches: expected.batches + 4 * n };
    });
  }
});

/** The sources a JS-produced stream is made from, each read by Arrow C++
 * on one thread. */
type JsSource = { name: string; kind: StreamKind; thread: "JS" | "consumer"; make: (gold: Gold) => Promise<ExportedStream> };

function batchesOf(gold: Gold): RecordBatch[] {
  const own = gold.own!;
  return own.placeholder ? [own.placeholder] : own.batches;
}

const jsSources: JsSource[] = [
  { name: "a RecordBatchReader", kind: "stream", thread: "JS", make: async (gold) => exportStream(RecordBatchReader.from(gold.bytes), { as: "stream" }) },
  { name: "a RecordBatch[]", kind: "device_stream", thread: "JS", make: async (gold) => exportStream(batchesOf(gold)) },
  { name: "a Table", kind: "device_stream", thread: "consumer", make: async (gold) => exportStream(new Table(batchesOf(gold))) },
  {
    name: "a generator",
    kind: "stream",
    thread: "consumer",
    make: async (gold) => exportStream((function* () { yield* batchesOf(gold); })(), { as: "stream" }),
  },
  {
    name: "an async generator (exportStream)",
    kind: "device_stream",
    thread: "consumer",
    make: async (gold) => exportStream((async function* () {
      for (const batch of batchesOf(gold)) {
        await Bun.sleep(0);
        yield batch;
      }
    })(), { async: true }),
  },
];

/** Arrow C++ reads our stream at `handle` (moved in): on this thread, or
 * on a shim thread that JS polls. */
async function cppReads(handle: ExportedStream, reference: ArrowCppRead | null, thread: "JS" | "consumer", options: { maxBatches?: number } = {}): Promise<StreamReport> {
  const device = handle.kind === "device_stream";
  if (thread === "JS") return consumeStream(handle.stream, reference, { device, ...options });
  using job = consumeStreamOnThread(handle.stream, reference, { device, ...options });
  return await job.finish(jobTimeoutMs); // awaited here: `using` frees the job on return
}

describe("JS -> C: this library's exportStream read by Arrow C++'s ImportRecordBatchReader / ImportDeviceRecordBatchReader", () => {
  for (const file of files) {
    if (unreadableByApacheArrow.has(file.label)) {
      // Nothing in apache-arrow to export from: these travel JS -> C as raw
      // views relayed by this library (the C -> C tests below).
      test(`${file.label}: apache-arrow cannot read it; Arrow C++ can (relayed below)`, () => {
        const bytes = new Uint8Array(readFileSync(file.path));
        expect(() => [...RecordBatchReader.from(bytes)]).toThrow("Unrecognized type");
        using cpp = ArrowCppRead.fromBytes(bytes);
        expect(cpp.batchCount).toBe(3);
      });
      continue;
    }
    test(`${file.label}: five sources, both stream kinds, pulled on the JS thread and on an Arrow C++ thread`, async () => {
      const gold = readGold(file);
      using cpp = gold.cpp;
      // A stream without batches: apache-arrow's placeholder batch goes out,
      // so Arrow C++'s empty batch of the schema is the reference.
      using reference = cpp.batchCount === 0 ? cpp.emptyBatch() : cpp.slice(0, Number.MAX_SAFE_INTEGER);
      const n = reference.batchCount;
      let expected = { streams: 0, batches: 0 };
      for (const source of jsSources) {
        const label = `${file.label}: ${source.name} as ${source.kind}, on the ${source.thread} thread`;
        using handle = await source.make(gold);
        expect(handle.kind).toBe(source.kind);
        streamPeer.sp_intercept_stream_batches(codeOf(source.kind), handle.stream);
        const report = await cppReads(handle, reference, source.thread);
        expect(handle.streamReleased, `${label}: moved into Arrow C++`).toBe(true);
        expectWholeStream(report, n, label);
        if (rejectedByArrowCppValidation.has(file.label) && n > 0) {
          // Tolerated where Arrow C++ rejects its own read: the same verdict.
          expect(reference.referenceValidation(0), label).not.toBeNull();
        }
        expected = { streams: expected.streams + 1, batches: expected.batches + n };
        await expectReleases(expected, label);
        expect(liveStreamSources(), `${label}: the source was let go`).toBe(0);
      }
    });
  }
});

describe("C -> this library -> C: Arrow C++'s streams relayed unconverted to Arrow C++", () => {
  for (const file of files) {
    test(`${file.label}: relay() of both stream kinds, and the adapters, read by Arrow C++ on both threads`, async () => {
      using cpp = ArrowCppRead.fromBytes(readFileSync(file.path));
      const n = cpp.batchCount;
      const routes: { name: string; kind: StreamKind; out: StreamKind; through: (slot: CSlot) => ExportedStream; thread: "JS" | "consumer" }[] = [
        { name: "ImportedStream.fromDeviceArrayStream(...).relay()", kind: "device_stream", out: "device_stream", through: (s) => ImportedStream.fromDeviceArrayStream(structPointer("ArrowDeviceArrayStream", s.body)).relay(), thread: "consumer" },
        { name: "ImportedStream.fromArrayStream(...).relay()", kind: "stream", out: "stream", through: (s) => ImportedStream.fromArrayStream(structPointer("ArrowArrayStream", s.body)).relay(), thread: "JS" },
        { name: "arrayStreamAsDeviceStream", kind: "stream", out: "device_stream", through: (s) => arrayStreamAsDeviceStream(structPointer("ArrowArrayStream", s.body)), thread: "consumer" },
        { name: "deviceStreamAsArrayStream", kind: "device_stream", out: "stream", through: (s) => deviceStreamAsArrayStream(structPointer("ArrowDeviceArrayStream", s.body)), thread: "JS" },
      ];
      let expected = { streams: 0, batches: 0 };
      for (const route of routes) {
        const label = `${file.label}: ${route.name}`;
        using slot = cppStream(cpp, route.kind);
        using relayed = route.through(slot);
        expect(slotReleased(slot), `${label}: moved in`).toBe(true);
        expect(relayed.kind, label).toBe(route.out);
        const report = await cppReads(relayed, cpp, route.thread);
        expectWholeStream(report, n, label);
        expected = { streams: expected.streams + 1, batches: expected.batches + n };
        await expectReleases(expected, label);
      }
    });
  }

  test("batches pulled here first, the rest relayed: Arrow C++ reads what is left, each batch released once", async () => {
    using cpp = ArrowCppRead.fromBytes(readFileSync(multiBatch.path));
    using reference = new CppBatches(cpp, false);
    using slot = cppStream(cpp, "device_stream");
    const stream = ImportedStream.fromDeviceArrayStream(structPointer("ArrowDeviceArrayStream", slot.body));
    using first = stream.next()!;
    reference.expectSameMemory(first, 0, "pulled here");
    using relayed = stream.relay();
    expect(stream.released).toBe(true);
    const report = await cppReads(relayed, null, "consumer");
    expect(report).toMatchObject({ status: 0, batches: cpp.batchCount - 1, passed: cpp.batchCount - 1, ended: true });
    expect(releases()).toEqual({ streams: 1, batches: cpp.batchCount - 1 });
    first.dispose(); // pulled before the relay, outlives it
    expect(releases()).toEqual({ streams: 1, batches: cpp.batchCount });
  });
});

describe("empty streams", () => {
  test("an empty Arrow C++ stream: no batch, the schema (importSchema, importTable), released once; both kinds, sync and async", async () => {
    const gold = readGold(multiBatch);
    using cpp = gold.cpp;
    let streams = 0;
    for (const kind of ["stream", "device_stream"] as const) {
      using a = cppStream(cpp, kind, { batchCount: 0 });
      const raw = importCpp(a);
      expect(schemaSignature(importSchema(raw))).toEqual(schemaSignature(gold.own!.schema));
      expect(raw.next()).toBeNull();
      expect(raw.next(), "the end repeats").toBeNull();
      raw.release();
      using b = cppStream(cpp, kind, { batchCount: 0 });
      const table = importTable(importCpp(b));
      expect(table.numRows).toBe(0);
      expect(schemaSignature(table.schema)).toEqual(schemaSignature(gold.own!.schema));
      using c = cppStream(cpp, kind, { batchCount: 0 });
      const viaWorker = await importTable(importCpp(c), { async: true });
      expect(schemaSignature(viaWorker.schema)).toEqual(schemaSignature(gold.own!.schema));
      using d = cppStream(cpp, kind, { batchCount: 0 });
      const none: RecordBatch[] = [];
      for await (const batch of recordBatches(importCpp(d), { async: true })) none.push(batch);
      expect(none).toEqual([]);
      streams += 4;
      expect(releases()).toEqual({ streams, batches: 0 });
    }
  });

  test("an empty JS stream: Arrow C++ sees the schema, then the end; both kinds, both threads", async () => {
    const gold = readGold(multiBatch);
    using cpp = gold.cpp;
    const empty = readGold(noBatches);
    using emptyCpp = empty.cpp;
    let streams = 0;
    for (const kind of ["stream", "device_stream"] as const) {
      for (const thread of ["JS", "consumer"] as const) {
        const label = `${kind} on the ${thread} thread`;
        using fromArray = exportStream([], { schema: gold.own!.schema, as: kind });
        streamPeer.sp_intercept_stream_batches(codeOf(kind), fromArray.stream);
        expectWholeStream(await cppReads(fromArray, cpp, thread), 0, `[] with a schema, ${label}`);
        // A Table of no batch, for the no-batches gold file's schema.
        using table = exportStream(new Table(empty.own!.schema), { as: kind });
        streamPeer.sp_intercept_stream_batches(codeOf(kind), table.stream);
        expectWholeStream(await cppReads(table, emptyCpp, thread), 0, `an empty Table, ${label}`);
        streams += 2;
        expect(releases(), label).toEqual({ streams, batches: 0 });
      }
    }
  });
});

describe("streams that fail midway: the message arrives intact", () => {
  const text = `disk on fire ✓ ünïcödé ${"x".repeat(3000)} (after batch 1)`;

  test("Arrow C++'s failure reaches this library as StreamError: EIO and Arrow C++'s get_last_error text, intact (sync, async, recordBatches, importTable)", async () => {
    const gold = readGold(multiBatch);
    using cpp = gold.cpp;
    using reference = new CppBatches(cpp, true);
    // Arrow C++'s producer reports Status::ToString() through get_last_error.
    const producerMessage = `IOError: ${text}`;
    const expectFailure = (error: unknown, label: string) => {
      expect(error, label).toBeInstanceOf(StreamError);
      const failure = error as StreamError;
      expect(failure.errno, label).toBe(EIO);
      expect(failure.producerMessage, label).toBe(producerMessage);
      expect(failure.message.endsWith(producerMessage), `${label}: ${failure.message.slice(0, 120)}`).toBe(true);
    };
    let streams = 0;
    for (const kind of ["stream", "device_stream"] as const) {
      // Raw, sync: the first batch, then the error; the stream is released.
      {
        using slot = cppStream(cpp, kind, { batchCount: 1, failMessage: text });
        const stream = importCpp(slot);
        const got: number[] = [];
        const error = (() => {
          try {
            for (const imported of stream) {
              reference.expectSameMemory(imported, got.length, `${kind} before the failure`);
              got.push(imported.root.length);
              imported.dispose();
            }
          } catch (caught) {
            return caught;
          }
        })();
        expect(got).toEqual([cpp.batchLength(0)]);
        expectFailure(error, `${kind} sync`);
        expect(stream.released).toBe(true);
      }
      // Raw, async: the same through the worker thread.
      {
        using slot = cppStream(cpp, kind, { batchCount: 1, failMessage: text });
        const stream = importCpp(slot);
        (await stream.nextAsync())!.dispose();
        expectFailure(await stream.nextAsync().catch((e: unknown) => e), `${kind} async`);
        stream.release();
      }
      // apache-arrow: recordBatches and importTable(Async) throw it too.
      {
        using slot = cppStream(cpp, kind, { batchCount: 1, failMessage: text });
        const got: RecordBatch[] = [];
        const error = (() => {
          try {
            for (const batch of recordBatches(importCpp(slot))) got.push(batch);
          } catch (caught) {
            return caught;
          }
        })();
        expect(got.length).toBe(1);
        expectBatch(gold, reference, got[0], 0, `${kind} recordBatches before the failure`);
        expectFailure(error, `${kind} recordBatches`);
      }
      {
        using slot = cppStream(cpp, kind, { batchCount: 1, failMessage: text });
        expectFailure(await importTable(importCpp(slot), { async: true }).catch((e: unknown) => e), `${kind} importTable`);
        using again = cppStream(cpp, kind, { batchCount: 0, failMessage: text });
        expectFailure((() => { try { importTable(importCpp(again)); } catch (e) { return e; } })(), `${kind} importTable (fails at once)`);
      }
      streams += 5;
      expect(releases().streams, `${kind}: each failing stream released once`).toBe(streams);
    }
    // Each kind handed out batch 0 four times (the recordBatches one to the GC).
    releasesAtEnd = { streams, batches: 2 * 4 };
  });

  for (const thread of ["JS", "consumer"] as const) {
    test(`a JS source failing midway, read by Arrow C++ on the ${thread} thread: its message intact, its errno mapped to a StatusCode`, async () => {
      const gold = readGold(multiBatch);
      using cpp = gold.cpp;
      let closed = 0;
      const failing = (error: Error) => (function* () {
        try {
          yield gold.own!.batches[0];
          throw error;
        } finally {
          closed++;
        }
      })();
      const cases: { kind: StreamKind; error: Error; code: number }[] = [
        // Arrow C++ maps the errno of a failed get_next to its StatusCode.
        { kind: "stream", error: new Error(text), code: ArrowStatusCode.IOError }, // EIO, the default
        { kind: "device_stream", error: Object.assign(new Error(text), { errno: EINVAL }), code: ArrowStatusCode.Invalid },
      ];
      let streams = 0;
      for (const { kind, error, code } of cases) {
        const label = `${kind}, errno ${code === ArrowStatusCode.Invalid ? EINVAL : EIO}`;
        using handle = exportStream(failing(error), { as: kind });
        streamPeer.sp_intercept_stream_batches(codeOf(kind), handle.stream);
        const report = await cppReads(handle, cpp, thread);
        expect(report.status, label).toBe(ShimStatus.arrow_error);
        expect(report.message, `${label}: our get_last_error text, as Arrow C++'s Status message`).toBe(text);
        expect(report.statusCode, label).toBe(code);
        expect({ batches: report.batches, passed: report.passed, ended: report.ended }, label).toEqual({ batches: 1, passed: 1, ended: false });
        streams++;
        await expectReleases({ streams, batches: streams }, label);
      }
      expect(closed, "each source's generator was closed").toBe(2);
    });
  }

  test("an async source pulled by Arrow C++ on the JS thread: EDEADLK (35) and an explanation, never a hang; on a consumer thread it works", async () => {
    const gold = readGold(multiBatch);
    using cpp = gold.cpp;
    const source = () => (async function* () {
      for (const batch of gold.own!.batches) {
        await Bun.sleep(1);
        yield batch;
      }
    })();
    using onJs = exportStream(source(), { schema: gold.own!.schema, as: "stream" });
    const refused = await cppReads(onJs, cpp, "JS");
    expect(refused.status).toBe(ShimStatus.arrow_error);
    // Our get_last_error text, which Arrow C++ keeps as its message.
    expect(refused.message).toStartWith("get_next was called on the JS thread, but this stream's source is async");
    // EDEADLK (35) is no errno Arrow C++ maps specially: IOError.
    expect(refused.statusCode).toBe(ArrowStatusCode.IOError);
    expect(refused.batches).toBe(0);
    using onThread = exportStream(source(), { schema: gold.own!.schema, as: "stream" });
    expectWholeStream(await cppReads(onThread, cpp, "consumer"), cpp.batchCount, "async source on a consumer thread");
  });
});

describe("early close", () => {
  test("C -> JS: breaking out after the first batch releases Arrow C++'s stream once; the batch pulled outlives it (sync and async)", async () => {
    const gold = readGold(multiBatch);
    using cpp = gold.cpp;
    using reference = new CppBatches(cpp, true);
    let streams = 0;
    for (const kind of ["stream", "device_stream"] as const) {
      for (const pull of ["sync", "async"] as const) {
        const label = `${kind} ${pull}`;
        using slot = cppStream(cpp, kind);
        const stream = importCpp(slot);
        let kept: ImportedArray | null = null;
        if (pull === "sync") {
          for (const imported of stream) {
            kept = imported;
            break;
          }
        } else {
          // The worker reads one batch ahead: breaking while it may be in
          // flight still releases once (when its get_next returns).
          for await (const imported of stream) {
            kept = imported;
            break;
          }
        }
        streams++;
        expect(stream.released).toBe(true);
        await collectUntil(() => releases().streams === streams);
        expect(releases().streams, label).toBe(streams);
        // Arrow C++'s batch 0 is still held, and still its memory.
        reference.expectSameMemory(kept!, 0, label);
        expectBatch(gold, reference, importRecordBatch(kept!), 0, label);
        const before = releases().batches;
        kept!.dispose();
        expect(releases().batches, `${label}: the kept batch released at dispose`).toBe(before + 1);
      }
    }
    // Each early-closed stream handed out batch 0, and the async ones
    // possibly batch 1 read ahead: each released exactly once.
    await expectReleases({ streams, batches: releases().batches }, "early close");
    expect(releases().batches).toBeGreaterThanOrEqual(4);
    expect(releases().batches).toBeLessThanOrEqual(6);
  });

  for (const thread of ["JS", "consumer"] as const) {
    test(`JS -> C: Arrow C++ stops after one batch on the ${thread} thread; the stream is released once and the source closed`, async () => {
      const gold = readGold(multiBatch);
      using cpp = gold.cpp;
      let closed = 0;
      let pulled = 0;
      function* source() {
        try {
          for (const batch of gold.own!.batches) {
            pulled++;
            yield batch;
          }
        } finally {
          closed++;
        }
      }
      let streams = 0;
      for (const kind of ["stream", "device_stream"] as const) {
        using handle = exportStream(source(), { as: kind });
        streamPeer.sp_intercept_stream_batches(codeOf(kind), handle.stream);
        const report = await cppReads(handle, cpp, thread, { maxBatches: 1 });
        expect(report, kind).toMatchObject({ status: 0, batches: 1, passed: 1, ended: false, schemaEqual: 1 });
        streams++;
        await expectReleases({ streams, batches: streams }, kind);
        await collectUntil(() => closed === streams);
        expect(closed, `${kind}: the generator's finally ran`).toBe(streams);
      }
      // The source is pulled only for what is asked (schema from the first).
      expect(pulled).toBeLessThanOrEqual(2 * 2);
    });
  }
});
