/**
 * The JS side of the library's work queue (zig/js_queue.zig): how native
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
import { JsWorkTag } from "../abi/layout.ts";
import { native } from "../ffi/library.ts";

export { JsWorkTag };

/** Handles one entry: `key` and `address` as the tag defines them. */
export type JsWorkHandler = (key: number, address: number) => void;

const handlers = new Map<number, JsWorkHandler>();

/** Registers the handler for `tag` (one per tag). */
export function onJsWork(tag: number, handler: JsWorkHandler): void {
  handlers.set(tag, handler);
}

const capacity = 256;
const scratch = new Float64Array(3 * capacity);

/** Takes every queued entry and runs its handler; returns how many.
 * Handlers must not throw (a throw is reported, not propagated). */
export function drainJsWork(): number {
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
        handler(entries[3 * i + 1], entries[3 * i + 2]);
      } catch (error) {
        console.error("[bun-arrow-device] a JS work handler threw:", error);
      }
    }
    handled += n;
    if (n < capacity) return handled;
  }
}

// The library calls this from any thread, at most once per empty-to-
// non-empty transition of its queue. Never closed: native threads may post
// until the process exits.
const wake = new JSCallback(() => {
  drainJsWork();
}, { args: [], returns: "void", threadsafe: true });
native.abd_js_queue_set_notifier(wake.ptr);
