/**
 * Imported C data -> apache-arrow Data, Vector, RecordBatch and Table,
 * without copying buffers.
 *
 * Every buffer becomes a typed-array view of the producer's memory, made
 * from the ImportedArray's one ArrayBuffer per buffer (`prefetchAll`: one
 * native call pays every view's owner reference). A view holds its owner
 * until it is garbage-collected, so the producer's release runs once the
 * last apache-arrow object using its memory is gone; `imported.dispose()`
 * ends that at once (views then read as empty).
 *
 * Record batches built through a plan (`BatchPlan`: toRecordBatch,
 * importRecordBatch, a stream's batches) make their views on first read
 * instead (arrow/lazy_data.ts): one view holds the batch until then, and
 * the first read of any buffer makes all of them.
 *
 * Offsets. The C interface applies one `offset` to every buffer of a node;
 * apache-arrow slices value buffers to the node's start and keeps
 * `Data.offset` for bitmaps only (docs/design.md). A node with
 * C offset k becomes: bitmaps whole with `Data.offset = k`, values from
 * `k * stride`, offsets from `k` (length + 1 of them). apache-arrow slices
 * the children of structs, sparse unions and fixed-size lists together with
 * their parent while C adds the parent's offset when reading them, so such
 * a child's effective offset is its own plus the parent's (times the list
 * size), and its length the parent's (times the list size). Children of
 * lists, maps and dense unions, and dictionaries, keep their own.
 *
 * List-view, large list-view and run-end encoded (no apache-arrow type)
 * throw UnsupportedError unless `{ materialize: true }` (arrow/types.ts).
 */
import {
  Data, DataType, IntervalUnit, RecordBatch, Schema, Struct, Table, Type, UnionMode, Vector,
  type Decimal, type Dictionary, type FixedSizeBinary, type FixedSizeList, type Interval, type Union,
} from "apache-arrow";
import { argumentError, oneOfArg } from "../core/args.ts";
import { InvalidArgumentError, InvalidLayoutError, Status } from "../core/errors.ts";
import { ImportedArray, hostAccessError, type ImportOptions, type RawArray } from "../native/imported.ts";
import {
  DeferredViews, adoptImportSnapshot, deferHandleViews, handleTables, handleViews, noteConverted, onDisposeEmpty, pullInto, pullTransient, pulledBatch, pulledViews,
  releasePulled, schemaKeyOf, schemaMatchesKey, type PulledBatch,
} from "../native/batch_source.ts";
import { LazyBatch, LazyKind, disposedBuffer, emptyBytes, lazyDataAvailable, type ReadProbe, type ViewConstructor } from "./lazy_data.ts";
import { type ImportedStream } from "../native/imported_stream.ts";
import { takeStructs, type StructRef } from "../native/c_structs.ts";
import { branded, type StructName } from "../core/abi/pointers.ts";

/** Any struct reference (the implementations; overloads say which). */
type AnyRef = StructRef<StructName>;
import { isArrayProducer, type ArrayProducer, type ArrowCapsule } from "../native/protocol/symbols.ts";
import { listViewToList, runEndToPlain } from "./materialize.ts";
import { newData, strideOf as strideOfData } from "./arrow_data.ts";
import { BufferWord, NodeWord, OwnerInfoWord, TypeId, bufferStride, nodeStride, ownerInfoWords } from "../core/abi/layout.ts";
import { conversionError, convertArgs, convertOptionsArg, dataTypeOf, describeNode, nodePath, schemaOf, typedConversion, typeSignature, type ConvertOptions } from "./types.ts";

const empty = new ArrayBuffer(0);

/** Elements per value in the typed array apache-arrow uses for `type`. */
function strideOf(type: DataType): number {
  switch (type.typeId) {
    case Type.Decimal: return (type as Decimal).bitWidth / 32;
    case Type.FixedSizeBinary: return (type as FixedSizeBinary).byteWidth;
    case Type.Interval: {
      const unit = (type as Interval).unit;
      return unit === IntervalUnit.MONTH_DAY_NANO ? 4 : unit === IntervalUnit.DAY_TIME ? 2 : 1;
    }
    default: return 1;
  }
}

/** The type ids `DataBuilder.fastNode` builds, with the buffers each has:
 * fixed-width values, booleans, (large) binary and utf8, structs. */
const fastBuffers: number[] = [];
for (const id of [
  TypeId.int8, TypeId.uint8, TypeId.int16, TypeId.uint16, TypeId.int32, TypeId.uint32, TypeId.int64, TypeId.uint64,
  TypeId.float16, TypeId.float32, TypeId.float64, TypeId.decimal, TypeId.fixed_size_binary, TypeId.date32, TypeId.date64,
  TypeId.time32, TypeId.time64, TypeId.timestamp, TypeId.duration, TypeId.interval_months, TypeId.interval_day_time,
  TypeId.interval_month_day_nano, TypeId.boolean,
]) fastBuffers[id] = 2;
for (const id of [TypeId.binary, TypeId.utf8, TypeId.large_binary, TypeId.large_utf8]) fastBuffers[id] = 3;
fastBuffers[TypeId.struct] = 1;

/**
 * Builds apache-arrow Data over one ImportedArray's memory.
 *
 * Two paths, one result. `nodeAt` reads the handle's node and buffer
 * tables directly for the common types whose buffer sizes validation
 * computed (no RawArray, no closure per node); everything else (and a
 * node seen through a child or slice handle's window) goes through
 * `node`, which reads RawArray accessors. Either way every buffer view
 * comes from the handle's prefetched ArrayBuffers (`prefetchAll`).
 */
class DataBuilder {
  readonly words: Float64Array;
  readonly nodesAt: number;
  readonly buffersAt: number;

  constructor(readonly imported: ImportedArray, readonly options: ConvertOptions) {
    if (!imported.hostReadable) throw hostAccessError(imported.deviceType, imported.deviceId, "converting to apache-arrow");
    imported.prefetchAll();
    const { words, nodesAt, buffersAt } = handleTables(imported);
    this.words = words;
    this.nodesAt = nodesAt;
    this.buffersAt = buffersAt;
  }

  /** The Data of node `n` (taken with its own offset, no window), as
   * `node` builds it; see the class comment. */
  nodeAt(n: number, type: DataType, shift: number, length: number): Data {
    const at = this.nodesAt + n * nodeStride;
    const words = this.words;
    const typeId = words[at + NodeWord.type_id];
    if (words[at + NodeWord.dictionary] < 0 && fastBuffers[typeId] !== undefined) {
      let data: Data | null;
      try {
        data = this.fastNode(n, at, typeId, type, shift, length);
      } catch (error) {
        throw conversionError(this.imported.node(n), error);
      }
      if (data !== null) return data;
    }
    return this.node(this.imported.node(n), type, shift, length);
  }

