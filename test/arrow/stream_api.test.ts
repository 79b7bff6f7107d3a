/**
 * One name per job (arrow/stream_api.ts, arrow/import_api.ts): the
 * `async` form of `exportStream` and `importTable` reports every error
 * through its promise; the readers take every stream source, a C address
 * included; `importTable` also joins ImportedArray batches; the import
 * functions take an imported handle and leave it the caller's.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { Table, tableFromArrays, vectorFromArray } from "apache-arrow";
import { exportArray, exportStream, importRecordBatch, importSchema, importTable, importVector, recordBatches } from "../../ts/index.ts";
import { ImportedArray, ImportedStream } from "../../ts/raw.ts";
import { liveStreamSources } from "../helpers/js_live.ts";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "../helpers/cli_run.ts";
import { withCode } from "../helpers/errors.ts";
import { expectSettled } from "../helpers/settled.ts";

afterEach(async () => {
  await expectSettled({ liveStreamSources });
});

const table = (): Table => tableFromArrays({ id: Int32Array.of(1, 2, 3) });

describe("the async forms", () => {
  test("exportStream({ async: true }) rejects a bad source instead of throwing", async () => {
    let thrown: unknown = null;
    let result: Promise<unknown> | null = null;
    try {
      result = exportStream(42 as never, { async: true });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeNull();
    await expect(result!).rejects.toThrow(withCode("invalid_argument"));
    await expect(exportStream(table().batches[0] as never, { async: true })).rejects.toThrow("exportStream: source must be");
  });

  test("importTable({ async: true }) rejects a bad source or option instead of throwing", async () => {
    await expect(importTable(8 as never, { async: true })).rejects.toThrow("importTable: source");
    using exported = exportStream(table());
    await expect(importTable(exported.stream, { async: true, toHost: 1 as never })).rejects.toThrow("importTable: options.toHost");
    expect(exported.streamReleased).toBe(false); // refused before it was moved in
  });

  test("importTable and recordBatches refuse another object by listing every source they accept", () => {
    using exported = exportArray(table().batches[0]!);
    using imported = ImportedArray.fromDeviceArray(exported.schema, exported.array);
    for (const bad of [imported, {}, "x", null]) {
      let error: unknown = null;
      try {
        importTable(bad as never);
      } catch (caught) {
        error = caught;
      }
      expect(error).toEqual(withCode("invalid_argument"));
      const message = (error as Error).message;
      for (const accepted of ["an ImportedStream", "a stream producer or capsule (docs/protocol.md)", "an ArrowDeviceArrayStream address", "a list of ImportedArray batches", "(one batch: importRecordBatch)"]) {
        expect({ message, accepted: message.includes(accepted) }).toEqual({ message, accepted: true });
      }
    }
    expect(() => recordBatches(imported as never, { as: "stream" })).toThrow("recordBatches: source must be an ImportedStream, a stream producer or capsule (docs/protocol.md), or an ArrowArrayStream address (an ImportedArray: importRecordBatch), not an ImportedArray");
    expect(importTable([imported]).numRows).toBe(3);
  });

  test("a single batch or vector given to exportStream is named, not streamed as rows", () => {
    expect(() => exportStream(table().batches[0] as never)).toThrow("(a RecordBatch is one array: export it with exportArray, or stream it as [batch]), not a RecordBatch");
    expect(() => exportStream(vectorFromArray([1, 2]) as never)).toThrow("(a Vector is one array: export it with exportArray), not a Vector");
  });
});

describe("the readers", () => {
  for (const as of ["stream", "device_stream"] as const) {
    test(`recordBatches reads an ${as === "stream" ? "ArrowArrayStream" : "ArrowDeviceArrayStream"} address, sync and async`, async () => {
      const sync = exportStream(table(), { as });
      expect([...recordBatches(sync.stream, { as })].map((batch) => batch.numRows)).toEqual([3]);
      expect(sync.streamReleased).toBe(true);
      const later = exportStream(table(), { as });
      const rows: number[] = [];
      for await (const batch of recordBatches(later.stream, { as, async: true })) rows.push(...batch.getChild("id")!.toArray());
      expect(rows).toEqual([1, 2, 3]);
      expect(later.streamReleased).toBe(true);
    });
  }

  test("importTable joins ImportedArray batches, which stay the caller's; a level or a host copy is refused for them", () => {
    const arrays = [0, 1].map(() => {
      using exported = exportArray(table().batches[0]!);
      return ImportedArray.fromDeviceArray(exported.schema, exported.array);
    });
    try {
      expect(() => importTable(arrays, { validation: "full" })).toThrow("importTable: options.validation must be undefined for ImportedArray batches");
      expect(() => importTable(arrays, { toHost: true })).toThrow("importTable: options.toHost must be undefined or false for ImportedArray batches");
      expect(() => importTable([arrays[0], {}] as never)).toThrow("importTable: source[1] must be an ImportedArray");
      const joined = importTable(arrays);
      expect(joined.numRows).toBe(6);
      arrays[1]!.dispose();
      expect(() => joined.batches[1]!.data.nullBitmap).toThrow("was converted from an ImportedArray that was disposed"); // its handle released it
    } finally {
      for (const imported of arrays) imported.dispose();
    }
  });
});

describe("one import per kind", () => {
  test("importVector and importRecordBatch of an ImportedArray leave the handle to the caller", () => {
    using exported = exportArray(table().batches[0]!);
    const imported = ImportedArray.fromDeviceArray(exported.schema, exported.array);
    const batch = importRecordBatch(imported);
    const vector = importVector(imported);
    expect(batch.numRows).toBe(3);
    expect(vector.length).toBe(3);
    expect(() => importVector(imported, { validation: "full" } as never)).toThrow('importVector: options has an unknown key "validation"');
    imported.dispose();
    expect(() => batch.getChildAt(0)!.toArray()).toThrow("was converted from an ImportedArray that was disposed");
    expect(() => vector.data[0]!.nullBitmap).toThrow("was converted from an ImportedArray that was disposed");
  });

  test("importSchema reads an ImportedStream, an ImportedArray and a RawArray alike", () => {
    using exported = exportArray(table().batches[0]!);
    const imported = ImportedArray.fromDeviceArray(exported.schema, exported.array);
    using streamed = exportStream(table());
    const stream = ImportedStream.fromDeviceArrayStream(streamed.stream);
    try {
      const names = [importSchema(stream), importSchema(imported), importSchema(imported.root)].map((schema) => schema.fields.map((field) => `${field.name}: ${field.type}`));
      expect(names).toEqual([["id: Int32"], ["id: Int32"], ["id: Int32"]]);
      expect(() => importSchema({} as never)).toThrow("importSchema: source must be an ImportedStream, an ImportedArray or a RawArray");
    } finally {
      stream.release();
      imported.dispose();
    }
  });
});

describe("dictionary ids across batches", () => {
  const dictionaryTable = (): Table => {
    const one = tableFromArrays({ s: ["a", "b", "a"] });
    return one.concat(tableFromArrays({ s: ["b", "c"] }));
  };

  test("importRecordBatch gives each batch its own ids (as its doc says); importTable and recordBatches of the stream share them", () => {
    const source = dictionaryTable();
    expect(source.batches.length).toBe(2);
    const singles = source.batches.map((batch) => {
      using exported = exportArray(batch);
      return importRecordBatch(exported.schema, exported.array);
    });
    expect(() => new Table(singles)).toThrow();
    expect(new Table([...recordBatches(exportStream(source).stream)]).getChild("s")!.toArray()).toEqual(["a", "b", "a", "b", "c"]);
    expect(importTable(exportStream(source).stream).getChild("s")!.toArray()).toEqual(["a", "b", "a", "b", "c"]);
    const doc = readFileSync(join(repoRoot, "ts", "arrow", "import_api.ts"), "utf8");
    expect(doc).toContain("its dictionary fields get dictionary\n * ids of their own, so `new Table(batches)` of batches imported one by\n * one refuses dictionary columns.");
  });
});
