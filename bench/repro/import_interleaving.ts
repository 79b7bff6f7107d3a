/**
 * What the benchmark's interleaving does to a one-column import (row 4's
 * "1 x 1000"): ImportedArray.fromDeviceArray + toRecordBatch + dispose of
 * C-produced batches (test/fixtures/bench_floor.c), per import, measured
 *   1. in a tight loop, after it warmed up alone;
 *   2. again, after the same call sites imported other shapes (10, 100 and
 *      1000 columns, 3 columns of 1e5 rows, a nested batch this library
 *      exports): JSC's compiled code then serves several shapes;
 *   3. with those other shapes imported between its blocks, as
 *      bench/compare.ts interleaves its groups (caches, pending GC work).
 * Median of 40 blocks each. Usage: bun bench/repro/import_interleaving.ts
 */
import { Columns, SlotPool, floor } from "../compare/floor.ts";
import { nestedBatch } from "../compare/shapes.ts";
import { ImportedArray, exportArray, toRecordBatch } from "../../ts/index.ts";

const block = 50;
const pool = new SlotPool(block);
let rowsSeen = 0;

function importBlock(columns: Columns): void {
  floor.bf_fill_many(columns.data, block, pool.schemas, pool.arrays);
  for (let i = 0; i < block; i++) {
    const imported = ImportedArray.fromDeviceArray(pool.schema(i), pool.array(i));
    rowsSeen += toRecordBatch(imported).numRows;
    imported.dispose();
  }
  pool.releaseAll(block);
}

const one = new Columns(1, 1000, true);
const others = [new Columns(10, 1000, true), new Columns(100, 1000, true), new Columns(3, 100_000, true), new Columns(1000, 1000, false)];
const nested = nestedBatch(1000);

function importOthers(): void {
  for (const columns of others) importBlock(columns);
  const exported = exportArray(nested);
  const imported = ImportedArray.fromDeviceArray(exported.schema, exported.array);
  rowsSeen += toRecordBatch(imported).numRows;
  imported.dispose();
  exported.release();
}

function median(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[sorted.length >> 1];
}

/** ns per one-column import: median of 40 blocks, `between` run before each. */
function measure(between: () => void, blocksPerSample: number): number {
  const samples: number[] = [];
  for (let r = 0; r < 40; r++) {
    between();
    const start = Bun.nanoseconds();
    for (let k = 0; k < blocksPerSample; k++) importBlock(one);
    samples.push((Bun.nanoseconds() - start) / (blocksPerSample * block));
  }
  return median(samples);
}

const nothing = () => {};
for (let w = 0; w < 3; w++) measure(nothing, 10); // warm-up, alone (JSC's top tier)
const alone = measure(nothing, 10);
for (let r = 0; r < 200; r++) importOthers();
const shared = measure(nothing, 10);
const interleaved = measure(importOthers, 1);
console.log(`1-column import, ns per import (median of 40 blocks of ${block}):`);
console.log(`  warm, alone                          ${alone.toFixed(0)}`);
console.log(`  after other shapes used the code     ${shared.toFixed(0)} (${(shared / alone).toFixed(2)}x)`);
console.log(`  other shapes imported between blocks ${interleaved.toFixed(0)} (${(interleaved / alone).toFixed(2)}x)`);
for (const columns of [one, ...others]) columns.free();
pool.free();
if (rowsSeen < 0) console.log(rowsSeen);
