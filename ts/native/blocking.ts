/**
 * `callBlocking`: run a synchronous native call that may wait for consumers
 * of JS-produced streams (a DuckDB query with threads >= 2 over an exported
 * stream, say) without hanging forever.
 *
 * A JS-produced stream answers get_next from other threads through the JS
 * event loop (zig/stream/export.zig). While the JS thread is blocked inside
 * a native call, nobody can answer; if that call waits for those get_next
 * calls, it waits forever. Inside `callBlocking`, such get_next calls fail
 * at once with EDEADLK (the consumer sees an error and its message), and
 * `callBlocking` turns the failure of `call` into a WrongThreadError that
 * says what to do. get_next on the calling thread itself is still answered.
 */
import { Status, WrongThreadError } from "../core/errors.ts";
import { native } from "../core/ffi/library.ts";
import { functionArg } from "../core/args.ts";

/** Runs `call` with the JS thread marked as blocked (see the module
 * comment). If `call` throws after a get_next was refused during it, the
 * error is a WrongThreadError (the original as its `cause`). A `call` that
 * returns normally returns its value (its consumer coped with the refusal). */
export function callBlocking<T>(call: () => T): T {
  functionArg("callBlocking", "call", call);
  const before = native.abd_js_blocking(true);
  let result: T;
  try {
    result = call();
  } catch (error) {
    const refused = native.abd_js_blocking(false) - before;
    if (refused > 0) {
      const wrapped = new WrongThreadError(Status.wrong_thread, `a consumer asked a JS-produced stream for its next batch from another thread ${refused} time(s) while the JS thread was blocked in this synchronous call, which would have deadlocked; those calls were refused, and the call failed (${error instanceof Error ? error.message : String(error)}). Run the call on a native thread, or make the consumer use only the calling thread (DuckDB: SET threads = 1)`);
      wrapped.cause = error;
      throw wrapped;
    }
    throw error;
  }
  native.abd_js_blocking(false);
  return result;
}
