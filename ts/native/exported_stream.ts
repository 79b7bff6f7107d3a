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
import { branded, type StructPointer } from "../core/abi/pointers.ts";
import { read, toArrayBuffer, type Pointer } from "bun:ffi";
import { ArrowArrayStreamLayout, ArrowDeviceArrayStreamLayout } from "../core/abi/layout.ts";
import { native } from "../core/ffi/library.ts";
import { ReleasedError, Status } from "../core/errors.ts";
import { NativeSlot } from "./native_slot.ts";
import { grantBrand } from "./handle_access.ts";
import { LibraryCapsule } from "./protocol/capsule.ts";
import { ArrowCDeviceStream, ArrowCStream, checkOptions, type ArrowCapsule, type ProtocolOptions } from "./protocol/symbols.ts";
import { oneOfArg, stringArg } from "../core/args.ts";
import { inspectCustom } from "./inspect.ts";
import { showExportedStream } from "./inspect_handles.ts";

/** "stream": struct ArrowArrayStream; "device_stream": struct
 * ArrowDeviceArrayStream. */
export type StreamKind = "stream" | "device_stream";

const slotBytes = Math.max(ArrowArrayStreamLayout.size, ArrowDeviceArrayStreamLayout.size);

function releaseOffset(kind: StreamKind): number {
  return kind === "device_stream" ? ArrowDeviceArrayStreamLayout.fields.release : ArrowArrayStreamLayout.fields.release;
}

/** Call the stream's release at `address` unless it is released. */
function releaseArrayStreamAt(address: number): void {
  native.abd_array_stream_release(address as Pointer);
}

function releaseDeviceStreamAt(address: number): void {
  native.abd_device_array_stream_release(address as Pointer);
}

/** One ArrowArrayStream or ArrowDeviceArrayStream this library fills, in a
 * native slot at a stable address (`stream`); see the module comment for
 * who owns it when. */
export class ExportedStream<K extends StreamKind = StreamKind> implements Disposable {

  /** Protocol (docs/protocol.md): an "arrow_array_stream" capsule (kind "stream"); undefined for the other kind. */
  get [ArrowCStream](): ((options?: ProtocolOptions) => ArrowCapsule) | undefined { return this.kind === "stream" ? (options) => movedCapsule(this, "__arrow_c_stream__", options) : undefined; }
  /** Protocol (docs/protocol.md): an "arrow_device_array_stream" capsule (kind "device_stream"); undefined for the other kind. */
  get [ArrowCDeviceStream](): ((options?: ProtocolOptions) => ArrowCapsule) | undefined { return this.kind === "device_stream" ? (options) => movedCapsule(this, "__arrow_c_device_stream__", options) : undefined; }
  #slot: NativeSlot;

  static {
    grantBrand("ExportedStream", (value) => #slot in (value as object));
  }

  /** Allocates an empty (released) slot; the producer fills it. */
  constructor(readonly kind: K, label = `exported ${kind === "stream" ? "ArrowArrayStream" : "ArrowDeviceArrayStream"}`) {
    oneOfArg("ExportedStream", "kind", kind, ["stream", "device_stream"]);
    stringArg("ExportedStream", "label", label);
    this.#slot = new NativeSlot(slotBytes, label, kind === "stream" ? releaseArrayStreamAt : releaseDeviceStreamAt);
  }

  /** `struct ArrowArrayStream*` (kind "stream") or `struct
   * ArrowDeviceArrayStream*` (kind "device_stream") for C. Valid until
   * `release()`. */
  get stream(): StructPointer<K extends "stream" ? "ArrowArrayStream" : "ArrowDeviceArrayStream"> {
    return branded(this.#slot.address);
  }

  /** True once a consumer moved the stream out, or it was released. */
  get streamReleased(): boolean {
    if (this.#slot.released) return true;
    return read.ptr(this.stream, releaseOffset(this.kind)) === 0;
  }

  /** True once `release()` ran: the stream address is no longer valid. */
  get released(): boolean {
    return this.#slot.released;
  }

  /** Releases the stream unless a consumer moved it, and frees the slot.
   * Idempotent. */
  release(): void {
    this.#slot.release();
  }

  /** What console.log and Bun.inspect print (native/inspect.ts). */
  [inspectCustom](): string { return showExportedStream(this); }

  [Symbol.dispose](): void {
    this.release();
  }
}

/** The protocol methods of an ExportedStream: its stream moved into a
 * capsule. requestedSchema is ignored: the stream is already built. */
function movedCapsule(handle: ExportedStream, method: string, options: unknown): ArrowCapsule {
  checkOptions(options, ["requestedSchema"], method);
  return new LibraryCapsule(moveExportedStream(handle));
}

/** Moves the stream of an ExportedStream into a new handle. */
function moveExportedStream(source: ExportedStream): ExportedStream {
  if (source.streamReleased) throw new ReleasedError(Status.released, "this exported stream was already moved out or released");
  const target = new ExportedStream(source.kind, `protocol ${source.kind}`);
  const layout = source.kind === "stream" ? ArrowArrayStreamLayout : ArrowDeviceArrayStreamLayout;
  const from = new Uint8Array(toArrayBuffer(source.stream, 0, layout.size));
  new Uint8Array(toArrayBuffer(target.stream, 0, layout.size)).set(from);
  new DataView(from.buffer).setBigUint64(layout.fields.release, 0n, true);
  return target;
}
