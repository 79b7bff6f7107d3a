/**
 * Keeps JS memory that C can see alive until C lets go of it.
 *
 * Exporting JS buffers to C registers them here under a numeric id; the id
 * travels into the native tree block (zig/export/array.zig). The consumer's
 * release may run on any thread; it only queues the id natively
 * (zig/export/keepalive.zig). This module drains that queue, on the JS thread,
 * whenever an API call asks and whenever the library wakes it through a
 * threadsafe callback, and only then drops the references. So no JS memory
 * reachable by C is ever collected or moved before C released it.
 *
 * Two shortcuts keep this off the export hot path: the number of queued
 * ids is a native u32 this module reads through a typed array (no call
 * when nothing is queued), and a release the JS thread runs itself through
 * `abd_export_slot_free` gets its id back as the call's result instead of
 * queued (`forgetReleased`).
 */
import { JSCallback, toArrayBuffer } from "bun:ffi";
import { check, jsContext, native } from "../core/ffi/library.ts";
import { nativeArray } from "../core/ffi/native_arrays.ts";

/** Ids handed to native code are `base + index`: the high bits name this
 * JS thread (zig/core/js_context.zig), so a release on any thread reports to
 * the thread that exported, and ids of different Workers never collide. */
const base = jsContext * 2 ** 32;

/** What each live id keeps reachable, indexed by `id - base` (index 0 is
 * never used).
 * An id is reused once it was forgotten: by then no native tree or queue
 * holds it any more (the native release drops the id's import owners and
 * queues or hands it back once; JS forgets each id once). */
const retainedById: unknown[] = [null];
/** Marks an id that is not in use. */
const free = Symbol("free id");
const freeIds: number[] = [];
let retainedSize = 0;

const retained = {
  set(id: number, objects: unknown): void {
    retainedById[id - base] = objects;
    retainedSize++;
  },
  has(id: number): boolean {
    const index = id - base;
    return index > 0 && index < retainedById.length && retainedById[index] !== free;
  },
  /** Forgets `id` (and makes it reusable); false if it was not in use. */
  delete(id: number): boolean {
    if (!retained.has(id)) return false;
    retainedById[id - base] = free;
    freeIds.push(id);
    retainedSize--;
    return true;
  },
};
/** Callbacks to run, on the JS thread, once an id was released natively. */
const onRelease = new Map<number, () => void>();

// Passed to native code as the typed array itself on every call: a cached
// ptr() of it went stale (its storage moved), so the library wrote ids into
// the old place — corrupting the JS heap — while JS read zeros here.
const drainScratch = nativeArray(Float64Array, 512);

// The native count of queued ids (zig/export/keepalive.zig `queued`): static
// library memory, never freed (the library is never closed), so the view
// needs no deallocator. A stale zero only delays a drain to the next call.
const queued = new Uint32Array(toArrayBuffer(native.abd_keepalive_queued_address()!, 0, 4));

/** Registers `objects` to be kept strongly reachable; returns the id to
 * hand to the native builder. `released`, if given, runs on the JS thread
 * when the id is drained (after the native release ran, on any thread). */
export function retainForNative(objects: unknown, released?: () => void): number {
  const id = freeIds.pop() ?? base + retainedById.length;
  retained.set(id, objects);
  if (released) onRelease.set(id, released);
  return id;
}

/** Runs `released` on the JS thread once `id` is drained (replacing any
 * callback given before). */
export function whenReleased(id: number, released: () => void): void {
  if (retained.has(id)) onRelease.set(id, released);
}

/** Ids that hold import owners natively (zig/export_holds.zig). */
const holdingOwners = new Set<number>();
let ownerScratch = nativeArray(Float64Array, 16);

/** Makes the export built under `id` hold one reference on each import
 * owner in `owners` (zig/export_holds.zig): its release, on any thread,
 * drops them. Call before building the export, while the caller's views
 * keep the owners alive. */
export function holdOwners(id: number, owners: readonly number[]): void {
  if (owners.length === 0) return;
  if (ownerScratch.length < owners.length) ownerScratch = nativeArray(Float64Array, owners.length * 2);
  ownerScratch.set(owners);
  check(native.abd_export_hold_owners(id, ownerScratch, owners.length));
  holdingOwners.add(id);
}

/** `retainForNative(objects)`, then `holdOwners` for `owners` (import
 * owners under those objects): the id of an export that points into
 * imports. Nothing is kept if holding fails. */
export function retainWithOwners(objects: unknown, owners: readonly number[]): number {
  const id = retainForNative(objects);
  if (owners.length === 0) return id; // JS memory only: nothing to hold natively
  try {
    holdOwners(id, owners);
  } catch (error) {
    forgetUnused(id);
    throw error;
  }
  return id;
}

/** Forgets an id whose native tree was never built (the build failed),
 * with the import owners it held. */
export function forgetUnused(id: number): void {
  retained.delete(id);
  onRelease.delete(id);
  if (holdingOwners.delete(id)) native.abd_export_drop_owners(id);
}

/** Drops the references of `id`, whose tree was released on the JS thread
 * and handed back by the release call (not queued). */
export function forgetReleased(id: number): void {
  retained.delete(id);
  if (holdingOwners.size !== 0) holdingOwners.delete(id);
  if (onRelease.size !== 0) runReleased(id);
}

function runReleased(id: number): void {
  const callback = onRelease.get(id);
  if (!callback) return;
  onRelease.delete(id);
  try {
    callback();
  } catch (error) {
    // Reported like any uncaught error, without stopping the drain.
    queueMicrotask(() => {
      throw error;
    });
  }
}

/** Drops the references of every export whose native release has run.
 * Returns how many were dropped. Cheap when nothing is queued. */
export function drainReleased(): number {
  if (queued[0] === 0) return 0;
  let dropped = 0;
  for (;;) {
    const n = native.abd_take_released(drainScratch, drainScratch.length);
    if (n === 1) {
      // The usual drain (one export released since the last): read into a
      // local, no copy of the scratch.
      const id = drainScratch[0];
      if (retained.delete(id)) dropped++;
      holdingOwners.delete(id);
      runReleased(id);
      return dropped;
    }
    // Copied first: a release callback may drain again (re-entering here).
    const ids = n > 0 ? drainScratch.slice(0, n) : drainScratch.subarray(0, 0);
    for (let i = 0; i < n; i++) {
      if (retained.delete(ids[i])) dropped++;
      holdingOwners.delete(ids[i]);
      runReleased(ids[i]);
    }
    if (n < drainScratch.length) return dropped;
  }
}

/** Ids released natively and not drained yet (a native count read
 * without a call; may lag by a release in flight). */
export function releasesQueued(): number {
  return queued[0];
}

/** Exports whose JS memory is still held for C. */
export function retainedCount(): number {
  return retainedSize;
}

/** Wakes the library posted to this module so far (each one is a task
 * Bun queues until the event loop turns). */
export function releaseWakesPosted(): number {
  return native.abd_release_wakes_posted();
}

// Wakes the JS thread after a release on any thread. Threadsafe callbacks
// run later on the JS thread and return nothing to C; the library keeps at
// most one call pending (zig/export/keepalive.zig), re-armed here before the drain
// so that an id queued after it posts a new wake. It is never closed:
// releases can arrive until the process exits.
const wake = new JSCallback(() => {
  native.abd_release_wake_done();
  drainReleased();
}, { args: [], returns: "void", threadsafe: true });
native.abd_set_release_notifier(wake.ptr);
