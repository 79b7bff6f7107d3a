/**
 * Every gold file of test/data/gold (both folders), through this library
 * alone: apache-arrow reads the .stream, each batch is exported
 * (exportArray), imported back (ImportedArray + importRecordBatch) and compared
 * with apache-arrow's own read: values, types, nullability, metadata. The
 * buffers of the result are the original JS buffers (same addresses: no
 * copy either way). Sliced batches too.
 *
 * apache-arrow cannot read list-view and run-end encoded streams: those
 * cases are rebuilt from their integration JSON by a C producer
 * (test/fixtures/c_producer.c), imported into raw views checked against the
 * JSON, and converted with { materialize: true }.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { RecordBatch, tableFromIPC } from "apache-arrow";
import { exportArray, importRecordBatch, importTable } from "../../ts/index.ts";
import { ImportedArray } from "../../ts/raw.ts";
import { counters, nonZeroCounters } from "../helpers/leaks.ts";
import { compareBatches, normalize, unsharedBuffers } from "../helpers/arrow_compare.ts";
import { collectUntil, runFromTimer } from "../helpers/gc.ts";
import { goldFiles, readJson, readStream, type GoldFile, type JsonColumn, type JsonField } from "../helpers/shared_gold.ts";
import { bits, disposeProduced, produceArray, producerClean, type NodeSpec } from "../helpers/producer.ts";
import { withCode } from "../helpers/errors.ts";
import { expectSettled } from "../helpers/settled.ts";

afterEach(async () => {
  await expectSettled();
  expect(producerClean()).toEqual({ live: 0, doubles: 0 });
});

/** Exports `batch`, imports it back, and returns the differences (values,
 * schema) and the buffers that are not shared. */
function roundTrip(batch: RecordBatch, where: string): { problems: string[]; unshared: string[] } {
  using exported = exportArray(batch);
  using imported = ImportedArray.fromDeviceArray(exported.schema, exported.array, { validation: "full" });
  expect(exported.schemaReleased && exported.arrayReleased).toBe(true);
  const back = importRecordBatch(imported);
  return { problems: compareBatches(back, batch, where), unshared: unsharedBuffers(back.data, batch.data, where) };
}

/** importRecordBatch (GC-driven lifetime) of an export of `batch`; the
 * result is dropped when this returns. */
function importAndCompare(batch: RecordBatch): string[] {
  const exported = exportArray(batch);
  const back = importRecordBatch(exported.schema, exported.array);
  exported.release();
  // The batch's buffer views hold the owner; a batch without any buffer
  // (all-null columns, empty arrays) holds nothing, so it is released now.
  const live = counters();
  expect(live.live_owners).toBe(live.live_imported_views > 0 ? 1 : 0);
  return compareBatches(back, batch, "importRecordBatch");
}

const cases = goldFiles();
const unreadable = new Set(["generated_list_view", "generated_run_end_encoded"]);

test("both gold folders are there, with every case", () => {
  expect(cases.filter((c) => c.folder === "1.0.0-littleendian")).toHaveLength(22);
  expect(cases.filter((c) => c.folder === "cpp-21.0.0")).toHaveLength(11);
});

describe("gold files: JS -> C -> JS, zero-copy both ways", () => {
  for (const gold of cases.filter((c) => !unreadable.has(c.name))) {
    test(`${gold.folder}/${gold.name}`, () => {
      const table = tableFromIPC(readStream(gold));
      expect(table.batches.length).toBeGreaterThan(0);
      table.batches.forEach((batch, i) => {
        const { problems, unshared } = roundTrip(batch, `batch ${i}`);
        expect(problems).toEqual([]);
        expect(unshared).toEqual([]);
      });
    });

    test(`${gold.folder}/${gold.name}: sliced batches`, () => {
      const table = tableFromIPC(readStream(gold));
      let sliced = 0;
      table.batches.forEach((batch, i) => {
        if (batch.numRows < 3) return;
        const slice = batch.slice(1, batch.numRows - 1);
        const { problems, unshared } = roundTrip(slice, `batch ${i} [1, ${batch.numRows - 1})`);
        expect(problems).toEqual([]);
        expect(unshared).toEqual([]);
        sliced++;
      });
      const rows = Math.max(0, ...table.batches.map((b) => b.numRows));
      expect(sliced > 0 || rows < 3).toBe(true);
    });

    test(`${gold.folder}/${gold.name}: a Table of every batch (ArrowArray path, GC-driven lifetime)`, () => {
      const table = tableFromIPC(readStream(gold));
      const handles = table.batches.map((b) => exportArray(b, { as: "array" }));
      const imported = handles.map((h) => ImportedArray.fromArray(h.schema, h.array));
      try {
        const back = importTable(imported);
        expect(back.numRows).toBe(table.numRows);
        for (let j = 0; j < table.numCols; j++) {
          expect(JSON.stringify(normalize([...back.getChildAt(j)!]))).toBe(JSON.stringify(normalize([...table.getChildAt(j)!])));
        }
      } finally {
        for (const i of imported) i.dispose();
        for (const h of handles) h.release();
      }
    });

    test(`${gold.folder}/${gold.name}: importRecordBatch, released by the GC`, async () => {
      const table = tableFromIPC(readStream(gold));
      expect(await runFromTimer(() => importAndCompare(table.batches[0]))).toEqual([]);
      // Nothing holds the batch now: the GC releases the producer's data.
      expect(await collectUntil(() => nonZeroCounters().live_owners === undefined, 300)).toBe(true);
    });
  }
});

