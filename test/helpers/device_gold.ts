/**
 * The gold files (test/data/gold/, read in place) for the device tests, and
 * the tools to compare a host copy with its original:
 * - `goldFiles()` (from shared_gold.ts): every `.stream` of both gold folders.
 * - `rawBatchesFromJson()`: the batches of a gold file's integration JSON
 *   as raw nodes (format strings + JS buffers), for the files apache-arrow
 *   cannot read (list views, run-end encoded). Only the types those files
 *   use are handled; anything else throws.
 * - `treeDifferences()`: every difference between two imported trees:
 *   schema fields, lengths, and each buffer's size and bytes.
 */
import { read, toArrayBuffer } from "bun:ffi";
import { gunzipSync } from "node:zlib";
import { readFileSync } from "node:fs";

import { Flags, type RawArrayNode } from "../../ts/raw.ts";
import { type ImportedArray, type RawArray } from "../../ts/raw.ts";

import { goldFiles, type GoldFile } from "./shared_gold.ts";

export { goldFiles, type GoldFile };

// ---------------------------------------------------------------------------
// Integration JSON -> raw nodes
// ---------------------------------------------------------------------------

type JsonType = { name: string; bitWidth?: number; isSigned?: boolean; precision?: string };
type JsonField = { name: string; type: JsonType; nullable: boolean; children: JsonField[] };
type JsonColumn = {
  name: string; count: number; VALIDITY?: number[]; DATA?: unknown[]; OFFSET?: (number | string)[];
  SIZE?: (number | string)[]; children?: JsonColumn[];
};

function formatOf(type: JsonType): string {
  switch (type.name) {
    case "int": {
      const codes: Record<number, string> = { 8: "c", 16: "s", 32: "i", 64: "l" };
      const code = codes[type.bitWidth!];
      return type.isSigned ? code : code.toUpperCase();
    }
    case "floatingpoint": return ({ SINGLE: "f", DOUBLE: "g" } as Record<string, string>)[type.precision!];
    case "utf8": return "u";
    case "bool": return "b";
    case "listview": return "+vl";
    case "largelistview": return "+vL";
    case "runendencoded": return "+r";
  }
  throw new Error(`gold JSON type "${type.name}" is not handled by this builder`);
}

function bitmap(bits: (number | boolean)[]): Uint8Array {
  const out = new Uint8Array(Math.ceil(bits.length / 8));
  bits.forEach((bit, i) => {
    if (bit) out[i >> 3] |= 1 << (i & 7);
  });
  return out;
}

function fixed(type: JsonType, data: unknown[]): NodeJS.TypedArray {
  if (type.name === "floatingpoint") return type.precision === "SINGLE" ? Float32Array.from(data as number[]) : Float64Array.from(data as number[]);
  const width = type.bitWidth!;
  if (width === 64) return (type.isSigned ? BigInt64Array : BigUint64Array).from(data.map((v) => BigInt(v as string)));
  const Typed = { 8: type.isSigned ? Int8Array : Uint8Array, 16: type.isSigned ? Int16Array : Uint16Array, 32: type.isSigned ? Int32Array : Uint32Array }[width as 8 | 16 | 32];
  return Typed.from(data as number[]);
}

function columnNode(field: JsonField, column: JsonColumn): RawArrayNode {
  const format = formatOf(field.type);
  const validityBits = column.VALIDITY;
  const nullCount = validityBits ? validityBits.filter((b) => !b).length : 0;
  const validity = validityBits && nullCount > 0 ? bitmap(validityBits) : null;
  const node: RawArrayNode = {
    format,
    name: field.name,
    flags: field.nullable ? Flags.NULLABLE : 0,
    length: column.count,
    nullCount,
    buffers: [],
  };
  switch (field.type.name) {
    case "int": case "floatingpoint":
      node.buffers = [validity, fixed(field.type, column.DATA ?? [])];
      break;
    case "bool":
      node.buffers = [validity, bitmap((column.DATA ?? []) as boolean[])];
      break;
    case "utf8": {
      const strings = (column.DATA ?? []) as string[];
      const bytes = new TextEncoder().encode(strings.join(""));
      node.buffers = [validity, Int32Array.from((column.OFFSET ?? [0]).map(Number)), bytes];
      break;
    }
    case "listview": case "largelistview": {
      const large = field.type.name === "largelistview";
      const ints = (values: (number | string)[] | undefined) => large ? BigInt64Array.from((values ?? []).map((v) => BigInt(v))) : Int32Array.from((values ?? []).map(Number));
      node.buffers = [validity, ints(column.OFFSET), ints(column.SIZE)];
      node.children = [columnNode(field.children[0], column.children![0])];
      break;
    }
    case "runendencoded":
      node.nullCount = 0;
      node.buffers = [];
      node.children = field.children.map((child, i) => columnNode(child, column.children![i]));
      break;
  }
  return node;
}

