/**
 * A whole Table in one call each way: `exportStream` (a C stream of its
 * batches) and `importTable` (a C stream read into one Table), both
 * zero-copy, with exact release counts; and `exportArray` of a Table of
 * one batch.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { Field, Int32, RecordBatch, Schema, Struct, Table, Utf8, makeData, tableFromArrays, vectorFromArray } from "apache-arrow";
import { ExportedStream, exportArray, exportStream, importRecordBatch, importTable, type ImportStreamOptions } from "../../ts/index.ts";
import { ImportedStream } from "../../ts/raw.ts";
import { counters } from "../helpers/leaks.ts";
import { liveStreamSources } from "../helpers/js_live.ts";
import { compareBatches, unsharedBuffers } from "../helpers/arrow_compare.ts";
import { withCode } from "../helpers/errors.ts";
import { expectSettled } from "../helpers/settled.ts";

afterEach(async () => {
  await expectSettled({ liveStreamSources });
});

/** A table of three batches (4, 0 and 2 rows) with a nullable string column. */
function threeBatches(): Table {
  const batch = (ids: number[], names: (string | null)[]) => {
    const id = vectorFromArray(Int32Array.from(ids));
    const name = vectorFromArray(names, new Utf8());
    const schema = new Schema([new Field("id", new Int32(), false), new Field("name", new Utf8(), true)]);
    const data = makeData({ type: new Struct(schema.fields), length: ids.length, nullCount: 0, children: [id.data[0]!, name.data[0]!] });
    return new RecordBatch(schema, data);
  };
  return new Table([batch([1, 2, 3, 4], ["a", null, "ccc", "d"]), batch([], []), batch([5, 6], ["e", "f"])]);
}

describe("exportStream / importTable", () => {
  for (const as of ["device_stream", "stream"] as const) {
    test(`a multi-batch Table round-trips through an ${as === "stream" ? "ArrowArrayStream" : "ArrowDeviceArrayStream"}, zero-copy, released once`, () => {
      const table = threeBatches();
      const before = counters().live_stream_exports;
      const handle = exportStream(table, { as });
      expect(handle).toBeInstanceOf(ExportedStream);
      expect(counters().live_stream_exports).toBe(before + 1);
      const back = importTable(handle.stream, { as } as ImportStreamOptions);
      // The stream was released exactly once, by importTable.
      expect(counters().live_stream_exports).toBe(before);
      expect(handle.streamReleased).toBe(true); // moved in, then released by importTable
      handle.release();
      expect(back.numRows).toBe(6);
      expect(back.batches.map((b) => b.numRows)).toEqual([4, 0, 2]);
      for (let i = 0; i < 3; i++) {
        expect(compareBatches(back.batches[i]!, table.batches[i]!, `batch ${i}`)).toEqual([]);
      }
      // Zero-copy (the empty batch has no bytes to share).
      for (const i of [0, 2]) expect(unsharedBuffers(back.batches[i]!.data, table.batches[i]!.data)).toEqual([]);
    });
  }

  test("importTable reads an ImportedStream too, and an empty table keeps its schema", () => {
    const empty = new Table(new Schema([new Field("x", new Int32(), true)]));
    const handle = exportStream(empty);
    const back = importTable(ImportedStream.fromDeviceArrayStream(handle.stream));
    handle.release();
    expect(back.numRows).toBe(0);
    expect(back.schema.fields.map((f) => `${f.name}:${f.type}`)).toEqual(["x:Int32"]);
  });

  test("what is not a Table, or an unknown stream kind, is a typed error naming the problem, not the data", () => {
    const batch = threeBatches().batches[0]!;
    expect(() => exportStream(batch as unknown as Table)).toThrow(withCode("invalid_argument"));
    expect(() => exportStream(batch as unknown as Table)).toThrow("exportStream: source must be an apache-arrow Table, RecordBatchReader, an array of RecordBatch or ExportedArray, or a (sync or async) iterable of them (a RecordBatch is one array: export it with exportArray, or stream it as [batch]), not a RecordBatch");
    expect(() => exportStream(null as unknown as Table)).toThrow("not null");
    expect(() => importTable(0 as never, { as: "array" as "stream" })).toThrow('importTable: options.as must be');
  });

  test("the table stays alive for the consumer after the app drops it", async () => {
    let handle: ExportedStream<"device_stream"> | null = exportStream(tableFromArrays({ v: Float64Array.from({ length: 1000 }, (_, i) => i) }));
    const stream = ImportedStream.fromDeviceArrayStream(handle.stream);
    handle.release();
    handle = null;
    Bun.gc(true);
    const back = importTable(stream);
    expect(back.getChild("v")!.get(999)).toBe(999);
  });
});

describe("exportArray of a Table", () => {
  test("a Table of one batch exports as that batch", () => {
    const table = tableFromArrays({ id: Int32Array.of(7, 8, 9) });
    using exported = exportArray(table);
    const back = importRecordBatch(exported.schema, exported.array);
    expect(compareBatches(back, table.batches[0]!)).toEqual([]);
    expect(unsharedBuffers(back.data, table.batches[0]!.data)).toEqual([]);
  });

  test("a Table of several batches is refused with a bounded message that points to exportStream", () => {
    const table = threeBatches();
    let message = "";
    try {
      exportArray(table);
    } catch (error) {
      expect(error).toEqual(withCode("invalid_argument"));
      message = (error as Error).message;
    }
    expect(message).toBe("exportArray: a Table with 3 batches cannot be one C array; export it as a stream (exportStream) or each batch (exportBatches)");
  });
});
