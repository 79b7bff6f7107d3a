/**
 * apache-arrow -> C Data Interface, without copying data buffers: the
 * public array and schema exports (`exportArray`,
 * `exportSchema`, `exportBatches`), which pick the Data and schema a
 * source exports as and build the C structs with one native call.
 *
 * Who does what: arrow/schema_plan.ts encodes schemas and caches their
 * native templates; arrow/array_plan.ts plans arrays (buffer addresses,
 * kept alive by the keepalive registry until the consumer releases the
 * tree, native/keepalive.ts); arrow/export_memo.ts remembers plans so the
 * same batch exported again skips planning.
 *
 * Converted imports. A buffer may be a view of an import's memory
 * (arrow/import.ts is zero-copy): the export then holds a native
 * reference on that import's owner, taken before the tree is built and
 * dropped by the consumer's release (keepalive.ts `retainWithOwners`), so the
 * import's `dispose()` never frees what a consumer still reads. A view
 * already detached by `dispose()` is refused (ReleasedError).
 */
import { type Pointer } from "bun:ffi";
import { Data, Field, RecordBatch, Schema, Table, Vector } from "apache-arrow";
import { argumentError, oneOfArg, optionsArg } from "../core/args.ts";
import { InvalidArgumentError, Status } from "../core/errors.ts";
import { check, native } from "../core/ffi/library.ts";
import { adoptExportSlot, exportSlotKinds, type ExportedArray, type ExportedKind } from "../native/exported.ts";
import { drainReleased, forgetUnused, retainWithOwners } from "../native/keepalive.ts";
import { arrowArg, arrowKindError, arrowKindOf, isExactRecordBatch } from "./arrow_args.ts";
import { planFresh, plannedLength, plannedWords, memoOf } from "./array_plan.ts";
import { imageOf } from "./export_memo.ts";
import { schemaEntryOf, schemaKinds, templateOf, unnamedField, type SchemaEntry, type SchemaSource } from "./schema_plan.ts";

export { type SchemaSource } from "./schema_plan.ts";

/** What `exportArray` takes: apache-arrow Data, a Vector (one chunk), a
 * RecordBatch (exported as a struct array) or a Table of one batch (as
 * that batch; `exportStream` exports any Table as a stream). */
export type ArraySource = Data | Vector | RecordBatch | Table;

/** Options of `exportArray`, `exportBatches`. */
export type ExportOptions<K extends Exclude<ExportedKind, "schema"> = Exclude<ExportedKind, "schema">> = {
  /** "device_array" (default): ArrowSchema + ArrowDeviceArray on the CPU
   * device. "array": ArrowSchema + ArrowArray. */
  as?: K;
  /** The field a Data or Vector exports as (its name, nullability and
   * metadata; its type must be the data's). Default: unnamed, nullable. */
  field?: Field;
};

const arrayKinds = ["Data", "Vector", "RecordBatch", "Table"] as const;

const exportOptionKeys = ["as"] as const;
const exportArrayOptionKeys = ["as", "field"] as const;

/** Checks exportBatches-style options for `fn`; returns the struct kind. */
function exportKindArg(fn: string, options: ExportOptions | undefined, keys: readonly string[] = exportOptionKeys): Exclude<ExportedKind, "schema"> {
  const checked = optionsArg(fn, "options", options, keys);
  return oneOfArg(fn, "options.as", checked.as ?? "device_array", ["device_array", "array"]);
}

/** Whether a RecordBatch's own schema describes its columns: then it
 * exports as `source.data` under `source.schema` (whose template is
 * cached). Each column's type comes from its own Data: apache-arrow's
 * RecordBatch constructor merges repeated field names (Schema.assign), so
 * for them neither RecordBatch.schema nor (after a slice) the struct type
 * describes the columns any more; the child Data always does. */
function schemaFits(source: RecordBatch, entry: SchemaEntry = schemaEntryOf(source.schema)): boolean {
  return !entry.repeatsNames && source.schema.fields.length === source.data.children.length;
}

/** The struct Data and schema a RecordBatch exports as. */
function batchData(source: RecordBatch): { data: Data; schema: SchemaSource } {
  if (schemaFits(source)) return { data: source.data, schema: source.schema };
  const children = source.data.children;
  const fields = source.data.type.children.map((f, i) => (f.type === children[i]?.type ? f : new Field(f.name, children[i].type, f.nullable, f.metadata)));
  return { data: source.data, schema: new Schema(fields, source.schema.metadata) };
}

/** The single Data (plus its field) that `source` exports as. */
function dataOf(fn: string, source: ArraySource): { data: Data; schema: SchemaSource } {
  if (arrowKindOf(source, ["Table"]) !== null) {
    const batches = (source as Table).batches;
    if (batches.length !== 1) {
      throw new InvalidArgumentError(Status.invalid_argument, `${fn}: a Table with ${batches.length} batches cannot be one C array; export it as a stream (exportStream) or each batch (exportBatches)`);
    }
    source = batches[0]!;
  }
  if (source instanceof RecordBatch) return batchData(source);
  if (source instanceof Vector) {
    if (source.data.length !== 1) {
      throw new InvalidArgumentError(Status.invalid_argument, `a Vector with ${source.data.length} chunks cannot be one C array; export each chunk (vector.data[i]) or each batch of a table`);
    }
    return { data: source.data[0], schema: unnamedField(source.type) };
  }
  if (source instanceof Data) return { data: source, schema: unnamedField(source.type) };
  throw arrowKindError("exportArray", "source", source, arrayKinds);
}

