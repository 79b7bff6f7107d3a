/**
 * This library as the *consumer* of an async device stream: a native
 * `ArrowAsyncDeviceStreamHandler` (zig/async/consumer.zig) that any C
 * producer pushes into, read from JS as an async iterable of imported
 * arrays (raw views; arrow/async_stream.ts adds apache-arrow batches).
 *
 * Threads. The producer calls the handler from its own threads; the native
 * side only queues and wakes JS (native/js_wake.ts), at most one wake
 * pending at a time. Everything here runs on the JS thread.
 *
 * Batched hand-off. A producer thread that pushes while JS is busy costs
 * JS nothing; when JS looks (a pull, or the one wake that news caused), a
 * single native call (`abd_async_consumer_take_many`) takes *every* task
 * that is ready: it calls each task's `extract_data` here, imports each
 * array into a native owner (zero-copy) and returns them all, with the
 * state. JS keeps them in `ready` (owned by the core: disposed if the
 * stream is cancelled before they are read) and serves the following
 * pulls from there without another native call. So one wake and one call
 * carry as many batches as the producer managed to push meanwhile. Before
 * it sleeps, JS waits a few microseconds for the producer's next push in
 * one native call that yields the CPU (`awaitTasks`): a producer that
 * keeps up then needs no wake at all.
 *
 * Flow control. JS asks the producer for more as the *reader* takes
 * batches (not as they move into `ready`): between half the queue depth
 * and the depth stay requested and not yet read, never more, so `ready`
 * plus what the producer may still send never exceeds `queueDepth`.
 *
 * Lifetimes. The handler lives until the producer calls its release; the
 * native state until both that release and JS are done. `break` / `return()`
 * / `cancel()` cancel the stream: queued tasks and the ones the producer
 * still sends are extracted with NULL (not wanted), and the returned
 * promise settles once the producer released the handler (`closed`). A
 * stream that ends or fails is closed the same way. Each batch is an
 * ImportedArray whose memory stays valid after the stream is gone, until
 * it is disposed or collected.
 */
import { toArrayBuffer } from "bun:ffi";
import {
  AsyncConsumerString, AsyncConsumerWord, ValidationLevel,
  asyncConsumerWords, type ValidationLevelName,
} from "../core/abi/layout.ts";
import { decodeMetadataBytes } from "../core/abi/metadata.ts";
import { asPointer } from "../core/abi/structs.ts";
import { branded, type StructPointer } from "../core/abi/pointers.ts";
import { AsyncStreamError, CallbackError, InvalidArgumentError, ReleasedError, Status, errorFor } from "../core/errors.ts";
import { check, lastError, native } from "../core/ffi/library.ts";
import { reportLeak, track, untrack } from "./debug.ts";
import { ImportedArray, adoptImportOwner } from "./imported.ts";
import { WakeSignal, holdEventLoop, registerWake, unregisterWake } from "./js_wake.ts";
import { jsWorkSpin } from "./js_queue.ts";
import { integerArg, optionsArg } from "../core/args.ts";
import { validationLevelArg } from "../core/abi/layout.ts";
import { inspectCustom } from "./inspect.ts";
import { showAsyncConsumer } from "./inspect_handles.ts";
import { nativeArray } from "../core/ffi/native_arrays.ts";

/** Batches kept in flight when `AsyncConsumerOptions.queueDepth` is not given. */
export const defaultQueueDepth = 4;
/** The largest `AsyncConsumerOptions.queueDepth` (2^20). */
export const maxQueueDepth: number = 1 << 20;

/** Options of `new AsyncStreamConsumer(options)`. */
export type AsyncConsumerOptions = {
  /** Batches kept in flight: requested from the producer and not yet
   * taken by JS (1 .. 2^20, default 4). */
  queueDepth?: number;
  /** Validation level of every imported batch (default "default"). */
  validation?: ValidationLevelName;
};

/** Checks `fn`'s AsyncConsumerOptions (plus `extraKeys`, which the caller
 * checks): a queue depth in 1..maxQueueDepth and a validation level. */
export function consumerOptionsArg(fn: string, options: AsyncConsumerOptions | undefined, extraKeys: readonly string[] = []): { depth: number; validation: ValidationLevelName } {
  const checked = optionsArg(fn, "options", options, ["queueDepth", "validation", ...extraKeys]);
  const depth = integerArg(fn, "options.queueDepth", checked.queueDepth ?? defaultQueueDepth, 1, maxQueueDepth);
  const level = validationLevelArg(fn, { validation: checked.validation });
  return { depth, validation: (Object.keys(ValidationLevel) as ValidationLevelName[]).find((name) => ValidationLevel[name] === level)! };
}