  /** Buffer `b`'s size in bytes (-1: validation did not compute it). */
  #size(b: number): number {
    return this.words[this.buffersAt + b * bufferStride + BufferWord.size_bytes];
  }

  /** The whole buffer `b` as bytes. */
  #wholeBytes(b: number): Uint8Array {
    const memory = this.imported.bufferMemory(b);
    return memory.byteLength === 0 ? new Uint8Array(memory) : new Uint8Array(memory, 0, this.#size(b));
  }

  /** `count` elements of buffer `b` (buffer `i` of node `n`) from element
   * `first`, checked against its size as `view` does. */
  #slots<T extends NodeJS.TypedArray>(Ctor: ViewConstructor<T>, n: number, b: number, i: number, first: number, count: number): T {
    const memory = this.imported.bufferMemory(b);
    if (count === 0) return new Ctor(memory, 0, 0);
    const byteOffset = first * Ctor.BYTES_PER_ELEMENT;
    const byteLength = count * Ctor.BYTES_PER_ELEMENT;
    const size = memory.byteLength === 0 ? 0 : this.#size(b);
    if (byteOffset + byteLength > size) {
      throw new InvalidLayoutError(Status.invalid_layout, `${describeNode(this.imported.node(n))}: buffer ${i} holds ${size} bytes, but slots need bytes [${byteOffset}, ${byteOffset + byteLength})`);
    }
    return new Ctor(memory, byteOffset, count);
  }

  /** `nodeAt`'s table-reading path; null when a buffer's size is unknown
   * (then `node` reads it). Same Data as `nodeUnchecked` builds. */
  private fastNode(n: number, at: number, typeId: number, type: DataType, shift: number, length: number): Data | null {
    const words = this.words;
    const first = words[at + NodeWord.first_buffer];
    const nBuffers = words[at + NodeWord.n_buffers];
    if (nBuffers !== fastBuffers[typeId]) return null;
    for (let i = 0; i < nBuffers; i++) if (this.#size(first + i) < 0) return null;
    const offset = words[at + NodeWord.offset] + shift;
    const exact = shift === 0 && length === words[at + NodeWord.length];
    const bitmap = this.#wholeBytes(first);
    const nulls = this.nullCount(bitmap, exact, words[at + NodeWord.null_count]);
    switch (typeId) {
      case TypeId.boolean:
        return newData(type, offset, length, nulls, undefined, this.#wholeBytes(first + 1), bitmap);
      case TypeId.struct: {
        const count = words[at + NodeWord.n_children];
        const firstChild = words[at + NodeWord.first_child];
        const fields = type.children;
        // Pushed, not `new Array(count)`: see BatchPlan.#children.
        const children: Data[] = [];
        for (let i = 0; i < count; i++) children.push(this.nodeAt(firstChild + i, fields[i].type, offset, length));
        return newData(type, offset, length, nulls, undefined, undefined, bitmap, children);
      }
      case TypeId.binary: case TypeId.utf8: case TypeId.large_binary: case TypeId.large_utf8: {
        const Ctor: typeof Int32Array | typeof BigInt64Array = typeId === TypeId.large_binary || typeId === TypeId.large_utf8 ? BigInt64Array : Int32Array;
        // A zero-length array may have no offsets at all: a single 0.
        const offsets = length === 0 && this.imported.bufferMemory(first + 1).byteLength === 0
          ? new Ctor(1) : this.#slots<Int32Array | BigInt64Array>(Ctor, n, first + 1, 1, offset, length + 1);
        return newData(type, offset, length, nulls, offsets, this.#wholeBytes(first + 2), bitmap);
      }
      default: {
        const stride = strideOf(type);
        const values = this.#slots<NodeJS.TypedArray>(type.ArrayType, n, first + 1, 1, offset * stride, length * stride);
        return newData(type, offset, length, nulls, undefined, values, bitmap);
      }
    }
  }

  /** `count` elements of buffer `i` of `raw` from element `first`, checked
   * against the buffer's size (which only "none" validation leaves
   * unchecked). */
  view<T extends NodeJS.TypedArray>(Ctor: ViewConstructor<T>, raw: RawArray, i: number, first: number, count: number): T {
    const memory = raw.memory(i);
    if (count === 0) return new Ctor(memory, 0, 0);
    const byteOffset = first * Ctor.BYTES_PER_ELEMENT;
    const byteLength = count * Ctor.BYTES_PER_ELEMENT;
    const size = memory.byteLength === 0 ? 0 : raw.byteLength(i);
    if (byteOffset + byteLength > size) {
      throw new InvalidLayoutError(Status.invalid_layout, `${describeNode(raw)}: buffer ${i} holds ${size} bytes, but slots need bytes [${byteOffset}, ${byteOffset + byteLength})`);
    }
    return new Ctor(memory, byteOffset, count);
  }

  /** The whole buffer `i` as bytes (bitmaps, value bytes, variadic data). */
  bytes(raw: RawArray, i: number): Uint8Array {
    if (i >= raw.nBuffers) return new Uint8Array(empty);
    const memory = raw.memory(i);
    return memory.byteLength === 0 ? new Uint8Array(memory) : new Uint8Array(memory, 0, raw.byteLength(i));
  }

  /** length + 1 offsets from slot `first`; a zero-length array may have
   * none at all, then it gets a single 0. */
  offsets(raw: RawArray, Ctor: typeof Int32Array | typeof BigInt64Array, first: number, length: number): Int32Array | BigInt64Array {
    if (length === 0 && raw.memory(1).byteLength === 0) return new Ctor(1);
    return this.view<Int32Array | BigInt64Array>(Ctor, raw, 1, first, length + 1);
  }

  /**
   * The Data for `raw` as apache-arrow type `type`. `shift` is what the
   * parent adds to this node's C offset (see the module comment) and
   * `length` its length as apache-arrow sees it.
   */
  node(raw: RawArray, type: DataType, shift: number, length: number): Data {
    try {
      return this.nodeUnchecked(raw, type, shift, length);
    } catch (error) {
      throw conversionError(raw, error);
    }
  }

  private nodeUnchecked(raw: RawArray, type: DataType, shift: number, length: number): Data {
    const offset = raw.offset + shift;
    const exact = shift === 0 && length === raw.length;
    const known = raw.nullCount;
    const typeId = raw.typeId;

    if (raw.dictionary) {
      const dictType = type as Dictionary;
      const bitmap = this.bytes(raw, 0);
      const values = this.view<NodeJS.TypedArray>(dictType.indices.ArrayType, raw, 1, offset, length);
      const dict = raw.dictionary;
      const dictionary = new Vector([this.nodeAt(dict.index, dictType.dictionary, 0, dict.length)]);
      return newData(type, offset, length, this.nullCount(bitmap, exact, known), undefined, values, bitmap, [], dictionary);
    }

    switch (typeId) {
      case "null":
        return newData(type, offset, length, length, undefined, undefined, undefined);
      case "boolean": {
        const bitmap = this.bytes(raw, 0);
        return newData(type, offset, length, this.nullCount(bitmap, exact, known), undefined, this.bytes(raw, 1), bitmap);
      }
      case "int8": case "uint8": case "int16": case "uint16": case "int32": case "uint32": case "int64": case "uint64":
      case "float16": case "float32": case "float64": case "decimal": case "fixed_size_binary":
      case "date32": case "date64": case "time32": case "time64": case "timestamp": case "duration":
      case "interval_months": case "interval_day_time": case "interval_month_day_nano": {
        const bitmap = this.bytes(raw, 0);
        const stride = strideOf(type);
        const values = this.view<NodeJS.TypedArray>(type.ArrayType, raw, 1, offset * stride, length * stride);
        return newData(type, offset, length, this.nullCount(bitmap, exact, known), undefined, values, bitmap);
      }
      case "binary": case "utf8": case "large_binary": case "large_utf8": {
        const bitmap = this.bytes(raw, 0);
        const large = typeId === "large_binary" || typeId === "large_utf8";
        const offsets = this.offsets(raw, large ? BigInt64Array : Int32Array, offset, length);
        return newData(type, offset, length, this.nullCount(bitmap, exact, known), offsets, this.bytes(raw, 2), bitmap);
      }
      case "binary_view": case "utf8_view": {
        const bitmap = this.bytes(raw, 0);
        const views = this.view(Uint8Array, raw, 1, offset * 16, length * 16);
        const variadic: Uint8Array[] = [];
        for (let i = 2; i < raw.nBuffers - 1; i++) variadic.push(this.bytes(raw, i));
        return newData(type, offset, length, this.nullCount(bitmap, exact, known), undefined, views, bitmap, [], undefined, undefined, variadic);
      }
      case "list": case "large_list": case "map": {
        const bitmap = this.bytes(raw, 0);
        const offsets = this.offsets(raw, typeId === "large_list" ? BigInt64Array : Int32Array, offset, length);
        const child = raw.child(0);
        const childData = this.nodeAt(child.index, type.children[0].type, 0, child.length);
        return newData(type, offset, length, this.nullCount(bitmap, exact, known), offsets, undefined, bitmap, [childData]);
      }
      case "fixed_size_list": {
        const bitmap = this.bytes(raw, 0);
        const size = (type as FixedSizeList).listSize;
        const childData = this.nodeAt(raw.child(0).index, type.children[0].type, offset * size, length * size);
        return newData(type, offset, length, this.nullCount(bitmap, exact, known), undefined, undefined, bitmap, [childData]);
      }
      case "struct": {
        const bitmap = this.bytes(raw, 0);
        const children = raw.children.map((c, i) => this.nodeAt(c.index, type.children[i].type, offset, length));
        return newData(type, offset, length, this.nullCount(bitmap, exact, known), undefined, undefined, bitmap, children);
      }
      case "sparse_union": case "dense_union": {
        const typeIds = this.view(Int8Array, raw, 0, offset, length);
        const fields = (type as Union).children;
        if ((type as Union).mode === UnionMode.Sparse) {
          const children = raw.children.map((c, i) => this.nodeAt(c.index, fields[i].type, offset, length));
          return newData(type, offset, length, 0, undefined, undefined, undefined, children, undefined, typeIds);
        }
        const valueOffsets = this.view(Int32Array, raw, 1, offset, length);
        const children = raw.children.map((c, i) => this.nodeAt(c.index, fields[i].type, 0, c.length));
        return newData(type, offset, length, 0, valueOffsets, undefined, undefined, children, undefined, typeIds);
      }
      case "list_view": case "large_list_view": {
        // Only reached with { materialize: true } (toDataType checks).
        const bitmap = this.bytes(raw, 0);
        const Ctor: ViewConstructor<Int32Array | BigInt64Array> = typeId === "large_list_view" ? BigInt64Array : Int32Array;
        const offsets = this.view<Int32Array | BigInt64Array>(Ctor, raw, 1, offset, length);
        const sizes = this.view<Int32Array | BigInt64Array>(Ctor, raw, 2, offset, length);
        const child = raw.child(0);
        const childData = this.node(child, type.children[0].type, 0, child.length);
        return listViewToList(nodePath(raw), type, offset, length, this.nullCount(bitmap, exact, known), bitmap, offsets, sizes, childData);
      }
      case "run_end_encoded": {
        // Only reached with { materialize: true }: `type` is the values type.
        const runEndsNode = raw.child(0);
        const RunEnds: ViewConstructor<Int16Array | Int32Array | BigInt64Array> =
          runEndsNode.typeId === "int16" ? Int16Array : runEndsNode.typeId === "int32" ? Int32Array : BigInt64Array;
        const runEnds = this.view(RunEnds, runEndsNode, 1, runEndsNode.offset, runEndsNode.length);
        const values = raw.child(1);
        return runEndToPlain(nodePath(raw), runEnds, this.node(values, type, 0, values.length), offset, length);
      }
    }
    throw new InvalidLayoutError(Status.invalid_layout, `${describeNode(raw)} has a type this converter does not know (${typeId})`);
  }

  /** The null count apache-arrow gets: the producer's when the node is
   * taken as is, else unknown (-1, counted lazily); 0 without a bitmap. */
  nullCount(bitmap: Uint8Array, exact: boolean, known: number): number {
    if (bitmap.byteLength === 0) return 0;
    return exact ? known : -1;
  }
}

/** apache-arrow Data for `raw` (any node of an ImportedArray, taken with
 * its own offset). Zero-copy; see the module comment. */
export function toData(raw: RawArray, options: ConvertOptions = {}): Data {
  const data = rawDataOf(raw, convertArgs("toData", "raw", raw, "RawArray", options));
  noteConverted(raw.imported, data);
  return data;
}

/** An empty view of the same kind as `view` over `disposedBuffer`. */
function disposedView<T extends NodeJS.TypedArray | undefined>(view: T): T {
  if (view === undefined || view === null) return view;
  return new (view.constructor as ViewConstructor)(disposedBuffer, 0, 0) as T;
}

/** `data` and its children with no rows and empty buffers: what a
 * converted object reads as once its handle is disposed (its views of the
 * producer's memory are detached; apache-arrow would throw slicing them). */
function emptyData(data: Data): void {
  // Reading a lazy Data's buffers fills them first (detached views).
  const fields = data as unknown as {
    length: number; offset: number; _nullCount: number; values: NodeJS.TypedArray | undefined; valueOffsets: NodeJS.TypedArray | undefined;
    nullBitmap: Uint8Array | undefined; typeIds: Int8Array | undefined; variadicBuffers: unknown[];
  };
  fields.values = disposedView(fields.values);
  fields.valueOffsets = disposedView(fields.valueOffsets);
  fields.nullBitmap = disposedView(fields.nullBitmap);
  if (fields.typeIds !== undefined) fields.typeIds = disposedView(fields.typeIds);
  if (fields.variadicBuffers !== undefined && fields.variadicBuffers.length > 0) fields.variadicBuffers = [];
  fields.length = 0;
  fields.offset = 0;
  fields._nullCount = 0;
  for (const child of data.children) emptyData(child);
}

/** Empties an object converted from a handle (ImportedArray.dispose). A
 * Vector and a Table also cache their chunk offsets (and a Vector its
 * length): those are reset with it. */
function emptyConverted(converted: object): void {
  if (converted instanceof Data) return emptyData(converted);
  if (converted instanceof RecordBatch) return emptyData(converted.data);
  if (converted instanceof Vector || converted instanceof Table) {
    for (const data of converted.data) emptyData(data);
    const cached = converted as unknown as { _offsets: ArrayLike<number>; length?: number };
    cached._offsets = new Uint32Array(converted.data.length + 1);
    if (converted instanceof Vector) cached.length = 0;
  }
}
onDisposeEmpty(emptyConverted);

function rawDataOf(raw: RawArray, options: ConvertOptions): Data {
  const type = typedConversion(raw, () => dataTypeOf(raw, options));
  const builder = new DataBuilder(raw.imported, options);
  return raw.window === null ? builder.nodeAt(raw.index, type, 0, raw.length) : builder.node(raw, type, 0, raw.length);
}

/** The imported array (its root) as an apache-arrow Vector. */
export function toVector(imported: ImportedArray, options: ConvertOptions = {}): Vector {
  const vector = vectorOf(imported, convertArgs("toVector", "imported", imported, "ImportedArray", options));
  noteConverted(imported, vector);
  return vector;
}

function vectorOf(imported: ImportedArray, options: ConvertOptions): Vector {
  return new Vector([rawDataOf(imported.root, options)]);
}

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

function makeBatch(schema: Schema, data: Data<Struct>): RecordBatch {
  if (batchFields === null) return new RecordBatch(schema, data);
  // Plain stores in the constructor's order (Object.assign of a literal
  // costs ~0.5 µs more per batch, measured).
  const batch = Object.create(RecordBatch.prototype) as { schema: Schema; data: Data<Struct>; _metadata: Map<string, string> };
  batch.schema = schema;
  batch.data = data;
  batch._metadata = new Map<string, string>();
  return batch as unknown as RecordBatch;
}

/** Builds the batch with the types of `schema` (already checked to match
 * the root's structure). */
/** The Struct type of each Schema's batches (one per Schema object). */
const structOfSchema = new WeakMap<Schema, Struct>();

function structOf(schema: Schema): Struct {
  let type = structOfSchema.get(schema);
  if (type === undefined) structOfSchema.set(schema, type = new Struct(schema.fields));
  return type;
}

function batchWith(imported: ImportedArray, schema: Schema, options: ConvertOptions): RecordBatch {
  const root = imported.root;
  const type = structOf(schema);
  const builder = new DataBuilder(imported, options);
  const built = root.window === null ? builder.nodeAt(root.index, type, 0, root.length) : builder.node(root, type, 0, root.length);
  // A batch has no row-level validity (apache-arrow's own batches have
  // none); the columns keep theirs.
  const data = newData(type, 0, root.length, 0, undefined, undefined, undefined, built.children) as Data<Struct>;
  return makeBatch(schema, data);
}

/**
 * The imported array as an apache-arrow RecordBatch. The root must be a
 * struct (a record batch as Arrow C++ and pyarrow export it): its children
 * become the columns, its metadata the schema metadata. Zero-copy.
 */
export function toRecordBatch(imported: ImportedArray, options: ConvertOptions = {}): RecordBatch {
  const batch = recordBatchOf(imported, convertArgs("toRecordBatch", "imported", imported, "ImportedArray", options));
  noteConverted(imported, batch);
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
 * Schemas built for earlier imports, found by `schemaKeyOf`
 * (the exact schema bytes and tree, zig/schema_key.zig: a hash picks the
 * bucket, equal words decide) and the options that shape the types. The
 * entry used last is tried first, with one native comparison
 * (`schemaMatchesKey`) instead of a key copy and a hash. Repeated imports of one
 * schema (a producer's batches one by one) then share one apache-arrow
 * Schema, as a Table's batches do; schemas with dictionaries are never
 * cached (their types carry per-import ids). Bounded: cleared when full.
 */
type SchemaEntry = {
  key: Int32Array;
  materialize: boolean;
  schema: Schema;
  /** The schema's batch plan (undefined: not tried yet; null: a node the
   * plan does not build). Same exact key, same node tree: one plan. */
  plan: BatchPlan | null | undefined;
};
const schemaCache = new Map<number, SchemaEntry[]>();
let schemaCacheSize = 0;
const schemaCacheLimit = 64;

function hashWords(words: Int32Array): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < words.length; i++) h = Math.imul(h ^ words[i], 0x01000193);
  return h;
}

function sameWords(a: Int32Array, b: Int32Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The entry found or made last: imports in a row usually share one
 * schema, which one native comparison then confirms (no key copied, no
 * hash). Kept across `schemaCache.clear()`: an entry stays valid. */
let lastSchemaEntry: SchemaEntry | null = null;

/** The cache entry of `imported`'s schema; an uncached one (a schema with
 * dictionaries) is a fresh entry that nothing keeps. */
function cachedSchemaOf(imported: ImportedArray, options: ConvertOptions): SchemaEntry {
  const materialize = options.materialize === true;
  const last = lastSchemaEntry;
  if (last !== null && last.materialize === materialize) {
    const match = schemaMatchesKey(imported, last.key);
    if (match === "same") return last;
    if (match === "none") return uncachedEntry(imported, materialize, options);
  }
  const key = schemaKeyOf(imported);
  // Not cached (dictionaries, which the plan never builds): no plan.
  if (key === null) return uncachedEntry(imported, materialize, options);
  lastSchemaEntry = entryFor(key, materialize, imported, options);
  return lastSchemaEntry;
}

/** A schema entry nothing keeps, without a plan. */
function uncachedEntry(imported: ImportedArray, materialize: boolean, options: ConvertOptions): SchemaEntry {
  const root = imported.root;
  return { key: empty32, materialize, schema: typedConversion(root, () => schemaOf(root, options)), plan: null };
}

/** The cached entry of `key` (a scratch view: copied when kept), made and
 * cached when there is none. */
function entryFor(key: Int32Array, materialize: boolean, imported: ImportedArray, options: ConvertOptions): SchemaEntry {
  const hash = hashWords(key);
  const bucket = schemaCache.get(hash);
  if (bucket) {
    for (const entry of bucket) if (entry.materialize === materialize && sameWords(entry.key, key)) return entry;
  }
  const root = imported.root;
  const schema = typedConversion(root, () => schemaOf(root, options));
  if (schemaCacheSize >= schemaCacheLimit) {
    schemaCache.clear();
    schemaCacheSize = 0;
  }
  const entries = schemaCache.get(hash) ?? [];
  const entry: SchemaEntry = { key: key.slice(), materialize, schema, plan: undefined };
  entries.push(entry);
  schemaCache.set(hash, entries);
  schemaCacheSize++;
  return entry;
}

const empty32 = new Int32Array(0);

/**
 * The batches of one imported stream as RecordBatches. Every batch of a
 * stream carries the stream's one ArrowSchema (zig/stream_import.zig
 * shares it with each batch's owner), so the apache-arrow Schema and its
 * types are built once, from the first batch, and every later batch is
 * built with them: no schema strings read, no types made per batch, and
 * every batch of the stream has the same Schema object (dictionary types
 * included), as apache-arrow's Table wants.
 */
export class StreamBatchConverter {
  #schema: Schema | null = null;
  /** The stream's batch plan (undefined: not tried yet; null: its schema
   * has a node the plan does not build, so every batch takes batchWith). */
  #plan: BatchPlan | null | undefined = undefined;
  /** `next`'s pull: its snapshot array is reused batch after batch. */
  #pulled: PulledBatch | null = null;
  #builtWithoutHandle = 0;
  /** How `next` builds the batches it pulls (see `#lazyNext`). */
  #eager = false;
  /** Whether the last batch `next` built lazily was read, until the next
   * pull looks (the flag only: it keeps no batch alive). */
  #probe: ReadProbe | null = null;

  constructor(readonly options: ConvertOptions) {}

  /** Batch `imported` (pulled from this converter's stream). */
  convert(imported: ImportedArray): RecordBatch {
    const schema = this.#schema ??= typedConversion(imported.root, () => schemaOf(imported.root, this.options));
    if (this.#plan === undefined) this.#plan = BatchPlan.of(imported, schema);
    return this.#plan?.build(imported) ?? batchWith(imported, schema, this.options);
  }

  /** `convert`, then the end of `imported` (a transient handle): its
   * memory then belongs to the GC, or, if conversion throws, is released
   * now. */
  convertAndEnd(imported: ImportedArray): RecordBatch {
    try {
      const batch = this.convert(imported);
      imported.releaseToGC();
      return batch;
    } catch (error) {
      imported.dispose();
      throw error;
    }
  }

  /**
   * The next batch of `stream` (this converter's, host memory) as a
   * RecordBatch; null at the end. A batch the plan fits is built straight
   * from its snapshot, with no ImportedArray: its views hold the batch's
   * memory, and the pull's own reference ends here, whatever happens. The
   * first batch, and any the plan does not fit, go through a transient
   * handle (`convertAndEnd`), which also reports their errors; so does
   * every batch of a stream that has no plan.
   */
  next(stream: ImportedStream): RecordBatch | null {
    // A schema the plan does not build: every batch through a handle,
    // pulled into words of its own (no reused array to copy from).
    if (this.#plan === null) {
      const imported = pullTransient(stream);
      return imported === null ? null : this.convertAndEnd(imported);
    }
    const pulled = this.#pulled ??= pulledBatch();
    if (!pullInto(stream, pulled)) return null;
    if (pulled.imported !== null) return this.convertAndEnd(pulled.imported);
    const owner = pulled.owner;
    if (this.#plan) {
      let batch: RecordBatch | null;
      try {
        const probe: ReadProbe | null = this.#lazyNext() ? { read: false } : null;
        batch = this.#plan.buildPulled(owner, pulled.words, probe);
        if (probe !== null && batch !== null) this.#probe = probe;
      } catch (error) {
        releasePulled(owner);
        throw error;
      }
      if (batch !== null) {
        releasePulled(owner);
        this.#builtWithoutHandle++;
        return batch;
      }
    }
    // The handle keeps its words: a copy, as `pulled`'s are reused.
    return this.convertAndEnd(adoptImportSnapshot(owner, pulled.words.slice()));
  }

  /**
   * Whether `next` builds its next batch lazily. A consumer that reads
   * each batch before pulling the next (most loops over a stream) would
   * only pay for the deferral (one more native call and a few objects per
   * batch): once a lazy batch was read by the next pull, the rest of the
   * stream is built eagerly. (Probing again now and then cost more than
   * it saved: each lazy batch among eager ones costs the JIT-compiled
   * readers a deoptimization, ~1,000 instructions per batch at one probe
   * in 16, counted.) A consumer that reads batches later, or never, keeps
   * them lazy.
   */
  #lazyNext(): boolean {
    const probe = this.#probe;
    if (probe !== null) {
      this.#eager = probe.read;
      this.#probe = null;
    }
    return !this.#eager;
  }

  /** How many of `next`'s batches were built straight from their
   * snapshot, without a handle. */
  get builtWithoutHandle(): number {
    return this.#builtWithoutHandle;
  }

  /** One Table of batches pulled from this converter's stream. */
  table(list: ImportedArray[]): Table {
    const batches = list.map((imported) => this.convert(imported));
    return new Table(batches[0].schema, batches);
  }
}

/** How a plan node's Data is made: the `fastNode` cases. */
const PlanKind = LazyKind;

/**
 * A stream's conversion (or a cached schema's: `recordBatchOf` keeps one
 * with each shared Schema), worked out once from its first batch: the
 * apache-arrow type, Data kind and typed-array constructor of every node
 * (its batches share one schema, so one node table shape). `build` makes
 * each batch's Data straight from the handle's tables and prefetched
 * views, exactly as `DataBuilder.fastNode` does; anything it does not
 * expect (another shape, a size validation did not compute, slots past a
 * buffer's end) returns null, and batchWith converts that batch (and
 * reports its error).
 */
class BatchPlan {
  private constructor(
    readonly schema: Schema,
    readonly struct: Struct,
    readonly typeIds: Int32Array,
    readonly kinds: Int32Array,
    readonly types: DataType[],
    readonly ctors: (ViewConstructor<NodeJS.TypedArray> | null)[],
    readonly strides: Int32Array,
    /** apache-arrow's `Data.stride` of each node's type. */
    readonly dataStrides: Int32Array,
  ) {}

  /** The plan of `imported`'s stream, or null when a node is not one of
   * the `fastNode` types (or has a dictionary). */
  static of(imported: ImportedArray, schema: Schema): BatchPlan | null {
    if (imported.window !== null || !imported.hostReadable) return null;
    const { words, nodesAt } = handleTables(imported);
    const count = imported.nodeCount;
    const struct = structOf(schema);
    const typeIds = new Int32Array(count).fill(-1);
    const kinds = new Int32Array(count);
    const strides = new Int32Array(count);
    const types = new Array<DataType>(count);
    const ctors = new Array<ViewConstructor<NodeJS.TypedArray> | null>(count).fill(null);
    const visit = (n: number, type: DataType): boolean => {
      const at = nodesAt + n * nodeStride;
      const typeId = words[at + NodeWord.type_id];
      if (words[at + NodeWord.dictionary] >= 0 || fastBuffers[typeId] === undefined || words[at + NodeWord.n_buffers] !== fastBuffers[typeId]) return false;
      typeIds[n] = typeId;
      types[n] = type;
      switch (typeId) {
        case TypeId.boolean: kinds[n] = PlanKind.boolean; return true;
        case TypeId.binary: case TypeId.utf8: kinds[n] = PlanKind.binary; return true;
        case TypeId.large_binary: case TypeId.large_utf8: kinds[n] = PlanKind.largeBinary; return true;
        case TypeId.struct: {
          kinds[n] = PlanKind.struct;
          const fields = type.children;
          const first = words[at + NodeWord.first_child];
          if (fields.length !== words[at + NodeWord.n_children]) return false;
          for (let i = 0; i < fields.length; i++) if (!visit(first + i, fields[i].type)) return false;
          return true;
        }
        default:
          kinds[n] = PlanKind.fixed;
          ctors[n] = type.ArrayType as ViewConstructor<NodeJS.TypedArray>;
          strides[n] = strideOf(type);
          return true;
      }
    };
    if (!visit(0, struct)) return null;
    const dataStrides = new Int32Array(count);
    for (let n = 0; n < count; n++) if (types[n] !== undefined) dataStrides[n] = strideOfData(types[n]);
    return new BatchPlan(schema, struct, typeIds, kinds, types, ctors, strides, dataStrides);
  }

  /** `imported`'s RecordBatch, or null (then batchWith makes it). Lazy
   * (arrow/lazy_data.ts) unless the handle has views already or its
   * buffers cannot all be deferred. */
  build(imported: ImportedArray): RecordBatch | null {
    if (imported.window !== null || !imported.hostReadable || imported.nodeCount !== this.typeIds.length) return null;
    const { words, nodesAt, buffersAt } = handleTables(imported);
    const deferred = lazyDataAvailable ? deferHandleViews(imported) : null;
    // (A batch that does not fit leaves the handle's deferred views to the
    // handle: other batches may share them.)
    if (deferred !== null) return this.#assembleLazy(words, nodesAt, buffersAt, new LazyBatch(this, deferred, null));
    imported.prefetchAll();
    return this.#assemble(words, nodesAt, buffersAt, handleViews(imported));
  }

  /** The RecordBatch of a batch pulled without a handle (`owner`, its
   * snapshot `words`: batch_source.ts `pullInto`), whose views (lazy, or
   * made now) each hold their own reference to `owner` (the caller still
   * ends its own); null when it does not fit this plan (nothing taken
   * then, or views made already, left to the GC). */
  buildPulled(owner: number, words: Float64Array, lazy: ReadProbe | null): RecordBatch | null {
    const count = this.typeIds.length;
    if (words[OwnerInfoWord.host_readable] !== 1 || words[OwnerInfoWord.node_count] !== count) return null;
    const buffersAt = ownerInfoWords + count * nodeStride;
    if (lazy !== null && lazyDataAvailable) {
      // The deferred views keep their own copy of the buffer table
      // (`words` is the pull's, reused batch after batch).
      const buffers = words[OwnerInfoWord.buffer_count];
      const deferred = DeferredViews.of(owner, words.slice(buffersAt, buffersAt + buffers * bufferStride), 0, buffers, words[OwnerInfoWord.nodes]);
      if (deferred !== null) {
        const batch = this.#assembleLazy(words, ownerInfoWords, buffersAt, new LazyBatch(this, deferred, lazy));
        if (batch === null) deferred.kill();
        return batch;
      }
    }
    // (A probe of a batch built eagerly reads as not read.)
    const views = pulledViews(owner, words);
    return views === null ? null : this.#assemble(words, ownerInfoWords, buffersAt, views);
  }

  /** The batch from the tables and the views of its buffers (by index);
   * null when a node does not fit. */
  #assemble(words: Float64Array, nodesAt: number, buffersAt: number, views: readonly (ArrayBuffer | undefined)[]): RecordBatch | null {
    const at = nodesAt;
    const length = words[at + NodeWord.length];
    const offset = words[at + NodeWord.offset];
    const children = this.#children(words, nodesAt, buffersAt, views, at, offset, length);
    if (children === null) return null;
    // As batchWith: no row-level validity for the batch itself.
    return makeBatch(this.schema, newData(this.struct, 0, length, 0, undefined, undefined, undefined, children) as Data<Struct>);
  }

  /** `#assemble` with the lazy Data of `lazy` (its buffer indices are
   * the table's at `buffersAt`); null when a node does not fit (the
   * caller then gives its deferred views up). */
  #assembleLazy(words: Float64Array, nodesAt: number, buffersAt: number, lazy: LazyBatch): RecordBatch | null {
    const at = nodesAt;
    const length = words[at + NodeWord.length];
    const children = this.#lazyChildren(words, nodesAt, buffersAt, lazy, at, words[at + NodeWord.offset], length);
    if (children === null) return null;
    return makeBatch(this.schema, newData(this.struct, 0, length, 0, undefined, undefined, undefined, children) as Data<Struct>);
  }

  /** `#children` with lazy Data. */
  #lazyChildren(words: Float64Array, nodesAt: number, buffersAt: number, lazy: LazyBatch, at: number, shift: number, length: number): Data[] | null {
    const count = words[at + NodeWord.n_children];
    const firstChild = words[at + NodeWord.first_child];
    // Pushed: see #children.
    const children: Data[] = [];
    for (let i = 0; i < count; i++) {
      const child = this.#lazyNode(words, nodesAt, buffersAt, lazy, firstChild + i, shift, length);
      if (child === null) return null;
      children.push(child);
    }
    return children;
  }

  /** `#node` with lazy Data: the same checks, read from the buffer table
   * (a buffer has a view when it has a size and an address). */
  #lazyNode(words: Float64Array, nodesAt: number, buffersAt: number, lazy: LazyBatch, n: number, shift: number, length: number): Data | null {
    const at = nodesAt + n * nodeStride;
    if (words[at + NodeWord.type_id] !== this.typeIds[n] || words[at + NodeWord.dictionary] >= 0 || words[at + NodeWord.n_buffers] !== fastBuffers[this.typeIds[n]]) return null;
    const first = words[at + NodeWord.first_buffer];
    const offset = words[at + NodeWord.offset] + shift;
    // (Unvalidated input, "none": negative offsets and lengths are the
    // general path's to report, here and not at the first read.)
    if (!(offset >= 0 && length >= 0)) return null;
    const bitmapSize = words[buffersAt + first * bufferStride + BufferWord.size_bytes];
    if (bitmapSize < 0) return null;
    const known = words[at + NodeWord.null_count];
    // As apache-arrow's constructor takes it: below -1 is unknown too.
    const nulls = !viewed(words, buffersAt, first) ? 0 : shift === 0 && length === words[at + NodeWord.length] ? (known < -1 ? -1 : known) : -1;
    const kind = this.kinds[n];
    switch (kind) {
      case PlanKind.fixed: {
        const Ctor = this.ctors[n]!;
        const stride = this.strides[n];
        if (!slotsFit(words, buffersAt, first + 1, Ctor, offset * stride, length * stride)) return null;
        return lazy.add(n, offset, length, nulls, undefined, first);
      }
      case PlanKind.boolean:
        if (words[buffersAt + (first + 1) * bufferStride + BufferWord.size_bytes] < 0) return null;
        return lazy.add(n, offset, length, nulls, undefined, first);
      case PlanKind.struct: {
        const children = this.#lazyChildren(words, nodesAt, buffersAt, lazy, at, offset, length);
        return children === null ? null : lazy.add(n, offset, length, nulls, children, first);
      }
      default: {
        if (length === 0) return null;
        const Ctor = (kind === PlanKind.largeBinary ? BigInt64Array : Int32Array) as ViewConstructor<NodeJS.TypedArray>;
        if (!slotsFit(words, buffersAt, first + 1, Ctor, offset, length + 1)) return null;
        if (words[buffersAt + (first + 2) * bufferStride + BufferWord.size_bytes] < 0) return null;
        return lazy.add(n, offset, length, nulls, undefined, first);
      }
    }
  }

  /** The Data of every child of the node at word `at` (struct children:
   * shifted by the parent's offset, its length); null if one does not fit. */
  #children(words: Float64Array, nodesAt: number, buffersAt: number, views: readonly (ArrayBuffer | undefined)[], at: number, shift: number, length: number): Data[] | null {
    const count = words[at + NodeWord.n_children];
    const firstChild = words[at + NodeWord.first_child];
    // Pushed, not `new Array(count)`: with a count read from the Float64Array
    // words, JSC's optimizing tiers exit at that allocation on every call
    // (Bun 1.4.5: 6-8 recompilations, then the function stays in the
    // baseline tier).
    const children: Data[] = [];
    for (let i = 0; i < count; i++) {
      const child = this.#node(words, nodesAt, buffersAt, views, firstChild + i, shift, length);
      if (child === null) return null;
      children.push(child);
    }
    return children;
  }

  /** Bytes [0, size) of buffer `b`, or null when its size is unknown. */
  #bytes(words: Float64Array, buffersAt: number, views: readonly (ArrayBuffer | undefined)[], b: number): Uint8Array | null {
    const size = words[buffersAt + b * bufferStride + BufferWord.size_bytes];
    if (size < 0) return null;
    const view = views[b];
    return view === undefined || size === 0 ? emptyBytes() : new Uint8Array(view, 0, size);
  }

  /** Node `n`'s Data, as `DataBuilder.fastNode` makes it; null: not this plan's. */
  #node(words: Float64Array, nodesAt: number, buffersAt: number, views: readonly (ArrayBuffer | undefined)[], n: number, shift: number, length: number): Data | null {
    const at = nodesAt + n * nodeStride;
    // The buffer count too: without validation, a batch of the same
    // schema may have another (then batchWith reads it as it is).
    if (words[at + NodeWord.type_id] !== this.typeIds[n] || words[at + NodeWord.dictionary] >= 0 || words[at + NodeWord.n_buffers] !== fastBuffers[this.typeIds[n]]) return null;
    const type = this.types[n];
    const first = words[at + NodeWord.first_buffer];
    const offset = words[at + NodeWord.offset] + shift;
    const bitmap = this.#bytes(words, buffersAt, views, first);
    if (bitmap === null) return null;
    const nulls = bitmap.byteLength === 0 ? 0 : shift === 0 && length === words[at + NodeWord.length] ? words[at + NodeWord.null_count] : -1;
    switch (this.kinds[n]) {
      case PlanKind.fixed: {
        const Ctor = this.ctors[n]!;
        const stride = this.strides[n];
        const values = this.#slots(words, buffersAt, views, first + 1, Ctor, offset * stride, length * stride);
        return values === null ? null : newData(type, offset, length, nulls, undefined, values, bitmap);
      }
      case PlanKind.boolean: {
        const values = this.#bytes(words, buffersAt, views, first + 1);
        return values === null ? null : newData(type, offset, length, nulls, undefined, values, bitmap);
      }
      case PlanKind.struct: {
        const children = this.#children(words, nodesAt, buffersAt, views, at, offset, length);
        return children === null ? null : newData(type, offset, length, nulls, undefined, undefined, bitmap, children);
      }
      default: {
        // Offsets of a zero-length array may be absent: the generic path.
        if (length === 0) return null;
        const Ctor = (this.kinds[n] === PlanKind.largeBinary ? BigInt64Array : Int32Array) as ViewConstructor<NodeJS.TypedArray>;
        const offsets = this.#slots(words, buffersAt, views, first + 1, Ctor, offset, length + 1);
        const data = this.#bytes(words, buffersAt, views, first + 2);
        return offsets === null || data === null ? null : newData(type, offset, length, nulls, offsets, data, bitmap);
      }
    }
  }

  /** `count` elements of buffer `b` from element `from`; null when its
   * size is unknown or they pass its end (batchWith reports that). */
  #slots(words: Float64Array, buffersAt: number, views: readonly (ArrayBuffer | undefined)[], b: number, Ctor: ViewConstructor<NodeJS.TypedArray>, from: number, count: number): NodeJS.TypedArray | null {
    const size = words[buffersAt + b * bufferStride + BufferWord.size_bytes];
    if (size < 0) return null;
    const view = views[b];
    if (count === 0) return new Ctor(view ?? empty, 0, 0);
    const byteOffset = from * Ctor.BYTES_PER_ELEMENT;
    if (view === undefined || byteOffset + count * Ctor.BYTES_PER_ELEMENT > size) return null;
    return new Ctor(view, byteOffset, count);
  }
}

