/**
 * The snapshot of an import owner's tables (zig/c_api_import.zig
 * abd_owner_snapshot): its info words, node table and buffer table copied
 * into one Float64Array, which never changes; and the choice of which of
 * its buffers get a view of their own, with the references for all of
 * them taken in one native call. Handles (imported_array.ts), deferred
 * views (deferred_views.ts) and the pulled batches of streams
 * (imported_stream.ts) all read owners through it.
 */
import { BufferWord, bufferStride } from "../core/abi/layout.ts";
import { asPointer } from "../core/abi/structs.ts";
import { native } from "../core/ffi/library.ts";
import type { ImportedArray } from "./imported_array.ts";
import { nativeArray } from "../core/ffi/native_arrays.ts";

/** How `abd_owner_snapshot` pays for a handle's reference (zig/c_api_import.zig):
 * a new one for its anchor view, the caller's for its anchor view, or the
 * caller's kept as a plain reference (a transient handle). */
export const SnapshotReference = { retainForAnchor: 0, adoptForAnchor: 1, adoptPlain: 2 } as const;
export type SnapshotReference = (typeof SnapshotReference)[keyof typeof SnapshotReference];

/** The words the last snapshot needed: the size tried first (imports in
 * a row usually have one shape). */
let snapshotGuess = 256;

/** Start addresses seen by `distinctWanted` (its distinctness check for
 * tables not in ascending order; JS thread only, never kept). */
const distinctCheckLimit = 16;
const distinctScratch = nativeArray(Float64Array, distinctCheckLimit);

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
export function distinctWanted(table: Float64Array, at: number, count: number, views: readonly (ArrayBuffer | undefined)[], viewable: (index: number, size: number) => boolean | void): number {
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
  const addresses = nativeArray(Float64Array, wanted);
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

/** An empty views list, for `distinctWanted` calls with no view yet. */
export const noViews: readonly (ArrayBuffer | undefined)[] = [];

/** Takes the `wanted` references of `distinctWanted`'s buffers with one
 * native call, then makes each view with `wrap(i, address, size,
 * unpaidAfter)`, which gives back the `unpaidAfter` references of the
 * views after it if it fails. */
export function wrapWanted(owner: number, table: Float64Array, at: number, count: number, views: (ArrayBuffer | undefined)[], wanted: number, wrap: (index: number, address: number, size: number, unpaidAfter: number) => ArrayBuffer): void {
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
  return nativeArray(Float64Array, snapshotGuess);
}

/** After a snapshot into `words` that needed `needed` words (written only
 * when they fit): the words to keep, re-taken (adoptPlain) when they did
 * not fit. */
export function completeSnapshot(owner: number, words: Float64Array, needed: number): Float64Array {
  snapshotGuess = needed;
  if (needed <= words.length) return words;
  const bigger = nativeArray(Float64Array, needed);
  native.abd_owner_snapshot(asPointer(owner), bigger, needed, SnapshotReference.adoptPlain);
  return bigger;
}

/** Where `ownerSnapshot` has native code write: grown when too small, up
 * to `scratchLimit` words (512 KiB); a larger snapshot gets an array of
 * its own, which the process does not keep. */
let snapshotScratch = nativeArray(Float64Array, 1024);
const scratchLimit = 65536;

/** Arrays that disposed handles gave back (`giveBackSnapshot`), each of
 * its own ArrayBuffer, for the next snapshots to be written into: imports
 * in a row usually have one shape, so an import followed by its dispose
 * copies nothing and allocates nothing. At most `spareLimit` of them, of
 * at most `spareWords` words each; a snapshot takes one of at least the
 * size the last one needed. */
const spares: Float64Array[] = [];
const spareLimit = 8;
const spareWords = 8192;
/** Whether the last `ownerSnapshot` returned a spare. */
let lastWasSpare = false;

/** The owner's info words, node table and buffer table, and the payment
 * for the handle's anchor view (see the constructor): written into a
 * spare array that fits, else copied into a new array of exactly their
 * length. Native code writes them into one scratch array of its own
 * buffer, and the copy is a plain typed array that native code never
 * sees: a new ArrayBuffer per handle would cost each import an external
 * allocation, which JSC counts towards its next collection.
 * `snapshotIsSpare()` then says which it was. */
export function ownerSnapshot(owner: number, adopt: SnapshotReference): Float64Array {
  const spare = spareFor(snapshotGuess);
  if (spare !== undefined) {
    const needed = native.abd_owner_snapshot(asPointer(owner), spare, spare.length, adopt);
    snapshotGuess = needed;
    if (needed <= spare.length) {
      lastWasSpare = true;
      return spare;
    }
    // Too small for this shape (nothing was written or taken): left to
    // the collector.
  }
  lastWasSpare = false;
  const needed = native.abd_owner_snapshot(asPointer(owner), snapshotScratch, snapshotScratch.length, adopt);
  snapshotGuess = needed;
  if (needed <= snapshotScratch.length) return snapshotScratch.slice(0, needed);
  if (needed > scratchLimit) {
    const words = nativeArray(Float64Array, needed);
    native.abd_owner_snapshot(asPointer(owner), words, needed, adopt);
    return words;
  }
  snapshotScratch = nativeArray(Float64Array, Math.min(needed * 2, scratchLimit));
  native.abd_owner_snapshot(asPointer(owner), snapshotScratch, snapshotScratch.length, adopt);
  return snapshotScratch.slice(0, needed);
}

/** Whether the last `ownerSnapshot` wrote into a spare array (its
 * handle gives it back with `giveBackSnapshot(words, true)`). */
export function snapshotIsSpare(): boolean {
  return lastWasSpare;
}

/**
 * Takes back the snapshot array of a handle being disposed, which no one
 * reads any more (its tables are only read while the handle is live, and
 * by the deferred views its dispose killed): a spare goes back to the
 * spares; a copy (plain, so never handed to native code) is replaced by a
 * new spare of its length unless one is kept, so that the next import of
 * this shape is written in place.
 */
export function giveBackSnapshot(words: Float64Array, spare: boolean): void {
  if (words.length > spareWords || words.length === 0) return;
  if (!spare) for (const kept of spares) if (kept.length === words.length) return;
  if (spares.length >= spareLimit) spares.shift(); // the oldest shape goes
  spares.push(spare ? words : nativeArray(Float64Array, words.length));
}

/** Takes the spare given back last that has at least `words` words. */
function spareFor(words: number): Float64Array | undefined {
  for (let i = spares.length - 1; i >= 0; i--) {
    if (spares[i].length < words) continue;
    const spare = spares[i];
    spares[i] = spares[spares.length - 1];
    spares.pop();
    return spare;
  }
  return undefined;
}

/** A batch pulled with its snapshot (batch_source.ts `pullInto`): its
 * owner and snapshot, or (after the stream's `nextAsync()`) a transient
 * handle. */
export type PulledBatch = { owner: number; words: Float64Array; imported: ImportedArray | null };

/** A new PulledBatch, its snapshot array sized as the last one needed. */
export function pulledBatch(): PulledBatch {
  return { owner: 0, words: snapshotWords(), imported: null };
}

/** Ends the import reference of a pulled batch (its views, if any, hold
 * their own). `owner` is a pull's (`pullInto` wrote it), never a user's
 * number: no entry point exports this. */
export function releasePulled(owner: number): void {
  native.abd_owner_release(asPointer(owner));
}
