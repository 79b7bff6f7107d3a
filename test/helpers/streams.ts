/**
 * Helpers for the stream tests: polling the C consumer job (JS never
 * blocks on a thread that may need JS), and the gold files.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type Pointer } from "bun:ffi";
import { RecordBatchReader, type RecordBatch, type RecordBatchFileReader, type RecordBatchStreamReader } from "apache-arrow";
import { streamPeer } from "./fixtures.ts";
import { goldDir } from "./shared_gold.ts";

export type JobSummary = {
  schemaRc: number;
  schemaFormat: string;
  schemaChildren: number;
  batches: number;
  rows: number;
  error: number;
  repeatError: number;
  repeatSameMessage: boolean;
  endedTwice: boolean;
  message: string | null;
  lastValue: number;
  deviceIdsSeen: number;
  deviceTypeMismatches: number;
  /** Batches whose sync_event was not NULL. */
  syncEvents: number;
};

/** Waits (event loop running) until the job is done; false on timeout. */
export async function waitForJob(job: Pointer, timeoutMs = 10_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!streamPeer.sp_job_done(job)) {
    if (Date.now() > deadline) return false;
    await Bun.sleep(1);
  }
  return true;
}

export function summarize(job: Pointer): JobSummary {
  return {
    schemaRc: streamPeer.sp_job_schema_rc(job),
    schemaFormat: String(streamPeer.sp_job_schema_format(job)),
    schemaChildren: Number(streamPeer.sp_job_schema_children(job)),
    batches: Number(streamPeer.sp_job_batches(job)),
    rows: Number(streamPeer.sp_job_rows(job)),
    error: streamPeer.sp_job_error(job),
    repeatError: streamPeer.sp_job_repeat_error(job),
    repeatSameMessage: streamPeer.sp_job_repeat_same_message(job) === 1,
    endedTwice: streamPeer.sp_job_ended_twice(job) === 1,
    message: streamPeer.sp_job_message(job), // a cstring return: NULL is null
    lastValue: Number(streamPeer.sp_job_last_value(job)),
    deviceIdsSeen: Number(streamPeer.sp_job_device_ids_seen(job)),
    deviceTypeMismatches: streamPeer.sp_job_device_type_mismatches(job),
    syncEvents: Number(streamPeer.sp_job_sync_events(job)),
  };
}

export type ConsumeOptions = { threaded: boolean; flags?: number; maxBatches?: number };

/** Runs the C consumer over the stream at `stream` (moved in) and waits
 * for it. The job is returned unfreed (held batches stay in it). */
export async function consumeInC(kind: 0 | 1, stream: Pointer, options: ConsumeOptions): Promise<{ job: Pointer; summary: JobSummary }> {
  const job = streamPeer.sp_consume(kind, stream, options.threaded ? 1 : 0, options.flags ?? 0, options.maxBatches ?? -1)!;
  if (!(await waitForJob(job))) throw new Error("the C consumer did not finish in time");
  return { job, summary: summarize(job) };
}

export type GoldFile = { name: string; path: string };

/** Every gold IPC stream, read in place. */
export function goldStreams(): GoldFile[] {
  const root = goldDir();
  const out: GoldFile[] = [];
  for (const dir of readdirSync(root, { withFileTypes: true })) {
    if (!dir.isDirectory()) continue;
    for (const file of readdirSync(join(root, dir.name)).sort()) {
      if (file.endsWith(".stream")) out.push({ name: `${dir.name}/${file}`, path: join(root, dir.name, file) });
    }
  }
  return out;
}

/** Types apache-arrow 21 cannot read from IPC: those gold files are read
 * by the raw-view tests only (see streams_import.test.ts). */
export const unreadableByApacheArrow = ["cpp-21.0.0/generated_list_view.stream", "cpp-21.0.0/generated_run_end_encoded.stream"];

/** A synchronous reader of the gold IPC file (bytes in memory). */
export function openGold(file: GoldFile): RecordBatchFileReader | RecordBatchStreamReader {
  return RecordBatchReader.from(readFileSync(file.path));
}

export function readGold(file: GoldFile): RecordBatch[] {
  return [...openGold(file)];
}