/**
 * Exports `source` as ArrowSchema + ArrowDeviceArray (CPU: device_id -1,
 * sync_event NULL, reserved zeroed) or ArrowSchema + ArrowArray, without
 * copying any data buffer. A RecordBatch exports as a struct array whose
 * schema carries the batch schema's metadata.
 *
 * The returned handle owns the two base structs. Hand their addresses
 * (`handle.schema`, `handle.array`) to C; a consumer that moves them takes
 * ownership. The JS buffers stay alive and in place until the consumer's
 * release runs (on any thread), even if the app drops every reference.
 * Call `handle.release()` (or `using`) when done: it releases whatever was
 * not moved.
 */
export function exportArray(source: ArraySource, options?: ExportOptions<"device_array">): ExportedArray<"device_array">;
/** `exportArray` as ArrowSchema + ArrowArray (`{ as: "array" }`). */
export function exportArray(source: ArraySource, options: ExportOptions<"array">): ExportedArray<"array">;
/** `exportArray` with the kind known only at run time. */
export function exportArray(source: ArraySource, options?: ExportOptions): ExportedArray<"array" | "device_array">;
export function exportArray(source: ArraySource, options?: ExportOptions): ExportedArray<"array" | "device_array"> {
  const kind = options === undefined ? "device_array" : exportKindArg("exportArray", options, exportArrayOptionKeys);
  return exportArrayAs("exportArray", source, kind, options?.field);
}

function exportArrayAs<K extends Exclude<ExportedKind, "schema">>(fn: string, source: ArraySource, kind: K, field?: Field): ExportedArray<K> {
  // An exact RecordBatch (the common case) is recognised without
  // apache-arrow's Symbol.hasInstance; anything else takes the full check.
  const sourceKind = isExactRecordBatch(source) ? "RecordBatch" : arrowArg(fn, "source", source, arrayKinds);
  if (field !== undefined) {
    if (sourceKind === "RecordBatch" || arrowKindOf(field, ["Field"]) === null) {
      throw argumentError(fn, "options.field", "an apache-arrow Field (for a Data or Vector source)", field);
    }
  }
  drainReleased();
  let data: Data;
  let template: number;
  const batchSource = source as RecordBatch;
  const entry = sourceKind === "RecordBatch" ? schemaEntryOf(batchSource.schema) : undefined;
  if (entry !== undefined && schemaFits(batchSource, entry)) {
    // batchData's common case, without its result object or a second
    // look-up of the schema's entry.
    data = batchSource.data;
    template = entry.template;
  } else {
    const exported = sourceKind === "RecordBatch" ? batchData(batchSource) : dataOf(fn, source);
    data = exported.data;
    if (field !== undefined && field.type.typeId !== data.type.typeId) {
      throw new InvalidArgumentError(Status.invalid_argument, `${fn}: options.field must have the data's own type`);
    }
    template = templateOf(field ?? exported.schema);
  }
  // One native call builds the slot, the schema (from the cached template)
  // and the array tree: copied from the memo's image when the same batch
  // was exported before (numbers only, no plan to read), else from a
  // fresh plan. The handle owns the slot from then on.
  const batch = memoOf(data);
  let keepaliveId: number;
  let address: Pointer | null;
  if (batch !== undefined) {
    const image = imageOf(batch);
    keepaliveId = retainWithOwners(batch.retained, batch.owners);
    address = native.abd_export_slot_from_image(template as Pointer, image as Pointer, keepaliveId, exportSlotKinds[kind]);
  } else {
    keepaliveId = planFresh(data);
    address = native.abd_export_slot_new(template as Pointer, plannedWords(), plannedLength(), keepaliveId, exportSlotKinds[kind]);
  }
  if (!address) {
    forgetUnused(keepaliveId);
    check(native.abd_last_status() || Status.internal);
  }
  return adoptExportSlot(kind, address as number);
}

/** Exports a DataType, Field or Schema as an ArrowSchema. */
export function exportSchema(source: SchemaSource): ExportedArray<"schema"> {
  arrowArg("exportSchema", "source", source, schemaKinds);
  const address = native.abd_export_slot_new(templateOf(source) as Pointer, null, 0, 0, exportSlotKinds.schema);
  if (!address) check(native.abd_last_status() || Status.internal);
  return adoptExportSlot("schema", address as number);
}

/** Exports every batch of a table; one handle per batch. */
export function exportBatches(batches: Iterable<RecordBatch>, options?: ExportOptions<"device_array">): ExportedArray<"device_array">[];
/** `exportBatches` as ArrowSchema + ArrowArray pairs (`{ as: "array" }`). */
export function exportBatches(batches: Iterable<RecordBatch>, options: ExportOptions<"array">): ExportedArray<"array">[];
/** `exportBatches` with the kind known only at run time. */
export function exportBatches(batches: Iterable<RecordBatch>, options?: ExportOptions): ExportedArray<"array" | "device_array">[];
export function exportBatches(batches: Iterable<RecordBatch>, options: ExportOptions = {}): ExportedArray<"array" | "device_array">[] {
  const fn = "exportBatches";
  const kind = exportKindArg(fn, options);
  if (typeof batches !== "object" || batches === null || typeof (batches as Iterable<RecordBatch>)[Symbol.iterator] !== "function") {
    throw argumentError(fn, "batches", "an iterable of apache-arrow RecordBatch (e.g. table.batches)", batches);
  }
  const out: ExportedArray<"array" | "device_array">[] = [];
  try {
    let i = 0;
    for (const batch of batches) {
      arrowArg(fn, `batches[${i++}]`, batch, ["RecordBatch"]);
      out.push(exportArrayAs(fn, batch, kind));
    }
    return out;
  } catch (error) {
    for (const handle of out) handle.release();
    throw error;
  }
}
