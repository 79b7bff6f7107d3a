/**
 * bun-arrow-device/diagnostics: what is alive and where the library came
 * from. Release counters (every export and import counted until its
 * release), the handles still open (with ARROW_DEVICE_DEBUG=1), a way to
 * run pending JS-side releases now, the tuning knob of the JS work queue,
 * and which native library file this process loaded.
 */
export { type CounterName } from "./abi/layout.ts";
export { counters, nonZeroCounters, type Counters } from "./lifetime/counters.ts";
export { drainReleased } from "./lifetime/keepalive.ts";
export { liveHandles, debugEnabled } from "./lifetime/debug.ts";
export { setJsWorkSpin } from "./lifetime/js_queue.ts";
export { libraryPath, librarySource, libraryEnvVar, type LibrarySource } from "./ffi/library.ts";
export { platformId, type Libc } from "./ffi/platform.ts";
