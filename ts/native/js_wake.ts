/**
 * Waking the JS thread when native objects change state on other threads
 * (zig/async/js_wake.zig).
 *
 * Each waiting object registers a handler under a numeric token and hands
 * the token to its native side. Native code calls one threadsafe
 * JSCallback with the token; Bun runs it later on the JS thread, where the
 * handler looks at the object (after clearing its native "wake pending"
 * flag, so no news is lost). Tokens outlive nothing: a wake for a token
 * that is no longer registered is ignored.
 *
 * A pending promise does not keep Bun's event loop alive, and a threadsafe
 * callback queued from another thread does not either; `holdEventLoop()`
 * keeps one (otherwise idle) timer referenced while anything awaits native
 * news.
 *
 * Generic on purpose: the sync device streams use the same mechanism.
 */
import { JSCallback } from "bun:ffi";
import { native } from "../core/ffi/library.ts";

const handlers = new Map<number, () => void>();
let nextToken = 1;

// Never closed: native objects may wake JS until the process exits.
const wake = new JSCallback((token: number) => {
  handlers.get(token)?.();
}, { args: ["u32"], returns: "void", threadsafe: true });
native.abd_js_wake_set_notifier(wake.ptr);

/** Registers `handler` to run (on the JS thread) whenever the native side
 * wakes `token`; returns the token. */
export function registerWake(handler: () => void): number {
  const token = nextToken;
  nextToken = nextToken >= 0xffff_fff0 ? 1 : nextToken + 1;
  handlers.set(token, handler);
  return token;
}

export function unregisterWake(token: number): void {
  handlers.delete(token);
}

/** Registered wake handlers (for leak checks). */
export function registeredWakes(): number {
  return handlers.size;
}

let holds = 0;
let keeper: ReturnType<typeof setInterval> | null = null;

/** Keeps the event loop alive until the returned function is called
 * (idempotent). Holds are counted; one idle timer serves them all. */
export function holdEventLoop(): () => void {
  if (holds++ === 0) {
    if (keeper === null) keeper = setInterval(() => {}, 1 << 30);
    else keeper.ref();
  }
  let held = true;
  return () => {
    if (!held) return;
    held = false;
    if (--holds === 0) keeper?.unref();
  };
}

/**
 * A wake-up for one waiter at a time: `wait()` resolves at the next
 * `notify()`, or at once if a notify came while nobody waited. Holds the
 * event loop while waiting.
 */
export class WakeSignal {
  #resolve: (() => void) | null = null;
  #pending = false;

  notify(): void {
    const resolve = this.#resolve;
    if (resolve) {
      this.#resolve = null;
      resolve();
    } else {
      this.#pending = true;
    }
  }

  wait(): Promise<void> {
    if (this.#pending) {
      this.#pending = false;
      return Promise.resolve();
    }
    const release = holdEventLoop();
    return new Promise<void>((resolve) => {
      this.#resolve = () => {
        release();
        resolve();
      };
    });
  }
}
