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
 * Handles made by `adoptExportSlot` (arrow/export.ts) wrap a slot that
 * one native call allocated and filled (zig/export/batch.zig); one native
 * call releases and frees it, handing back the keepalive id when the tree
 * finished right there (`forgetReleased`: no queue, no wake). A handle is
 * one object (it keeps its slot's address itself) that joins NativeSlot's
 * deferred safety net: an export released before the next microtask never
 * touches the FinalizationRegistry.
 */
import { branded, type StructPointer } from "../core/abi/pointers.ts";
import { read, type Pointer } from "bun:ffi";
import { ArrowArrayLayout, ArrowDeviceArrayLayout, ArrowSchemaLayout } from "../core/abi/layout.ts";
import { OutOfMemoryError, ReleasedError, Status } from "../core/errors.ts";
import { check, native } from "../core/ffi/library.ts";
import { DeferredGuard, endHandle } from "./native_slot.ts";
import { debugEnabled, track } from "./debug.ts";
import { drainReleased, forgetReleased } from "./keepalive.ts";
import { exportArrayOffset, forgetLiveExport, noteLiveExport } from "./live_export.ts";
import { grantBrand } from "./handle_access.ts";
import { LibraryCapsule } from "./protocol/capsule.ts";
import { ArrowCArray, ArrowCDeviceArray, ArrowCSchema, checkOptions, type ArrowCapsule, type ProtocolOptions } from "./protocol/symbols.ts";
import { oneOfArg, stringArg } from "../core/args.ts";
import { inspectCustom } from "./inspect.ts";
import { showExportedArray } from "./inspect_handles.ts";

/** What the slot holds besides the schema: nothing ("schema"), an
 * ArrowArray ("array") or an ArrowDeviceArray ("device_array"). */
export type ExportedKind = "schema" | "array" | "device_array";

const schemaOffset = 0;
const arrayOffset = exportArrayOffset;
const slotBytes = ArrowSchemaLayout.size + ArrowDeviceArrayLayout.size;

/** What a slot the constructor allocated owns, released (moved-out
 * structs have release == NULL and are skipped natively); the memory is
 * freed after it. */
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

/** zig/export/batch.zig's slot kinds. */
export const exportSlotKinds: Record<ExportedKind, number> = { schema: 0, array: 1, device_array: 2 };

/** Releases and frees an adopted slot of kind `code` in one native call,
 * forgetting the keepalive id it hands back (the tree finished right
 * there), then drains what other threads released. */
function freeExportSlot(address: number, code: number): void {
  const finished = native.abd_export_slot_free(address as Pointer, code);
  if (finished !== 0) forgetReleased(finished);
  drainReleased();
}

/** Releases what a constructor-allocated slot still owns and frees it. */
function freeAllocatedSlot(address: number, kind: ExportedKind): void {
  releaseContents[kind](address);
  native.abd_free(address as Pointer);
  drainReleased();
}

/** What the safety net runs for a collected handle, by kind: adopted
 * slots (one native call) and allocated ones. */
const freeAdopted: Record<ExportedKind, (address: number) => void> = {
  schema: (address) => freeExportSlot(address, 0),
  array: (address) => freeExportSlot(address, 1),
  device_array: (address) => freeExportSlot(address, 2),
};
const freeAllocated: Record<ExportedKind, (address: number) => void> = {
  schema: (address) => freeAllocatedSlot(address, "schema"),
  array: (address) => freeAllocatedSlot(address, "array"),
  device_array: (address) => freeAllocatedSlot(address, "device_array"),
};

/** Set only while `adoptExportSlot` constructs a handle (the constructor
 * takes them at once). */
let adopting = 0;
let adoptingCode = 0;

/** A handle owning `address`, a slot of `kind` that abd_export_slot_new
 * returned (filled; freed by abd_export_slot_free). Internal. */
export function adoptExportSlot<K extends ExportedKind>(kind: K, address: number): ExportedArray<K> {
  adopting = address;
  adoptingCode = exportSlotKinds[kind];
  return new ExportedArray(kind);
}

/** An exported ArrowSchema (kind "schema"), optionally with its ArrowArray
 * or ArrowDeviceArray. `K` is the kind, which types `array`'s address. */
export class ExportedArray<K extends ExportedKind = ExportedKind> implements Disposable {

  /** Protocol (docs/protocol.md): an "arrow_schema" capsule (kind "schema"); undefined for other kinds. */
  get [ArrowCSchema](): ((options?: ProtocolOptions) => ArrowCapsule) | undefined { return this.kind === "schema" ? (options) => movedCapsule(this, "__arrow_c_schema__", options) : undefined; }
  /** Protocol (docs/protocol.md): an "arrow_array" capsule (kind "array"); undefined for other kinds. */
  get [ArrowCArray](): ((options?: ProtocolOptions) => ArrowCapsule) | undefined { return this.kind === "array" ? (options) => movedCapsule(this, "__arrow_c_array__", options) : undefined; }
  /** Protocol (docs/protocol.md): an "arrow_device_array" capsule (kind "device_array"); undefined for other kinds. */
  get [ArrowCDeviceArray](): ((options?: ProtocolOptions) => ArrowCapsule) | undefined { return this.kind === "device_array" ? (options) => movedCapsule(this, "__arrow_c_device_array__", options) : undefined; }

  // The handle keeps its slot itself (no NativeSlot: one object per
  // export), and joins NativeSlot's safety net (a DeferredGuard).
  /** The slot's address; 0 once released. */
  #address: number;
  /** zig/export/batch.zig's kind for an adopted slot (freed by one native
   * call); -1 for a slot the constructor allocated. */
  #code: number;
  #label: string | undefined;
  #token: number;
  /** Whether the handle joined the safety net. */
  #registered = false;

  static {
    grantBrand("ExportedArray", (value) => #address in (value as object));
  }

  static #guard = new DeferredGuard((handle) => {
    const self = handle as ExportedArray;
    if (self.#address === 0) return null;
    // Freed by the safety net from now on, perhaps without release():
    // no longer known live.
    forgetLiveExport(self.#address);
    self.#registered = true;
    const free = self.#code === -1 ? freeAllocated[self.kind] : freeAdopted[self.kind];
    // adopted: `free` frees the slot too (NativeSlot does not).
    return { address: self.#address, token: self.#token, label: self.#label ?? labels[self.kind], releaseContents: free, adopted: true };
  });

  /** Allocates an empty (released) slot; the converter fills it. */
  constructor(readonly kind: K, label?: string) {
    const adopted = adopting;
    if (adopted !== 0) {
      adopting = 0;
      noteLiveExport(adopted, kind);
      this.#address = adopted;
      this.#code = adoptingCode;
      this.#label = undefined;
    } else {
      oneOfArg("ExportedArray", "kind", kind, ["schema", "array", "device_array"]);
      stringArg("ExportedArray", "label", label, true);
      const address = native.abd_alloc_zeroed(slotBytes);
      if (!address) throw new OutOfMemoryError(Status.out_of_memory, `out of memory allocating the slot of an ${label ?? labels[kind]}`);
      this.#address = address as number;
      this.#code = -1;
      this.#label = label;
    }
    this.#token = debugEnabled ? track(this.#label ?? labels[kind]) : 0;
    ExportedArray.#guard.add(this);
  }

  /** The slot's address; throws ReleasedError once released. */
  #slot(): number {
    const address = this.#address;
    if (address === 0) throw new ReleasedError(Status.released, `this ${this.#label ?? labels[this.kind]} handle was released; its struct addresses are no longer valid`);
    return address;
  }

  /** `struct ArrowSchema*` for C. Valid until `release()`. */
  get schema(): StructPointer<"ArrowSchema"> {
    return branded(this.#slot() + schemaOffset);
  }

  /** `struct ArrowDeviceArray*` (kind "device_array") or `struct ArrowArray*`
   * (kind "array") for C. Valid until `release()`. */
  get array(): StructPointer<K extends "array" ? "ArrowArray" : "ArrowDeviceArray"> {
    if (this.kind === "schema") throw new ReleasedError(Status.invalid_argument, "this handle holds only a schema");
    return branded(this.#slot() + arrayOffset);
  }

  /** True once a consumer moved the schema out, or it was released. */
  get schemaReleased(): boolean {
    if (this.#address === 0) return true;
    return read.ptr(this.schema, ArrowSchemaLayout.fields.release) === 0;
  }

  /** True once a consumer moved the array out, or it was released. */
  get arrayReleased(): boolean {
    if (this.#address === 0 || this.kind === "schema") return true;
    return read.ptr(this.array, ArrowArrayLayout.fields.release) === 0;
  }

  /** True once `release()` ran: the struct addresses are no longer valid. */
  get released(): boolean {
    return this.#address === 0;
  }

  /** Releases what no consumer moved, and frees the slot. Idempotent. */
  release(): void {
    if (this.#address !== 0) this.#end(this.#address);
  }

  /** The one release of the slot at `address` (this handle's, not yet
   * released): the handle ends first, so a re-entrant release sees it
   * released; then what no consumer moved is released with the slot. */
  #end(address: number): void {
    this.#address = 0;
    forgetLiveExport(address);
    endHandle(this, this.#registered, this.#token);
    if (this.#code === -1) freeAllocatedSlot(address, this.kind);
    else freeExportSlot(address, this.#code);
  }

  /** What console.log and Bun.inspect print (native/inspect.ts). */
  [inspectCustom](): string { return showExportedArray(this); }

  [Symbol.dispose](): void {
    this.release();
  }
}

/** An exported schema alone. */
export type ExportedSchema = ExportedArray & { readonly kind: "schema" };

/** The protocol methods of an ExportedArray: its structs moved into a
 * capsule. requestedSchema is ignored: the structs are already built. */
function movedCapsule(handle: ExportedArray, method: string, options: unknown): ArrowCapsule {
  checkOptions(options, method === "__arrow_c_schema__" ? [] : ["requestedSchema"], method);
  return new LibraryCapsule(moveExportedArray(handle));
}

/** Moves the structs of an ExportedArray into a new handle (the spec's
 * move: the source is left released) for a capsule. */
function moveExportedArray(source: ExportedArray): ExportedArray {
  if (source.schemaReleased || (source.kind !== "schema" && source.arrayReleased)) {
    throw new ReleasedError(Status.released, "this exported handle's structs were already moved out or released");
  }
  const target = new ExportedArray(source.kind, `protocol ${source.kind}`);
  check(native.abd_schema_move(source.schema, target.schema));
  if (source.kind === "array") check(native.abd_array_move(source.array, target.array));
  if (source.kind === "device_array") check(native.abd_device_array_move(source.array, target.array));
  return target;
}
