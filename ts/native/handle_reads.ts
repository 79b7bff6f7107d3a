/**
 * Reads of an ImportedArray's node and buffer tables by index, for
 * RawArray (raw_array.ts) and the converters (through batch_source.ts),
 * through the access the class grants (handle_access.ts). Each takes a
 * handle, so the class has granted it. ReleasedError once the handle is
 * disposed; OutOfRangeError for an index out of its table.
 */
import { bufferStride, nodeStride, ownerInfoWords, OwnerInfoWord } from "../core/abi/layout.ts";
import { OutOfRangeError, Status } from "../core/errors.ts";
import { argumentError } from "../core/args.ts";
import { arrayAccess } from "./handle_access.ts";
import type { ImportedArray } from "./imported_array.ts";
import type { NodeSchema } from "./node_schemas.ts";

/** Checks `fn`'s `param`, an index below `count` (of `what`). */
function checkIndex(fn: string, param: string, index: unknown, count: number, what: string): void {
  if (typeof index !== "number" || !Number.isInteger(index)) throw argumentError(fn, param, "an integer index", index);
  if (index < 0 || index >= count) throw new OutOfRangeError(Status.out_of_range, `${fn}: ${param} ${index} is out of the ${count} ${what}`);
}

/** Word `word` of node `node` of the handle's node table. */
export function nodeWordOf(imported: ImportedArray, node: number, word: number): number {
  const words = arrayAccess.words(imported);
  checkIndex("nodeWordOf", "node", node, words[OwnerInfoWord.node_count], "nodes");
  checkIndex("nodeWordOf", "word", word, nodeStride, "words");
  return words[ownerInfoWords + node * nodeStride + word];
}

/** Word `word` of buffer `buffer` of the handle's buffer table. */
export function bufferWordOf(imported: ImportedArray, buffer: number, word: number): number {
  const words = arrayAccess.words(imported);
  checkIndex("bufferWordOf", "buffer", buffer, words[OwnerInfoWord.buffer_count], "buffers");
  checkIndex("bufferWordOf", "word", word, bufferStride, "words");
  return words[ownerInfoWords + words[OwnerInfoWord.node_count] * nodeStride + buffer * bufferStride + word];
}

/** Node `node`'s schema fields (decoded for all nodes on first use). */
export function nodeSchemaOf(imported: ImportedArray, node: number): NodeSchema {
  const schemas = arrayAccess.schemas(imported);
  checkIndex("nodeSchemaOf", "node", node, schemas.length, "nodes");
  return schemas[node];
}
