/**
 * Trees produced by C (test/fixtures/c_producer.c), described in JS: each
 * buffer is copied into malloc'd producer memory (or given as a raw
 * address that must never be read), and the result lands in base structs
 * this library allocates (CSchema / CArray / CDeviceArray).
 */
import type { Pointer } from "bun:ffi";
import { Type, UnionMode, type Data, type Dictionary, type Map_, type Union, type Vector } from "apache-arrow";
import { CArray, CDeviceArray, CSchema, encodeMetadata } from "../../ts/raw.ts";
import { formatOf } from "../../ts/arrow/formats.ts";
import { fx } from "./fixtures.ts";

export type NodeSpec = {
  format: string;
  name?: string | null;
  flags?: number;
  length?: number;
  nullCount?: number;
  offset?: number;
  /** Defaults to buffers.length. */
  nBuffers?: number;
  /** Copied into producer memory; a number is a raw address; null is NULL. */
  buffers?: (ArrayBufferView | number | null)[];
  children?: NodeSpec[];
  dictionary?: NodeSpec;
  metadata?: [string, string][];
  /** Raw metadata bytes (possibly malformed), instead of `metadata`. */
  rawMetadata?: Uint8Array;
  /** fx_patch calls applied after the node is built. */
  patches?: [number, number][];
};

const cstr = (text: string) => Buffer.from(`${text}\0`);

/** Builds the fx_node tree; `nodes` collects every node in preorder
 * (children, then dictionary). */
export function buildNode(spec: NodeSpec, nodes: Pointer[] = []): Pointer {
  const buffers = spec.buffers ?? [];
  const name = spec.name === undefined ? "" : spec.name;
  const node = fx.fx_new(
    cstr(spec.format), name === null ? null : cstr(name), spec.flags ?? 2, spec.length ?? 0, spec.nullCount ?? 0,
    spec.offset ?? 0, spec.nBuffers ?? buffers.length,
  )!;
  nodes.push(node);
  buffers.forEach((b, i) => {
    if (b === null) return;
    if (typeof b === "number") fx.fx_set_buffer_address(node, i, b);
    else if (b.byteLength === 0) fx.fx_set_buffer(node, i, null, 0);
    else fx.fx_set_buffer(node, i, new Uint8Array(b.buffer, b.byteOffset, b.byteLength), b.byteLength);
  });
  if (spec.rawMetadata) fx.fx_set_metadata(node, spec.rawMetadata, spec.rawMetadata.length);
  if (spec.metadata) {
    const bytes = encodeMetadata(spec.metadata)!;
    fx.fx_set_metadata(node, bytes, bytes.length);
  }
  for (const child of spec.children ?? []) fx.fx_add_child(node, buildNode(child, nodes));
  if (spec.dictionary) fx.fx_set_dictionary(node, buildNode(spec.dictionary, nodes));
  for (const [what, value] of spec.patches ?? []) fx.fx_patch(node, what, value);
  return node;
}

export type Produced<A> = { schema: CSchema; array: A; nodes: Pointer[] };

/** A tree in an owned ArrowSchema + ArrowArray. */
export function produceArray(spec: NodeSpec): Produced<CArray> {
  const nodes: Pointer[] = [];
  const root = buildNode(spec, nodes);
  const schema = CSchema.allocate();
  const array = CArray.allocate();
  fx.fx_finish(root, schema.address, array.address);
  return { schema, array, nodes };
}

/** A tree in an owned ArrowSchema + ArrowDeviceArray (CPU unless told). */
export function produceDevice(spec: NodeSpec, deviceType = 1, deviceId = -1): Produced<CDeviceArray> {
  const nodes: Pointer[] = [];
  const root = buildNode(spec, nodes);
  const schema = CSchema.allocate();
  const array = CDeviceArray.allocate();
  fx.fx_finish_device(root, schema.address, array.address, deviceType, deviceId);
  return { schema, array, nodes };
}

/** Address of buffer `i` of a produced node (the producer's memory). */
export function producerBuffer(node: Pointer, i: number): number {
  return fx.fx_buffer_address(node, i) ?? 0;
}

