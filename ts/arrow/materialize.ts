/**
 * Copies for the layouts apache-arrow 21 cannot represent, used only when a
 * conversion asks for `{ materialize: true }` (arrow/data_builder.ts):
 * list-views become lists, run-end encoded arrays become plain arrays of
 * their values type. Everything here works on apache-arrow Data (values
 * already sliced to their start, bitmaps indexed from `Data.offset`).
 *
 * `take(data, indices)` is the workhorse: a new Data holding
 * `data[indices[k]]` for every k, for every apache-arrow type. Value buffers
 * are copied; variadic buffers of view types and dictionaries are shared.
 */
import { Data, DataType, Type, UnionMode, type FixedSizeList, type Union } from "apache-arrow";
import { InvalidLayoutError, OutOfMemoryError, Status, UnsupportedError } from "../core/errors.ts";

type Indices = Int32Array;

/** Most values one materialization copies (its indices are an Int32Array). */
const maxTaken = 2 ** 31 - 1;

function checkTaken(where: string, count: number): void {
  if (count > maxTaken) throw new OutOfMemoryError(Status.out_of_memory, `${where}: materializing would copy ${count} values, more than ${maxTaken}`);
}

function bitGet(bits: Uint8Array, i: number): boolean {
  return (bits[i >> 3] & (1 << (i & 7))) !== 0;
}

function bitSet(bits: Uint8Array, i: number): void {
  bits[i >> 3] |= 1 << (i & 7);
}

/** Validity of `data` gathered at `indices`: an empty bitmap and null count
 * 0 when every taken slot is valid. */
function takeValidity(data: Data, indices: Indices): { bitmap: Uint8Array; nullCount: number } {
  const n = indices.length;
  if (DataType.isUnion(data.type) || data.typeId === Type.Null || data.nullCount === 0 || !data.nullBitmap?.length) {
    return { bitmap: new Uint8Array(0), nullCount: 0 };
  }
  const bitmap = new Uint8Array((n + 7) >> 3);
  const source = data.nullBitmap;
  let nulls = 0;
  for (let k = 0; k < n; k++) {
    if (bitGet(source, data.offset + indices[k])) bitSet(bitmap, k);
    else nulls++;
  }
  return nulls === 0 ? { bitmap: new Uint8Array(0), nullCount: 0 } : { bitmap, nullCount: nulls };
}

/** The child index ranges [begin, end) of every taken slot, flattened. */
function expandRanges(begins: ArrayLike<number>, ends: ArrayLike<number>): Indices {
  let total = 0;
  for (let k = 0; k < begins.length; k++) total += ends[k] - begins[k];
  const out = new Int32Array(total);
  let at = 0;
  for (let k = 0; k < begins.length; k++) for (let j = begins[k]; j < ends[k]; j++) out[at++] = j;
  return out;
}

/** Offsets (length n + 1) of consecutive slots of the given sizes. */
function offsetsFromSizes(sizes: ArrayLike<number>, large: boolean): Int32Array | BigInt64Array {
  const n = sizes.length;
  if (large) {
    const out = new BigInt64Array(n + 1);
    let at = 0;
    for (let k = 0; k < n; k++) { at += sizes[k]; out[k + 1] = BigInt(at); }
    return out;
  }
  const out = new Int32Array(n + 1);
  for (let k = 0; k < n; k++) out[k + 1] = out[k] + sizes[k];
  return out;
}

function outOfRange(where: string, what: string): InvalidLayoutError {
  return new InvalidLayoutError(Status.invalid_layout, `${where}: ${what}`);
}

/** The path of child `i` of `data` in error messages. */
function childWhere(where: string, data: Data, i: number): string {
  const field = data.type.children?.[i];
  return `${where} > "${field?.name ?? ""}"`;
}

/**
 * The ranges [begins[k], ends[k]) that taken slots of `data` point at in a
 * child (or value buffer) of `limit` elements, proven before anything is
 * allocated: default validation reads only the first and last offsets, so
 * middle ones may go backwards or past the child. Their sum is bounded by
 * `maxTaken`, checked as it grows (no sum of producer values overflows).
 */
function provenRanges(where: string, what: string, unit: string, offsets: ArrayLike<number | bigint>, indices: Indices, limit: number): { begins: number[]; ends: number[]; total: number } {
  const n = indices.length;
  const begins = new Array<number>(n);
  const ends = new Array<number>(n);
  let total = 0;
  for (let k = 0; k < n; k++) {
    const i = indices[k];
    const begin = Number(offsets[i]);
    const end = Number(offsets[i + 1]);
    if (!(begin >= 0 && begin <= end && end <= limit)) {
      throw outOfRange(where, `${what} ${i} (offsets ${offsets[i]} to ${offsets[i + 1]}) is out of the ${limit} ${unit}`);
    }
    begins[k] = begin;
    ends[k] = end;
    total += end - begin;
    checkTaken(where, total);
  }
  return { begins, ends, total };
}