// ---------------------------------------------------------------------------
// List-view and run-end encoded: from the integration JSON, through C.
// ---------------------------------------------------------------------------

const encoder = new TextEncoder();
const big = (v: unknown) => BigInt(v as string | number);

/** Format and value buffer of the JSON types these two cases use. */
function leafFormat(type: JsonField["type"]): string {
  switch (type.name) {
    case "int": {
      const widths: Record<number, string> = { 8: "c", 16: "s", 32: "i", 64: "l" };
      const f = widths[type.bitWidth as number];
      return type.isSigned ? f : f.toUpperCase();
    }
    case "floatingpoint": return type.precision === "SINGLE" ? "f" : type.precision === "DOUBLE" ? "g" : "e";
    case "bool": return "b";
    case "utf8": return "u";
    case "listview": return "+vl";
    case "largelistview": return "+vL";
    case "runendencoded": return "+r";
  }
  throw new Error(`no JSON reader for ${type.name}`);
}

function specFromJson(field: JsonField, column: JsonColumn): NodeSpec {
  const format = leafFormat(field.type);
  const validity = column.VALIDITY ? bits(column.VALIDITY.map(Boolean)) : null;
  const nullCount = column.VALIDITY ? column.VALIDITY.filter((v) => !v).length : 0;
  const base = { format, name: field.name, flags: field.nullable ? 2 : 0, length: column.count, nullCount };
  const data = column.DATA ?? [];
  const children = () => field.children.map((f, i) => specFromJson(f, column.children![i]));
  switch (format) {
    case "c": return { ...base, buffers: [validity, Int8Array.from(data as number[])] };
    case "s": return { ...base, buffers: [validity, Int16Array.from(data as number[])] };
    case "i": return { ...base, buffers: [validity, Int32Array.from(data as number[])] };
    case "l": return { ...base, buffers: [validity, BigInt64Array.from(data, big)] };
    case "f": return { ...base, buffers: [validity, Float32Array.from(data as number[])] };
    case "g": return { ...base, buffers: [validity, Float64Array.from(data as number[])] };
    case "b": return { ...base, buffers: [validity, bits((data as boolean[]).map(Boolean))] };
    case "u": return { ...base, buffers: [validity, Int32Array.from(column.OFFSET!.map(Number)), encoder.encode((data as string[]).join(""))] };
    case "+vl": return { ...base, buffers: [validity, Int32Array.from(column.OFFSET!.map(Number)), Int32Array.from(column.SIZE!.map(Number))], children: children() };
    case "+vL": return { ...base, buffers: [validity, BigInt64Array.from(column.OFFSET!, big), BigInt64Array.from(column.SIZE!, big)], children: children() };
    case "+r": return { ...base, nullCount: 0, buffers: [], children: children() };
  }
  throw new Error(`no JSON reader for ${format}`);
}

/** The logical value of slot `i` of a JSON column, as apache-arrow would
 * give it (materialized). */
