/**
 * Streams, both directions: batches per second through ArrowArrayStream /
 * ArrowDeviceArrayStream, and the per-batch overhead of the stream
 * machinery beyond the export or import of the batch itself, against a C
 * loop pulling a native C stream of the same shape, in one process.
 *
 *   bash scripts/setup.sh   # builds build/fixtures/libstream_peer.so
 *   bun run bench -- --section streams [--quick]
 *
 * Batches: struct<a: int32, b: float64 (every 4th null)> of 1, 1,000 and
 * 100,000 rows. Every batch of a run is the same memory (zero-copy: the row
 * count should not matter).
 *
 * JS produces, C pulls (exportStream over an array of batches):
 *   c-loop     a C loop pulling a native C stream of such batches (get_next
 *              + release), the floor for any stream
 *   export     the export itself per batch: plan + native build into a
 *              reused ArrowDeviceArray + release + drain (what get_next
 *              must do at least)
 *   js-thread  a C loop pulling our stream on the JS thread (get_next ->
 *              sync JSCallback -> produce), + release
 *   thread     a C consumer thread pulling it (queue + threadsafe wake +
 *              condition signal per batch), JS polling for completion
 *   overhead   js-thread - export
 * C produces, JS pulls (ImportedStream over a native C stream):
 *   import     the import itself per batch: one C-made batch (a native call,
 *              like get_next) + ImportedArray.fromDeviceArray + dispose
 *   sync       stream.next() + dispose, on the JS thread
 *   async      stream.nextAsync() (the stream's worker thread) + dispose
 *   overhead   sync - import
 *   +batch     the same two with importRecordBatch (apache-arrow objects)
 */
import { cpus, platform, release as osRelease } from "node:os";
import { readFileSync } from "node:fs";
import { Field, Float64, Int32, RecordBatch, Schema, Struct, makeData, type Data } from "apache-arrow";
import { DeviceType } from "../ts/core/abi/layout.ts";
import { planArray, plannedWords } from "../ts/arrow/array_plan.ts";
import { native } from "../ts/core/ffi/library.ts";
import { ExportedArray, ExportedStream, exportStream, importRecordBatch } from "../ts/index.ts";
import { ImportedArray, ImportedStream } from "../ts/raw.ts";
import { drainReleased, nonZeroCounters } from "../ts/diagnostics.ts";
import { streamPeer } from "../test/helpers/fixtures.ts";

const quick = process.argv.includes("--quick");
const rowCounts = [1, 1_000, 100_000];
const batchesPerRun = quick ? 2_000 : 20_000;
const threadBatchesPerRun = quick ? 300 : 2_000;
const repeats = quick ? 3 : 7;

const now = () => Bun.nanoseconds();
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Median of `repeats` runs of `run`, which returns ns per batch. */
async function measure(run: () => number | Promise<number>): Promise<number> {
  const samples: number[] = [];
  await run(); // warm-up
  for (let i = 0; i < repeats; i++) samples.push(await run());
  return median(samples);
}

function batchOf(rows: number): RecordBatch {
  const ints = Int32Array.from({ length: rows }, (_, i) => i);
  const doubles = Float64Array.from({ length: rows }, (_, i) => i / 2);
  const validity = new Uint8Array(Math.ceil(rows / 8));
  let nulls = 0;
  for (let i = 0; i < rows; i++) {
    if (i % 4 === 3) nulls++;
    else validity[i >> 3] |= 1 << (i & 7);
  }
  const fields = [new Field("a", new Int32(), false), new Field("b", new Float64(), true)];
  const a = makeData({ type: new Int32(), length: rows, nullCount: 0, data: ints });
  const b = makeData({ type: new Float64(), length: rows, nullCount: nulls, nullBitmap: validity, data: doubles });
  const data = makeData({ type: new Struct(fields), length: rows, children: [a, b] as Data[] });
  return new RecordBatch(new Schema(fields), data);
}

// ---------------------------------------------------------------------------
// JS produces, C pulls
// ---------------------------------------------------------------------------

