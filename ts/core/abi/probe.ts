/**
 * Fault-safe checks of C structs named by address (zig/validate/probe.zig), run
 * before anything reads them: an address from JS may name the wrong
 * struct, a released one, random bytes or no memory at all, and reading
 * such memory directly would take the process down. The native probe
 * copies the bytes through the kernel and judges the copy.
 */
import { errorFor } from "../errors.ts";
import { lastError, native } from "../ffi/library.ts";
import { asPointer } from "./structs.ts";

/** The structs the probe knows (the numbers are the C API's). */
export const ProbeKind = {
  ArrowSchema: 0,
  ArrowArray: 1,
  ArrowDeviceArray: 2,
  ArrowArrayStream: 3,
  ArrowDeviceArrayStream: 4,
  ArrowAsyncDeviceStreamHandler: 5,
} as const;
export type ProbeKindName = keyof typeof ProbeKind;

/**
 * Throws the typed error when `address` does not name a `kind` struct
 * that is safe to read: InvalidArgumentError (unreadable memory, a
 * malformed or swapped struct, saying which), or ReleasedError for a
 * released struct when `live`. A view or destination (`live` false) may be
 * released, but must be writable. `live` "owned": a live struct the call
 * moves in, so owns even when it refuses it: a refused one whose bytes
 * are readable, that looks like no other kind of struct and whose release
 * callback is code is released before the throw (docs/validation.md,
 * "The address probe"); any other is left untouched. The message starts
 * with `fn: param`.
 */
export function probeStruct(fn: string, param: string, kind: ProbeKindName, address: number, live: boolean | "owned"): void {
  const status = native.abd_probe_struct(ProbeKind[kind], asPointer(address), live === "owned" ? 2 : live ? 0 : 1);
  if (status !== 0) throw errorFor(status, `${fn}: ${param}: ${lastError()}`);
}

/**
 * True when the live schema and array (or device array) that one import
 * takes both pass the probe, checked in one native call (their memory is
 * proven together). False when either fails: `probeStruct` on each then
 * says which, and why. A 0 address is skipped. `ownExport`: both are the
 * structs of a live export slot of this library (memory it allocated and
 * trees it built), read directly: only their release is looked at.
 */
export function probePairPasses(schema: number, arrayKind: "ArrowArray" | "ArrowDeviceArray", array: number, ownExport = false): boolean {
  return native.abd_probe_pair(asPointer(schema), ProbeKind[arrayKind] | (ownExport ? ownExportFlag : 0), asPointer(array)) === 0;
}

/** abd_probe_pair's flag: the pair is a live export slot of this library. */
const ownExportFlag = 0x100;
