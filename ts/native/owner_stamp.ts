/**
 * The ArrayBuffers made over an import owner's memory (zig/import/owner.zig):
 * each holds one owner reference, dropped by the native deallocator when
 * it is collected or detached, and carries its owner as a stamp that
 * exports of converted data read (keepalive.ts). This module alone makes
 * such buffers and reads their stamps.
 *
 * One reference per ArrayBuffer, never one shared by an import's
 * ArrayBuffers through JS links: `transfer()` (or structuredClone with
 * transfer) moves an ArrayBuffer's memory, deallocator included, into a
 * new ArrayBuffer that has nothing JS attached to the old one, so only
 * each ArrayBuffer's own deallocator can tell when its memory is unused.
 * (The one JS link is to an anchor, which no user code can reach and so
 * none can transfer: the deferred views of batches converted lazily from
 * a handle hold the handle's anchor.)
 */
import { type Pointer } from "bun:ffi";
import { asPointer, wrapNative } from "../core/abi/structs.ts";
import { LibraryLoadError, OutOfMemoryError, Status } from "../core/errors.ts";
import { libraryPath, native } from "../core/ffi/library.ts";
import { forgetReleased } from "./keepalive.ts";

/** The native deallocator of every ArrayBuffer over an owner's memory: it
 * drops the owner reference the buffer holds (zig/import/owner.zig). */
const deallocator = nativeDeallocator(native.abd_view_deallocator(), "abd_view_deallocator");

function nativeDeallocator(address: Pointer | null, symbol: string): Pointer {
  if (address === null) throw new LibraryLoadError(`libarrow_device returned no deallocator (${symbol})`, libraryPath());
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
export const maxViewBytes = 2 ** 32;

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

/** An ArrayBuffer over `bytes` bytes at `address` of `owner`'s memory,
 * paid for by one owner reference the caller took (Bun runs the
 * deallocator, giving it back, when the wrap fails), and stamped with
 * `owner`. */
export function ownerView(address: number, bytes: number, owner: number): ArrayBuffer {
  const buffer = wrapNative(address, bytes, owner, deallocator);
  new OwnerStamp(buffer, owner);
  return buffer;
}

/** The deallocator of handle anchors' ArrayBuffers (zig/import/owner.zig
 * `anchorDeallocator`): ends the anchor's reference unless `disarmAnchor`
 * did, and frees the anchor. */
const anchorDeallocator = nativeDeallocator(native.abd_anchor_deallocator(), "abd_anchor_deallocator");

/**
 * A handle's anchor: the ArrayBuffer over a new native anchor that holds
 * the owner reference the caller paid for (abd_owner_snapshot adopting
 * for an anchor); `lastAnchorAddress()` then gives the anchor's address.
 * The handle's `dispose()` ends that reference with `disarmAnchor`, one
 * native call; a handle dropped undisposed leaves it to the ArrayBuffer's
 * deallocator, which also runs when its JS thread ends. Either way the
 * anchor's memory goes with the ArrayBuffer. Not stamped: no export ever
 * reads it.
 */
export function handleAnchor(owner: number): ArrayBuffer {
  // A disposed handle's anchor, armed again: no allocation, no wrap.
  while (spareCount > 0) {
    spareCount--;
    const buffer = spareBuffers[spareCount]!;
    const spare = spareAddresses[spareCount];
    spareBuffers[spareCount] = undefined;
    if (native.abd_anchor_arm(asPointer(spare), asPointer(owner))) {
      lastAnchor = spare;
      return buffer;
    }
  }
  const anchor = native.abd_anchor_new(asPointer(owner));
  if (!anchor) {
    native.abd_owner_release_views(asPointer(owner), 1);
    throw new OutOfMemoryError(Status.out_of_memory, "out of memory allocating an imported array's anchor");
  }
  // A failed wrap runs the deallocator (Bun does): the reference ends.
  const buffer = wrapNative(anchor as number, anchorBytes, anchor as number, anchorDeallocator);
  lastAnchor = anchor as number;
  return buffer;
}

/** The address of the anchor `handleAnchor` made last (read at once by
 * its caller: no object per handle for a second result). */
let lastAnchor = 0;
export function lastAnchorAddress(): number {
  return lastAnchor;
}

/** The bytes of a native anchor (zig/import/owner.zig `Anchor`). */
const anchorBytes = 8;

/** Ends the reference of a `handleAnchor` anchor now (dispose), if its
 * deallocator has not; its ArrayBuffer stays, holding nothing. When that
 * was the last reference to an import of this thread's own export, the
 * export's tree finished right there: its keepalive id comes back from
 * the call and is forgotten at once (no queue, no drain). */
export function disarmAnchor(anchor: number): void {
  const finished = native.abd_anchor_disarm(asPointer(anchor));
  if (finished !== 0) forgetReleased(finished);
}

/**
 * Disarmed anchors of disposed handles, with their ArrayBuffers, that the
 * next handles of this JS thread take (`handleAnchor`): arming one again
 * is one native store, where a new anchor costs a malloc, a wrap (Bun's
 * toArrayBuffer, about a tenth of an export + import round trip) and,
 * later, a collection's finalizer. Up to `spareLimit`; the rest are left
 * to the collector, which frees them. A spare holds no reference, and
 * nothing but this list reaches it (see `recycleAnchor`).
 */
const spareLimit = 8;
const spareBuffers: (ArrayBuffer | undefined)[] = [];
const spareAddresses: number[] = [];
let spareCount = 0;

/** Gives a disposed handle's anchor (`buffer`, over native anchor
 * `anchor`), disarmed already, to the next handle. The caller drops every
 * link to `buffer` (the handle's, and its killed deferred views'), so
 * nothing of the disposed handle can keep the next handle's memory alive. */
export function recycleAnchor(buffer: ArrayBuffer, anchor: number): void {
  if (spareCount === spareLimit) return;
  spareBuffers[spareCount] = buffer;
  spareAddresses[spareCount] = anchor;
  spareCount++;
}

/** `ownerView` without the stamp: an anchor, which holds a reference and
 * nothing else (no export ever reads it). */
export function ownerAnchor(address: number, bytes: number, owner: number): ArrayBuffer {
  return wrapNative(address, bytes, owner, deallocator);
}
