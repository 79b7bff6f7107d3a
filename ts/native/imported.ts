/**
 * Imported Arrow data: the handle over a native owner (zig/owner.zig) and
 * typed raw views of its nodes, read in place.
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
 * One reference per ArrayBuffer, never one shared by an import's
 * ArrayBuffers through JS links: `transfer()` (or structuredClone with
 * transfer) moves an ArrayBuffer's memory, deallocator included, into a
 * new ArrayBuffer that has nothing JS attached to the old one (measured,
 * bench/repro/external_memory_gc.ts), so only each ArrayBuffer's own
 * deallocator can tell when its memory is unused. (The one JS link is to
 * an anchor, which no user code can reach and so none can transfer: the
 * deferred views of batches converted lazily from a handle hold the
 * handle's anchor.) Buffers that start at
 * the same address share one ArrayBuffer (the largest), so they pay for
 * one wrap and one reference. So the producer's release
 * runs exactly once, after the last view is gone — with no handle, no
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
import { branded } from "../core/abi/pointers.ts";
import { type Pointer } from "bun:ffi";
import {
  ArrowDeviceArrayLayout, ArrowSchemaLayout, BufferKind, BufferWord, NodeWord, OwnerInfoWord, TypeId, bufferStride, deviceTypeName,
  nodeStride, ownerInfoWords, type TypeIdName, type ValidationLevelName,
} from "../core/abi/layout.ts";
import { decodeMetadataBytes } from "../core/abi/metadata.ts";
import { arrayFields, asPointer, deviceArrayFields, wrapNative } from "../core/abi/structs.ts";
import {
  InvalidLayoutError, OutOfMemoryError, OutOfRangeError, ReleasedError, Status, UnknownDeviceError,
  LibraryLoadError, UnsupportedError, type ArrowDeviceError,
} from "../core/errors.ts";
import { addressArg, argumentError, booleanArg, integerArg, isPlainObject, optionsArg, stringArg } from "../core/args.ts";
import { validationLevelArg } from "../core/abi/layout.ts";
import { check, libraryPath, native } from "../core/ffi/library.ts";
import { takeStructs, type StructRef } from "./c_structs.ts";
import { track, untrack, unwatch, watch } from "./debug.ts";
import { reexport, type ReexportOptions } from "./reexport.ts";
import { selectWindow, type SliceRange, type Window } from "./selection.ts";
import { type ExportedArray } from "./exported.ts";
import { loadDeviceRuntime } from "../core/ffi/device_loader.ts";
import { withArrayCapsule } from "./protocol/consume.ts";
import { ArrowCArray, ArrowCDeviceArray, ArrowCSchema, isArrayProducer, type ArrayProducer, type ArrowCapsule, type ProtocolOptions } from "./protocol/symbols.ts";

/** The native deallocator of every ArrayBuffer over an owner's memory: it
 * drops the owner reference the buffer holds (zig/owner.zig). */
const deallocator = viewDeallocator();

function viewDeallocator(): Pointer {
  const address = native.abd_view_deallocator();
  if (address === null) throw new LibraryLoadError("libarrow_device returned no view deallocator (abd_view_deallocator)", libraryPath());
  return address;
}
/** Lets OwnerStamp's constructor put a private field on an object that
 * already exists (the class constructor's `this` is what this returns). */
class ReturnsTarget {
  constructor(target: object) {
    return target;
  }
}

/**
 * The owner under every ArrayBuffer made over owner memory, kept as a
 * private field of the ArrayBuffer itself: exports of data converted from
 * an import read it and hold that owner for as long as their consumer
 * holds the export (keepalive.ts). Only this class can add or read the
 * field, so no other code can attach an owner address to a buffer. A
 * private field rather than a WeakMap: adding one costs ~35 ns against
 * ~185 ns for WeakMap.set (measured per new ArrayBuffer, GC included),
 * and the collector has no weak table to sweep. A buffer made by
 * `transfer()` has no field (as it was no key): it is JS memory to an
 * export then, kept alive by the export's keepalive like any other.
 */
class OwnerStamp extends ReturnsTarget {
  #owner: number;

  constructor(buffer: ArrayBuffer, owner: number) {
    super(buffer);
    this.#owner = owner;
  }

  static of(buffer: object): number | undefined {
    return #owner in buffer ? (buffer as unknown as OwnerStamp).#owner : undefined;
  }
}

/** The import owner whose memory `buffer` wraps (undefined: JS memory).
 * Valid while `buffer` is attached: its view holds a reference. */
export function importOwnerOf(buffer: ArrayBufferLike): number | undefined {
  return OwnerStamp.of(buffer);
}

/** The largest ArrayBuffer Bun makes over native memory (measured: Bun
 * 1.4.5's toArrayBuffer refuses one byte more with "Out of memory"). */
const maxViewBytes = 2 ** 32;

/** The import owners under the JS views among `values` (each once). */
export function importOwnersOf(values: readonly unknown[]): number[] {
  const owners: number[] = [];
  for (const value of values) {
    if (!ArrayBuffer.isView(value)) continue;
    const owner = OwnerStamp.of(value.buffer);
    if (owner !== undefined && !owners.includes(owner)) owners.push(owner);
  }
  return owners;
}

const typeIdNames = Object.fromEntries(Object.entries(TypeId).map(([k, v]) => [v, k])) as Record<number, TypeIdName>;

/** Options of the imports (`ImportedArray.fromDeviceArray`, ...). */
export type ImportOptions = {
  /** Validation level (nanoarrow's levels); "default" never reads out of
   * bounds. */
  validation?: ValidationLevelName;
};

