/**
 * Imported Arrow data: the handle over a native owner (zig/import/owner.zig).
 * Its nodes are read in place through RawArray (raw_array.ts); converters
 * reach its tables through batch_source.ts.
 *
 * Ownership. Importing moves the producer's ArrowSchema + ArrowDeviceArray
 * into a native owner under an atomic reference count; the caller's structs
 * are left released. Every JS ArrayBuffer this module creates over owner
 * memory (the handle's anchor, and every buffer view) holds one reference,
 * dropped by a native deallocator when the ArrayBuffer is garbage-collected
 * (any thread) or detached. The handle reads its node and buffer tables
 * from a JS copy (one native call, `abd_owner_snapshot`, which also pays
 * for the anchor: 8 bytes of the node table wrapped like a view, whose
 * only job is to hold the handle's reference).
 *
 * Each ArrayBuffer holds a reference of its own (owner_stamp.ts says
 * why). Buffers that start at the same address share one ArrayBuffer (the
 * largest), so they pay for one wrap and one reference. So the producer's
 * release runs exactly once, after the last view is gone, with no
 * FinalizationRegistry involved. `dispose()` (or `using`) detaches every
 * ArrayBuffer the handle created, which runs the release at once; views
 * read after that see detached (empty) buffers, never freed memory.
 *
 * Children and slices (`child(i)`, `slice(offset, length)`) are handles of
 * their own over the same owner: each holds its own references (its own
 * table views and buffer views), so it outlives the handle it came from,
 * and disposing it ends only what it holds. Re-exports (`reexport()`,
 * native/reexport.ts) hold a native reference each, and so does every
 * export of data converted from the import (arrow/export.ts finds the
 * owner of each buffer with `importOwnerOf`): `dispose()` then ends the
 * handle's own access, and the producer's release waits for the exports.
 */
import { BufferWord, DeviceType, NodeWord, OwnerInfoWord, bufferStride, deviceTypeName, nodeStride, ownerInfoWords } from "../core/abi/layout.ts";
import { asPointer } from "../core/abi/structs.ts";
import { InvalidLayoutError, OutOfMemoryError, OutOfRangeError, ReleasedError, Status, UnsupportedError } from "../core/errors.ts";
import { addressArg, argumentError, booleanArg, integerArg, isPlainObject, stringArg } from "../core/args.ts";
import { native } from "../core/ffi/library.ts";
import type { StructRef } from "./c_structs.ts";
import { ownerFromProducer, ownerOfDeviceStructs, ownerOfStructs, type ImportOptions } from "./import_owner.ts";
import { debugEnabled, disposalSite, disposeSite, track, untrack, unwatch, watch } from "./debug.ts";
import { DeferredViews } from "./deferred_views.ts";
import type { ExportedArray } from "./exported.ts";
import { hostAccessError } from "./host_access.ts";
import { grantArrayAccess, grantBrand, type EmptyConverted } from "./handle_access.ts";
import { SnapshotReference, distinctWanted, giveBackSnapshot, ownerSnapshot, snapshotIsSpare, wrapWanted } from "./import_snapshot.ts";
import { readSchemas, type NodeSchema } from "./node_schemas.ts";
import { disarmAnchor, handleAnchor, lastAnchorAddress, maxViewBytes, ownerView, recycleAnchor } from "./owner_stamp.ts";
import { RawArray } from "./raw_array.ts";
import { copyToHost, type ToHostOptions } from "./to_host.ts";
import { reexport, type ReexportOptions } from "./reexport.ts";
import { selectWindow, type SliceRange, type Window } from "./selection.ts";
import { importedArrayCapsule, importedSchemaCapsule } from "./protocol/handle_methods.ts";
import { ArrowCArray, ArrowCDeviceArray, ArrowCSchema, isArrayProducer, type ArrayProducer, type ArrowCapsule, type ProtocolOptions } from "./protocol/symbols.ts";
import { inspectCustom } from "./inspect.ts";
import { showImportedArray } from "./inspect_handles.ts";

export { type ImportOptions } from "./import_owner.ts";
export { type ToHostOptions } from "./to_host.ts";

