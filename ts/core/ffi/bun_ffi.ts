/**
 * Where bun-types (1.4.5) describes bun:ffi differently from what Bun 1.4.5
 * does, the correction lives here, in one place, so that the rest of the
 * code is typed without casts. Each correction says what Bun does at run
 * time; test/core/bun_ffi.test.ts checks every one of them against the pinned
 * Bun, so a Bun upgrade that changes one fails there first.
 *
 * - `FFIType.usize`: exists at run time (the value of `uint64_t`, 8) and
 *   names `size_t` arguments; bun-types lists it only as the string
 *   "usize". Declared below, merged into the enum.
 * - `toArrayBuffer(ptr, byteOffset, byteLength, context, deallocator)`:
 *   Bun takes a native `deallocator(bytes, context)` that it calls once the
 *   ArrayBuffer is collected or detached (possibly on a GC thread, so it
 *   must be native and thread-safe); bun-types declares only the first
 *   three arguments. Declared below as an overload.
 * - A `ptr` return is a number, or null for NULL; bun-types adds `bigint`,
 *   which Bun never returns there. `openLibrary` is `dlopen` with that one
 *   correction in its symbol types (see `NativeSymbols`).
 */
import { dlopen, type FFIFunction, type Library, type Pointer } from "bun:ffi";

declare module "bun:ffi" {
  enum FFIType {
    /** size_t: Bun's alias of `uint64_t` (all supported platforms are 64-bit). */
    usize = 8,
  }

  /**
   * An ArrayBuffer over `byteLength` bytes of native memory at
   * `ptr + byteOffset`, without copying. When it is garbage-collected, or
   * detached with `transfer(0)`, Bun calls the native
   * `deallocator(bytes, context)` once, possibly on a GC thread.
   */
  function toArrayBuffer(ptr: Pointer, byteOffset: number, byteLength: number, context: Pointer | null, deallocator: Pointer): ArrayBuffer;
}

/** The symbols Bun binds for `Fns`, as bun-types declares them. */
type BoundSymbols<Fns extends Record<string, FFIFunction>> = Library<Fns>["symbols"];

/** bun-types' type for a `ptr` (or `function`) return. */
type DeclaredPointerReturn = Pointer | bigint | null;

/**
 * The symbols of a library opened with `openLibrary`: bun-types' own
 * signatures, except that a function returning a pointer returns
 * `Pointer | null` (what Bun returns) rather than `Pointer | bigint | null`.
 */
export type NativeSymbols<Fns extends Record<string, FFIFunction>> = {
  readonly [K in keyof Fns]: [ReturnType<BoundSymbols<Fns>[K]>] extends [DeclaredPointerReturn]
    ? [DeclaredPointerReturn] extends [ReturnType<BoundSymbols<Fns>[K]>]
      ? (...args: Parameters<BoundSymbols<Fns>[K]>) => Pointer | null
      : BoundSymbols<Fns>[K]
    : BoundSymbols<Fns>[K];
};

/** An open native library: its symbols (see `NativeSymbols`) and `close`. */
export type NativeLibrary<Fns extends Record<string, FFIFunction>> = {
  readonly symbols: NativeSymbols<Fns>;
  /** Unloads the library. Calling any of its symbols afterwards jumps into
   * unmapped memory: only for libraries nothing can call back into. */
  close(): void;
};

/**
 * `dlopen(path, symbols)`, typed with `NativeSymbols`. Throws what `dlopen`
 * throws (a missing file, a missing symbol). The object returned is Bun's
 * own: no wrapper function sits between a caller and the native symbol.
 */
export function openLibrary<const Fns extends Record<string, FFIFunction>>(path: string, symbols: Fns): NativeLibrary<Fns> {
  // FFI boundary: only the declared type of pointer returns changes (see
  // the module comment); the value is dlopen's.
  return dlopen(path, symbols) as unknown as NativeLibrary<Fns>;
}
