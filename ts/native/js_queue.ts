/**
 * The JS side of the library's work queue (zig/core/js_queue.zig): how native
 * threads get work done on the JS thread.
 *
 * A native thread that needs JS (a consumer thread blocked in get_next of
 * a JS-produced stream, a background pull that finished) posts an entry
 * natively; the library then calls one void threadsafe JSCallback, which
 * Bun runs later on the JS thread. That callback takes every queued entry
 * and hands each to the handler registered for its tag; handlers answer
 * through ordinary FFI calls, which wake the waiting thread.
 *
 * Handlers run on the JS thread, from the event loop: the loop must be
 * running for native threads to get answers. A JS thread blocked in a
 * native call that waits for such a thread deadlocks, as with any lock.
 */
import { JSCallback } from "bun:ffi";
import { JsWorkTag } from "../core/abi/layout.ts";
import { integerArg } from "../core/args.ts";
import { native } from "../core/ffi/library.ts";
import { drainReleased } from "./keepalive.ts";
import { nativeArray } from "../core/ffi/native_arrays.ts";

export { JsWorkTag };

/** Handles one entry: `key` and `address` as the tag defines them.
 * Returns true when it answered a native thread that is likely to ask
 * again soon (then JS polls for a while instead of going back to sleep). */
export type JsWorkHandler = (key: number, address: number) => boolean;

const handlers = new Map<number, JsWorkHandler>();

/** Registers the handler for `tag` (one per tag). */
export function onJsWork(tag: number, handler: JsWorkHandler): void {
  handlers.set(tag, handler);
}

const capacity = 256;
const scratch = nativeArray(Float64Array, 3 * capacity);

/**
 * How long the JS thread keeps polling for more work after handling some,
 * before going back to the event loop (nanoseconds). A native thread that
 * just got an answer usually asks again within microseconds (a consumer
 * pulling batch after batch); answering it from this poll saves a wake-up
 * through the event loop, which costs tens of microseconds. The poll is
 * bounded, so the event loop is held up by at most this long per wake-up.
 */
let spinNs = 20_000;
/** The longest poll window (1 s), as zig/core/js_queue.zig `max_spin_ns`. */
const maxJsWorkSpin = 1_000_000_000;

/** Sets the poll window above, for JS and for the native threads that
 * wait for JS (0 disables spinning); returns the previous one. */
export function setJsWorkSpin(nanoseconds: number): number {
  integerArg("setJsWorkSpin", "nanoseconds", nanoseconds, 0, maxJsWorkSpin);
  const previous = spinNs;
  spinNs = nanoseconds;
  native.abd_set_spin_ns(spinNs);
  return previous;
}

export function jsWorkSpin(): number {
  return spinNs;
}

/** Takes every queued entry and runs its handler, then polls for more for
 * up to the spin window; returns how many entries it handled. Handlers
 * must not throw (a throw is reported, not propagated). */
export function drainJsWork(): number {
  let handled = drainOnce();
  if (!answeredSome || spinNs === 0 || polling) return handled;
  // While polling, native threads skip waking JS (for this queue and for
  // released exports); after it, one more take catches what came meanwhile.
  polling = true;
  startPolling();
  try {
    let deadline = Bun.nanoseconds() + spinNs;
    while (Bun.nanoseconds() < deadline) {
      // A lock-free check first: taking the queues' locks in a loop would
      // slow down the very threads posting to them.
      if (native.abd_js_work_pending() === 0) continue;
      const n = drainOnce();
      drainReleased();
      if (n > 0) {
        handled += n;
        if (answeredSome) deadline = Bun.nanoseconds() + spinNs;
      }
    }
  } finally {
    polling = false;
    stopPolling();
  }
  return handled;
}

/** True while drainJsWork polls (a handler reaching it again just drains). */
let polling = false;

/** Whether the last drainOnce answered a native thread. */
let answeredSome = false;

/** Tells native threads that JS polls both queues: they skip waking it. */
export function startPolling(): void {
  native.abd_js_queue_polling(true);
}

/** Ends `startPolling`: tells native threads to wake JS again, then takes
 * what they queued meanwhile without a wake-up (left there, an entry
 * would also keep the next ones from waking JS: wake-ups are sent only
 * when the queue was empty). */
export function stopPolling(): void {
  native.abd_js_queue_polling(false);
  if (native.abd_js_work_pending() > 0) {
    drainOnce();
    drainReleased();
  }
}

/** Takes and handles what is queued now, once (no polling). */
export function drainOnce(): number {
  answeredSome = false;
  let handled = 0;
  for (;;) {
    const n = native.abd_js_queue_take(scratch, capacity);
    // Copied first: a handler may reach drainJsWork again.
    const entries = scratch.slice(0, 3 * n);
    for (let i = 0; i < n; i++) {
      const handler = handlers.get(entries[3 * i]);
      if (!handler) {
        console.error(`[bun-arrow-device] no handler for JS work tag ${entries[3 * i]}`);
        continue;
      }
      try {
        if (handler(entries[3 * i + 1], entries[3 * i + 2])) answeredSome = true;
      } catch (error) {
        console.error("[bun-arrow-device] a JS work handler threw:", error);
      }
    }
    handled += n;
    if (n < capacity) return handled;
  }
}

// An import whose last reference went on the collector's thread, and whose
// producer's release callbacks are JS code (bun:ffi JSCallbacks, callable
// on this thread only): the library queued it here, and it is released now.
onJsWork(JsWorkTag.owner_release, (_key, owner) => {
  native.abd_owner_release_deferred(owner as never);
  return false;
});

// The library calls this from any thread, at most once per empty-to-
// non-empty transition of its queue. Never closed: native threads may post
// until the process exits.
const wake = new JSCallback(() => {
  drainJsWork();
}, { args: [], returns: "void", threadsafe: true });
native.abd_js_queue_set_notifier(wake.ptr);
