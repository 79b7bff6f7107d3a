/**
 * test/fixtures/async_peer.c: a C producer (source) and a C consumer (sink)
 * of async device streams, each on its own threads, with faults on demand.
 * Option and stat indices mirror the enums in the C file.
 */
import { structPointer, type StructPointer } from "../../ts/raw.ts";
import { CString, FFIType, toArrayBuffer, type Pointer } from "bun:ffi";
import { openLibrary } from "../../ts/core/ffi/bun_ffi.ts";
import { fromBaseline } from "./leaks.ts";
import { fixturePath } from "./fixtures.ts";

const { ptr, i32, i64, void: none } = FFIType;

export const asyncPeer = fromBaseline("async_peer", openLibrary(fixturePath("async_peer"), {
  peer_async_now_ns: { args: [], returns: i64 },
  peer_async_generated_live: { args: [], returns: i64 },
  peer_async_make_device_batch: { args: [i64, i64, i32, i64, ptr, ptr, ptr], returns: none },
  peer_async_fake_event: { args: [], returns: ptr },

  peer_async_source_new: { args: [ptr], returns: ptr },
  peer_async_source_add: { args: [ptr, ptr, ptr], returns: none },
  peer_async_source_start: { args: [ptr, ptr], returns: i32 },
  peer_async_source_stat: { args: [ptr, i32], returns: i64 },
  peer_async_source_sent_at: { args: [ptr, i64], returns: i64 },
  peer_async_source_join: { args: [ptr], returns: none },
  peer_async_source_free: { args: [ptr], returns: none },

  peer_async_sink_new: { args: [ptr], returns: ptr },
  peer_async_sink_handler: { args: [ptr], returns: ptr },
  peer_async_sink_stat: { args: [ptr, i32], returns: i64 },
  peer_async_sink_error_message: { args: [ptr], returns: ptr },
  peer_async_sink_error_metadata: { args: [ptr], returns: ptr },
  peer_async_sink_producer_metadata: { args: [ptr], returns: ptr },
  peer_async_sink_metadata_len: { args: [ptr], returns: i64 },
  peer_async_sink_kept: { args: [ptr], returns: i64 },
  peer_async_sink_kept_array: { args: [ptr, i64], returns: ptr },
  peer_async_sink_schema: { args: [ptr], returns: ptr },
  peer_async_sink_join: { args: [ptr], returns: none },
  peer_async_sink_extracted_at: { args: [ptr, i64], returns: i64 },
  peer_async_consume_sync: { args: [ptr, ptr], returns: i64 },
  peer_async_sink_free: { args: [ptr], returns: none },
  peer_async_floor_pool_new: { args: [i64], returns: ptr },
  peer_async_floor_pool_free: { args: [ptr], returns: none },
  peer_async_floor_pool_sum: { args: [ptr, i64], returns: i64 },
  peer_async_floor_sync: { args: [ptr, i64], returns: i64 },
  peer_async_floor_produce: { args: [ptr, ptr, i64], returns: i64 },
}).symbols, { live: ["peer_async_generated_live"] });

export const SourceOption = {
  device_type: 0, error_before_schema: 1, error_after: 2, error_code: 3, generate: 4, generate_rows: 5,
  thread_per_callback: 6, delay_us: 7, metadata: 8, overrun: 9, extract_fail_at: 10, sync_event: 11,
  release_early: 12, finish_after_cancel: 13,
} as const;
const sourceOptionCount = 14;
const sourceDefaults: Record<keyof typeof SourceOption, number> = {
  device_type: 1, error_before_schema: 0, error_after: -1, error_code: 5, generate: 0, generate_rows: 4,
  thread_per_callback: 0, delay_us: 0, metadata: 0, overrun: 0, extract_fail_at: -1, sync_event: 0,
  release_early: -1, finish_after_cancel: 0,
};

export const SourceStat = {
  requested: 0, sent: 1, extracted: 2, extracted_null: 3, extract_twice: 4, request_calls: 5, cancel_calls: 6,
  max_in_flight: 7, max_unextracted: 8, done: 9, bad_request_n: 10, bad_requests: 11, callback_threads: 12,
  request_after_release: 13,
} as const;

export const SinkOption = {
  depth: 0, cancel_at: 1, cancel_where: 2, bad_request: 3, bad_n: 4, request_in_callback: 5, reject_schema: 6,
  reject_task_at: 7, reject_code: 8, delay_us: 9, discard_every: 10, keep_arrays: 11, release_on_thread: 12,
  timestamps: 13, extract_refused: 14,
} as const;
const sinkOptionCount = 15;
const sinkDefaults: Record<keyof typeof SinkOption, number> = {
  depth: 4, cancel_at: -1, cancel_where: 0, bad_request: 0, bad_n: 0, request_in_callback: 0, reject_schema: 0,
  reject_task_at: -1, reject_code: 22, delay_us: 0, discard_every: 0, keep_arrays: 0, release_on_thread: 0,
  timestamps: 0, extract_refused: 0,
};
/** Where the sink cancels (SinkOption.cancel_where). */
export const CancelWhere = { worker: 0, in_next_task: 1, before_request: 2, after_end: 3 } as const;

