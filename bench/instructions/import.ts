/**
 * Driver for count.sh / jitprof.sh: `ImportedArray.fromDeviceArray` +
 * `toRecordBatch` + `dispose` of C-produced batches (the bench's rows 4
 * and 5; COLS columns, default 10, of 1000 int32 rows, each its own
 * memory), `N` times after a 2,000-import warm-up. Modes:
 *   ours    ImportedArray.fromDeviceArray + toRecordBatch + dispose
 *   read    ours, then every column's values read once (the views a
 *           batch defers until first read are made: convert/lazy_data.ts)
 *   floor   bench/compare's JS floor of the same import (a view and a
 *           typed array per buffer, transfer(0); no apache-arrow objects)
 * Both fill and release the same C batches.
 */
import { Columns, SlotPool, floor } from "../compare/floor.ts";
import { jsFloor } from "../compare/cases.ts";
import { ImportedArray, toRecordBatch } from "../../ts/index.ts";
import { drive } from "./driver.ts";

const columns = new Columns(Number(process.env.COLS ?? 10), 1000, true);
const block = 100;
const pool = new SlotPool(block);
const importFloor = jsFloor(columns);
let sink = 0;

const modes: Record<string, () => void> = {
  ours() {
    floor.bf_fill_many(columns.data, block, pool.schemas, pool.arrays);
    for (let i = 0; i < block; i++) {
      const imported = ImportedArray.fromDeviceArray(pool.schema(i), pool.array(i));
      sink += toRecordBatch(imported).numRows;
      imported.dispose();
    }
    pool.releaseAll(block);
  },
  read() {
    floor.bf_fill_many(columns.data, block, pool.schemas, pool.arrays);
    for (let i = 0; i < block; i++) {
      const imported = ImportedArray.fromDeviceArray(pool.schema(i), pool.array(i));
      const batch = toRecordBatch(imported);
      for (const column of batch.data.children) sink += column.values.length;
      imported.dispose();
    }
    pool.releaseAll(block);
  },
  floor() {
    floor.bf_fill_many(columns.data, block, pool.schemas, pool.arrays);
    importFloor.run(block);
    pool.releaseAll(block);
  },
};
drive(modes, block, 2_000);
if (sink < 0) console.log(sink);
