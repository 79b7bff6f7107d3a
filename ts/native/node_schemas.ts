/**
 * An import owner's schema, read natively (zig/validate/schema_info.zig): every
 * node's flags, format, name and metadata decoded with one native call,
 * and the schema key that caches of what is built from a schema compare.
 */
import { decodeMetadataBytes } from "../core/abi/metadata.ts";
import { asPointer } from "../core/abi/structs.ts";
import { native } from "../core/ffi/library.ts";
import { nativeArray } from "../core/ffi/native_arrays.ts";

/** A node's schema fields, decoded once per import (zig/validate/schema_info.zig). */
export type NodeSchema = {
  flags: number;
  format: string;
  name: string | null;
  /** Key/value pairs in order, repeats kept; null when metadata is NULL. */
  metadataPairs: [string, string][] | null;
};

const utf8 = new TextDecoder("utf-8", { fatal: false });
/** Reused output of abd_owner_schema_info (decoded before the next call). */
let schemaScratch = nativeArray(Uint8Array, 64 * 1024);

function decodeText(bytes: Uint8Array, at: number, length: number): string {
  // Names and formats are mostly short ASCII: skip TextDecoder for them.
  if (length <= 64) {
    let ascii = true;
    for (let i = at; i < at + length; i++) if (bytes[i] >= 0x80) { ascii = false; break; }
    // apply takes any array-like (a typed array too); lib.d.ts says number[].
    if (ascii) return String.fromCharCode.apply(null, bytes.subarray(at, at + length) as unknown as number[]);
  }
  return utf8.decode(bytes.subarray(at, at + length));
}

/** Every node's flags, format, name and metadata, with one native call. */
export function readSchemas(owner: number): NodeSchema[] {
  let needed = Number(native.abd_owner_schema_info(asPointer(owner), schemaScratch, schemaScratch.length));
  if (needed > schemaScratch.length) {
    schemaScratch = nativeArray(Uint8Array, needed);
    needed = Number(native.abd_owner_schema_info(asPointer(owner), schemaScratch, schemaScratch.length));
  }
  const bytes = schemaScratch;
  const words = new Int32Array(bytes.buffer, 0, Math.min(needed, bytes.length) >> 2);
  const n = words[0];
  // The strings follow the records. Decoded in one go: when that gives one
  // character per byte (ASCII, the usual case), each string is a slice of
  // it at its byte offset; else each is decoded on its own.
  const stringsAt = 4 + n * 32;
  const all = utf8.decode(bytes.subarray(stringsAt, needed));
  const oneToOne = all.length === needed - stringsAt;
  const text = (at: number, length: number) => oneToOne ? all.slice(at - stringsAt, at - stringsAt + length) : decodeText(bytes, at, length);
  const out = new Array<NodeSchema>(n);
  for (let node = 0; node < n; node++) {
    const w = 1 + node * 8;
    const metadataAt = words[w + 6];
    out[node] = {
      flags: (words[w] >>> 0) + words[w + 1] * 2 ** 32,
      format: text(words[w + 2], words[w + 3]),
      name: words[w + 4] < 0 ? null : text(words[w + 4], words[w + 5]),
      metadataPairs: metadataAt < 0 ? null : decodeMetadataBytes(bytes.subarray(metadataAt, metadataAt + words[w + 7])),
    };
  }
  return out;
}

/** Reused output of abd_owner_schema_key (see `ownerSchemaKey`). */
let keyScratch = nativeArray(Int32Array, 1024);

/**
 * An exact description of `owner`'s schema tree, for caches of what is
 * built from it: every node's flags, format, name and metadata bytes as
 * the producer gave them, and its child count (zig/c_api_import.zig
 * abd_owner_schema_key), so two imports with the same key have the same
 * schema. A view of a scratch buffer, valid until the next call: copy it
 * to keep it. Null when a node is dictionary-encoded (apache-arrow gives
 * each dictionary type its own id: such schemas are not shared).
 */
export function ownerSchemaKey(owner: number): Int32Array | null {
  let needed = native.abd_owner_schema_key(asPointer(owner), keyScratch, keyScratch.length);
  if (needed > keyScratch.length) {
    keyScratch = nativeArray(Int32Array, needed);
    needed = native.abd_owner_schema_key(asPointer(owner), keyScratch, keyScratch.length);
  }
  return needed === 0 ? null : keyScratch.subarray(0, needed);
}

/** Whether `key` (a copy of an earlier `ownerSchemaKey`) is `owner`'s
 * schema key: "same", "different", or "none" when the schema has no key
 * (a dictionary-encoded node). One native pass over the schema strings,
 * nothing copied: the cheap check for a repeated schema. */
export function ownerSchemaMatches(owner: number, key: Int32Array): "same" | "different" | "none" {
  const result = native.abd_owner_schema_matches(asPointer(owner), key, key.length);
  return result === 1 ? "same" : result === 0 ? "different" : "none";
}
