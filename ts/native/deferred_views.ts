/**
 * Views of a batch's buffers made without a handle, for batches a
 * converter builds straight from a snapshot (batch_source.ts): all at
 * once (`pulledViews`), or on first use (`DeferredViews`).
 */
import { OwnerInfoWord, nodeStride, ownerInfoWords } from "../core/abi/layout.ts";
import { asPointer } from "../core/abi/structs.ts";
import { OutOfMemoryError, Status } from "../core/errors.ts";
import { native } from "../core/ffi/library.ts";
import { distinctWanted, noViews, wrapWanted } from "./import_snapshot.ts";
import { maxViewBytes, ownerAnchor, ownerView } from "./owner_stamp.ts";

/**
 * The views of a batch pulled with its snapshot and converted
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
      buffer = ownerView(address, size, owner);
    } catch (error) {
      // Bun ran the failed wrap's deallocator (its reference); the views
      // made already keep theirs until they are collected.
      if (unpaidAfter > 0) native.abd_owner_release_views(asPointer(owner), unpaidAfter);
      throw new OutOfMemoryError(Status.out_of_memory, `buffer ${i} (${size} bytes) could not be viewed from JS: ${(error as Error)?.message ?? String(error)}`);
    }
    return buffer;
  });
  return views;
}

/**
 * The views of one batch's buffers, made on first use
 * (arrow/import.ts builds a batch's Data over them lazily). Made with
 * one ArrayBuffer only, the anchor (8 bytes of the owner's node table),
 * holding one owner reference, which keeps the batch's
 * memory alive for as long as anything that may still make the views
 * (this object) is reachable. The first `views()` makes every view at
 * once, with one native call for their references, exactly as
 * `pulledViews` does; each then holds its own reference. `kill()` (the handle's `dispose()`) detaches every
 * view made, and the set's own anchor, and `views()` then returns null: nothing
 * made later can reach the released memory.
 */
export class DeferredViews {
  /** Views by buffer index; null once killed. */
  #views: (ArrayBuffer | undefined)[] | null = [];
  /** The anchor, holding one owner reference and nothing else (no JS
   * code ever reads it): its own (8 bytes of the owner's node table), or
   * that of the handle the views are deferred for (`of`), which the
   * handle ends. */
  #anchor: ArrayBuffer | null;
  /** Buffers still without a view (their references not taken yet). */
  #unmade: number;
  /** Why making the views failed, if it did. */
  #failed: OutOfMemoryError | null = null;
  readonly #owner: number;
  /** Whether `#anchor` is this set's own (not its handle's). */
  readonly #ownAnchor: boolean;

  private constructor(owner: number, readonly table: Float64Array, readonly at: number, readonly count: number, anchor: ArrayBuffer, unmade: number, ownAnchor: boolean) {
    this.#owner = owner;
    this.#anchor = anchor;
    this.#ownAnchor = ownAnchor;
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
    if (handleAnchor !== null) return new DeferredViews(owner, table, at, count, handleAnchor, wanted, false);
    // An anchor of 8 bytes, not a buffer's view: JSC counts an
    // ArrayBuffer's length as newly allocated memory, so a batch nobody
    // reads drives no collections, whatever its size.
    native.abd_owner_retain_views(asPointer(owner), 1);
    let anchor: ArrayBuffer;
    try {
      anchor = ownerAnchor(nodes, 8, owner);
    } catch (error) {
      // Bun ran the failed wrap's deallocator: its reference is given back.
      throw new OutOfMemoryError(Status.out_of_memory, `a batch's anchor could not be made: ${(error as Error)?.message ?? String(error)}`);
    }
    return new DeferredViews(owner, table, at, count, anchor, wanted, true);
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
        buffer = ownerView(address, size, owner);
      } catch (error) {
        if (unpaidAfter > 0) native.abd_owner_release_views(asPointer(owner), unpaidAfter);
        // The views made already (held here) keep their references; every
        // later call reports the same failure (nothing more is taken).
        this.#unmade = unpaidAfter + 1;
        this.#failed = new OutOfMemoryError(Status.out_of_memory, `buffer ${i} (${size} bytes) could not be viewed from JS: ${(error as Error)?.message ?? String(error)}`);
        throw this.#failed;
      }
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
    // A handle's anchor is the handle's to end (its dispose() does, and
    // may give it to the next handle: no link to it stays here).
    const anchor = this.#anchor;
    this.#anchor = null;
    if (this.#ownAnchor && anchor !== null && !anchor.detached) anchor.transfer(0);
  }
}