/**
 * `data` at `indices`, as a new Data of the same type. Everything it reads
 * is proven first, at every depth: every index lies in `data`, every
 * offset range in its child or value buffer, every dense-union offset in
 * its child, and the number of values to copy is bounded, so a
 * default-validated tree with hostile nested offsets gets an
 * InvalidLayoutError (`where` names the node) before any allocation or
 * loop over producer-claimed sizes.
 */
export function take(where: string, data: Data, indices: Indices): Data {
  const n = indices.length;
  const type = data.type;
  for (let k = 0; k < n; k++) {
    const i = indices[k];
    if (!(i >= 0 && i < data.length)) throw outOfRange(where, `slot ${i} is out of the array's ${data.length} values`);
  }
  const { bitmap, nullCount } = takeValidity(data, indices);
  switch (data.typeId) {
    case Type.Null:
      return new Data(type, 0, n, n);
    case Type.Bool: {
      const values = new Uint8Array((n + 7) >> 3);
      const source = data.values as Uint8Array;
      if (((data.offset + data.length + 7) >> 3) > source.length) throw outOfRange(where, `the values bitmap holds ${source.length} bytes, fewer than ${data.offset + data.length} bits`);
      for (let k = 0; k < n; k++) if (bitGet(source, data.offset + indices[k])) bitSet(values, k);
      return new Data(type, 0, n, nullCount, [undefined, values, bitmap]);
    }
    case Type.Int: case Type.Float: case Type.Decimal: case Type.Date: case Type.Time: case Type.Timestamp:
    case Type.Interval: case Type.Duration: case Type.FixedSizeBinary: case Type.Dictionary:
    case Type.BinaryView: case Type.Utf8View: {
      const stride = data.stride;
      const source = data.values as Uint8Array;
      if (data.length * stride > source.length) throw outOfRange(where, `the values buffer holds ${source.length} elements, fewer than ${data.length} slots of ${stride}`);
      const values = new (source.constructor as new (n: number) => Uint8Array)(n * stride);
      for (let k = 0; k < n; k++) values.set(source.subarray(indices[k] * stride, indices[k] * stride + stride), k * stride);
      return new Data(type, 0, n, nullCount, [undefined, values, bitmap], [], data.dictionary, data.variadicBuffers);
    }
    case Type.Binary: case Type.Utf8: case Type.LargeBinary: case Type.LargeUtf8: {
      const offsets = data.valueOffsets as Int32Array | BigInt64Array;
      const source = data.values as Uint8Array;
      const { begins, ends } = provenRanges(where, "value", "value bytes", offsets, indices, source.length);
      const sizes = begins.map((b, k) => ends[k] - b);
      const large = offsets instanceof BigInt64Array;
      const newOffsets = offsetsFromSizes(sizes, large);
      const bytes = new Uint8Array(Number(newOffsets[n]));
      for (let k = 0; k < n; k++) bytes.set(source.subarray(begins[k], ends[k]), Number(newOffsets[k]));
      return new Data(type, 0, n, nullCount, [newOffsets, bytes, bitmap]);
    }
    case Type.List: case Type.LargeList: case Type.Map: {
      const offsets = data.valueOffsets as Int32Array | BigInt64Array;
      const { begins, ends } = provenRanges(where, "list", "child values", offsets, indices, data.children[0].length);
      const sizes = begins.map((b, k) => ends[k] - b);
      const child = take(childWhere(where, data, 0), data.children[0], expandRanges(begins, ends));
      return new Data(type, 0, n, nullCount, [offsetsFromSizes(sizes, offsets instanceof BigInt64Array), undefined, bitmap], [child]);
    }
    case Type.FixedSizeList: {
      const size = (type as FixedSizeList).listSize;
      checkTaken(where, n * size);
      const begins = Array.from(indices, (i) => i * size);
      const ends = begins.map((b) => b + size);
      const child = take(childWhere(where, data, 0), data.children[0], expandRanges(begins, ends));
      return new Data(type, 0, n, nullCount, [undefined, undefined, bitmap], [child]);
    }
    case Type.Struct:
      return new Data(type, 0, n, nullCount, [undefined, undefined, bitmap], data.children.map((c, i) => take(childWhere(where, data, i), c, indices)));
    case Type.Union: {
      const union = type as Union;
      const typeIds = new Int8Array(n);
      const source = data.typeIds as Int8Array;
      for (let k = 0; k < n; k++) {
        typeIds[k] = source[indices[k]];
        if (union.typeIdToChildIndex[typeIds[k]] === undefined) throw outOfRange(where, `union slot ${indices[k]} has type id ${typeIds[k]}, which names no child`);
      }
      if (union.mode === UnionMode.Sparse) {
        return new Data(type, 0, n, 0, [undefined, undefined, undefined, typeIds], data.children.map((c, i) => take(childWhere(where, data, i), c, indices)));
      }
      const sourceOffsets = data.valueOffsets as Int32Array;
      const perChild: number[][] = data.children.map(() => []);
      const valueOffsets = new Int32Array(n);
      for (let k = 0; k < n; k++) {
        const child = union.typeIdToChildIndex[typeIds[k]];
        const at = sourceOffsets[indices[k]];
        const childLength = data.children[child].length;
        if (!(at >= 0 && at < childLength)) throw outOfRange(where, `dense union slot ${indices[k]} (offset ${at}) is out of child ${child}'s ${childLength} values`);
        valueOffsets[k] = perChild[child].length;
        perChild[child].push(at);
      }
      const children = data.children.map((c, i) => take(childWhere(where, data, i), c, Int32Array.from(perChild[i])));
      return new Data(type, 0, n, 0, [valueOffsets, undefined, undefined, typeIds], children);
    }
  }
  throw new UnsupportedError(Status.unsupported, `cannot copy values of type id ${type.typeId}`);
}