/** Options of `ImportedArray.toHost` (and `toHost`). */
export type ToHostOptions = {
  /** The device stream the copies run on: a raw `CUstream` /
   * `hipStream_t` address, or a `DeviceStream` (anything with its
   * `handle`). Default: the runtime's default stream. The call returns
   * when the copies are done either way. */
  stream?: number | { handle: number };
};

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

/** Info words copied out of the owner (they never change). */
type OwnerInfo = Float64Array;

/** A node's schema fields, decoded once per import (zig/schema_info.zig). */
export type NodeSchema = {
  flags: number;
  format: string;
  name: string | null;
  /** Key/value pairs in order, repeats kept; null when metadata is NULL. */
  metadataPairs: [string, string][] | null;
};

const utf8 = new TextDecoder("utf-8", { fatal: false });
/** Reused output of abd_owner_schema_info (decoded before the next call). */
let schemaScratch = new Uint8Array(64 * 1024);

function decodeText(bytes: Uint8Array, at: number, length: number): string {
  // Names and formats are mostly short ASCII: skip TextDecoder for them.
  if (length <= 64) {
    let ascii = true;
    for (let i = at; i < at + length; i++) if (bytes[i] >= 0x80) { ascii = false; break; }
    // apply takes any array-like (a typed array too); lib.d.ts says number[].
    if (ascii) return String.fromCharCode.apply(null, bytes.subarray(at, at + length) as unknown as number[]);
  }
  return utf8.decode(bytes.subarray(at, at + length));
}

/** Every node's flags, format, name and metadata, with one native call. */
function readSchemas(owner: number): NodeSchema[] {
  let needed = Number(native.abd_owner_schema_info(asPointer(owner), schemaScratch, schemaScratch.length));
  if (needed > schemaScratch.length) {
    schemaScratch = new Uint8Array(needed);
    needed = Number(native.abd_owner_schema_info(asPointer(owner), schemaScratch, schemaScratch.length));
  }
  const bytes = schemaScratch;
  const words = new Int32Array(bytes.buffer, 0, Math.min(needed, bytes.length) >> 2);
  const n = words[0];
  // The strings follow the records. Decoded in one go: when that gives one
  // character per byte (ASCII, the usual case), each string is a slice of
  // it at its byte offset; else each is decoded on its own.
  const stringsAt = 4 + n * 32;
  const all = utf8.decode(bytes.subarray(stringsAt, needed));
  const oneToOne = all.length === needed - stringsAt;
  const text = (at: number, length: number) => oneToOne ? all.slice(at - stringsAt, at - stringsAt + length) : decodeText(bytes, at, length);
  const out = new Array<NodeSchema>(n);
  for (let node = 0; node < n; node++) {
    const w = 1 + node * 8;
    const metadataAt = words[w + 6];
    out[node] = {
      flags: (words[w] >>> 0) + words[w + 1] * 2 ** 32,
      format: text(words[w + 2], words[w + 3]),
      name: words[w + 4] < 0 ? null : text(words[w + 4], words[w + 5]),
      metadataPairs: metadataAt < 0 ? null : decodeMetadataBytes(bytes.subarray(metadataAt, metadataAt + words[w + 7])),
    };
  }
  return out;
}

/** Reused output of abd_owner_schema_key (see `schemaKey`). */
let keyScratch = new Int32Array(1024);

/** How `abd_owner_snapshot` pays for a handle's reference (zig/c_api.zig):
 * a new one for its anchor view, the caller's for its anchor view, or the
 * caller's kept as a plain reference (a transient handle). */
const SnapshotReference = { retainForAnchor: 0, adoptForAnchor: 1, adoptPlain: 2 } as const;
type SnapshotReference = (typeof SnapshotReference)[keyof typeof SnapshotReference];

/** The words the last snapshot needed: the size tried first (imports in
 * a row usually have one shape). */
let snapshotGuess = 256;

/** Start addresses seen by `distinctWanted` (its distinctness check for
 * tables not in ascending order; JS thread only, never kept). */
const distinctCheckLimit = 16;
const distinctScratch = new Float64Array(distinctCheckLimit);

/**
 * How many buffers of a buffer table (`count` entries from word `at`)
 * need a view (a size, an address, no view in `views` yet), when their
 * start addresses are provably distinct, so that each gets an ArrayBuffer
 * of its own; -1 when an address repeats. Distinct is proven by
 * strictly ascending addresses (a producer that allocates in order), or,
 * for up to `distinctCheckLimit` buffers, by comparing each with the ones
 * before (a producer that allocates in another order, as most small
 * batches do), or, for more, by sorting them (`distinctSorted`).
 * `viewable(i, size)` is asked about each before anything is taken: false
 * (or a throw) refuses.
 */
function distinctWanted(table: Float64Array, at: number, count: number, views: readonly (ArrayBuffer | undefined)[], viewable: (index: number, size: number) => boolean | void): number {
  let wanted = 0;
  let last = 0;
  let ascending = true;
  for (let i = 0; i < count; i++) {
    const base = at + i * bufferStride;
    const size = table[base + BufferWord.size_bytes];
    const address = table[base + BufferWord.address];
    if (!(size > 0) || address === 0 || views[i] !== undefined) continue;
    if (address <= last) ascending = false;
    if (!ascending && wanted < distinctCheckLimit) {
      for (let j = 0; j < wanted; j++) if (distinctScratch[j] === address) return -1;
    }
    if (wanted < distinctCheckLimit) distinctScratch[wanted] = address;
    if (viewable(i, size) === false) return -1;
    last = address;
    wanted++;
  }
  // Past the pairwise limit and out of order: sorted, no two equal.
  if (!ascending && wanted > distinctCheckLimit && !distinctSorted(table, at, count, views, wanted)) return -1;
  return wanted;
}