/** One batch of the stream, as raw views. */
export type AsyncArray = {
  /** The batch, moved into a native owner without copying. */
  array: ImportedArray;
  /** The task's metadata (on_next_task's third argument), decoded; null
   * when the producer sent none. */
  metadata: Map<string, string> | null;
  /** Position in the stream, from 0. */
  index: number;
};

/** What the producer declared with on_schema. */
export type AsyncStreamInfo = {
  /** `ArrowAsyncProducer.device_type`. */
  deviceType: number;
  /** `ArrowAsyncProducer.additional_metadata`, decoded (copied). */
  producerMetadata: Map<string, string> | null;
};

/** Task counts of one async stream so far (`AsyncStreamConsumer.stats`). */
export type AsyncConsumerStats = {
  /** Sum of every request(n) made. */
  requested: number;
  /** Tasks the producer sent. */
  received: number;
  /** Tasks taken by JS (extracted with an array). JS takes every ready
   * task at once, so this may run ahead of `read`; batches taken and not
   * read when the stream is cancelled are released then. */
  taken: number;
  /** Batches the reader got (returned by the iterator). */
  read: number;
  /** Tasks extracted with NULL after cancel. */
  discarded: number;
};

const W = AsyncConsumerWord;
/** Most tasks one native take hands over (the queue depth, if smaller). */
const maxTakePerCall = 256;

function decodeOptional(bytes: Uint8Array | null): Map<string, string> | null {
  return bytes === null ? null : new Map(decodeMetadataBytes(bytes));
}

/**
 * Whether a take that found nothing left tasks queued natively after all:
 * the state is read after the take, so tasks the producer pushed in
 * between (and the end, an error or its release right behind them) show
 * as queued there. They are read before anything that stops the stream:
 * stopping at such an "ended" lost the last batches (a race seen once in
 * nine benchmark runs). Exported for its test.
 */
export function tasksStillQueued(words: Float64Array): boolean {
  return words[W.queued] > 0;
}

/**
 * The state one stream's JS side keeps. Deliberately holds no reference to
 * the public object, so that a dropped consumer can be collected (the wake
 * registry holds this).
 */
class ConsumerCore {
  address = 0;
  readonly token: number;
  readonly signal = new WakeSignal();
  readonly words = nativeArray(Float64Array, asyncConsumerWords);
  readonly stringWords = nativeArray(Float64Array, 2);
  /** `abd_async_consumer_take_many`'s output: count, then owner and
   * metadata size per task. */
  readonly #taken: Float64Array;
  readonly #level: number;
  /** Batches taken from the native side, not yet read (oldest at
   * `#head`). Owned here until a pull returns them. */
  #ready: AsyncArray[] = [];
  #head = 0;
  /** Batches handed to the reader so far. */
  delivered = 0;
  /** A failure met by a take after the batches it took: thrown once they
   * were read. */
  pendingError: Error | null = null;
  /** The native news counter as the last take began. */
  #newsBefore = 0;
  handedOut = false;
  /** The initial request(queueDepth) was made. */
  started = false;
  /** JS reads no more tasks; waiting for the producer's release. */
  finished = false;
  /** The native state was let go. */
  closed = false;
  #closedWaiters: (() => void)[] = [];
  readonly debugToken: number;

  constructor(readonly depth: number, readonly validation: ValidationLevelName) {
    this.#level = ValidationLevel[validation];
    this.#taken = nativeArray(Float64Array, 1 + 2 * Math.min(depth, maxTakePerCall));
    this.token = registerWake(() => this.#onWake());
    const out = nativeArray(BigUint64Array, 1);
    const status = native.abd_async_consumer_create(this.token, out);
    if (status !== 0) {
      unregisterWake(this.token);
      check(status);
    }
    this.address = Number(out[0]);
    this.debugToken = track("AsyncStreamConsumer");
  }

  #onWake(): void {
    this.signal.notify();
    if (this.finished) this.tryClose();
  }

  /** A snapshot of the native state (the last one once closed). `arm`:
   * JS is about to wait, so news after this snapshot must wake it (while
   * JS is busy, news wakes nobody: no JS callback per batch). */
  poll(arm = false): Float64Array {
    if (!this.closed) native.abd_async_consumer_poll(asPointer(this.address), this.words, arm ? 1 : 0);
    return this.words;
  }

