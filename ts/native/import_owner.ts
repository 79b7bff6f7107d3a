/**
 * The imports of one array into a native owner (zig/c_api_import.zig
 * abd_import_array, abd_import_device_array): the producer's structs are
 * moved in and validated, and the owner's address comes back holding the
 * import's reference, which the new handle adopts (ImportedArray, or
 * import_structs.ts for the callers outside the class).
 */
import { ValidationLevel, validationLevelArg, type ValidationLevelName } from "../core/abi/layout.ts";
import { asPointer } from "../core/abi/structs.ts";
import { probeDepthOf } from "../core/abi/probe.ts";
import { check, native } from "../core/ffi/library.ts";
import { takePair, takenPair, takeStructs, type StructRef } from "./c_structs.ts";
import { withArrayCapsule } from "./protocol/consume.ts";
import type { ArrayProducer, ArrowCapsule } from "./protocol/symbols.ts";
import { nativeArray } from "../core/ffi/native_arrays.ts";

/** Options of the imports (`ImportedArray.fromDeviceArray`, ...). */
export type ImportOptions = {
  /** Validation level (nanoarrow's levels); "default" never reads out of
   * bounds. */
  validation?: ValidationLevelName;
};

/** Takes the array of any protocol producer or array capsule
 * (docs/protocol.md), preferring its device method. */
export function ownerFromProducer(fn: string, source: ArrayProducer | ArrowCapsule, options: ImportOptions = {}): number {
  // Checked before the producer is asked for anything: nothing to release yet.
  validationLevelArg(fn, options);
  return withArrayCapsule(source, ({ schema, array, device }) => device
    ? ownerOfDeviceStructs(schema, array, options)
    : ownerOfStructs(schema, array, options));
}

/** The level good import `options` ask for (undefined: "default"); -1
 * for bad ones, which the general path then reports. */
function goodLevel(fn: string, options: ImportOptions | undefined): number {
  if (options === undefined) return ValidationLevel.default;
  try {
    return validationLevelArg(fn, options);
  } catch {
    return -1;
  }
}

/** Moves `schema` + `deviceArray` in; the caller's structs are left
 * released, whether or not this succeeds. */
export function ownerOfDeviceStructs(schema: StructRef<"ArrowSchema"> | number | null, deviceArray: StructRef<"ArrowDeviceArray"> | number | null, options: ImportOptions | undefined): number {
  const fn = "ImportedArray.fromDeviceArray";
  const good = goodLevel(fn, options);
  if (good >= 0 && takePair(schema, deviceArray, "ArrowDeviceArray", probeDepthOf(options))) return ownerOfTaken("device_array", takenPair.schema, takenPair.array, good);
  let level = 0;
  const [s, a] = takeStructs(fn, [["schema", schema, "ArrowSchema"], ["deviceArray", deviceArray, "ArrowDeviceArray"]], () => {
    level = validationLevelArg(fn, options);
  }, probeDepthOf(options));
  return ownerOfTaken("device_array", s, a, level);
}

/** Moves `schema` + `array` (a CPU array) in, as `ownerOfDeviceStructs`. */
export function ownerOfStructs(schema: StructRef<"ArrowSchema"> | number | null, array: StructRef<"ArrowArray"> | number | null, options: ImportOptions | undefined): number {
  const fn = "ImportedArray.fromArray";
  const good = goodLevel(fn, options);
  if (good >= 0 && takePair(schema, array, "ArrowArray", probeDepthOf(options))) return ownerOfTaken("array", takenPair.schema, takenPair.array, good);
  let level = 0;
  const [s, a] = takeStructs(fn, [["schema", schema, "ArrowSchema"], ["array", array, "ArrowArray"]], () => {
    level = validationLevelArg(fn, options);
  }, probeDepthOf(options));
  return ownerOfTaken("array", s, a, level);
}

const out = nativeArray(BigUint64Array, 1);

/**
 * Moves in a schema and array that are already checked (`takeStructs`)
 * or that a C producer filled in inside the library (a Python producer's
 * capsule moved by the shim): no address probe, the producer's word
 * (docs/validation.md). `level` is a checked validation level
 * (validationLevelArg). The structs are left released, success or not.
 */
export function ownerOfTaken(kind: "array" | "device_array", schema: number, array: number, level: number): number {
  const status = kind === "array"
    ? native.abd_import_array(asPointer(schema), asPointer(array), level, out)
    : native.abd_import_device_array(asPointer(schema), asPointer(array), level, out);
  check(status);
  return Number(out[0]);
}