/** Info words copied out of the owner (they never change). */
type OwnerInfo = Float64Array;

/** What a disposed handle's `#info` is: its tables were given back. */
const noInfo: OwnerInfo = new Float64Array(0);

/** What a disposed handle's `#created` and `#views` are: one frozen empty
 * array for all (nothing reads or adds to them once the handle is
 * disposed; `#live()` refuses first). */
const disposedArrays: ArrayBuffer[] = Object.freeze([]) as unknown as ArrayBuffer[];

/** Proves a constructor call comes from this module. */
const internalToken = Symbol("ImportedArray");

/**
 * An imported array (or record batch: a struct array) held by a native
 * owner. Read it through `root` (typed raw views, every Arrow type) or
 * convert it with arrow/import.ts (apache-arrow objects).
 */
export class ImportedArray implements Disposable {

  /** Protocol (docs/protocol.md): an "arrow_schema" capsule. */
  get [ArrowCSchema](): (options?: ProtocolOptions) => ArrowCapsule { return (options) => importedSchemaCapsule(this, options); }
  /** Protocol (docs/protocol.md): an "arrow_array" capsule; undefined for device data. */
  get [ArrowCArray](): ((options?: ProtocolOptions) => ArrowCapsule) | undefined { return this.deviceType === DeviceType.CPU ? (options) => importedArrayCapsule(this, "array", options) : undefined; }
  /** Protocol (docs/protocol.md): an "arrow_device_array" capsule. */
  get [ArrowCDeviceArray](): (options?: ProtocolOptions) => ArrowCapsule { return (options) => importedArrayCapsule(this, "device_array", options); }
  #owner: number;
  /** The owner's info words, then its node table, then its buffer table
   * (a JS copy: they never change), until `dispose()` gives the array back
   * for the next import's snapshot (import_snapshot.ts); empty from then
   * on (what a disposed handle still reports is kept below). */
  #info: OwnerInfo;
  /** Whether `#info` is one of import_snapshot.ts's spare arrays. */
  #infoSpare: boolean;
  // The info words a disposed handle still reports (its getters).
  #deviceType: number;
  #deviceId: number;
  #syncEvent: number;
  #hostReadable: boolean;
  #bytesHeld: number;
  #nodeCount: number;
  #bufferCount: number;
  /** Where the buffer table starts in `#info`. */
  #buffersAt: number;
  /** Every ArrayBuffer created over owner memory, for `dispose()`: the
   * anchor (the handle's own reference) first. */
  #created: ArrayBuffer[] = [];
  /** Views already made, by buffer index (so each is made once). */
  #views: (ArrayBuffer | undefined)[] = [];
  /** The same memory, by start address: buffers that start at the same
   * address share one ArrayBuffer (the largest of them), so repeated or
   * shared buffers pay for one wrap and one owner reference. Null until a
   * look-up needs it (`#regions`): the usual import views every buffer at
   * once at distinct addresses (`#prefetchDistinct`) and never looks. */
  #byAddress: Map<number, ArrayBuffer> | null = null;
  #disposed = false;
  /** Where `dispose()` ran (debug/disposeSite: recorded in debug mode only). */
  #disposedAt: Error | null = null;
  /** The deferred views every batch converted lazily from this handle
   * shares (arrow/import.ts; made by the first), killed by `dispose()`:
   * they hold references of their own, which `releaseToGC()` leaves to
   * them. */
  #deferred: DeferredViews | null = null;
  /** Objects converted from this handle (`noteConverted`), emptied by
   * `dispose()`: pairs, each object's WeakRef then its emptier. */
  #converted: (WeakRef<object> | EmptyConverted)[] | null = null;
  /** A transient handle's own reference, held natively (no anchor view):
   * given back by `dispose()` or `releaseToGC()`, one of which its
   * (internal) creator always calls. */
  #plainReference = false;
  /** The native anchor holding this handle's reference (owner_stamp.ts
   * `handleAnchor`; its ArrayBuffer is `#created[0]`), ended by
   * `dispose()` or `releaseToGC()`; 0 once they ran, and for a transient
   * handle. */
  #anchor = 0;
  #token: number;
  /** The rows this handle covers; null: the whole array (the root). */
  #window: Window | null;

