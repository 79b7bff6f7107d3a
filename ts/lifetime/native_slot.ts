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
 * slot one native call allocated and filled: lifetime/exported.ts) join the
 * same safety net through `guardLater`; their `releaseContents` also frees
 * the memory (`adopted`), so this module does not call `abd_free` for them.
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

/** Handles waiting to join the safety net (see above), each with its
 * Describe at the same index. */
const deferred: object[] = [];
const describers: Describe[] = [];
const deferLimit = 256;
let flushQueued = false;

/** Registers every deferred handle not released yet with the safety net. */
function flush(): void {
  for (let i = 0; i < deferred.length; i++) {
    const handle = deferred[i];
    const held = describers[i](handle);
    if (held !== null) safetyNet.register(handle, held, handle);
  }
  deferred.length = 0;
  describers.length = 0;
}

function flushFromMicrotask(): void {
  flushQueued = false;
  flush();
}

/** Makes `handle` (which owns a slot) join the safety net later (see the
 * module comment): `describe` runs then. Handles other than NativeSlot
 * (lifetime/exported.ts) keep their slot state themselves. */
export function guardLater(handle: object, describe: Describe): void {
  deferred.push(handle);
  describers.push(describe);
  if (deferred.length >= deferLimit) flush();
  else if (!flushQueued) {
    flushQueued = true;
    queueMicrotask(flushFromMicrotask);
  }
}

/** Takes a handle that joined the safety net (its Describe returned
 * non-null) out of it: it was released explicitly. */
export function unguard(handle: object): void {
  safetyNet.unregister(handle);
}

export class NativeSlot {
  /** 0 once released. */
  #address: number;
  #token: number;
  #releaseContents: (address: number) => void;
  /** Whether the slot joined the safety net (see above). */
  #registered = false;

  static #describe: Describe = (handle) => {
    const slot = handle as NativeSlot;
    if (slot.#address === 0) return null;
    slot.#registered = true;
    return { address: slot.#address, token: slot.#token, label: slot.label, releaseContents: slot.#releaseContents, adopted: false };
  };

  /** Allocates `bytes` zeroed bytes for the handle described by `label`.
   * `releaseContents` must be a function that captures no handle (it runs
   * from the safety net too). */
  constructor(bytes: number, readonly label: string, releaseContents: (address: number) => void) {
    const address = native.abd_alloc_zeroed(bytes);
    if (!address) throw new OutOfMemoryError(Status.out_of_memory, `out of memory allocating the slot of an ${label}`);
    this.#address = address as number;
    this.#token = track(label);
    this.#releaseContents = releaseContents;
    guardLater(this, NativeSlot.#describe);
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
    if (this.#registered) unguard(this);
    untrack(this.#token);
    releaseSlot(address, this.#releaseContents, false);
  }
}
