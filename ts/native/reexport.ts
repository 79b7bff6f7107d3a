/**
 * Re-export and relays: imported data handed on to C consumers as new
 * ArrowSchema + ArrowDeviceArray (or ArrowArray) structs, without apache-arrow
 * and without copying or reading the data (zig/import/reexport.zig).
 *
 * Ownership. Each re-export is an `ExportedArray` handle whose array tree
 * holds one reference to the native owner; the schema tree is a copy. A
 * consumer moves the structs out and releases them whenever it likes, from
 * any thread, in any order with other re-exports, handles and views; the
 * producer's release runs once, after the last of them. Disposing the
 * ImportedArray the re-export came from does not end the re-export.
 */
import { type Pointer } from "bun:ffi";
import { validationLevelArg, type ValidationLevelName } from "../core/abi/layout.ts";
import { asPointer } from "../core/abi/structs.ts";
import { addressArg, argumentError, oneOfArg, optionsArg } from "../core/args.ts";
import { check, native } from "../core/ffi/library.ts";
import { ExportedArray } from "./exported.ts";
import { encodeRequest, selectionArg, type Selection, type Window } from "./selection.ts";
import { probeDepthOf } from "../core/abi/probe.ts";
import { takeStructs, type StructRef } from "./c_structs.ts";

/** Options of `reexport` (and `ImportedArray.reexport`): what to hand on,
 * and as which struct. */
export type ReexportOptions = Selection & {
  /** "device_array" (default): an ArrowDeviceArray keeping the producer's
   * device_type, device_id and sync_event. "array": a plain ArrowArray,
   * only for memory the host can read. */
  as?: "device_array" | "array";
};

/** What a re-export needs from its source (an ImportedArray). */
export type ReexportSource = { readonly ownerAddress: number; readonly window: Window | null };

/** Re-exports `options`' selection of `source`. Throws the library's typed
 * errors (OutOfRangeError for a child or slice out of range, ...); nothing
 * is retained then. */
export function reexport(source: ReexportSource, options?: ReexportOptions & { as?: "device_array" }): ExportedArray<"device_array">;
/** `reexport` as ArrowSchema + ArrowArray (`{ as: "array" }`). */
export function reexport(source: ReexportSource, options: ReexportOptions & { as: "array" }): ExportedArray<"array">;
/** `reexport` with the kind known only at run time. */
export function reexport(source: ReexportSource, options?: ReexportOptions): ExportedArray<"array" | "device_array">;
export function reexport(source: ReexportSource, options: ReexportOptions = {}): ExportedArray<"array" | "device_array"> {
  if (typeof source !== "object" || source === null || !("ownerAddress" in source)) {
    throw argumentError("reexport", "source", "an ImportedArray", source);
  }
  const owner = addressArg("reexport", "source.ownerAddress", source.ownerAddress); // throws ReleasedError once disposed
  optionsArg("reexport", "options", options, ["as", "child", "dictionary", "slice", "shape"]);
  const as = oneOfArg("reexport", "options.as", options.as ?? "device_array", ["device_array", "array"]);
  selectionArg("reexport", options);
  const request = encodeRequest(source.window, options);
  const exported = new ExportedArray(as, `re-exported ${as === "array" ? "ArrowArray" : "ArrowDeviceArray"}`);
  const write = as === "array" ? native.abd_owner_reexport_array : native.abd_owner_reexport;
  const status = write(owner as Pointer, request, request.length, exported.schema, exported.array);
  if (status !== 0) {
    exported.release(); // an empty slot: nothing to release but the slot
    check(status);
  }
  return exported;
}

/** Options of `relay` and `relayArray`. */
export type RelayOptions = {
  /** Validation of the producer's structs (default "default"); device memory
   * is never read whatever the level. */
  validation?: ValidationLevelName;
};


/**
 * Moves a producer's `ArrowSchema*` + `ArrowDeviceArray*` through this
 * library to a consumer, unconverted: the returned handle's `schema` and
 * `array` are new structs over the same buffers (any type, any device; the
 * data is never read). Releasing them runs the producer's release. The
 * inputs are moved (left released) even when this throws.
 */
export function relay(schema: StructRef<"ArrowSchema"> | null, deviceArray: StructRef<"ArrowDeviceArray"> | null, options: RelayOptions = {}): ExportedArray<"device_array"> {
  return relayInto("relay", "device_array", schema, deviceArray, options);
}

/** Like `relay` for a plain `ArrowArray*` (CPU memory), out as one too. */
export function relayArray(schema: StructRef<"ArrowSchema"> | null, array: StructRef<"ArrowArray"> | null, options: RelayOptions = {}): ExportedArray<"array"> {
  return relayInto("relayArray", "array", schema, array, options);
}

function relayInto<K extends "device_array" | "array">(fn: string, kind: K, schemaRef: unknown, arrayRef: unknown, options: RelayOptions): ExportedArray<K> {
  const arrayParam = kind === "array" ? "array" : "deviceArray";
  let level = 0;
  const [schema, array] = takeStructs(fn, [["schema", schemaRef, "ArrowSchema"], [arrayParam, arrayRef, kind === "array" ? "ArrowArray" : "ArrowDeviceArray"]], () => {
    level = validationLevelArg(fn, options);
  }, probeDepthOf(options)).map(asPointer);
  const exported = new ExportedArray(kind, `relayed ${kind === "array" ? "ArrowArray" : "ArrowDeviceArray"}`);
  const move = kind === "array" ? native.abd_relay_array : native.abd_relay_device_array;
  const status = move(schema as Pointer, array as Pointer, level, exported.schema, exported.array);
  if (status !== 0) {
    exported.release();
    check(status);
  }
  return exported;
}
