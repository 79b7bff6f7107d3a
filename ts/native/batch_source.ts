/**
 * The one interface through which the converters (ts/arrow) build batches
 * from what this layer imported: the tables and views of an ImportedArray,
 * the pulls of an ImportedStream that skip the handle, the views of a
 * pulled batch made now or on first use, and the hooks that tie converted
 * objects to their handle's lifetime. Module functions over the handles,
 * through the access the classes grant (handle_access.ts), so that the
 * public classes carry no internal members. No entry point re-exports it.
 */
import { nodeStride, ownerInfoWords, OwnerInfoWord } from "../core/abi/layout.ts";
import { argumentError } from "../core/args.ts";
import type { DeferredViews } from "./deferred_views.ts";
import { arrayAccess, streamAccess, type EmptyConverted } from "./handle_access.ts";
import type { PulledBatch } from "./import_snapshot.ts";
import type { ImportedArray } from "./imported_array.ts";
import type { ImportedStream } from "./imported_stream.ts";
import { ownerSchemaKey, ownerSchemaMatches, type NodeSchema } from "./node_schemas.ts";

export { DeferredViews, pulledViews } from "./deferred_views.ts";
export { adoptImportSnapshot } from "./import_structs.ts";
export { bufferWordOf, nodeSchemaOf, nodeWordOf } from "./handle_reads.ts";
export { type EmptyConverted } from "./handle_access.ts";
export { pulledBatch, releasePulled, type PulledBatch } from "./import_snapshot.ts";
export { type NodeSchema } from "./node_schemas.ts";

/** The handle's copy of the owner's tables, for readers that walk many
 * nodes: node n's word w is at `words[nodesAt + n * nodeStride + w]`,
 * buffer b's at `words[buffersAt + b * bufferStride + w]`. Read-only.
 * ReleasedError once the handle is disposed. */
export function handleTables(imported: ImportedArray): { words: Float64Array; nodesAt: number; buffersAt: number } {
  const words = arrayAccess.words(imported);
  return { words, nodesAt: ownerInfoWords, buffersAt: ownerInfoWords + words[OwnerInfoWord.node_count] * nodeStride };
}

/** The views the handle made so far, by buffer index (after
 * `prefetchAll()`: every buffer with a size, an address and bytes;
 * undefined for the others). Read-only. */
export function handleViews(imported: ImportedArray): readonly (ArrayBuffer | undefined)[] {
  return arrayAccess.views(imported);
}




/** The handle's schema key (node_schemas.ts `ownerSchemaKey`): a view of
 * a scratch buffer, valid until the next call; null for a schema with a
 * dictionary-encoded node. */
export function schemaKeyOf(imported: ImportedArray): Int32Array | null {
  return ownerSchemaKey(imported.ownerAddress);
}

/** Whether `key` (a copy of an earlier `schemaKeyOf`) is the handle's
 * schema key: "same", "different", or "none" (no key). */
export function schemaMatchesKey(imported: ImportedArray, key: Int32Array): "same" | "different" | "none" {
  // The native side reads `key`: checked before the call.
  if (!(key instanceof Int32Array)) throw argumentError("schemaMatchesKey", "key", "an Int32Array (a copy of schemaKeyOf())", key);
  return ownerSchemaMatches(imported.ownerAddress, key);
}

/**
 * Records `converted` (an apache-arrow object made from `imported`'s
 * memory by `importRecordBatch`, `importVector`, `importData`,
 * `importTable`...) with `empty`, which `imported.dispose()` runs on it so
 * that its reads of the released memory throw ReleasedError (saying
 * where), not read detached buffers as empty. Held weakly; `releaseToGC()`
 * forgets them (their memory is then the GC's, never detached).
 */
export function noteConverted(imported: ImportedArray, converted: object, empty: EmptyConverted): void {
  arrayAccess.note(imported, converted, empty);
}

/**
 * Deferred views (`DeferredViews`) of `imported`'s buffers, for batches
 * converted from it lazily (one set per handle, made by the first and
 * shared by the others); its `dispose()` kills them. Null, having taken
 * nothing, where the handle already made views (they are then shared
 * eagerly), is windowed, disposed or not host-readable, or where
 * `DeferredViews.of` declines.
 */
export function deferHandleViews(imported: ImportedArray): DeferredViews | null {
  return arrayAccess.defer(imported);
}

/** `stream.next()` for a conversion that ends the batch's handle itself,
 * with `dispose()` or `releaseToGC()` in a finally: the handle is
 * transient, holding the batch without an anchor view. */
export function pullTransient(stream: ImportedStream): ImportedArray | null {
  return streamAccess.pullTransient(stream);
}

/**
 * A pull for a converter that builds batches from the tables without a
 * handle. False at the end. Otherwise `into.owner` is the batch's owner
 * and `into.words` its snapshot, written into the array `into.words` was
 * (or a bigger one, when it did not fit): the converter reuses it for the
 * next pull, so nothing may keep it. The owner's import reference is the
 * caller's, held natively, and must be ended exactly once:
 * `releasePulled`, or `adoptImportSnapshot` with a copy of the words.
 * After `nextAsync()` the batch comes as a transient handle instead
 * (`into.imported`; owner 0), ended as `pullTransient`'s are.
 */
export function pullInto(stream: ImportedStream, into: PulledBatch): boolean {
  return streamAccess.pullInto(stream, into);
}

/** Batches the stream's worker pulls from now on (`nextAsync`) are copied
 * to host memory there, before they are handed over, and the device
 * batches released once copied (as `toHost()` does); so the copy of the
 * batch read ahead runs while JS uses the previous one. A pull already in
 * flight is handed over as it was pulled. */
export function copyPullsToHost(stream: ImportedStream): void {
  streamAccess.copyPullsToHost(stream);
}
