/**
 * Exports of objects converted from an import point into
 * the producer's memory, so they hold the import's owner. Disposing the
 * import ends the handle's own access only; the producer's release
 * (c_peer.c's `produced_live` counter) runs once the import and every
 * export into it let go, in either order, and a C consumer reads the right
 * values after the dispose.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { Table, type Vector } from "apache-arrow";
import { ExportedArray, exportArray, exportBatches, exportSchema, exportStream, importVector } from "../../ts/index.ts";
import { exportAsyncStream } from "../../ts/device.ts";
import { ImportedArray } from "../../ts/raw.ts";
import { CDeviceArray, CSchema, exportRawArray } from "../../ts/raw.ts";
import { CSink } from "../helpers/async_peer.ts";
import { peer, streamPeer, SP_HOLD } from "../helpers/fixtures.ts";
import { importOwnerOf } from "../../ts/native/imported.ts";
import { consumeInC } from "../helpers/streams.ts";
import { withCode } from "../helpers/errors.ts";
import { expectSettled } from "../helpers/settled.ts";

const rows = 1000;
/** c_peer.c's int32 values are i * 10, none null here. */
const expectedSum = (10 * rows * (rows - 1)) / 2;

function importInts(): ImportedArray {
  const schema = CSchema.allocate();
  const array = CDeviceArray.allocate();
  peer.peer_make_int32(rows, 0, 0, schema.address, array.address);
  return ImportedArray.fromDeviceArray(schema, array);
}

const live = () => Number(peer.peer_produced_live());

afterEach(async () => {
  await expectSettled({ live });
  streamPeer.sp_reset_counts(); // counts are global to the process: leave none to the next file
});

/** Hands `exported` to the C consumer (moved) and frees the handle. */
function handOver(exported: ExportedArray) {
  const held = peer.peer_take(exported.schema, exported.array)!;
  exported.release();
  return held;
}

describe("exports of converted imports hold the import's owner", () => {
  test("exportArray(importVector(imported)): dispose first, the consumer still reads the producer's values", () => {
    const imported = importInts();
    const held = handOver(exportArray(importVector(imported)));
    imported.dispose();
    expect(live()).toBe(1); // the export still holds the producer's data
    expect(peer.peer_sum_primitive(held, -1)).toBe(expectedSum);
    peer.peer_release_held(held);
    expect(live()).toBe(0); // released natively, by the consumer's release
  });

  test("the owner of an imported buffer is private to the library: not visible on the buffer, not forgeable", () => {
    const imported = importInts();
    const values = importVector(imported).data[0].values as Int32Array;
    const owner = imported.ownerAddress;
    expect(importOwnerOf(values.buffer)).toBe(owner);
    // Nothing to read, copy or set from outside: no own property of any kind.
    expect(Reflect.ownKeys(values.buffer)).toEqual([]);
    const lookalike = new ArrayBuffer(values.byteLength);
    Object.assign(lookalike, { owner });
    expect(importOwnerOf(lookalike)).toBeUndefined();
    expect(importOwnerOf(values.buffer.slice(0))).toBeUndefined(); // a copy is JS memory
    imported.dispose();
    expect((values.buffer as ArrayBuffer).detached).toBe(true); // exports refuse detached views before asking for an owner
  });

  test("the consumer releases first, then dispose releases the producer", () => {
    const imported = importInts();
    const held = handOver(exportArray(importVector(imported)));
    peer.peer_release_held(held);
    expect(live()).toBe(1); // the handle still holds it
    imported.dispose();
    expect(live()).toBe(0);
  });

  test("a release on another thread after dispose runs the producer's release there, once", async () => {
    const imported = importInts();
    const held = handOver(exportArray(importVector(imported)));
    imported.dispose();
    peer.peer_release_held_on_thread(held);
    peer.peer_wait_background();
    expect(live()).toBe(0);
  });

  test("exportBatches of a batch of converted columns, two exports of one import", () => {
    const imported = importInts();
    const column = importVector(imported) as Vector;
    const [batch] = new Table({ ints: column }).batches;
    const [first] = exportBatches([batch]);
    const second = exportArray(column);
    const heldFirst = handOver(first);
    const heldSecond = handOver(second);
    imported.dispose();
    expect(peer.peer_sum_primitive(heldFirst, 0)).toBe(expectedSum);
    peer.peer_release_held(heldFirst);
    expect(live()).toBe(1);
    expect(peer.peer_sum_primitive(heldSecond, -1)).toBe(expectedSum);
    peer.peer_release_held(heldSecond);
    expect(live()).toBe(0);
  });

  test("exportStream of converted batches: batches held by the C consumer outlive dispose", async () => {
    const imported = importInts();
    const table = new Table({ ints: importVector(imported) as Vector });
    using handle = exportStream(table);
    const { job, summary } = await consumeInC(1, handle.stream, { threaded: false, flags: SP_HOLD });
    try {
      expect(summary.batches).toBe(1);
      imported.dispose();
      expect(live()).toBe(1);
      const schema = CSchema.allocate();
      const array = CDeviceArray.allocate();
      expect(streamPeer.sp_job_take(job, 0, schema.address, array.address)).toBe(0);
      const held = peer.peer_take(schema.address, array.address)!;
      schema.dispose();
      array.dispose();
      expect(peer.peer_sum_primitive(held, 0)).toBe(expectedSum);
      peer.peer_release_held(held);
    } finally {
      streamPeer.sp_job_free(job);
    }
    expect(live()).toBe(0);
  });

  test("exportAsyncStream of converted batches: tasks the C consumer keeps outlive dispose", async () => {
    const imported = importInts();
    const table = new Table({ ints: importVector(imported) as Vector });
    const sink = new CSink({ depth: 2, keep_arrays: 1 });
    try {
      const result = await exportAsyncStream(table.batches, sink.handler, { schema: table.schema }).done;
      expect(result).toEqual({ outcome: "ended", sent: 1 });
      sink.join();
      expect(sink.kept).toBe(1);
      imported.dispose();
      expect(live()).toBe(1);
      using announced = exportSchema(table.schema);
      using again = ImportedArray.fromDeviceArray(announced.schema, sink.keptArray(0));
      const values = again.root.child(0).buffer(1) as Int32Array;
      expect(values.reduce((a, b) => a + b, 0)).toBe(expectedSum);
      again.dispose();
      expect(live()).toBe(0);
    } finally {
      sink.free();
    }
  });

  test("exportRawArray over a raw view of an import holds its owner too", () => {
    const imported = importInts();
    const held = handOver(exportRawArray({ format: "i", length: rows, buffers: [null, imported.root.buffer(1)] }));
    imported.dispose();
    expect(live()).toBe(1);
    expect(peer.peer_sum_primitive(held, -1)).toBe(expectedSum);
    peer.peer_release_held(held);
    expect(live()).toBe(0);
  });

  test("converted data of a disposed import is refused: its views are detached", () => {
    const imported = importInts();
    const column = importVector(imported);
    imported.dispose();
    expect(live()).toBe(0);
    expect(() => exportArray(column)).toThrow(withCode("released"));
  });

  test("a column exported before its import was disposed is refused after it (what the planner learnt about its views is not reused)", () => {
    const imported = importInts();
    const column = importVector(imported);
    const first = exportArray(column);
    first.release();
    expect(live()).toBe(1); // the import itself still holds it
    imported.dispose();
    expect(live()).toBe(0);
    expect(() => exportArray(column)).toThrow(withCode("released"));
  });
});