function cLoop(rows: number, batches: number): number {
  const source = streamPeer.sp_repeat_new(batches, rows)!;
  using slot = new ExportedStream("stream", "bench C stream");
  streamPeer.sp_repeat_stream(source, slot.stream);
  const t0 = now();
  const pulled = Number(streamPeer.sp_drain(0, slot.stream));
  const ns = (now() - t0) / pulled;
  streamPeer.sp_repeat_free(source);
  return ns;
}

function exportCost(batch: RecordBatch, batches: number): number {
  using slot = new ExportedArray("device_array", "bench slot");
  const out = slot.array;
  const t0 = now();
  for (let i = 0; i < batches; i++) {
    const { words, keepaliveId } = planArray(batch.data);
    native.abd_device_array_build(plannedWords(), words, keepaliveId, DeviceType.CPU, -1, null, out);
    native.abd_device_array_release(out);
    drainReleased();
  }
  return (now() - t0) / batches;
}

function exportJsThread(batch: RecordBatch, batches: number): number {
  const source = new Array<RecordBatch>(batches).fill(batch);
  using handle = exportStream(source, { schema: batch.schema });
  const t0 = now();
  const pulled = Number(streamPeer.sp_drain(1, handle.stream));
  const ns = (now() - t0) / pulled;
  if (pulled !== batches) throw new Error(`pulled ${pulled} of ${batches}`);
  return ns;
}

async function exportThread(batch: RecordBatch, batches: number): Promise<number> {
  const source = new Array<RecordBatch>(batches).fill(batch);
  using handle = exportStream(source, { schema: batch.schema });
  const t0 = now();
  const job = streamPeer.sp_consume(1, handle.stream, 1, 0, -1)!;
  while (!streamPeer.sp_job_done(job)) await Bun.sleep(0);
  const ns = (now() - t0) / batches;
  const pulled = Number(streamPeer.sp_job_batches(job));
  streamPeer.sp_job_free(job);
  if (pulled !== batches) throw new Error(`pulled ${pulled} of ${batches}`);
  return ns;
}

// ---------------------------------------------------------------------------
// C produces, JS pulls
// ---------------------------------------------------------------------------

function importCost(rows: number, batches: number, convert: boolean): number {
  const source = streamPeer.sp_repeat_new(batches, rows)!;
  using slot = new ExportedArray("device_array", "bench slot");
  const schema = slot.schema;
  const array = slot.array;
  const t0 = now();
  for (let i = 0; i < batches; i++) {
    streamPeer.sp_repeat_fill(source, schema, array);
    const imported = ImportedArray.fromDeviceArray(schema, array);
    if (convert) importRecordBatch(imported);
    imported.dispose();
  }
  const ns = (now() - t0) / batches;
  streamPeer.sp_repeat_free(source);
  return ns;
}

function importSync(rows: number, batches: number, convert: boolean): number {
  const source = streamPeer.sp_repeat_new(batches, rows)!;
  using slot = new ExportedStream("stream", "bench C stream");
  streamPeer.sp_repeat_stream(source, slot.stream);
  const stream = ImportedStream.fromArrayStream(slot.stream);
  void stream.schemaAddress; // get_schema once, outside the loop
  let pulled = 0;
  const t0 = now();
  for (let imported = stream.next(); imported; imported = stream.next()) {
    if (convert) importRecordBatch(imported);
    imported.dispose();
    pulled++;
  }
  const ns = (now() - t0) / pulled;
  stream.release();
  streamPeer.sp_repeat_free(source);
  return ns;
}

async function importAsync(rows: number, batches: number): Promise<number> {
  const source = streamPeer.sp_repeat_new(batches, rows)!;
  using slot = new ExportedStream("stream", "bench C stream");
  streamPeer.sp_repeat_stream(source, slot.stream);
  const stream = ImportedStream.fromArrayStream(slot.stream);
  void stream.schemaAddress;
  let pulled = 0;
  const t0 = now();
  for (let imported = await stream.nextAsync(); imported; imported = await stream.nextAsync()) {
    imported.dispose();
    pulled++;
  }
  const ns = (now() - t0) / pulled;
  stream.release();
  streamPeer.sp_repeat_free(source);
  return ns;
}

