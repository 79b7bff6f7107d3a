/**
 * The schema cache of one-off imports (`recordBatchOf`): the apache-arrow
 * Schema built for an imported schema, and its batch plan, kept for the
 * next import of the same schema.
 */
import { type Schema } from "apache-arrow";
import { type ImportedArray } from "../native/imported.ts";
import { schemaKeyOf, schemaMatchesKey } from "../native/batch_source.ts";
import { type BatchPlan } from "./batch_plan.ts";
import { schemaOf, typedConversion, type ConvertOptions } from "./types.ts";

/**
 * Schemas built for earlier imports, found by `ImportedArray.schemaKey`
 * (the exact schema bytes and tree, zig/validate/schema_key.zig: a hash picks the
 * bucket, equal words decide) and the options that shape the types. The
 * entry used last is tried first, with one native comparison
 * (`schemaMatches`) instead of a key copy and a hash. Repeated imports of one
 * schema (a producer's batches one by one) then share one apache-arrow
 * Schema, as a Table's batches do; schemas with dictionaries are never
 * cached (their types carry per-import ids). Bounded: cleared when full.
 */
export type SchemaEntry = {
  key: Int32Array;
  materialize: boolean;
  schema: Schema;
  /** The schema's batch plan (undefined: not tried yet; null: a node the
   * plan does not build). Same exact key, same node tree: one plan. */
  plan: BatchPlan | null | undefined;
};
const schemaCache = new Map<number, SchemaEntry[]>();
let schemaCacheSize = 0;
const schemaCacheLimit = 64;

function hashWords(words: Int32Array): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < words.length; i++) h = Math.imul(h ^ words[i], 0x01000193);
  return h;
}

function sameWords(a: Int32Array, b: Int32Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The entry found or made last: imports in a row usually share one
 * schema, which one native comparison then confirms (no key copied, no
 * hash). Kept across `schemaCache.clear()`: an entry stays valid. */
let lastSchemaEntry: SchemaEntry | null = null;

/** The cache entry of `imported`'s schema; an uncached one (a schema with
 * dictionaries) is a fresh entry that nothing keeps. */
export function cachedSchemaOf(imported: ImportedArray, options: ConvertOptions): SchemaEntry {
  const materialize = options.materialize === true;
  const last = lastSchemaEntry;
  if (last !== null && last.materialize === materialize) {
    const match = schemaMatchesKey(imported, last.key);
    if (match === "same") return last;
    if (match === "none") return uncachedEntry(imported, materialize, options);
  }
  const key = schemaKeyOf(imported);
  // Not cached (dictionaries, which the plan never builds): no plan.
  if (key === null) return uncachedEntry(imported, materialize, options);
  lastSchemaEntry = entryFor(key, materialize, imported, options);
  return lastSchemaEntry;
}

/** A schema entry nothing keeps, without a plan. */
function uncachedEntry(imported: ImportedArray, materialize: boolean, options: ConvertOptions): SchemaEntry {
  const root = imported.root;
  return { key: empty32, materialize, schema: typedConversion(root, () => schemaOf(root, options)), plan: null };
}

/** The cached entry of `key` (a scratch view: copied when kept), made and
 * cached when there is none. */
function entryFor(key: Int32Array, materialize: boolean, imported: ImportedArray, options: ConvertOptions): SchemaEntry {
  const hash = hashWords(key);
  const bucket = schemaCache.get(hash);
  if (bucket) {
    for (const entry of bucket) if (entry.materialize === materialize && sameWords(entry.key, key)) return entry;
  }
  const root = imported.root;
  const schema = typedConversion(root, () => schemaOf(root, options));
  if (schemaCacheSize >= schemaCacheLimit) {
    schemaCache.clear();
    schemaCacheSize = 0;
  }
  const entries = schemaCache.get(hash) ?? [];
  const entry: SchemaEntry = { key: key.slice(), materialize, schema, plan: undefined };
  entries.push(entry);
  schemaCache.set(hash, entries);
  schemaCacheSize++;
  return entry;
}

const empty32 = new Int32Array(0);
