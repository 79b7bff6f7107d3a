/**
 * The Data builder: apache-arrow Data over one ImportedArray's memory,
 * without copying buffers (arrow/import.ts's conversions and the batches
 * the plan does not fit use it).
 *
 * Every buffer becomes a typed-array view of the producer's memory, made
 * from the ImportedArray's one ArrayBuffer per buffer (`prefetchAll`: one
 * native call pays every view's owner reference). A view holds its owner
 * until it is garbage-collected, so the producer's release runs once the
 * last apache-arrow object using its memory is gone; `imported.dispose()`
 * ends that at once (views then read as empty).
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
  Data, DataType, IntervalUnit, Type, UnionMode, Vector,
  type Decimal, type Dictionary, type FixedSizeBinary, type FixedSizeList, type Interval, type Union,
} from "apache-arrow";
import { InvalidLayoutError, Status } from "../core/errors.ts";
import { BufferWord, NodeWord, TypeId, bufferStride, nodeStride } from "../core/abi/layout.ts";
import { hostAccessError, type ImportedArray, type RawArray } from "../native/imported.ts";
import { handleTables } from "../native/batch_source.ts";
import { type ViewConstructor } from "./lazy_data.ts";
import { listViewToList, runEndToPlain } from "./materialize.ts";
import { newData } from "./arrow_data.ts";
import { conversionError, describeNode, nodePath, type ConvertOptions } from "./types.ts";

const empty = new ArrayBuffer(0);

/** Elements per value in the typed array apache-arrow uses for `type`. */
export function strideOf(type: DataType): number {
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
export const fastBuffers: number[] = [];
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
export class DataBuilder {
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
        // Pushed, not `new Array(count)`: see BatchPlan.#children (arrow/batch_plan.ts).
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