/** Whether buffer `b` of the table at `buffersAt` has a view to make (a
 * size and an address: `distinctWanted`'s rule). */
function viewed(words: Float64Array, buffersAt: number, b: number): boolean {
  const base = buffersAt + b * bufferStride;
  return words[base + BufferWord.size_bytes] > 0 && words[base + BufferWord.address] !== 0;
}

/** Whether `count` elements of buffer `b` from element `from` can be
 * viewed: its size known and, unless there are none, within it (as
 * `BatchPlan.#slots` checks). */
function slotsFit(words: Float64Array, buffersAt: number, b: number, Ctor: ViewConstructor<NodeJS.TypedArray>, from: number, count: number): boolean {
  const size = words[buffersAt + b * bufferStride + BufferWord.size_bytes];
  if (size < 0) return false;
  if (count === 0) return true;
  return viewed(words, buffersAt, b) && (from + count) * Ctor.BYTES_PER_ELEMENT <= size;
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
  table.batches.forEach((batch, i) => noteConverted(list[i], batch));
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
    let validation: ImportOptions = {};
    // The structs are taken (released) even when an argument is bad.
    const arrayKind = ((options as ImportConvertOptions | null)?.as ?? kind) === "array" ? "ArrowArray" : "ArrowDeviceArray";
    const [schemaAddress, arrayAddress] = takeStructs(fn, [["schemaPtr", schema, "ArrowSchema"], ["arrayPtr", array, arrayKind]], () => {
      convertOptions = convertOptionsArg(fn, options, ["validation", "as"]);
      as = oneOfArg(fn, "options.as", options.as ?? kind, ["array", "device_array"]);
      validation = { validation: options.validation };
    });
    imported = as === "array"
      ? ImportedArray.fromArray(branded(schemaAddress), branded(arrayAddress), validation)
      : ImportedArray.fromDeviceArray(branded(schemaAddress), branded(arrayAddress), validation);
  }
  try {
    const result = convert(imported, convertOptions);
    imported.releaseToGC();
    return result;
  } catch (error) {
    imported.dispose();
    throw error;
  }
}

