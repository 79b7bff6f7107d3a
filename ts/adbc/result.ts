/**
 * A driver's result stream (ExecuteQuery, GetObjects, ReadPartition, ...)
 * moved into an ImportedStream, wrapped first (zig/adbc/result_stream.zig)
 * so that a get_next that fails keeps the driver's AdbcError: the ADBC
 * 1.1.0 ErrorFromArrayStream, read on the thread that called get_next and
 * copied before the stream goes on. `convert` turns the stream import's
 * StreamError into that AdbcError (SQLSTATE, vendor code, details; `errno`
 * what get_next returned, `cause` the StreamError).
 *
 * Ownership: `release()` releases the stream (the driver frees its
 * AdbcError with it) and drops this side's reference to the slot.
 */
import { type Pointer } from "bun:ffi";
import { branded } from "../core/abi/pointers.ts";
import { StreamError, type AdbcError } from "../core/errors.ts";
import { native } from "../core/ffi/library.ts";
import { ImportedStream } from "../native/imported_stream.ts";
import { decodeError, type Driver } from "./driver.ts";
import { nativeArray } from "../core/ffi/native_arrays.ts";

const out = nativeArray(Float64Array, 3);
void out.buffer;

export class ResultStream {
  readonly stream: ImportedStream;
  #slot: Pointer | null;

  /** Moves the driver's ArrowArrayStream at `address` in (the struct is
   * left released, success or not). */
  constructor(driver: Driver, address: Pointer) {
    this.#slot = native.abd_adbc_result_stream(driver.address, address);
    try {
      this.stream = ImportedStream.fromArrayStream(branded<"ArrowArrayStream">(address));
    } catch (failure) {
      this.#dropSlot();
      throw failure;
    }
  }

  /** `failure` as the driver's AdbcError when it is a failed get_next the
   * driver described; otherwise `failure` itself. */
  convert(failure: unknown): unknown {
    if (!(failure instanceof StreamError) || this.#slot === null) return failure;
    const blob = native.abd_adbc_result_error(this.#slot, out);
    if (out[0]! < 0) return failure;
    const error: AdbcError = decodeError("get_next", out[1]!, blob, out[0]!);
    error.errno = out[2]!;
    (error as { cause?: unknown }).cause = failure;
    return error;
  }

  /** Hands the stream over without the error slot (the caller's StreamErrors stay plain). */
  detach(): ImportedStream {
    this.#dropSlot();
    return this.stream;
  }

  /** Releases the stream and the slot; later calls do nothing. */
  release(): void {
    this.stream.release();
    this.#dropSlot();
  }

  #dropSlot(): void {
    const slot = this.#slot;
    this.#slot = null;
    if (slot !== null) native.abd_adbc_result_slot_release(slot);
  }
}
