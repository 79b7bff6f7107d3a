/**
 * What the array planner (arrow/array_plan.ts) reads from a Data's
 * bitmaps and values: slot widths, the exact null count a node exports
 * with, unset-bit counts, and the re-based bitmap copies (the only copies
 * an export makes).
 */
import { Type, type Data } from "apache-arrow";

/** Bytes per slot of a node's `values` buffer (0 for bit-packed booleans). */
export function slotBytes(data: Data): number {
  if (data.type.typeId === Type.Bool) return 0;
  const values = data.values as NodeJS.TypedArray;
  return data.stride * values.BYTES_PER_ELEMENT;
}

/** Copies bits [from, from + count) of `bits` to a new bitmap starting at
 * bit `to`. */
export function shiftBits(bits: Uint8Array, from: number, count: number, to: number): Uint8Array {
  const out = new Uint8Array(Math.ceil((to + count) / 8) || 1);
  for (let i = 0; i < count; i++) {
    const src = from + i;
    if (bits[src >> 3] & (1 << (src & 7))) {
      const dst = to + i;
      out[dst >> 3] |= 1 << (dst & 7);
    }
  }
  return out;
}

/** The exact null count: apache-arrow's when it knows it, else one
 * popcount of the bitmap (apache-arrow's nullCount getter counts and caches
 * it). Never -1, though the C interface allows it: DuckDB ignores the
 * bitmap of a dictionary column whose null_count is -1, and a sliced
 * apache-arrow column has an unknown count until asked. */
export function nullCountOf(data: Data): number {
  const known = (data as unknown as { _nullCount: number })._nullCount;
  if (known !== undefined && known >= 0) return known;
  const bitmap = data.nullBitmap as Uint8Array | undefined;
  if (!bitmap || bitmap.byteLength === 0) return 0;
  return data.nullCount;
}

/** Unset bits in [from, to) of `bits`. */
export function unsetBits(bits: Uint8Array, from: number, to: number): number {
  let unset = 0;
  for (let i = from; i < to; i++) if ((bits[i >> 3] & (1 << (i & 7))) === 0) unset++;
  return unset;
}