/** Frees the landing structs (releasing whatever they still hold). */
export function disposeProduced(p: Produced<CArray | CDeviceArray>): void {
  p.schema.dispose();
  p.array.dispose();
}

/** Validity bitmap bytes for `valid` flags (LSB first). */
export function bits(valid: boolean[]): Uint8Array {
  const out = new Uint8Array(Math.max(1, Math.ceil(valid.length / 8)));
  valid.forEach((v, i) => { if (v) out[i >> 3] |= 1 << (i & 7); });
  return out;
}

/** The producer's counters: all releases happened exactly once and every
 * node is freed. */
export function producerClean(): { live: number; doubles: number } {
  return { live: Number(fx.fx_live_nodes()), doubles: Number(fx.fx_double_releases()) };
}

/**
 * The C layout of an unsliced apache-arrow Data (offset 0, values from slot
 * 0), every buffer to be copied into producer memory: validity only when
 * there are nulls, offsets, values, type ids, variadic buffers plus their
 * sizes, children and dictionary. `at` gives the root a C offset and
 * length (the C array then covers slots [offset, offset + length) of the
 * data, like `vector.slice(offset, length)`).
 */
export function specFromData(data: Data, name: string | null = "", nullable = true, at: { offset?: number; length?: number } = {}): NodeSpec {
  if (data.offset !== 0) throw new Error("specFromData needs unsliced data");
  const type = data.type;
  const validity = data.nullCount > 0 ? (data.nullBitmap as Uint8Array) : null;
  const offset = at.offset ?? 0;
  const length = at.length ?? data.length - offset;
  const nullCount = at.offset !== undefined || at.length !== undefined ? -1 : data.nullCount;
  const base = { format: formatOf(type), name, flags: nullable ? 2 : 0, length, offset, nullCount: validity ? nullCount : 0 };
  const childSpecs = () => data.children.map((c, i) => specFromData(c, type.children[i].name, type.children[i].nullable));
  switch (data.typeId) {
    case Type.Null:
      return { ...base, nullCount: length, buffers: [] };
    case Type.Bool: case Type.Int: case Type.Float: case Type.Decimal: case Type.Date: case Type.Time: case Type.Timestamp:
    case Type.Interval: case Type.Duration: case Type.FixedSizeBinary:
      return { ...base, buffers: [validity, data.values as ArrayBufferView] };
    case Type.Dictionary: {
      const dictionary = (data.dictionary as Vector).data[0];
      return {
        ...base,
        flags: base.flags | ((type as Dictionary).isOrdered ? 1 : 0),
        buffers: [validity, data.values as ArrayBufferView],
        dictionary: specFromData(dictionary, null, true),
      };
    }
    case Type.Binary: case Type.Utf8: case Type.LargeBinary: case Type.LargeUtf8:
      return { ...base, buffers: [validity, data.valueOffsets as ArrayBufferView, data.values as ArrayBufferView] };
    case Type.BinaryView: case Type.Utf8View: {
      const sizes = BigInt64Array.from(data.variadicBuffers, (b) => BigInt(b.byteLength));
      return { ...base, buffers: [validity, data.values as ArrayBufferView, ...data.variadicBuffers, sizes] };
    }
    case Type.List: case Type.LargeList:
      return { ...base, buffers: [validity, data.valueOffsets as ArrayBufferView], children: childSpecs() };
    case Type.Map:
      return { ...base, flags: base.flags | ((type as Map_).keysSorted ? 4 : 0), buffers: [validity, data.valueOffsets as ArrayBufferView], children: childSpecs() };
    case Type.FixedSizeList: case Type.Struct:
      return { ...base, buffers: [validity], children: childSpecs() };
    case Type.Union:
      return (type as Union).mode === UnionMode.Dense
        ? { ...base, nullCount: 0, buffers: [data.typeIds as Int8Array, data.valueOffsets as Int32Array], children: childSpecs() }
        : { ...base, nullCount: 0, buffers: [data.typeIds as Int8Array], children: childSpecs() };
  }
  throw new Error(`specFromData: no C layout for ${String(type)}`);
}