/**
 * Moves `schemaPtr` + `arrayPtr` in (they are left released, success or
 * not) and returns an apache-arrow Vector over the producer's memory. Its
 * lifetime is the garbage collector's: the producer's release runs once
 * the last view of its memory is collected. For an explicit end, use
 * `ImportedArray` + `toVector` and `dispose()` instead.
 */
export function importVector(schemaPtr: StructRef<"ArrowSchema">, arrayPtr: StructRef<"ArrowArray">, options?: ImportConvertOptions & { as?: "array" }): Vector;
/** `importVector` from an `ArrowDeviceArray*` (`{ as: "device_array" }`). */
export function importVector(schemaPtr: StructRef<"ArrowSchema">, deviceArrayPtr: StructRef<"ArrowDeviceArray">, options: ImportConvertOptions & { as: "device_array" }): Vector;
/** Takes the array of any protocol producer or array capsule
 * (docs/protocol.md), preferring its device method. */
export function importVector(source: ArrayProducer | ArrowCapsule, options?: ImportConvertOptions): Vector;
export function importVector(schemaPtr: AnyRef | ArrayProducer | ArrowCapsule, arrayPtr?: AnyRef | ImportConvertOptions, options: ImportConvertOptions = {}): Vector {
  return importWith("importVector", schemaPtr, arrayPtr, options, "array", vectorOf);
}

/** Like `importVector`, for a record batch (a struct root), from an
 * `ArrowDeviceArray*` by default. */
export function importRecordBatch(schemaPtr: StructRef<"ArrowSchema">, deviceArrayPtr: StructRef<"ArrowDeviceArray">, options?: ImportConvertOptions & { as?: "device_array" }): RecordBatch;
/** `importRecordBatch` from an `ArrowArray*` (`{ as: "array" }`). */
export function importRecordBatch(schemaPtr: StructRef<"ArrowSchema">, arrayPtr: StructRef<"ArrowArray">, options: ImportConvertOptions & { as: "array" }): RecordBatch;
/** Takes the array of any protocol producer or array capsule
 * (docs/protocol.md), preferring its device method. */
export function importRecordBatch(source: ArrayProducer | ArrowCapsule, options?: ImportConvertOptions): RecordBatch;
export function importRecordBatch(schemaPtr: AnyRef | ArrayProducer | ArrowCapsule, deviceArrayPtr?: AnyRef | ImportConvertOptions, options: ImportConvertOptions = {}): RecordBatch {
  return importWith("importRecordBatch", schemaPtr, deviceArrayPtr, options, "device_array", recordBatchOf);
}

export { toDataType, toField, toSchema } from "./types.ts";
