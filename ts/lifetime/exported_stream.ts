/**
 * Handles for stream structs this library fills (JS-produced streams,
 * adapters): one ArrowArrayStream or ArrowDeviceArrayStream in a native
 * slot at a stable address that C functions can take.
 *
 * Ownership: the handle owns the slot. A C consumer that moves the stream
 * out (bitwise copy, source release = NULL) owns the stream from then on
 * and calls its release, once, from any thread; the handle sees the NULL
 * release and will not call it again. A consumer may also use the stream
 * in place, at `handle.stream`, until the handle is released.
 * `release()` (or `using`) releases the stream if nobody moved it, and
 * frees the slot; it is idempotent. A FinalizationRegistry does the same
 * for a dropped handle: a safety net, never the intended path.
 */
import { read, type Pointer } from "bun:ffi";
import { ArrowArrayStreamLayout, ArrowDeviceArrayStreamLayout } from "../abi/layout.ts";
import { OutOfMemoryError, ReleasedError, Status } from "../errors.ts";
import { native } from "../ffi/library.ts";
import { reportLeak, track, untrack } from "./debug.ts";
import { drainReleased } from "./keepalive.ts";

/** "stream": struct ArrowArrayStream; "device_stream": struct
 * ArrowDeviceArrayStream. */
export type StreamKind = "stream" | "device_stream";

const slotBytes = Math.max(ArrowArrayStreamLayout.size, ArrowDeviceArrayStreamLayout.size);

type Slot = { address: number; kind: StreamKind; token: number; label: string };

function releaseOffset(kind: StreamKind): number {
  return kind === "device_stream" ? ArrowDeviceArrayStreamLayout.fields.release : ArrowArrayStreamLayout.fields.release;
}

/** Calls the stream's release at `address` unless it is released. */
export function releaseStreamAt(address: number, kind: StreamKind): void {
  if (kind === "device_stream") native.abd_device_array_stream_release(address as Pointer);
  else native.abd_array_stream_release(address as Pointer);
}

function releaseSlot(slot: Slot): void {
  releaseStreamAt(slot.address, slot.kind);
  native.abd_free(slot.address as Pointer);
  drainReleased();
}

const safetyNet = new FinalizationRegistry<Slot>((slot) => {
  reportLeak(slot.token, slot.label);
  releaseSlot(slot);
});

/** One ArrowArrayStream or ArrowDeviceArrayStream this library fills, in a
 * native slot at a stable address (`stream`); see the module comment for
 * who owns it when. */
export class ExportedStream implements Disposable {
  #slot: Slot | null;

  /** Allocates an empty (released) slot; the producer fills it. */
  constructor(readonly kind: StreamKind, label = `exported ${kind === "stream" ? "ArrowArrayStream" : "ArrowDeviceArrayStream"}`) {
    const address = native.abd_alloc_zeroed(slotBytes);
    if (!address) throw new OutOfMemoryError(Status.out_of_memory, "out of memory allocating a stream slot");
    this.#slot = { address, kind, token: track(label), label };
    safetyNet.register(this, this.#slot, this);
  }

  #live(): Slot {
    if (!this.#slot) throw new ReleasedError(Status.released, "this stream handle was released; its struct address is no longer valid");
    return this.#slot;
  }

  /** `struct ArrowArrayStream*` (kind "stream") or `struct
   * ArrowDeviceArrayStream*` (kind "device_stream") for C. Valid until
   * `release()`. */
  get stream(): Pointer {
    return this.#live().address as Pointer;
  }

  /** True once a consumer moved the stream out, or it was released. */
  get streamReleased(): boolean {
    if (!this.#slot) return true;
    return read.ptr(this.#slot.address as Pointer, releaseOffset(this.kind)) === 0;
  }

  /** True once `release()` ran: the stream address is no longer valid. */
  get released(): boolean {
    return this.#slot === null;
  }

  /** Releases the stream unless a consumer moved it, and frees the slot.
   * Idempotent. */
  release(): void {
    const slot = this.#slot;
    if (!slot) return;
    this.#slot = null;
    safetyNet.unregister(this);
    untrack(slot.token);
    releaseSlot(slot);
  }

  [Symbol.dispose](): void {
    this.release();
  }
}
