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
import { toArrayBuffer } from "bun:ffi";
import { ArrowArrayStreamLayout, ArrowDeviceArrayStreamLayout } from "../../core/abi/layout.ts";
import { ReleasedError, Status } from "../../core/errors.ts";
import { argumentError } from "../../core/args.ts";
import { check, native } from "../../core/ffi/library.ts";
import { ExportedArray } from "../exported.ts";
import { ExportedStream } from "../exported_stream.ts";
import type { ArrowCapsule, CapsuleKind } from "./symbols.ts";

/** A capsule over one of this library's export handles. */
export class LibraryCapsule implements ArrowCapsule {
  /** What the capsule holds (the PyCapsule name). */
  readonly kind: CapsuleKind;
  #handle: ExportedArray | ExportedStream;

  /** Takes ownership of `handle` (filled, not yet moved out). */
  constructor(handle: ExportedArray | ExportedStream) {
    if (!(handle instanceof ExportedArray || handle instanceof ExportedStream)) {
      throw argumentError("LibraryCapsule", "handle", "an ExportedArray or ExportedStream (made by the protocol methods)", handle);
    }
    this.#handle = handle;
    if (handle instanceof ExportedStream) this.kind = handle.kind === "stream" ? "arrow_array_stream" : "arrow_device_array_stream";
    else this.kind = handle.kind === "schema" ? "arrow_schema" : handle.kind === "array" ? "arrow_array" : "arrow_device_array";
  }

  /** `struct ArrowSchema*` (schema and array kinds). */
  get schema(): number | undefined {
    const handle = this.#handle;
    return handle instanceof ExportedArray ? Number(handle.schema) : undefined;
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
    return handle instanceof ExportedStream ? Number(handle.stream) : undefined;
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

/** Moves the structs of an ExportedArray into a new handle (the spec's
 * move: the source is left released) for a capsule. */
export function moveExportedArray(source: ExportedArray): ExportedArray {
  if (source.schemaReleased || (source.kind !== "schema" && source.arrayReleased)) {
    throw new ReleasedError(Status.released, "this exported handle's structs were already moved out or released");
  }
  const target = new ExportedArray(source.kind, `protocol ${source.kind}`);
  check(native.abd_schema_move(source.schema, target.schema));
  if (source.kind === "array") check(native.abd_array_move(source.array, target.array));
  if (source.kind === "device_array") check(native.abd_device_array_move(source.array, target.array));
  return target;
}

/** Moves the stream of an ExportedStream into a new handle. */
export function moveExportedStream(source: ExportedStream): ExportedStream {
  if (source.streamReleased) throw new ReleasedError(Status.released, "this exported stream was already moved out or released");
  const target = new ExportedStream(source.kind, `protocol ${source.kind}`);
  const layout = source.kind === "stream" ? ArrowArrayStreamLayout : ArrowDeviceArrayStreamLayout;
  const from = new Uint8Array(toArrayBuffer(source.stream, 0, layout.size));
  new Uint8Array(toArrayBuffer(target.stream, 0, layout.size)).set(from);
  new DataView(from.buffer).setBigUint64(layout.fields.release, 0n, true);
  return target;
}


