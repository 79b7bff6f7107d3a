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

/**
 * How deep the probe of an import's schema and array looks
 * (zig/validate/probe_policy.zig; docs/validation.md): "roots" proves the
 * two structs' own bytes in one system call and judges them (validation
 * "minimal" and "default"); "tree" probes every node of both trees
 * (validation "full").
 */
export type ProbeDepth = "roots" | "tree";

/** The probe depth an import's `options` ask for: "tree" at validation
 * "full". Reads `options.validation` without judging it (the import's
 * own argument checks do). */
export function probeDepthOf(options: unknown): ProbeDepth {
  return typeof options === "object" && options !== null && (options as { validation?: unknown }).validation === "full" ? "tree" : "roots";
}

/** What `probeImportPair` found: "ok", "roots" (a root failed: probe each
 * with `probeStruct` to say which and why), or a node below a root failed
 * (`side` 0 the schema, 1 the array; the thread's last error says where). */
export type PairVerdict = { result: "ok" } | { result: "roots" } | { result: "deep"; side: 0 | 1; status: number };

/** The probe of the schema and array (or device array) that one import
 * takes from the caller's addresses, to `depth`, in one native call. A 0
 * address is skipped. */
export function probeImportPair(schema: number, arrayKind: "ArrowArray" | "ArrowDeviceArray", array: number, depth: ProbeDepth): PairVerdict {
  const word = native.abd_probe_import(asPointer(schema), ProbeKind[arrayKind], asPointer(array), depth === "tree" ? 1 : 0);
  if (word === 0) return okVerdict;
  if ((word & 0x20000) === 0) return rootsVerdict;
  return { result: "deep", side: (word & 0x10000) !== 0 ? 1 : 0, status: word & 0xffff };
}

const okVerdict: PairVerdict = { result: "ok" };
const rootsVerdict: PairVerdict = { result: "roots" };

/** The typed error of a failed native probe, for `fn`'s `param`. */
export function probeError(fn: string, param: string, status: number): Error {
  return errorFor(status, `${fn}: ${param}: ${lastError()}`);
}

/** abd_probe_pair's flag: the pair is a live export slot of this library. */
const ownExportFlag = 0x100;
