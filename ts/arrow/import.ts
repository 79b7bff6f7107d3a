/**
 * Imported C data -> apache-arrow Data, Vector, RecordBatch and Table,
 * without copying buffers: the conversions of one handle (`toData`,
 * `toVector`, `toRecordBatch`, `toTable`), the one-step imports from C
 * structs or protocol producers (`importVector`, `importRecordBatch`), and
 * what a converted object reads as once its handle is disposed.
 *
 * Who builds what: arrow/data_builder.ts makes Data over a handle's
 * memory (its module comment states the offset rules); record batches
 * whose schema the batch plan builds (arrow/batch_plan.ts) are made
 * straight from the node tables, their views made on first read
 * (arrow/lazy_data.ts); arrow/schema_cache.ts keeps the Schema and plan
 * of repeated imports of one schema. Streams: arrow/batch_converter.ts.
 */
import {
  Data, RecordBatch, Struct, Table, Vector,
} from "apache-arrow";
import { argumentError, oneOfArg } from "../core/args.ts";
import { InvalidArgumentError, Status } from "../core/errors.ts";
import { ImportedArray, type ImportOptions, type RawArray } from "../native/imported.ts";
import { noteConverted } from "../native/batch_source.ts";
import { takeStructs, type StructRef } from "../native/c_structs.ts";
import { importTaken } from "../native/import_structs.ts";
import { probeDepthOf } from "../core/abi/probe.ts";
import { validationLevelArg } from "../core/abi/layout.ts";
import { type StructName } from "../core/abi/pointers.ts";
import { isArrayProducer, type ArrayProducer, type ArrowCapsule } from "../native/protocol/symbols.ts";
import { isExactRecordBatch } from "./arrow_args.ts";
import { DataBuilder } from "./data_builder.ts";
import { BatchPlan } from "./batch_plan.ts";
import { releaseLazyData, releasedDataError } from "./lazy_data.ts";
import { batchWith } from "./record_batch.ts";
import { cachedSchemaOf } from "./schema_cache.ts";
import { convertAndEnd, convertArgs, convertOptionsArg, dataTypeOf, schemaOf, typedConversion, typeSignature, type ConvertOptions } from "./types.ts";

/** Any struct reference (the implementations; overloads say which). */
type AnyRef = StructRef<StructName>;

/** apache-arrow Data for `raw` (any node of an ImportedArray, taken with
 * its own offset). Zero-copy; arrow/data_builder.ts states how offsets map. */
export function toData(raw: RawArray, options: ConvertOptions = {}): Data {
  const data = rawDataOf(raw, convertArgs("toData", "raw", raw, "RawArray", options));
  noteConverted(raw.imported, data, releaseConverted);
  return data;
}

/** The fields of a Data that read the producer's memory. */
const memoryFields = ["values", "valueOffsets", "nullBitmap", "typeIds", "variadicBuffers"] as const;

/** `data` and its children, once their handle is disposed (its views of
 * the producer's memory are detached): every field that reads that
 * memory throws ReleasedError, saying where the handle was disposed;
 * the lengths stay (they are not the memory). A lazy Data refuses
 * through its own accessors (`releaseLazyData`): one store, not a field
 * replaced per buffer, and one nobody read never makes its views. */
function releaseData(data: Data, site: Error): void {
  const lazy = releaseLazyData(data, site);
  if (lazy === "batch") return;
  if (lazy === null) {
    const released = (): never => {
      throw releasedDataError(data, site);
    };
    for (const field of memoryFields) Object.defineProperty(data, field, { get: released, set: released, configurable: true, enumerable: false });
  }
  for (const child of data.children) releaseData(child, site);
}

/** Releases an object converted from a handle (ImportedArray.dispose
 * runs it on each object `noteConverted` recorded with it). */
export function releaseConverted(converted: object, site: Error): void {
  // What importRecordBatch makes, before any instanceof (see there).
  if (isExactRecordBatch(converted)) return releaseData(converted.data, site);
  if (converted instanceof Data) return releaseData(converted, site);
  if (converted instanceof RecordBatch) return releaseData(converted.data, site);
  if (converted instanceof Vector || converted instanceof Table) {
    for (const data of converted.data) releaseData(data, site);
  }
}

function rawDataOf(raw: RawArray, options: ConvertOptions): Data {
  const type = typedConversion(raw, () => dataTypeOf(raw, options));
  const builder = new DataBuilder(raw.imported, options);
  return raw.window === null ? builder.nodeAt(raw.index, type, 0, raw.length) : builder.node(raw, type, 0, raw.length);
}

/** The imported array (its root) as an apache-arrow Vector. */
export function toVector(imported: ImportedArray, options: ConvertOptions = {}): Vector {
  const vector = vectorOf(imported, convertArgs("toVector", "imported", imported, "ImportedArray", options));
  noteConverted(imported, vector, releaseConverted);
  return vector;
}

function vectorOf(imported: ImportedArray, options: ConvertOptions): Vector {
  return new Vector([rawDataOf(imported.root, options)]);
}

/**
 * The imported array as an apache-arrow RecordBatch. The root must be a
 * struct (a record batch as Arrow C++ and pyarrow export it): its children
 * become the columns, its metadata the schema metadata. Zero-copy.
 */
export function toRecordBatch(imported: ImportedArray, options: ConvertOptions = {}): RecordBatch {
  const batch = recordBatchOf(imported, convertArgs("toRecordBatch", "imported", imported, "ImportedArray", options));
  noteConverted(imported, batch, releaseConverted);
  return batch;
}

