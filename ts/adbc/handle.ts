/**
 * What Database, Connection and Statement share: the native object (the
 * AdbcDatabase/AdbcConnection/AdbcStatement at its start, then its guard),
 * an AdbcError struct for its calls, options of the four ADBC kinds, and
 * an ordered close: children first, then the driver's release of this
 * object, exactly once.
 */
import { ptr, read, type Pointer } from "bun:ffi";
import { type AdbcDriverField } from "../core/abi/adbc_layout.ts";
import { argumentError, internalConstruction, stringArg } from "../core/args.ts";
import { AdbcStatus, ReleasedError, Status, errorFor } from "../core/errors.ts";
import { native } from "../core/ffi/library.ts";
import { addressOf, cString, newErrorStruct, type Driver } from "./driver.ts";
import { nativeArray, nativeArrayOf } from "../core/ffi/native_arrays.ts";

/** An option value: a string (SetOption), a bigint (SetOptionInt), a
 * number (SetOptionDouble), bytes (SetOptionBytes), or a boolean (the
 * strings "true" / "false", as ADBC spells enabled and disabled). */
export type OptionValue = string | bigint | number | boolean | Uint8Array;
/** The kind `getOption` reads. */
export type OptionKind = "string" | "bytes" | "int" | "double";

type Prefix = "Database" | "Connection" | "Statement";

/** Proves a construction comes from this layer (the constructors of
 * Connection and Statement are not public: they take native state). */
export const adbcToken: unique symbol = Symbol("bun-arrow-device adbc");

const instead: Record<Prefix, string> = {
  Database: "use new Database({ driver })",
  Connection: "use database.connect()",
  Statement: "use connection.statement() or connection.prepare(sql)",
};

/** What Database, Connection and Statement share (options, close). */
export abstract class AdbcHandle implements Disposable {
  /** The native object: the ADBC struct at its start. */
  protected readonly object: Pointer;
  /** This object's AdbcError struct. */
  protected readonly error: Pointer;
  #closed = false;
  protected readonly children = new Set<AdbcHandle>();

  /** Borrowed from another JS thread (a shared connection): closing it
   * drops this thread's hold; the owner releases the ADBC object. */
  readonly #borrowed: boolean;

  protected constructor(token: symbol, protected readonly driver: Driver, private readonly prefix: Prefix, private readonly parent: AdbcHandle | null, borrowed: Pointer | null = null) {
    internalConstruction(new.target.name, token, adbcToken, instead[prefix] ?? instead.Database);
    // A borrowed object comes with its hold (abd_adbc_object_borrow).
    const object = borrowed ?? native.abd_adbc_object_new();
    if (!object) throw errorFor(Status.out_of_memory, "out of memory for an ADBC object");
    this.#borrowed = borrowed !== null;
    this.object = object;
    this.error = newErrorStruct(driver);
    parent?.children.add(this);
  }

  /** The guard calls on this object take (a statement: its connection's). */
  protected abstract get guard(): Pointer;