// ---------------------------------------------------------------------------

const us = (ns: number) => `${(ns / 1000).toFixed(2)} us`;
const perSecond = (ns: number) => {
  const n = 1e9 / ns;
  return n >= 1e6 ? `${(n / 1e6).toFixed(2)}M/s` : `${(n / 1e3).toFixed(0)}k/s`;
};
const pad = (s: string, n: number) => s.padStart(n);

const arrowVersion = JSON.parse(readFileSync(new URL("../node_modules/apache-arrow/package.json", import.meta.url), "utf8")).version;
const zigVersion = /ZIG_VERSION=(\S+)/.exec(readFileSync(new URL("../scripts/toolchain.env", import.meta.url), "utf8"))?.[1];
console.log(`bench/streams.ts${quick ? " --quick" : ""}: Bun ${Bun.version}, apache-arrow ${arrowVersion}, Zig ${zigVersion} (ReleaseSafe), ${platform()} ${osRelease()}, ${cpus().length} x ${cpus()[0]?.model}`);
console.log(`${batchesPerRun} batches per run (${threadBatchesPerRun} through threads), median of ${repeats} runs; times per batch\n`);

console.log("JS produces, C pulls (ArrowDeviceArrayStream)");
console.log(`${pad("rows", 7)} ${pad("c-loop", 10)} ${pad("export", 10)} ${pad("js-thread", 10)} ${pad("(batches/s)", 12)} ${pad("thread", 10)} ${pad("(batches/s)", 12)} ${pad("overhead", 10)}`);
for (const rows of rowCounts) {
  const batch = batchOf(rows);
  const loop = await measure(() => cLoop(rows, batchesPerRun));
  const cost = await measure(() => exportCost(batch, batchesPerRun));
  const js = await measure(() => exportJsThread(batch, batchesPerRun));
  const thread = await measure(() => exportThread(batch, threadBatchesPerRun));
  console.log(`${pad(rows.toLocaleString("en"), 7)} ${pad(us(loop), 10)} ${pad(us(cost), 10)} ${pad(us(js), 10)} ${pad(perSecond(js), 12)} ${pad(us(thread), 10)} ${pad(perSecond(thread), 12)} ${pad(us(js - cost), 10)}`);
}

console.log("\nC produces, JS pulls (ArrowArrayStream -> ImportedArray raw views; +batch: importRecordBatch too)");
console.log(`${pad("rows", 7)} ${pad("c-loop", 10)} ${pad("import", 10)} ${pad("sync", 10)} ${pad("(batches/s)", 12)} ${pad("async", 10)} ${pad("(batches/s)", 12)} ${pad("overhead", 10)} ${pad("+batch", 10)} ${pad("sync+batch", 11)} ${pad("overhead", 10)}`);
for (const rows of rowCounts) {
  const loop = await measure(() => cLoop(rows, batchesPerRun));
  const cost = await measure(() => importCost(rows, batchesPerRun, false));
  const sync = await measure(() => importSync(rows, batchesPerRun, false));
  const async_ = await measure(() => importAsync(rows, threadBatchesPerRun));
  const costBatch = await measure(() => importCost(rows, batchesPerRun, true));
  const syncBatch = await measure(() => importSync(rows, batchesPerRun, true));
  console.log(`${pad(rows.toLocaleString("en"), 7)} ${pad(us(loop), 10)} ${pad(us(cost), 10)} ${pad(us(sync), 10)} ${pad(perSecond(sync), 12)} ${pad(us(async_), 10)} ${pad(perSecond(async_), 12)} ${pad(us(sync - cost), 10)} ${pad(us(costBatch), 10)} ${pad(us(syncBatch), 11)} ${pad(us(syncBatch - costBatch), 10)}`);
}

drainReleased();
Bun.gc(true);
const leaks = nonZeroCounters();
if (Object.keys(leaks).length > 0) console.log("\nleft alive after the benchmark (should be empty):", leaks);
