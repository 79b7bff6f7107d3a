/**
 * The library's built-in native consumer (zig/import/consumer.zig), exposed for
 * demos, tests and users who want to check what they export: it moves the
 * structs in, validates them, reports every buffer's address, size and
 * FNV-1a checksum as C sees them, and calls release.
 */
import { validationLevelArg, type ValidationLevelName } from "../../ts/core/abi/layout.ts";
import { asPointer } from "../../ts/core/abi/structs.ts";
import { argumentError } from "../../ts/core/args.ts";
import { check, native } from "../../ts/core/ffi/library.ts";
import { drainReleased } from "../../ts/native/keepalive.ts";
import { takeStructs, type StructRef } from "../../ts/native/c_structs.ts";

/** One buffer as the native consumer saw it: its address, its size in
 * bytes and its FNV-1a checksum (-1 when the host cannot read it). */
export type NativeBufferReport = { address: number; size: number; checksum: number };

/** Room for 16,384 buffers; the consumer fails with OutOfRangeError (after
 * releasing the data) for larger trees. */
const report = new Float64Array(1 + 3 * 16384);

/** Consumes (moves in, validates, checksums, releases) the given structs.
 * Checksums are -1 for memory the host cannot read. */
export function consumeNatively(schema: StructRef<"ArrowSchema">, deviceArray: StructRef<"ArrowDeviceArray">, validation: ValidationLevelName = "full"): NativeBufferReport[] {
  let level = 0;
  // Taken (released) even when an argument is bad.
  const [schemaAddress, arrayAddress] = takeStructs("consumeNatively", [["schema", schema, "ArrowSchema"], ["deviceArray", deviceArray, "ArrowDeviceArray"]], () => {
    level = validationLevelArg("consumeNatively", { validation });
  }).map(asPointer);
  const status = native.abd_consume_device_array(schemaAddress, arrayAddress, level, report, report.length);
  drainReleased();
  check(status);
  const n = report[0];
  return Array.from({ length: n }, (_, i) => ({ address: report[1 + 3 * i], size: report[2 + 3 * i], checksum: report[3 + 3 * i] }));
}

/** FNV-1a 32-bit, the checksum the native consumer reports. */
export function fnv1a32(bytes: Uint8Array): number {
  if (!(bytes instanceof Uint8Array)) throw argumentError("fnv1a32", "bytes", "a Uint8Array", bytes);
  let hash = 0x811c9dc5;
  for (let i = 0; i < bytes.length; i++) {
    hash ^= bytes[i];
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}
