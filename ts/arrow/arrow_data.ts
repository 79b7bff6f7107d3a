/**
 * apache-arrow `Data` objects for the import hot path, made without the
 * constructor when that gives the very same object.
 *
 * `new Data(...)` costs ~200 ns (measured, Bun 1.4.5, apache-arrow 21):
 * an `instanceof Data` test of its buffers argument through apache-arrow's
 * own Symbol.hasInstance, a stride lookup by type, and the buffers array
 * the caller allocates. An import makes one Data per node, so for many
 * small columns or a stream of small batches it is a large part of the
 * conversion. `newData` stores the same own properties, in the
 * constructor's order and under the same conditions (so objects share the
 * constructor's hidden class and apache-arrow's code stays monomorphic),
 * with the stride learnt once per type object from a real constructor
 * call. It takes the buffers as arguments, not as an array.
 *
 * A probe at load compares both ways on every kind of buffer set this
 * library builds (own property names in order, and every value); any
 * difference (another apache-arrow version) makes `newData` call the
 * constructor instead, always.
 *
 * Owns nothing: the Data references what it is given.
 */
import { Data, DataType, Dictionary, Int32, Struct, Utf8, type Field } from "apache-arrow";

/** apache-arrow's stride of each type object (from its own constructor). */
const strides = new WeakMap<DataType, number>();

/** apache-arrow's `Data.stride` for `type`. */
export function strideOf(type: DataType): number {
  let stride = strides.get(type);
  if (stride === undefined) {
    stride = new Data(type, 0, 0, 0).stride;
    strides.set(type, stride);
  }
  return stride;
}

/** The `children` of a Data without children and the `variadicBuffers` of
 * one without variadic buffers, when the caller gives none: one frozen
 * empty array shared by every Data made here, where the constructor makes
 * two new ones per Data (two allocations per column of every import; its
 * own `clone` shares them between Data too). Nothing in apache-arrow
 * writes into them; a write from outside throws instead of reaching every
 * other Data. */
export const noArrays = Object.freeze([]) as unknown as never[];

type DataFields = {
  type: DataType;
  children: Data[];
  dictionary: unknown;
  offset: number;
  length: number;
  _nullCount: number;
  stride: number;
  valueOffsets?: unknown;
  values?: unknown;
  nullBitmap?: unknown;
  typeIds?: unknown;
  variadicBuffers: unknown[];
};

/** The constructor's stores, in its order (apache-arrow 21's data.mjs). */
function assembled(
  type: DataType, offset: number, length: number, nullCount: number,
  valueOffsets: unknown, values: unknown, nullBitmap: unknown,
  children: Data[] | undefined, dictionary: unknown, typeIds: unknown, variadicBuffers: unknown[] | undefined,
): Data {
  const data = Object.create(Data.prototype) as DataFields;
  data.type = type;
  data.children = children ?? noArrays;
  data.dictionary = dictionary;
  data.offset = Math.floor(Math.max(offset || 0, 0));
  data.length = Math.floor(Math.max(length || 0, 0));
  data._nullCount = Math.floor(Math.max(nullCount || 0, -1));
  data.stride = strideOf(type);
  if (valueOffsets) data.valueOffsets = valueOffsets;
  if (values) data.values = values;
  if (nullBitmap) data.nullBitmap = nullBitmap;
  if (typeIds) data.typeIds = typeIds;
  data.variadicBuffers = variadicBuffers ?? noArrays;
  return data as unknown as Data;
}

function constructed(
  type: DataType, offset: number, length: number, nullCount: number,
  valueOffsets: unknown, values: unknown, nullBitmap: unknown,
  children: Data[] | undefined, dictionary: unknown, typeIds: unknown, variadicBuffers: unknown[] | undefined,
): Data {
  const buffers = [valueOffsets, values, nullBitmap, typeIds] as unknown as ConstructorParameters<typeof Data>[4];
  return new Data(type, offset, length, nullCount, buffers, children, dictionary as ConstructorParameters<typeof Data>[6], variadicBuffers as Uint8Array[] | undefined);
}

/** Same own properties, in the same order, with identical values. */
function sameData(a: Data, b: Data): boolean {
  const keysA = Object.keys(a);
  const keysB = Object.keys(b);
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b) || keysA.join(",") !== keysB.join(",")) return false;
  for (const key of keysA) {
    const x = (a as unknown as Record<string, unknown>)[key];
    const y = (b as unknown as Record<string, unknown>)[key];
    if (x === y) continue;
    // Fresh empty arrays (children, variadicBuffers) compare by content.
    if (!(Array.isArray(x) && Array.isArray(y) && x.length === 0 && y.length === 0)) return false;
  }
  return true;
}

/** Whether `assembled` matches the constructor on every shape of call the
 * library makes: values + bitmap, offsets + data, no buffers, children,
 * a dictionary, type ids, variadic buffers, odd numbers. */
function assemblyMatches(): boolean {
  const int32 = new Int32();
  const utf8 = new Utf8();
  const values = new Int32Array(4);
  const bitmap = new Uint8Array(1);
  const offsets = new Int32Array(5);
  const bytes = new Uint8Array(3);
  const child = new Data(int32, 0, 4, 0, [undefined, values, undefined] as never);
  const struct = new Struct([{ name: "a", type: int32, nullable: true } as unknown as Field]);
  const dictionary = new Dictionary(utf8, int32);
  const cases: Parameters<typeof assembled>[] = [
    [int32, 0, 4, 1, undefined, values, bitmap, undefined, undefined, undefined, undefined],
    [int32, 2, 2, 0, undefined, values, new Uint8Array(0), undefined, undefined, undefined, undefined],
    [int32, 0, 4, -1, undefined, values, undefined, undefined, undefined, undefined, undefined],
    [utf8, 1, 4, 0, offsets, bytes, bitmap, undefined, undefined, undefined, undefined],
    [struct, 0, 4, 0, undefined, undefined, bitmap, [child], undefined, undefined, undefined],
    [dictionary, 0, 4, 0, undefined, values, undefined, [], child, undefined, undefined],
    [int32, 0, 4, 4, undefined, undefined, undefined, undefined, undefined, undefined, undefined],
    [struct, 0, 4, 0, offsets, undefined, undefined, [child], undefined, values, undefined],
    [utf8, 0, 4, 0, undefined, values, bitmap, [], undefined, undefined, [bytes]],
    [int32, 1.5, 4.5, -3, undefined, values, bitmap, undefined, undefined, undefined, undefined],
  ];
  try {
    return cases.every((args) => sameData(assembled(...args), constructed(...args)));
  } catch {
    return false;
  }
}

/** True when `newData` assembles (this apache-arrow's constructor stores
 * what the probe expects); false: it calls the constructor. */
export const dataAssembled = assemblyMatches();

/**
 * `new Data(type, offset, length, nullCount, [valueOffsets, values,
 * nullBitmap, typeIds], children, dictionary, variadicBuffers)`, the same
 * object, faster (see the module comment).
 */
export const newData: (
  type: DataType, offset: number, length: number, nullCount: number,
  valueOffsets: unknown, values: unknown, nullBitmap: unknown,
  children?: Data[], dictionary?: unknown, typeIds?: unknown, variadicBuffers?: unknown[],
) => Data = dataAssembled ? assembled : constructed;

/** For tests: both ways of making the same Data. */
export const dataMakers = { assembled, constructed, sameData };
