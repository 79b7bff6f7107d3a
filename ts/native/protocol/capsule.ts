/**
 * This library's capsules (docs/protocol.md): a kind tag plus the struct
 * addresses of an ExportedArray or ExportedStream handle.
 *
 * Ownership: the capsule owns its handle. A consumer moves the structs out
 * (then their release is NULL here) and disposes the capsule; disposing
 * releases what nobody moved and frees the slot, once. A capsule dropped
 * without dispose is released by the handle's FinalizationRegistry, as a
 * PyCapsule's destructor would (see native/native_slot.ts).
 */
import { argumentError } from "../../core/args.ts";
import type { ExportedArray } from "../exported.ts";
import type { ExportedStream } from "../exported_stream.ts";
import { isHandle } from "../handle_access.ts";
import type { ArrowCapsule, CapsuleKind } from "./symbols.ts";

function isExportedStream(handle: ExportedArray | ExportedStream): handle is ExportedStream {
  return handle.kind === "stream" || handle.kind === "device_stream";
}

/** A capsule over one of this library's export handles. */
export class LibraryCapsule implements ArrowCapsule {
  /** What the capsule holds (the PyCapsule name). */
  readonly kind: CapsuleKind;
  #handle: ExportedArray | ExportedStream;

  /** Takes ownership of `handle` (filled, not yet moved out). */
  constructor(handle: ExportedArray | ExportedStream) {
    if (!(isHandle("ExportedArray", handle) || isHandle("ExportedStream", handle))) {
      throw argumentError("LibraryCapsule", "handle", "an ExportedArray or ExportedStream (made by the protocol methods)", handle);
    }
    this.#handle = handle;
    if (isExportedStream(handle)) this.kind = handle.kind === "stream" ? "arrow_array_stream" : "arrow_device_array_stream";
    else this.kind = handle.kind === "schema" ? "arrow_schema" : handle.kind === "array" ? "arrow_array" : "arrow_device_array";
  }

  /** `struct ArrowSchema*` (schema and array kinds). */
  get schema(): number | undefined {
    const handle = this.#handle;
    return isExportedStream(handle) ? undefined : Number(handle.schema);
  }

  /** `struct ArrowArray*` ("arrow_array"). */
  get array(): number | undefined {
    return this.kind === "arrow_array" ? Number((this.#handle as ExportedArray).array) : undefined;
  }

  /** `struct ArrowDeviceArray*` ("arrow_device_array"). */
  get deviceArray(): number | undefined {
    return this.kind === "arrow_device_array" ? Number((this.#handle as ExportedArray).array) : undefined;
  }

  /** `struct ArrowArrayStream*` / `struct ArrowDeviceArrayStream*` (stream kinds). */
  get stream(): number | undefined {
    const handle = this.#handle;
    return isExportedStream(handle) ? Number(handle.stream) : undefined;
  }

  /** True once disposed (the addresses are then invalid). */
  get released(): boolean {
    return this.#handle.released;
  }

  /** Releases what no consumer moved out and frees the memory. Idempotent. */
  [Symbol.dispose](): void {
    this.#handle.release();
  }
}
