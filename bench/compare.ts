/**
 * bench/compare.ts: this library against pyarrow (Arrow C++), a C floor
 * and a JS floor, in ONE Bun process, interleaved.
 *
 *   bun run bench                    # full run (several minutes)
 *   bun run bench -- --quick         # under a minute
 *   bun run bench -- --smoke         # seconds: proves every row prints (test/package/bench_smoke.test.ts)
 *   bun run bench -- --json out.json # every figure as JSON
 *   bun run bench -- --results       # rewrites bench/RESULTS.md's performance section
 *
 * Needs build/fixtures/ (bash scripts/setup.sh) for the C floor
 * (test/fixtures/bench_floor.c) and the C stream / async peers; pyarrow is
 * the one setup pins into .toolchain/, run in CPython embedded through
 * libpython. Without pyarrow it says why and runs our side and the floors.
 *
 * Method (also printed, and written into RESULTS.md):
 * - A sample is one block of k cycles timed as a whole (ours with
 *   Bun.nanoseconds(); pyarrow inside its Python loop with
 *   time.perf_counter_ns, so the Bun -> Python call is not counted). k is
 *   calibrated per contender once its code is warm, so each of its blocks
 *   takes ~blockNs (compare/runner.ts `warm`).
 * - Per cycle: median = median over blocks of block/k; mean = every block's
 *   time over every cycle, GC pauses included (no GC is forced between
 *   samples; Bun exposes no GC counter, so mean/median shows its weight).
 * - Every group is warmed up before any sample; each round runs every
 *   contender of every group once, groups and contenders in reversed order
 *   every other round.
 * - modules: compare/cases.ts (contenders), compare/runner.ts (rounds),
 *   compare/targets.ts (the targets), compare/report.ts (output),
 *   compare/floor.ts (C side), compare/pyarrow.ts (Python side).
 */
import { drainReleased, nonZeroCounters } from "../ts/diagnostics.ts";
import { asyncGroup, exportGroup, importGroup, ipcGroup, streamGroup, distinctLimit, type Built, type Context, type Shape } from "./compare/cases.ts";
import { SlotPool } from "./compare/floor.ts";
import { openPyarrow } from "./compare/pyarrow.ts";
import { fmt, meta, metaLine, ratio, spreadNote, summaries, table, targetTable, writeJson, writeResults } from "./compare/report.ts";
import { kLabel, runGroups } from "./compare/runner.ts";
import { now } from "./compare/stats.ts";
import { computeTargets } from "./compare/targets.ts";
import { row6InOwnProcesses } from "./compare/own_process.ts";

const args = process.argv.slice(2);
const smoke = args.includes("--smoke");
const quick = smoke || args.includes("--quick");
const mode = smoke ? "smoke" : quick ? "quick" : "full";
const jsonAt = args.indexOf("--json");
const jsonFile = jsonAt >= 0 ? args[jsonAt + 1] : undefined;
if (jsonAt >= 0 && !jsonFile) throw new Error("--json needs a file name");
const writeResultsFile = args.includes("--results");

const config = {
  smoke: { rowCounts: [1e3, 1e4], rounds: 2, minRounds: 2, blockNs: 30e3, budgetNs: 5e9, warmNs: 5e7, asyncBatches: 40, streamBatches: 10, ipcK: { 1: 2, 100: 2 }, kMax: 64 },
  quick: { rowCounts: [1e3, 1e5, 1e7], rounds: 150, minRounds: 8, blockNs: 250e3, budgetNs: 30e9, warmNs: 2e9, asyncBatches: 400, streamBatches: 200, ipcK: { 1: 64, 100: 8 }, kMax: 4096 },
  full: { rowCounts: [1e3, 1e5, 1e7], rounds: 300, minRounds: 30, blockNs: 1e6, budgetNs: 150e9, warmNs: 5e9, asyncBatches: 2000, streamBatches: 1000, ipcK: { 1: 128, 100: 16 }, kMax: 8192 },
}[mode];
const columnCounts = [1, 10, 100, 1000];
const depths = [4, 16];
const rows = 1e3;
const largeRows = config.rowCounts[config.rowCounts.length - 1];

const started = now();
const log = (line: string) => console.log(`[${((now() - started) / 1e9).toFixed(1)} s] ${line}`);

