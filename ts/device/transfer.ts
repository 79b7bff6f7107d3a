/**
 * Arrow arrays between host and device, at the C-struct level (no
 * apache-arrow here; arrow/device.ts adds it):
 *
 * - `copyArrayToDevice(schema, array, target)` moves in any host
 *   ArrowSchema + ArrowDeviceArray (CPU, or host-visible device memory)
 *   and returns an owned device array: every buffer copied into one
 *   allocation, `sync_event` pointing to an event recorded after the
 *   copies. Its release frees the device memory and destroys the event.
 * - `ImportedArray.toHost()` (native/imported.ts) goes the other way.
 *
 * Lifetimes: the returned `ExportedArray` owns the device copy until a
 * consumer moves it out or `release()` runs; the release may run on any
 * thread and waits for the copies first. The host source is released once
 * the copies are done (CPU sources) or with the device array (others).
 */
import { type MemoryKindName } from "../core/abi/layout.ts";
import { asPointer } from "../core/abi/structs.ts";
import { InvalidArgumentError, Status, errorFor } from "../core/errors.ts";
import { lastError, native } from "../core/ffi/library.ts";
import { ExportedArray } from "../native/exported.ts";
import { drainReleased } from "../native/keepalive.ts";
import { deviceKindNames, kindEntry } from "../core/ffi/device_loader.ts";
import { DeviceStream, deviceRuntime, ordinalArg, type DeviceKind } from "./runtime.ts";
import { addressArg, oneOfArg, optionsArg } from "../core/args.ts";
import { takeStructs, type StructRef } from "../native/c_structs.ts";

/** Where `copyArrayToDevice` / `toDevice` put the copy. */
export type DeviceTarget = {
  /** Which runtime. */
  device: DeviceKind;
  /** Device ordinal (default 0): the array's `device_id`. */
  id?: number;
  /** Device memory (default), pinned host memory or managed memory: the
   * array's device_type is the runtime's type for it (docs/devices.md). */
  memory?: MemoryKindName;
  /** Stream the copies and the event go on (a DeviceStream, or a raw
   * CUstream / hipStream_t handle); default: the default stream. */
  stream?: DeviceStream | number;
};

/** The Arrow device type of `memory` on runtime `device` (its device,
 * pinned or managed type, as the library's table of device kinds says):
 * the inverse of `kindOfDeviceType`. */
export function targetDeviceType(device: DeviceKind, memory: MemoryKindName = "device"): number {
  const entry = kindEntry(oneOfArg("targetDeviceType", "device", device, deviceKindNames))!;
  oneOfArg("targetDeviceType", "memory", memory, ["device", "pinned", "managed"]);
  if (memory === "device") return entry.deviceType;
  if (memory === "pinned") return entry.hostType;
  if (entry.managedType === null) throw new InvalidArgumentError(Status.invalid_argument, `${entry.label} managed memory has no Arrow device type; use "device" or "pinned"`);
  return entry.managedType;
}

/** Checks a DeviceTarget for `fn`: a plain object with a known runtime,
 * an int32 ordinal, a memory kind and a stream. */
export function checkTarget(fn: string, target: DeviceTarget, param = "target", extraKeys: readonly string[] = []): void {
  optionsArg(fn, param, target, ["device", "id", "memory", "stream", ...extraKeys], true);
  oneOfArg(fn, `${param}.device`, target.device, deviceKindNames);
  if (target.id !== undefined) ordinalArg(fn, `${param}.id`, target.id);
  if (target.memory !== undefined) oneOfArg(fn, `${param}.memory`, target.memory, ["device", "pinned", "managed"]);
  if (target.stream !== undefined && typeof target.stream === "number") addressArg(fn, `${param}.stream`, target.stream, true);
}

function streamHandle(device: DeviceKind, stream: DeviceStream | number | undefined): number {
  if (stream === undefined) return 0;
  if (typeof stream === "number") return stream;
  if (!(stream instanceof DeviceStream)) throw new InvalidArgumentError(Status.invalid_argument, "stream must be a DeviceStream or a raw stream handle");
  if (stream.runtime.kind !== device) throw new InvalidArgumentError(Status.invalid_argument, `stream belongs to ${stream.runtime.kind}, not ${device}`);
  return stream.handle;
}

/**
 * Moves the host array `schema` + `array` (C `ArrowSchema*`,
 * `ArrowDeviceArray*`; left released, success or not) to `target` and
 * returns the owned device copy. Loads the runtime if needed (throws
 * DeviceUnavailableError when it is not available).
 */
export function copyArrayToDevice(schemaRef: StructRef<"ArrowSchema">, arrayRef: StructRef<"ArrowDeviceArray">, target: DeviceTarget): ExportedArray<"device_array"> {
  const fn = "copyArrayToDevice";
  let deviceType = 0;
  let stream = 0;
  // The input is consumed whatever happens, as promised.
  const [schema, array] = takeStructs(fn, [["schema", schemaRef, "ArrowSchema"], ["array", arrayRef, "ArrowDeviceArray"]], () => {
    checkTarget(fn, target);
    deviceType = targetDeviceType(target.device, target.memory);
    stream = streamHandle(target.device, target.stream);
    deviceRuntime(target.device); // loads it with the path from the environment
  });
  const out = new ExportedArray("device_array", `${target.device} ArrowDeviceArray`);
  const status = native.abd_device_array_to_device(asPointer(schema), asPointer(array), deviceType, target.id ?? 0, asPointer(stream), out.schema, out.array);
  if (status !== 0) {
    const error = errorFor(status, lastError());
    out.release();
    throw error;
  }
  drainReleased();
  return out;
}