/** Whether the start addresses of the `wanted` buffers `distinctWanted`
 * counted are all different (sorted, then neighbours compared). */
function distinctSorted(table: Float64Array, at: number, count: number, views: readonly (ArrayBuffer | undefined)[], wanted: number): boolean {
  const addresses = new Float64Array(wanted);
  let k = 0;
  for (let i = 0; i < count; i++) {
    const base = at + i * bufferStride;
    const address = table[base + BufferWord.address];
    if (!(table[base + BufferWord.size_bytes] > 0) || address === 0 || views[i] !== undefined) continue;
    addresses[k++] = address;
  }
  addresses.sort();
  for (let i = 1; i < wanted; i++) if (addresses[i] === addresses[i - 1]) return false;
  return true;
}

/**
 * @internal The views of a batch pulled with its snapshot and converted
 * without a handle (arrow/import.ts, a stream's planned batches): one
 * ArrayBuffer per buffer with a size and an address, by buffer index,
 * each holding one reference to `owner` (taken here with one native
 * call) and stamped with it as the handle's are. The caller's own (plain)
 * reference is untouched: it still ends it. Null, having taken nothing,
 * when the addresses are not provably distinct or a buffer is too large
 * to view (the caller then converts through an ImportedArray, which
 * groups shared regions and reports the error).
 */
export function pulledViews(owner: number, words: Float64Array): (ArrayBuffer | undefined)[] | null {
  const at = ownerInfoWords + words[OwnerInfoWord.node_count] * nodeStride;
  const count = words[OwnerInfoWord.buffer_count];
  const views: (ArrayBuffer | undefined)[] = [];
  const wanted = distinctWanted(words, at, count, views, (_, size) => size <= maxViewBytes);
  if (wanted < 0) return null;
  wrapWanted(owner, words, at, count, views, wanted, (i, address, size, unpaidAfter) => {
    let buffer: ArrayBuffer;
    try {
      buffer = wrapNative(address, size, owner, deallocator);
    } catch (error) {
      // Bun ran the failed wrap's deallocator (its reference); the views
      // made already keep theirs until they are collected.
      if (unpaidAfter > 0) native.abd_owner_release_views(asPointer(owner), unpaidAfter);
      throw new OutOfMemoryError(Status.out_of_memory, `buffer ${i} (${size} bytes) could not be viewed from JS: ${(error as Error)?.message ?? String(error)}`);
    }
    new OwnerStamp(buffer, owner);
    return buffer;
  });
  return views;
}

/** An empty views list, for `distinctWanted` calls with no view yet. */
const noViews: readonly (ArrayBuffer | undefined)[] = [];

/**
 * @internal The views of one batch's buffers, made on first use
 * (arrow/import.ts builds a batch's Data over them lazily). Made with
 * one ArrayBuffer only, the anchor (8 bytes of the owner's node table, as
 * a handle's), holding one owner reference, which keeps the batch's
 * memory alive for as long as anything that may still make the views
 * (this object) is reachable. The first `views()` makes every view at
 * once, with one native call for their references, exactly as
 * `pulledViews` does; each then holds its own reference. `kill()` (the handle's `dispose()`) detaches every
 * view made, anchor included, and `views()` then returns null: nothing
 * made later can reach the released memory.
 */
export class DeferredViews {
  /** Views by buffer index; null once killed. */
  #views: (ArrayBuffer | undefined)[] | null = [];
  /** The anchor: 8 bytes of the owner's node table, holding one owner
   * reference and nothing else (no JS code ever reads it). Its own, or
   * the anchor of the handle the views are deferred for (`of`). */
  readonly #anchor: ArrayBuffer;
  /** Buffers still without a view (their references not taken yet). */
  #unmade: number;
  /** Why making the views failed, if it did. */
  #failed: OutOfMemoryError | null = null;
  readonly #owner: number;

  private constructor(owner: number, readonly table: Float64Array, readonly at: number, readonly count: number, anchor: ArrayBuffer, unmade: number) {
    this.#owner = owner;
    this.#anchor = anchor;
    this.#unmade = unmade;
  }

  /**
   * Defers the views of the buffer table `table` (`count` entries from
   * word `at`; the caller keeps it unchanged) of `owner`, on which the
   * caller holds a reference for the duration of the call; `nodes` is
   * the address of the owner's node table (its info words' `nodes`), 8
   * bytes of which the anchor wraps. `handleAnchor`: the anchor of the
   * handle the views are deferred for, which then holds them through a
   * JS link instead of an anchor of their own (that anchor is never
   * handed out, so no user code can transfer it away from the link; the
   * handle's `releaseToGC` leaves it to them). Null, having taken
   * nothing, where views could not all be made later as they would be
   * now: addresses not provably distinct, a buffer too large to view, or
   * no buffer to view at all.
   */
  static of(owner: number, table: Float64Array, at: number, count: number, nodes: number, handleAnchor: ArrayBuffer | null = null): DeferredViews | null {
    const wanted = distinctWanted(table, at, count, noViews, (_, size) => size <= maxViewBytes);
    if (wanted <= 0) return null;
    if (handleAnchor !== null) return new DeferredViews(owner, table, at, count, handleAnchor, wanted);
    // An anchor of 8 bytes, not a buffer's view: JSC counts an
    // ArrayBuffer's length as newly allocated memory, so a batch nobody
    // reads drives no collections, whatever its size.
    native.abd_owner_retain_views(asPointer(owner), 1);
    let anchor: ArrayBuffer;
    try {
      anchor = wrapNative(nodes, 8, owner, deallocator);
    } catch (error) {
      // Bun ran the failed wrap's deallocator: its reference is given back.
      throw new OutOfMemoryError(Status.out_of_memory, `a batch's anchor could not be made: ${(error as Error)?.message ?? String(error)}`);
    }
    return new DeferredViews(owner, table, at, count, anchor, wanted);
  }

