/**
 * Handles over native owners for the code outside ImportedArray's class
 * body: an import of structs that a C producer filled in inside the
 * library (`importTaken`: arrow/import.ts, the Python bridge), and the
 * adoption of an owner that a stream pull or an async consumer made
 * (`adoptImportOwner`, `adoptImportSnapshot`). The class grants the
 * private constructor these use (handle_access.ts); importing it here
 * makes sure it has.
 */
import { addressArg, argumentError, booleanArg } from "../core/args.ts";
import { arrayAccess } from "./handle_access.ts";
// A value import (not `import type`): the class grants `arrayAccess` when
// its module is evaluated, which this import makes happen first.
import { ImportedArray } from "./imported_array.ts";
import { ownerOfTaken } from "./import_owner.ts";

export { type ImportOptions } from "./import_owner.ts";

/** `ownerOfTaken` (import_owner.ts: checked structs, or structs a C
 * producer filled in inside the library) as a handle. */
export function importTaken(kind: "array" | "device_array", schema: number, array: number, level: number): ImportedArray {
  return arrayAccess.adopt(ownerOfTaken(kind, schema, array, level), false, null);
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
