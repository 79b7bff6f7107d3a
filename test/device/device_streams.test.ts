/**
 * Device streams: the stream interfaces carrying device arrays, under both
 * fake drivers (device memory mapped PROT_NONE: any host read crashes).
 *
 * - JS produces, C pulls: `exportStream` of `toDevice` arrays (moved whole
 *   into get_next's `out`, per-array device ids and sync events) or of
 *   RecordBatches copied to a device as they are pulled (`options.device`);
 *   the C consumer (test/fixtures/stream_peer.c) pulls on the JS thread
 *   and on its own, checks device_type / device_id / sync_event per array
 *   without reading device memory, and hands the arrays back; they are
 *   re-imported, copied to the host and compared with the source batches.
 * - C produces, JS pulls: a fake driver's C device stream
 *   (fake_gpu.h `fg_produce_stream`), iterated as raw device arrays and
 *   copied to the host; the apache-arrow conversions refuse it by device,
 *   or copy with `{ toHost: true }`.
 * - Relay of that C stream to the C consumer, and re-exports of a device
 *   array pulled from it, consumed by C: the producer's release runs once,
 *   and its sync event lives as long as any re-export.
 * Every test ends with the library's counters, the fakes' allocations,
 * events and streams, and the C peers' counts back at zero.
 */
import { afterEach, beforeAll, describe, expect, test } from "bun:test";
import { read, type Pointer } from "bun:ffi";
import {
  Field, Float64, Int32, Int64, RecordBatch, Schema, Struct, Table, Utf8, makeData, makeVector, vectorFromArray,
} from "apache-arrow";
import { fake, expectFakesSettled, isFake, stagingPool } from "../helpers/device.ts";
import { SP_CHECK_ERROR_TWICE, SP_HOLD, peer, streamPeer } from "../helpers/fixtures.ts";
import { collectUntil, runFromTimer } from "../helpers/gc.ts";
import { compareBatches } from "../helpers/arrow_compare.ts";
import { consumeInC } from "../helpers/streams.ts";
import { ArrowDeviceArrayLayout } from "../../ts/core/abi/layout.ts";
import { liveStreamSources } from "../helpers/js_live.ts";
import { DeviceType, ExportedArray, ExportedStream, StreamError, exportArray, exportStream, importTable, recordBatches, importRecordBatch } from "../../ts/index.ts";
import { ImportedArray, ImportedStream } from "../../ts/raw.ts";
import { deviceRuntime, toDevice, type DeviceKind } from "../../ts/device.ts";
import { relay } from "../../ts/raw.ts";
import { withCode } from "../helpers/errors.ts";
import { expectSettled } from "../helpers/settled.ts";

if (!isFake) throw new Error("test/device/device_streams.test.ts needs the fake drivers; scripts/gpu-suite.sh does not run it");

const kinds: DeviceKind[] = ["cuda", "rocm"];
const threads = [{ name: "on the JS thread", threaded: false }, { name: "on a consumer thread", threaded: true }];
const deviceTypes: Record<DeviceKind, number> = { cuda: DeviceType.CUDA, rocm: DeviceType.ROCM };
const pinnedTypes: Record<DeviceKind, number> = { cuda: DeviceType.CUDA_HOST, rocm: DeviceType.ROCM_HOST };
const copyName: Record<DeviceKind, string> = { cuda: "cuMemcpyHtoDAsync_v2", rocm: "hipMemcpyAsync" };
const allocName: Record<DeviceKind, string> = { cuda: "cuMemAlloc_v2", rocm: "hipMalloc" };
const other = (kind: DeviceKind): DeviceKind => (kind === "cuda" ? "rocm" : "cuda");
const EINVAL = 22;
const EIO = 5;

beforeAll(() => {
  // The fakes' C producer runs after the library's load (cuInit / hipInit).
  for (const kind of kinds) deviceRuntime(kind);
});

afterEach(async () => {
  for (const kind of kinds) {
    fake(kind).injectClear();
    fake(kind).pause(false);
  }
  peer.peer_wait_background();
  expectFakesSettled(kinds, await expectSettled({ liveStreamSources }));
  streamPeer.sp_reset_counts();
  peer.peer_reset_counts();
});

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

/** struct<id: int32, name: utf8, price: float64> batches with nulls. */
function sampleTable(batches: number, rows: number): Table {
  return new Table(Array.from({ length: batches }, (_, b) => {
    const id = makeVector(Int32Array.from({ length: rows }, (_, i) => b * 1000 + i));
    const name = vectorFromArray(Array.from({ length: rows }, (_, i) => (i % 3 === 1 ? null : `row-${b}-${i}`)), new Utf8());
    const price = vectorFromArray(Array.from({ length: rows }, (_, i) => (i % 4 === 2 ? null : (b * 1000 + i) / 8)), new Float64());
    return new Table({ id, name, price }).batches[0];
  }));
}

/** What the fakes' C producer (fake_gpu.h fg_produce) makes for `length`
 * rows: struct<ints: int32 (i*7, null when i%5==3), names: utf8 ("name-i",
 * null when i%4==1)>, both nullable. */