  /** Every buffer's view, by index (undefined: no size, no address or no
   * bytes), made now if not yet; null once killed. */
  views(): readonly (ArrayBuffer | undefined)[] | null {
    const views = this.#views;
    if (views === null || this.#unmade === 0) return views;
    if (this.#failed !== null) throw this.#failed;
    const owner = this.#owner;
    const unmade = this.#unmade;
    this.#unmade = 0;
    wrapWanted(owner, this.table, this.at, this.count, views, unmade, (i, address, size, unpaidAfter) => {
      let buffer: ArrayBuffer;
      try {
        buffer = wrapNative(address, size, owner, deallocator);
      } catch (error) {
        if (unpaidAfter > 0) native.abd_owner_release_views(asPointer(owner), unpaidAfter);
        // The views made already (held here) keep their references; every
        // later call reports the same failure (nothing more is taken).
        this.#unmade = unpaidAfter + 1;
        this.#failed = new OutOfMemoryError(Status.out_of_memory, `buffer ${i} (${size} bytes) could not be viewed from JS: ${(error as Error)?.message ?? String(error)}`);
        throw this.#failed;
      }
      new OwnerStamp(buffer, owner);
      return buffer;
    });
    return views;
  }

  /** Detaches every view made and the anchor (their references end now);
   * `views()` returns null from here on. A set holding its handle's
   * anchor is killed only by that handle's `dispose()`, which ends the
   * anchor anyway; a stream's batch set (its own anchor) by its converter
   * when no batch took it. JS thread only, like every JS view. */
  kill(): void {
    const views = this.#views;
    if (views === null) return;
    this.#views = null;
    for (const buffer of views) if (buffer !== undefined && !buffer.detached) buffer.transfer(0);
    if (!this.#anchor.detached) this.#anchor.transfer(0);
  }
}

/** Takes the `wanted` references of `distinctWanted`'s buffers with one
 * native call, then makes each view with `wrap(i, address, size,
 * unpaidAfter)`, which gives back the `unpaidAfter` references of the
 * views after it if it fails. */
function wrapWanted(owner: number, table: Float64Array, at: number, count: number, views: (ArrayBuffer | undefined)[], wanted: number, wrap: (index: number, address: number, size: number, unpaidAfter: number) => ArrayBuffer): void {
  if (wanted === 0) return;
  native.abd_owner_retain_views(asPointer(owner), wanted);
  let unpaid = wanted;
  for (let i = 0; i < count; i++) {
    const base = at + i * bufferStride;
    const size = table[base + BufferWord.size_bytes];
    const address = table[base + BufferWord.address];
    if (!(size > 0) || address === 0 || views[i] !== undefined) continue;
    unpaid--;
    views[i] = wrap(i, address, size, unpaid);
  }
}

/** A new array for a snapshot, of the size the last one needed. */
export function snapshotWords(): Float64Array {
  return new Float64Array(snapshotGuess);
}

/** After a snapshot into `words` that needed `needed` words (written only
 * when they fit): the words to keep, re-taken (adoptPlain) when they did
 * not fit. */
export function completeSnapshot(owner: number, words: Float64Array, needed: number): Float64Array {
  snapshotGuess = needed;
  if (needed <= words.length) return words;
  const bigger = new Float64Array(needed);
  native.abd_owner_snapshot(asPointer(owner), bigger, needed, SnapshotReference.adoptPlain);
  return bigger;
}

/** The owner's info words, node table and buffer table, copied into a new
 * array (longer than needed when the guess was); pays for the handle's
 * anchor view (see the constructor). */
function ownerSnapshot(owner: number, adopt: SnapshotReference): Float64Array {
  let words = new Float64Array(snapshotGuess);
  const needed = native.abd_owner_snapshot(asPointer(owner), words, words.length, adopt);
  if (needed > words.length) {
    words = new Float64Array(needed);
    native.abd_owner_snapshot(asPointer(owner), words, words.length, adopt);
  }
  snapshotGuess = needed;
  return words;
}

/** Proves a constructor call comes from this module. */
const internalToken = Symbol("ImportedArray");

/** The typed error for reading memory the host cannot read: unknown device
 * types get UnknownDeviceError, known devices UnsupportedError. Both name
 * the device. */
export function hostAccessError(deviceType: number, deviceId: number | bigint, what: string): ArrowDeviceError {
  integerArg("hostAccessError", "deviceType", deviceType, -(2 ** 31), 2 ** 31 - 1);
  if (typeof deviceId !== "bigint") integerArg("hostAccessError", "deviceId", deviceId);
  stringArg("hostAccessError", "what", what);
  const name = deviceTypeName(deviceType);
  if (name.startsWith("unknown")) {
    return new UnknownDeviceError(Status.unknown_device, `${what}: the data is on device type ${deviceType}, which this library does not know; it can only be read as opaque raw views (addresses, lengths), not converted to host objects`);
  }
  return new UnsupportedError(Status.unsupported, `${what}: the data is in ${name} memory (device ${deviceId}), which the host cannot read; copy it to the host first`);
}

/** Set by ImportedArray's static block: the private constructor, adopting
 * the import's own reference. */
let adopt: (owner: number, transient: boolean, words: Float64Array | null) => ImportedArray;

/** Set by ImportedArray's static block (see `deferHandleViews`). */
let deferFor: (imported: ImportedArray) => DeferredViews | null;

/** Set by ImportedArray's static block (see `noteConverted`). */
let noteFor: (imported: ImportedArray, converted: object) => void;

/** Set by the convert layer (`onDisposeEmpty`): makes one converted
 * object read as empty (this layer knows no apache-arrow type). */
let emptyConverted: ((converted: object) => void) | null = null;

/**
 * @internal Records `converted` (an apache-arrow object made from
 * `imported`'s memory by `toRecordBatch`, `toVector`, `toData`,
 * `toTable`...), so that `imported.dispose()` makes it read as empty: no
 * rows, not only detached buffers. Held weakly; `releaseToGC()` forgets
 * them (their memory is then the GC's, never detached).
 */
export function noteConverted(imported: ImportedArray, converted: object): void {
  noteFor(imported, converted);
}

/** @internal Sets how the convert layer empties a converted object. */
export function onDisposeEmpty(empty: (converted: object) => void): void {
  emptyConverted = empty;
}

/**
 * @internal Deferred views (`DeferredViews`) of `imported`'s buffers, for
 * batches converted from it lazily (one set per handle, made by the first
 * and shared by the others); its `dispose()` kills them. Null, having
 * taken nothing, where the handle already made views (they are then
 * shared eagerly), is windowed, disposed or not host-readable, or where
 * `DeferredViews.of` declines.
 */
export function deferHandleViews(imported: ImportedArray): DeferredViews | null {
  return deferFor(imported);
}

/**
 * Adopts one reference to a native owner (a batch pulled from an imported
 * stream or an async consumer); the handle then holds the owner. A
 * `transient` handle holds it natively, without an anchor view: its
 * creator must end it with `dispose()` or `releaseToGC()` (in a finally),
 * as nothing else gives that reference back.
 *
 * Library-internal: a module function, not a member of the public class,
 * because a wrong address would be dereferenced natively. The package's
 * entry points do not export it.
 */
export function adoptImportOwner(owner: number, transient = false): ImportedArray {
  booleanArg("adoptImportOwner", "transient", transient);
  return adopt(addressArg("adoptImportOwner", "owner", owner), transient, null);
}

/** `adoptImportOwner(owner, true)` for a batch whose snapshot was taken by
 * the pull itself (abd_stream_import_next_snapshot: the import's reference
 * kept as a plain one). The handle keeps `words`. Library-internal. */
export function adoptImportSnapshot(owner: number, words: Float64Array): ImportedArray {
  if (!(words instanceof Float64Array)) throw argumentError("adoptImportSnapshot", "words", "a Float64Array", words);
  return adopt(addressArg("adoptImportSnapshot", "owner", owner), true, words);
}

/**
 * An imported array (or record batch: a struct array) held by a native
 * owner. Read it through `root` (typed raw views, every Arrow type) or
 * convert it with arrow/import.ts (apache-arrow objects).
 */
export class ImportedArray implements Disposable {

  /** Protocol (docs/protocol.md): an "arrow_schema" capsule; undefined where not offered. */
  declare readonly [ArrowCSchema]?: (options?: ProtocolOptions) => ArrowCapsule;
  /** Protocol (docs/protocol.md): an "arrow_array" capsule, CPU data only; undefined where not offered. */
  declare readonly [ArrowCArray]?: (options?: ProtocolOptions) => ArrowCapsule;
  /** Protocol (docs/protocol.md): an "arrow_device_array" capsule; undefined where not offered. */
  declare readonly [ArrowCDeviceArray]?: (options?: ProtocolOptions) => ArrowCapsule;
  #owner: number;
  /** The owner's info words, then its node table, then its buffer table
   * (a JS copy: they never change). */
  #info: OwnerInfo;
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
  /** The deferred views every batch converted lazily from this handle
   * shares (arrow/import.ts; made by the first), killed by `dispose()`:
   * they hold references of their own, which `releaseToGC()` leaves to
   * them. */
  #deferred: DeferredViews | null = null;
  /** Objects converted from this handle (`noteConverted`), emptied by
   * `dispose()`. */
  #converted: WeakRef<object>[] | null = null;
  /** A transient handle's own reference, held natively (no anchor view):
   * given back by `dispose()` or `releaseToGC()`, one of which its
   * (internal) creator always calls. */
  #plainReference = false;
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
    this.#buffersAt = ownerInfoWords + info[OwnerInfoWord.node_count] * nodeStride;
    if (transient) this.#plainReference = true;
    else this.#wrap(info[OwnerInfoWord.nodes], 8);
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
        const schema = this.nodeSchema(node);
        return `buffer ${index - first} of node ${node} "${schema.name ?? ""}" (${schema.format})`;
      }
    }
    return `buffer ${index}`;
  }

