/**
 * The demo (README command 1): an apache-arrow table goes to native code as
 * ArrowSchema + ArrowDeviceArray without a copy, native code checks it, and
 * the data comes back as an apache-arrow Table equal to the original,
 * zero-copy again.
 */
import { ptr } from "bun:ffi";
import { Float64, Int32, Table, makeVector, vectorFromArray } from "apache-arrow";
import { exportArray, importTable } from "bun-arrow-device";
import { ImportedArray } from "bun-arrow-device/raw";
import { consumeNatively, fnv1a32 } from "../test/helpers/native_consumer.ts";
import { counters } from "bun-arrow-device/diagnostics";
import { deviceTypeName } from "bun-arrow-device/raw";

const rows = 1_000_000;
const ids = makeVector(Int32Array.from({ length: rows }, (_, i) => i));
const prices = vectorFromArray(Array.from({ length: rows }, (_, i) => (i % 10 === 3 ? null : i * 0.25)), new Float64());
const table = new Table({ id: ids, price: prices });
const batch = table.batches[0];

const fmt = (ns: number) => (ns >= 1e6 ? `${(ns / 1e6).toFixed(2)} ms` : ns >= 1e3 ? `${(ns / 1e3).toFixed(1)} us` : `${ns.toFixed(0)} ns`);
const hex = (address: number) => `0x${address.toString(16)}`;
const now = () => Bun.nanoseconds();

console.log(`bun-arrow-device demo: a ${rows.toLocaleString()}-row table { id: int32, price: float64 (10% null) }\n`);

// 1. Hand the batch to native code as ArrowSchema + ArrowDeviceArray.
let t0 = now();
const exported = exportArray(batch);
const exportNs = now() - t0;
const js = {
  "id values": ptr(batch.getChild("id")!.data[0].values as Int32Array),
  "price validity": ptr(batch.getChild("price")!.data[0].nullBitmap!),
  "price values": ptr(batch.getChild("price")!.data[0].values as Float64Array),
};
const releasedBefore = counters().live_array_exports;

// 2. Native code (the library's built-in C consumer) moves the structs in,
//    validates them fully, checksums every buffer, and releases them.
t0 = now();
const report = consumeNatively(exported.schema, exported.array, "full");
const consumeNs = now() - t0;
const releasesRun = releasedBefore - counters().live_array_exports;

console.log("1. JS -> native, as ArrowSchema + ArrowDeviceArray");
console.log(`   device: ${deviceTypeName(1)}, device_id -1, sync_event NULL`);
console.log(`   export: ${fmt(exportNs)} first call (no data copied)   native validate (full) + checksum: ${fmt(consumeNs)}`);
const nativeBuffers = { "id values": report[2], "price validity": report[3], "price values": report[4] };
let allSame = true;
for (const [name, address] of Object.entries(js)) {
  const seen = nativeBuffers[name as keyof typeof nativeBuffers];
  const view = name === "id values" ? (batch.getChild("id")!.data[0].values as Int32Array)
    : name === "price validity" ? batch.getChild("price")!.data[0].nullBitmap!
    : (batch.getChild("price")!.data[0].values as Float64Array);
  const jsSum = fnv1a32(new Uint8Array(view.buffer, view.byteOffset, seen.size));
  const same = seen.address === address && seen.checksum === jsSum;
  allSame &&= same;
  console.log(`   ${name.padEnd(15)} JS ${hex(address)}  native ${hex(seen.address)}  ${String(seen.size).padStart(8)} B  fnv1a ${seen.checksum.toString(16).padStart(8, "0")} ${same ? "== JS" : "!= JS"}`);
}
console.log(`   zero-copy: ${allSame ? "yes, native code read the JS memory itself" : "NO"}`);
console.log(`   release callbacks run: ${releasesRun} (exactly once)\n`);
exported.release();

// 3. Data comes back: native structs imported into JS, zero-copy again,
//    as apache-arrow objects equal to the original table.
const again = exportArray(batch);
t0 = now();
using imported = ImportedArray.fromDeviceArray(again.schema, again.array);
const importNs = now() - t0;
again.release(); // moved by the import: nothing left to release
t0 = now();
const back = importTable([imported]);
const convertNs = now() - t0;
const price = imported.root.child(1);
const backPrice = back.getChild("price")!.data[0];
const sameValues = back.numRows === table.numRows &&
  back.schema.fields.every((f, i) => f.name === table.schema.fields[i].name && String(f.type) === String(table.schema.fields[i].type)) &&
  (["id", "price"] as const).every((name) => {
    const a = table.getChild(name)!;
    const b = back.getChild(name)!;
    for (let i = 0; i < a.length; i++) if (a.get(i) !== b.get(i)) return false;
    return a.nullCount === b.nullCount;
  });
const backAddresses = {
  "id values": ptr(back.getChild("id")!.data[0].values as Int32Array),
  "price validity": ptr(backPrice.nullBitmap!),
  "price values": ptr(backPrice.values as Float64Array),
};
const zeroCopyBack = Object.entries(backAddresses).every(([name, address]) => address === js[name as keyof typeof js]);
console.log("2. native -> JS, imported without a copy, as an apache-arrow Table");
console.log(`   import: ${fmt(importNs)}   to Table: ${fmt(convertNs)} (first calls)   device: ${imported.deviceTypeName}, device_id ${imported.deviceId}`);
console.log(`   raw view: ${imported.root.children.map((c) => `${c.name}: ${c.format}`).join(", ")}; ${imported.root.length.toLocaleString()} rows; price nulls = ${price.nullCount}`);
console.log(`   table: ${back.schema.fields.map((f) => `${f.name}: ${f.type}`).join(", ")}; ${back.numRows.toLocaleString()} rows; price[2] = ${back.getChild("price")!.get(2)}, price[3] = ${back.getChild("price")!.get(3)}`);
for (const [name, address] of Object.entries(backAddresses)) {
  console.log(`   ${name.padEnd(15)} table ${hex(address)}  original ${hex(js[name as keyof typeof js])}  ${address === js[name as keyof typeof js] ? "same memory" : "COPIED"}`);
}
console.log(`   equal to the original table: ${sameValues ? "yes (schema, every value, null counts)" : "NO"}`);
imported.dispose();

// 4. Steady-state cost: the same round trip, warmed up, median of many.
function median(samples: number[]): number {
  samples.sort((a, b) => a - b);
  return samples[samples.length >> 1];
}
const rounds = 2000;
const exportTimes: number[] = [];
const importTimes: number[] = [];
const tableTimes: number[] = [];
for (let round = 0; round < rounds; round++) {
  let start = now();
  const out = exportArray(batch);
  exportTimes.push(now() - start);
  start = now();
  const into = ImportedArray.fromDeviceArray(out.schema, out.array);
  importTimes.push(now() - start);
  start = now();
  importTable([into]);
  tableTimes.push(now() - start);
  into.dispose();
  out.release();
}
console.log(`\n3. warmed up, median of ${rounds} round trips of the ${rows.toLocaleString()}-row batch (2 columns, 3 buffers)`);
console.log(`   export ${fmt(median(exportTimes))}   import ${fmt(median(importTimes))}   to apache-arrow Table ${fmt(median(tableTimes))}   (no copy: independent of the row count)`);

const c = counters();
const live = Object.entries(c).filter(([, v]) => v !== 0);
console.log(`\n4. after release: ${live.length === 0 ? "no live exports, owners, views or retained JS buffers" : `still live: ${JSON.stringify(Object.fromEntries(live))}`}`);
if (!allSame || !sameValues || !zeroCopyBack || live.length !== 0) process.exit(1);