function producerBatch(length: number): RecordBatch {
  // The producer writes i*7 under null slots too; apache-arrow's toArray()
  // shows them, so build the values the same way.
  const validity = new Uint8Array(Math.ceil(length / 8));
  let nulls = 0;
  for (let i = 0; i < length; i++) {
    if (i % 5 === 3) nulls++;
    else validity[i >> 3] |= 1 << (i & 7);
  }
  const ints = makeData({ type: new Int32(), length, nullCount: nulls, nullBitmap: validity, data: Int32Array.from({ length }, (_, i) => i * 7) });
  const names = vectorFromArray(Array.from({ length }, (_, i) => (i % 4 === 1 ? null : `name-${i}`)), new Utf8());
  const schema = new Schema([new Field("ints", new Int32(), true), new Field("names", new Utf8(), true)]);
  return new RecordBatch(schema, makeData({ type: new Struct(schema.fields), length, nullCount: 0, children: [ints, names.data[0]] }));
}

function streamDeviceType(stream: ExportedStream): number {
  return read.i32(stream.stream, 0); // ArrowDeviceArrayStream.device_type
}

function deviceFields(array: Pointer) {
  return {
    deviceId: Number(read.i64(array, ArrowDeviceArrayLayout.fields.device_id)),
    deviceType: read.i32(array, ArrowDeviceArrayLayout.fields.device_type),
    syncEvent: read.ptr(array, ArrowDeviceArrayLayout.fields.sync_event),
  };
}

/** Held batch `i` of a C job, moved back into a JS import. */
function takeBack(job: Pointer, i: number): ImportedArray {
  using slot = new ExportedArray("device_array", "test slot");
  expect(streamPeer.sp_job_take(job, i, slot.schema, slot.array)).toBe(0);
  return ImportedArray.fromDeviceArray(slot.schema, slot.array);
}

/** An opaque device import: device memory, its event, no host access. */
function expectOnDevice(imported: ImportedArray, deviceType: number, deviceId: number): void {
  expect(imported.deviceType).toBe(deviceType);
  expect(imported.deviceId).toBe(deviceId);
  expect(imported.syncEvent).not.toBe(0);
  expect(imported.hostReadable).toBe(false);
  expect(() => imported.root.child(0).buffer(1)).toThrow(withCode("unsupported"));
}

/** `imported` copied to the host equals `expected` (apache-arrow's own). */
function expectHostCopyEquals(imported: ImportedArray, expected: RecordBatch, where: string): void {
  const host = imported.toHost();
  try {
    expect(host.deviceType).toBe(DeviceType.CPU);
    expect(compareBatches(importRecordBatch(host), expected, where)).toEqual([]);
  } finally {
    host.dispose();
  }
}

/** A fake driver's C device stream in a slot JS owns. */
function cDeviceStream(kind: DeviceKind, options: { memory?: number; batches: number; rows: number; devices?: number; failAt?: number }): ExportedStream<"device_stream"> {
  const slot = new ExportedStream("device_stream", `fake ${kind} device stream slot`);
  fake(kind).produceStream(options.memory ?? 0, options.batches, options.rows, options.devices ?? 2, options.failAt ?? -1, slot.stream);
  return slot;
}

// ---------------------------------------------------------------------------
// JS produces, C pulls
// ---------------------------------------------------------------------------

describe("ExportedArray items of CPU memory", () => {
  test("go into an ArrowArrayStream as ArrowArrays; an ArrowArray export is refused, and released", async () => {
    const table = sampleTable(3, 6);
    const items = table.batches.map((batch) => exportArray(batch));
    using stream = exportStream(items, { as: "stream" });
    const { job, summary } = await consumeInC(0, stream.stream, { threaded: true });
    streamPeer.sp_job_free(job);
    expect(summary).toMatchObject({ batches: 3, rows: 18, error: 0, endedTwice: true, syncEvents: 0 });
    expect(summary.lastValue).toBe(2000); // CPU memory: the consumer reads it
    expect(items.every((item) => item.released)).toBe(true);

    const plain = exportArray(table.batches[0], { as: "array" });
    using refused = exportStream([plain], { schema: table.schema });
    const r = await consumeInC(1, refused.stream, { threaded: false });
    streamPeer.sp_job_free(r.job);
    expect(r.summary).toMatchObject({ batches: 0, error: EINVAL });
    expect(r.summary.message).toContain('batch 0 is an ExportedArray of kind "array"');
    expect(plain.released).toBe(true);
  });
});

