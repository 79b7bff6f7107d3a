/**
 * Zeroed native memory at a stable address, owned by one JS handle, for the
 * base structs this library fills (exported arrays, exported streams).
 *
 * Ownership: the handle owns the memory. What the structs in it own is
 * released by `releaseContents(address)`, which calls each struct's release
 * only if no consumer moved it out (release == NULL then), and the memory is
 * freed afterwards. `release()` does both, once (idempotent). A
 * FinalizationRegistry does the same for a handle dropped without
 * `release()`: a safety net (a warning under ARROW_DEVICE_DEBUG=1), never the
 * intended path. JS thread only; what C moved out is released by C, from any
 * thread.
 *
 * Handles that keep their slot state themselves (exported arrays, whose
 * slot one native call allocated and filled: native/exported.ts) join the
 * same safety net through a DeferredGuard of their own; their
 * `releaseContents` also frees the memory (`adopted`), so this module does
 * not call `abd_free` for them.
 *
 * Deferred registration: a new slot joins the safety net at the next
 * microtask checkpoint, or as soon as `deferLimit` slots wait, whichever
 * comes first; until then its DeferredGuard holds it strongly (so it
 * cannot be collected unregistered). A slot released before then (the usual
 * export -> consumer -> release()) never touches the FinalizationRegistry,
 * whose register + unregister cost more than the rest of a small export.
 */
import { type Pointer } from "bun:ffi";
import { OutOfMemoryError, ReleasedError, Status } from "../core/errors.ts";
import { native } from "../core/ffi/library.ts";
import { reportLeak, track, untrack } from "./debug.ts";
import { drainReleased } from "./keepalive.ts";

/** What the safety net needs to release a slot whose handle was collected
 * (made when the slot joins it; it must not reference the handle). */
export type Held = { address: number; token: number; label: string; releaseContents: (address: number) => void; adopted: boolean };

function releaseSlot(address: number, releaseContents: (address: number) => void, adopted: boolean): void {
  releaseContents(address);
  if (adopted) return; // releaseContents freed it
  native.abd_free(address as Pointer);
  drainReleased();
}

const safetyNet = new FinalizationRegistry<Held>((held) => {
  reportLeak(held.token, held.label);
  releaseSlot(held.address, held.releaseContents, held.adopted);
});

/** Says what the safety net must release if `handle` is collected, and
 * notes that it joined the net; null if the handle was released already
 * (it does not join then). */
export type Describe = (handle: object) => Held | null;

const deferLimit = 256;

/** Handles of one class waiting to join the safety net (see above): each
 * is stored once (a fixed array, no growth), and `describe` says at flush
 * time what its entry is. Handles other than NativeSlot (native/
 * exported.ts) keep their slot state themselves and have their own. */
export class DeferredGuard {
  readonly #handles: (object | null)[] = new Array(deferLimit).fill(null);
  #count = 0;
  #flushQueued = false;
  readonly #describe: Describe;

  constructor(describe: Describe) {
    this.#describe = describe;
  }

  /** Makes `handle` (which owns a slot) join the safety net at the next
   * microtask checkpoint, or once `deferLimit` handles wait. */
  add(handle: object): void {
    this.#handles[this.#count++] = handle;
    if (this.#count === deferLimit) this.#flush();
    else if (!this.#flushQueued) {
      this.#flushQueued = true;
      queueMicrotask(this.#flushFromMicrotask);
    }
  }

  /** Registers every waiting handle not released yet with the safety net. */
  #flush(): void {
    const handles = this.#handles;
    const describe = this.#describe;
    for (let i = 0; i < this.#count; i++) {
      const handle = handles[i]!;
      handles[i] = null;
      const held = describe(handle);
      if (held !== null) safetyNet.register(handle, held, handle);
    }
    this.#count = 0;
  }

  #flushFromMicrotask = (): void => {
    this.#flushQueued = false;
    this.#flush();
  };
}

/** What every slot handle's `release()` ends besides its memory (the
 * caller frees that): its place in the safety net, when it joined it (its
 * Describe returned non-null), and its debug tracking. */
export function endHandle(handle: object, registered: boolean, token: number): void {
  if (registered) safetyNet.unregister(handle);
  untrack(token);
}

export class NativeSlot {
  /** 0 once released. */
  #address: number;
  #token: number;
  #releaseContents: (address: number) => void;
  /** Whether the slot joined the safety net (see above). */
  #registered = false;

  static #guard = new DeferredGuard((handle) => {
    const slot = handle as NativeSlot;
    if (slot.#address === 0) return null;
    slot.#registered = true;
    return { address: slot.#address, token: slot.#token, label: slot.label, releaseContents: slot.#releaseContents, adopted: false };
  });

  /** Allocates `bytes` zeroed bytes for the handle described by `label`.
   * `releaseContents` must be a function that captures no handle (it runs
   * from the safety net too). */
  constructor(bytes: number, readonly label: string, releaseContents: (address: number) => void) {
    const address = native.abd_alloc_zeroed(bytes);
    if (!address) throw new OutOfMemoryError(Status.out_of_memory, `out of memory allocating the slot of an ${label}`);
    this.#address = address as number;
    this.#token = track(label);
    this.#releaseContents = releaseContents;
    NativeSlot.#guard.add(this);
  }

  /** The slot's address; throws ReleasedError once released. */
  get address(): number {
    if (this.#address === 0) throw new ReleasedError(Status.released, `this ${this.label} handle was released; its struct addresses are no longer valid`);
    return this.#address;
  }

  get released(): boolean {
    return this.#address === 0;
  }

  /** Releases what no consumer moved and frees the memory. Idempotent. */
  release(): void {
    const address = this.#address;
    if (address === 0) return;
    this.#address = 0;
    endHandle(this, this.#registered, this.#token);
    releaseSlot(address, this.#releaseContents, false);
  }
}
