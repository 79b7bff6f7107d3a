/**
 * apache-arrow -> C Data Interface, without copying data buffers.
 *
 * Schemas become a byte plan that zig/export_schema.zig turns into an
 * ArrowSchema tree (strings copied natively). Arrays become a plan of
 * buffer addresses (zig/export_array.zig); the buffers are the JS typed
 * arrays themselves, kept alive by the keepalive registry until the
 * consumer releases the tree (native/keepalive.ts).
 *
 * Offsets. apache-arrow slices value buffers to the array's start and keeps
 * `Data.offset` only for bitmaps (validity, boolean values); the C
 * interface applies one `offset` to every buffer. So a value buffer is
 * exported from `offset` slots *before* its JS start, which is the original
 * unsliced buffer when apache-arrow sliced it (the memory is in the same
 * ArrayBuffer, checked). Children of structs, sparse unions and fixed-size
 * lists are sliced together with their parent in apache-arrow, while C adds
 * the parent's offset when reading them: a child's C offset is its own
 * offset minus that shift. Where this does not work out (a node built with
 * an offset but without the memory before it), the node is re-based to C
 * offset 0: its bitmaps are shifted into a fresh copy (the only copy this
 * module ever makes, bitmaps only) and its value buffers start at their JS
 * start.
 *
 * Converted imports. A buffer may be a view of an import's memory
 * (arrow/import.ts is zero-copy): the export then holds a native
 * reference on that import's owner, taken before the tree is built and
 * dropped by the consumer's release (keepalive.ts `retainWithOwners`), so the
 * import's `dispose()` never frees what a consumer still reads. A view
 * already detached by `dispose()` is refused (ReleasedError).
 */
import { ptr, type Pointer } from "bun:ffi";
import {
  Data, DataType, Field, RecordBatch, Schema, Table, Type, UnionMode, Vector,
  type Dictionary, type FixedSizeList, type Map_, type Union,
} from "apache-arrow";
import { Flags, DeviceType } from "../core/abi/layout.ts";
import { encodeMetadata } from "../core/abi/metadata.ts";
import { argumentError, oneOfArg, optionsArg } from "../core/args.ts";
import { InvalidArgumentError, ReleasedError, Status, TooDeepError, UnsupportedError } from "../core/errors.ts";
import { arrowArg, arrowKindError, arrowKindOf, isDataType } from "./arrow_args.ts";
import { check, native } from "../core/ffi/library.ts";
import { adoptExportSlot, exportSlotKinds, type ExportedArray, type ExportedKind } from "../native/exported.ts";
import { drainReleased, forgetUnused, retainWithOwners } from "../native/keepalive.ts";
import { importOwnerOf } from "../native/imported.ts";
import { maxNestingDepth } from "../core/abi/layout.ts";
import { formatOf } from "./formats.ts";
import { disposedBuffer } from "./lazy_data.ts";

// ---------------------------------------------------------------------------
// Schema plans
// ---------------------------------------------------------------------------

const textEncoder = new TextEncoder();

/** A growable little-endian byte writer for schema plans. */
class PlanBytes {
  bytes = new Uint8Array(1024);
  view = new DataView(this.bytes.buffer);
  length = 0;

  reserve(n: number) {
    if (this.length + n <= this.bytes.length) return;
    let size = this.bytes.length * 2;
    while (size < this.length + n) size *= 2;
    const bigger = new Uint8Array(size);
    bigger.set(this.bytes.subarray(0, this.length));
    this.bytes = bigger;
    this.view = new DataView(bigger.buffer);
  }
  u32(v: number) { this.reserve(4); this.view.setUint32(this.length, v, true); this.length += 4; }
  i32(v: number) { this.reserve(4); this.view.setInt32(this.length, v, true); this.length += 4; }
  i64(v: number) { this.reserve(8); this.view.setBigInt64(this.length, BigInt(v), true); this.length += 8; }
  u8(v: number) { this.reserve(1); this.bytes[this.length++] = v; }
  raw(b: Uint8Array) { this.reserve(b.length); this.bytes.set(b, this.length); this.length += b.length; }
  optional(b: Uint8Array | null) {
    if (b === null) { this.i32(-1); return; }
    this.i32(b.length);
    this.raw(b);
  }
}

type SchemaNode = {
  format: string;
  name: string | null;
  metadata: Map<string, string> | null;
  flags: number;
  children: SchemaNode[];
  dictionary: SchemaNode | null;
};

function childFields(type: DataType): Field[] {
  return (type.children ?? []) as Field[];
}

