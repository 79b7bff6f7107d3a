/**
 * Handles for structs this library exports: an ArrowSchema plus an
 * ArrowArray or ArrowDeviceArray, in one native slot at a stable address
 * that C functions can take.
 *
 * Ownership: the handle owns the slot (the base structs' memory). A C
 * consumer that moves a struct out (bitwise copy, source release = NULL)
 * owns the tree from then on and releases it from any thread; the handle
 * sees the NULL release and will not release it again. `release()` (or
 * `using`) releases whatever was not moved and frees the slot; it is
 * idempotent. A FinalizationRegistry does the same for handles that were
 * dropped without release(): a safety net (with a warning in debug mode),
 * never the intended path.
 */
import { read, type Pointer } from "bun:ffi";
import { ArrowArrayLayout, ArrowDeviceArrayLayout, ArrowSchemaLayout } from "../abi/layout.ts";
import { OutOfMemoryError, ReleasedError, Status } from "../errors.ts";
import { native } from "../ffi/library.ts";
import { reportLeak, track, untrack } from "./debug.ts";
import { drainReleased } from "./keepalive.ts";

/** What the slot holds besides the schema: nothing ("schema"), an
 * ArrowArray ("array") or an ArrowDeviceArray ("device_array"). */
export type ExportedKind = "schema" | "array" | "device_array";

const schemaOffset = 0;
const arrayOffset = ArrowSchemaLayout.size; // 72: 8-byte aligned
const slotBytes = ArrowSchemaLayout.size + ArrowDeviceArrayLayout.size;

type Slot = { address: number; kind: ExportedKind; token: number; label: string };

function releaseSlot(slot: Slot): void {
  native.abd_schema_release((slot.address + schemaOffset) as Pointer);
  if (slot.kind === "device_array") native.abd_device_array_release((slot.address + arrayOffset) as Pointer);
  else if (slot.kind === "array") native.abd_array_release((slot.address + arrayOffset) as Pointer);
  native.abd_free(slot.address as Pointer);
  drainReleased();
}

const safetyNet = new FinalizationRegistry<Slot>((slot) => {
  reportLeak(slot.token, slot.label);
  releaseSlot(slot);
});

/** An exported ArrowSchema (kind "schema"), optionally with its ArrowArray
 * or ArrowDeviceArray. */
export class ExportedArray implements Disposable {
  #slot: Slot | null;

  /** Allocates an empty (released) slot; the converter fills it. */
  constructor(readonly kind: ExportedKind, label = `exported ${kind === "schema" ? "ArrowSchema" : kind === "array" ? "ArrowArray" : "ArrowDeviceArray"}`) {
    const address = native.abd_alloc_zeroed(slotBytes);
    if (!address) throw new OutOfMemoryError(Status.out_of_memory, "out of memory allocating an export slot");
    this.#slot = { address, kind, token: track(label), label };
    safetyNet.register(this, this.#slot, this);
  }

  #live(): Slot {
    if (!this.#slot) throw new ReleasedError(Status.released, "this export handle was released; its struct addresses are no longer valid");
    return this.#slot;
  }

  /** `struct ArrowSchema*` for C. Valid until `release()`. */
  get schema(): Pointer {
    return (this.#live().address + schemaOffset) as Pointer;
  }

  /** `struct ArrowDeviceArray*` (kind "device_array") or `struct ArrowArray*`
   * (kind "array") for C. Valid until `release()`. */
  get array(): Pointer {
    if (this.kind === "schema") throw new ReleasedError(Status.invalid_argument, "this handle holds only a schema");
    return (this.#live().address + arrayOffset) as Pointer;
  }

  /** True once a consumer moved the schema out, or it was released. */
  get schemaReleased(): boolean {
    if (!this.#slot) return true;
    return read.ptr(this.schema, ArrowSchemaLayout.fields.release) === 0;
  }

  /** True once a consumer moved the array out, or it was released. */
  get arrayReleased(): boolean {
    if (!this.#slot || this.kind === "schema") return true;
    return read.ptr(this.array, ArrowArrayLayout.fields.release) === 0;
  }

  /** True once `release()` ran: the struct addresses are no longer valid. */
  get released(): boolean {
    return this.#slot === null;
  }

  /** Releases what no consumer moved, and frees the slot. Idempotent. */
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

/** An exported schema alone. */
export type ExportedSchema = ExportedArray & { readonly kind: "schema" };
