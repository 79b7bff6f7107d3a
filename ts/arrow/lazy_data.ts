/**
 * apache-arrow `Data` whose buffer views are made on first read.
 *
 * An imported batch built through a plan (arrow/batch_plan.ts `BatchPlan`)
 * gets one `LazyBatch`: its Data objects carry where each buffer is, and
 * the batch holds `DeferredViews` (native/deferred_views.ts), which made one
 * ArrayBuffer at once, the anchor (8 bytes of the owner's node table),
 * holding the batch's memory. The first read of any buffer of any of the batch's Data
 * (`values`, `nullBitmap`, `valueOffsets`, and so everything apache-arrow
 * reads through them, exports included) makes every view of the batch
 * with one native call and fills in the typed arrays of all its Data,
 * exactly as the eager path would have made them (same memory, same
 * offsets, same lengths). A batch nobody reads (one only counted, or
 * dropped after a look at its schema or row count) costs one view
 * instead of one per buffer, and adds nothing to JSC's allocation-driven
 * collections, whatever its size. A batch that is read costs about what
 * the eager path does (one more native call and wrap, a few objects: 2-6%
 * per one-off import, timed; streams whose batches are read switch to
 * the eager path, arrow/batch_converter.ts).
 *
 * Ownership. A LazyData holds its LazyBatch, which holds the anchor: the
 * producer's memory stays until every Data of the batch and every typed
 * array made from it is gone (each view holds its own reference). After
 * the handle the batch came from is disposed, the views are detached and
 * the batch's Data refuse reads (arrow/import.ts `releaseConverted`: a
 * ReleasedError, with no view made), never the freed memory.
 *
 * Shape. A LazyData is a Data (same prototype chain, `instanceof Data`),
 * with the three buffer properties as accessors over backing fields; a
 * write materializes first, then replaces the field. Its own properties
 * are the constructor's (same order) without the three buffers, then the
 * backing fields.
 */
import { Data, type DataType } from "apache-arrow";
import { BufferWord, bufferStride } from "../core/abi/layout.ts";
import { ReleasedError, Status } from "../core/errors.ts";
import { disposalSite } from "../native/debug.ts";
import { dataAssembled, noArrays } from "./arrow_data.ts";
import type { DeferredViews } from "../native/batch_source.ts";

/** A typed array constructor, used to view imported memory in place. */
export type ViewConstructor<T extends NodeJS.TypedArray = NodeJS.TypedArray> = {
  new (buffer: ArrayBuffer, byteOffset: number, length: number): T;
  readonly BYTES_PER_ELEMENT: number;
};

/** How a node's buffers become typed arrays (the plan's kinds). */
export const LazyKind = { fixed: 0, boolean: 1, struct: 2, binary: 3, largeBinary: 4 } as const;

/**
 * The lazy Data's own fields, set in one constructor (so JSC sizes the
 * object for all of them at once; Object.create plus one store per field
 * grows its storage step by step). Its prototype is re-parented below to
 * `lazyPrototype` (a Data prototype): the class is only an allocator.
 */
class LazyDataObject {
  type: DataType;
  children: Data[];
  dictionary: unknown = undefined;
  offset: number;
  length: number;
  _nullCount: number;
  stride: number;
  variadicBuffers: unknown[] = noArrays;
  _valueOffsets: NodeJS.TypedArray | undefined = undefined;
  _values: NodeJS.TypedArray | undefined = undefined;
  _nullBitmap: Uint8Array | undefined = undefined;
  /** The batch whose views are still to be made; null once filled. */
  _lz: LazyBatch | null;
  /** The node's index in its plan, and its first buffer's in the table. */
  _lzNode: number;
  _lzFirst: number;

  /** `offset`, `length` and `nullCount` are integers (offset, length >=
   * 0, nullCount >= -1: what the constructor would make of them). */
  constructor(type: DataType, stride: number, offset: number, length: number, nullCount: number, children: Data[], lazy: LazyBatch | null, node: number, first: number) {
    this.type = type;
    this.children = children;
    this.offset = offset;
    this.length = length;
    this._nullCount = nullCount;
    this.stride = stride;
    this._lz = lazy;
    this._lzNode = node;
    this._lzFirst = first;
  }
}
type LazyFields = LazyDataObject;

