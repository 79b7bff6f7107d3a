/**
 * Reading Arrow C structs in place, by address. No lifetime logic here:
 * callers guarantee the memory is alive (lifetime/ checks that first).
 */
import { CString, read, toArrayBuffer, type Pointer } from "bun:ffi";
import { ArrowArrayLayout, ArrowDeviceArrayLayout, ArrowSchemaLayout } from "./layout.ts";
import { InvalidLayoutError, Status } from "../errors.ts";
import { lastError, native } from "../ffi/library.ts";
import { decodeMetadataBytes } from "./metadata.ts";

const S = ArrowSchemaLayout.fields;
const A = ArrowArrayLayout.fields;
const D = ArrowDeviceArrayLayout.fields;

export function asPointer(address: number): Pointer {
  return address as Pointer;
}

export const schemaFields = {
  format: (schema: number): string | null => {
    const p = read.ptr(asPointer(schema), S.format);
    return p ? new CString(asPointer(p)).toString() : null;
  },
  name: (schema: number): string | null => {
    const p = read.ptr(asPointer(schema), S.name);
    return p ? new CString(asPointer(p)).toString() : null;
  },
  metadataAddress: (schema: number): number => read.ptr(asPointer(schema), S.metadata),
  flags: (schema: number): number => Number(read.i64(asPointer(schema), S.flags)),
  nChildren: (schema: number): number => Number(read.i64(asPointer(schema), S.n_children)),
  child: (schema: number, i: number): number => read.ptr(asPointer(read.ptr(asPointer(schema), S.children)), i * 8),
  dictionary: (schema: number): number => read.ptr(asPointer(schema), S.dictionary),
  released: (schema: number): boolean => read.ptr(asPointer(schema), S.release) === 0,
};

export const arrayFields = {
  length: (array: number): number => Number(read.i64(asPointer(array), A.length)),
  nullCount: (array: number): number => Number(read.i64(asPointer(array), A.null_count)),
  offset: (array: number): number => Number(read.i64(asPointer(array), A.offset)),
  nBuffers: (array: number): number => Number(read.i64(asPointer(array), A.n_buffers)),
  nChildren: (array: number): number => Number(read.i64(asPointer(array), A.n_children)),
  buffer: (array: number, i: number): number => read.ptr(asPointer(read.ptr(asPointer(array), A.buffers)), i * 8),
  child: (array: number, i: number): number => read.ptr(asPointer(read.ptr(asPointer(array), A.children)), i * 8),
  dictionary: (array: number): number => read.ptr(asPointer(array), A.dictionary),
  released: (array: number): boolean => read.ptr(asPointer(array), A.release) === 0,
};

export const deviceArrayFields = {
  deviceId: (deviceArray: number): number => Number(read.i64(asPointer(deviceArray), D.device_id)),
  deviceType: (deviceArray: number): number => read.i32(asPointer(deviceArray), D.device_type),
  syncEvent: (deviceArray: number): number => read.ptr(asPointer(deviceArray), D.sync_event),
  reserved: (deviceArray: number): [bigint, bigint, bigint] => [
    read.i64(asPointer(deviceArray), D.reserved),
    read.i64(asPointer(deviceArray), D.reserved + 8),
    read.i64(asPointer(deviceArray), D.reserved + 16),
  ],
};

/** Decodes the metadata at `address` (0: none) as key/value pairs. Its
 * length fields are bounds-checked natively first (the encoding has no
 * size of its own), then the blob is read once. */
export function readMetadata(address: number): [string, string][] {
  if (!address) return [];
  const length = native.abd_metadata_length(asPointer(address));
  if (length < 0) throw new InvalidLayoutError(Status.invalid_layout, lastError());
  return decodeMetadataBytes(new Uint8Array(toArrayBuffer(asPointer(address), 0, length)).slice());
}

/**
 * An ArrayBuffer over native memory, without copying. When it is collected
 * (or detached with `transfer(0)`), Bun calls the native
 * `deallocator(bytes, context)`, possibly on a GC thread (the five-argument
 * `toArrayBuffer`, declared in core/ffi/bun_ffi.ts).
 */
export function wrapNative(address: number, byteLength: number, context: number, deallocator: Pointer): ArrayBuffer {
  return toArrayBuffer(asPointer(address), 0, byteLength, asPointer(context), deallocator);
}
