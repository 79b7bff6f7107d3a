/**
 * The batch plan: how every batch of one schema becomes a RecordBatch,
 * worked out once (a stream's, or a cached schema's), and built straight
 * from the node and buffer tables, eagerly (views made now) or lazily
 * (arrow/lazy_data.ts: views made on first read).
 */
import { type Data, type DataType, type Schema, type Struct, type RecordBatch } from "apache-arrow";
import { BufferWord, NodeWord, OwnerInfoWord, TypeId, bufferStride, nodeStride, ownerInfoWords } from "../core/abi/layout.ts";
import { type ImportedArray } from "../native/imported.ts";
import { DeferredViews, deferHandleViews, handleTables, handleViews, pulledViews } from "../native/batch_source.ts";
import { LazyBatch, LazyKind, emptyBytes, lazyDataAvailable, type ReadProbe, type ViewConstructor } from "./lazy_data.ts";
import { newData, strideOf as strideOfData } from "./arrow_data.ts";
import { fastBuffers, strideOf } from "./data_builder.ts";
import { makeBatch, structOf } from "./record_batch.ts";

const empty = new ArrayBuffer(0);

/** The views of a batch's buffers, by buffer index (undefined: none). */
type Views = readonly (ArrayBuffer | undefined)[];

/** What a lazy build passes for views (it makes none). */
const noViews: Views = [];

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
export class BatchPlan {
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
    /** apache-arrow's `Data.stride` of the batch's Struct. */
    readonly rootStride = strideOfData(struct),
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
    if (deferred !== null) return this.#assemble(words, nodesAt, buffersAt, noViews, new LazyBatch(this, deferred, null));
    imported.prefetchAll();
    return this.#assemble(words, nodesAt, buffersAt, handleViews(imported), null);
  }

  /** The RecordBatch of a batch pulled without a handle (`owner`, its
   * snapshot `words`: ImportedStream.nextPulled), whose views (lazy, or
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
        const batch = this.#assemble(words, ownerInfoWords, buffersAt, noViews, new LazyBatch(this, deferred, lazy));
        if (batch === null) deferred.kill();
        return batch;
      }
    }
    // (A probe of a batch built eagerly reads as not read.)
    const views = pulledViews(owner, words);
    return views === null ? null : this.#assemble(words, ownerInfoWords, buffersAt, views, null);
  }

  /** The batch from the tables: with `lazy` null, Data over `views` (the
   * views of its buffers, by index), else the lazy Data of `lazy` (its
   * buffer indices are the table's at `buffersAt`); null when a node does
   * not fit (a lazy caller then gives its deferred views up). */
  #assemble(words: Float64Array, nodesAt: number, buffersAt: number, views: Views, lazy: LazyBatch | null): RecordBatch | null {
    const length = words[nodesAt + NodeWord.length];
    const children = this.#children(words, nodesAt, buffersAt, views, lazy, nodesAt, words[nodesAt + NodeWord.offset], length);
    if (children === null) return null;
    // As batchWith: no row-level validity for the batch itself.
    const root = lazy === null
      ? newData(this.struct, 0, length, 0, undefined, undefined, undefined, children)
      : lazy.root(this.struct, this.rootStride, length, children);
    return makeBatch(this.schema, root as Data<Struct>);
  }

  /** Whether node `n`'s header at word `at` is the plan's: its type, no
   * dictionary, and its buffer count too (without validation, a batch of
   * the same schema may have another; then batchWith reads it as it is). */
  #planned(words: Float64Array, at: number, n: number): boolean {
    const typeId = this.typeIds[n];
    return !(words[at + NodeWord.type_id] !== typeId || words[at + NodeWord.dictionary] >= 0 || words[at + NodeWord.n_buffers] !== fastBuffers[typeId]);
  }

  /** `#node` with lazy Data: the same checks, read from the buffer table
   * (a buffer has a view when it has a size and an address). */
  #lazyNode(words: Float64Array, nodesAt: number, buffersAt: number, lazy: LazyBatch, n: number, shift: number, length: number): Data | null {
    const at = nodesAt + n * nodeStride;
    if (!this.#planned(words, at, n)) return null;
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
        const children = this.#children(words, nodesAt, buffersAt, noViews, lazy, at, offset, length);
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
   * shifted by the parent's offset, its length), eager or lazy as in
   * `#assemble`; null if one does not fit. */
  #children(words: Float64Array, nodesAt: number, buffersAt: number, views: Views, lazy: LazyBatch | null, at: number, shift: number, length: number): Data[] | null {
    const count = words[at + NodeWord.n_children];
    const firstChild = words[at + NodeWord.first_child];
    // Pushed, not `new Array(count)`: with a count read from the Float64Array
    // words, JSC's optimizing tiers exit at that allocation on every call
    // (Bun 1.4.5: 6-8 recompilations, then the function stays in the
    // baseline tier).
    const children: Data[] = [];
    for (let i = 0; i < count; i++) {
      const child = lazy === null
        ? this.#node(words, nodesAt, buffersAt, views, firstChild + i, shift, length)
        : this.#lazyNode(words, nodesAt, buffersAt, lazy, firstChild + i, shift, length);
      if (child === null) return null;
      children.push(child);
    }
    return children;
  }

  /** Bytes [0, size) of buffer `b`, or null when its size is unknown. */
  #bytes(words: Float64Array, buffersAt: number, views: Views, b: number): Uint8Array | null {
    const size = words[buffersAt + b * bufferStride + BufferWord.size_bytes];
    if (size < 0) return null;
    const view = views[b];
    return view === undefined || size === 0 ? emptyBytes() : new Uint8Array(view, 0, size);
  }

  /** Node `n`'s Data, as `DataBuilder.fastNode` makes it; null: not this plan's. */
  #node(words: Float64Array, nodesAt: number, buffersAt: number, views: Views, n: number, shift: number, length: number): Data | null {
    const at = nodesAt + n * nodeStride;
    if (!this.#planned(words, at, n)) return null;
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
        const children = this.#children(words, nodesAt, buffersAt, views, null, at, offset, length);
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
  #slots(words: Float64Array, buffersAt: number, views: Views, b: number, Ctor: ViewConstructor<NodeJS.TypedArray>, from: number, count: number): NodeJS.TypedArray | null {
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
