/**
 * What the address probe (zig/validate/probe.zig) adds to an import: the time of
 * import + dispose of C structs, from this library's own export and from
 * a C producer (test/fixtures/bench_floor.c's bf_fill: one malloc per tree,
 * as a typical producer), at 1, 10 and 100 columns.
 *
 *   bun run bench -- --section address-probe [--rounds N]
 *
 * Each round measures every case once (blocks of k imports, median of the
 * rounds), so that cases and checkouts compare within one noisy moment;
 * run two checkouts one after the other, a few times, to compare them.
 */
import { RecordBatch, Table, makeVector } from "apache-arrow";
import { exportArray } from "../ts/index.ts";
import { ImportedArray } from "../ts/raw.ts";
import { Columns, SlotPool, floor } from "./compare/floor.ts";

const roundsAt = process.argv.indexOf("--rounds");
const rounds = roundsAt > 0 ? Number(process.argv[roundsAt + 1]) : 15;
const k = 200;
const now = () => Bun.nanoseconds();

const small: RecordBatch = new Table({ x: makeVector(Int32Array.of(1, 2, 3)) }).batches[0];
const pool = new SlotPool(k);
const producers = [1, 10, 100].map((columns) => ({ columns, data: new Columns(columns, 1000, false) }));

type Case = { name: string; run: () => number };
const cases: Case[] = [
  {
    name: "export + import + dispose, 1 column x 3 rows",
    run() {
      const t = now();
      for (let i = 0; i < k; i++) {
        const h = exportArray(small);
        ImportedArray.fromDeviceArray(h.schema, h.array).dispose();
        h.release();
      }
      return (now() - t) / k;
    },
  },
  ...producers.map(({ columns, data }) => ({
    name: `C producer: import + dispose, ${columns} column(s) x 1000`,
    run() {
      floor.bf_fill_many(data.data, k, pool.schemas, pool.arrays);
      const t = now();
      for (let i = 0; i < k; i++) ImportedArray.fromDeviceArray(pool.schema(i), pool.array(i)).dispose();
      const ns = (now() - t) / k;
      pool.releaseAll(k);
      return ns;
    },
  })),
];

const samples = cases.map(() => [] as number[]);
for (let r = 0; r < rounds + 2; r++) {
  cases.forEach((c, i) => {
    const ns = c.run();
    if (r >= 2) samples[i].push(ns); // two warm-up rounds
  });
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const [i, c] of cases.entries()) console.log(`${c.name.padEnd(52)} ${(median(samples[i]) / 1e3).toFixed(2).padStart(7)} us`);
pool.free();
for (const p of producers) p.data.free();