function nodeForType(type: DataType, name: string | null, nullable: boolean, metadata: Map<string, string> | null, depth: number): SchemaNode {
  if (depth > maxNestingDepth) throw new TooDeepError(Status.too_deep, `schema nests deeper than ${maxNestingDepth} levels`);
  let flags = nullable ? Flags.NULLABLE : 0;
  if (type.typeId === Type.Dictionary) {
    const dictionary = type as Dictionary;
    if (dictionary.isOrdered) flags |= Flags.DICTIONARY_ORDERED;
    return {
      format: formatOf(type),
      name,
      metadata,
      flags,
      children: [],
      dictionary: nodeForType(dictionary.dictionary, null, true, null, depth + 1),
    };
  }
  if (type.typeId === Type.Map && (type as Map_).keysSorted) flags |= Flags.MAP_KEYS_SORTED;
  return {
    format: formatOf(type),
    name,
    metadata,
    flags,
    children: childFields(type).map((f) => nodeForField(f, depth + 1)),
    dictionary: null,
  };
}

function nodeForField(field: Field, depth: number): SchemaNode {
  return nodeForType(field.type, field.name, field.nullable, field.metadata?.size ? field.metadata : null, depth);
}

function writeSchemaNode(plan: PlanBytes, node: SchemaNode) {
  const format = textEncoder.encode(node.format);
  plan.u32(format.length);
  plan.raw(format);
  plan.optional(node.name === null ? null : textEncoder.encode(node.name));
  plan.optional(encodeMetadata(node.metadata));
  plan.i64(node.flags);
  plan.u32(node.children.length);
  plan.u8(node.dictionary ? 1 : 0);
  for (const child of node.children) writeSchemaNode(plan, child);
  if (node.dictionary) writeSchemaNode(plan, node.dictionary);
}

/** What `exportSchema` takes: an apache-arrow DataType, Field or Schema. */
export type SchemaSource = DataType | Field | Schema;

function schemaNodeOf(source: SchemaSource): SchemaNode {
  if (source instanceof Schema) {
    return {
      format: "+s",
      name: "",
      metadata: source.metadata?.size ? source.metadata : null,
      flags: 0,
      children: source.fields.map((f) => nodeForField(f, 1)),
      dictionary: null,
    };
  }
  if (source instanceof Field) return nodeForField(source, 0);
  if (isDataType(source)) return nodeForType(source, "", true, null, 0);
  throw arrowKindError("exportSchema", "source", source, schemaKinds);
}

/** The schema plan of `source` (zig/export_schema.zig), for native code
 * that builds the schema again later (a stream's get_schema). */
function schemaPlan(source: SchemaSource): Uint8Array {
  const plan = new PlanBytes();
  writeSchemaNode(plan, schemaNodeOf(source));
  return plan.bytes.slice(0, plan.length);
}

/** Builds the native ArrowSchema for `source` at `out`. */
function buildSchema(source: SchemaSource, out: Pointer): void {
  check(native.abd_schema_template_build(templateOf(source) as Pointer, out));
}

/** Encoded schema plans by source object, with the native template built
 * from each (zig/export_schema.zig `Template`: checked and measured once).
 * apache-arrow types, fields and schemas are not changed after
 * construction, so a batch stream (every batch shares one Schema) encodes
 * and checks its schema once, and each export then only copies it into a
 * new tree. The cache owns the templates: one is freed when its entry (so
 * its source object) is collected. Trees never point into a template. */
type SchemaEntry = {
  plan: Uint8Array;
  template: number;
  /** For a Schema: whether two of its fields share a name (see
   * `schemaFits`); false for a Field or DataType. */
  repeatsNames: boolean;
};
const schemaEntries = new WeakMap<object, SchemaEntry>();
const templates = new FinalizationRegistry<number>((template) => native.abd_schema_template_free(template as Pointer));

function schemaEntryOf(source: SchemaSource): SchemaEntry {
  const cached = schemaEntries.get(source);
  if (cached) return cached;
  const plan = new PlanBytes();
  writeSchemaNode(plan, schemaNodeOf(source));
  const bytes = plan.bytes.slice(0, plan.length);
  const template = native.abd_schema_template_new(bytes, bytes.length);
  if (!template) check(native.abd_last_status() || Status.internal);
  const repeatsNames = source instanceof Schema && new Set(source.fields.map((f) => f.name)).size !== source.fields.length;
  const entry: SchemaEntry = { plan: bytes, template: template as number, repeatsNames };
  templates.register(entry, entry.template);
  schemaEntries.set(source, entry);
  return entry;
}

/** The native template of `source` (valid while `source` is reachable). */
function templateOf(source: SchemaSource): number {
  return schemaEntryOf(source).template;
}

/** The unnamed, nullable field a Data or Vector of `type` exports as, one
 * per type object (so its schema template is cached with it). */
const unnamedFields = new WeakMap<DataType, Field>();

function unnamedField(type: DataType): Field {
  let field = unnamedFields.get(type);
  if (!field) {
    field = new Field("", type, true);
    unnamedFields.set(type, field);
  }
  return field;
}

// ---------------------------------------------------------------------------
// Array plans
// ---------------------------------------------------------------------------

/** Plan words, reused across exports (its backing store is large enough to
 * live out of line, so its address is stable during the native call). */
let planWords = new Float64Array(4096);
let planLength = 0;

function push(word: number) {
  if (planLength === planWords.length) {
    const bigger = new Float64Array(planWords.length * 2);
    bigger.set(planWords);
    planWords = bigger;
  }
  planWords[planLength++] = word;
}

