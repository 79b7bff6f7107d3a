/**
 * apache-arrow data to GPU memory and back.
 *
 * `toDevice` exports the data zero-copy to the C Data Interface
 * (arrow/export.ts), then libarrow_device copies every buffer to device
 * memory (zig/device/transfer.zig) and returns an owned ArrowDeviceArray
 * (`device_type` CUDA / ROCM, or their host and managed kinds, `device_id`
 * the ordinal) whose `sync_event` is recorded after the copies. The JS
 * buffers are let go as soon as the copies are done. All driver logic is
 * in Zig; this module only decides what to export.
 *
 * The way back is `ImportedArray.toHost()` (native/imported.ts), which
 * returns an ordinary CPU import; `toHost` here is the same, as a function.
 */
import { Data, RecordBatch, Table, Vector } from "apache-arrow";
import { ExportedArray } from "../native/exported.ts";
import { ImportedArray, type ToHostOptions } from "../native/imported.ts";
import { checkTarget, copyArrayToDevice, type DeviceTarget } from "../device/transfer.ts";
import { argumentError } from "../core/args.ts";
import { arrowArg } from "./arrow_args.ts";
import { exportArray } from "./export.ts";

/** Options of `toDevice`: which runtime and device (see DeviceTarget). */
export type ToDeviceOptions = DeviceTarget;

/**
 * Copies `source` to device memory. A Table gives one device array per
 * batch, each with its own event; anything else gives one.
 *
 * The returned handle owns the device copy: hand `handle.schema` /
 * `handle.array` to a C consumer (which may move them), or `release()` it.
 * Its release (any thread) waits for the copies, frees the device memory
 * and destroys the event. Throws DeviceUnavailableError when the runtime is
 * not available.
 */
export function toDevice(source: Table, options: ToDeviceOptions): ExportedArray<"device_array">[];
/** Copies `source` to device memory as one ArrowDeviceArray (see the
 * Table overload for ownership and errors). */
export function toDevice(source: Data | Vector | RecordBatch, options: ToDeviceOptions): ExportedArray<"device_array">;
export function toDevice(source: Data | Vector | RecordBatch | Table, options: ToDeviceOptions): ExportedArray<"device_array"> | ExportedArray<"device_array">[] {
  arrowArg("toDevice", "source", source, ["Data", "Vector", "RecordBatch", "Table"]);
  checkTarget("toDevice", options, "options");
  if (source instanceof Table) {
    const out: ExportedArray<"device_array">[] = [];
    try {
      for (const batch of source.batches) out.push(toDevice(batch, options));
      return out;
    } catch (error) {
      for (const handle of out) handle.release();
      throw error;
    }
  }
  const host = exportArray(source);
  try {
    return copyArrayToDevice(host.schema, host.array, options);
  } finally {
    host.release(); // frees the slot: its structs were moved into the copy
  }
}

/** `imported.toHost(options)`: device data copied to the host, or
 * host-visible data viewed in place, as a CPU import. */
export function toHost(imported: ImportedArray, options: ToHostOptions = {}): ImportedArray {
  if (!(imported instanceof ImportedArray)) throw argumentError("toHost", "imported", "an ImportedArray", imported);
  return imported.toHost(options);
}
