/**
 * RecordBatches from imported struct arrays: the batch object itself
 * (`makeBatch`, without apache-arrow's schema re-derivation), the one
 * Struct type of each Schema's batches, and `batchWith`, the general
 * path that builds any batch through the Data builder (and reports its
 * errors) where the batch plan (arrow/batch_plan.ts) does not fit.
 */
import { Data, RecordBatch, Schema, Struct } from "apache-arrow";
import { type ImportedArray } from "../native/imported.ts";
import { newData } from "./arrow_data.ts";
import { DataBuilder } from "./data_builder.ts";
import { type ConvertOptions } from "./types.ts";

/**
 * apache-arrow's RecordBatch constructor re-derives the schema through
 * Schema.assign: O(fields^2), and it merges repeated field names into one
 * (a corrupt schema). A batch whose columns all have its length needs none
 * of that: it is exactly these own fields. Checked once against the
 * constructor's result, so a different apache-arrow falls back to it.
 */
const batchFields = (() => {
  const probe = new RecordBatch(new Schema([]), new Data(new Struct([]), 0, 0, 0, undefined, []) as Data<Struct>);
  const keys = Object.keys(probe).sort().join(",");
  return keys === "_metadata,data,schema" ? keys : null;
})();

export function makeBatch(schema: Schema, data: Data<Struct>): RecordBatch {
  if (batchFields === null) return new RecordBatch(schema, data);
  // Plain stores in the constructor's order (Object.assign of a literal
  // costs ~0.5 µs more per batch, measured).
  const batch = Object.create(RecordBatch.prototype) as { schema: Schema; data: Data<Struct>; _metadata: Map<string, string> };
  batch.schema = schema;
  batch.data = data;
  batch._metadata = new Map<string, string>();
  return batch as unknown as RecordBatch;
}

/** The Struct type of each Schema's batches (one per Schema object). */
const structOfSchema = new WeakMap<Schema, Struct>();

export function structOf(schema: Schema): Struct {
  let type = structOfSchema.get(schema);
  if (type === undefined) structOfSchema.set(schema, type = new Struct(schema.fields));
  return type;
}

/** Builds the batch with the types of `schema` (already checked to match
 * the root's structure). */
export function batchWith(imported: ImportedArray, schema: Schema, options: ConvertOptions): RecordBatch {
  const root = imported.root;
  const type = structOf(schema);
  const builder = new DataBuilder(imported, options);
  const built = root.window === null ? builder.nodeAt(root.index, type, 0, root.length) : builder.node(root, type, 0, root.length);
  // A batch has no row-level validity (apache-arrow's own batches have
  // none); the columns keep theirs.
  const data = newData(type, 0, root.length, 0, undefined, undefined, undefined, built.children) as Data<Struct>;
  return makeBatch(schema, data);
}
