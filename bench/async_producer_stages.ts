/**
 * The async hand-off, producer role: where an async batch's time goes. exportAsyncStream
 * into test/fixtures/async_peer.c's sink (a worker thread that requests
 * `depth`, extracts, adds up and releases each task, requests one more, and
 * sleeps on its condition variable when its queue is empty) against the
 * synchronous loop of bench/compare (exportArray + the same C "move, add
 * up, release"), interleaved in one process, the order alternating.
 *
 * Each async round is labelled by how the hand-off went, from the public
 * diagnostics and /proc (Linux):
 *   fed      JS waited for nearly every credit (bursts/batch > 0.5): the
 *            sink's queue never ran dry, its worker never slept, no wake.
 *   starved  JS almost never waited (bursts/batch < 0.1): the sink had
 *            taken everything by each delivery, so each on_next_task woke
 *            its sleeping worker (futex wake + the worker blocking on the
 *            sink's mutex, which its on_next_task holds while it signals).
 *   mixed    in between.
 * `same core` is the share of samples (one per 256 batches) in which the
 * JS thread and the sink's worker were on the same CPU: the kernel wakes
 * the worker on the waker's CPU when the other one is busy, and the pair
 * then takes turns on one core.
 *
 * Usage: bun run bench -- --section async-producer-stages [batches=2000] [rounds=11]
 */
import { readdirSync, readFileSync } from "node:fs";
import { tableFromArrays, type RecordBatch } from "apache-arrow";
import { exportArray } from "../ts/index.ts";
import { exportAsyncStream } from "../ts/device.ts";
import { asyncPeer, CSink } from "../test/helpers/async_peer.ts";

const rows = 1000;
const k = Number(process.argv[2] ?? 2000);
const rounds = Number(process.argv[3] ?? 11);
const depths = [4, 16];
const pool = Array.from({ length: 16 }, (_, b) => tableFromArrays({ v: Int32Array.from({ length: rows }, (_, i) => (b + i) % 1000) }).batches[0]);
const hasProc = (() => {
  try {
    readFileSync("/proc/thread-self/stat");
    return true;
  } catch {
    return false;
  }
})();

/** The CPU a thread last ran on (field 39 of its stat line). */
function cpuOf(stat: string): number {
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[36]);
}

/** The sink's worker: an unnamed ("bun") thread other than the main one. */
function workerTid(): string | null {
  for (const tid of readdirSync("/proc/self/task")) {
    if (Number(tid) === process.pid) continue;
    try {
      if (readFileSync(`/proc/self/task/${tid}/comm`, "utf8").trim() === "bun") return tid;
    } catch {
      // The thread ended meanwhile.
    }
  }
  return null;
}

/** Whether the JS thread and the worker `tid` are on the same CPU now. */
function sameCore(tid: string): boolean | null {
  try {
    return cpuOf(readFileSync(`/proc/self/task/${tid}/stat`, "utf8")) === cpuOf(readFileSync("/proc/thread-self/stat", "utf8"));
  } catch {
    return null;
  }
}

type Round = { ns: number; burstsPerBatch: number; sameCore: number };

async function asyncRun(depth: number): Promise<Round> {
  const sink = new CSink({ depth });
  let samples = 0;
  let same = 0;
  let worker: string | null = null;
  function* items(): Generator<RecordBatch> {
    for (let i = 0; i < k; i++) {
      if (hasProc && i % 256 === 128) {
        worker ??= workerTid();
        const s = worker === null ? null : sameCore(worker);
        if (s !== null) {
          samples++;
          if (s) same++;
        }
      }
      yield pool[i % pool.length];
    }
  }
  const t = Bun.nanoseconds();
  const run = exportAsyncStream(items(), sink.handler);
  const result = await run.done;
  sink.join();
  const ns = (Bun.nanoseconds() - t) / k;
  const extracted = sink.stat("extracted");
  sink.free();
  if (result.outcome !== "ended" || extracted !== k) throw new Error(`producer: ${result.outcome}, ${extracted} extracted`);
  return { ns, burstsPerBatch: run.handoffs.bursts / k, sameCore: samples ? same / samples : NaN };
}

function syncRun(): number {
  const t = Bun.nanoseconds();
  for (let i = 0; i < k; i++) {
    const exported = exportArray(pool[i % pool.length]);
    asyncPeer.peer_async_consume_sync(exported.schema, exported.array);
    exported.release();
  }
  return (Bun.nanoseconds() - t) / k;
}

const label = (r: Round) => (r.burstsPerBatch > 0.5 ? "fed" : r.burstsPerBatch < 0.1 ? "starved" : "mixed");
const median = (v: number[]) => (v.length ? [...v].sort((a, b) => a - b)[v.length >> 1] : NaN);
const mean = (v: number[]) => (v.length ? v.reduce((a, b) => a + b, 0) / v.length : NaN);
const us = (ns: number) => (ns / 1000).toFixed(2);

syncRun();
for (const d of depths) await asyncRun(d);
const sync: number[] = [];
const runs = new Map<number, Round[]>(depths.map((d) => [d, []]));
for (let r = 0; r < rounds; r++) {
  const order = r % 2 === 0 ? depths : [...depths].reverse();
  if (r % 2 === 0) sync.push(syncRun());
  for (const d of order) runs.get(d)!.push(await asyncRun(d));
  if (r % 2 === 1) sync.push(syncRun());
  Bun.gc(true);
}

console.log(`${k} batches of ${rows} rows per run, ${rounds} interleaved rounds, load ${require("node:os").loadavg()[0].toFixed(2)}`);
console.log(`sync       median ${us(median(sync))} us  mean ${us(mean(sync))} us per batch`);
for (const d of depths) {
  const all = runs.get(d)!;
  console.log(`async d${d}`.padEnd(11) + `median ${us(median(all.map((r) => r.ns)))} us  mean ${us(mean(all.map((r) => r.ns)))} us  async/sync ${(median(sync) / median(all.map((r) => r.ns))).toFixed(2)}x`);
  for (const kind of ["fed", "mixed", "starved"]) {
    const some = all.filter((r) => label(r) === kind);
    if (some.length === 0) continue;
    console.log(`  ${kind.padEnd(8)} ${String(some.length).padStart(2)} rounds: median ${us(median(some.map((r) => r.ns)))} us (${(median(sync) / median(some.map((r) => r.ns))).toFixed(2)}x sync), bursts/batch ${median(some.map((r) => r.burstsPerBatch)).toFixed(2)}, same core ${(100 * mean(some.map((r) => r.sameCore))).toFixed(0)}% of samples`);
  }
}