/**
 * A list (or large list) equal to a list-view. `offsets` and `sizes` hold
 * the view's `length` slots (already sliced to its start); `child` is the
 * converted child. Null slots become empty lists. When the ranges are
 * back to back in slot order, the child is shared (only offsets are new);
 * otherwise the child's values are copied into slot order.
 *
 * Only `full` validation reads every view: each valid slot's range is
 * checked against the child here, before anything is allocated or copied
 * (`where` names the node in the error).
 */
export function listViewToList(
  where: string, type: DataType, offset: number, length: number, nullCount: number, bitmap: Uint8Array,
  offsets: Int32Array | BigInt64Array, sizes: Int32Array | BigInt64Array, child: Data,
): Data {
  const valid = (k: number) => bitmap.length === 0 || bitGet(bitmap, offset + k);
  const childLength = child.length;
  const begins = new Array<number>(length);
  const ends = new Array<number>(length);
  let contiguous = true;
  let cursor = -1;
  let total = 0;
  for (let k = 0; k < length; k++) {
    const size = valid(k) ? Number(sizes[k]) : 0;
    if (size !== 0) {
      const begin = Number(offsets[k]);
      if (size < 0 || begin < 0 || begin > childLength || size > childLength - begin) {
        throw new InvalidLayoutError(Status.invalid_layout, `${where}: list view ${offset + k} (offset ${offsets[k]}, size ${sizes[k]}) is out of the child's ${childLength} values`);
      }
      total += size;
    }
    begins[k] = size > 0 ? Number(offsets[k]) : cursor < 0 ? 0 : cursor;
    ends[k] = begins[k] + size;
    if (size > 0) {
      if (cursor >= 0 && begins[k] !== cursor) contiguous = false;
      cursor = ends[k];
    }
  }
  const large = offsets instanceof BigInt64Array;
  if (contiguous) {
    const first = length > 0 ? begins.find((_, k) => ends[k] > begins[k]) ?? 0 : 0;
    const shifted = offsetsFromSizes(ends.map((e, k) => e - begins[k]), large);
    const total = Number(shifted[length]);
    // Back to back: the lists are child[first, first + total) in order.
    const sharedChild = child.slice(first, total);
    return new Data(type, offset, length, nullCount, [shifted, undefined, bitmap], [sharedChild]);
  }
  checkTaken(where, total);
  const taken = take(`${where} > "${(type.children?.[0]?.name) ?? ""}"`, child, expandRanges(begins, ends));
  return new Data(type, offset, length, nullCount, [offsetsFromSizes(ends.map((e, k) => e - begins[k]), large), undefined, bitmap], [taken]);
}

/** A plain array equal to a run-end encoded one: slot k (logical index
 * `offset + k` of the runs) takes the value of the run that covers it. */
export function runEndToPlain(where: string, runEnds: ArrayLike<number | bigint>, values: Data, offset: number, length: number): Data {
  checkTaken(where, length);
  const indices = new Int32Array(length);
  // Binary search the first run covering `offset`, then walk forward.
  let lo = 0;
  let hi = runEnds.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (Number(runEnds[mid]) > offset) hi = mid;
    else lo = mid + 1;
  }
  let run = lo;
  for (let k = 0; k < length; k++) {
    while (run < runEnds.length && Number(runEnds[run]) <= offset + k) run++;
    if (run >= runEnds.length) throw new InvalidLayoutError(Status.invalid_layout, `${where}: run-end encoded slot ${offset + k} is past the last run end`);
    indices[k] = run;
  }
  return take(where, values, indices);
}