  /** Takes `window` of `owner` (null: the whole array). The caller holds a
   * reference for the duration of the call; `adoptImportReference` says it
   * is the import's own, which this handle then drops. */
  private constructor(token: symbol, owner: number, window: Window | null, kind: string, adoptImportReference: boolean, transient = false, snapshot: Float64Array | null = null) {
    // Private in TS, reachable from JS: only this module may make one (an
    // owner address from elsewhere could be anything).
    if (token !== internalToken) throw argumentError("ImportedArray", "the constructor", "not called: use ImportedArray.fromArray or fromDeviceArray", token);
    addressArg("ImportedArray", "owner", owner);
    if (window !== null && !isPlainObject(window)) throw argumentError("ImportedArray", "window", "a Window or null", window);
    stringArg("ImportedArray", "kind", kind);
    booleanArg("ImportedArray", "adoptImportReference", adoptImportReference);
    this.#owner = owner;
    this.#window = window;
    this.#token = track(kind);
    watch(this, this.#token, kind);
    // One native call copies the tables and pays for the anchor (adopting
    // the import's reference, or taking one); the anchor, 8 bytes of the
    // node table, then holds this handle's reference until it is detached
    // (dispose, releaseToGC) or collected.
    // A transient handle (adopting only) keeps the import's reference as
    // a plain one instead: no anchor to make and detach.
    if (transient && !adoptImportReference) throw argumentError("ImportedArray", "transient", "only with the import's own reference", transient);
    const reference = transient ? SnapshotReference.adoptPlain : adoptImportReference ? SnapshotReference.adoptForAnchor : SnapshotReference.retainForAnchor;
    // A given snapshot was taken with the pull (adoptPlain, see
    // `adoptImportSnapshot`): only a transient handle may take one.
    if (snapshot !== null && !transient) throw argumentError("ImportedArray", "snapshot", "only for a transient handle", snapshot);
    const info = snapshot ?? ownerSnapshot(owner, reference);
    this.#info = info;
    this.#infoSpare = snapshot === null && snapshotIsSpare();
    this.#deviceType = info[OwnerInfoWord.device_type];
    this.#deviceId = info[OwnerInfoWord.device_id];
    this.#syncEvent = info[OwnerInfoWord.sync_event];
    this.#hostReadable = info[OwnerInfoWord.host_readable] === 1;
    this.#bytesHeld = info[OwnerInfoWord.bytes_held];
    this.#nodeCount = info[OwnerInfoWord.node_count];
    this.#bufferCount = info[OwnerInfoWord.buffer_count];
    this.#buffersAt = ownerInfoWords + this.#nodeCount * nodeStride;
    if (transient) this.#plainReference = true;
    else {
      this.#created.push(handleAnchor(owner));
      this.#anchor = lastAnchorAddress();
    }
  }

  /** Refuses, with a typed error naming the buffer, a buffer larger than
   * a JS ArrayBuffer can be (Bun's toArrayBuffer throws a bare RangeError
   * above `maxViewBytes`). */
  #checkViewable(index: number, size: number): void {
    if (size <= maxViewBytes) return;
    throw new UnsupportedError(Status.unsupported, `${this.#bufferWhere(index)} is ${size} bytes; a JS ArrayBuffer holds at most ${maxViewBytes}, so it cannot be viewed or converted (its address and size stay readable through the raw view)`);
  }

  /** Wraps one buffer's region as a view paid for by one reference taken
   * already; `unpaidAfter` references were taken for regions not wrapped
   * yet, given back if this wrap fails (Bun runs the deallocator of a
   * failed wrap itself, which gives back this one's). */
  #wrapView(index: number, address: number, size: number, unpaidAfter: number): ArrayBuffer {
    try {
      return this.#wrap(address, size);
    } catch (error) {
      if (unpaidAfter > 0) native.abd_owner_release_views(asPointer(this.#owner), unpaidAfter);
      throw new OutOfMemoryError(Status.out_of_memory, `${this.#bufferWhere(index)} (${size} bytes) could not be viewed from JS: ${(error as Error)?.message ?? String(error)}`);
    }
  }

  /** "buffer i of node n "name" (format)", for errors about buffer `index`
   * of the owner's table. */
  #bufferWhere(index: number): string {
    for (let node = 0; node < this.nodeCount; node++) {
      const first = this.#info[ownerInfoWords + node * nodeStride + NodeWord.first_buffer];
      const count = this.#info[ownerInfoWords + node * nodeStride + NodeWord.n_buffers];
      if (index >= first && index < first + count) {
        const schema = this.#nodeSchemas()[node];
        return `buffer ${index - first} of node ${node} "${schema.name ?? ""}" (${schema.format})`;
      }
    }
    return `buffer ${index}`;
  }

