/**
 * bun-arrow-device/diagnostics: what is alive and where the library came
 * from. Release counters (every export and import counted until its
 * release), the handles still open (with ARROW_DEVICE_DEBUG=1), a way to
 * run pending JS-side releases now, the tuning knob of the JS work queue,
 * which native library file this process loaded, and the error of a
 * library whose struct layouts disagree with this package's.
 */
export { type CounterName } from "./core/abi/layout.ts";
export { LayoutMismatchError } from "./core/errors.ts";
export { counters, nonZeroCounters, type Counters } from "./native/counters.ts";
export { drainReleased } from "./native/keepalive.ts";
export { liveHandles, debugEnabled } from "./native/debug.ts";
export { setJsWorkSpin } from "./native/js_queue.ts";
export { libraryPath, librarySource, libraryEnvVar, type LibrarySource } from "./core/ffi/library.ts";
export { platformId, type Libc } from "./core/ffi/platform.ts";