  /** True once closed. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Throws a ReleasedError naming `what` when closed. */
  protected _live(what: string): void {
    if (this.#closed) throw new ReleasedError(Status.released, `${what}: the ADBC ${this.prefix.toLowerCase()} is closed`);
  }

  /** Calls the driver's `name` on this object with `args` after it. */
  protected _call(name: AdbcDriverField, args: readonly number[] = [], accept: readonly number[] = []): number {
    return this.driver.call(this.guard, name, [this.object, ...args, this.error], this.error, accept);
  }

  /** Sets option `key` (the ADBC function by the value's kind). */
  setOption(key: string, value: OptionValue): this {
    const fn = `${this.prefix}.setOption`;
    this._live(fn);
    const keyBytes = cString(fn, "key", key);
    if (typeof value === "boolean") value = value ? "true" : "false";
    if (typeof value === "string") {
      const bytes = cString(fn, "value", value);
      this._call(`${this.prefix}SetOption`, [addressOf(keyBytes), addressOf(bytes)]);
    } else if (typeof value === "bigint") {
      if (value < -(2n ** 53n) || value > 2n ** 53n) throw argumentError(fn, "value", "a bigint within +-2^53", value);
      this._call(`${this.prefix}SetOptionInt`, [addressOf(keyBytes), Number(value)]);
    } else if (typeof value === "number") {
      if (!Number.isFinite(value)) throw argumentError(fn, "value", "a finite number (a double option)", value);
      this.driver.callDouble(this.guard, `${this.prefix}SetOptionDouble`, this.object, keyBytes, value, this.error);
    } else if (value instanceof Uint8Array) {
      const copy = value.slice();
      void copy.buffer;
      this._call(`${this.prefix}SetOptionBytes`, [addressOf(keyBytes), copy.byteLength === 0 ? 0 : ptr(copy), copy.byteLength]);
    } else {
      throw argumentError(fn, "value", "a string, bigint, number, boolean or Uint8Array", value);
    }
    return this;
  }

  /** Reads option `key` as `kind` ("string" default): a string, a
   * Uint8Array, a bigint or a number. A driver that does not know the key
   * throws an AdbcError (adbcStatus "not_found"). */
  getOption(key: string, kind?: "string"): string;
  /** `getOption` of a bytes option (GetOptionBytes). */
  getOption(key: string, kind: "bytes"): Uint8Array;
  /** `getOption` of an integer option (GetOptionInt). */
  getOption(key: string, kind: "int"): bigint;
  /** `getOption` of a double option (GetOptionDouble). */
  getOption(key: string, kind: "double"): number;
  /** `getOption` with the kind known only at run time. */
  getOption(key: string, kind?: OptionKind): string | Uint8Array | bigint | number;
  /** `getOption` (the implementation). */
  getOption(key: string, kind: OptionKind = "string"): string | Uint8Array | bigint | number {
    const fn = `${this.prefix}.getOption`;
    this._live(fn);
    stringArg(fn, "key", key);
    if (!["string", "bytes", "int", "double"].includes(kind)) throw argumentError(fn, "kind", `"string", "bytes", "int" or "double"`, kind);
    const keyBytes = cString(fn, "key", key);
    const out = nativeArray(Float64Array, 1);
    void out.buffer;
    if (kind === "int") {
      this._call(`${this.prefix}GetOptionInt`, [addressOf(keyBytes), ptr(out)]);
      return read.i64(ptr(out), 0);
    }
    if (kind === "double") {
      this._call(`${this.prefix}GetOptionDouble`, [addressOf(keyBytes), ptr(out)]);
      return out[0]!;
    }
    const name: AdbcDriverField = kind === "string" ? `${this.prefix}GetOption` : `${this.prefix}GetOptionBytes`;
    let capacity = 256;
    for (;;) {
      const buffer = nativeArray(Uint8Array, capacity);
      void buffer.buffer;
      const length = nativeArrayOf(BigUint64Array, [BigInt(capacity)]);
      void length.buffer;
      this._call(name, [addressOf(keyBytes), ptr(buffer), ptr(length)]);
      const needed = Number(length[0]);
      if (needed > capacity) {
        capacity = needed;
        continue;
      }
      if (kind === "bytes") return buffer.slice(0, needed);
      // The length counts the terminating NUL.
      return new TextDecoder().decode(buffer.subarray(0, Math.max(needed - 1, 0)));
    }
  }

  /** Closes the children (last opened first), then releases this object
   * through the driver, once; later calls do nothing. A release the driver
   * refuses is thrown after everything is freed. */
  close(): void {
    if (this.#closed) return;
    const failures: unknown[] = [];
    for (const child of [...this.children].reverse()) {
      try {
        child.close();
      } catch (failure) {
        failures.push(failure);
      }
    }
    // A child another thread is using stays open, and so does this.
    if (this.children.size > 0) throw failures[0];
    if (!this.#borrowed) {
      // A shared connection is retired first (refused if another thread's
      // call runs now: then it stays open).
      this._retire();
    }
    this.#closed = true;
    this.parent?.children.delete(this);
    try {
      this._beforeRelease();
      if (!this.#borrowed) this.driver.call(this._releaseGuard(), `${this.prefix}Release`, [this.object, this.error], this.error);
    } catch (failure) {
      failures.push(failure);
    } finally {
      native.abd_free(this.error);
      native.abd_adbc_object_free(this.object);
      this._afterRelease();
    }
    if (failures.length > 0) throw failures[0];
  }

  /** Frees this object when the driver never made it (its New failed). */
  protected _abandon(): void {
    this.#closed = true;
    this.parent?.children.delete(this);
    native.abd_free(this.error);
    native.abd_adbc_object_free(this.object);
  }

  /** Before the release: a connection marks its shared object retired. */
  protected _retire(): void {}
  /** The guard of the release call (a retired connection: none). */
  protected _releaseGuard(): Pointer | null {
    return this.guard;
  }

  /** Ends what this object holds besides children (a statement's result
   * stream) before the driver's release. */
  protected _beforeRelease(): void {}
  /** Runs after the release (a database drops its driver). */
  protected _afterRelease(): void {}

  [Symbol.dispose](): void {
    this.close();
  }
}

export { AdbcStatus };
