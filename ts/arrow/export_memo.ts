/**
 * The export memos: what planning a Data came to, kept by that Data (and
 * what was learnt about each JS view exported, kept by the view), so
 * exporting it again (the same batch, or batches sharing columns) pushes
 * the same words, or copies the batch's native image, instead of planning
 * it again. A memo holds only while everything its words came from is
 * the same by identity (checked at each reuse). arrow/array_plan.ts makes
 * them; arrow/export.ts reuses them.
 */
import { type Pointer } from "bun:ffi";
import { Type, type Data, type DataType } from "apache-arrow";
import { Status } from "../core/errors.ts";
import { check, native } from "../core/ffi/library.ts";

/** What the planner learnt about a JS view it exported: the address of its
 * first byte, its byteOffset and the import owner under it (undefined: JS
 * memory). Reading `view.buffer`, `detached`, the owner map and `ptr` cost
 * ~100 ns per buffer; a view exported again (every export of the same
 * batch, or of batches sharing columns) costs one WeakMap lookup. All three
 * hold for as long as the view is attached: the address is pinned once
 * `view.buffer` was read (addressOf) and an ArrayBuffer's memory never
 * moves while attached, and detaching (an import's dispose(), `transfer`)
 * makes every view of it read byteLength 0, which `facts` checks before
 * trusting an entry. Weak: an entry goes with its view. */
export type ViewFacts = { address: number; byteOffset: number; owner: number | undefined };
export const viewFacts = new WeakMap<object, ViewFacts>();

/** What a flat primitive node (Int, Float, temporal, decimal, fixed-size
 * binary) planned at C offset 0 pushed, by its Data: exporting the same
 * Data again (the same batch, or batches sharing columns) pushes the same
 * words after checking, by identity, everything they came from (type,
 * length, null count, bitmap and values views, each still attached). */
export type Leaf = {
  type: DataType;
  length: number;
  nullCount: number;
  nullBitmap: unknown;
  values: unknown;
  nulls: number;
  bitmap: NodeJS.ArrayBufferView | null;
  bitmapAddress: number;
  valuesAddress: number;
};
export const leaves = new WeakMap<Data, Leaf>();

/** Whether `leaf` still describes `data`: everything its words came from
 * is the same by identity, and its views are still attached. */
export function leafHolds(data: Data, leaf: Leaf): boolean {
  const values = data.values as NodeJS.ArrayBufferView;
  if (data.type !== leaf.type || data.length !== leaf.length || values !== leaf.values || data.nullBitmap !== leaf.nullBitmap) return false;
  if ((data as unknown as { _nullCount: number })._nullCount !== leaf.nullCount) return false;
  // Detached views read byteLength 0: then the full path refuses them.
  return values.byteLength !== 0 && (leaf.bitmap === null || leaf.bitmap.byteLength !== 0);
}

/** What a whole plan of a struct Data (a RecordBatch's) at offset 0 whose
 * children all planned as flat leaves (see Leaf) came to: its words, the
 * views C points at and the import owners under them. Exporting the same
 * struct Data again reuses them after checking, by identity, the struct's
 * own fields and each child (the same Data, still described by its Leaf:
 * leafHolds). `retained` is never changed after the plan, so every export of
 * it may keep the same list. */
export type Batch = {
  type: DataType;
  length: number;
  nullCount: number;
  nullBitmap: unknown;
  bitmap: NodeJS.ArrayBufferView | null;
  children: Data[];
  leaves: Leaf[];
  words: Float64Array;
  retained: unknown[];
  owners: number[];
  /** The native image of `words` (zig/export/array.zig `Image`), made at
   * the memo's first reuse (a batch exported once never pays for it); 0
   * until then. Owned by this memo: freed by `arrayImages` when the memo
   * is collected (its Data was, or a new plan replaced it). Trees never
   * point into it, so freeing it never touches a live export. */
  image: number;
};
const batches = new WeakMap<Data, Batch>();
const arrayImages = new FinalizationRegistry<number>((image) => native.abd_array_image_free(image as Pointer));

/** The array image of `batch`, made now if it has none yet. */
export function imageOf(batch: Batch): number {
  if (batch.image !== 0) return batch.image;
  const image = native.abd_array_image_new(batch.words, batch.words.length);
  if (!image) check(native.abd_last_status() || Status.internal);
  batch.image = image as number;
  arrayImages.register(batch, batch.image);
  return batch.image;
}

/** The Batch memo of `data` if it still holds (and its words fit in
 * `capacity` plan words), else undefined. */
export function batchAgain(data: Data, capacity: number): Batch | undefined {
  const batch = batches.get(data);
  if (batch === undefined) return undefined;
  if (data.type !== batch.type || data.length !== batch.length || data.offset !== 0 || data.nullBitmap !== batch.nullBitmap) return undefined;
  if ((data as unknown as { _nullCount: number })._nullCount !== batch.nullCount) return undefined;
  if (batch.bitmap !== null && batch.bitmap.byteLength === 0) return undefined;
  const children = data.children;
  const n = batch.children.length;
  if (children.length !== n || batch.words.length > capacity) return undefined;
  for (let i = 0; i < n; i++) {
    const child = children[i];
    const leaf = batch.leaves[i];
    // Not `leaves.get(child) === leaf` too (a look-up per column): if
    // leafHolds, everything the leaf's words came from is still the same by
    // identity, so they describe the child whichever Leaf `leaves` holds now.
    if (child !== batch.children[i] || !leafHolds(child, leaf)) return undefined;
  }
  return batch;
}

/** Records the plan just made of `data` (words[0, length),
 * `retained`, `owners`) as its Batch memo, if it is a struct at offset 0
 * whose children all hold their leaves (then each was planned from that
 * leaf: node() tries it first, and nothing changed since). */
export function rememberBatch(data: Data, words: Float64Array, length: number, retained: unknown[], owners: readonly number[]): void {
  if (data.type.typeId !== Type.Struct || data.offset !== 0 || data.length === 0) return;
  const children = data.children;
  const childLeaves: Leaf[] = [];
  for (const child of children) {
    const leaf = leaves.get(child);
    if (leaf === undefined || child.offset !== 0 || !leafHolds(child, leaf)) return;
    childLeaves.push(leaf);
  }
  batches.set(data, {
    type: data.type,
    length: data.length,
    nullCount: (data as unknown as { _nullCount: number })._nullCount,
    nullBitmap: data.nullBitmap,
    // validity() exported the struct's own bitmap (offset 0) or NULL.
    bitmap: words[6] === 0 ? null : data.nullBitmap as NodeJS.ArrayBufferView,
    children: [...children],
    leaves: childLeaves,
    words: words.slice(0, length),
    retained,
    owners: [...owners],
    image: 0,
  });
}