function logical(field: JsonField, column: JsonColumn, i: number): unknown {
  if (field.type.name === "runendencoded") {
    const ends = column.children![0].DATA!.map(Number);
    const run = ends.findIndex((end) => end > i);
    return logical(field.children[1], column.children![1], run);
  }
  if (column.VALIDITY && !column.VALIDITY[i]) return null;
  const value = column.DATA?.[i];
  switch (field.type.name) {
    case "int": return field.type.bitWidth === 64 ? BigInt(value as string) : value;
    case "floatingpoint": return field.type.precision === "SINGLE" ? Math.fround(value as number) : value;
    case "bool": return Boolean(value);
    case "utf8": return value;
    case "listview": case "largelistview": {
      const offset = Number(column.OFFSET![i]);
      const size = Number(column.SIZE![i]);
      return Array.from({ length: size }, (_, k) => logical(field.children[0], column.children![0], offset + k));
    }
  }
  throw new Error(`no JSON reader for ${field.type.name}`);
}

/** Raw view checks: every buffer of `raw` holds what the JSON says. */
function expectRawMatches(field: JsonField, column: JsonColumn, raw: ReturnType<ImportedArray["node"]>) {
  expect(raw.length).toBe(column.count);
  expect(raw.name).toBe(field.name);
  if (column.VALIDITY && raw.nBuffers > 0 && raw.nullCount > 0) {
    const validity = raw.buffer(0) as Uint8Array;
    column.VALIDITY.forEach((v, i) => expect(((validity[i >> 3] >> (i & 7)) & 1) === 1).toBe(Boolean(v)));
  }
  switch (field.type.name) {
    case "listview": case "largelistview":
      expect(Array.from(raw.buffer(1) as ArrayLike<number | bigint>, Number)).toEqual(column.OFFSET!.map(Number));
      expect(Array.from(raw.buffer(2) as ArrayLike<number | bigint>, Number)).toEqual(column.SIZE!.map(Number));
      expectRawMatches(field.children[0], column.children![0], raw.child(0));
      return;
    case "runendencoded":
      expectRawMatches(field.children[0], column.children![0], raw.child(0));
      expectRawMatches(field.children[1], column.children![1], raw.child(1));
      return;
    case "int": case "floatingpoint": {
      const values = Array.from(raw.buffer(1) as ArrayLike<number | bigint>).slice(0, column.count);
      column.DATA!.forEach((v, i) => {
        if (column.VALIDITY && !column.VALIDITY[i]) return;
        expect(normalize(values[i])).toEqual(normalize(logical(field, { ...column, VALIDITY: undefined }, i)));
      });
      return;
    }
    case "utf8":
      expect(Array.from(raw.buffer(1) as Int32Array)).toEqual(column.OFFSET!.map(Number));
      return;
    case "bool": {
      const values = raw.buffer(1) as Uint8Array;
      (column.DATA as boolean[]).forEach((v, i) => expect(((values[i >> 3] >> (i & 7)) & 1) === 1).toBe(Boolean(v)));
    }
  }
}

function checkUnreadable(gold: GoldFile) {
  const json = readJson(gold);
  expect(() => tableFromIPC(readStream(gold))).toThrow(); // apache-arrow 21 cannot read it
  json.batches.forEach((jsonBatch, b) => {
    const spec: NodeSpec = {
      format: "+s", length: jsonBatch.count, buffers: [null],
      children: json.schema.fields.map((f, j) => specFromJson(f, jsonBatch.columns[j])),
    };
    const produced = produceArray(spec);
    try {
      using imported = ImportedArray.fromArray(produced.schema, produced.array, { validation: "full" });
      json.schema.fields.forEach((f, j) => expectRawMatches(f, jsonBatch.columns[j], imported.root.child(j)));
      expect(() => importRecordBatch(imported)).toThrow(withCode("unsupported"));
      const batch = importRecordBatch(imported, { materialize: true });
      json.schema.fields.forEach((f, j) => {
        const expected = Array.from({ length: jsonBatch.count }, (_, i) => normalize(logical(f, jsonBatch.columns[j], i)));
        const got = [...batch.getChildAt(j)!].map(normalize);
        expect({ batch: b, column: f.name, values: got }).toEqual({ batch: b, column: f.name, values: expected });
      });
    } finally {
      disposeProduced(produced);
    }
  });
}

describe("gold files apache-arrow cannot read: raw views and materialized conversion", () => {
  for (const gold of cases.filter((c) => unreadable.has(c.name))) {
    test(`${gold.folder}/${gold.name}`, () => checkUnreadable(gold));
  }
});
