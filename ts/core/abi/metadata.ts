/**
 * ArrowSchema.metadata in the spec's binary encoding (native byte order,
 * little-endian on every supported platform): int32 pair count, then per
 * pair int32 key length, key bytes, int32 value length, value bytes. Keys
 * and values are UTF-8; keys may repeat, so decoding keeps the last value
 * and `decodeMetadataPairs` keeps them all.
 */
import { argumentError } from "../args.ts";
import { InvalidLayoutError, Status } from "../errors.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: false });

/** Encodes `entries`; returns null for no entries (metadata NULL). */
export function encodeMetadata(entries: Iterable<[string, string]> | null | undefined): Uint8Array | null {
  const fn = "encodeMetadata";
  if (entries === null || entries === undefined) return null;
  if (typeof entries !== "object" || typeof (entries as Iterable<unknown>)[Symbol.iterator] !== "function") {
    throw argumentError(fn, "entries", "an iterable of [key, value] string pairs (e.g. a Map) or null", entries);
  }
  const pairs = [...entries].map((pair, i) => {
    if (!Array.isArray(pair) || typeof pair[0] !== "string" || typeof pair[1] !== "string") {
      throw argumentError(fn, `entries[${i}]`, "a [key, value] pair of strings", pair);
    }
    return [encoder.encode(pair[0]), encoder.encode(pair[1])] as const;
  });
  if (pairs.length === 0) return null;
  let size = 4;
  for (const [k, v] of pairs) size += 8 + k.length + v.length;
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  view.setInt32(0, pairs.length, true);
  let at = 4;
  for (const [k, v] of pairs) {
    view.setInt32(at, k.length, true);
    out.set(k, at + 4);
    at += 4 + k.length;
    view.setInt32(at, v.length, true);
    out.set(v, at + 4);
    at += 4 + v.length;
  }
  return out;
}

/** Decodes metadata read from `bytes` (which may extend past its end; the
 * encoding is self-delimiting). `limit` bounds what may be read. */
function decodeMetadataPairs(read: (offset: number, length: number) => Uint8Array, limit = 1 << 24): [string, string][] {
  const int32 = (offset: number) => new DataView(read(offset, 4).slice().buffer).getInt32(0, true);
  const count = int32(0);
  if (count < 0 || count > limit / 8) throw new InvalidLayoutError(Status.invalid_layout, `metadata declares ${count} pairs`);
  const pairs: [string, string][] = [];
  let at = 4;
  for (let i = 0; i < count; i++) {
    const keyLength = int32(at);
    if (keyLength < 0 || at + 4 + keyLength > limit) throw new InvalidLayoutError(Status.invalid_layout, `metadata key ${i} has length ${keyLength}`);
    const key = decoder.decode(read(at + 4, keyLength));
    at += 4 + keyLength;
    const valueLength = int32(at);
    if (valueLength < 0 || at + 4 + valueLength > limit) throw new InvalidLayoutError(Status.invalid_layout, `metadata value ${i} has length ${valueLength}`);
    const value = decoder.decode(read(at + 4, valueLength));
    at += 4 + valueLength;
    pairs.push([key, value]);
  }
  return pairs;
}

/** Decodes ArrowSchema.metadata bytes (int32 count, then length-prefixed
 * keys and values) into key/value pairs in order, repeats kept. Throws
 * InvalidLayoutError when the bytes end early. */
export function decodeMetadataBytes(bytes: Uint8Array): [string, string][] {
  if (!(bytes instanceof Uint8Array)) throw argumentError("decodeMetadataBytes", "bytes", "a Uint8Array", bytes);
  return decodeMetadataPairs((offset, length) => {
    if (offset + length > bytes.length) throw new InvalidLayoutError(Status.invalid_layout, "metadata is truncated");
    return bytes.subarray(offset, offset + length);
  }, bytes.length);
}
