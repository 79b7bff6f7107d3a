/**
 * Keeps JS memory that C can see alive until C lets go of it.
 *
 * Exporting JS buffers to C registers them here under a numeric id; the id
 * travels into the native tree block (zig/export_array.zig). The consumer's
 * release may run on any thread; it only queues the id natively
 * (zig/keepalive.zig). This module drains that queue, on the JS thread,
 * whenever an API call asks and whenever the library wakes it through a
 * threadsafe callback, and only then drops the references. So no JS memory
 * reachable by C is ever collected or moved before C released it.
 */
import { JSCallback } from "bun:ffi";
import { native } from "../ffi/library.ts";

const retained = new Map<number, unknown>();
let nextId = 1;

// Passed to C as the typed array itself, converted at each call: an address
// taken once with ptr() can go stale when the GC moves a typed array's
// storage (seen: ids written to the old place, never read, so exports were
// retained forever).
const drainScratch = new Float64Array(512);

/** Registers `objects` to be kept strongly reachable; returns the id to
 * hand to the native builder. */
export function retainForNative(objects: unknown): number {
  const id = nextId++;
  retained.set(id, objects);
  return id;
}

/** Forgets an id whose native tree was never built (the build failed). */
export function forgetUnused(id: number): void {
  retained.delete(id);
}

/** Drops the references of every export whose native release has run.
 * Returns how many were dropped. Cheap when nothing is queued. */
export function drainReleased(): number {
  let dropped = 0;
  for (;;) {
    const n = native.abd_take_released(drainScratch, drainScratch.length);
    for (let i = 0; i < n; i++) {
      if (retained.delete(drainScratch[i])) dropped++;
    }
    if (n < drainScratch.length) return dropped;
  }
}

/** Exports whose JS memory is still held for C. */
export function retainedCount(): number {
  return retained.size;
}

// Wakes the JS thread after a release on any thread. Threadsafe callbacks
// run later on the JS thread and return nothing to C; the library calls it
// at most once per empty-to-non-empty transition of its queue. It is never
// closed: releases can arrive until the process exits.
const wake = new JSCallback(() => {
  drainReleased();
}, { args: [], returns: "void", threadsafe: true });
native.abd_set_release_notifier(wake.ptr);