for (const kind of kinds) {
  describe(`${kind}: JS produces a device stream, C pulls`, () => {
    for (const { name, threaded } of threads) {
      test(`toDevice arrays on two devices are moved into get_next's out, ${name}`, async () => {
        const table = sampleTable(4, 50);
        const handles = table.batches.map((batch, i) => toDevice(batch, { device: kind, id: i % 2 }));
        for (const handle of handles) peer.peer_intercept_array(handle.array);
        const events = handles.map((handle) => deviceFields(handle.array).syncEvent);
        expect(fake(kind).liveAllocationsOn(0) + fake(kind).liveAllocationsOn(1) - stagingPool(kind).blocks).toBe(4); // less the pinned staging blocks
        using stream = exportStream(handles);
        expect(streamDeviceType(stream)).toBe(deviceTypes[kind]);
        streamPeer.sp_intercept_stream(1, stream.stream);
        const { job, summary } = await consumeInC(1, stream.stream, { threaded, flags: SP_HOLD });
        try {
          expect(summary).toMatchObject({
            schemaRc: 0, schemaFormat: "+s", schemaChildren: 3, batches: 4, rows: 200, error: 0, endedTwice: true,
            deviceTypeMismatches: 0, syncEvents: 4,
          });
          expect(summary.deviceIdsSeen).toBe(0b110); // device ids 0 and 1
          expect(summary.lastValue).toBe(-1); // the consumer never read device memory
          expect(streamPeer.sp_stream_releases()).toBe(1n);
          // Moved: each handle saw its array go, freed its slot, released nothing.
          expect(handles.every((handle) => handle.released)).toBe(true);
          expect(peer.peer_intercepted_array_releases()).toBe(0n);
          for (let i = 0; i < 4; i++) {
            using back = takeBack(job, i);
            expectOnDevice(back, deviceTypes[kind], i % 2);
            expect(back.syncEvent).toBe(events[i]); // the array's own event travelled with it
            expectHostCopyEquals(back, table.batches[i], `batch ${i}`);
          }
        } finally {
          streamPeer.sp_job_free(job);
        }
        expect(peer.peer_intercepted_array_releases()).toBe(4n); // each once, by its last holder
        expect(fake(kind).liveAllocations(0)).toBe(0);
      });
    }

    test("options.device copies each RecordBatch to the device as it is pulled", async () => {
      const table = sampleTable(3, 40);
      using stream = exportStream(table, { device: { device: kind, id: 1 } });
      expect(streamDeviceType(stream)).toBe(deviceTypes[kind]);
      expect(fake(kind).liveAllocations(0)).toBe(0); // nothing copied before a pull
      const { job, summary } = await consumeInC(1, stream.stream, { threaded: true, flags: SP_HOLD });
      try {
        expect(summary).toMatchObject({ batches: 3, rows: 120, error: 0, deviceTypeMismatches: 0, syncEvents: 3, endedTwice: true });
        expect(summary.deviceIdsSeen).toBe(0b100); // device 1
        expect(fake(kind).liveAllocationsOn(1) - stagingPool(kind).blocks).toBe(3); // less the pinned staging blocks
        for (let i = 0; i < 3; i++) {
          using back = takeBack(job, i);
          expectOnDevice(back, deviceTypes[kind], 1);
          expectHostCopyEquals(back, table.batches[i], `batch ${i}`);
        }
      } finally {
        streamPeer.sp_job_free(job);
      }
    });

    test("an async source of device arrays (schema from the first array's C schema), pulled on a consumer thread", async () => {
      const table = sampleTable(3, 30);
      let closed = false;
      async function* source() {
        try {
          for (const [i, batch] of table.batches.entries()) {
            await Bun.sleep(1);
            yield toDevice(batch, { device: kind, id: (i + 1) % 2 });
          }
        } finally {
          closed = true;
        }
      }
      using stream = await exportStream(source(), { async: true });
      expect(streamDeviceType(stream)).toBe(deviceTypes[kind]);
      const { job, summary } = await consumeInC(1, stream.stream, { threaded: true, flags: SP_HOLD });
      try {
        expect(summary).toMatchObject({ schemaRc: 0, schemaChildren: 3, batches: 3, rows: 90, error: 0, syncEvents: 3, endedTwice: true });
        expect(summary.deviceIdsSeen).toBe(0b110);
        for (let i = 0; i < 3; i++) {
          using back = takeBack(job, i);
          expectOnDevice(back, deviceTypes[kind], (i + 1) % 2);
          expectHostCopyEquals(back, table.batches[i], `batch ${i}`);
        }
      } finally {
        streamPeer.sp_job_free(job);
      }
      expect(closed).toBe(true);
    });

    test("read back by this library: importTable({ toHost }) and host-visible (pinned) streams converted in place", async () => {
      const table = sampleTable(3, 25);
      using onDevice = exportStream(table, { device: { device: kind } });
      const back = importTable(ImportedStream.fromDeviceArrayStream(onDevice.stream), { toHost: true });
      expect(back.batches.length).toBe(3);
      back.batches.forEach((batch, i) => expect(compareBatches(batch, table.batches[i], `batch ${i}`)).toEqual([]));
      using pinned = exportStream(table, { device: { device: kind, memory: "pinned" } });
      expect(streamDeviceType(pinned)).toBe(pinnedTypes[kind]);
      // Read in a function of its own, started from a timer: no batch
      // stays in this test's async frame, or in a stale word under it,
      // which the afterEach's collections could still see.
      const readPinned = async () => {
        const imported = ImportedStream.fromDeviceArrayStream(pinned.stream);
        let i = 0;
        for await (const batch of recordBatches(imported, { async: true })) {
          expect(compareBatches(batch, table.batches[i], `pinned batch ${i}`)).toEqual([]);
          i++;
        }
        return i;
      };
      expect(await runFromTimer(readPinned)).toBe(3);
    });

    test("a consumer that stops early closes the source; an unpulled read-ahead array is released", async () => {
      const table = sampleTable(4, 10);
      let produced = 0;
      let closed = false;
      function* source() {
        try {
          for (const batch of table.batches) {
            produced++;
            yield toDevice(batch, { device: kind });
          }
        } finally {
          closed = true;
        }
      }
      using stream = exportStream(source()); // reads the first array ahead, for its schema
      const { job, summary } = await consumeInC(1, stream.stream, { threaded: true, maxBatches: 2 });
      streamPeer.sp_job_free(job);
      expect(summary).toMatchObject({ batches: 2, error: 0 });
      await collectUntil(() => closed);
      expect(closed).toBe(true);
      expect(produced).toBe(2);
      expect(fake(kind).liveAllocations(0)).toBe(0);

      let unpulledClosed = false;
      function* another() {
        try {
          yield toDevice(table.batches[0], { device: kind });
          yield toDevice(table.batches[1], { device: kind });
        } finally {
          unpulledClosed = true;
        }
      }
      const never = exportStream(another());
      expect(fake(kind).liveAllocations(0)).toBe(1); // the read-ahead
      never.release(); // no consumer took it
      await collectUntil(() => unpulledClosed);
      expect(unpulledClosed).toBe(true);
      expect(fake(kind).liveAllocations(0)).toBe(0);
    });
  });

  describe(`${kind}: JS-produced device streams refuse what does not fit, with typed errors`, () => {
    test("an array on another device type fails the stream; the array is released once, by the stream", async () => {
      const table = sampleTable(2, 10);
      const first = toDevice(table.batches[0], { device: kind });
      const stranger = toDevice(table.batches[1], { device: other(kind) });
      peer.peer_intercept_array(first.array);
      peer.peer_intercept_array(stranger.array);
      using stream = exportStream([first, stranger]);
      const { job, summary } = await consumeInC(1, stream.stream, { threaded: false, flags: SP_CHECK_ERROR_TWICE });
      streamPeer.sp_job_free(job);
      const theirs = other(kind) === "cuda" ? "CUDA (2)" : "ROCM (10)";
      const ours = kind === "cuda" ? "CUDA (2)" : "ROCM (10)";
      expect(summary).toMatchObject({
        batches: 1, error: EINVAL, repeatError: EINVAL, repeatSameMessage: true,
        message: `the array is on device ${theirs} id 0, but this ArrowDeviceArrayStream's device_type is ${ours}`,
      });
      expect(stranger.released).toBe(true);
      expect(peer.peer_intercepted_array_releases()).toBe(2n); // the first by C, the stranger by the stream
      expect(fake(other(kind)).liveAllocations(0)).toBe(0);
    });

    test("an array of another schema, and a RecordBatch without options.device, fail the stream", async () => {
      const table = sampleTable(1, 10);
      const otherShape = new Table({ id: makeVector(BigInt64Array.from([1n, 2n])) }).batches[0];
      expect(otherShape.schema.fields[0].type).toBeInstanceOf(Int64);
      using mismatched = exportStream([toDevice(table.batches[0], { device: kind }), toDevice(otherShape, { device: kind })]);
      const a = await consumeInC(1, mismatched.stream, { threaded: true });
      streamPeer.sp_job_free(a.job);
      expect(a.summary).toMatchObject({ batches: 1, error: EINVAL });
      expect(a.summary.message).toBe("the array's schema does not match the stream's: the root has 1 children, the stream's has 3");

      using mixed = exportStream([toDevice(table.batches[0], { device: kind }), table.batches[0]], { schema: table.schema });
      const b = await consumeInC(1, mixed.stream, { threaded: false });
      streamPeer.sp_job_free(b.job);
      expect(b.summary).toMatchObject({ batches: 1, error: EINVAL });
      expect(b.summary.message).toContain(`batch 1 is an apache-arrow RecordBatch (CPU memory), but the stream's device_type is ${kind === "cuda" ? "CUDA" : "ROCM"}: pass options.device`);
    });

    test("an async source with options.schema needs the device type: without it the stream is CPU and the first array is refused", async () => {
      const table = sampleTable(2, 5);
      async function* source() {
        for (const batch of table.batches) yield toDevice(batch, { device: kind });
      }
      using cpu = exportStream(source(), { schema: table.schema });
      expect(streamDeviceType(cpu)).toBe(DeviceType.CPU);
      const refused = await consumeInC(1, cpu.stream, { threaded: true });
      streamPeer.sp_job_free(refused.job);
      expect(refused.summary).toMatchObject({ batches: 0, error: EINVAL });
      expect(refused.summary.message).toContain("but this ArrowDeviceArrayStream's device_type is CPU (1)");

      using typed = exportStream(source(), { schema: table.schema, deviceType: deviceTypes[kind] });
      const { job, summary } = await consumeInC(1, typed.stream, { threaded: true });
      streamPeer.sp_job_free(job);
      expect(summary).toMatchObject({ batches: 2, rows: 10, error: 0, syncEvents: 2, deviceTypeMismatches: 0 });
    });

    test("bad options throw at export, before anything streams", () => {
      const table = sampleTable(1, 5);
      expect(() => exportStream(table, { as: "stream", device: { device: kind } })).toThrow(withCode("invalid_argument"));
      expect(() => exportStream(table, { as: "stream", device: { device: kind } })).toThrow("an ArrowArrayStream carries CPU arrays only");
      expect(() => exportStream(table, { deviceType: 0 })).toThrow(withCode("invalid_argument"));
      const handles = [toDevice(table.batches[0], { device: kind })];
      expect(() => exportStream(handles, { as: "stream" })).toThrow(withCode("invalid_argument"));
      expect(handles[0].released).toBe(false); // an array source's items stay the caller's until pulled
      handles[0].release();
      const gone = toDevice(table.batches[0], { device: kind });
      gone.release();
      expect(() => exportStream([gone])).toThrow("released");
    });

    test("a device copy that fails while pulling fails the stream with the driver's error; nothing leaks", async () => {
      const table = sampleTable(3, 8);
      using stream = exportStream(table, { device: { device: kind } });
      // The second batch's one copy (its device memory is a range of a
      // pooled block, which the first batch allocated).
      fake(kind).inject(copyName[kind], 700, 1);
      const { job, summary } = await consumeInC(1, stream.stream, { threaded: true, flags: SP_CHECK_ERROR_TWICE });
      streamPeer.sp_job_free(job);
      expect(summary.batches).toBe(1);
      expect(summary.error).toBeGreaterThan(0);
      expect(summary.repeatError).toBe(summary.error);
      expect(summary.message).toContain(copyName[kind]);
      expect(fake(kind).liveAllocations(0)).toBe(0);
    });
  });

  // -------------------------------------------------------------------------
  // C produces, JS pulls
  // -------------------------------------------------------------------------

  describe(`${kind}: C produces a device stream, JS pulls`, () => {
    test("raw device arrays with per-array device ids, each copied to the host", () => {
      using slot = cDeviceStream(kind, { batches: 4, rows: 20 });
      streamPeer.sp_intercept_stream_arrays(slot.stream);
      const stream = ImportedStream.fromDeviceArrayStream(slot.stream);
      expect(stream.deviceType).toBe(deviceTypes[kind]);
      let i = 0;
      for (const imported of stream) {
        using held = imported;
        expectOnDevice(held, deviceTypes[kind], i % 2);
        expect(fake(kind).producedLive()).toBe(1);
        expectHostCopyEquals(held, producerBatch(20 + i), `batch ${i}`);
        i++;
      }
      expect(i).toBe(4);
      expect(stream.released).toBe(true);
      expect(fake(kind).producedLive()).toBe(0);
      expect(streamPeer.sp_handed_arrays()).toBe(4n);
      expect(streamPeer.sp_handed_array_releases()).toBe(4n);
      expect(streamPeer.sp_stream_releases()).toBe(1n);
      expect(fake(kind).streamsLive()).toBe(0);
    });

    test("pulled on the stream's worker thread (for await): the producer runs there", async () => {
      using slot = cDeviceStream(kind, { batches: 3, rows: 12, devices: 2 });
      let i = 0;
      for await (const imported of ImportedStream.fromDeviceArrayStream(slot.stream)) {
        using held = imported;
        expectOnDevice(held, deviceTypes[kind], i % 2);
        expectHostCopyEquals(held, producerBatch(12 + i), `batch ${i}`);
        i++;
      }
      expect(i).toBe(3);
      expect(fake(kind).streamsLive()).toBe(0);
    });

    test("recordBatches / importTable refuse a device stream by name before pulling, and release it once", async () => {
      const device = kind === "cuda" ? "CUDA (2)" : "ROCM (10)";
      const attempts: [string, (s: ImportedStream) => unknown][] = [
        ["recordBatches", (s) => [...recordBatches(s)]],
        ["importTable", (s) => importTable(s)],
        ["recordBatches", async (s) => { for await (const _ of recordBatches(s, { async: true })) { /* never */ } }],
        ["importTable", (s) => importTable(s, { async: true })],
      ];
      for (const [what, attempt] of attempts) {
        using slot = cDeviceStream(kind, { batches: 2, rows: 5 });
        streamPeer.sp_intercept_stream_arrays(slot.stream);
        const stream = ImportedStream.fromDeviceArrayStream(slot.stream);
        let error: unknown;
        try {
          await attempt(stream);
        } catch (e) {
          error = e;
        }
        expect(error).toEqual(withCode("unsupported"));
        expect((error as Error).message).toBe(`${what}: the stream's device_type is ${device}, memory the host cannot read; pass { toHost: true } to copy each batch to the host, or iterate the ImportedStream for raw device arrays`);
        expect(stream.released).toBe(true);
      }
      expect(streamPeer.sp_handed_arrays()).toBe(0n); // no batch was pulled
      expect(streamPeer.sp_stream_releases()).toBe(4n);
      expect(fake(kind).streamsLive()).toBe(0);
    });

    test("{ toHost: true } copies each batch, releasing the device batch at once", async () => {
      using slot = cDeviceStream(kind, { batches: 3, rows: 30 });
      streamPeer.sp_intercept_stream_arrays(slot.stream);
      const table = importTable(ImportedStream.fromDeviceArrayStream(slot.stream), { toHost: true });
      expect(fake(kind).producedLive()).toBe(0);
      expect(streamPeer.sp_handed_array_releases()).toBe(3n);
      expect(table.batches.length).toBe(3);
      table.batches.forEach((batch, i) => expect(compareBatches(batch, producerBatch(30 + i), `batch ${i}`)).toEqual([]));

      using again = cDeviceStream(kind, { batches: 2, rows: 7 });
      let i = 0;
      for await (const batch of recordBatches(ImportedStream.fromDeviceArrayStream(again.stream), { async: true, toHost: true })) {
        expect(compareBatches(batch, producerBatch(7 + i), `async batch ${i}`)).toEqual([]);
        // This batch's device memory is gone; the worker may hold the next
        // (it reads one batch ahead).
        expect(fake(kind).producedLive()).toBeLessThanOrEqual(1);
        i++;
      }
      expect(i).toBe(2);
      expect(fake(kind).producedLive()).toBe(0);
      using none = cDeviceStream(kind, { batches: 0, rows: 1 });
      const empty = importTable(ImportedStream.fromDeviceArrayStream(none.stream), { toHost: true });
      expect(empty.numRows).toBe(0);
      expect(empty.schema.fields.map((f) => f.name)).toEqual(["ints", "names"]);
    });

    test("a host-visible (pinned) C device stream converts in place, no toHost needed", () => {
      using slot = cDeviceStream(kind, { memory: 1, batches: 3, rows: 9 });
      const stream = ImportedStream.fromDeviceArrayStream(slot.stream);
      expect(stream.deviceType).toBe(pinnedTypes[kind]);
      const batches = [...recordBatches(stream)];
      expect(batches.length).toBe(3);
      batches.forEach((batch, i) => expect(compareBatches(batch, producerBatch(9 + i), `batch ${i}`)).toEqual([]));
    });

    test("a producer failure is a StreamError with its errno and message; a driver failure too; nothing leaks", () => {
      using slot = cDeviceStream(kind, { batches: 4, rows: 6, failAt: 2 });
      const stream = ImportedStream.fromDeviceArrayStream(slot.stream);
      stream.next()!.dispose();
      stream.next()!.dispose();
      let error: unknown;
      try {
        stream.next();
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(StreamError);
      expect((error as StreamError).errno).toBe(EIO);
      expect((error as StreamError).producerMessage).toBe("fake device stream: batch 2 failed on purpose");
      stream.release();

      using broken = cDeviceStream(kind, { batches: 2, rows: 6 });
      const failing = ImportedStream.fromDeviceArrayStream(broken.stream);
      fake(kind).inject(allocName[kind], 2, 2); // the first batch's third buffer
      expect(() => failing.next()).toThrow("fake device stream: producing batch 0 on device 0 failed at step 3");
      failing.release();
      expect(fake(kind).producedLive()).toBe(0);
      expect(fake(kind).streamsLive()).toBe(0);
    });
  });

  // -------------------------------------------------------------------------
  // Relay and re-export
  // -------------------------------------------------------------------------

  describe(`${kind}: relays and re-exports of device streams`, () => {
    for (const { name, threaded } of threads) {
      test(`the C device stream relayed C to C, pulled ${name}, never read`, async () => {
        using slot = cDeviceStream(kind, { batches: 4, rows: 10 });
        streamPeer.sp_intercept_stream_arrays(slot.stream);
        using relayed = ImportedStream.fromDeviceArrayStream(slot.stream).relay();
        expect(streamDeviceType(relayed)).toBe(deviceTypes[kind]);
        const { job, summary } = await consumeInC(1, relayed.stream, { threaded, flags: SP_HOLD });
        try {
          expect(summary).toMatchObject({
            schemaRc: 0, schemaChildren: 2, batches: 4, rows: 46, error: 0, endedTwice: true, deviceTypeMismatches: 0, syncEvents: 4,
          });
          expect(summary.deviceIdsSeen).toBe(0b110);
          expect(summary.lastValue).toBe(-1);
          expect(streamPeer.sp_stream_releases()).toBe(1n);
          expect(fake(kind).streamsLive()).toBe(0);
          expect(fake(kind).producedLive()).toBe(4); // the batches outlive the stream
          // Batch 0 relayed once more, array by array, to a C holder that
          // releases it on another thread.
          {
            using taken = new ExportedArray("device_array", "test slot");
            expect(streamPeer.sp_job_take(job, 0, taken.schema, taken.array)).toBe(0);
            const before = deviceFields(taken.array);
            using onward = relay(taken.schema, taken.array);
            expect(deviceFields(onward.array)).toEqual(before);
            const held = peer.peer_take(onward.schema, onward.array)!;
            expect(streamPeer.sp_handed_array_releases()).toBe(0n);
            peer.peer_release_held_on_thread(held);
            expect(streamPeer.sp_handed_array_releases()).toBe(1n);
          }
          for (let i = 1; i < 4; i++) {
            using back = takeBack(job, i);
            expectOnDevice(back, deviceTypes[kind], i % 2);
            expectHostCopyEquals(back, producerBatch(10 + i), `batch ${i}`);
          }
        } finally {
          streamPeer.sp_job_free(job);
        }
        expect(streamPeer.sp_handed_array_releases()).toBe(4n);
        expect(fake(kind).producedLive()).toBe(0);
      });
    }

    test("re-exports of a pulled device array, consumed by C: one producer release, the sync event alive until the last", async () => {
      using slot = cDeviceStream(kind, { batches: 2, rows: 16 });
      streamPeer.sp_intercept_stream_arrays(slot.stream);
      const stream = ImportedStream.fromDeviceArrayStream(slot.stream);
      stream.next()!.dispose();
      const pulled = stream.next()!; // batch 1, on device 1
      stream.release(); // the stream goes; the batch stays
      expect(fake(kind).streamsLive()).toBe(0);
      expect(streamPeer.sp_handed_array_releases()).toBe(1n);
      const event = pulled.syncEvent;
      expect(event).not.toBe(0);

      const whole = pulled.reexport();
      const column = pulled.reexport({ child: 1 });
      const sliced = pulled.reexport({ slice: { offset: 3, length: 5 } });
      const forJs = pulled.reexport();
      for (const copy of [whole, column, sliced, forJs]) {
        expect(deviceFields(copy.array)).toEqual({ deviceId: 1, deviceType: deviceTypes[kind], syncEvent: event });
      }
      pulled.dispose(); // the re-exports hold the producer's array now
      expect(fake(kind).producedLive()).toBe(1);
      expect(fake(kind).liveEvents()).toBe(1); // the producer's event

      const heldWhole = peer.peer_take(whole.schema, whole.array)!;
      const heldColumn = peer.peer_take(column.schema, column.array)!;
      const heldSliced = peer.peer_take(sliced.schema, sliced.array)!;
      for (const copy of [whole, column, sliced]) copy.release(); // slots only: C holds the structs
      peer.peer_release_held_on_thread(heldColumn);
      expect(peer.peer_release_held_later(heldSliced, 10)).toBe(0);
      peer.peer_release_held(heldWhole);
      peer.peer_wait_background();
      expect(streamPeer.sp_handed_array_releases()).toBe(1n); // batch 1 still alive: JS holds one
      expect(fake(kind).liveEvents()).toBe(1);

      // The last re-export, read back after every other holder let go:
      // toHost waits on the producer's event, which is still valid.
      const back = ImportedArray.fromDeviceArray(forJs.schema, forJs.array);
      forJs.release();
      expectOnDevice(back, deviceTypes[kind], 1);
      expectHostCopyEquals(back, producerBatch(17), "re-exported batch 1");
      expect(fake(kind).liveEvents()).toBe(1);
      back.dispose();
      expect(streamPeer.sp_handed_array_releases()).toBe(2n); // exactly once per batch
      expect(fake(kind).producedLive()).toBe(0);
      expect(fake(kind).liveEvents()).toBe(0);
    });
  });
}

// ---------------------------------------------------------------------------
// Copies issued ahead (options.copyAhead): the copy of batch n+1 is on the
// device's stream while the consumer uses batch n.
// ---------------------------------------------------------------------------

for (const kind of kinds) {
  describe(`${kind}: a device stream copies batches ahead`, () => {
    /** Device allocations (staging blocks are pinned, not counted). */
    const onDevice = () => fake(kind).liveAllocations(0);

    /** A sync source of `table`'s batches that counts its pulls and its close. */
    function counted(table: Table) {
      const seen = { pulls: 0, closed: 0 };
      function* source() {
        try {
          for (const batch of table.batches) {
            seen.pulls++;
            yield batch;
          }
        } finally {
          seen.closed++;
        }
      }
      return { seen, source: source() };
    }

    test("copyAhead 2: each get_next hands out one batch with two more copies in flight; each read waits for its copies", () => {
      const table = sampleTable(5, 16);
      const { seen, source } = counted(table);
      using exported = exportStream(source, { schema: table.schema, device: { device: kind }, copyAhead: 2 });
      const stream = ImportedStream.fromDeviceArrayStream(exported.stream);
      const held = [3, 3, 3, 2, 1]; // batch n + the copies ahead of it, until the source ends
      for (let i = 0; i < 5; i++) {
        fake(kind).pause(true); // no copy completes until resumed
        const copiesBefore = fake(kind).copies();
        const batch = stream.next()!;
        expect(seen.pulls).toBe(Math.min(5, i + 3));
        expect(onDevice()).toBe(held[i]);
        expect(fake(kind).liveEvents()).toBe(held[i]); // one event per batch
        expect(fake(kind).copies()).toBe(copiesBefore); // none completed while paused
        // This get_next issued the copies of batch i + 2 (until the source
        // ends); they are queued, not done, when it returns.
        if (i + 2 < 5) expect(fake(kind).pending()).toBeGreaterThan(0);
        else expect(fake(kind).pending()).toBe(0);
        expectOnDevice(batch, deviceTypes[kind], 0);
        // Read while its copies are still queued: toHost waits on the
        // batch's event on its stream, then reads what the copy wrote.
        fake(kind).resumeAfterMs(20);
        expectHostCopyEquals(batch, table.batches[i], `batch ${i}`);
        batch.dispose();
      }
      expect(stream.next()).toBeNull();
      stream.release();
      expect(seen).toEqual({ pulls: 5, closed: 1 });
      expect(onDevice()).toBe(0);
    });

    test("copyAhead 0 copies each batch only when it is pulled", () => {
      const table = sampleTable(3, 8);
      const { seen, source } = counted(table);
      using exported = exportStream(source, { schema: table.schema, device: { device: kind }, copyAhead: 0 });
      const stream = ImportedStream.fromDeviceArrayStream(exported.stream);
      for (let i = 0; i < 3; i++) {
        using batch = stream.next()!;
        expect(seen.pulls).toBe(i + 1);
        expect(onDevice()).toBe(1);
        expectHostCopyEquals(batch, table.batches[i], `batch ${i}`);
      }
      expect(stream.next()).toBeNull();
      stream.release();
      expect(seen.closed).toBe(1);
    });

    test("the default copies one batch ahead; releasing the stream releases the copies ahead once each", async () => {
      const table = sampleTable(6, 8);
      const { seen, source } = counted(table);
      using exported = exportStream(source, { schema: table.schema, device: { device: kind } });
      const stream = ImportedStream.fromDeviceArrayStream(exported.stream);
      const first = stream.next()!;
      expect(seen.pulls).toBe(2);
      expect(onDevice()).toBe(2);
      expectHostCopyEquals(first, table.batches[0], "batch 0");
      stream.release(); // the copy of batch 1 was never handed out
      expect(await collectUntil(() => onDevice() === 1)).toBe(true);
      expect(seen).toEqual({ pulls: 2, closed: 1 });
      first.dispose();
      expect(onDevice()).toBe(0);
      expect(fake(kind).liveEvents()).toBe(0);
    });

    test("a source error met while reading ahead ends the stream after the batches before it", () => {
      const table = sampleTable(3, 8);
      let closed = 0;
      function* source() {
        try {
          yield table.batches[0];
          yield table.batches[1];
          throw new RangeError("source broke after two batches");
        } finally {
          closed++;
        }
      }
      using exported = exportStream(source(), { schema: table.schema, device: { device: kind } });
      const stream = ImportedStream.fromDeviceArrayStream(exported.stream);
      for (let i = 0; i < 2; i++) {
        using batch = stream.next()!;
        expectHostCopyEquals(batch, table.batches[i], `batch ${i}`);
      }
      expect(() => stream.next()).toThrow(StreamError);
      expect(() => stream.next()).toThrow("source broke after two batches");
      stream.release();
      expect(closed).toBe(1);
      expect(onDevice()).toBe(0);
    });

    test("an async source is read ahead after each answer, while the consumer runs", async () => {
      const table = sampleTable(6, 8);
      const seen = { pulls: 0, closed: 0 };
      async function* source() {
        try {
          for (const batch of table.batches) {
            await Bun.sleep(1);
            seen.pulls++;
            yield batch;
          }
        } finally {
          seen.closed++;
        }
      }
      using exported = exportStream(source(), { schema: table.schema, device: { device: kind }, copyAhead: 2 });
      const stream = ImportedStream.fromDeviceArrayStream(exported.stream);
      const readBack = async () => {
        let i = 0;
        for await (const batch of stream) {
          if (i === 0) {
            // Batch 0 handed out, batch 1 pulled by the import's own
            // read-ahead, and two copies ahead of that one.
            expect(await collectUntil(() => seen.pulls === 4)).toBe(true);
            expect(onDevice()).toBe(4);
          }
          expectHostCopyEquals(batch, table.batches[i], `batch ${i}`);
          batch.dispose();
          i++;
        }
        return i;
      };
      expect(await readBack()).toBe(6);
      expect(seen).toEqual({ pulls: 6, closed: 1 });
      expect(onDevice()).toBe(0);
    });

    test("recordBatches / importTable with { toHost: true } copy the batch read ahead on the worker, while JS uses the last", async () => {
      using slot = cDeviceStream(kind, { batches: 4, rows: 12 });
      streamPeer.sp_intercept_stream_arrays(slot.stream);
      let i = 0;
      for await (const batch of recordBatches(ImportedStream.fromDeviceArrayStream(slot.stream), { async: true, toHost: true })) {
        // The worker pulls batch i + 1, copies it to the host and releases
        // its device array, with no call from JS.
        if (i < 3) expect(await collectUntil(() => streamPeer.sp_handed_array_releases() === BigInt(i + 2))).toBe(true);
        expect(fake(kind).producedLive()).toBe(0);
        expect(compareBatches(batch, producerBatch(12 + i), `batch ${i}`)).toEqual([]);
        i++;
      }
      expect(i).toBe(4);
      expect(streamPeer.sp_handed_array_releases()).toBe(4n); // once each

      using again = cDeviceStream(kind, { batches: 3, rows: 5 });
      const table = await importTable(ImportedStream.fromDeviceArrayStream(again.stream), { async: true, toHost: true });
      table.batches.forEach((batch, b) => expect(compareBatches(batch, producerBatch(5 + b), `table batch ${b}`)).toEqual([]));
      expect(fake(kind).producedLive()).toBe(0);
    });

    test("a copy to the host that fails on the worker rejects the pull with the driver's error; the device batch is released once", async () => {
      // The copy's first driver call (the fake producer never waits on events).
      const wait = kind === "cuda" ? "cuStreamWaitEvent" : "hipStreamWaitEvent";
      using slot = cDeviceStream(kind, { batches: 3, rows: 6 });
      streamPeer.sp_intercept_stream_arrays(slot.stream);
      fake(kind).inject(wait, 700);
      const read = async () => {
        for await (const _ of recordBatches(ImportedStream.fromDeviceArrayStream(slot.stream), { async: true, toHost: true })) { /* fails first */ }
      };
      await expect(read()).rejects.toThrow(wait);
      fake(kind).injectClear();
      expect(fake(kind).producedLive()).toBe(0);
      expect(streamPeer.sp_handed_array_releases()).toBe(1n);
    });

    test("copyAhead is an integer in 0..64", () => {
      const table = sampleTable(1, 4);
      expect(() => exportStream(table, { device: { device: kind }, copyAhead: -1 })).toThrow(withCode("invalid_argument"));
      expect(() => exportStream(table, { device: { device: kind }, copyAhead: 65 })).toThrow("options.copyAhead");
      expect(() => exportStream(table, { device: { device: kind }, copyAhead: 1.5 })).toThrow("an integer in 0..64");
    });
  });
}