const { pyarrow: py, reason } = openPyarrow();
if (!py) console.log(`pyarrow is unavailable, so only our side and the floors run: ${reason}`);

const pool = new SlotPool(config.kMax);
const ctx: Context = { py, pool, cleanups: [] };

const shapes: Shape[] = [];
for (const r of config.rowCounts) for (const c of columnCounts) shapes.push({ id: `${c} x ${r}`, columns: c, rows: r, nested: false });
shapes.push({ id: `nested x ${rows}`, columns: 4, rows, nested: true });
if (!smoke) shapes.push({ id: "nested x 100000", columns: 4, rows: 1e5, nested: true });

const groups: Built[] = [];
for (const s of shapes) groups.push(exportGroup(s, ctx));
for (const s of shapes) {
  const g = importGroup(s, ctx);
  if (g) groups.push(g);
}
groups.push(streamGroup(1000, config.streamBatches, ctx));
for (const role of ["consumer", "producer"] as const) groups.push(asyncGroup(role, 1000, config.asyncBatches, depths, ctx));
for (const c of [1, 100] as const) groups.push(ipcGroup(c, rows, config.ipcK[c], ctx));
log(`${groups.length} groups set up (${mode})`);

const rounds = await runGroups(groups, { ...config, log });
const row6 = row6InOwnProcesses(mode, log);
const seconds = (now() - started) / 1e9;

// --- tables -----------------------------------------------------------------

const s = (g: Built, name: string) => g.samples.get(name)?.summary();
const mm = (x: number | undefined, y: number | undefined) => `${fmt(x ?? NaN)} / ${fmt(y ?? NaN)}`;
const lines: string[] = [];

lines.push("EXPORT (per batch: median / mean; ns/buf = median / non-NULL C buffers; ratios of medians)");
lines.push(table(
  ["shape", "bufs", "k", "ours", "ns/buf", "pyarrow", "ns/buf", "C floor", "ours/pyarrow", "ours/floor"],
  groups.filter((g) => g.id.startsWith("export ")).map((g) => {
    const o = s(g, "ours"), p = s(g, "pyarrow"), f = s(g, "C floor");
    const n = g.info.buffers!;
    return [g.id.slice(7), String(n), kLabel(g), mm(o?.median, o?.mean), fmt((o?.median ?? NaN) / n), mm(p?.median, p?.mean), fmt((p?.median ?? NaN) / n),
      mm(f?.median, f?.mean), ratio((o?.median ?? NaN) / (p?.median ?? NaN)), ratio((o?.median ?? NaN) / (f?.median ?? NaN))];
  }),
));
lines.push("");
lines.push(`IMPORT (C-produced batches; ours = import + RecordBatch + dispose, construct = RecordBatch + dispose; read = the same with every column's values and validity read once before the dispose (a batch makes its views on first read); pyarrow = import + release; cycle adds the C produce; memory: each column its own up to ${distinctLimit.toExponential(0)} values and at 10 columns, else one shared)`);
lines.push(table(
  ["shape", "memory", "bufs", "k", "ours", "ns/buf", "construct/buf", "JS floor/buf", "pyarrow", "ns/buf", "ours/pyarrow", "constr/floor", "read: ns/buf", "read: constr/floor", "cycle ours", "cycle pyarrow"],
  groups.filter((g) => g.id.startsWith("import ")).map((g) => {
    const o = s(g, "ours"), c = s(g, "ours.construct"), f = s(g, "JS floor"), p = s(g, "pyarrow");
    const r = s(g, "ours, read"), rc = s(g, "ours, read.construct");
    const n = g.info.buffers!;
    return [g.id.slice(7), g.info.shape?.nested ? "pyarrow" : g.info.distinct ? "distinct" : "shared", String(n), kLabel(g), mm(o?.median, o?.mean), fmt((o?.median ?? NaN) / n),
      fmt((c?.median ?? NaN) / n), fmt((f?.median ?? NaN) / n), mm(p?.median, p?.mean), fmt((p?.median ?? NaN) / n),
      ratio((o?.median ?? NaN) / (p?.median ?? NaN)), ratio((c?.median ?? NaN) / (f?.median ?? NaN)),
      fmt((r?.median ?? NaN) / n), ratio((rc?.median ?? NaN) / (f?.median ?? NaN)),
      mm(s(g, "ours.cycle")?.median, s(g, "ours.cycle")?.mean), mm(s(g, "pyarrow.cycle")?.median, s(g, "pyarrow.cycle")?.mean)];
  }),
));
lines.push("");
lines.push("STREAMS, ASYNC, IPC (per batch or per round trip: median / mean)");
lines.push(table(
  ["group", "k", ...["contender", "median / mean"].flatMap((h) => [h]), "contender", "median / mean", "contender", "median / mean"],
  groups.filter((g) => /^(stream|async|ipc) /.test(g.id)).map((g) => {
    const cells = [g.id, kLabel(g)];
    for (const [name, sum] of Object.entries(summaries(g))) cells.push(name, mm(sum.median, sum.mean));
    return cells;
  }),
));
const tables = lines.join("\n");