/** `toRecordBatch` without the argument checks (for this layer). */
export function recordBatchOf(imported: ImportedArray, options: ConvertOptions): RecordBatch {
  // (imported.window: the root's window, without making the root's RawArray.)
  if (imported.window !== null) {
    const root = imported.root;
    return batchWith(imported, typedConversion(root, () => schemaOf(root, options)), options);
  }
  const entry = cachedSchemaOf(imported, options);
  if (entry.plan === undefined) entry.plan = BatchPlan.of(imported, entry.schema);
  // As a stream's batches: the plan builds what fits, batchWith the rest
  // (and reports its errors).
  return entry.plan?.build(imported) ?? batchWith(imported, entry.schema, options);
}

/**
 * One apache-arrow Table from several imported record batches that share a
 * schema (the first batch's schema, including its metadata, is the
 * table's; dictionary-encoded columns share its dictionary types). Throws
 * InvalidArgumentError naming the first batch whose structure differs.
 */
export function toTable(importedList: Iterable<ImportedArray>, options: ConvertOptions = {}): Table {
  const fn = "toTable";
  const checked = convertOptionsArg(fn, options);
  if (typeof importedList !== "object" || importedList === null || typeof (importedList as Iterable<ImportedArray>)[Symbol.iterator] !== "function") {
    throw argumentError(fn, "importedList", "an iterable of ImportedArray", importedList);
  }
  const list = [...importedList];
  list.forEach((imported, i) => {
    if (!(imported instanceof ImportedArray)) throw argumentError(fn, `importedList[${i}]`, "an ImportedArray", imported);
  });
  const table = tableOf(list, checked);
  // Each handle's dispose empties its own batch (the Table's cached
  // offsets are not reset then: its numRows, a sum over the batches, is).
  table.batches.forEach((batch, i) => noteConverted(list[i], batch, releaseConverted));
  return table;
}

/** `toTable` without the argument checks (for this layer). */
export function tableOf(list: ImportedArray[], options: ConvertOptions): Table {
  if (list.length === 0) return new Table();
  const first = recordBatchOf(list[0], options);
  const signature = typeSignature(new Struct(first.schema.fields));
  const batches = [first];
  for (let i = 1; i < list.length; i++) {
    const root = list[i].root;
    const own = typedConversion(root, () => schemaOf(root, options));
    const ownSignature = typeSignature(new Struct(own.fields));
    if (ownSignature !== signature) {
      throw new InvalidArgumentError(Status.invalid_argument, `batch ${i} has schema ${ownSignature}, but batch 0 has ${signature}; a Table needs one schema`);
    }
    batches.push(batchWith(list[i], first.schema, options));
  }
  return new Table(first.schema, batches);
}

/** Options of `importVector` and `importRecordBatch`: validation,
 * conversion, and which struct the array pointer names. */
export type ImportConvertOptions = ImportOptions & ConvertOptions & {
  /** What `arrayPtr` points at: "array" (`ArrowArray*`) or "device_array"
   * (`ArrowDeviceArray*`). Defaults: "array" for importVector,
   * "device_array" for importRecordBatch. */
  as?: "array" | "device_array";
};

function importWith<T>(
  fn: string, schema: AnyRef | ArrayProducer | ArrowCapsule, array: AnyRef | ImportConvertOptions | undefined,
  given: ImportConvertOptions, kind: "array" | "device_array",
  convert: (imported: ImportedArray, options: ConvertOptions) => T,
): T {
  let imported: ImportedArray;
  let convertOptions: ConvertOptions = {};
  if (isArrayProducer(schema)) {
    // A protocol producer or capsule: (source, options?). Its structs are
    // only taken once the options are known good.
    const options = (array as ImportConvertOptions | undefined) ?? {};
    convertOptions = convertOptionsArg(fn, options, ["validation", "as"]);
    imported = ImportedArray.fromDeviceArray(schema, { validation: options.validation });
  } else {
    const options = given;
    let as = kind;
    let level = 0;
    // The structs are taken (released) even when an argument is bad.
    const arrayKind = ((options as ImportConvertOptions | null)?.as ?? kind) === "array" ? "ArrowArray" : "ArrowDeviceArray";
    const [schemaAddress, arrayAddress] = takeStructs(fn, [["schemaPtr", schema, "ArrowSchema"], ["arrayPtr", array, arrayKind]], () => {
      convertOptions = convertOptionsArg(fn, options, ["validation", "as"]);
      as = oneOfArg(fn, "options.as", options.as ?? kind, ["array", "device_array"]);
      level = validationLevelArg(fn, { validation: options.validation });
    }, probeDepthOf(options));
    // Probed once, above.
    imported = importTaken(as, schemaAddress, arrayAddress, level);
  }
  return convertAndEnd(imported, convert, convertOptions);
}

/**
 * `importVector` of C structs or a protocol producer (arrow/import_api.ts
 * holds the overloads, which say what each argument is): the structs are
 * moved in (left released, success or not) and the Vector's lifetime is
 * the garbage collector's: the producer's release runs once the last view
 * of its memory is collected. For an explicit end, use `ImportedArray` +
 * `toVector` and `dispose()` instead.
 */
export function vectorFromStructs(source: AnyRef | ArrayProducer | ArrowCapsule, arrayPtr?: AnyRef | ImportConvertOptions, options: ImportConvertOptions = {}): Vector {
  return importWith("importVector", source, arrayPtr, options, "array", vectorOf);
}

/** `importRecordBatch` of C structs or a protocol producer: as
 * `vectorFromStructs`, for a record batch (a struct root), from an
 * `ArrowDeviceArray*` by default. */
export function recordBatchFromStructs(source: AnyRef | ArrayProducer | ArrowCapsule, deviceArrayPtr?: AnyRef | ImportConvertOptions, options: ImportConvertOptions = {}): RecordBatch {
  return importWith("importRecordBatch", source, deviceArrayPtr, options, "device_array", recordBatchOf);
}

export { toDataType, toField, toSchema } from "./types.ts";
