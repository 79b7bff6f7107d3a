/**
 * Re-export and relay costs, against baselines in the same process:
 * - re-export of an imported batch (+ release) vs. exporting the same
 *   batch from apache-arrow (+ release), the library's other way out;
 * - relay of a C producer's batch vs. importing it into an ImportedArray
 *   and disposing it (what a relay saves over a JS round trip).
 * Prints ns/op and ratios. Not a test: `bun run bench -- --section reexport`.
 */
import { makeVector, RecordBatch, Table, vectorFromArray, Utf8 } from "apache-arrow";
import { exportArray } from "../ts/index.ts";
import { ImportedArray } from "../ts/raw.ts";
import { relay } from "../ts/raw.ts";
import { ProducerSlot, owners } from "../test/helpers/owners.ts";

function time(label: string, iterations: number, body: () => void): number {
  for (let i = 0; i < Math.min(1000, iterations); i++) body(); // warm up
  const start = Bun.nanoseconds();
  for (let i = 0; i < iterations; i++) body();
  const ns = (Bun.nanoseconds() - start) / iterations;
  console.log(`${label.padEnd(58)} ${ns.toFixed(0).padStart(8)} ns/op`);
  return ns;
}

const rows = 1024;
const table = new Table({
  a: makeVector(Int32Array.from({ length: rows }, (_, i) => i)),
  b: vectorFromArray(Array.from({ length: rows }, (_, i) => ["red", "green", "blue"][i % 3])),
  c: vectorFromArray(Array.from({ length: rows }, (_, i) => `s${i}`), new Utf8()),
});
const batch: RecordBatch = table.batches[0];

const n = 20_000;
const baselineExport = time("baseline: exportArray(batch) + release", n, () => {
  exportArray(batch).release();
});
const source = ImportedArray.fromDeviceArray(...(() => { const e = exportArray(batch); return [e.schema, e.array] as const; })());
const whole = time("reexport() + release", n, () => {
  source.reexport().release();
});
const sliced = time("reexport({ child: 2, slice }) + release", n, () => {
  source.reexport({ child: 2, slice: { offset: 100, length: 500 } }).release();
});
const handles = time("child(1) + slice(10, 100) handles + dispose", n, () => {
  const child = source.child(1);
  const part = child.slice(10, 100);
  part.dispose();
  child.dispose();
});
source.dispose();

const slot = new ProducerSlot();
const baselineImport = time("baseline: C batch -> ImportedArray + dispose", n, () => {
  owners.owners_make_batch(64, slot.schema, slot.array);
  ImportedArray.fromDeviceArray(slot.schema, slot.array).dispose();
});
const relayed = time("C batch -> relay() -> release", n, () => {
  owners.owners_make_batch(64, slot.schema, slot.array);
  relay(slot.schema, slot.array).release();
});
slot[Symbol.dispose]();

console.log(`\nratios (lower is faster than its baseline):`);
console.log(`  reexport() / exportArray()                 ${(whole / baselineExport).toFixed(2)}`);
console.log(`  reexport(child, slice) / exportArray()     ${(sliced / baselineExport).toFixed(2)}`);
console.log(`  child+slice handles / exportArray()        ${(handles / baselineExport).toFixed(2)}`);
console.log(`  relay() / import + dispose                 ${(relayed / baselineImport).toFixed(2)}`);
console.log(`\nBun ${Bun.version}, ${process.platform}-${process.arch}`);
