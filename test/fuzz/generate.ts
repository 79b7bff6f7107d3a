/**
 * The fuzzer's cases: a seeded, structure-aware generator. Case `i` of seed
 * `s` is always the same tree: a valid tree of one of the types of
 * test/helpers/type_cases.ts (plus list-views and run-end encoding, which
 * apache-arrow cannot build), sometimes sliced or wrapped in a struct, then
 * zero or more mutations of its formats, counts, lengths, offsets, buffer
 * contents (offsets, type ids, dictionary indices, UTF-8, views, run ends),
 * children, dictionary, metadata and device fields.
 *
 * Cases are plain NodeSpec descriptions (test/helpers/producer.ts): the C
 * producer copies every buffer into memory that ends right against a
 * PROT_NONE page (fx_set_guarded), so a read past a buffer faults.
 */
import type { Data } from "apache-arrow";
import { specFromData, type NodeSpec } from "../helpers/producer.ts";
import { typeCases } from "../helpers/type_cases.ts";

/** mulberry32: small, fast, and good enough to pick mutations. */
export class Rng {
  #state: number;
  constructor(seed: number) {
    this.#state = seed >>> 0;
  }
  next(): number {
    let t = (this.#state = (this.#state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)];
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
}

/** The generator state of case `index` of `seed`. */
export function caseRng(seed: number, index: number): Rng {
  // Mix seed and index so neighbouring cases start far apart.
  let h = Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(index + 1, 0xc2b2ae35);
  h ^= h >>> 16;
  return new Rng(h);
}

/** One fuzz case: the tree, the device it claims to live on, and what was
 * done to it (for the report). */
export type FuzzCase = {
  spec: NodeSpec;
  deviceType: number;
  deviceId: number;
  mutations: string[];
  /** "yes": every buffer and metadata blob is as large as the tree
   * implies (makeHonest); "buffers": some buffer would be too large to
   * give (the tree is imported at `minimal`, which reads no buffer); "no":
   * a metadata blob claims more than could be given (every level reads
   * metadata lengths: not run). */
  honest: "yes" | "buffers" | "no";
};

// ---------------------------------------------------------------------------
// Valid trees

const baseData: { name: string; data: Data }[] = Object.entries(typeCases).map(([name, c]) => ({ name, data: c.make().data[0] }));

const int32 = (values: number[], name = "item"): NodeSpec => ({ format: "i", name, length: values.length, nullCount: 0, buffers: [null, Int32Array.from(values)] });

/** Types apache-arrow 21 cannot build, described directly. */
const extraSpecs: { name: string; make: () => NodeSpec }[] = [
  {
    name: "list_view",
    make: () => ({
      format: "+vl", name: "", length: 4, nullCount: 1,
      buffers: [Uint8Array.of(0b1101), Int32Array.of(0, 5, 2, 1), Int32Array.of(2, 0, 3, 4)], children: [int32([1, 2, 3, 4, 5, 6])],
    }),
  },
  {
    name: "large_list_view",
    make: () => ({
      format: "+vL", name: "", length: 3, nullCount: 0,
      buffers: [null, BigInt64Array.of(4n, 0n, 1n), BigInt64Array.of(2n, 1n, 3n)], children: [int32([1, 2, 3, 4, 5, 6])],
    }),
  },
  {
    name: "run_end_encoded",
    make: () => ({
      format: "+r", name: "", length: 7, nullCount: 0, buffers: [],
      children: [
        { format: "i", name: "run_ends", length: 3, nullCount: 0, buffers: [null, Int32Array.of(2, 5, 7)] },
        { format: "u", name: "values", length: 3, nullCount: 1, buffers: [Uint8Array.of(0b101), Int32Array.of(0, 1, 1, 3), new TextEncoder().encode("abc")] },
      ],
    }),
  },
  {
    name: "run_end_encoded_int16",
    make: () => ({
      format: "+r", name: "", length: 4, nullCount: 0, buffers: [],
      children: [
        { format: "s", name: "run_ends", length: 2, nullCount: 0, buffers: [null, Int16Array.of(1, 4)] },
        { format: "g", name: "values", length: 2, nullCount: 0, buffers: [null, Float64Array.of(1.5, -2)] },
      ],
    }),
  },
];

/** The names of every base tree (type_cases + the extras). */
export const baseNames: string[] = [...baseData.map((b) => b.name), ...extraSpecs.map((e) => e.name)];

function validTree(rng: Rng): { spec: NodeSpec; name: string } {
  const k = rng.int(baseNames.length);
  let spec: NodeSpec;
  const name = baseNames[k];
  if (k < baseData.length) {
    const data = baseData[k].data;
    // Sometimes a slice: C offset and shorter length.
    if (rng.chance(0.3) && data.length > 1) {
      const offset = rng.int(data.length);
      spec = specFromData(data, "", true, { offset, length: rng.int(data.length - offset + 1) });
    } else {
      spec = specFromData(data, "");
    }
  } else {
    spec = extraSpecs[k - baseData.length].make();
  }
  // Sometimes a record batch of it.
  if (rng.chance(0.3)) {
    const length = spec.length ?? 0;
    spec = { format: "+s", name: "", length, nullCount: 0, buffers: [null], children: [{ ...spec, name: "col" }], metadata: rng.chance(0.5) ? [["k", "v"]] : undefined };
  }
  return { spec, name };
}

// ---------------------------------------------------------------------------
// Mutations

const interesting = [0, 1, -1, 2, 3, 7, 8, 12, 13, 16, 127, 128, 255, 256, 32767, 65535, 2 ** 31 - 1, -(2 ** 31), 2 ** 32, 2 ** 40, 2 ** 53, -(2 ** 53)];
const formats = ["n", "b", "c", "C", "s", "S", "i", "I", "l", "L", "e", "f", "g", "z", "Z", "vz", "vu", "u", "U", "d:9,2,32", "d:38,10", "d:76,2,256", "w:3", "w:0", "w:-1", "tdD", "tdm", "tts", "ttn", "tsu:UTC", "tDs", "tiM", "tiD", "tin", "+l", "+L", "+vl", "+vL", "+w:2", "+w:0", "+s", "+m", "+ud:4,9", "+us:1,5", "+ud:0", "+us:", "+r", "", "x", "+", "d:", "+ud:4,4", "tss", "u\u00e9"];

type Node = NodeSpec;

/** Every node in preorder, with a way to replace it. */
function nodesOf(root: Node): Node[] {
  const out: Node[] = [];
  const visit = (n: Node) => {
    out.push(n);
    for (const c of n.children ?? []) visit(c);
    if (n.dictionary) visit(n.dictionary);
  };
  visit(root);
  return out;
}

function tweak(rng: Rng, value: number): number {
  switch (rng.int(4)) {
    case 0: return value + 1;
    case 1: return value - 1;
    case 2: return rng.pick(interesting);
    default: return value * 2 + rng.int(3);
  }
}

/** A copy of the bytes of `b` (mutations never touch the shared type cases). */
function bytesOf(b: ArrayBufferView): Uint8Array {
  return new Uint8Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
}

/** Writes an interesting value at a random aligned position of a buffer,
 * with a width that suits offsets, ids, indices, views, run ends or bytes. */
function mutateContents(rng: Rng, node: Node, mutations: string[]): void {
  const buffers = node.buffers ?? [];
  const candidates = buffers.map((b, i) => ({ b, i })).filter((x) => x.b !== null && typeof x.b !== "number" && (x.b as ArrayBufferView).byteLength > 0);
  if (candidates.length === 0) return;
  const { b, i } = rng.pick(candidates);
  const bytes = bytesOf(b as ArrayBufferView);
  const view = new DataView(bytes.buffer);
  const width = rng.pick([1, 4, 4, 8, 2]);
  const slots = Math.floor(bytes.length / width);
  if (slots === 0) return;
  const at = rng.int(slots) * width;
  const value = rng.chance(0.2) ? rng.int(256) : rng.pick(interesting);
  switch (width) {
    case 1: view.setUint8(at, value & 0xff); break;
    case 2: view.setInt16(at, value & 0xffff, true); break;
    case 4: view.setInt32(at, value | 0, true); break;
    // 8 bytes: sometimes INT64_MAX / INT64_MIN, which no number holds.
    default: view.setBigInt64(at, rng.chance(0.2) ? rng.pick([2n ** 63n - 1n, -(2n ** 63n)]) : BigInt.asIntN(64, BigInt(Math.trunc(value))), true); break;
  }
  // UTF-8 breakers: a lone continuation byte or a truncated sequence.
  if (width === 1 && rng.chance(0.5)) view.setUint8(at, rng.pick([0x80, 0xc3, 0xe2, 0xff, 0xed]));
  buffers[i] = bytes;
  mutations.push(`buffer ${i} of ${node.format}: ${width}-byte ${value} at ${at}`);
}

function mutate(rng: Rng, root: Node, device: { type: number; id: number }, mutations: string[]): void {
  const nodes = nodesOf(root);
  const node = rng.pick(nodes);
  const what = rng.int(14);
  switch (what) {
    case 0: node.format = rng.pick(formats); mutations.push(`format ${node.format}`); break;
    case 1: node.length = tweak(rng, node.length ?? 0); mutations.push(`length ${node.length}`); break;
    case 2: node.nullCount = rng.pick([-1, -2, 0, (node.length ?? 0) + 1, tweak(rng, node.nullCount ?? 0)]); mutations.push(`null_count ${node.nullCount}`); break;
    case 3: node.offset = tweak(rng, node.offset ?? 0); mutations.push(`offset ${node.offset}`); break;
    case 4: node.nBuffers = tweak(rng, node.buffers?.length ?? 0) & 15; mutations.push(`n_buffers ${node.nBuffers}`); break;
    case 5: {
      const buffers = node.buffers ?? [];
      if (buffers.length > 0) {
        const i = rng.int(buffers.length);
        buffers[i] = null;
        mutations.push(`buffer ${i} NULL`);
      }
      break;
    }
    case 6: case 7: case 8: mutateContents(rng, node, mutations); break;
    case 9: {
      const children = node.children ?? [];
      if (children.length > 0 && rng.chance(0.5)) {
        node.children = children.slice(0, -1);
        mutations.push("child dropped");
      } else if (children.length > 1) {
        node.children = [...children].reverse();
        mutations.push("children swapped");
      } else {
        node.children = [...children, int32([1, 2, 3], "extra")];
        mutations.push("child added");
      }
      break;
    }
    case 10:
      if (node.dictionary && rng.chance(0.5)) {
        node.dictionary = undefined;
        mutations.push("dictionary dropped");
      } else {
        node.dictionary = { format: "u", name: "", length: 2, nullCount: 0, buffers: [null, Int32Array.of(0, 1, 3), Uint8Array.of(0x61, 0x62, 0xff)] };
        mutations.push("dictionary added");
      }
      break;
    case 11: {
      // Structured: counts and lengths that are sane, negative, or past
      // the library's limits; keys and values of random bytes.
      const count = rng.pick([0, 1, 2, 3, -1, 2 ** 20 + 1, 2 ** 31 - 1]);
      const parts: number[] = [];
      const i32 = (v: number) => { for (let k = 0; k < 4; k++) parts.push((v >> (8 * k)) & 0xff); };
      i32(count);
      for (let pair = 0; pair < Math.min(Math.max(count, 0), 3) * 2; pair++) {
        const length = rng.pick([0, 1, 3, 8, -1, 2 ** 26 + 1, 2 ** 31 - 1]);
        i32(length);
        for (let k = 0; k < Math.min(Math.max(length, 0), 8); k++) parts.push(rng.int(256));
      }
      node.rawMetadata = Uint8Array.from(parts);
      mutations.push(`metadata count ${count}, ${parts.length} bytes`);
      break;
    }
    case 12:
      device.type = rng.pick([1, 1, 2, 3, 0, -1, 13, 999, 2 ** 31 - 1]);
      device.id = rng.pick([-1, 0, 1, 2 ** 31, -5]);
      mutations.push(`device ${device.type}/${device.id}`);
      break;
    default:
      node.flags = rng.pick([0, 1, 2, 4, 7, -1, 2 ** 31 - 1]);
      mutations.push(`flags ${node.flags}`);
      break;
  }
}

/** Clones a spec deeply enough that mutations never touch the base trees
 * (buffers are replaced, never written, except through mutateContents'
 * copy). */
function cloneSpec(spec: NodeSpec): NodeSpec {
  return {
    ...spec,
    buffers: spec.buffers ? [...spec.buffers] : undefined,
    children: spec.children?.map(cloneSpec),
    dictionary: spec.dictionary ? cloneSpec(spec.dictionary) : undefined,
  };
}

// ---------------------------------------------------------------------------
// Honest sizes

/** Largest buffer the generator pads to (bigger claims are left as lies). */
const maxPadBytes = 1 << 22;

/** Bytes per value of a fixed-width format, or 0 for other formats. */
function fixedWidth(format: string): number {
  if (format === "c" || format === "C") return 1;
  if (format === "s" || format === "S" || format === "e") return 2;
  if (["i", "I", "f", "tdD", "tts", "ttm", "tiM"].includes(format)) return 4;
  if (["l", "L", "g", "tdm", "ttu", "ttn", "tiD"].includes(format) || format.startsWith("ts") || format.startsWith("tD")) return 8;
  if (format === "tin") return 16;
  const decimal = /^d:\d+,-?\d+(?:,(\d+))?$/.exec(format);
  if (decimal) return Number(decimal[1] ?? 128) / 8;
  const fixed = /^w:(\d+)$/.exec(format);
  if (fixed) return Number(fixed[1]);
  return 0;
}

function readInt(b: ArrayBufferView | number | null | undefined, index: number, width: 4 | 8): number | null {
  if (b === null || b === undefined || typeof b === "number") return null;
  if (index < 0 || (index + 1) * width > b.byteLength) return null;
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  return width === 4 ? view.getInt32(index * width, true) : Number(view.getBigInt64(index * width, true));
}

/**
 * Pads every buffer to the size its node's format, offset + length, offsets
 * and variadic sizes imply (Arrow C++'s importer sizes buffers the same
 * way), so that a tree lies about relations, never about how much memory
 * exists: the guard pages then catch reads past what the tree implies.
 * Returns "buffers" when some buffer would have to exceed maxPadBytes (the case
 * is then imported at level `minimal` only, which reads no buffer), and
 * metadata blobs likewise (see honestMetadata).
 */
export function makeHonest(spec: NodeSpec): "yes" | "buffers" | "no" {
  let honest = true;
  let metadataHonest = true;
  const visit = (node: NodeSpec) => {
    const buffers = node.buffers ?? [];
    const n = (node.offset ?? 0) + (node.length ?? 0);
    const f = node.format;
    const need: (number | null)[] = buffers.map(() => null);
    const set = (i: number, bytes: number | null) => { if (i < need.length) need[i] = bytes; };
    const hasValidity = !(f === "n" || f === "+r" || f.startsWith("+u"));
    if (hasValidity) set(0, Math.ceil(n / 8));
    const width = fixedWidth(f);
    if (f === "b") set(1, Math.ceil(n / 8));
    else if (width > 0) set(1, width * n);
    else if (f === "z" || f === "u" || f === "Z" || f === "U" || f === "+l" || f === "+m" || f === "+L") {
      const w = f === "Z" || f === "U" || f === "+L" ? 8 : 4;
      set(1, w * (n + 1));
      if (f.length === 1 && n + 1 <= maxPadBytes) {
        pad(buffers, 1, w * (n + 1));
        set(2, readInt(buffers[1], n, w));
      }
    } else if (f === "vz" || f === "vu") {
      set(1, 16 * n);
      const variadic = buffers.length - 3;
      if (variadic >= 0) {
        set(buffers.length - 1, 8 * variadic);
        pad(buffers, buffers.length - 1, 8 * variadic);
        for (let j = 0; j < variadic; j++) set(2 + j, readInt(buffers[buffers.length - 1], j, 8));
      }
    } else if (f === "+vl" || f === "+vL") {
      set(1, (f === "+vL" ? 8 : 4) * n);
      set(2, (f === "+vL" ? 8 : 4) * n);
    } else if (f.startsWith("+ud")) {
      set(0, n);
      set(1, 4 * n);
    } else if (f.startsWith("+us")) {
      set(0, n);
    }
    need.forEach((bytes, i) => {
      if (bytes === null || bytes <= 0) return;
      if (!Number.isFinite(bytes) || bytes > maxPadBytes) honest = false;
      else pad(buffers, i, bytes);
    });
    if (node.rawMetadata && !honestMetadata(node)) metadataHonest = false;
    node.children?.forEach(visit);
    if (node.dictionary) visit(node.dictionary);
  };
  visit(spec);
  return !metadataHonest ? "no" : honest ? "yes" : "buffers";
}

/** Metadata carries no size either: pads the blob (with zeros, which read
 * as empty keys and values) to what its count and lengths claim. False when
 * that is more than maxPadBytes. Stops where a reader must stop (a negative
 * count or length). */
function honestMetadata(node: NodeSpec): boolean {
  let blob = node.rawMetadata!;
  const ensure = (bytes: number) => {
    if (blob.length >= bytes) return;
    const grown = new Uint8Array(bytes);
    grown.set(blob);
    blob = grown;
  };
  const readI32 = (at: number) => new DataView(blob.buffer, blob.byteOffset, blob.byteLength).getInt32(at, true);
  ensure(4);
  const count = readI32(0);
  let at = 4;
  let honest = true;
  outer: for (let pair = 0; pair < Math.max(0, count); pair++) {
    if (at >= blob.length) {
      // Past the blob, padding is zeros: every remaining pair is 8 bytes.
      at += 8 * (count - pair);
      if (at > maxPadBytes) honest = false;
      else ensure(at);
      break;
    }
    for (let half = 0; half < 2; half++) {
      if (at + 4 > maxPadBytes) { honest = false; break outer; }
      ensure(at + 4);
      const length = readI32(at);
      if (length < 0) break outer;
      at += 4 + length;
      if (at > maxPadBytes) { honest = false; break outer; }
      ensure(at);
    }
  }
  node.rawMetadata = blob;
  return honest;
}

/** Grows buffer `i` (zero-filled) to at least `bytes`, if it is a real one. */
function pad(buffers: (ArrayBufferView | number | null)[], i: number, bytes: number): void {
  const b = buffers[i];
  if (b === null || b === undefined || typeof b === "number" || b.byteLength >= bytes || bytes > maxPadBytes) return;
  const grown = new Uint8Array(bytes);
  grown.set(new Uint8Array(b.buffer, b.byteOffset, b.byteLength));
  buffers[i] = grown;
}

/** Case `index` of `seed`. A quarter of the cases are left valid. */
export function generateCase(seed: number, index: number): FuzzCase {
  const rng = caseRng(seed, index);
  const { spec: base, name } = validTree(rng);
  const spec = cloneSpec(base);
  const device = { type: 1, id: -1 };
  const mutations: string[] = [name];
  const count = rng.chance(0.25) ? 0 : 1 + rng.int(3);
  for (let m = 0; m < count; m++) mutate(rng, spec, device, mutations);
  const honest = makeHonest(spec);
  return { spec, deviceType: device.type, deviceId: device.id, mutations, honest };
}
