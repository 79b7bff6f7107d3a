/**
 * One node of an imported tree, read in place (RawArray): the C struct
 * fields, typed buffer views, children and dictionary of a node of an
 * ImportedArray's owner.
 */
import { BufferKind, BufferWord, NodeWord, TypeId, deviceTypeName, type TypeIdName } from "../core/abi/layout.ts";
import { arrayFields } from "../core/abi/structs.ts";
import { InvalidLayoutError, OutOfRangeError, Status } from "../core/errors.ts";
import { argumentError, integerArg, isPlainObject } from "../core/args.ts";
import { bufferWordOf, nodeSchemaOf, nodeWordOf } from "./handle_reads.ts";
import { isHandle } from "./handle_access.ts";
import { hostAccessError } from "./host_access.ts";
import type { ImportedArray } from "./imported_array.ts";
import { type Window } from "./selection.ts";
import { inspectCustom } from "./inspect.ts";
import { showRawArray } from "./inspect_handles.ts";

const typeIdNames = Object.fromEntries(Object.entries(TypeId).map(([k, v]) => [v, k])) as Record<number, TypeIdName>;

/** A typed view of one imported buffer. Its ArrayBuffer wraps the native
 * memory in place (never a SharedArrayBuffer); it is detached when the
 * import is disposed. */
export type TypedBuffer =
  | Uint8Array<ArrayBuffer> | Int8Array<ArrayBuffer> | Int16Array<ArrayBuffer> | Uint16Array<ArrayBuffer>
  | Int32Array<ArrayBuffer> | Uint32Array<ArrayBuffer> | BigInt64Array<ArrayBuffer> | BigUint64Array<ArrayBuffer>
  | Float32Array<ArrayBuffer> | Float64Array<ArrayBuffer>;

type TypedArrayConstructor = {
  new (buffer: ArrayBuffer, byteOffset?: number, length?: number): TypedBuffer;
  readonly BYTES_PER_ELEMENT: number;
};

/** The element type of a fixed-width data buffer, by type id. */
const fixedElement: Partial<Record<number, TypedArrayConstructor>> = {
  [TypeId.int8]: Int8Array, [TypeId.uint8]: Uint8Array, [TypeId.int16]: Int16Array, [TypeId.uint16]: Uint16Array,
  [TypeId.int32]: Int32Array, [TypeId.uint32]: Uint32Array, [TypeId.int64]: BigInt64Array, [TypeId.uint64]: BigUint64Array,
  [TypeId.float16]: Uint16Array, [TypeId.float32]: Float32Array, [TypeId.float64]: Float64Array,
  [TypeId.decimal]: Uint32Array, [TypeId.fixed_size_binary]: Uint8Array,
  [TypeId.date32]: Int32Array, [TypeId.date64]: BigInt64Array, [TypeId.time32]: Int32Array, [TypeId.time64]: BigInt64Array,
  [TypeId.timestamp]: BigInt64Array, [TypeId.duration]: BigInt64Array,
  [TypeId.interval_months]: Int32Array, [TypeId.interval_day_time]: Int32Array, [TypeId.interval_month_day_nano]: Int32Array,
};

const kindElement: Record<number, TypedArrayConstructor> = {
  [BufferKind.bits]: Uint8Array,
  [BufferKind.offsets32]: Int32Array,
  [BufferKind.offsets64]: BigInt64Array,
  [BufferKind.bytes]: Uint8Array,
  [BufferKind.views]: Uint8Array,
  [BufferKind.variadic_bytes]: Uint8Array,
  [BufferKind.variadic_sizes]: BigInt64Array,
  [BufferKind.type_ids]: Int8Array,
  [BufferKind.view_offsets32]: Int32Array,
  [BufferKind.view_offsets64]: BigInt64Array,
  [BufferKind.union_offsets]: Int32Array,
};

/**
 * One node of an imported tree, read in place: the C struct fields, typed
 * buffer views, children and dictionary. Valid while its ImportedArray is
 * not disposed (accessors throw ReleasedError after).
 */
export class RawArray {
  /** `window`, when given, overrides the node's offset, length and null
   * count (the root of a child or slice handle). */
  constructor(readonly imported: ImportedArray, readonly index: number, readonly window: Window | null = null) {
    if (!isHandle("ImportedArray", imported)) throw argumentError("RawArray", "imported", "an ImportedArray", imported);
    integerArg("RawArray", "index", index, 0, imported.nodeCount - 1);
    if (window !== null && !isPlainObject(window)) throw argumentError("RawArray", "window", "a Window or null", window);
  }

