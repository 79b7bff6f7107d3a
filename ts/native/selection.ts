/**
 * What part of an imported array a child/slice handle or a re-export covers,
 * encoded as the library's request words (zig/import/reexport.zig) and resolved
 * natively into a window, so that the rules (struct children under the
 * parent's window, bounds checks, null counts of slices) live in one place.
 */
import { type Pointer } from "bun:ffi";
import { ReexportFlag, ReexportRequestWord, ReexportShape, WindowWord, reexportRequestWords, windowWords } from "../core/abi/layout.ts";
import { argumentError, booleanArg, integerArg, isPlainObject, oneOfArg } from "../core/args.ts";
import { check, native } from "../core/ffi/library.ts";
import { nativeArray } from "../core/ffi/native_arrays.ts";

/** The rows of one node of an owner's node table that a handle covers:
 * `offset` is the C offset its root gets, `nullCount` -1 when unknown
 * (device memory the host cannot read). */
export type Window = { node: number; offset: number; length: number; nullCount: number };

/** Rows `offset .. offset + length`. */
export type SliceRange = { offset: number; length: number };

/** A part of an imported array: a child column, its dictionary, a slice
 * of rows, or a combination, optionally reshaped. */
export type Selection = {
  /** Child column `child` (of a struct: its rows under the parent's
   * window, as Arrow C++'s `field(i)`; other types: the whole child). */
  child?: number;
  /** The dictionary of the (child) array. */
  dictionary?: boolean;
  /** Rows `offset .. offset + length` of the selection. */
  slice?: SliceRange;
  /** "column": hand a one-column table (struct) over as its column;
   * "table": hand the selection over as a one-column table. */
  shape?: keyof typeof ReexportShape;
};

/** Checks the kinds of `selection`'s fields for `fn` (integers, a
 * boolean, a { offset, length } slice, a shape name); ranges are checked
 * natively, against the data (OutOfRangeError). */
export function selectionArg(fn: string, selection: Selection): void {
  if (selection.child !== undefined) integerArg(fn, "options.child", selection.child);
  booleanArg(fn, "options.dictionary", selection.dictionary, true);
  if (selection.slice !== undefined) {
    if (!isPlainObject(selection.slice)) throw argumentError(fn, "options.slice", "{ offset, length }", selection.slice);
    integerArg(fn, "options.slice.offset", selection.slice.offset);
    integerArg(fn, "options.slice.length", selection.slice.length);
  }
  if (selection.shape !== undefined) oneOfArg(fn, "options.shape", selection.shape, Object.keys(ReexportShape) as (keyof typeof ReexportShape)[]);
}

/** The request words for `selection`, starting from `base` (null: the
 * whole array). */
export function encodeRequest(base: Window | null, selection: Selection): Float64Array {
  const words = nativeArray(Float64Array, reexportRequestWords);
  let flags = 0;
  if (base) {
    flags |= ReexportFlag.base;
    words[ReexportRequestWord.node] = base.node;
    words[ReexportRequestWord.base_offset] = base.offset;
    words[ReexportRequestWord.base_length] = base.length;
  }
  if (selection.child !== undefined) {
    flags |= ReexportFlag.child;
    words[ReexportRequestWord.child] = Number(selection.child);
  }
  if (selection.dictionary) flags |= ReexportFlag.dictionary;
  if (selection.slice !== undefined) {
    flags |= ReexportFlag.slice;
    words[ReexportRequestWord.slice_offset] = Number(selection.slice.offset);
    words[ReexportRequestWord.slice_length] = Number(selection.slice.length);
  }
  const shape = ReexportShape[selection.shape ?? "as_is"];
  // An unknown shape name reaches the library as NaN and is rejected there.
  words[ReexportRequestWord.shape] = shape ?? Number.NaN;
  words[ReexportRequestWord.flags] = flags;
  return words;
}

/** Resolves `selection` of `owner` (a reference the caller holds) into a
 * window; throws the library's typed error (OutOfRangeError, ...). */
export function selectWindow(owner: number, base: Window | null, selection: Selection): Window {
  const request = encodeRequest(base, selection);
  const out = nativeArray(Float64Array, windowWords);
  check(native.abd_owner_select(owner as Pointer, request, request.length, out));
  return {
    node: out[WindowWord.node],
    offset: out[WindowWord.offset],
    length: out[WindowWord.length],
    nullCount: out[WindowWord.null_count],
  };
}
