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
 *
 * Handles made by `adoptExportSlot` (convert/export.ts) wrap a slot that
 * one native call allocated and filled (zig/export_batch.zig); one native
 * call releases and frees it, handing back the keepalive id when the tree
 * finished right there (`forgetReleased`: no queue, no wake).
 */
import { read, type Pointer } from "bun:ffi";
import { ArrowArrayLayout, ArrowDeviceArrayLayout, ArrowSchemaLayout } from "../abi/layout.ts";
import { ReleasedError, Status } from "../errors.ts";
import { native } from "../ffi/library.ts";
import { NativeSlot } from "./native_slot.ts";
import { drainReleased, forgetReleased } from "./keepalive.ts";
import { ArrowCArray, ArrowCDeviceArray, ArrowCSchema, type ArrowCapsule, type ProtocolOptions } from "../protocol/symbols.ts";
import { oneOfArg, stringArg } from "../args.ts";

/** What the slot holds besides the schema: nothing ("schema"), an
 * ArrowArray ("array") or an ArrowDeviceArray ("device_array"). */
export type ExportedKind = "schema" | "array" | "device_array";

const schemaOffset = 0;
const arrayOffset = ArrowSchemaLayout.size; // 72: 8-byte aligned
const slotBytes = ArrowSchemaLayout.size + ArrowDeviceArrayLayout.size;

const releaseContents: Record<ExportedKind, (address: number) => void> = {
  schema: (address) => native.abd_schema_release((address + schemaOffset) as Pointer),
  array: (address) => {
    native.abd_schema_release((address + schemaOffset) as Pointer);
    native.abd_array_release((address + arrayOffset) as Pointer);
  },
  device_array: (address) => {
    native.abd_schema_release((address + schemaOffset) as Pointer);
    native.abd_device_array_release((address + arrayOffset) as Pointer);
  },
};

const labels: Record<ExportedKind, string> = {
  schema: "exported ArrowSchema",
  array: "exported ArrowArray",
  device_array: "exported ArrowDeviceArray",
};

/** zig/export_batch.zig's slot kinds. */
export const exportSlotKinds: Record<ExportedKind, number> = { schema: 0, array: 1, device_array: 2 };

function freeExportSlot(address: number, kind: number): void {
  const finished = native.abd_export_slot_free(address as Pointer, kind);
  if (finished !== 0) forgetReleased(finished);
  drainReleased();
}

const freeAdopted: Record<ExportedKind, (address: number) => void> = {
  schema: (address) => freeExportSlot(address, 0),
  array: (address) => freeExportSlot(address, 1),
  device_array: (address) => freeExportSlot(address, 2),
};

/** Set only while `adoptExportSlot` constructs a handle. */
let adopting = 0;

/** A handle owning `address`, a slot of `kind` that abd_export_slot_new
 * returned (filled; freed by abd_export_slot_free). Internal. */
export function adoptExportSlot(kind: ExportedKind, address: number): ExportedArray {
  adopting = address;
  try {
    return new ExportedArray(kind);
  } finally {
    adopting = 0;
  }
}

/** An exported ArrowSchema (kind "schema"), optionally with its ArrowArray
 * or ArrowDeviceArray. */
export class ExportedArray implements Disposable {

  /** Protocol (docs/protocol.md): an "arrow_schema" capsule; undefined where not offered. */
  declare readonly [ArrowCSchema]?: (options?: ProtocolOptions) => ArrowCapsule;
  /** Protocol (docs/protocol.md): an "arrow_array" capsule, CPU data only; undefined where not offered. */
  declare readonly [ArrowCArray]?: (options?: ProtocolOptions) => ArrowCapsule;
  /** Protocol (docs/protocol.md): an "arrow_device_array" capsule; undefined where not offered. */
  declare readonly [ArrowCDeviceArray]?: (options?: ProtocolOptions) => ArrowCapsule;
  #slot: NativeSlot;

  /** Allocates an empty (released) slot; the converter fills it. */
  constructor(readonly kind: ExportedKind, label?: string) {
    if (adopting !== 0) {
      this.#slot = new NativeSlot(slotBytes, labels[kind], freeAdopted[kind], adopting);
      return;
    }
    oneOfArg("ExportedArray", "kind", kind, ["schema", "array", "device_array"]);
    stringArg("ExportedArray", "label", label, true);
    this.#slot = new NativeSlot(slotBytes, label ?? labels[kind], releaseContents[kind]);
  }

  /** `struct ArrowSchema*` for C. Valid until `release()`. */
  get schema(): Pointer {
    return (this.#slot.address + schemaOffset) as Pointer;
  }

  /** `struct ArrowDeviceArray*` (kind "device_array") or `struct ArrowArray*`
   * (kind "array") for C. Valid until `release()`. */
  get array(): Pointer {
    if (this.kind === "schema") throw new ReleasedError(Status.invalid_argument, "this handle holds only a schema");
    return (this.#slot.address + arrayOffset) as Pointer;
  }

  /** True once a consumer moved the schema out, or it was released. */
  get schemaReleased(): boolean {
    if (this.#slot.released) return true;
    return read.ptr(this.schema, ArrowSchemaLayout.fields.release) === 0;
  }

  /** True once a consumer moved the array out, or it was released. */
  get arrayReleased(): boolean {
    if (this.#slot.released || this.kind === "schema") return true;
    return read.ptr(this.array, ArrowArrayLayout.fields.release) === 0;
  }

  /** True once `release()` ran: the struct addresses are no longer valid. */
  get released(): boolean {
    return this.#slot.released;
  }

  /** Releases what no consumer moved, and frees the slot. Idempotent. */
  release(): void {
    this.#slot.release();
  }

  [Symbol.dispose](): void {
    this.release();
  }
}

/** An exported schema alone. */
export type ExportedSchema = ExportedArray & { readonly kind: "schema" };
