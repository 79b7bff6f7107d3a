/**
 * `ImportedArray.toHost()`: an import's data as an ordinary CPU import,
 * copied from device memory (zig/c_api_device.zig abd_owner_to_host) or viewed
 * in place when the host can read it.
 */
import { branded } from "../core/abi/pointers.ts";
import { ArrowDeviceArrayLayout, ArrowSchemaLayout } from "../core/abi/layout.ts";
import { asPointer } from "../core/abi/structs.ts";
import { OutOfMemoryError, Status } from "../core/errors.ts";
import { addressArg, argumentError, optionsArg } from "../core/args.ts";
import { check, native } from "../core/ffi/library.ts";
import { loadDeviceRuntime } from "../core/ffi/device_loader.ts";
import type { StructPointer } from "../core/abi/pointers.ts";
import type { ImportedArray } from "./imported_array.ts";

/** Options of `ImportedArray.toHost` (and `toHost`). */
export type ToHostOptions = {
  /** The device stream the copies run on: a raw `CUstream` /
   * `hipStream_t` address, or a `DeviceStream` (anything with its
   * `handle`). Default: the runtime's default stream. The call returns
   * when the copies are done either way. */
  stream?: number | { handle: number };
};

/** `imported.toHost(options)` (see there): the host copy's structs, moved
 * into the handle `take` makes of them (a new ImportedArray, which the
 * caller disposes). Blocks the calling thread. */
export function copyToHost<T>(imported: ImportedArray, options: ToHostOptions, take: (schema: StructPointer<"ArrowSchema">, deviceArray: StructPointer<"ArrowDeviceArray">) => T): T {
  optionsArg("toHost", "options", options, ["stream"]);
  const given = options.stream;
  if (given !== undefined && typeof given !== "number" && !(typeof given === "object" && given !== null && Number.isSafeInteger(given.handle))) {
    throw argumentError("toHost", "options.stream", "a stream handle or a DeviceStream", given);
  }
  if (typeof given === "number") addressArg("toHost", "options.stream", given, true);
  const owner = imported.ownerAddress; // ReleasedError once disposed
  if (!imported.hostReadable) check(loadDeviceRuntime(imported.deviceType));
  const stream = typeof given === "number" ? given : given?.handle ?? 0;
  // Schema then device array, in one native slot, moved into the result.
  const slot = native.abd_alloc_zeroed(ArrowSchemaLayout.size + ArrowDeviceArrayLayout.size);
  if (!slot) throw new OutOfMemoryError(Status.out_of_memory, "out of memory allocating a host copy slot");
  const arrayAt = slot + ArrowSchemaLayout.size;
  try {
    check(native.abd_owner_to_host(asPointer(owner), asPointer(stream), asPointer(slot), asPointer(arrayAt)));
    return take(branded(slot), branded(arrayAt));
  } finally {
    native.abd_free(asPointer(slot));
  }
}
