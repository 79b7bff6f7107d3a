/**
 * Zero-copy export and import against apache-arrow's IPC round trip (the
 * copy a user would do today), in one process.
 *
 *   bun run bench -- --section export-import [--quick]
 *
 * Tables of {1, 100} nullable int32 columns x {1e3, 1e6, 1e7} rows whose
 * columns share one column's memory (a 1e7 x 100 table of distinct memory
 * would need 4 GB), then a few tables whose columns each have their own
 * memory. Sharing matters on import: buffers at the same address share one
 * ArrayBuffer (one wrap), while every distinct large buffer is charged to
 * the GC as extra memory when wrapped. The IPC baseline copies for real,
 * so it is skipped above 512 MB of IPC bytes.
 *
 * Measured per iteration (median of many):
 *   export     exportArray(batch): schema + ArrowDeviceArray built natively
 *   import     ImportedArray.fromDeviceArray: move in, validate (default), node table
 *   construct  importRecordBatch: buffer views + apache-arrow Data/RecordBatch
 *   release    handle dispose + export release (not part of the targets)
 *   ipc        tableToIPC + tableFromIPC
 * Per buffer = time / non-NULL C buffers in the tree (the struct root's
 * NULL validity excluded).
 */
import { Field, Int32, RecordBatch, Schema, Struct, Table, makeData, tableFromIPC, tableToIPC, type Data } from "apache-arrow";
import { exportArray, importRecordBatch } from "../ts/index.ts";
import { ImportedArray } from "../ts/raw.ts";
import { nonZeroCounters } from "../ts/diagnostics.ts";

const quick = process.argv.includes("--quick");
const rowCounts = [1e3, 1e6, 1e7];
const columnCounts = [1, 100];
const ipcByteLimit = 512 * 2 ** 20;
const budgetNs = (quick ? 60 : 250) * 1e6; // per measurement
const maxIterations = quick ? 300 : 2000;

const now = () => Bun.nanoseconds();