  #word(word: number): number {
    return nodeWordOf(this.imported, this.index, word);
  }

  /** This node's `ArrowSchema*` (owner memory). */
  get schemaAddress(): number { return this.#word(NodeWord.schema); }
  /** This node's `ArrowArray*` (owner memory). */
  get arrayAddress(): number { return this.#word(NodeWord.array); }
  /** The Arrow type, decoded from the format by validation. */
  get typeId(): TypeIdName { return typeIdNames[this.#word(NodeWord.type_id)]; }
  /** The C Data Interface format string. */
  get format(): string { return nodeSchemaOf(this.imported, this.index).format; }
  /** The field name (null for a NULL name). */
  get name(): string | null { return nodeSchemaOf(this.imported, this.index).name; }
  /** ArrowSchema.flags (see `Flags`). */
  get flags(): number { return nodeSchemaOf(this.imported, this.index).flags; }
  /** Whether the NULLABLE flag is set. */
  get nullable(): boolean { return (this.flags & 2) !== 0; }
  /** Metadata as a Map (the last value wins for repeated keys). */
  get metadata(): Map<string, string> { return new Map(nodeSchemaOf(this.imported, this.index).metadataPairs ?? []); }
  /** Metadata as every key/value pair, repeats kept. */
  get metadataPairs(): [string, string][] { return [...(nodeSchemaOf(this.imported, this.index).metadataPairs ?? [])]; }
  /** Rows (the window's for the root of a child or slice handle). */
  get length(): number { return this.window ? this.window.length : this.#word(NodeWord.length); }
  /** -1 when unknown (a slice of device memory). */
  get nullCount(): number { return this.window ? this.window.nullCount : this.#word(NodeWord.null_count); }
  /** The C offset into the buffers (the window's for the root of a child
   * or slice handle). */
  get offset(): number { return this.window ? this.window.offset : this.#word(NodeWord.offset); }
  /** ArrowArray.n_buffers. */
  get nBuffers(): number { return this.#word(NodeWord.n_buffers); }
  /** ArrowArray.n_children. */
  get nChildren(): number { return this.#word(NodeWord.n_children); }
  /** The import's device type (every node shares it). */
  get deviceType(): number { return this.imported.deviceType; }
  /** The import's device id. */
  get deviceId(): number { return this.imported.deviceId; }
  /** The import's sync event address (0 when none). */
  get syncEvent(): number { return this.imported.syncEvent; }
  /** Whether the struct has been released (always false while the handle
   * lives: the owner keeps it). */
  get released(): boolean {
    if (this.imported.disposed) return true;
    return arrayFields.released(this.arrayAddress);
  }

  /** Every child node, in order. */
  get children(): RawArray[] {
    const first = this.#word(NodeWord.first_child);
    return Array.from({ length: this.nChildren }, (_, i) => this.imported.node(first + i));
  }

  /** Child node `i`; throws OutOfRangeError for a bad index. */
  child(i: number): RawArray {
    this.#index("child", i, this.nChildren, "children");
    return this.imported.node(this.#word(NodeWord.first_child) + i);
  }

  /** The dictionary node, or null when this node is not dictionary-encoded. */
  get dictionary(): RawArray | null {
    const index = this.#word(NodeWord.dictionary);
    return index < 0 ? null : this.imported.node(index);
  }

  /** Global buffer-table index of this node's buffer `i`. */
  bufferIndex(i: number): number {
    return this.#buffer("bufferIndex", i);
  }

  /** The global buffer index of buffer `i`, checked for `fn`. */
  #buffer(fn: string, i: number): number {
    this.#index(fn, i, this.nBuffers, "buffers");
    return this.#word(NodeWord.first_buffer) + i;
  }

  /** Checks `fn`'s index `i`, below `count` (of `what`). */
  #index(fn: string, i: unknown, count: number, what: string): void {
    if (typeof i !== "number" || !Number.isInteger(i)) throw argumentError(`RawArray.${fn}`, "i", "an integer index", i);
    if (i < 0 || i >= count) throw new OutOfRangeError(Status.out_of_range, `RawArray.${fn}: ${what} ${i} is out of the ${count} ${what} of "${this.name ?? ""}" (${this.format})`);
  }

  /** The address of buffer `i` as the producer gave it (0 for NULL). */
  bufferAddress(i: number): number { return bufferWordOf(this.imported, this.#buffer("bufferAddress", i), BufferWord.address); }
  /** Size in bytes implied by type, length and offset (-1: unknown, device). */
  bufferSize(i: number): number { return bufferWordOf(this.imported, this.#buffer("bufferSize", i), BufferWord.size_bytes); }
  /** What buffer `i` holds (see `BufferKind`), from the node's type. */
  bufferKind(i: number): number { return bufferWordOf(this.imported, this.#buffer("bufferKind", i), BufferWord.kind); }

  /**
   * Size of buffer `i` in bytes. Sizes that validation left unknown (level
   * "minimal" reads no buffer) are read now: the last offset for value
   * bytes, the sizes buffer for variadic buffers. Throws for memory the
   * host cannot read, naming the device.
   */
  byteLength(i: number): number {
    const known = bufferWordOf(this.imported, this.#buffer("byteLength", i), BufferWord.size_bytes);
    if (known >= 0) return known;
    if (!this.imported.hostReadable) throw hostAccessError(this.deviceType, this.deviceId, `buffer ${i} of ${this.#where()}`);
    const kind = this.bufferKind(i);
    if (kind === BufferKind.bytes) {
      const offsets = this.buffer(1) as Int32Array | BigInt64Array;
      const last = Number(offsets[this.offset + this.length] ?? 0);
      if (last < 0) throw new InvalidLayoutError(Status.invalid_layout, `${this.#where()}: last offset ${last} is negative`);
      return last;
    }
    if (kind === BufferKind.variadic_bytes) {
      const sizes = this.buffer(this.nBuffers - 1) as BigInt64Array;
      const size = Number(sizes[i - 2] ?? 0n);
      if (size < 0) throw new InvalidLayoutError(Status.invalid_layout, `${this.#where()}: variadic buffer ${i - 2} has negative size ${size}`);
      return size;
    }
    throw new InvalidLayoutError(Status.invalid_layout, `${this.#where()}: buffer ${i} has no known size`);
  }

  #where(): string {
    return `"${this.name ?? ""}" (${this.format})`;
  }

  /** The ArrayBuffer whose first `byteLength(i)` bytes are buffer `i`
   * (shared by every view of it; longer when a larger buffer starts at the
   * same address). */
  memory(i: number): ArrayBuffer {
    const index = this.#buffer("memory", i);
    const known = bufferWordOf(this.imported, index, BufferWord.size_bytes);
    return this.imported.bufferMemory(index, known >= 0 ? undefined : this.byteLength(i));
  }

  /** Buffer `i` as a typed array of its element type, over the producer's
   * memory (no copy), covering offset + length slots. Throws for memory
   * the host cannot read, naming the device. */
  buffer(i: number): TypedBuffer {
    this.#buffer("buffer", i);
    const memory = this.memory(i);
    const kind = this.bufferKind(i);
    const element = kind === BufferKind.fixed ? fixedElement[this.#word(NodeWord.type_id)] ?? Uint8Array : kindElement[kind];
    const bytes = memory.byteLength === 0 ? 0 : this.byteLength(i);
    return new element(memory, 0, Math.floor(bytes / element.BYTES_PER_ELEMENT));
  }

  /** Every buffer, as `buffer(i)` gives it. */
  get buffers(): TypedBuffer[] {
    return Array.from({ length: this.nBuffers }, (_, i) => this.buffer(i));
  }

  /** What console.log and Bun.inspect print (native/inspect.ts). */
  [inspectCustom](): string { return showRawArray(this); }

  /** A plain description, reading no buffer (safe for device memory). */
  describe(): object {
    return {
      format: this.format, name: this.name, typeId: this.typeId, length: this.length, nullCount: this.nullCount,
      offset: this.offset, flags: this.flags, device: deviceTypeName(this.deviceType), deviceId: this.deviceId,
      buffers: Array.from({ length: this.nBuffers }, (_, i) => ({ address: this.bufferAddress(i), size: this.bufferSize(i) })),
      children: this.children.map((c) => c.describe()),
      dictionary: this.dictionary?.describe() ?? null,
    };
  }
}
