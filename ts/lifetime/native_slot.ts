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
 * Adopted slots (`adopted`): memory a native call allocated and filled in
 * one go (zig/export_batch.zig); their `releaseContents` also frees the
 * memory (one call), so this module does not call `abd_free` for them.
 *
 * Deferred registration: a new slot joins the safety net at the next
 * microtask checkpoint, or as soon as `deferLimit` slots wait, whichever
 * comes first; until then `deferred` holds it strongly (so it cannot be
 * collected unregistered). A slot released before then (the usual
 * export -> consumer -> release()) never touches the FinalizationRegistry,
 * whose register + unregister cost more than the rest of a small export.
 */
import { type Pointer } from "bun:ffi";
import { OutOfMemoryError, ReleasedError, Status } from "../errors.ts";
import { native } from "../ffi/library.ts";
import { reportLeak, track, untrack } from "./debug.ts";
import { drainReleased } from "./keepalive.ts";

/** What the safety net needs to release a slot whose handle was collected
 * (made when the slot joins it; it must not reference the handle). */
type Held = { address: number; token: number; label: string; releaseContents: (address: number) => void; adopted: boolean };

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

/** Slots waiting to join the safety net (see above). */
const deferred: NativeSlot[] = [];
const deferLimit = 256;
let flushQueued = false;

export class NativeSlot {
  /** 0 once released. */
  #address: number;
  #token: number;
  #releaseContents: (address: number) => void;
  #adopted: boolean;
  /** Whether the slot joined the safety net (see above). */
  #registered = false;

  /** Registers every deferred slot not released yet with the safety net. */
  static #flush(): void {
    for (const slot of deferred) {
      if (slot.#address === 0) continue;
      slot.#registered = true;
      const held: Held = { address: slot.#address, token: slot.#token, label: slot.label, releaseContents: slot.#releaseContents, adopted: slot.#adopted };
      safetyNet.register(slot, held, slot);
    }
    deferred.length = 0;
  }

  static #flushFromMicrotask = (): void => {
    flushQueued = false;
    NativeSlot.#flush();
  };

  /** Allocates `bytes` zeroed bytes for the handle described by `label`
   * (or, with `adopted`, takes that already filled native memory, whose
   * `releaseContents` frees it too). `releaseContents` must be a function
   * that captures no handle (it runs from the safety net too). */
  constructor(bytes: number, readonly label: string, releaseContents: (address: number) => void, adopted = 0) {
    const address = adopted || native.abd_alloc_zeroed(bytes);
    if (!address) throw new OutOfMemoryError(Status.out_of_memory, `out of memory allocating the slot of an ${label}`);
    this.#address = address as number;
    this.#token = track(label);
    this.#releaseContents = releaseContents;
    this.#adopted = adopted !== 0;
    deferred.push(this);
    if (deferred.length >= deferLimit) NativeSlot.#flush();
    else if (!flushQueued) {
      flushQueued = true;
      queueMicrotask(NativeSlot.#flushFromMicrotask);
    }
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
    if (this.#registered) safetyNet.unregister(this);
    untrack(this.#token);
    releaseSlot(address, this.#releaseContents, this.#adopted);
  }
}