function median(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** One nullable int32 column of `rows` slots (every 7th null). */
function column(rows: number): Data<Int32> {
  const values = new Int32Array(rows);
  for (let i = 0; i < rows; i++) values[i] = i;
  const validity = new Uint8Array(Math.ceil(rows / 8)).fill(0xff);
  let nulls = 0;
  for (let i = 0; i < rows; i += 7) { validity[i >> 3] &= ~(1 << (i & 7)); nulls++; }
  return makeData({ type: new Int32(), length: rows, nullCount: nulls, nullBitmap: validity, data: values });
}

/** `columns` columns of `rows` rows; `distinct`: each column its own memory
 * (else all share one column's buffers). */
function batchOf(rows: number, columns: number, distinct = false): RecordBatch {
  const shared = distinct ? null : column(rows);
  const fields = Array.from({ length: columns }, (_, i) => new Field(`c${i}`, new Int32(), true));
  const data = makeData({ type: new Struct(fields), length: rows, children: fields.map(() => shared ?? column(rows)) });
  return new RecordBatch(new Schema(fields), data);
}

type Row = {
  rows: number; columns: number; buffers: number; distinct: boolean;
  exportNs: number; importNs: number; constructNs: number; releaseNs: number; ipcNs: number | null;
};

function measure(batch: RecordBatch, columns: number, distinct: boolean, budget = budgetNs): Row {
  const buffers = columns * 2; // validity + values per column
  const exportSamples: number[] = [];
  const importSamples: number[] = [];
  const constructSamples: number[] = [];
  const releaseSamples: number[] = [];
  const started = now();
  for (let i = 0; (i < 20 || now() - started < budget) && i < maxIterations; i++) {
    let t = now();
    const exported = exportArray(batch);
    const t1 = now();
    const imported = ImportedArray.fromDeviceArray(exported.schema, exported.array);
    const t2 = now();
    const back = importRecordBatch(imported);
    const t3 = now();
    if (back.numRows !== batch.numRows) throw new Error("round trip lost rows");
    imported.dispose();
    exported.release();
    const t4 = now();
    if (i >= 5) { // warm-up excluded
      exportSamples.push(t1 - t);
      importSamples.push(t2 - t1);
      constructSamples.push(t3 - t2);
      releaseSamples.push(t4 - t3);
    }
    t = t4;
  }
  const ipcBytes = batch.numRows * columns * 4.2;
  let ipcNs: number | null = null;
  if (ipcBytes <= ipcByteLimit) {
    const table = new Table([batch]);
    const ipcSamples: number[] = [];
    const ipcStarted = now();
    for (let i = 0; (i < 6 || now() - ipcStarted < budget) && i < maxIterations; i++) {
      const t = now();
      const copy = tableFromIPC(tableToIPC(table, "stream"));
      const t1 = now();
      if (copy.numRows !== batch.numRows) throw new Error("IPC lost rows");
      if (i >= 1) ipcSamples.push(t1 - t);
    }
    ipcNs = median(ipcSamples);
  }
  return {
    rows: batch.numRows, columns, buffers, distinct,
    exportNs: median(exportSamples), importNs: median(importSamples), constructNs: median(constructSamples),
    releaseNs: median(releaseSamples), ipcNs,
  };
}

const fmt = (ns: number) => (ns >= 1e6 ? `${(ns / 1e6).toFixed(2)} ms` : ns >= 1e3 ? `${(ns / 1e3).toFixed(1)} us` : `${ns.toFixed(0)} ns`);
const pad = (text: string, n: number) => text.padStart(n);

console.log(`bun ${Bun.version}, apache-arrow 21.2.0, ${process.platform}-${process.arch}${quick ? " (quick)" : ""}`);
// Warm-up: every code path JIT-compiled before anything is timed.
measure(batchOf(1e3, 100), 100, false, 50e6);
measure(batchOf(1e3, 1), 1, false, 50e6);

const results: Row[] = [];
for (const columns of columnCounts) {
  for (const rows of rowCounts) {
    results.push(measure(batchOf(rows, columns), columns, false));
    Bun.gc(true);
  }
}
// The same with every column in its own memory (as large as memory allows):
// buffers cannot share a wrap, and apache-arrow's GC accounting of each
// large external ArrayBuffer shows.
const distinctRows: [number, number][] = [[1e3, 100], [1e6, 100], [1e7, 10]];
for (const [rows, columns] of distinctRows) {
  results.push(measure(batchOf(rows, columns, true), columns, true));
  Bun.gc(true);
}

console.log("\nrows      cols  memory    buffers   export (ns/buf)    import (ns/buf)    construct (ns/buf)   release    ipc round trip   ipc / (export+import+construct)");
for (const r of results) {
  const zero = r.exportNs + r.importNs + r.constructNs;
  console.log([
    pad(r.rows.toExponential(0), 5), pad(String(r.columns), 8), pad(r.distinct ? "distinct" : "shared", 9), pad(String(r.buffers), 8),
    pad(`${fmt(r.exportNs)} (${(r.exportNs / r.buffers).toFixed(0)})`, 18),
    pad(`${fmt(r.importNs)} (${(r.importNs / r.buffers).toFixed(0)})`, 18),
    pad(`${fmt(r.constructNs)} (${(r.constructNs / r.buffers).toFixed(0)})`, 20),
    pad(fmt(r.releaseNs), 10),
    pad(r.ipcNs === null ? "skipped" : fmt(r.ipcNs), 16),
    pad(r.ipcNs === null ? "-" : `${(r.ipcNs / zero).toFixed(0)}x`, 10),
  ].join(" "));
}

console.log("\n1e7-row / 1e3-row time (export, import, construct):");
for (const columns of columnCounts) {
  const small = results.find((r) => r.columns === columns && r.rows === 1e3 && !r.distinct)!;
  const large = results.find((r) => r.columns === columns && r.rows === 1e7 && !r.distinct)!;
  console.log(`  ${pad(String(columns), 3)} column(s): ${(large.exportNs / small.exportNs).toFixed(2)}x, ${(large.importNs / small.importNs).toFixed(2)}x, ${(large.constructNs / small.constructNs).toFixed(2)}x`);
}

const leftovers = nonZeroCounters();
if (Object.keys(leftovers).length > 0) console.log(`\nstill live after the run: ${JSON.stringify(leftovers)}`);
