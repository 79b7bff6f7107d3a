/**
 * Async device streams against a synchronous baseline, in one process.
 *
 *   bun run bench -- --section async-streams [--quick]
 *
 * Needs the C peers of the tests (build/fixtures/libasync_peer.so, built by
 * scripts/setup.sh). The baseline is a same-process synchronous loop doing
 * the same per-batch work with no stream in between:
 *
 *   consumer role (a C producer pushes, JS reads)
 *     async  a C source thread makes each batch (struct<v: int32>, `rows`
 *            rows) and pushes it; JS pulls with `for await`, imports it
 *            (ImportedArray, zero-copy), reads one value, disposes.
 *     sync   JS calls the same C batch maker, imports, reads, disposes.
 *     latency: from the C source calling on_next_task to JS holding the
 *            imported batch (async); the whole per-batch loop body (sync).
 *
 *   producer role (JS pushes, a C consumer reads)
 *     async  exportAsyncStream over pre-built apache-arrow batches into a C
 *            sink whose worker thread requests, extracts (moves), adds up
 *            the values and releases.
 *     sync   exportArray + the same C "move, add up, release", per batch.
 *     latency: from the source yielding a batch to the C worker having
 *            extracted it (async); the whole per-batch loop body (sync).
 *
 * Queue depth = batches kept requested and not yet taken. Sync and async
 * runs are interleaved in one process, the order alternating per round, so
 * that load from elsewhere on the machine hits both alike: each round gives
 * one async/sync ratio per depth. Throughput columns are medians over the
 * rounds; `async/sync` is the median of the per-round ratios and `mean` their
 * mean; latency percentiles pool every batch of every round.
 */
import { RecordBatch, tableFromArrays } from "apache-arrow";
import type { Pointer } from "bun:ffi";
import { AsyncStreamConsumer } from "../ts/raw.ts";
import { exportArray } from "../ts/index.ts";
import { exportAsyncStream } from "../ts/device.ts";
import { structPointer, ImportedArray } from "../ts/raw.ts";
import { nonZeroCounters } from "../ts/diagnostics.ts";
import { native } from "../ts/core/ffi/library.ts";
import { asyncPeer, CSink, CSource } from "../test/helpers/async_peer.ts";

const quick = process.argv.includes("--quick");
const depths = [1, 4, 16];
const rounds = quick ? 5 : 9;
const shapes = quick
  ? [{ rows: 1_000, batches: 2_000 }, { rows: 65_536, batches: 500 }]
  : [{ rows: 1_000, batches: 20_000 }, { rows: 65_536, batches: 3_000 }];

const now = () => Bun.nanoseconds();
const clock = () => Number(asyncPeer.peer_async_now_ns());

