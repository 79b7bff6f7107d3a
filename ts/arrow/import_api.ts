/**
 * The public import API: one name per apache-arrow kind (`importVector`,
 * `importRecordBatch`, `importSchema`, `importField`, `importDataType`,
 * `importData`), each taking what the caller holds: C struct addresses or
 * a protocol producer (moved in, then the GC's), or a handle already
 * imported (`ImportedArray`, `RawArray`, `ImportedStream`: the handle
 * stays the caller's, and its `dispose()` empties what was converted).
 * This module owns the names and the argument checks; the conversion is
 * import.ts's and types.ts's.
 */
import { type Data, type DataType, type Field, type RecordBatch, type Schema, type Vector } from "apache-arrow";
import { argumentError } from "../core/args.ts";
import { type StructRef } from "../native/c_structs.ts";
import { ImportedArray, RawArray } from "../native/imported.ts";
import { ImportedStream } from "../native/imported_stream.ts";
import { type ArrayProducer, type ArrowCapsule } from "../native/protocol/symbols.ts";
import {
  recordBatchFromStructs, vectorFromStructs, toData, toDataType, toField, toRecordBatch, toSchema, toVector,
  type ImportConvertOptions,
} from "./import.ts";
import { schemaOfStream } from "./stream_import.ts";
import { convertArgs, convertOptionsArg, type ConvertOptions } from "./types.ts";

type AnyRef = StructRef<"ArrowSchema"> | StructRef<"ArrowArray"> | StructRef<"ArrowDeviceArray">;

/**
 * An apache-arrow Vector over the producer's memory, zero-copy.
 *
 * From `schemaPtr` + `arrayPtr` (an `ArrowArray*` by default; `{ as:
 * "device_array" }` for an `ArrowDeviceArray*`), or from a protocol
 * producer or array capsule: the structs are moved in (left released,
 * success or not), and the producer's release runs once the last view of
 * its memory is garbage-collected.
 */
export function importVector(schemaPtr: StructRef<"ArrowSchema">, arrayPtr: StructRef<"ArrowArray">, options?: ImportConvertOptions & { as?: "array" }): Vector;
/** `importVector` from an `ArrowDeviceArray*` (`{ as: "device_array" }`). */
export function importVector(schemaPtr: StructRef<"ArrowSchema">, deviceArrayPtr: StructRef<"ArrowDeviceArray">, options: ImportConvertOptions & { as: "device_array" }): Vector;
/** Takes the array of any protocol producer or array capsule
 * (docs/protocol.md), preferring its device method. */
export function importVector(source: ArrayProducer | ArrowCapsule, options?: ImportConvertOptions): Vector;
/** The root of an ImportedArray, which stays the caller's: its
 * `dispose()` releases the memory now and empties the Vector. */
export function importVector(imported: ImportedArray, options?: ConvertOptions): Vector;
export function importVector(source: AnyRef | ArrayProducer | ArrowCapsule | ImportedArray, arrayPtr?: AnyRef | ImportConvertOptions, options: ImportConvertOptions = {}): Vector {
  if (source instanceof ImportedArray) return toVector(source, convertOptionsArg("importVector", arrayPtr));
  return vectorFromStructs(source, arrayPtr, options);
}

/**
 * An apache-arrow RecordBatch over the producer's memory, zero-copy. The
 * root must be a struct (a record batch as Arrow C++ and pyarrow export
 * it): its children become the columns, its metadata the schema's.
 *
 * From `schemaPtr` + `deviceArrayPtr` (an `ArrowDeviceArray*` by default;
 * `{ as: "array" }` for an `ArrowArray*`), or from a protocol producer or
 * array capsule, as `importVector` takes them.
 *
 * Each call is one batch on its own: its dictionary fields get dictionary
 * ids of their own, so `new Table(batches)` of batches imported one by
 * one refuses dictionary columns. For the batches of one stream, use
 * `importTable` or `recordBatches`, which share the ids, or
 * `importTable(handles)` for ImportedArray batches.
 */
export function importRecordBatch(schemaPtr: StructRef<"ArrowSchema">, deviceArrayPtr: StructRef<"ArrowDeviceArray">, options?: ImportConvertOptions & { as?: "device_array" }): RecordBatch;
/** `importRecordBatch` from an `ArrowArray*` (`{ as: "array" }`). */
export function importRecordBatch(schemaPtr: StructRef<"ArrowSchema">, arrayPtr: StructRef<"ArrowArray">, options: ImportConvertOptions & { as: "array" }): RecordBatch;
/** Takes the array of any protocol producer or array capsule
 * (docs/protocol.md), preferring its device method. */
export function importRecordBatch(source: ArrayProducer | ArrowCapsule, options?: ImportConvertOptions): RecordBatch;
/** An ImportedArray, which stays the caller's: its `dispose()` releases
 * the memory now, and a read of the RecordBatch then throws ReleasedError. */
export function importRecordBatch(imported: ImportedArray, options?: ConvertOptions): RecordBatch;
export function importRecordBatch(source: AnyRef | ArrayProducer | ArrowCapsule | ImportedArray, deviceArrayPtr?: AnyRef | ImportConvertOptions, options: ImportConvertOptions = {}): RecordBatch {
  if (source instanceof ImportedArray) return toRecordBatch(source, convertOptionsArg("importRecordBatch", deviceArrayPtr));
  return recordBatchFromStructs(source, deviceArrayPtr, options);
}

/**
 * The apache-arrow Schema of an imported stream (read from a zero-length
 * batch; the stream's position is unchanged), of an ImportedArray's root,
 * or of a struct node (`RawArray`) of one.
 */
export function importSchema(source: ImportedStream | ImportedArray | RawArray, options: ConvertOptions = {}): Schema {
  const fn = "importSchema";
  if (source instanceof ImportedStream) return schemaOfStream(source, convertOptionsArg(fn, options));
  if (source instanceof ImportedArray) return toSchema(source.root, convertOptionsArg(fn, options));
  if (source instanceof RawArray) return toSchema(source, convertOptionsArg(fn, options));
  throw argumentError(fn, "source", "an ImportedStream, an ImportedArray or a RawArray (e.g. imported.root)", source);
}

/** The apache-arrow Field of `raw` (any node of an ImportedArray): its
 * name, type, nullability and metadata. */
export function importField(raw: RawArray, options: ConvertOptions = {}): Field {
  return toField(raw, convertArgs("importField", "raw", raw, "RawArray", options));
}

/** The apache-arrow DataType of `raw` (any node of an ImportedArray). */
export function importDataType(raw: RawArray, options: ConvertOptions = {}): DataType {
  return toDataType(raw, convertArgs("importDataType", "raw", raw, "RawArray", options));
}

/** apache-arrow Data for `raw` (any node of an ImportedArray, taken with
 * its own offset), zero-copy; the ImportedArray's `dispose()` empties it. */
export function importData(raw: RawArray, options: ConvertOptions = {}): Data {
  return toData(raw, convertArgs("importData", "raw", raw, "RawArray", options));
}
