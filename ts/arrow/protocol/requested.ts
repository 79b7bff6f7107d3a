/**
 * `requestedSchema` for apache-arrow producers (docs/protocol.md).
 *
 * Honoured, zero-copy (the same buffers under new types): field names,
 * nullability (only towards non-nullable where there are no nulls),
 * field and schema metadata, at every level of structs, lists, large
 * lists, fixed-size lists and maps, when every format matches.
 * Honoured by copying, for a top-level column (a batch's column, a
 * vector): dictionary decoding (to the dictionary's value format), and
 * between utf8 / large_utf8 / utf8_view, and between binary / large_binary
 * / binary_view (32/64-bit offsets, view <-> non-view), rebuilt with
 * apache-arrow's builders; a RecordBatch's columns are top-level.
 * Anything else: the request is ignored, whole
 * (the producer's own schema is exported), as the Python spec allows.
 */
import {
  Binary, Data, DataType, Field, FixedSizeList, LargeBinary, LargeUtf8, List, Map_, RecordBatch, Schema, Struct,
  Table, Type, Utf8, makeData, makeVector, vectorFromArray, type Dictionary,
} from "apache-arrow";
// Not in every apache-arrow release: through the version-checked module.
import { BinaryView, LargeList, Utf8View } from "../arrow_module.ts";
import { formatOf } from "../formats.ts";
import { CSchema } from "../../native/c_structs.ts";
export { withRequested } from "../../native/protocol/requested_schema.ts";

/** An apache-arrow Data under the field it is exported as. */
export type Column = { data: Data; field: Field };

function metadataOf(requested: CSchema): Map<string, string> {
  return new Map(requested.metadataPairs);
}

/** The same-layout type with `fields` as its children, or null where this
 * module does not rebuild the type (children must then match exactly). */
function withChildren(type: DataType, fields: Field[]): DataType | null {
  switch (type.typeId) {
    case Type.Struct: return new Struct(fields);
    case Type.List: return new List(fields[0]);
    case Type.LargeList: return new LargeList(fields[0]);
    case Type.FixedSizeList: return new FixedSizeList((type as FixedSizeList).listSize, fields[0]);
    case Type.Map: return new Map_(fields[0] as Field<Struct>, (type as Map_).keysSorted);
  }
  return null;
}

/** `column` under the requested field, zero-copy, or null. */
function adaptZeroCopy(column: Column, requested: CSchema): Column | null {
  const { data, field } = column;
  const type = field.type;
  if (requested.format !== formatOf(type)) return null;
  const dictionary = requested.dictionary;
  if ((dictionary !== null) !== (type.typeId === Type.Dictionary)) return null;
  if (dictionary && dictionary.format !== formatOf((type as Dictionary).dictionary)) return null;
  if (!requested.nullable && data.nullCount > 0) return null;
  const children = type.children ?? [];
  if (requested.nChildren !== children.length) return null;
  let newType: DataType = type;
  let newData = data;
  if (children.length > 0) {
    const adapted: Column[] = [];
    for (let i = 0; i < children.length; i++) {
      const child = adaptZeroCopy({ data: data.children[i], field: children[i] }, requested.child(i));
      if (!child) return null;
      adapted.push(child);
    }
    const fields = adapted.map((c) => c.field);
    const rebuilt = withChildren(type, fields);
    if (!rebuilt) {
      if (fields.some((f, i) => f.name !== children[i].name || f.nullable !== children[i].nullable)) return null;
    } else {
      newType = rebuilt;
      newData = data.clone(rebuilt, data.offset, data.length, data.nullCount, undefined, adapted.map((c) => c.data));
    }
  }
  return { data: newData, field: new Field(requested.name ?? "", newType, requested.nullable, metadataOf(requested)) };
}

const stringFamily: Record<string, () => DataType> = { u: () => new Utf8(), U: () => new LargeUtf8(), vu: () => new Utf8View() };
const binaryFamily: Record<string, () => DataType> = { z: () => new Binary(), Z: () => new LargeBinary(), vz: () => new BinaryView() };

/** The type a copying cast of `type` to `format` produces, or null. */
function castTarget(type: DataType, requested: CSchema): DataType | null {
  if (requested.dictionary !== null || requested.nChildren !== 0) return null;
  const format = requested.format ?? "";
  if (type.typeId === Type.Dictionary) {
    const values = (type as Dictionary).dictionary;
    if (formatOf(values) === format) return values;
    return null;
  }
  const from = formatOf(type);
  for (const family of [stringFamily, binaryFamily]) {
    if (family[from] && family[format]) return family[format]();
  }
  return null;
}

/** `column` copied to the requested top-level field, or null. */
function adaptByCopy(column: Column, requested: CSchema): Column | null {
  const target = castTarget(column.field.type, requested);
  if (!target) return null;
  if (!requested.nullable && column.data.nullCount > 0) return null;
  const values = [...makeVector(column.data)];
  const data = vectorFromArray(values, target).data[0];
  return { data, field: new Field(requested.name ?? "", target, requested.nullable, metadataOf(requested)) };
}

/** A top-level column under the requested field, or null (ignored). */
export function requestedColumn(column: Column, requested: CSchema): Column | null {
  return adaptZeroCopy(column, requested) ?? adaptByCopy(column, requested);
}

/** The columns of a struct `data` (a batch's) each under the requested
 * schema's child, or null (ignored). */
function requestedColumns(data: Data, fields: readonly Field[], requested: CSchema): Column[] | null {
  if (requested.format !== "+s" || requested.nChildren !== fields.length || requested.dictionary !== null) return null;
  const columns: Column[] = [];
  for (let i = 0; i < fields.length; i++) {
    const column = requestedColumn({ data: data.children[i], field: fields[i] }, requested.child(i));
    if (!column) return null;
    columns.push(column);
  }
  return columns;
}

/** `batch` under the requested schema (a struct with one child per
 * column), or null (ignored). */
export function requestedBatch(batch: RecordBatch, requested: CSchema): RecordBatch | null {
  const columns = requestedColumns(batch.data, batch.data.type.children, requested);
  if (!columns) return null;
  const schemaFields = columns.map((c) => c.field);
  const data = makeData({ type: new Struct(schemaFields), length: batch.numRows, nullCount: 0, children: columns.map((c) => c.data) });
  return new RecordBatch(new Schema(schemaFields, metadataOf(requested)), data);
}

/** `table` with every batch under the requested schema, or null. */
export function requestedTable(table: Table, requested: CSchema): Table | null {
  if (table.batches.length === 0) return null;
  const batches: RecordBatch[] = [];
  for (const batch of table.batches) {
    const adapted = requestedBatch(batch, requested);
    if (!adapted) return null;
    batches.push(adapted);
  }
  return new Table(batches);
}
