/**
 * Array plans: apache-arrow Data -> the words zig/export/array.zig builds
 * an ArrowArray tree from (one header per node, then its buffer
 * addresses), without copying data buffers. The buffers are the JS typed
 * arrays themselves; every plan lists them (and the import owners under
 * them) for the keepalive registry, which holds them until the consumer
 * releases the tree (native/keepalive.ts).
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
 */
import { ptr } from "bun:ffi";
import { Data, Type, UnionMode, Vector, type FixedSizeList, type Union } from "apache-arrow";
import { describeValue } from "../core/args.ts";
import { maxNestingDepth } from "../core/abi/layout.ts";
import { InvalidArgumentError, ReleasedError, Status, TooDeepError, UnsupportedError } from "../core/errors.ts";
import { retainWithOwners } from "../native/keepalive.ts";
import { importOwnerOf } from "../native/imported.ts";
import { batchAgain, imageOf, leafHolds, leaves, rememberBatch, viewFacts, type Batch, type ViewFacts } from "./export_memo.ts";
import { nullCountOf, shiftBits, slotBytes, unsetBits } from "./export_bits.ts";
import { nativeArray } from "../core/ffi/native_arrays.ts";

/** Plan words, reused across exports (its backing store is large enough to
 * live out of line, so its address is stable during the native call). */
let planWords = nativeArray(Float64Array, 4096);
let planLength = 0;

function push(word: number) {
  if (planLength === planWords.length) {
    const bigger = nativeArray(Float64Array, planWords.length * 2);
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

/** One zero offset: 8 zero bytes, read as one int32 or one int64 offset.
 * The format gives every variable-size or list array `length + 1` offsets,
 * so a zero-length array still needs one (Arrow C++ rejects a NULL offsets
 * buffer there); apache-arrow leaves the offsets of empty arrays it builds
 * (e.g. the placeholder batch of a stream without batches) empty. Never
 * written; module-lifetime, so it outlives every export. */
const zeroOffset = nativeArray(BigInt64Array, 1);

const noChildren: readonly Data[] = Object.freeze([]);

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
    if (buffer.detached) throw new ReleasedError(Status.released, "cannot export data converted from an import that was disposed: its buffers are detached");
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
        const sizes = nativeArray(BigInt64Array, variadic.length);
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
    for (let i = 0; i < children.length; i++) {
      const child = children[i];
      // apache-arrow's `new RecordBatch({ name: vector })` puts Vectors
      // where Data belong; read on, their missing buffers would be a TypeError.
      if (!(child instanceof Data)) {
        throw new InvalidArgumentError(Status.invalid_argument, `child ${i} of a ${data.type} array is ${describeValue(child)}, not an apache-arrow Data${(child as unknown) instanceof Vector ? " (for a Vector, pass vector.data[0])" : ""}`);
      }
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

/** Plans `data` into the shared plan words and registers its buffers (and
 * the import owners under them) under a keepalive id; a caller whose build
 * fails passes the id to `forgetUnused`. */
export function planArray(data: Data): { words: number; keepaliveId: number } {
  const keepaliveId = planKeepalive(data);
  return { words: planLength, keepaliveId };
}

/** One planner for every export (planning never re-enters itself); each
 * plan gets a fresh `retained` list, which the keepalive registry keeps. */
const planner = new ArrayPlanner();

/** `planArray` without the result object: plans into `planWords` (its
 * length in `planLength`) and returns the keepalive id. */
function planKeepalive(data: Data): number {
  const batch = batchAgain(data, planWords.length);
  if (batch !== undefined) {
    planWords.set(batch.words);
    planLength = batch.words.length;
    return retainWithOwners(batch.retained, batch.owners);
  }
  return planFresh(data);
}

/** `planKeepalive` for data without a Batch memo that holds: plans it
 * from the start (remembering the plan as its memo where it may be one). */
export function planFresh(data: Data): number {
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
  rememberBatch(data, planWords, planLength, retained, planner.owners);
  return retainWithOwners(retained, planner.owners);
}

const noRetained: unknown[] = [];

/** The plan words (the last plan is `[0, plannedLength())`). */
export function plannedWords(): Float64Array {
  return planWords;
}

/** How many words the last plan pushed. */
export function plannedLength(): number {
  return planLength;
}

/** `data`'s Batch memo if it holds (arrow/export_memo.ts), else undefined. */
export function memoOf(data: Data): Batch | undefined {
  return batchAgain(data, planWords.length);
}

/** The array image of `data`'s Batch memo, made if need be; 0 without a
 * memo that holds (bench/export_fixed.ts times the native calls alone). */
export function arrayImageOf(data: Data): number {
  const batch = memoOf(data);
  return batch === undefined ? 0 : imageOf(batch);
}
