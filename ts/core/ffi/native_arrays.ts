/**
 * Typed arrays whose bytes native code reads or writes by address.
 *
 * A small typed array made with `new Float64Array(n)` keeps its bytes
 * inline in JSC's heap, and JSC may move them to a new ArrayBuffer of
 * their own (it does so the first time the array's buffer is asked for,
 * and was seen doing so while a native call that ran JS, a JS producer's
 * get_next, was writing through the old address: JS then read stale
 * words). A typed array made over an ArrayBuffer of its own has bytes
 * that never move, so an address taken for a native call stays its
 * address. Every array this package hands to native code by address is
 * made here.
 */

type TypedArrayConstructor<T> = { new (buffer: ArrayBuffer): T; readonly BYTES_PER_ELEMENT: number };

/** `length` zeroed elements over an ArrayBuffer of their own. */
export function nativeArray<T>(Ctor: TypedArrayConstructor<T>, length: number): T {
  return new Ctor(new ArrayBuffer(length * Ctor.BYTES_PER_ELEMENT));
}

/** `values`, copied into a `nativeArray`. */
export function nativeArrayOf<T extends { set(values: ArrayLike<number | bigint>): void }>(Ctor: TypedArrayConstructor<T>, values: ArrayLike<number | bigint>): T {
  const out = nativeArray(Ctor, values.length);
  out.set(values);
  return out;
}
