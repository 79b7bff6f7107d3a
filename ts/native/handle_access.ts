/**
 * The private reach into the handle classes of this layer. ImportedArray
 * and ImportedStream grant it once, from their static blocks (only code in
 * a class body can touch its private fields and constructor), and every
 * handle class its brand check (`isHandle`); the readers of this layer use
 * it: batch_source.ts (the converters' one interface), handle_reads.ts,
 * import_structs.ts and the capsule. No entry point re-exports this
 * module, and the public classes carry no internal members.
 *
 * A leaf module (types only from the class modules): each class module
 * imports it, so it is evaluated before any class grants. What it hands
 * out needs no order beyond that: the readers take a handle, which exists
 * only once its class granted; a brand check before its class is loaded
 * answers false, as no such handle exists yet; and the one reader that
 * takes no handle (`adopt`) is called from modules that import the class.
 */
import { InternalError, Status } from "../core/errors.ts";
import type { DeferredViews } from "./deferred_views.ts";
import type { PulledBatch } from "./import_snapshot.ts";
import type { ImportedArray } from "./imported_array.ts";
import type { ImportedStream } from "./imported_stream.ts";
import type { NodeSchema } from "./node_schemas.ts";

/** Makes one converted object refuse reads of the released memory,
 * saying where `site` (an Error made by dispose()) was made. */
export type EmptyConverted = (converted: object, site: Error) => void;

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
  /** Records an object converted from the handle and how `dispose()`
   * empties it (`noteConverted`). */
  note(imported: ImportedArray, converted: object, empty: EmptyConverted): void;
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

/** The handle classes whose instances `isHandle` recognizes. */
export type HandleClass = "ImportedArray" | "ExportedArray" | "ExportedStream";

const brands: Partial<Record<HandleClass, (value: unknown) => boolean>> = {};

/** Called once per class, by its static block: `is` is its brand check
 * (a private-field test: true for its instances only). */
export function grantBrand(name: HandleClass, is: (value: unknown) => boolean): void {
  if (brands[name] !== undefined) throw new InternalError(Status.internal, `${name}'s brand was granted twice`);
  brands[name] = is;
}

/** Whether `value` is an instance of the class `name` (false for
 * anything else, and for every value while that class is not loaded). */
export function isHandle(name: HandleClass, value: unknown): boolean {
  return typeof value === "object" && value !== null && (brands[name]?.(value) ?? false);
}