// One getter and setter per property, each reading its own field (a
// shared one keyed by name would be a keyed access on every read).
const lazyPrototype: object = LazyDataObject.prototype;
Object.setPrototypeOf(lazyPrototype, Data.prototype);
Object.defineProperties(lazyPrototype, {
  // `data.constructor` is apache-arrow's, as for every other Data.
  constructor: { value: Data, configurable: true, writable: true },
  values: {
    get(this: LazyFields) {
      if (this._lz !== null) this._lz.materialize(this);
      return this._values;
    },
    set(this: LazyFields, value: NodeJS.TypedArray | undefined) {
      if (this._lz !== null) this._lz.materialize(this);
      this._values = value;
    },
    configurable: true,
  },
  nullBitmap: {
    get(this: LazyFields) {
      if (this._lz !== null) this._lz.materialize(this);
      return this._nullBitmap;
    },
    set(this: LazyFields, value: Uint8Array | undefined) {
      if (this._lz !== null) this._lz.materialize(this);
      this._nullBitmap = value;
    },
    configurable: true,
  },
  valueOffsets: {
    get(this: LazyFields) {
      if (this._lz !== null) this._lz.materialize(this);
      return this._valueOffsets;
    },
    set(this: LazyFields, value: NodeJS.TypedArray | undefined) {
      if (this._lz !== null) this._lz.materialize(this);
      this._valueOffsets = value;
    },
    configurable: true,
  },
});

/** Whether lazy Data can be made: the same condition as `newData`'s own
 * assembly (this apache-arrow's constructor stores what it expects). */
export const lazyDataAvailable = dataAssembled;

const empty = new ArrayBuffer(0);

/** One empty byte view per absent bitmap (no ArrayBuffer behind it until
 * read, unlike a view of `new ArrayBuffer(0)`). */
export function emptyBytes(): Uint8Array {
  return new Uint8Array(0);
}

/** An empty typed array over a detached buffer: what a view of a disposed
 * import reads as (exports refuse it as released). */
function detached<T extends NodeJS.TypedArray>(Ctor: ViewConstructor<T>): T {
  const buffer = new ArrayBuffer(0);
  const view = new Ctor(buffer, 0, 0);
  buffer.transfer(0);
  return view;
}

/** How each node of a plan becomes typed arrays (arrow/batch_plan.ts
 * BatchPlan): its kind (LazyKind), typed-array constructor and element
 * stride (fixed only), apache-arrow type and `Data.stride`, by node. */
export type LazyPlan = {
  readonly kinds: Int32Array;
  readonly ctors: readonly (ViewConstructor | null)[];
  readonly strides: Int32Array;
  readonly types: readonly DataType[];
  readonly dataStrides: Int32Array;
};

/** The released batch made last (`LazyBatch.releasedAt`). */
let lastReleased: LazyBatch | null = null;

/** The plan of a released batch (`LazyBatch.releasedAt`), never read. */
const releasedPlan: LazyPlan = { kinds: new Int32Array(0), ctors: [], strides: new Int32Array(0), types: [], dataStrides: new Int32Array(0) };

/** Set when a lazy batch is first read (a stream's converter asks, to
 * choose how to build its next batches). */
export type ReadProbe = { read: boolean };

/**
 * The lazy Data of one batch and the deferred views they read. `add`
 * makes each Data (the caller has checked that every slot it will view
 * lies within its buffer); `materialize` fills them all in.
 */
export class LazyBatch {
  #pending: LazyFields[] = [];
  /** Where the handle the batch was converted from was disposed, once it
   * was: every Data not filled yet then refuses reads. */
  #releasedAt: Error | null = null;

  /** `probe.read` is set at the first read (null: nobody asks). */
  constructor(readonly plan: LazyPlan, readonly deferred: DeferredViews, readonly probe: ReadProbe | null) {}

  /** The Data of plan node `node` over buffers from `first` in the
   * batch's table (integers as `LazyDataObject` takes them). */
  add(node: number, offset: number, length: number, nullCount: number, children: Data[] | undefined, first: number): Data {
    const plan = this.plan;
    const data = new LazyDataObject(plan.types[node], plan.dataStrides[node], offset, length, nullCount, children ?? noArrays, this, node, first);
    this.#pending.push(data);
    return data as unknown as Data;
  }

  /** The batch's root: a struct Data over `children` with no buffers (a
   * batch has no row-level validity), filled from the start, whose
   * buffer fields refuse reads once its handle is disposed, as its
   * children's do (`releaseLazyData`), without fields replaced. */
  root(type: DataType, stride: number, length: number, children: Data[]): Data {
    return new LazyDataObject(type, stride, 0, Math.floor(Math.max(length || 0, 0)), 0, children, null, -1, -1) as unknown as Data;
  }

  /** The handle's dispose (arrow/import.ts `releaseConverted`, at `site`):
   * from now on a read or write of any Data of the batch not filled yet
   * throws ReleasedError naming `site`: one store for the whole batch
   * (a filled Data is given a released batch of its own instead,
   * `releasedAt`). */
  release(site: Error): void {
    this.#releasedAt ??= site;
  }

