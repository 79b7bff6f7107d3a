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

/** The owner's info words, node table and buffer table, copied into a new
 * array of exactly their length; pays for the handle's anchor view (see
 * the constructor). Native code writes them into one scratch array of
 * its own buffer, and the copy is a plain typed array that native code
 * never sees: a new ArrayBuffer per handle would cost each import an
 * external allocation, which JSC counts towards its next collection. */
export function ownerSnapshot(owner: number, adopt: SnapshotReference): Float64Array {
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