export const SinkStat = {
  schemas: 0, received: 1, requested: 2, extracted: 3, extracted_null: 4, extract_failed: 5, ends: 6, errors: 7,
  error_code: 8, releases: 9, overruns: 10, after_release: 11, after_reject: 12, error_after_cancel: 13,
  before_schema: 14, reentrant: 15, producer_missing: 16, device_type: 17, sync_event: 18,
  producer_device_type: 19, sum: 20, tasks_with_metadata: 21, done: 22, rows: 23,
} as const;

function optionWords(count: number, defaults: Record<string, number>, indices: Record<string, number>, given: Record<string, number | undefined>): BigInt64Array {
  const words = new BigInt64Array(count);
  for (const [name, index] of Object.entries(indices)) words[index] = BigInt(given[name] ?? defaults[name]);
  return words;
}

/** Peers not freed yet: `freePeers()` frees them after a failed test. */
const live = new Set<{ free(): void }>();

/** Frees every peer a test left behind (after a failure mid-stream). */
export function freePeers(): void {
  for (const peer of [...live]) peer.free();
}

/** A C producer. `start(handler)` runs it on its own thread. */
export class CSource {
  readonly address: Pointer;
  #freed = false;
  constructor(options: Partial<Record<keyof typeof SourceOption, number>> = {}) {
    this.address = asyncPeer.peer_async_source_new(optionWords(sourceOptionCount, sourceDefaults, SourceOption, options))!;
    live.add(this);
  }
  /** Moves `schema` (the first time) and `array` into the source. */
  add(schema: Pointer | null, array: Pointer | null): void {
    asyncPeer.peer_async_source_add(this.address, schema, array);
  }
  start(handler: Pointer): void {
    if (asyncPeer.peer_async_source_start(this.address, handler) !== 0) throw new Error("could not start the source thread");
  }
  stat(which: keyof typeof SourceStat): number {
    return Number(asyncPeer.peer_async_source_stat(this.address, SourceStat[which]));
  }
  sentAt(i: number): bigint {
    return asyncPeer.peer_async_source_sent_at(this.address, i) as bigint;
  }
  /** Joins the thread (only once the handler was released). */
  join(): void {
    asyncPeer.peer_async_source_join(this.address);
  }
  /** Stops the thread (a cancel, if it still runs), joins it and frees. */
  free(): void {
    if (this.#freed) return;
    this.#freed = true;
    live.delete(this);
    asyncPeer.peer_async_source_free(this.address);
  }
}

/** A C consumer whose worker thread requests and extracts. */
export class CSink {
  readonly address: Pointer;
  #freed = false;
  constructor(options: Partial<Record<keyof typeof SinkOption, number>> = {}) {
    this.address = asyncPeer.peer_async_sink_new(optionWords(sinkOptionCount, sinkDefaults, SinkOption, options))!;
    live.add(this);
  }
  get handler(): StructPointer<"ArrowAsyncDeviceStreamHandler"> {
    return structPointer("ArrowAsyncDeviceStreamHandler", asyncPeer.peer_async_sink_handler(this.address)!);
  }
  stat(which: keyof typeof SinkStat): number {
    return Number(asyncPeer.peer_async_sink_stat(this.address, SinkStat[which]));
  }
  get errorMessage(): string | null {
    const p = asyncPeer.peer_async_sink_error_message(this.address);
    return p ? new CString(p).toString() : null;
  }
  /** Binary metadata at `p` as bytes (null for NULL). */
  static metadataBytes(p: Pointer | null): Uint8Array | null {
    if (!p) return null;
    const len = Number(asyncPeer.peer_async_sink_metadata_len(p));
    return new Uint8Array(toArrayBuffer(p, 0, len)).slice();
  }
  get errorMetadata(): Uint8Array | null {
    return CSink.metadataBytes(asyncPeer.peer_async_sink_error_metadata(this.address));
  }
  get producerMetadata(): Uint8Array | null {
    return CSink.metadataBytes(asyncPeer.peer_async_sink_producer_metadata(this.address));
  }
  get kept(): number {
    return Number(asyncPeer.peer_async_sink_kept(this.address));
  }
  keptArray(i: number): StructPointer<"ArrowDeviceArray"> {
    return structPointer("ArrowDeviceArray", asyncPeer.peer_async_sink_kept_array(this.address, i)!);
  }
  get schema(): StructPointer<"ArrowSchema"> {
    return structPointer("ArrowSchema", asyncPeer.peer_async_sink_schema(this.address)!);
  }
  /** Joins the worker (only once the handler was released). */
  join(): void {
    asyncPeer.peer_async_sink_join(this.address);
  }
  /** When task `i` was extracted (with the timestamps option; after join). */
  extractedAt(i: number): bigint {
    return asyncPeer.peer_async_sink_extracted_at(this.address, i) as bigint;
  }
  free(): void {
    if (this.#freed) return;
    this.#freed = true;
    live.delete(this);
    asyncPeer.peer_async_sink_free(this.address);
  }
}