  #wrap(address: number, bytes: number): ArrayBuffer {
    const buffer = wrapNative(address, bytes, this.#owner, deallocator);
    this.#created.push(buffer);
    new OwnerStamp(buffer, this.#owner);
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
  static fromDeviceArray(schema: StructRef<"ArrowSchema"> | ArrayProducer | ArrowCapsule | null, deviceArray?: StructRef<"ArrowDeviceArray"> | ImportOptions | null, options: ImportOptions = {}): ImportedArray {
    if (isArrayProducer(schema)) return ImportedArray.#fromProducer("ImportedArray.fromDeviceArray", schema, deviceArray as ImportOptions | undefined);
    return ImportedArray.#fromDeviceStructs(schema as StructRef<"ArrowSchema"> | null, deviceArray as StructRef<"ArrowDeviceArray"> | null, options);
  }

  static #fromProducer(fn: string, source: ArrayProducer | ArrowCapsule, options: ImportOptions = {}): ImportedArray {
    // Checked before the producer is asked for anything: nothing to release yet.
    validationLevelArg(fn, options);
    return withArrayCapsule(source, ({ schema, array, device }) => device
      ? ImportedArray.#fromDeviceStructs(schema, array, options)
      : ImportedArray.#fromStructs(schema, array, options));
  }

  static #fromDeviceStructs(schema: StructRef<"ArrowSchema"> | number | null, deviceArray: StructRef<"ArrowDeviceArray"> | number | null, options: ImportOptions): ImportedArray {
    const fn = "ImportedArray.fromDeviceArray";
    let level = 0;
    const [s, a] = takeStructs(fn, [["schema", schema, "ArrowSchema"], ["deviceArray", deviceArray, "ArrowDeviceArray"]], () => {
      level = validationLevelArg(fn, options);
    });
    const out = new BigUint64Array(1);
    check(native.abd_import_device_array(asPointer(s), asPointer(a), level, out));
    return new ImportedArray(internalToken, Number(out[0]), null, "ImportedArray", true);
  }

  // Module-private adoption (see adoptImportOwner below): a static block
  // can reach the private constructor; nothing on the class takes a raw
  // owner address.
  static {
    noteFor = (imported, converted) => {
      if (imported.#disposed) return;
      (imported.#converted ??= []).push(new WeakRef(converted));
    };
    adopt = (owner, transient, words) => new ImportedArray(internalToken, owner, null, "ImportedArray", true, transient, words);
    deferFor = (imported) => {
      if (imported.#deferred !== null) return imported.#deferred;
      // Views made already (a raw read, an eager conversion before): the
      // eager path shares them.
      if (imported.#disposed || imported.#window !== null || imported.#views.length !== 0 || !imported.hostReadable) return null;
      // The handle's anchor (#created[0]: no view was made yet) holds the
      // deferred views too; a transient handle has none to share.
      const anchor = imported.#plainReference ? null : imported.#created[0];
      return imported.#deferred = DeferredViews.of(imported.#owner, imported.#info, imported.#buffersAt, imported.bufferCount, imported.#info[OwnerInfoWord.nodes], anchor);
    };
  }

  /** Like `fromDeviceArray` for a plain `ArrowArray*` (a CPU array). */
  static fromArray(schema: StructRef<"ArrowSchema"> | null, array: StructRef<"ArrowArray"> | null, options?: ImportOptions): ImportedArray;
  /** Takes the array of any protocol producer or array capsule
   * (docs/protocol.md), preferring its device method. */
  static fromArray(source: ArrayProducer | ArrowCapsule, options?: ImportOptions): ImportedArray;
  /** Either form above. */
  static fromArray(schema: StructRef<"ArrowSchema"> | ArrayProducer | ArrowCapsule | null, array?: StructRef<"ArrowArray"> | ImportOptions | null, options: ImportOptions = {}): ImportedArray {
    if (isArrayProducer(schema)) return ImportedArray.#fromProducer("ImportedArray.fromArray", schema, array as ImportOptions | undefined);
    return ImportedArray.#fromStructs(schema as StructRef<"ArrowSchema"> | null, array as StructRef<"ArrowArray"> | null, options);
  }

  static #fromStructs(schema: StructRef<"ArrowSchema"> | number | null, array: StructRef<"ArrowArray"> | number | null, options: ImportOptions): ImportedArray {
    const fn = "ImportedArray.fromArray";
    let level = 0;
    const [s, a] = takeStructs(fn, [["schema", schema, "ArrowSchema"], ["array", array, "ArrowArray"]], () => {
      level = validationLevelArg(fn, options);
    });
    const out = new BigUint64Array(1);
    check(native.abd_import_array(asPointer(s), asPointer(a), level, out));
    return new ImportedArray(internalToken, Number(out[0]), null, "ImportedArray", true);
  }

  #live(): void {
    if (this.#disposed) throw new ReleasedError(Status.released, "this imported array was disposed; its memory is released");
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
  get deviceType(): number { return this.#info[OwnerInfoWord.device_type]; }
  /** `deviceType` by name, e.g. "CPU", "CUDA". */
  get deviceTypeName(): string { return deviceTypeName(this.deviceType); }
  /** The producer's device_id (-1 for an imported ArrowArray). */
  get deviceId(): number { return this.#info[OwnerInfoWord.device_id]; }
  /** Address of the producer's sync event (0 when none). */
  get syncEvent(): number { return this.#info[OwnerInfoWord.sync_event]; }
  /** False for device memory the host must not read. */
  get hostReadable(): boolean { return this.#info[OwnerInfoWord.host_readable] === 1; }
  /** Sum of the known buffer sizes. */
  get byteLength(): number { return this.#info[OwnerInfoWord.bytes_held]; }
  /** Nodes in the imported tree (every child and dictionary, preorder). */
  get nodeCount(): number { return this.#info[OwnerInfoWord.node_count]; }
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

  /** @internal a node's schema fields (decoded for all nodes on first use). */
  nodeSchema(node: number): NodeSchema {
    this.#live();
    this.#index("ImportedArray.nodeSchema", "node", node, this.nodeCount, "nodes");
    this.#schemas ??= readSchemas(this.#owner);
    return this.#schemas[node];
  }

  /**
   * @internal An exact description of this import's schema tree, for
   * caches of what is built from it (arrow/import.ts): every node's
   * flags, format, name and metadata bytes as the producer gave them, and
   * its child count (zig/c_api.zig abd_owner_schema_key), so two imports
   * with the same key have the same schema. A view of a scratch buffer,
   * valid until the next call: copy it to keep it. Null when a node is
   * dictionary-encoded (apache-arrow gives each dictionary type its own id:
   * such schemas are not shared).
   */
  schemaKey(): Int32Array | null {
    this.#live();
    let needed = native.abd_owner_schema_key(asPointer(this.#owner), keyScratch, keyScratch.length);
    if (needed > keyScratch.length) {
      keyScratch = new Int32Array(needed);
      needed = native.abd_owner_schema_key(asPointer(this.#owner), keyScratch, keyScratch.length);
    }
    return needed === 0 ? null : keyScratch.subarray(0, needed);
  }

  /**
   * @internal Whether `key` (a copy of an earlier `schemaKey()`) is this
   * import's schema key: "same", "different", or "none" when this schema
   * has no key (a dictionary-encoded node). One native pass over the
   * schema strings, nothing copied: the cheap check for a repeated schema.
   */
  schemaMatches(key: Int32Array): "same" | "different" | "none" {
    // Reachable from JS though internal: the native side reads `key`.
    if (!(key instanceof Int32Array)) throw argumentError("ImportedArray.schemaMatches", "key", "an Int32Array (a copy of schemaKey())", key);
    this.#live();
    const result = native.abd_owner_schema_matches(asPointer(this.#owner), key, key.length);
    return result === 1 ? "same" : result === 0 ? "different" : "none";
  }

  /** @internal node-table word. */
  nodeWord(node: number, word: number): number {
    this.#live();
    this.#index("ImportedArray.nodeWord", "node", node, this.nodeCount, "nodes");
    this.#index("ImportedArray.nodeWord", "word", word, nodeStride, "words");
    return this.#info[ownerInfoWords + node * nodeStride + word];
  }

  /** @internal The handle's copy of the owner's tables for readers that
   * walk many nodes (arrow/import.ts): node n's word w is at
   * `words[nodesAt + n * nodeStride + w]`, buffer b's at
   * `words[buffersAt + b * bufferStride + w]`. Read-only. */
  tables(): { words: Float64Array; nodesAt: number; buffersAt: number } {
    this.#live();
    return { words: this.#info, nodesAt: ownerInfoWords, buffersAt: this.#buffersAt };
  }

  /** @internal buffer-table word. */
  bufferWord(buffer: number, word: number): number {
    this.#live();
    this.#index("ImportedArray.bufferWord", "buffer", buffer, this.bufferCount, "buffers");
    this.#index("ImportedArray.bufferWord", "word", word, bufferStride, "words");
    return this.#info[this.#buffersAt + buffer * bufferStride + word];
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
    const address = this.bufferWord(index, BufferWord.address);
    let size = this.bufferWord(index, BufferWord.size_bytes);
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
      const regions = this.#regions();
      const shared = regions.get(address);
      if (shared && shared.byteLength >= size) {
        memory = shared;
      } else {
        this.#checkViewable(index, size);
        native.abd_owner_retain_views(asPointer(this.#owner), 1);
        memory = this.#wrapView(index, address, size, 0);
        regions.set(address, memory);
      }
    }
    this.#views[index] = memory;
    return memory;
  }

  /** Makes views of many buffers with one native call for the references
   * (the import hot path). */
  prefetchBuffers(indices: Iterable<number>): void {
    this.#live();
    if (typeof indices !== "object" || indices === null || typeof (indices as Iterable<number>)[Symbol.iterator] !== "function") {
      throw argumentError("ImportedArray.prefetchBuffers", "indices", "an iterable of buffer indexes", indices);
    }
    const list = Array.from(indices);
    for (const index of list) this.#index("ImportedArray.prefetchBuffers", "indices[]", index, this.bufferCount, "buffers");
    if (!this.hostReadable) return;
    this.#prefetch(list);
  }

  /** Checks `fn`'s `param`, an index below `count` (of `what`). */
  #index(fn: string, param: string, index: unknown, count: number, what: string): void {
    if (typeof index !== "number" || !Number.isInteger(index)) throw argumentError(fn, param, "an integer index", index);
    if (index < 0 || index >= count) throw new OutOfRangeError(Status.out_of_range, `${fn}: ${param} ${index} is out of the ${count} ${what}`);
  }

  /** `prefetchBuffers` of `indices`, or of every buffer when null. */
  #prefetch(indices: number[] | null): void {
    if (indices === null && this.#views.length === 0 && this.#prefetchDistinct()) return;
    const table = this.#info;
    const at = this.#buffersAt;
    const views = this.#views;
    const byAddress = this.#regions();
    // Pass 1: the buffers to view, and each new start address's region:
    // the largest size wanted there, and the buffer it was sized by (for
    // errors), in `regions` (address -> buffer index).
    const regions = new Map<number, number>();
    const wanted: number[] = [];
    const count = indices === null ? this.bufferCount : indices.length;
    for (let k = 0; k < count; k++) {
      const i = indices === null ? k : indices[k];
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
   * `#prefetch(null)` on a handle with no views yet, when the buffers to
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

  /** @internal The views made so far, by buffer index (after
   * `prefetchAll()`: every buffer with a size, an address and bytes;
   * undefined for the others). Read-only. */
  prefetchedViews(): readonly (ArrayBuffer | undefined)[] {
    this.#live();
    return this.#views;
  }

  /** Number of buffers in the owner's table (every node's, preorder). */
  get bufferCount(): number {
    return this.#info[OwnerInfoWord.buffer_count];
  }

  /** Makes views of every buffer whose size validation computed, with one
   * native call for all their references (what conversion does first). */
  prefetchAll(): void {
    this.#live();
    if (this.hostReadable) this.#prefetch(null);
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
    } else if (this.#deferred === null) {
      const anchor = this.#created[0];
      if (!anchor.detached) anchor.transfer(0);
    }
    this.#created = [];
    this.#views = [];
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
    optionsArg("toHost", "options", options, ["stream"]);
    const given = options.stream;
    if (given !== undefined && typeof given !== "number" && !(typeof given === "object" && given !== null && Number.isSafeInteger(given.handle))) {
      throw argumentError("toHost", "options.stream", "a stream handle or a DeviceStream", given);
    }
    if (typeof given === "number") addressArg("toHost", "options.stream", given, true);
    this.#live();
    if (!this.hostReadable) check(loadDeviceRuntime(this.deviceType));
    const stream = typeof given === "number" ? given : given?.handle ?? 0;
    // Schema then device array, in one native slot, moved into the result.
    const slot = native.abd_alloc_zeroed(ArrowSchemaLayout.size + ArrowDeviceArrayLayout.size);
    if (!slot) throw new OutOfMemoryError(Status.out_of_memory, "out of memory allocating a host copy slot");
    const arrayAt = slot + ArrowSchemaLayout.size;
    try {
      check(native.abd_owner_to_host(asPointer(this.#owner), asPointer(stream), asPointer(slot), asPointer(arrayAt)));
      return ImportedArray.fromDeviceArray(branded(slot), branded(arrayAt));
    } finally {
      native.abd_free(asPointer(slot));
    }
  }

  /** Detaches every ArrayBuffer made over owner memory, which releases the
   * producer's data now, unless an export of converted data still holds it
   * (then its consumer's release does). Views read as empty afterwards,
   * and apache-arrow objects converted from the handle (`toRecordBatch`,
   * `toVector`, `toData`, `toTable`) have no rows (length 0). Idempotent. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    untrack(this.#token);
    unwatch(this);
    const created = this.#created;
    this.#created = [];
    this.#views = [];
    this.#byAddress = null;
    for (const buffer of created) {
      if (!buffer.detached) buffer.transfer(0);
    }
    const deferred = this.#deferred;
    this.#deferred = null;
    deferred?.kill();
    // What was converted from the handle now reads as empty (no rows).
    const converted = this.#converted;
    this.#converted = null;
    if (converted !== null && emptyConverted !== null) {
      for (const ref of converted) {
        const object = ref.deref();
        if (object !== undefined) emptyConverted(object);
      }
    }
    if (this.#plainReference) {
      this.#plainReference = false;
      native.abd_owner_release(asPointer(this.#owner));
    }
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}

/**
 * One node of an imported tree, read in place: the C struct fields, typed
 * buffer views, children and dictionary. Valid while its ImportedArray is
 * not disposed (accessors throw ReleasedError after).
 */
export class RawArray {
  /** `window`, when given, overrides the node's offset, length and null
   * count (the root of a child or slice handle). */
  constructor(readonly imported: ImportedArray, readonly index: number, readonly window: Window | null = null) {
    if (!(imported instanceof ImportedArray)) throw argumentError("RawArray", "imported", "an ImportedArray", imported);
    integerArg("RawArray", "index", index, 0, imported.nodeCount - 1);
    if (window !== null && !isPlainObject(window)) throw argumentError("RawArray", "window", "a Window or null", window);
  }

  #word(word: number): number {
    return this.imported.nodeWord(this.index, word);
  }

  /** This node's `ArrowSchema*` (owner memory). */
  get schemaAddress(): number { return this.#word(NodeWord.schema); }
  /** This node's `ArrowArray*` (owner memory). */
  get arrayAddress(): number { return this.#word(NodeWord.array); }
  /** The Arrow type, decoded from the format by validation. */
  get typeId(): TypeIdName { return typeIdNames[this.#word(NodeWord.type_id)]; }
  /** The C Data Interface format string. */
  get format(): string { return this.imported.nodeSchema(this.index).format; }
  /** The field name (null for a NULL name). */
  get name(): string | null { return this.imported.nodeSchema(this.index).name; }
  /** ArrowSchema.flags (see `Flags`). */
  get flags(): number { return this.imported.nodeSchema(this.index).flags; }
  /** Whether the NULLABLE flag is set. */
  get nullable(): boolean { return (this.flags & 2) !== 0; }
  /** Metadata as a Map (the last value wins for repeated keys). */
  get metadata(): Map<string, string> { return new Map(this.imported.nodeSchema(this.index).metadataPairs ?? []); }
  /** Metadata as every key/value pair, repeats kept. */
  get metadataPairs(): [string, string][] { return [...(this.imported.nodeSchema(this.index).metadataPairs ?? [])]; }
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
  bufferAddress(i: number): number { return this.imported.bufferWord(this.#buffer("bufferAddress", i), BufferWord.address); }
  /** Size in bytes implied by type, length and offset (-1: unknown, device). */
  bufferSize(i: number): number { return this.imported.bufferWord(this.#buffer("bufferSize", i), BufferWord.size_bytes); }
  /** What buffer `i` holds (see `BufferKind`), from the node's type. */
  bufferKind(i: number): number { return this.imported.bufferWord(this.#buffer("bufferKind", i), BufferWord.kind); }

  /**
   * Size of buffer `i` in bytes. Sizes that validation left unknown (level
   * "minimal" reads no buffer) are read now: the last offset for value
   * bytes, the sizes buffer for variadic buffers. Throws for memory the
   * host cannot read, naming the device.
   */
  byteLength(i: number): number {
    const known = this.imported.bufferWord(this.#buffer("byteLength", i), BufferWord.size_bytes);
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
    const known = this.imported.bufferWord(index, BufferWord.size_bytes);
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

export { deviceArrayFields };
