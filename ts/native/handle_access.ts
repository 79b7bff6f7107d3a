/**
 * The private reach into the handle classes of this layer. ImportedArray
 * and ImportedStream grant it once, from their static blocks (only code in
 * a class body can touch its private fields and constructor); the readers
 * of this layer use it: batch_source.ts (the converters' one interface)
 * and raw_array.ts. No entry point re-exports this module, and the public
 * classes carry no internal members.
 *
 * A leaf module (types only from the class modules), so that it is
 * evaluated before either class grants its access.
 */
import { addressArg, argumentError, booleanArg } from "../core/args.ts";
import { InternalError, Status } from "../core/errors.ts";
import type { DeferredViews } from "./deferred_views.ts";
import type { PulledBatch } from "./import_snapshot.ts";
import type { ImportedArray } from "./imported_array.ts";
import type { ImportedStream } from "./imported_stream.ts";
import type { NodeSchema } from "./node_schemas.ts";

/** What ImportedArray grants. The readers throw ReleasedError for a
 * disposed handle, as its public members do. */
export type ArrayAccess = {
  /** The private constructor, adopting the import's own reference. */
  adopt(owner: number, transient: boolean, words: Float64Array | null): ImportedArray;
  /** The handle's snapshot: info words, node table, buffer table. */
  words(imported: ImportedArray): Float64Array;
  /** The views made so far, by buffer index. */
  views(imported: ImportedArray): readonly (ArrayBuffer | undefined)[];
  /** Every node's schema fields (decoded on first use). */
  schemas(imported: ImportedArray): NodeSchema[];
  /** Records an object converted from the handle (`noteConverted`). */
  note(imported: ImportedArray, converted: object): void;
  /** The handle's deferred views (`deferHandleViews`). */
  defer(imported: ImportedArray): DeferredViews | null;
};

/** What ImportedStream grants. */
export type StreamAccess = {
  /** `next()` with a transient handle (see batch_source.ts `pullTransient`). */
  pullTransient(stream: ImportedStream): ImportedArray | null;
  /** A pull into a PulledBatch (see batch_source.ts `pullInto`). */
  pullInto(stream: ImportedStream, into: PulledBatch): boolean;
  /** Later background pulls copy to host (see `copyPullsToHost`). */
  copyPullsToHost(stream: ImportedStream): void;
};

/** ImportedArray's access (set when its module is evaluated). */
export let arrayAccess: ArrayAccess;
/** ImportedStream's access (set when its module is evaluated). */
export let streamAccess: StreamAccess;

/** Called once, by ImportedArray's static block. */
export function grantArrayAccess(access: ArrayAccess): void {
  if (arrayAccess !== undefined) throw new InternalError(Status.internal, "ImportedArray's access was granted twice");
  arrayAccess = access;
}

/** Called once, by ImportedStream's static block. */
export function grantStreamAccess(access: StreamAccess): void {
  if (streamAccess !== undefined) throw new InternalError(Status.internal, "ImportedStream's access was granted twice");
  streamAccess = access;
}

/** Set by the arrow layer (`onDisposeEmpty`): makes one converted object
 * refuse reads of the released memory, saying where `site` (an Error made
 * by dispose()) was made (this layer knows no apache-arrow type). */
export let emptyConverted: ((converted: object, site: Error) => void) | null = null;

/** Sets how the arrow layer releases an object converted from a handle
 * when the handle is disposed. */
export function onDisposeEmpty(empty: (converted: object, site: Error) => void): void {
  emptyConverted = empty;
}

/**
 * Adopts one reference to a native owner (a batch pulled from an imported
 * stream or an async consumer); the handle then holds the owner. A
 * `transient` handle holds it natively, without an anchor view: its
 * creator must end it with `dispose()` or `releaseToGC()` (in a finally),
 * as nothing else gives that reference back.
 *
 * A module function, not a member of the public class, because a wrong
 * address would be dereferenced natively. The package's entry points do
 * not export it.
 */
export function adoptImportOwner(owner: number, transient = false): ImportedArray {
  booleanArg("adoptImportOwner", "transient", transient);
  return arrayAccess.adopt(addressArg("adoptImportOwner", "owner", owner), transient, null);
}

/** `adoptImportOwner(owner, true)` for a batch whose snapshot was taken by
 * the pull itself (abd_stream_import_next_snapshot: the import's reference
 * kept as a plain one). The handle keeps `words`. */
export function adoptImportSnapshot(owner: number, words: Float64Array): ImportedArray {
  if (!(words instanceof Float64Array)) throw argumentError("adoptImportSnapshot", "words", "a Float64Array", words);
  return arrayAccess.adopt(addressArg("adoptImportSnapshot", "owner", owner), true, words);
}