  #wrap(address: number, bytes: number): ArrayBuffer {
    const buffer = ownerView(address, bytes, this.#owner);
    this.#created.push(buffer);
    return buffer;
  }

  /** Moves `schema` + `deviceArray` (C `ArrowSchema*`, `ArrowDeviceArray*`)
   * in and validates them. The caller's structs are left released, whether
   * or not this succeeds. */
  static fromDeviceArray(schema: StructRef<"ArrowSchema"> | null, deviceArray: StructRef<"ArrowDeviceArray"> | null, options?: ImportOptions): ImportedArray;
  /** Takes the array of any protocol producer or array capsule
   * (docs/protocol.md), preferring its device method. */
  static fromDeviceArray(source: ArrayProducer | ArrowCapsule, options?: ImportOptions): ImportedArray;
  /** Either form above. */
  static fromDeviceArray(schema: StructRef<"ArrowSchema"> | ArrayProducer | ArrowCapsule | null, deviceArray?: StructRef<"ArrowDeviceArray"> | ImportOptions | null, options?: ImportOptions): ImportedArray {
    return ImportedArray.#adopt(isArrayProducer(schema)
      ? ownerFromProducer("ImportedArray.fromDeviceArray", schema, deviceArray as ImportOptions | undefined)
      : ownerOfDeviceStructs(schema as StructRef<"ArrowSchema"> | null, deviceArray as StructRef<"ArrowDeviceArray"> | null, options));
  }

  /** A handle adopting the import reference of a new owner. */
  static #adopt(owner: number): ImportedArray { return new ImportedArray(internalToken, owner, null, "ImportedArray", true); }

  // Module-private adoption and reads (handle_access.ts), and the brand
  // check: a static block can reach the private constructor and fields;
  // nothing on the class takes a raw owner address or hands out its tables.
  static {
    grantBrand("ImportedArray", (value) => #owner in (value as object));
    grantArrayAccess({
      adopt: (owner, transient, words) => new ImportedArray(internalToken, owner, null, "ImportedArray", true, transient, words),
      words: (imported) => {
        imported.#live();
        return imported.#info;
      },
      views: (imported) => {
        imported.#live();
        return imported.#views;
      },
      schemas: (imported) => {
        imported.#live();
        return imported.#nodeSchemas();
      },
      note: (imported, converted, empty) => {
        if (imported.#disposed) return;
        (imported.#converted ??= []).push(new WeakRef(converted), empty);
      },
      defer: (imported) => {
        if (imported.#deferred !== null) return imported.#deferred;
        // Views made already (a raw read, an eager conversion before): the
        // eager path shares them.
        if (imported.#disposed || imported.#window !== null || imported.#views.length !== 0 || !imported.hostReadable) return null;
        // The handle's anchor (#created[0]: no view was made yet) holds the
        // deferred views too; a transient handle has none to share.
        const anchor = imported.#plainReference ? null : imported.#created[0];
        return imported.#deferred = DeferredViews.of(imported.#owner, imported.#info, imported.#buffersAt, imported.bufferCount, imported.#info[OwnerInfoWord.nodes], anchor);
      },
    });
  }

  /** Like `fromDeviceArray` for a plain `ArrowArray*` (a CPU array). */
  static fromArray(schema: StructRef<"ArrowSchema"> | null, array: StructRef<"ArrowArray"> | null, options?: ImportOptions): ImportedArray;
  /** Takes the array of any protocol producer or array capsule
   * (docs/protocol.md), preferring its device method. */
  static fromArray(source: ArrayProducer | ArrowCapsule, options?: ImportOptions): ImportedArray;
  /** Either form above. */
  static fromArray(schema: StructRef<"ArrowSchema"> | ArrayProducer | ArrowCapsule | null, array?: StructRef<"ArrowArray"> | ImportOptions | null, options?: ImportOptions): ImportedArray {
    return ImportedArray.#adopt(isArrayProducer(schema)
      ? ownerFromProducer("ImportedArray.fromArray", schema, array as ImportOptions | undefined)
      : ownerOfStructs(schema as StructRef<"ArrowSchema"> | null, array as StructRef<"ArrowArray"> | null, options));
  }

  #live(): void {
    if (this.#disposed) throw new ReleasedError(Status.released, `this imported array was disposed${disposalSite(this.#disposedAt)}; its memory is released`);
  }

  /** True once `dispose()` ran: the handle's views are detached. */
  get disposed(): boolean {
    return this.#disposed;
  }

  /** The native owner's address (for re-export and relays). */
  get ownerAddress(): number {
    this.#live();
    return this.#owner;
  }

  /** The producer's ArrowDeviceType (CPU for an imported ArrowArray). */
  get deviceType(): number { return this.#deviceType; }
  /** `deviceType` by name, e.g. "CPU", "CUDA". */
  get deviceTypeName(): string { return deviceTypeName(this.deviceType); }
  /** The producer's device_id (-1 for an imported ArrowArray). */
  get deviceId(): number { return this.#deviceId; }
  /** Address of the producer's sync event (0 when none). */
  get syncEvent(): number { return this.#syncEvent; }
  /** False for device memory the host must not read. */
  get hostReadable(): boolean { return this.#hostReadable; }
  /** Sum of the known buffer sizes. */
  get byteLength(): number { return this.#bytesHeld; }
  /** Nodes in the imported tree (every child and dictionary, preorder). */
  get nodeCount(): number { return this.#nodeCount; }
  /** The moved-in `ArrowSchema*` (owner memory). */
  get schemaAddress(): number { this.#live(); return this.#info[OwnerInfoWord.schema]; }
  /** The moved-in `ArrowDeviceArray*` (owner memory; an imported ArrowArray
   * sits in one with device CPU). */
  get deviceArrayAddress(): number { this.#live(); return this.#info[OwnerInfoWord.device_array]; }

  /** The rows this handle covers (a copy); null for the whole array. */
  get window(): Window | null {
    return this.#window ? { ...this.#window } : null;
  }

  /** The node this handle covers: the root, or the child / slice it was
   * taken as (whose offset, length and null count are the window's). */
  get root(): RawArray {
    if (!this.#window) return this.node(0);
    this.#live();
    return new RawArray(this, this.#window.node, this.#window);
  }

  /**
   * Child column `index` as a handle of its own over the same owner: of a
   * struct (record batch), its rows under this handle's rows (Arrow C++'s
   * `field(i)`: offset applied, the struct's own validity not merged); of
   * other types (list values, union or run-end children), the whole child.
   * It holds its own references: it lives on after this handle is
   * disposed. Throws OutOfRangeError for a bad index.
   */
  child(index: number): ImportedArray {
    integerArg("ImportedArray.child", "index", index, 0);
    return this.#derive({ child: index }, "ImportedArray.child");
  }

  /** Rows `offset .. offset + length` of this handle, as a handle of its own
   * over the same owner (no copy). Throws OutOfRangeError when the range is
   * not within this handle's rows. */
  slice(offset: number, length: number): ImportedArray {
    integerArg("ImportedArray.slice", "offset", offset, 0);
    integerArg("ImportedArray.slice", "length", length, 0);
    const range: SliceRange = { offset, length };
    return this.#derive({ slice: range }, "ImportedArray.slice");
  }

  /** The dictionary of this (dictionary-encoded) array, as a handle of its
   * own. Throws InvalidArgumentError when there is none. */
  dictionaryArray(): ImportedArray {
    return this.#derive({ dictionary: true }, "ImportedArray.dictionary");
  }

  #derive(selection: { child?: number; slice?: SliceRange; dictionary?: boolean }, kind: string): ImportedArray {
    this.#live(); // our table views hold references: the owner is alive
    const window = selectWindow(this.#owner, this.#window, selection);
    return new ImportedArray(internalToken, this.#owner, window, kind, false);
  }

  /**
   * Hands this array (or a child, dictionary or slice of it) to a C
   * consumer as new `ArrowSchema` + `ArrowDeviceArray` (or `ArrowArray`)
   * structs over the same buffers, without converting or reading them. Any
   * number of re-exports may be alive at once; each holds the producer's
   * data until its consumer releases it (any thread, any order), whether or
   * not this handle is disposed first. See native/reexport.ts.
   */
  reexport(options?: ReexportOptions & { as?: "device_array" }): ExportedArray<"device_array">;
  /** `reexport` as ArrowSchema + ArrowArray (`{ as: "array" }`). */
  reexport(options: ReexportOptions & { as: "array" }): ExportedArray<"array">;
  /** `reexport` with the kind known only at run time. */
  reexport(options?: ReexportOptions): ExportedArray<"array" | "device_array">;
  /** Any form above. */
  reexport(options: ReexportOptions = {}): ExportedArray<"array" | "device_array"> {
    return reexport(this, options);
  }

  /** Node `index` of the whole tree (0: the root, then preorder), whatever
   * this handle covers. Throws OutOfRangeError for a bad index. */
  node(index: number): RawArray {
    this.#live();
    this.#index("ImportedArray.node", "index", index, this.nodeCount, "nodes");
    return new RawArray(this, index);
  }

  #schemas: NodeSchema[] | null = null;

  /** Every node's schema fields (decoded for all nodes on first use). */
  #nodeSchemas(): NodeSchema[] {
    return this.#schemas ??= readSchemas(this.#owner);
  }

  /**
   * A zero-copy ArrayBuffer whose first bytes are buffer `index` (of the
   * owner's buffer table), made once and then shared; it may be longer when
   * a larger buffer starts at the same address (see RawArray.byteLength for
   * the buffer's own size). Holds an owner reference until it is collected
   * or the handle is disposed. Empty buffers get an empty ArrayBuffer.
   */
  bufferMemory(index: number, byteLength?: number): ArrayBuffer {
    this.#live();
    this.#index("ImportedArray.bufferMemory", "index", index, this.bufferCount, "buffers");
    if (byteLength !== undefined) integerArg("ImportedArray.bufferMemory", "byteLength", byteLength, 0);
    const made = this.#views[index];
    if (made) return made;
    if (!this.hostReadable) throw hostAccessError(this.deviceType, this.deviceId, `buffer ${index}`);
    const at = this.#buffersAt + index * bufferStride;
    const address = this.#info[at + BufferWord.address];
    let size = this.#info[at + BufferWord.size_bytes];
    if (size < 0) {
      // Validated at "minimal": value sizes were not read. The caller read
      // them (RawArray.buffer, arrow/import.ts) and passes them in.
      if (byteLength === undefined || !(byteLength >= 0)) {
        throw new InvalidLayoutError(Status.invalid_layout, `buffer ${index} has a size that validation did not compute; read it through RawArray.buffer()`);
      }
      size = byteLength;
    }
    let memory: ArrayBuffer;
    if (size === 0 || address === 0) {
      memory = new ArrayBuffer(0);
    } else {
      // The first view of a handle shares no region: the map of regions
      // is made (from the views) only once there is one to share.
      const regions = this.#byAddress !== null || this.#views.length !== 0 ? this.#regions() : null;
      const shared = regions?.get(address);
      if (shared && shared.byteLength >= size) {
        memory = shared;
      } else {
        this.#checkViewable(index, size);
        native.abd_owner_retain_views(asPointer(this.#owner), 1);
        memory = this.#wrapView(index, address, size, 0);
        regions?.set(address, memory);
      }
    }
    this.#views[index] = memory;
    return memory;
  }

  /** Checks `fn`'s `param`, an index below `count` (of `what`). */
  #index(fn: string, param: string, index: unknown, count: number, what: string): void {
    if (typeof index !== "number" || !Number.isInteger(index)) throw argumentError(fn, param, "an integer index", index);
    if (index < 0 || index >= count) throw new OutOfRangeError(Status.out_of_range, `${fn}: ${param} ${index} is out of the ${count} ${what}`);
  }

  /** Views of every buffer with a known size, with one native call for
   * their references (the import hot path). */
  #prefetch(): void {
    if (this.#views.length === 0 && this.#prefetchDistinct()) return;
    const table = this.#info;
    const at = this.#buffersAt;
    const views = this.#views;
    const byAddress = this.#regions();
    // Pass 1: the buffers to view, and each new start address's region:
    // the largest size wanted there, and the buffer it was sized by (for
    // errors), in `regions` (address -> buffer index).
    const regions = new Map<number, number>();
    const wanted: number[] = [];
    const count = this.bufferCount;
    for (let i = 0; i < count; i++) {
      const base = at + i * bufferStride;
      const size = table[base + BufferWord.size_bytes];
      const address = table[base + BufferWord.address];
      if (!(size > 0) || address === 0 || views[i] !== undefined) continue;
      // Before any reference is taken: a refusal leaves nothing to undo.
      this.#checkViewable(i, size);
      wanted.push(i);
      const shared = byAddress.get(address);
      if (shared !== undefined && shared.byteLength >= size) continue;
      const region = regions.get(address);
      if (region === undefined || table[at + region * bufferStride + BufferWord.size_bytes] < size) regions.set(address, i);
    }
    // Pass 2: one native call pays every new region's reference; a wrap
    // that fails anyway gives back the references of the regions after it.
    if (regions.size > 0) native.abd_owner_retain_views(asPointer(this.#owner), regions.size);
    let unpaid = regions.size;
    for (const [address, index] of regions) {
      unpaid--;
      byAddress.set(address, this.#wrapView(index, address, table[at + index * bufferStride + BufferWord.size_bytes], unpaid));
    }
    for (const i of wanted) views[i] = byAddress.get(table[at + i * bufferStride + BufferWord.address])!;
  }

  /** `#byAddress`, made from the views so far when it is not kept yet
   * (each start address to the largest view made there). */
  #regions(): Map<number, ArrayBuffer> {
    if (this.#byAddress !== null) return this.#byAddress;
    const regions = new Map<number, ArrayBuffer>();
    const views = this.#views;
    for (let i = 0; i < views.length; i++) {
      const view = views[i];
      if (view === undefined || view.byteLength === 0) continue;
      const address = this.#info[this.#buffersAt + i * bufferStride + BufferWord.address];
      const known = regions.get(address);
      if (known === undefined || known.byteLength < view.byteLength) regions.set(address, view);
    }
    this.#byAddress = regions;
    return regions;
  }

  /**
   * `#prefetch()` on a handle with no views yet, when the buffers to
   * view start at distinct addresses (then no two share a region): one
   * region per buffer, so no region map and no look-ups (`distinctWanted`
   * proves it). False, having taken nothing, when it cannot (the general
   * path then groups them).
   */
  #prefetchDistinct(): boolean {
    const table = this.#info;
    const at = this.#buffersAt;
    const views = this.#views;
    const count = this.bufferCount;
    const wanted = distinctWanted(table, at, count, views, (i, size) => this.#checkViewable(i, size));
    if (wanted < 0) return false;
    wrapWanted(this.#owner, table, at, count, views, wanted, (i, address, size, unpaidAfter) => this.#wrapView(i, address, size, unpaidAfter));
    // No #byAddress: every address here is distinct, and #regions makes it
    // from these views if a later look-up needs it.
    return true;
  }

  /** Number of buffers in the owner's table (every node's, preorder). */
  get bufferCount(): number {
    return this.#bufferCount;
  }

  /** Makes views of every buffer whose size validation computed, with one
   * native call for all their references (what conversion does first). */
  prefetchAll(): void {
    this.#live();
    if (this.hostReadable) this.#prefetch();
  }

  /**
   * Hands the lifetime over to the garbage collector: the handle stops
   * tracking what it made, so each buffer view lives as long as JS uses it
   * and the producer's release runs once the last one is collected. After
   * this, `dispose()` no longer detaches anything (the handle is as if
   * disposed). Used by `importVector` / `importRecordBatch`, whose results
   * outlive their handle.
   */
  releaseToGC(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    untrack(this.#token);
    unwatch(this);
    // The handle's own reference (its anchor) ends now, deterministically:
    // from here on only the buffer views, held by whatever JS made of them,
    // keep the producer's data alive. Unless lazily converted batches share
    // the anchor (their deferred views hold it): it then ends with them.
    if (this.#plainReference) {
      this.#plainReference = false;
      native.abd_owner_release(asPointer(this.#owner));
    } else if (this.#deferred === null) disarmAnchor(this.#anchor);
    this.#anchor = 0;
    this.#created = disposedArrays;
    this.#views = disposedArrays;
    this.#byAddress = null;
    this.#deferred = null;
    this.#converted = null;
  }

  /**
   * This array's data as an ordinary CPU import (a new ImportedArray, to
   * dispose separately; this one is unchanged).
   *
   * - Device memory (CUDA, ROCM): waits on the producer's `sync_event` (on
   *   `stream`, default the default stream), learns the sizes only the
   *   device knows (last offsets, variadic buffer sizes) with one batch of
   *   copies and one synchronization, copies every buffer to host memory
   *   the result owns, and returns when the copies are done.
   * - Host-visible memory (CPU, and CUDA_HOST, ROCM_HOST, CUDA_MANAGED after
   *   their event): a zero-copy view that keeps this import's data alive
   *   until the result is disposed.
   * Never dereferences device memory. Blocks the calling thread.
   */
  toHost(options: ToHostOptions = {}): ImportedArray {
    return copyToHost(this, options, (schema, deviceArray) => ImportedArray.fromDeviceArray(schema, deviceArray));
  }

  /** Detaches every ArrayBuffer made over owner memory, which releases the
   * producer's data now, unless an export of converted data still holds it
   * (then its consumer's release does). Views read as empty afterwards;
   * apache-arrow objects converted from the handle (`importRecordBatch`,
   * `importVector`, `importData`, `importTable`) keep their lengths, and a
   * read of their memory throws ReleasedError saying where this ran. Idempotent. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    untrack(this.#token);
    unwatch(this);
    const created = this.#created;
    this.#created = disposedArrays;
    this.#views = disposedArrays;
    this.#byAddress = null;
    // The anchor (created[0]) ends its reference with one native call;
    // every view is detached (it reads as empty from now on).
    const anchor = this.#anchor;
    let first = 0;
    if (anchor !== 0) {
      disarmAnchor(anchor);
      this.#anchor = 0;
      first = 1;
    }
    for (let i = first; i < created.length; i++) {
      const buffer = created[i];
      if (!buffer.detached) buffer.transfer(0);
    }
    const deferred = this.#deferred;
    this.#deferred = null;
    deferred?.kill();
    // Nothing links the disarmed anchor any more (the deferred views
    // dropped theirs): the next handle of this thread may take it.
    if (anchor !== 0) recycleAnchor(created[0], anchor);
    // What was converted from the handle now refuses reads of the
    // released memory, saying where this ran (`site`, in debug mode).
    const converted = this.#converted;
    this.#converted = null;
    const site = disposeSite();
    this.#disposedAt = site;
    if (converted !== null) {
      for (let i = 0; i < converted.length; i += 2) {
        const live = (converted[i] as WeakRef<object>).deref();
        if (live !== undefined) (converted[i + 1] as EmptyConverted)(live, site);
      }
    }
    // Nothing reads the tables any more: the killed deferred views, the
    // batches that now refuse reads, and this handle, which reads them
    // only while live. Their array takes the next import's snapshot.
    giveBackSnapshot(this.#info, this.#infoSpare);
    this.#info = noInfo;
    this.#infoSpare = false;
    if (this.#plainReference) {
      this.#plainReference = false;
      native.abd_owner_release(asPointer(this.#owner));
    }
  }

  /** What console.log and Bun.inspect print (native/inspect.ts). */
  [inspectCustom](): string { return showImportedArray(this); }

  [Symbol.dispose](): void { this.dispose(); }
}
