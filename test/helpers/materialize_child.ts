/**
 * Run by test/arrow/materialize_hostile.test.ts in a subprocess (a hang there is
 * a timeout, not a stuck suite): imports the named hostile tree at default
 * validation, converts it with { materialize: true } and prints one JSON
 * line, { error, message } or { error: null, values }. Every tree here
 * passes default validation (which reads only first and last offsets) and
 * holds a middle offset that is out of range at some depth below a node
 * that materialization copies.
 */
import { importVector } from "../../ts/index.ts";
import { ImportedArray } from "../../ts/raw.ts";
import { disposeProduced, producerClean, produceArray, type NodeSpec } from "./producer.ts";

const int32 = (name: string, values: number[]): NodeSpec => ({ format: "i", name, length: values.length, nullCount: 0, buffers: [null, Int32Array.from(values)] });
const wild = 2n ** 50n;

/** A large list of 2 slots over 4 int32 values whose middle offset is 2^50. */
const wildLargeList = (name: string): NodeSpec => ({
  format: "+L", name, length: 2, nullCount: 0, buffers: [null, BigInt64Array.of(0n, wild, 4n)], children: [int32("item", [1, 2, 3, 4])],
});

/** A list-view of 2 slots reading `child` slots 1 then 0 (not back to
 * back, so its values are copied slot by slot). */
const listView = (child: NodeSpec): NodeSpec => ({
  format: "+vl", name: "lv", length: 2, nullCount: 0, buffers: [null, Int32Array.of(1, 0), Int32Array.of(1, 1)], children: [child],
});

/** Run-end encoded, 2 slots in two runs over `values` (length 2). */
const runs = (values: NodeSpec): NodeSpec => ({
  format: "+r", name: "runs", length: 2, nullCount: 0, buffers: [],
  children: [{ format: "i", name: "run_ends", length: 2, nullCount: 0, buffers: [null, Int32Array.of(1, 2)] }, values],
});

const cases: Record<string, NodeSpec> = {
  "list-view > large list": listView(wildLargeList("inner")),
  "list-view > struct > large list": listView({ format: "+s", name: "s", length: 2, nullCount: 0, buffers: [null], children: [wildLargeList("inner")] }),
  "list-view > fixed-size list > large list": listView({
    format: "+w:1", name: "fsl", length: 2, nullCount: 0, buffers: [null], children: [wildLargeList("inner")],
  }),
  "list-view > list > large list": listView({
    format: "+l", name: "outer", length: 2, nullCount: 0, buffers: [null, Int32Array.of(0, 1, 2)], children: [wildLargeList("inner")],
  }),
  "list-view > sparse union > large list": listView({
    format: "+us:0", name: "u", length: 2, nullCount: 0, buffers: [Int8Array.of(0, 0)], children: [wildLargeList("inner")],
  }),
  "list-view > dense union offset": listView({
    format: "+ud:0", name: "u", length: 2, nullCount: 0, buffers: [Int8Array.of(0, 0), Int32Array.of(0, 1000)], children: [int32("x", [5, 6])],
  }),
  "list-view > dense union type id": listView({
    format: "+ud:0", name: "u", length: 2, nullCount: 0, buffers: [Int8Array.of(0, 9), Int32Array.of(0, 1)], children: [int32("x", [5, 6])],
  }),
  "list-view > map": listView({
    format: "+m", name: "m", length: 2, nullCount: 0, buffers: [null, Int32Array.of(0, 2 ** 30, 2)],
    children: [{
      format: "+s", name: "entries", length: 2, nullCount: 0, buffers: [null],
      children: [{ ...int32("key", [1, 2]), flags: 0 }, int32("value", [3, 4])],
    }],
  }),
  "list-view > large binary": listView({
    format: "Z", name: "bin", length: 2, nullCount: 0, buffers: [null, BigInt64Array.of(0n, wild, 4n), Uint8Array.of(1, 2, 3, 4)],
  }),
  "list-view > utf8 going backwards": listView({
    format: "u", name: "text", length: 2, nullCount: 0, buffers: [null, Int32Array.of(0, 3, 2), new TextEncoder().encode("abcd")],
  }),
  "run-end encoded > large list": runs(wildLargeList("values")),
  "run-end encoded > struct > large list": runs({
    format: "+s", name: "values", length: 2, nullCount: 0, buffers: [null], children: [wildLargeList("inner")],
  }),
  "well-formed list-view > list": listView({
    format: "+l", name: "outer", length: 2, nullCount: 0, buffers: [null, Int32Array.of(0, 1, 3)], children: [int32("item", [7, 8, 9])],
  }),
};

const name = process.argv[2];
const spec = cases[name];
if (!spec) throw new Error(`unknown case ${name}`);
const produced = produceArray(spec);
let result: unknown;
try {
  using imported = ImportedArray.fromArray(produced.schema, produced.array);
  try {
    result = { error: null, values: JSON.parse(JSON.stringify(importVector(imported, { materialize: true }).toJSON(), (_k, v) => typeof v === "bigint" ? Number(v) : v)) };
  } catch (error) {
    result = { error: (error as Error).constructor.name, message: (error as Error).message };
  }
} finally {
  disposeProduced(produced);
}
console.log(JSON.stringify({ ...(result as object), clean: producerClean() }));