function percentile(samples: number[], p: number): number {
  const sorted = Float64Array.from(samples).sort();
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

function median(values: number[]): number {
  return [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
}

type Measured = { perSecond: number; latencies: number[] };

// --- consumer role ------------------------------------------------------------

async function consumerAsync(rows: number, batches: number, depth: number): Promise<Measured> {
  const source = new CSource({ generate: batches, generate_rows: rows });
  const stream = new AsyncStreamConsumer({ queueDepth: depth });
  const received = new Float64Array(batches);
  const started = now();
  source.start(stream.handler);
  let check = 0;
  for await (const { array, index } of stream.arrays()) {
    received[index] = clock();
    check += (array.root.child(0).buffer(1) as Int32Array)[0];
    array.dispose();
  }
  const elapsed = now() - started;
  await stream.closed;
  if (check !== (1000 * batches * (batches - 1)) / 2) throw new Error("consumer: wrong data");
  const latencies = Array.from({ length: batches }, (_, i) => received[i] - Number(source.sentAt(i)));
  source.free();
  return { perSecond: (batches / elapsed) * 1e9, latencies };
}

function consumerSync(rows: number, batches: number): Measured {
  const slot = native.abd_alloc_zeroed(72 + 128)!;
  const latencies: number[] = [];
  let check = 0;
  const started = now();
  for (let i = 0; i < batches; i++) {
    const t0 = now();
    asyncPeer.peer_async_make_device_batch(rows, i * 1000, 1, -1, null, slot, (slot + 72) as Pointer);
    const imported = ImportedArray.fromDeviceArray(structPointer("ArrowSchema", slot), structPointer("ArrowDeviceArray", slot + 72));
    check += (imported.root.child(0).buffer(1) as Int32Array)[0];
    imported.dispose();
    latencies.push(now() - t0);
  }
  const elapsed = now() - started;
  native.abd_free(slot);
  if (check !== (1000 * batches * (batches - 1)) / 2) throw new Error("consumer sync: wrong data");
  return { perSecond: (batches / elapsed) * 1e9, latencies };
}

// --- producer role ------------------------------------------------------------

function makeBatches(rows: number): RecordBatch[] {
  return Array.from({ length: 16 }, (_, b) => tableFromArrays({ v: Int32Array.from({ length: rows }, (_, i) => (b + i) % 1000) }).batches[0]);
}

async function producerAsync(pool: RecordBatch[], batches: number, depth: number): Promise<Measured> {
  const sink = new CSink({ depth, timestamps: batches });
  const yielded = new Float64Array(batches);
  function* items(): Generator<RecordBatch> {
    for (let i = 0; i < batches; i++) {
      yielded[i] = clock();
      yield pool[i % pool.length];
    }
  }
  const started = now();
  const result = await exportAsyncStream(items(), sink.handler).done;
  sink.join();
  const elapsed = now() - started;
  if (result.outcome !== "ended" || sink.stat("extracted") !== batches) throw new Error(`producer: ${result.outcome}, ${sink.stat("extracted")} extracted`);
  const latencies = Array.from({ length: batches }, (_, i) => Number(sink.extractedAt(i)) - yielded[i]);
  sink.free();
  return { perSecond: (batches / elapsed) * 1e9, latencies };
}

function producerSync(pool: RecordBatch[], batches: number): Measured {
  const latencies: number[] = [];
  const started = now();
  for (let i = 0; i < batches; i++) {
    const t0 = now();
    const exported = exportArray(pool[i % pool.length]);
    asyncPeer.peer_async_consume_sync(exported.schema, exported.array);
    exported.release();
    latencies.push(now() - t0);
  }
  return { perSecond: (batches / (now() - started)) * 1e9, latencies };
}

// --- report -------------------------------------------------------------------

type Summary = { perSecond: number; p50: number; p99: number };

function summarize(measured: Measured[]): Summary {
  const latencies = measured.flatMap((m) => m.latencies);
  return { perSecond: median(measured.map((m) => m.perSecond)), p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

/** Runs sync and async at every depth, `rounds` times, interleaved (the
 * order alternating per round); returns per depth the summaries and the
 * per-round async/sync ratios. */
async function compare(sync: () => Measured, async: (depth: number) => Promise<Measured>): Promise<{ depth: number; a: Summary; s: Summary; ratios: number[] }[]> {
  const runs = depths.map(() => ({ a: [] as Measured[], s: [] as Measured[], ratios: [] as number[] }));
  await async(depths[0]); // warm-up, not counted
  sync();
  for (let r = 0; r < rounds; r++) {
    for (let d = 0; d < depths.length; d++) {
      let a: Measured, s: Measured;
      if (r % 2 === 0) {
        s = sync();
        a = await async(depths[d]);
      } else {
        a = await async(depths[d]);
        s = sync();
      }
      runs[d].a.push(a);
      runs[d].s.push(s);
      runs[d].ratios.push(a.perSecond / s.perSecond);
      Bun.gc(true);
    }
  }
  return runs.map((run, d) => ({ depth: depths[d], a: summarize(run.a), s: summarize(run.s), ratios: run.ratios }));
}

const mean = (values: number[]) => values.reduce((x, y) => x + y, 0) / values.length;
const us = (ns: number) => `${(ns / 1000).toFixed(1)} us`;
const rate = (perSecond: number) => `${(perSecond / 1000).toFixed(1)}k/s`;
const pad = (text: string, width: number) => text.padStart(width);

function row(role: string, rows: number, { depth, a, s, ratios }: { depth: number; a: Summary; s: Summary; ratios: number[] }): string {
  return `${role.padEnd(9)}${pad(String(rows), 7)}${pad(String(depth), 6)}${pad(rate(a.perSecond), 11)}${pad(rate(s.perSecond), 11)}${pad(median(ratios).toFixed(2) + "x", 11)}${pad(mean(ratios).toFixed(2) + "x", 7)}${pad(us(a.p50), 11)}${pad(us(a.p99), 11)}${pad(us(s.p50), 10)}${pad(us(s.p99), 10)}`;
}

console.log(`bun ${Bun.version}, ${process.platform}-${process.arch}, ${navigator.hardwareConcurrency} cpus${quick ? ", --quick" : ""}, ${rounds} interleaved rounds`);
console.log(`${"role".padEnd(9)}${pad("rows", 7)}${pad("depth", 6)}${pad("async", 11)}${pad("sync", 11)}${pad("async/sync", 11)}${pad("mean", 7)}${pad("async p50", 11)}${pad("async p99", 11)}${pad("sync p50", 10)}${pad("sync p99", 10)}`);
for (const { rows, batches } of shapes) {
  for (const result of await compare(() => consumerSync(rows, batches), (depth) => consumerAsync(rows, batches, depth))) console.log(row("consumer", rows, result));
}
for (const { rows, batches } of shapes) {
  const pool = makeBatches(rows);
  for (const result of await compare(() => producerSync(pool, batches), (depth) => producerAsync(pool, batches, depth))) console.log(row("producer", rows, result));
}
const left = nonZeroCounters();
if (Object.keys(left).length > 0) console.log("left alive:", left);