  /** A copy of one of the native strings, or null. */
  bytes(id: number): Uint8Array | null {
    if (this.closed) return null;
    native.abd_async_consumer_string(asPointer(this.address), id, this.stringWords);
    const [address, length] = this.stringWords;
    if (!address) return null;
    return length === 0 ? new Uint8Array(0) : new Uint8Array(toArrayBuffer(asPointer(address), 0, length)).slice();
  }

  /** The stream's error as a typed error (state must say errored). */
  streamError(): AsyncStreamError {
    const words = this.words;
    const code = words[W.error_code];
    const text = this.bytes(AsyncConsumerString.error_message);
    const message = text ? new TextDecoder().decode(text) : "";
    const metadata = decodeOptional(this.bytes(AsyncConsumerString.error_metadata)) ?? new Map();
    const local = words[W.error_local] === 1;
    const what = local ? "the producer broke the async stream protocol" : `the producer failed (on_error ${code})`;
    return new AsyncStreamError(code, message ? `${what}: ${message}` : what, metadata, local);
  }

  info(): AsyncStreamInfo {
    return {
      deviceType: this.words[W.device_type],
      producerMetadata: decodeOptional(this.bytes(AsyncConsumerString.producer_metadata)),
    };
  }

  request(n: number): void {
    if (!this.closed) native.abd_async_consumer_request(asPointer(this.address), n);
  }

