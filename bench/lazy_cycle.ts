/**
 * The full-cycle target (bench/compare/targets.ts) measured with ours
 * alone in the process: the mean cycle (C produces a 10-column batch,
 * ImportedArray.fromDeviceArray + importRecordBatch + dispose) at 1e7 rows over
 * the mean at 1e3 rows, with the batch not read ("lazy") and with every
 * column read ("read"). In bench/compare.ts the same group also runs the
 * JS floor and the read variant, whose 400 MB of external ArrayBuffers per
 * cycle start collections that land in every contender's cycles.
 *
 *   bun run bench -- --section lazy-cycle [seconds per case, default 3]
 */
import { Columns, SlotPool, floor } from "./compare/floor.ts";
import { importRecordBatch } from "../ts/index.ts";
import { ImportedArray } from "../ts/raw.ts";

const seconds = Number(process.argv[2] ?? 3);
const pool = new SlotPool(1);
let sink = 0;

function meanCycle(rows: number, read: boolean): { mean: number; cycles: number } {
  const columns = new Columns(10, rows, true);
  const cycle = () => {
    floor.bf_fill_many(columns.data, 1, pool.schemas, pool.arrays);
    const imported = ImportedArray.fromDeviceArray(pool.schema(0), pool.array(0));
    const batch = importRecordBatch(imported);
    if (read) for (const column of batch.data.children) sink += column.values.length + (column.nullBitmap?.length ?? 0);
    imported.dispose();
    pool.releaseAll(1);
  };
  for (let i = 0; i < 200; i++) cycle();
  let cycles = 0;
  const start = Bun.nanoseconds();
  const end = start + seconds * 1e9;
  while (Bun.nanoseconds() < end) {
    cycle();
    cycles++;
  }
  const mean = (Bun.nanoseconds() - start) / cycles;
  columns.free();
  return { mean, cycles };
}

for (const read of [false, true]) {
  const small = meanCycle(1e3, read);
  const large = meanCycle(1e7, read);
  console.log(`${read ? "read" : "lazy"}: mean cycle ${(large.mean / 1e3).toFixed(1)} us at 1e7 rows (${large.cycles} cycles) / ${(small.mean / 1e3).toFixed(2)} us at 1e3 (${small.cycles}) = ${(large.mean / small.mean).toFixed(2)}x`);
}
if (sink < 0) console.log(sink);