/** The address of `view`'s first byte. Call only after reading
 * `view.buffer` (ArrayPlanner.source does): that gives a small typed array,
 * whose bytes may live inline in the GC heap and move, a stable
 * out-of-line backing store. */
function addressOf(view: NodeJS.ArrayBufferView): number {
  return ptr(view);
}

/** Bytes per slot of a node's `values` buffer (0 for bit-packed booleans). */
function slotBytes(data: Data): number {
  if (data.type.typeId === Type.Bool) return 0;
  const values = data.values as NodeJS.TypedArray;
  return data.stride * values.BYTES_PER_ELEMENT;
}

/** Copies bits [from, from + count) of `bits` to a new bitmap starting at
 * bit `to`. */
function shiftBits(bits: Uint8Array, from: number, count: number, to: number): Uint8Array {
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

/** One zero offset: 8 zero bytes, read as one int32 or one int64 offset.
 * The format gives every variable-size or list array `length + 1` offsets,
 * so a zero-length array still needs one (Arrow C++ rejects a NULL offsets
 * buffer there); apache-arrow leaves the offsets of empty arrays it builds
 * (e.g. the placeholder batch of a stream without batches) empty. Never
 * written; module-lifetime, so it outlives every export. */
const zeroOffset = new BigInt64Array(1);

const noChildren: readonly Data[] = Object.freeze([]);

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
type ViewFacts = { address: number; byteOffset: number; owner: number | undefined };
const viewFacts = new WeakMap<object, ViewFacts>();

/** What a flat primitive node (Int, Float, temporal, decimal, fixed-size
 * binary) planned at C offset 0 pushed, by its Data: exporting the same
 * Data again (the same batch, or batches sharing columns) pushes the same
 * words after checking, by identity, everything they came from (type,
 * length, null count, bitmap and values views, each still attached). */
type Leaf = {
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
const leaves = new WeakMap<Data, Leaf>();

/** Whether `leaf` still describes `data`: everything its words came from
 * is the same by identity, and its views are still attached. */
function leafHolds(data: Data, leaf: Leaf): boolean {
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
type Batch = {
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
  /** The native image of `words` (zig/export_array.zig `Image`), made at
   * the memo's first reuse (a batch exported once never pays for it); 0
   * until then. Owned by this memo: freed by `arrayImages` when the memo
   * is collected (its Data was, or a new plan replaced it). Trees never
   * point into it, so freeing it never touches a live export. */
  image: number;
};
const batches = new WeakMap<Data, Batch>();
const arrayImages = new FinalizationRegistry<number>((image) => native.abd_array_image_free(image as Pointer));

/** The array image of `batch`, made now if it has none yet. */
function imageOf(batch: Batch): number {
  if (batch.image !== 0) return batch.image;
  const image = native.abd_array_image_new(batch.words, batch.words.length);
  if (!image) check(native.abd_last_status() || Status.internal);
  batch.image = image as number;
  arrayImages.register(batch, batch.image);
  return batch.image;
}

/** The Batch memo of `data` if it still holds, else undefined. */
function batchAgain(data: Data): Batch | undefined {
  const batch = batches.get(data);
  if (batch === undefined) return undefined;
  if (data.type !== batch.type || data.length !== batch.length || data.offset !== 0 || data.nullBitmap !== batch.nullBitmap) return undefined;
  if ((data as unknown as { _nullCount: number })._nullCount !== batch.nullCount) return undefined;
  if (batch.bitmap !== null && batch.bitmap.byteLength === 0) return undefined;
  const children = data.children;
  const n = batch.children.length;
  if (children.length !== n || batch.words.length > planWords.length) return undefined;
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

/** Records the plan just made of `data` (planWords[0, planLength),
 * `retained`, `owners`) as its Batch memo, if it is a struct at offset 0
 * whose children all hold their leaves (then each was planned from that
 * leaf: node() tries it first, and nothing changed since). */
function rememberBatch(data: Data, retained: unknown[], owners: readonly number[]): void {
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
    bitmap: planWords[6] === 0 ? null : data.nullBitmap as NodeJS.ArrayBufferView,
    children: [...children],
    leaves: childLeaves,
    words: planWords.slice(0, planLength),
    retained,
    owners: [...owners],
    image: 0,
  });
}

class ArrayPlanner {
  /** Everything C will point at, for the keepalive registry. */
  retained: unknown[] = [];
  /** Import owners whose memory C will point at (each once). */
  owners: number[] = [];
  depth = 0;

  /** Buffers pushed for the node being planned (patched into its header
   * before its children are planned). */
  private nBuffers = 0;

  /** What `view` exports as (its address, byteOffset and import owner),
   * noting its import owner; null for an empty view. Refuses a view whose
   * import was disposed. Looked up in `viewFacts` for a view exported
   * before, else learnt (see ViewFacts). */
  private facts(view: NodeJS.ArrayBufferView): ViewFacts | null {
    // A detached view reads byteLength 0, so a non-empty one is attached
    // and what was learnt about it still holds.
    if (view.byteLength !== 0) {
      const known = viewFacts.get(view);
      if (known !== undefined) {
        if (known.owner !== undefined && !this.owners.includes(known.owner)) this.owners.push(known.owner);
        return known;
      }
    }
    // Reading `view.buffer` also pins its bytes (see addressOf).
    const buffer = view.buffer as ArrayBuffer;
    if (buffer.detached || buffer === disposedBuffer) throw new ReleasedError(Status.released, "cannot export data converted from an import that was disposed: its buffers are detached");
    const owner = importOwnerOf(buffer);
    if (owner !== undefined && !this.owners.includes(owner)) this.owners.push(owner);
    if (view.byteLength === 0) return null;
    const learnt: ViewFacts = { address: addressOf(view), byteOffset: view.byteOffset, owner };
    viewFacts.set(view, learnt);
    return learnt;
  }

  /** The offsets buffer of a variable-size or list node (see zeroOffset). */
  private offsets(offsets: Int32Array | BigInt64Array | undefined, lead: number, length: number): number | null {
    if (length === 0 && (!offsets || offsets.length === 0)) return this.keep(zeroOffset);
    return this.backed(offsets, lead * (offsets?.BYTES_PER_ELEMENT ?? 0));
  }

  /** Address of a buffer exported `backBytes` bytes before its JS start;
   * null when that memory is not in the same ArrayBuffer. */
  private backed(view: NodeJS.ArrayBufferView | undefined, backBytes: number): number | null {
    if (!view) return 0;
    const facts = this.facts(view);
    if (facts === null) return 0;
    if (facts.byteOffset < backBytes) return null;
    this.retained.push(view);
    return facts.address - backBytes;
  }

  private keep(view: NodeJS.ArrayBufferView | undefined | null): number {
    if (!view) return 0;
    const facts = this.facts(view);
    if (facts === null) return 0;
    this.retained.push(view);
    return facts.address;
  }

  /** Pushes one buffer address of the current node; false for null (the
   * node cannot be exported that way). */
  private buffer(address: number | null): boolean {
    if (address === null) return false;
    push(address);
    this.nBuffers++;
    return true;
  }

  /** Pushes the validity buffer of `data` (NULL when it has no nulls:
   * `nulls`, its nullCountOf). */
  private validity(data: Data, rebase: boolean, nulls: number): boolean {
    const bitmap = data.nullBitmap as Uint8Array | undefined;
    if (nulls === 0 || !bitmap || bitmap.byteLength === 0) return this.buffer(0);
    if (!rebase) return this.buffer(this.keep(bitmap));
    if (data.offset % 8 === 0) return this.buffer(this.keep(bitmap.subarray(data.offset >> 3)));
    return this.buffer(this.keep(shiftBits(bitmap, data.offset, data.length, 0)));
  }

  /** Records what `tryNode` just planned for `data`, a flat primitive
   * node at C offset 0 (its header at `header`), for `leafAgain`. */
  private rememberLeaf(data: Data, header: number): void {
    const bitmapAddress = planWords[header + 6];
    const valuesAddress = planWords[header + 7];
    if (valuesAddress === 0) return; // nothing to point at: not worth a shortcut
    leaves.set(data, {
      type: data.type,
      length: data.length,
      nullCount: (data as unknown as { _nullCount: number })._nullCount,
      nullBitmap: data.nullBitmap,
      values: data.values,
      nulls: planWords[header + 1],
      // validity() exported the node's own bitmap (not re-based) or NULL.
      bitmap: bitmapAddress === 0 ? null : data.nullBitmap as NodeJS.ArrayBufferView,
      bitmapAddress,
      valuesAddress,
    });
  }

  /** Plans `data` again the way `rememberLeaf` recorded it, if nothing it
   * depends on changed; false (nothing pushed) otherwise. */
  private leafAgain(data: Data): boolean {
    const leaf = leaves.get(data);
    if (leaf === undefined || !leafHolds(data, leaf)) return false;
    const values = data.values as NodeJS.ArrayBufferView;
    const owners = this.owners;
    const valuesFacts = viewFacts.get(values);
    if (valuesFacts?.owner !== undefined && !owners.includes(valuesFacts.owner)) owners.push(valuesFacts.owner);
    if (leaf.bitmap !== null) {
      const bitmapFacts = viewFacts.get(leaf.bitmap);
      if (bitmapFacts?.owner !== undefined && !owners.includes(bitmapFacts.owner)) owners.push(bitmapFacts.owner);
      this.retained.push(leaf.bitmap);
    }
    this.retained.push(values);
    push(data.length);
    push(leaf.nulls);
    push(0);
    push(2);
    push(0);
    push(0);
    push(leaf.bitmapAddress);
    push(leaf.valuesAddress);
    return true;
  }

  /** Plans `data` as a child whose parent adds `shift` to its index.
   * Returns false (having pushed nothing) if it cannot be exported under
   * that shift; then the parent re-bases itself so the shift is 0. */
  node(data: Data, shift: number): boolean {
    // No try/finally around the depth (it kept this path from being
    // optimized well): a throw ends the whole plan, and planKeepalive
    // resets the depth before the next one.
    if (++this.depth > maxNestingDepth) throw new TooDeepError(Status.too_deep, `array nests deeper than ${maxNestingDepth} levels`);
    if (shift === 0 && data.offset === 0 && this.leafAgain(data)) {
      this.depth--;
      return true;
    }
    const mark = planLength;
    const retainedMark = this.retained.length;
    // An empty array is always exported at offset 0: nothing to point at.
    if (data.length > 0 && this.tryNode(data, data.offset - shift, false)) {
      this.depth--;
      return true;
    }
    planLength = mark;
    this.retained.length = retainedMark;
    if (shift !== 0) {
      this.depth--;
      return false;
    }
    const rebased = this.tryNode(data, 0, true);
    if (!rebased) throw new UnsupportedError(Status.internal, `could not export type id ${data.type.typeId} at offset ${data.offset}`);
    this.depth--;
    return true;
  }

  /** Plans one node with C offset `offset`. `rebase`: the node's JS
   * buffers start at C slot 0 (offset 0) instead of at `data.offset`. */
  private tryNode(data: Data, offset: number, rebase: boolean): boolean {
    if (offset < 0) return false;
    // Where C starts reading this node's slots: its own offset plus what its
    // parent adds (`data.offset`, or 0 when re-based). Children of structs,
    // sparse unions and fixed-size lists are shifted by that, not by the
    // node's own C offset alone.
    const start = rebase ? 0 : data.offset;
    const type = data.type;
    const typeId = data.type.typeId; // not data.typeId: a second apache-arrow instance's Data may lack the getter
    const isUnion = typeId === Type.Union;
    // C offset vs. the JS start of value buffers: `lead` slots before it.
    const lead = rebase ? 0 : data.offset;
    const header = planLength;
    // A child C reads from the parent's start on: it must span the slots
    // before this node's apache-arrow start too (`start - offset` of them;
    // they are in memory, apache-arrow sliced them away), and its null
    // count covers that longer range, so it is unknown then.
    const lead0 = start - offset;
    // Unions have no validity; a null array's slots are all null.
    const nulls = isUnion || typeId === Type.Null ? 0 : nullCountOf(data);
    const knownNulls = typeId === Type.Null ? data.length + start - offset : nulls;
    push(data.length + lead0);
    // The C range is longer than apache-arrow's by the lead slots: their
    // nulls are counted too (one pass over the bitmap).
    const bitmapBits = data.nullBitmap as Uint8Array | undefined;
    push(lead0 > 0 && knownNulls > 0 && typeId !== Type.Null && bitmapBits ? unsetBits(bitmapBits, offset, start + data.length) : knownNulls);
    push(offset);
    push(0); // n_buffers, patched below
    push(0); // n_children, patched below
    push(typeId === Type.Dictionary ? 1 : 0);
    this.nBuffers = 0;

    let children: readonly Data[] = noChildren;
    let childShift = 0; // what C adds to each child's index
    switch (typeId) {
      case Type.Null:
        planWords[header + 2] = 0; // a null array has no buffers: any offset
        break;
      case Type.Bool: {
        if (!this.validity(data, rebase, nulls)) return false;
        const values = data.values as Uint8Array;
        if (!rebase || data.offset % 8 === 0) {
          if (!this.buffer(rebase ? this.keep(values.subarray(data.offset >> 3)) : this.keep(values))) return false;
        } else {
          if (!this.buffer(this.keep(shiftBits(values, data.offset, data.length, 0)))) return false;
        }
        break;
      }
      case Type.Int: case Type.Float: case Type.Decimal: case Type.Date: case Type.Time:
      case Type.Timestamp: case Type.Interval: case Type.Duration: case Type.FixedSizeBinary:
      case Type.Dictionary: {
        if (!this.validity(data, rebase, nulls)) return false;
        if (!this.buffer(this.backed(data.values as NodeJS.TypedArray, lead === 0 ? 0 : lead * slotBytes(data)))) return false;
        if (typeId !== Type.Dictionary && offset === 0 && lead0 === 0 && !rebase) this.rememberLeaf(data, header);
        break;
      }
      case Type.Binary: case Type.Utf8: case Type.LargeBinary: case Type.LargeUtf8: {
        if (!this.validity(data, rebase, nulls)) return false;
        if (!this.buffer(this.offsets(data.valueOffsets as Int32Array | BigInt64Array | undefined, lead, data.length))) return false;
        if (!this.buffer(this.keep(data.values as Uint8Array))) return false;
        break;
      }
      case Type.BinaryView: case Type.Utf8View: {
        if (!this.validity(data, rebase, nulls)) return false;
        if (!this.buffer(this.backed(data.values as Uint8Array, lead * 16))) return false;
        const variadic = data.variadicBuffers ?? [];
        for (const v of variadic) this.buffer(this.keep(v));
        const sizes = new BigInt64Array(variadic.length);
        variadic.forEach((v, i) => (sizes[i] = BigInt(v.byteLength)));
        this.buffer(this.keep(sizes));
        break;
      }
      case Type.List: case Type.LargeList: case Type.Map: {
        if (!this.validity(data, rebase, nulls)) return false;
        if (!this.buffer(this.offsets(data.valueOffsets as Int32Array | BigInt64Array | undefined, lead, data.length))) return false;
        children = data.children;
        break;
      }
      case Type.FixedSizeList:
        if (!this.validity(data, rebase, nulls)) return false;
        children = data.children;
        childShift = start * (type as FixedSizeList).listSize;
        break;
      case Type.Struct:
        if (!this.validity(data, rebase, nulls)) return false;
        children = data.children;
        childShift = start;
        break;
      case Type.Union: {
        const union = type as Union;
        if (!this.buffer(this.backed(data.typeIds as Int8Array, lead))) return false;
        if (union.mode === UnionMode.Dense) {
          if (!this.buffer(this.backed(data.valueOffsets as Int32Array, lead * 4))) return false;
        } else {
          childShift = start;
        }
        children = data.children;
        break;
      }
      default:
        throw new UnsupportedError(Status.unsupported, `cannot export apache-arrow type id ${typeId}`);
    }
    planWords[header + 3] = this.nBuffers;
    planWords[header + 4] = children.length;
    for (const child of children) {
      if (!this.node(child, childShift)) return false;
    }
    if (typeId === Type.Dictionary) {
      const dictionary = data.dictionary;
      if (!dictionary) throw new InvalidArgumentError(Status.invalid_argument, "dictionary-encoded data has no dictionary");
      if (dictionary.data.length !== 1) {
        throw new UnsupportedError(Status.unsupported, `dictionary vector has ${dictionary.data.length} chunks; the C Data Interface needs exactly one (concatenate it first)`);
      }
      this.node(dictionary.data[0], 0);
      this.retained.push(dictionary);
    }
    return true;
  }
}

/** The exact null count: apache-arrow's when it knows it, else one
 * popcount of the bitmap (apache-arrow's nullCount getter counts and caches
 * it). Never -1, though the C interface allows it: DuckDB ignores the
 * bitmap of a dictionary column whose null_count is -1, and a sliced
 * apache-arrow column has an unknown count until asked. */
function nullCountOf(data: Data): number {
  const known = (data as unknown as { _nullCount: number })._nullCount;
  if (known !== undefined && known >= 0) return known;
  const bitmap = data.nullBitmap as Uint8Array | undefined;
  if (!bitmap || bitmap.byteLength === 0) return 0;
  return data.nullCount;
}

/** Unset bits in [from, to) of `bits`. */
function unsetBits(bits: Uint8Array, from: number, to: number): number {
  let unset = 0;
  for (let i = from; i < to; i++) if ((bits[i >> 3] & (1 << (i & 7))) === 0) unset++;
  return unset;
}

// ---------------------------------------------------------------------------
// Public entry points
// ---------------------------------------------------------------------------

/** What `exportArray` takes: apache-arrow Data, a Vector (one chunk), a
 * RecordBatch (exported as a struct array) or a Table of one batch (as
 * that batch; `exportStream` exports any Table as a stream). */
export type ArraySource = Data | Vector | RecordBatch | Table;

/** Options of `exportArray`, `exportBatches`. */
export type ExportOptions<K extends Exclude<ExportedKind, "schema"> = Exclude<ExportedKind, "schema">> = {
  /** "device_array" (default): ArrowSchema + ArrowDeviceArray on the CPU
   * device. "array": ArrowSchema + ArrowArray. */
  as?: K;
  /** The field a Data or Vector exports as (its name, nullability and
   * metadata; its type must be the data's). Default: unnamed, nullable. */
  field?: Field;
};

const arrayKinds = ["Data", "Vector", "RecordBatch", "Table"] as const;
const schemaKinds = ["DataType", "Field", "Schema"] as const;

const exportOptionKeys = ["as"] as const;
const exportArrayOptionKeys = ["as", "field"] as const;

/** Checks exportBatches-style options for `fn`; returns the struct kind. */
function exportKindArg(fn: string, options: ExportOptions | undefined, keys: readonly string[] = exportOptionKeys): Exclude<ExportedKind, "schema"> {
  const checked = optionsArg(fn, "options", options, keys);
  return oneOfArg(fn, "options.as", checked.as ?? "device_array", ["device_array", "array"]);
}

/** Whether a RecordBatch's own schema describes its columns: then it
 * exports as `source.data` under `source.schema` (whose template is
 * cached). Each column's type comes from its own Data: apache-arrow's
 * RecordBatch constructor merges repeated field names (Schema.assign), so
 * for them neither RecordBatch.schema nor (after a slice) the struct type
 * describes the columns any more; the child Data always does. */
function schemaFits(source: RecordBatch, entry: SchemaEntry = schemaEntryOf(source.schema)): boolean {
  return !entry.repeatsNames && source.schema.fields.length === source.data.children.length;
}

/** The struct Data and schema a RecordBatch exports as. */
function batchData(source: RecordBatch): { data: Data; schema: SchemaSource } {
  if (schemaFits(source)) return { data: source.data, schema: source.schema };
  const children = source.data.children;
  const fields = source.data.type.children.map((f, i) => (f.type === children[i]?.type ? f : new Field(f.name, children[i].type, f.nullable, f.metadata)));
  return { data: source.data, schema: new Schema(fields, source.schema.metadata) };
}

/** The single Data (plus its field) that `source` exports as. */
function dataOf(fn: string, source: ArraySource): { data: Data; schema: SchemaSource } {
  if (arrowKindOf(source, ["Table"]) !== null) {
    const batches = (source as Table).batches;
    if (batches.length !== 1) {
      throw new InvalidArgumentError(Status.invalid_argument, `${fn}: a Table with ${batches.length} batches cannot be one C array; export it as a stream (exportStream) or each batch (exportBatches)`);
    }
    source = batches[0]!;
  }
  if (source instanceof RecordBatch) return batchData(source);
  if (source instanceof Vector) {
    if (source.data.length !== 1) {
      throw new InvalidArgumentError(Status.invalid_argument, `a Vector with ${source.data.length} chunks cannot be one C array; export each chunk (vector.data[i]) or each batch of a table`);
    }
    return { data: source.data[0], schema: unnamedField(source.type) };
  }
  if (source instanceof Data) return { data: source, schema: unnamedField(source.type) };
  throw arrowKindError("exportArray", "source", source, arrayKinds);
}

/** Plans `data` into the shared plan words and registers its buffers (and
 * the import owners under them) under a keepalive id; a caller whose build
 * fails passes the id to `forgetUnused`. */
function planArray(data: Data): { words: number; keepaliveId: number } {
  const keepaliveId = planKeepalive(data);
  return { words: planLength, keepaliveId };
}

/** One planner for every export (planning never re-enters itself); each
 * plan gets a fresh `retained` list, which the keepalive registry keeps. */
const planner = new ArrayPlanner();

/** `planArray` without the result object: plans into `planWords` (its
 * length in `planLength`) and returns the keepalive id. */
function planKeepalive(data: Data): number {
  const batch = batchAgain(data);
  if (batch !== undefined) {
    planWords.set(batch.words);
    planLength = batch.words.length;
    return retainWithOwners(batch.retained, batch.owners);
  }
  return planFresh(data);
}

/** `planKeepalive` for data without a Batch memo that holds: plans it
 * from the start (remembering the plan as its memo where it may be one). */
function planFresh(data: Data): number {
  planLength = 0;
  const retained: unknown[] = [];
  planner.retained = retained;
  // (Setting an array's length costs a runtime call even when it is 0.)
  if (planner.owners.length !== 0) planner.owners.length = 0;
  planner.depth = 0;
  try {
    planner.node(data, 0);
  } finally {
    // Only the keepalive registry may hold what C points at: the planner
    // must not keep the last export's buffers reachable after C released.
    planner.retained = noRetained;
  }
  rememberBatch(data, retained, planner.owners);
  return retainWithOwners(retained, planner.owners);
}

const noRetained: unknown[] = [];

/**
 * Exports `source` as ArrowSchema + ArrowDeviceArray (CPU: device_id -1,
 * sync_event NULL, reserved zeroed) or ArrowSchema + ArrowArray, without
 * copying any data buffer. A RecordBatch exports as a struct array whose
 * schema carries the batch schema's metadata.
 *
 * The returned handle owns the two base structs. Hand their addresses
 * (`handle.schema`, `handle.array`) to C; a consumer that moves them takes
 * ownership. The JS buffers stay alive and in place until the consumer's
 * release runs (on any thread), even if the app drops every reference.
 * Call `handle.release()` (or `using`) when done: it releases whatever was
 * not moved.
 */
export function exportArray(source: ArraySource, options?: ExportOptions<"device_array">): ExportedArray<"device_array">;
/** `exportArray` as ArrowSchema + ArrowArray (`{ as: "array" }`). */
export function exportArray(source: ArraySource, options: ExportOptions<"array">): ExportedArray<"array">;
/** `exportArray` with the kind known only at run time. */
export function exportArray(source: ArraySource, options?: ExportOptions): ExportedArray<"array" | "device_array">;
export function exportArray(source: ArraySource, options?: ExportOptions): ExportedArray<"array" | "device_array"> {
  const kind = options === undefined ? "device_array" : exportKindArg("exportArray", options, exportArrayOptionKeys);
  return exportArrayAs("exportArray", source, kind, options?.field);
}

function exportArrayAs<K extends Exclude<ExportedKind, "schema">>(fn: string, source: ArraySource, kind: K, field?: Field): ExportedArray<K> {
  // An exact RecordBatch (the common case) is recognised without
  // apache-arrow's Symbol.hasInstance; anything else takes the full check.
  const sourceKind = (source as { constructor?: unknown } | null)?.constructor === RecordBatch ? "RecordBatch" : arrowArg(fn, "source", source, arrayKinds);
  if (field !== undefined) {
    if (sourceKind === "RecordBatch" || arrowKindOf(field, ["Field"]) === null) {
      throw argumentError(fn, "options.field", "an apache-arrow Field (for a Data or Vector source)", field);
    }
  }
  drainReleased();
  let data: Data;
  let template: number;
  const batchSource = source as RecordBatch;
  const entry = sourceKind === "RecordBatch" ? schemaEntryOf(batchSource.schema) : undefined;
  if (entry !== undefined && schemaFits(batchSource, entry)) {
    // batchData's common case, without its result object or a second
    // look-up of the schema's entry.
    data = batchSource.data;
    template = entry.template;
  } else {
    const exported = sourceKind === "RecordBatch" ? batchData(batchSource) : dataOf(fn, source);
    data = exported.data;
    if (field !== undefined && field.type.typeId !== data.type.typeId) {
      throw new InvalidArgumentError(Status.invalid_argument, `${fn}: options.field must have the data's own type`);
    }
    template = templateOf(field ?? exported.schema);
  }
  // One native call builds the slot, the schema (from the cached template)
  // and the array tree: copied from the memo's image when the same batch
  // was exported before (numbers only, no plan to read), else from a
  // fresh plan. The handle owns the slot from then on.
  const batch = batchAgain(data);
  let keepaliveId: number;
  let address: Pointer | null;
  if (batch !== undefined) {
    const image = imageOf(batch);
    keepaliveId = retainWithOwners(batch.retained, batch.owners);
    address = native.abd_export_slot_from_image(template as Pointer, image as Pointer, keepaliveId, exportSlotKinds[kind]);
  } else {
    keepaliveId = planFresh(data);
    address = native.abd_export_slot_new(template as Pointer, planWords, planLength, keepaliveId, exportSlotKinds[kind]);
  }
  if (!address) {
    forgetUnused(keepaliveId);
    check(native.abd_last_status() || Status.internal);
  }
  return adoptExportSlot(kind, address as number);
}

/** `exportArray(source, { as: "device_array" })`. */
export function exportDeviceArray(source: ArraySource): ExportedArray<"device_array"> {
  return exportArrayAs("exportDeviceArray", source, "device_array");
}

/** Exports a DataType, Field or Schema as an ArrowSchema. */
export function exportSchema(source: SchemaSource): ExportedArray<"schema"> {
  arrowArg("exportSchema", "source", source, schemaKinds);
  const address = native.abd_export_slot_new(templateOf(source) as Pointer, null, 0, 0, exportSlotKinds.schema);
  if (!address) check(native.abd_last_status() || Status.internal);
  return adoptExportSlot("schema", address as number);
}

/** Exports every batch of a table; one handle per batch. */
export function exportBatches(batches: Iterable<RecordBatch>, options?: ExportOptions<"device_array">): ExportedArray<"device_array">[];
/** `exportBatches` as ArrowSchema + ArrowArray pairs (`{ as: "array" }`). */
export function exportBatches(batches: Iterable<RecordBatch>, options: ExportOptions<"array">): ExportedArray<"array">[];
/** `exportBatches` with the kind known only at run time. */
export function exportBatches(batches: Iterable<RecordBatch>, options?: ExportOptions): ExportedArray<"array" | "device_array">[];
export function exportBatches(batches: Iterable<RecordBatch>, options: ExportOptions = {}): ExportedArray<"array" | "device_array">[] {
  const fn = "exportBatches";
  const kind = exportKindArg(fn, options);
  if (typeof batches !== "object" || batches === null || typeof (batches as Iterable<RecordBatch>)[Symbol.iterator] !== "function") {
    throw argumentError(fn, "batches", "an iterable of apache-arrow RecordBatch (e.g. table.batches)", batches);
  }
  const out: ExportedArray<"array" | "device_array">[] = [];
  try {
    let i = 0;
    for (const batch of batches) {
      arrowArg(fn, `batches[${i++}]`, batch, ["RecordBatch"]);
      out.push(exportArrayAs(fn, batch, kind));
    }
    return out;
  } catch (error) {
    for (const handle of out) handle.release();
    throw error;
  }
}

/** Internal, for other converters (streams, device): plan + build into an
 * existing native ArrowDeviceArray / ArrowSchema address. */
export const internal = {
  /** The array image of `data`'s Batch memo, made if need be; 0 without a
   * memo that holds (bench/export_fixed.ts times the native calls alone). */
  arrayImageOf: (data: Data): number => {
    const batch = batchAgain(data);
    return batch === undefined ? 0 : imageOf(batch);
  },
  buildSchema,
  templateOf,
  schemaPlan,
  planArray,
  planWords: () => planWords,
  dataOf,
  schemaNodeOf,
};
