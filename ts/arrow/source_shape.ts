/**
 * What kind of Arrow data a JS value is, for consumers that treat arrays,
 * re-readable batch lists, one-shot streams and schemas differently (the
 * Python exchange, ts/python/exchange.ts). Only this layer knows
 * apache-arrow's classes.
 */
import { Data, DataType, Field, RecordBatch, RecordBatchReader, Schema, Table, Vector } from "apache-arrow";
import { type ArraySource, type SchemaSource } from "./export.ts";
import { type StreamSource } from "./stream_export.ts";

export type SourceShape =
  /** Re-readable: a Table, or an array of RecordBatches (all of one schema). */
  | { shape: "batches"; schema: Schema; batches: RecordBatch[] }
  | { shape: "array"; source: ArraySource }
  | { shape: "schema"; source: SchemaSource }
  /** Read once: a RecordBatchReader or an iterable of batches. */
  | { shape: "stream"; source: StreamSource };

/** The shape of `value`, or null when it is none of these. */
export function shapeOf(value: unknown): SourceShape | null {
  if (value instanceof Table) return { shape: "batches", schema: value.schema, batches: value.batches };
  if (value instanceof RecordBatch || value instanceof Vector || value instanceof Data) return { shape: "array", source: value };
  if (value instanceof Schema || value instanceof Field || value instanceof DataType) return { shape: "schema", source: value };
  if (Array.isArray(value) && value.length > 0 && value.every((item) => item instanceof RecordBatch)) {
    return { shape: "batches", schema: (value[0] as RecordBatch).schema, batches: value as RecordBatch[] };
  }
  if (value instanceof RecordBatchReader) return { shape: "stream", source: value };
  if (value !== null && typeof value === "object" && !Array.isArray(value) && (Symbol.iterator in value || Symbol.asyncIterator in value)) {
    return { shape: "stream", source: value as StreamSource };
  }
  return null;
}