const targets = computeTargets(groups, { rows, largeRows, asyncRows: 1000, depths, row6 });
const m = meta(mode, py?.version ?? "unavailable", py?.pythonVersion ?? "-", rounds, seconds);

const method = [
  "Method: one Bun process; pyarrow runs in CPython embedded through libpython and times its own loops",
  "(time.perf_counter_ns), ours is timed with Bun.nanoseconds(). A sample is a block of k cycles, k set per",
  "contender once warm so each of its blocks takes the same time; median per cycle = median of block/k,",
  "mean = all time / all cycles (GC pauses included, no GC forced; Bun exposes no GC counter, so mean vs",
  "median shows GC's weight). Every group is warmed up first; each round runs every contender of every",
  "group once, in reversed order every other round. Export: ours = exportArray(batch) +",
  "handle.release(); pyarrow = RecordBatch._export_to_c_device into C slots + one C call releasing them all",
  "(timed, added); C floor = one FFI call filling ArrowSchema + ArrowDeviceArray over the same shape + the",
  "bulk release. Flat export batches share one column's memory (export reads addresses only). Import: C",
  "produces the batches (test/fixtures/bench_floor.c, one call per block; nested: pyarrow exports them);",
  "ours = ImportedArray.fromDeviceArray + importRecordBatch + dispose (two clock reads per cycle split out the",
  "construction), pyarrow = RecordBatch._import_from_c_device + drop; JS floor = per distinct buffer",
  "toArrayBuffer with a C deallocator + a typed array, then transfer(0) of each. Streams: a C ArrowArrayStream",
  "of k batches; ours = ImportedStream.fromArrayStream + recordBatches, pyarrow = RecordBatchReader._import_from_c",
  "+ read_next_batch. \"ours, read\" (imports, streams, IPC) also reads every column's values and validity once: a",
  "batch built through a plan makes its buffer views on first read (ts/arrow/lazy_data.ts), and the JS floors make them.",
  "The full cycle runs in processes of its own (compare/own_process.ts): ours with pyarrow, then ours reading every column with",
  "the JS floor, at 10 x 1e3 and 10 x 1e7, interleaved as above; the shared process's ratio is printed beside it.",
  "Async: bench/async.ts's comparison (C thread producing or consuming). IPC = tableToIPC +",
  "tableFromIPC against export + import + construct + dispose + release, each column its own memory. The library and the C fixtures must be",
  "release builds (scripts/setup.sh builds --release=safe; a plain `zig build` is Debug and several times slower).",
].join("\n");

console.log("");
console.log(metaLine(m));
console.log("");
console.log(tables);
console.log("");
console.log("TARGETS");
console.log(targetTable(targets));
console.log(`  ${spreadNote}`);
for (const t of targets.filter((x) => x.note)) console.log(`  ${t.group}: ${t.note}`);
console.log("");
console.log(method);

if (jsonFile) {
  writeJson(jsonFile, m, groups, targets, row6);
  console.log(`\nwrote ${jsonFile}`);
}
if (writeResultsFile) console.log(`\nrewrote ${writeResults(m, targets, tables, method)}`);

// Clean up: pyarrow's batches, C memory, then check nothing is left alive.
for (const cleanup of ctx.cleanups.reverse()) cleanup();
pool.free();
drainReleased();
for (let i = 0; i < 20 && Object.keys(nonZeroCounters()).length > 0; i++) {
  Bun.gc(true);
  await Bun.sleep(1);
  drainReleased();
}
const left = nonZeroCounters();
if (Object.keys(left).length > 0) console.log(`\nstill alive after the run: ${JSON.stringify(left)}`);
