/**
 * Typed addresses: one branded pointer type per Arrow C struct, so that
 * passing an ArrowArray* where an ArrowSchema* is expected (a swapped
 * pair) or an ArrowDeviceArrayStream* where an ArrowArrayStream* is
 * expected fails to type-check. At run time they are plain numbers
 * (bun:ffi `Pointer`s); every call that takes one still checks what it
 * names with the fault-safe probe (ts/core/abi/probe.ts).
 *
 * Handles return the right brand (`ExportedArray.schema`, `.array`,
 * `ExportedStream.stream`, `CSchema.address`, ...). An address that came
 * from elsewhere (a number from C, a bun:ffi `Pointer`) is given its brand
 * by `structPointer(kind, address)`: the one way to state what it points
 * to (docs/api.md, "Typed addresses").
 */
import type { Pointer } from "bun:ffi";
import { addressArg, oneOfArg } from "../args.ts";

/** The Arrow C structs a typed address can name. */
export type StructName =
  | "ArrowSchema"
  | "ArrowArray"
  | "ArrowDeviceArray"
  | "ArrowArrayStream"
  | "ArrowDeviceArrayStream"
  | "ArrowAsyncDeviceStreamHandler";

const structNames: readonly StructName[] = [
  "ArrowSchema", "ArrowArray", "ArrowDeviceArray", "ArrowArrayStream", "ArrowDeviceArrayStream", "ArrowAsyncDeviceStreamHandler",
];

declare const structBrand: unique symbol;

/** The address of a C `struct K` (e.g. `StructPointer<"ArrowSchema">` is
 * an `ArrowSchema*`): a bun:ffi `Pointer` (a number) that type-checks
 * only where a `K` is expected. Make one with `structPointer`. */
export type StructPointer<K extends StructName> = Pointer & { readonly [structBrand]: K };

/**
 * States what the address `address` (a number or bun:ffi `Pointer` from C,
 * or a bigint) points to: returns it as a `StructPointer<kind>`. Checks only
 * that it is a non-zero, 8-byte aligned address; the call it is given to
 * checks the struct itself (unreadable memory, the wrong struct, a released
 * one) and refuses it with a typed error.
 */
export function structPointer<K extends StructName>(kind: K, address: number | bigint | Pointer): StructPointer<K> {
  oneOfArg("structPointer", "kind", kind, structNames);
  return addressArg("structPointer", "address", address) as StructPointer<K>;
}

/** Internal: brands an address this library computed itself. */
export function branded<K extends StructName>(address: number): StructPointer<K> {
  return address as StructPointer<K>;
}