/** Every batch of the gold file's integration JSON, as a struct node. */
export function rawBatchesFromJson(file: GoldFile): RawArrayNode[] {
  const json = JSON.parse(gunzipSync(readFileSync(file.json)).toString()) as { schema: { fields: JsonField[] }; batches: { count: number; columns: JsonColumn[] }[] };
  return json.batches.map((batch) => ({
    format: "+s",
    name: "",
    flags: 0,
    length: batch.count,
    nullCount: 0,
    buffers: [null],
    children: json.schema.fields.map((field, i) => columnNode(field, batch.columns[i])),
  }));
}

// ---------------------------------------------------------------------------
// Comparing trees
// ---------------------------------------------------------------------------

/** A schema node's metadata as raw bytes (the spec's encoding), read by
 * its own length fields. */
function metadataBytes(node: RawArray): Uint8Array {
  const address = read.ptr(node.schemaAddress as never, 16);
  if (!address) return new Uint8Array(0);
  const count = read.i32(address as never, 0);
  let at = 4;
  for (let i = 0; i < count * 2; i++) at += 4 + read.i32(address as never, at);
  return new Uint8Array(toArrayBuffer(address as never, 0, at)).slice();
}

function bufferBytes(node: RawArray, i: number): Uint8Array {
  return new Uint8Array(node.imported.bufferMemory(node.bufferIndex(i)));
}

function firstDifference(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return a.length === b.length ? -1 : n;
}

/** Every difference between `copy` and `original`, as sentences; also
 * where `copy` shares memory with `original` (a copy must not). */
export function treeDifferences(original: ImportedArray, copy: ImportedArray): string[] {
  const problems: string[] = [];
  const walk = (a: RawArray, b: RawArray, path: string) => {
    const fields: (keyof RawArray)[] = ["format", "name", "flags", "length", "offset", "nullCount", "nBuffers", "nChildren"];
    for (const field of fields) {
      if (a[field] !== b[field]) problems.push(`${path}: ${String(field)} ${String(b[field])}, expected ${String(a[field])}`);
    }
    if (firstDifference(metadataBytes(a), metadataBytes(b)) >= 0) problems.push(`${path}: metadata differs`);
    if (problems.length) return;
    for (let i = 0; i < a.nBuffers; i++) {
      const where = `${path} buffer ${i}`;
      if (a.bufferAddress(i) === 0) {
        if (b.bufferAddress(i) !== 0) problems.push(`${where}: not NULL in the copy`);
        continue;
      }
      if (a.bufferSize(i) !== b.bufferSize(i)) {
        problems.push(`${where}: ${b.bufferSize(i)} bytes, expected ${a.bufferSize(i)}`);
        continue;
      }
      if (a.bufferSize(i) > 0 && a.bufferAddress(i) === b.bufferAddress(i)) problems.push(`${where}: the copy shares the original's memory`);
      const at = firstDifference(bufferBytes(a, i), bufferBytes(b, i));
      if (at >= 0) problems.push(`${where}: bytes differ from byte ${at}`);
    }
    a.children.forEach((child, i) => walk(child, b.child(i), `${path} > ${child.name ?? i}`));
    if ((a.dictionary === null) !== (b.dictionary === null)) problems.push(`${path}: dictionary presence differs`);
    else if (a.dictionary) walk(a.dictionary, b.dictionary!, `${path} > dictionary`);
  };
  walk(original.root, copy.root, "root");
  return problems;
}