  /** A batch that only refuses: the `_lz` of a filled Data released at
   * `site` (its accessors then throw instead of returning its fields). */
  static releasedAt(site: Error): LazyBatch {
    // One per dispose: every Data a dispose releases shares it.
    if (lastReleased !== null && lastReleased.#releasedAt === site) return lastReleased;
    const batch = new LazyBatch(releasedPlan, null as unknown as DeferredViews, null);
    batch.#releasedAt = site;
    lastReleased = batch;
    return batch;
  }

  /** Makes every view of the batch (or learns they were detached) and
   * fills in the typed arrays of every Data not filled yet; `reader` is
   * the Data read, named by the ReleasedError of a released batch. */
  materialize(reader: Data | LazyFields): void {
    if (this.#releasedAt !== null) throw releasedDataError(reader as Data, this.#releasedAt);
    if (this.probe !== null) this.probe.read = true;
    const views = this.deferred.views();
    const pending = this.#pending;
    this.#pending = [];
    for (const data of pending) if (data._lz !== null) this.#fill(data, views);
  }

  #fill(data: LazyFields, views: readonly (ArrayBuffer | undefined)[] | null): void {
    const first = data._lzFirst;
    const node = data._lzNode;
    const kind = this.plan.kinds[node];
    data._nullBitmap = this.#bytes(views, first);
    switch (kind) {
      case LazyKind.fixed: {
        const stride = this.plan.strides[node];
        data._values = this.#slots(views, first + 1, this.plan.ctors[node]!, data.offset * stride, data.length * stride);
        break;
      }
      case LazyKind.boolean:
        data._values = this.#bytes(views, first + 1);
        break;
      case LazyKind.struct:
        break;
      default: {
        const Ctor = (kind === LazyKind.largeBinary ? BigInt64Array : Int32Array) as ViewConstructor;
        data._valueOffsets = this.#slots(views, first + 1, Ctor, data.offset, data.length + 1);
        data._values = this.#bytes(views, first + 2);
      }
    }
    data._lz = null;
  }

  /** Whether buffer `b` has a view (a size, an address, bytes). */
  #viewed(b: number): boolean {
    const { table, at } = this.deferred;
    const base = at + b * bufferStride;
    return table[base + BufferWord.size_bytes] > 0 && table[base + BufferWord.address] !== 0;
  }

  /** Bytes [0, size) of buffer `b`. */
  #bytes(views: readonly (ArrayBuffer | undefined)[] | null, b: number): Uint8Array {
    if (!this.#viewed(b)) return emptyBytes();
    if (views === null) return detached(Uint8Array);
    const { table, at } = this.deferred;
    return new Uint8Array(views[b]!, 0, table[at + b * bufferStride + BufferWord.size_bytes]);
  }

  /** `count` elements of buffer `b` from element `from` (checked when
   * the Data was added). */
  #slots(views: readonly (ArrayBuffer | undefined)[] | null, b: number, Ctor: ViewConstructor, from: number, count: number): NodeJS.TypedArray {
    const viewed = this.#viewed(b);
    if (views === null && viewed) return detached(Ctor);
    const view = views === null ? undefined : views[b];
    if (count === 0) return new Ctor(view ?? empty, 0, 0);
    return new Ctor(view!, from * Ctor.BYTES_PER_ELEMENT, count);
  }
}

/** The ReleasedError of a read of `data`, converted from a handle that
 * was disposed at `site`. */
export function releasedDataError(data: Data, site: Error | null): ReleasedError {
  return new ReleasedError(Status.released, `this ${data.type} data was converted from an ImportedArray that was disposed${disposalSite(site)}, which released its memory: read it before dispose() (before the end of a using block), or call releaseToGC() instead of dispose() to leave its memory to the garbage collector`);
}

/**
 * `releaseConverted` of a lazy Data: makes it refuse reads and writes of
 * its buffers (ReleasedError naming `site`) through its own accessors,
 * where any other Data (null) needs its fields replaced. One not filled
 * yet marks its batch, which covers its children, all of that batch
 * ("batch"); a filled one gets a released batch of its own, and its
 * children are the caller's to release ("data").
 */
export function releaseLazyData(data: Data, site: Error): "batch" | "data" | null {
  if (!(data instanceof LazyDataObject)) return null;
  if (data._lz !== null) {
    data._lz.release(site);
    return "batch";
  }
  data._lz = LazyBatch.releasedAt(site);
  return "data";
}
