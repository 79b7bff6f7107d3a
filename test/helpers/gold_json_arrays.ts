/**
 * The two gold cases apache-arrow cannot read (list views, run-end
 * encoded), rebuilt from their integration JSON as C arrays by the C
 * producer of test/fixtures/c_producer.c, one record batch at a time. The
 * async stream tests push these through both roles as raw arrays.
 */
import { type CDeviceArray } from "../../ts/raw.ts";
import { goldFiles, readJson, type JsonColumn, type JsonField } from "./shared_gold.ts";
import { bits, produceDevice, type NodeSpec, type Produced } from "./producer.ts";

const encoder = new TextEncoder();

function intArray(bitWidth: number, data: unknown[]): ArrayBufferView {
  switch (bitWidth) {
    case 8: return Int8Array.from(data as number[]);
    case 16: return Int16Array.from(data as number[]);
    case 32: return Int32Array.from(data as number[]);
    default: return BigInt64Array.from(data, (v) => BigInt(v as string | number));
  }
}

/** One column of a JSON batch as a producer spec (the types these two
 * cases use). */
function spec(field: JsonField, column: JsonColumn): NodeSpec {
  const validity = column.VALIDITY ? bits(column.VALIDITY.map(Boolean)) : null;
  const nullCount = column.VALIDITY ? column.VALIDITY.filter((v) => !v).length : 0;
  const base = { name: field.name, flags: field.nullable ? 2 : 0, length: column.count, nullCount };
  const data = column.DATA ?? [];
  const children = () => field.children.map((f, i) => spec(f, column.children![i]));
  const type = field.type;
  switch (type.name) {
    case "int": {
      const width = type.bitWidth as number;
      const format = { 8: "c", 16: "s", 32: "i", 64: "l" }[width]!;
      return { ...base, format, buffers: [validity, intArray(width, data)] };
    }
    case "floatingpoint":
      return { ...base, format: "f", buffers: [validity, Float32Array.from(data as number[])] };
    case "bool":
      return { ...base, format: "b", buffers: [validity, bits((data as boolean[]).map(Boolean))] };
    case "utf8":
      return { ...base, format: "u", buffers: [validity, Int32Array.from(column.OFFSET!.map(Number)), encoder.encode((data as string[]).join(""))] };
    case "listview":
      return { ...base, format: "+vl", buffers: [validity, Int32Array.from(column.OFFSET!.map(Number)), Int32Array.from(column.SIZE!.map(Number))], children: children() };
    case "largelistview":
      return { ...base, format: "+vL", buffers: [validity, intArray(64, column.OFFSET!), intArray(64, column.SIZE!)], children: children() };
    case "runendencoded":
      return { ...base, format: "+r", nullCount: 0, buffers: [], children: children() };
  }
  throw new Error(`no JSON reader for ${type.name}`);
}

/** The gold case `name` (e.g. "generated_list_view") of cpp-21.0.0. */
function goldCase(name: string) {
  const found = goldFiles().find((c) => c.name === name);
  if (!found) throw new Error(`no gold case ${name}`);
  return found;
}

/** Number of record batches of the case. */
export function jsonBatchCount(name: string): number {
  return readJson(goldCase(name)).batches.length;
}

/** Record batch `b` of the case as a freshly produced C struct array
 * (CPU), in base structs the caller disposes. */
export function produceJsonBatch(name: string, b: number): Produced<CDeviceArray> {
  const json = readJson(goldCase(name));
  const batch = json.batches[b];
  return produceDevice({
    format: "+s",
    length: batch.count,
    buffers: [null],
    children: json.schema.fields.map((f, j) => spec(f, batch.columns[j])),
  });
}

export const jsonOnlyCases = ["generated_list_view", "generated_run_end_encoded"] as const;