  /** The oldest batch taken and not yet read, or null. Counts it as read
   * and asks the producer for more when due. */
  next(): AsyncArray | null {
    if (this.#head === this.#ready.length) return null;
    const item = this.#ready[this.#head++];
    if (this.#head === this.#ready.length) {
      this.#ready = [];
      this.#head = 0;
    }
    this.delivered++;
    this.replenish(this.delivered);
    return item;
  }

  /**
   * One native call takes every task that is ready (each extracted and
   * imported there) into `ready`, and refreshes `words`. `arm`: JS is about
   * to wait if nothing comes, so news after this look must wake it.
   * Returns how many batches it took. A failure after some batches is
   * kept in `pendingError` (thrown once they were read); a failed
   * extract_data is not thrown: the producer reports it with on_error.
   */
  fill(arm: boolean): number {
    if (this.closed) return 0;
    const out = this.#taken;
    const base = this.words[W.taken];
    const capacity = (out.length - 1) >> 1;
    this.#newsBefore = native.abd_async_consumer_news(asPointer(this.address));
    const status = native.abd_async_consumer_take_many(asPointer(this.address), this.#level, out, capacity, arm ? 1 : 0, this.words);
    const n = out[0];
    const lastMetadata = n > 0 && out[2 * n] >= 0 ? decodeOptional(this.bytes(AsyncConsumerString.task_metadata)) : null;
    for (let i = 0; i < n; i++) {
      // Only the last task of a take can carry metadata (see takeMany).
      this.#ready.push({ array: adoptImportOwner(out[1 + 2 * i]), metadata: i === n - 1 ? lastMetadata : null, index: base + i });
    }
    if (status !== 0 && status !== Status.callback_error && this.pendingError === null) this.pendingError = errorFor(status, lastError());
    return n;
  }

  /**
   * Before JS arms and sleeps: when the producer owes tasks (requested and
   * not sent), waits up to the JS work spin window (`setJsWorkSpin`) for
   * its news in one native call that yields the CPU meanwhile (to the
   * producer's thread, when it waits for this core); returns whether news
   * came since the last take began. A producer thread that keeps up
   * delivers within microseconds, far sooner than a wake through the
   * event loop, and what it pushed meanwhile is taken in one go.
   */
  awaitTasks(): boolean {
    const words = this.words;
    if (this.closed || !this.started || words[W.requested] <= words[W.received]) return false;
    if (words[W.ended] === 1 || words[W.errored] === 1 || words[W.released] === 1) return false;
    const address = asPointer(this.address);
    return native.abd_async_consumer_await_news(address, this.#newsBefore, jsWorkSpin()) === 1;
  }

  /** Disposes of the batches taken and never read. */
  dropReady(): void {
    const left = this.#ready.slice(this.#head);
    this.#ready = [];
    this.#head = 0;
    for (const item of left) item.array.dispose();
  }

  /**
   * Asks for more once half of the queue depth was taken: between half the
   * depth and the depth stay requested and not yet taken, never more.
   * Fewer, larger requests mean fewer producer wake-ups (depth 1 still asks
   * for each batch). `words` is the state right after the take.
   */
  replenish(taken: number): void {
    const words = this.words;
    if (words[W.ended] === 1 || words[W.cancelled] === 1 || words[W.errored] === 1 || words[W.released] === 1) return;
    const outstanding = words[W.requested] - taken;
    if (outstanding <= this.depth >> 1) {
      this.request(this.depth - outstanding);
      words[W.requested] = taken + this.depth; // this poll's copy, kept current
    }
  }

  /** JS stops reading: cancels unless the stream is over (the native side
   * discards what is queued and what still comes), then closes once the
   * producer released the handler. Idempotent. */
  finish(): void {
    if (this.finished) return;
    this.finished = true;
    this.dropReady();
    if (!this.closed) native.abd_async_consumer_cancel(asPointer(this.address));
    this.tryClose();
  }

  /** Lets the native state go once no producer can call the handler. */
  tryClose(): void {
    if (this.closed) return;
    const words = this.poll(true);
    if (this.handedOut && words[W.released] !== 1) return; // a wake will retry
    this.closed = true;
    native.abd_async_consumer_close(asPointer(this.address), this.handedOut ? 1 : 0);
    unregisterWake(this.token);
    untrack(this.debugToken);
    for (const resolve of this.#closedWaiters.splice(0)) resolve();
  }

  /** Settles once the native state was let go; holds the event loop
   * meanwhile. */
  whenClosed(): Promise<void> {
    if (this.closed) return Promise.resolve();
    const release = holdEventLoop();
    return new Promise<void>((resolve) => {
      this.#closedWaiters.push(() => {
        release();
        resolve();
      });
    });
  }
}

// Safety net: a consumer dropped mid-stream is cancelled, so the producer
// can finish and release. Not the intended path (debug mode warns).
const safetyNet = new FinalizationRegistry<ConsumerCore>((core) => {
  if (core.finished) return;
  reportLeak(core.debugToken, "AsyncStreamConsumer");
  core.finish();
});

/**
 * A native `ArrowAsyncDeviceStreamHandler` for any C producer, read from JS.
 *
 * ```ts
 * const stream = new AsyncStreamConsumer({ queueDepth: 4 });
 * startProducer(stream.handler);            // any C producer
 * for await (const { array, metadata } of stream.arrays()) { ... }
 * ```
 */
export class AsyncStreamConsumer implements AsyncDisposable {
  readonly #core: ConsumerCore;
  #iterated = false;
  /** Serializes pulls that wait, so that concurrent next() calls take in
   * order; `#waiting` counts them (a pull is served at once only when none
   * waits). */
  #pulls: Promise<unknown> = Promise.resolve();
  #waiting = 0;

  constructor(options: AsyncConsumerOptions = {}) {
    const { depth, validation } = consumerOptionsArg("AsyncStreamConsumer", options);
    this.#core = new ConsumerCore(depth, validation);
    safetyNet.register(this, this.#core, this);
  }

  /** The `struct ArrowAsyncDeviceStreamHandler*` to give to one producer.
   * Valid until that producer calls its release. */
  get handler(): StructPointer<"ArrowAsyncDeviceStreamHandler"> {
    const core = this.#core;
    if (core.closed) throw new ReleasedError(Status.released, "this async stream is closed; its handler is gone");
    core.handedOut = true;
    return branded(native.abd_async_consumer_handler(asPointer(core.address)) as number);
  }

  /** Batches kept in flight (the `queueDepth` option, or its default). */
  get queueDepth(): number {
    return this.#core.depth;
  }

  /** Task counts so far (read from the native state). */
  get stats(): AsyncConsumerStats {
    const words = this.#core.poll();
    return { requested: words[W.requested], received: words[W.received], taken: words[W.taken], read: this.#core.delivered, discarded: words[W.discarded] };
  }

  /** How the producer's news reached JS so far: `wakes`, the JS callbacks
   * the native side sent (at most one pending; none while JS is busy), and
   * `takes`, the native calls that took batches (each takes every batch
   * ready at that moment). Diagnostics: both stay well below the batch
   * count when the producer runs ahead of the reader. */
  get handoffs(): { wakes: number; takes: number } {
    const words = this.#core.poll();
    return { wakes: words[W.wakes], takes: words[W.take_turns] };
  }

  /** Settles once the producer released the handler and the native state
   * is gone (after the end, an error, or a cancel). */
  get closed(): Promise<void> {
    return this.#core.whenClosed();
  }

  /** Waits for on_schema; rejects with the stream's error if it failed
   * first. Requests nothing. */
  async ready(): Promise<AsyncStreamInfo> {
    const core = this.#core;
    let armed = false;
    for (;;) {
      const words = core.poll(armed);
      if (words[W.schema_received] === 1) return core.info();
      if (words[W.errored] === 1) {
        const error = core.streamError();
        core.finish();
        throw error;
      }
      if (core.closed || words[W.released] === 1 || core.finished) {
        core.finish();
        throw new CallbackError(Status.callback_error, "the async stream ended before the producer sent its schema");
      }
      if (!armed) {
        armed = true; // look once more with the wake armed, then wait
        continue;
      }
      await core.signal.wait();
      armed = false;
    }
  }

  /** The batches, in order, as raw views with their task metadata. One
   * iteration per stream. */
  arrays(): AsyncIterableIterator<AsyncArray> {
    if (this.#iterated) throw new InvalidArgumentError(Status.invalid_argument, "this async stream is already being read; it can be iterated once");
    this.#iterated = true;
    const owner = this; // the iterator keeps the consumer (and its safety net) alive
    const iterator: AsyncIterableIterator<AsyncArray> = {
      next: () => owner.#pull(),
      return: async () => {
        await owner.cancel();
        return { done: true, value: undefined };
      },
      [Symbol.asyncIterator]() {
        return iterator;
      },
    };
    return iterator;
  }

  /** One pull: at once when a task is queued (or the stream is over),
   * else after waiting. Pulls are served in order. */
  #pull(): Promise<IteratorResult<AsyncArray>> {
    if (this.#waiting === 0) {
      try {
        const ready = this.#step(false);
        if (ready) return Promise.resolve(ready);
      } catch (error) {
        return Promise.reject(error);
      }
    }
    this.#waiting++;
    const result = this.#pulls.then(() => this.#wait());
    this.#pulls = result.then(() => {}, () => {});
    return result.finally(() => this.#waiting--);
  }

  async #wait(): Promise<IteratorResult<AsyncArray>> {
    let armed = false;
    for (;;) {
      const ready = this.#step(armed);
      if (ready) return ready;
      if (!armed) {
        if (this.#core.awaitTasks()) continue; // news came without sleeping
        armed = true; // look once more with the wake armed, then wait
        continue;
      }
      await this.#core.signal.wait();
      armed = false;
    }
  }

  /** What a pull gets now, or null when it must wait for news. Batches
   * already taken come first, then a failure met while taking them, then
   * one native take of everything ready. */
  #step(armed: boolean): IteratorResult<AsyncArray> | null {
    const core = this.#core;
    for (;;) {
      if (core.finished) return { done: true, value: undefined };
      const item = core.next();
      if (item) return { done: false, value: item };
      if (core.pendingError) {
        const error = core.pendingError;
        core.finish();
        throw error;
      }
      if (core.fill(armed) > 0 || core.pendingError) continue;
      const words = core.words;
      if (tasksStillQueued(words)) continue;
      if (words[W.errored] === 1) {
        const error = core.streamError();
        core.finish();
        throw error;
      }
      if (words[W.extract_failed] !== 0 && words[W.released] === 1) {
        core.finish();
        throw new CallbackError(Status.callback_error, `extract_data returned ${words[W.extract_failed]} and the producer reported no error`);
      }
      if (words[W.ended] === 1) {
        core.finish();
        return { done: true, value: undefined };
      }
      if (words[W.released] === 1) {
        core.finish();
        throw new CallbackError(Status.callback_error, "the producer released the handler before the end of the stream");
      }
      if (words[W.schema_received] === 1 && !core.started) {
        core.started = true;
        core.request(core.depth);
        words[W.requested] = core.depth; // this snapshot's copy, kept current
        continue;
      }
      return null;
    }
  }

  /** Cancels the stream (what is queued and what the producer still sends
   * is discarded) and settles once the producer released the handler.
   * Idempotent; harmless after the end. */
  async cancel(): Promise<void> {
    this.#core.finish();
    await this.#core.whenClosed();
  }

  /** What console.log and Bun.inspect print (native/inspect.ts). */
  [inspectCustom](): string { return showAsyncConsumer(this); }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.cancel();
  }
}
