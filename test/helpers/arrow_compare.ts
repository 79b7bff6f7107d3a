/**
 * Deep comparison of apache-arrow objects for the round-trip tests: types
 * (every parameter, names, nullability; not dictionary ids), metadata at
 * every level, validity and values of every slot through every access path
 * (get, iteration, toArray), and buffer identity (same memory, by address).
 */
import { ptr } from "bun:ffi";
import { Data, DataType, Field, MapRow, RecordBatch, StructRow, Vector } from "apache-arrow";
import { typeSignature } from "../../ts/arrow/types.ts";

/** A plain, comparable form of any value apache-arrow returns. */
export function normalize(value: unknown): unknown {
  if (value === null || value === undefined) return null;
  if (typeof value === "bigint") return `${value}n`;
  if (typeof value === "number") return Number.isNaN(value) ? "NaN" : Object.is(value, -0) ? "-0" : value;
  if (typeof value === "string" || typeof value === "boolean") return value;
  if (value instanceof Date) return `date:${value.getTime()}`;
  if (ArrayBuffer.isView(value)) return Array.from(value as NodeJS.TypedArray, normalize);
  if (value instanceof Vector) return Array.from({ length: value.length }, (_, i) => normalize(value.get(i)));
  if (value instanceof StructRow || value instanceof MapRow) {
    return [...value].map(([k, v]) => [normalize(k), normalize(v)]);
  }
  if (Array.isArray(value)) return value.map(normalize);
  if (typeof value === "object") return Object.entries(value as object).map(([k, v]) => [k, normalize(v)]);
  return String(value);
}

/** Every slot of `vector`: validity and value, through get(). */
export function slots(vector: Vector): unknown[] {
  return Array.from({ length: vector.length }, (_, i) => (vector.isValid(i) ? normalize(vector.get(i)) : null));
}

/** A field's name, nullability, metadata (in order) and type, recursively
 * including nested fields' metadata. */
export function fieldSignature(field: Field): string {
  const nested = (type: DataType): string[] => {
    const children = DataType.isDictionary(type) ? type.dictionary.children ?? [] : type.children ?? [];
    return children.map(fieldSignature);
  };
  return JSON.stringify([field.name, field.nullable, [...field.metadata], typeSignature(field.type), nested(field.type)]);
}

/** The fields of the columns as apache-arrow's child Data hold them: for
 * repeated field names its RecordBatch.schema is wrong (Schema.assign
 * merges them by name), and after a slice its struct type is too. */
export function trueFields(batch: RecordBatch): Field[] {
  const children = batch.data.children;
  return batch.data.type.children.map((f, i) => (f.type === children[i].type ? f : new Field(f.name, children[i].type, f.nullable, f.metadata)));
}

export type Mismatch = string[];

/** Differences between two batches: schema, metadata, lengths, null
 * counts, and every slot of every column (empty when equal). */
export function compareBatches(actual: RecordBatch, expected: RecordBatch, where = ""): Mismatch {
  const problems: string[] = [];
  const a = actual.schema.fields;
  const e = trueFields(expected);
  if (a.length !== e.length) return [`${where}: ${a.length} columns, expected ${e.length}`];
  if (JSON.stringify([...actual.schema.metadata]) !== JSON.stringify([...expected.schema.metadata])) {
    problems.push(`${where}: schema metadata ${JSON.stringify([...actual.schema.metadata])}, expected ${JSON.stringify([...expected.schema.metadata])}`);
  }
  if (actual.numRows !== expected.numRows) problems.push(`${where}: ${actual.numRows} rows, expected ${expected.numRows}`);
  for (let j = 0; j < e.length; j++) {
    if (fieldSignature(a[j]) !== fieldSignature(e[j])) problems.push(`${where} column ${j}: field ${fieldSignature(a[j])}, expected ${fieldSignature(e[j])}`);
    // The schema's own type must be the data's type (what readers use).
    if (typeSignature(actual.data.children[j].type) !== typeSignature(a[j].type)) problems.push(`${where} column ${j}: data type differs from schema type`);
    problems.push(...compareVectors(new Vector([actual.data.children[j]]), new Vector([expected.data.children[j]]), `${where} column ${j} "${e[j].name}"`));
  }
  return problems;
}

/** Differences between two vectors' contents, through get(), the
 * iterator and toArray(). */
export function compareVectors(actual: Vector, expected: Vector, where = ""): Mismatch {
  const problems: string[] = [];
  if (actual.length !== expected.length) return [`${where}: length ${actual.length}, expected ${expected.length}`];
  // apache-arrow reports -1 for some slices it cannot count (a sliced Null).
  if (expected.nullCount >= 0 && actual.nullCount !== expected.nullCount) problems.push(`${where}: nullCount ${actual.nullCount}, expected ${expected.nullCount}`);
  const got = slots(actual);
  const want = slots(expected);
  for (let i = 0; i < want.length; i++) {
    const g = JSON.stringify(got[i]);
    const w = JSON.stringify(want[i]);
    if (g !== w) {
      problems.push(`${where} slot ${i}: ${g?.slice(0, 200)}, expected ${w?.slice(0, 200)}`);
      break;
    }
  }
  const iterated = JSON.stringify([...actual].map(normalize));
  if (iterated !== JSON.stringify([...expected].map(normalize))) problems.push(`${where}: iteration differs`);
  if (JSON.stringify(normalize(actual.toArray())) !== JSON.stringify(normalize(expected.toArray()))) problems.push(`${where}: toArray differs`);
  return problems;
}

function address(view: NodeJS.ArrayBufferView | undefined | null): number {
  if (!view || view.byteLength === 0) return 0;
  return ptr(view);
}

/**
 * Buffers of `expected` that `actual` does not share (same address), in
 * the whole tree: values, offsets, type ids, validity (when there are
 * nulls), variadic buffers, children, dictionaries. Empty buffers are
 * skipped (there is no memory to share).
 */
export function unsharedBuffers(actual: Data, expected: Data, where = "root"): string[] {
  const problems: string[] = [];
  const pairs: [string, NodeJS.ArrayBufferView | undefined, NodeJS.ArrayBufferView | undefined][] = [
    ["values", actual.values, expected.values],
    ["valueOffsets", actual.valueOffsets, expected.valueOffsets],
    ["typeIds", actual.typeIds, expected.typeIds],
  ];
  if (expected.nullCount > 0) pairs.push(["nullBitmap", actual.nullBitmap, expected.nullBitmap]);
  expected.variadicBuffers.forEach((v, i) => pairs.push([`variadic ${i}`, actual.variadicBuffers[i], v]));
  for (const [name, got, want] of pairs) {
    const w = address(want);
    if (w !== 0 && address(got) !== w) problems.push(`${where}.${name}: at 0x${address(got).toString(16)}, expected the original 0x${w.toString(16)}`);
  }
  if (actual.offset !== expected.offset && expected.nullCount > 0) problems.push(`${where}: offset ${actual.offset}, expected ${expected.offset}`);
  expected.children.forEach((c, i) => {
    if (actual.children[i]) problems.push(...unsharedBuffers(actual.children[i], c, `${where}.child${i}`));
    else problems.push(`${where}.child${i} missing`);
  });
  if (expected.dictionary) {
    expected.dictionary.data.forEach((d, i) => {
      const got = actual.dictionary?.data[i];
      if (got) problems.push(...unsharedBuffers(got, d, `${where}.dictionary${i}`));
      else problems.push(`${where}.dictionary${i} missing`);
    });
  }
  return problems;
}
