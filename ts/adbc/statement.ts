/**
 * An ADBC statement: SQL (or a prepared statement), bound parameters,
 * execution into apache-arrow Tables or batch iterators, partitions, and
 * the statement's options.
 *
 * Ownership: the Statement owns its AdbcStatement until `close()` (its
 * connection closes it too, before itself). A result stream the driver
 * returned is moved into an ImportedStream at once; the batches read from
 * it are independent of the statement (the C stream interface makes each
 * array its own owner), but the stream itself is released before the
 * statement, which is what drivers require.
 */
import { type RecordBatch, type Schema, type Table } from "../arrow/arrow_types.ts";
import { branded } from "../core/abi/pointers.ts";
import { adbcStructLayouts } from "../core/abi/adbc_layout.ts";
import { ArrowSchemaLayout } from "../core/abi/layout.ts";
import { argumentError, booleanArg, optionsArg } from "../core/args.ts";
import { InvalidArgumentError, Status, errorFor } from "../core/errors.ts";
import { type ExportedStream } from "../native/exported_stream.ts";
import { lastError, native } from "../core/ffi/library.ts";
import { ImportedStream } from "../native/imported_stream.ts";
import { importSchema } from "../arrow/import_api.ts";
import { exportStream, importTable, recordBatches } from "../arrow/stream_api.ts";
import { type StreamSource } from "../arrow/stream_export.ts";
import { addressOf, cString, newErrorStruct, type Driver } from "./driver.ts";
import { AdbcHandle } from "./handle.ts";
import { ResultStream } from "./result.ts";
import { read, toArrayBuffer, type Pointer } from "bun:ffi";

/** What can be bound as parameters: a Table, a RecordBatch (one row of
 * parameters per row), an array of batches, or any stream source
 * `exportStream` takes. */
export type Parameters = Table | RecordBatch | StreamSource;

/** Options of the executing methods. */
export type ExecuteOptions<A extends boolean = boolean> = {
  /** Run ExecuteQuery on a native thread and pull batches on the stream's
   * worker thread: the JS thread stays free. Default false. */
  async?: A;
};

/** The partitions of a result (AdbcStatementExecutePartitions). */
export type Partitions = {
  /** The result's schema, or null when the driver left it unset. */
  schema: Schema | null;
  /** Opaque descriptors for Connection.readPartition, copied out. */
  partitions: Uint8Array[];
  /** Rows affected, or null when the driver does not know. */
  rowsAffected: number | null;
};

/** A native scratch of `bytes`, freed by the caller with abd_free. */
function scratch(bytes: number): Pointer {
  const address = native.abd_alloc_zeroed(bytes);
  if (!address) throw errorFor(Status.out_of_memory, "out of memory for an ADBC call");
  return address;
}

/** Converts the ArrowSchema at `schema` (filled by a driver; released
 * here) into an apache-arrow Schema. */
export function takeSchema(schema: Pointer): Schema {
  const stream = scratch(40);
  try {
    const status = native.abd_adbc_schema_stream(schema, stream);
    if (status !== 0) throw errorFor(status, lastError());
    using imported = ImportedStream.fromArrayStream(branded<"ArrowArrayStream">(stream));
    return importSchema(imported);
  } finally {
    native.abd_free(stream);
  }
}

/** An ADBC statement (see the module comment for who owns what). */
export class Statement extends AdbcHandle {
  #guard: Pointer;
  #result: ResultStream | null = null;

  /** @internal Made by Connection.statement / prepare. */
  constructor(token: symbol, driver: Driver, guard: Pointer, connection: AdbcHandle & { readonly address: Pointer }) {
    super(token, driver, "Statement", connection);
    this.#guard = guard;
    try {
      this.driver.call(guard, "StatementNew", [connection.address, this.object, this.error], this.error);
    } catch (failure) {
      this._abandon();
      throw failure;
    }
  }

  protected get guard(): Pointer {
    return this.#guard;
  }

  /** Sets the SQL to run. */
  setSqlQuery(sql: string): this {
    this._live("Statement.setSqlQuery");
    const bytes = cString("Statement.setSqlQuery", "sql", sql);
    this._call("StatementSetSqlQuery", [addressOf(bytes)]);
    return this;
  }

  /** Prepares the statement (AdbcStatementPrepare). */
  prepare(): this {
    this._live("Statement.prepare");
    this._call("StatementPrepare");
    return this;
  }

  /** Binds `params` (AdbcStatementBindStream): exported zero-copy, moved
   * to the driver, which reads the JS buffers in place when it reads them. */
  bind(params: Parameters): this {
    const fn = "Statement.bind";
    this._live(fn);
    this._bindExported(exportParameters(fn, params));
    return this;
  }

  /** @internal Moves `exported` to the driver (BindStream) and frees its slot. */
  _bindExported(exported: ExportedStream<"stream">): void {
    try {
      this._live("Statement.bind");
      this._call("StatementBindStream", [exported.stream as unknown as number]);
    } finally {
      exported.release();
    }
  }

  /** The parameters' schema (AdbcStatementGetParameterSchema); a driver
   * may need `prepare()` first. */
  parameterSchema(): Schema {
    this._live("Statement.parameterSchema");
    const schema = scratch(72);
    try {
      this._call("StatementGetParameterSchema", [schema]);
      return takeSchema(schema);
    } finally {
      native.abd_free(schema);
    }
  }

  /** The result's schema without running the query (1.1.0). */
  executeSchema(): Schema {
    this._live("Statement.executeSchema");
    const schema = scratch(72);
    try {
      this._call("StatementExecuteSchema", [schema]);
      return takeSchema(schema);
    } finally {
      native.abd_free(schema);
    }
  }

  /** Runs the statement for its effect; returns the rows affected, or null
   * when the driver does not know. */
  executeUpdate(): number | null {
    this._live("Statement.executeUpdate");
    this.#endStream();
    const rows = scratch(8);
    try {
      this._call("StatementExecuteQuery", [0, rows]);
      const n = Number(read.i64(rows, 0));
      return n < 0 ? null : n;
    } finally {
      native.abd_free(rows);
    }
  }

  /** Runs the query; the whole result as a Table (a Promise with
   * `{ async: true }`). */
  executeQuery(options?: ExecuteOptions<false>): Table;
  /** `executeQuery` off the JS thread. */
  executeQuery(options: ExecuteOptions<true>): Promise<Table>;
  /** `executeQuery` with the form known only at run time. */
  executeQuery(options: ExecuteOptions = {}): Table | Promise<Table> {
    const fn = "Statement.executeQuery";
    const async = asyncArg(fn, options);
    this._live(fn);
    if (async) {
      return this.#openAsync().then((result) => importTable(result.stream, { async: true }).catch((failure: unknown) => {
        throw result.convert(failure);
      })).finally(() => this.#endStream());
    }
    const result = this.#open();
    try {
      return importTable(result.stream, {});
    } catch (failure) {
      throw result.convert(failure);
    } finally {
      this.#endStream();
    }
  }

  /** Runs the query and iterates its batches, one held at a time; the
   * result stream ends (is released) when the iteration does. */
  recordBatches(options?: ExecuteOptions<false>): Generator<RecordBatch, void, undefined>;
  /** `recordBatches` off the JS thread, as an async iterator. */
  recordBatches(options: ExecuteOptions<true>): AsyncGenerator<RecordBatch, void, undefined>;
  /** `recordBatches` with the form known only at run time. */
  recordBatches(options: ExecuteOptions = {}): Generator<RecordBatch, void, undefined> | AsyncGenerator<RecordBatch, void, undefined> {
    const fn = "Statement.recordBatches";
    const async = asyncArg(fn, options);
    this._live(fn);
    return async ? this.#batchesAsync() : this.#batches(this.#open());
  }

  *#batches(result: ResultStream): Generator<RecordBatch, void, undefined> {
    try {
      yield* recordBatches(result.stream, {});
    } catch (failure) {
      throw result.convert(failure);
    } finally {
      this.#endStream();
    }
  }

  async *#batchesAsync(): AsyncGenerator<RecordBatch, void, undefined> {
    const result = await this.#openAsync();
    try {
      yield* recordBatches(result.stream, { async: true });
    } catch (failure) {
      throw result.convert(failure);
    } finally {
      this.#endStream();
    }
  }

  /** Runs the query and hands its result stream over as an
   * ImportedStream (bun-arrow-device/raw), moved in and now the caller's:
   * release it (or `using`) before closing the statement. */
  executeStream(): ImportedStream {
    this._live("Statement.executeStream");
    const result = this.#open();
    this.#result = null;
    return result.detach();
  }

  /** Runs the query in partitions (AdbcStatementExecutePartitions): the
   * descriptors are copied out and the driver's AdbcPartitions released. */
  executePartitions(): Partitions {
    this._live("Statement.executePartitions");
    const layout = adbcStructLayouts.AdbcPartitions;
    const schema = scratch(72);
    const partitions = scratch(layout.size);
    const rows = scratch(8);
    try {
      this._call("StatementExecutePartitions", [schema, partitions, rows]);
      const out: Uint8Array[] = [];
      const count = Number(read.u64(partitions, layout.fields.num_partitions));
      const list = read.ptr(partitions, layout.fields.partitions) as Pointer;
      const lengths = read.ptr(partitions, layout.fields.partition_lengths) as Pointer;
      for (let i = 0; i < count; i++) {
        const at = read.ptr(list, i * 8) as Pointer;
        const length = Number(read.u64(lengths, i * 8));
        out.push(length === 0 ? new Uint8Array(0) : new Uint8Array(toArrayBuffer(at, 0, length).slice(0)));
      }
      const release = read.ptr(partitions, layout.fields.release);
      if (release) native.abd_adbc_partitions_release(partitions);
      const n = Number(read.i64(rows, 0));
      // The schema may be left unset (Flight SQL's driver does).
      const hasSchema = read.ptr(schema, ArrowSchemaLayout.fields.release) !== 0;
      return { schema: hasSchema ? takeSchema(schema) : null, partitions: out, rowsAffected: n < 0 ? null : n };
    } finally {
      native.abd_free(schema);
      native.abd_free(partitions);
      native.abd_free(rows);
    }
  }

  /** Asks the driver to stop what this statement runs (1.1.0). */
  cancel(): void {
    this._live("Statement.cancel");
    // No guard, and an error struct of its own: cancel is meant to be
    // called while another call on the statement runs.
    const error = newErrorStruct(this.driver);
    try {
      this.driver.callCancel(this.#guard, "StatementCancel", this.object, error);
    } finally {
      native.abd_free(error);
    }
  }

  /** Runs ExecuteQuery on the JS thread; the result moved into a ResultStream. */
  #open(): ResultStream {
    this.#endStream();
    const stream = scratch(40);
    try {
      this._call("StatementExecuteQuery", [stream, 0]);
      this.#result = new ResultStream(this.driver, stream);
      return this.#result;
    } finally {
      native.abd_free(stream);
    }
  }

  /** `open` with ExecuteQuery on a native thread. */
  async #openAsync(): Promise<ResultStream> {
    this.#endStream();
    const stream = scratch(40);
    try {
      await this.driver.callAsync(this.guard, "StatementExecuteQuery", [this.object, stream, 0, this.error], this.error);
      this.#result = new ResultStream(this.driver, stream);
      return this.#result;
    } finally {
      native.abd_free(stream);
    }
  }

  /** Releases the current result stream, if any. */
  #endStream(): void {
    const result = this.#result;
    this.#result = null;
    result?.release();
  }

  protected override _beforeRelease(): void {
    this.#endStream();
  }
}

/** `params` exported as an ArrowArrayStream for BindStream (a RecordBatch
 * as a stream of one); a refusal names `fn`. */
export function exportParameters(fn: string, params: Parameters): ExportedStream<"stream"> {
  const source = isRecordBatch(params) ? [params] : params;
  try {
    return exportStream(source as StreamSource, { as: "stream" });
  } catch (failure) {
    if (failure instanceof InvalidArgumentError) throw new InvalidArgumentError(Status.invalid_argument, `${fn}: parameters: ${failure.message}`);
    throw failure;
  }
}

function isRecordBatch(value: unknown): value is RecordBatch {
  return typeof value === "object" && value !== null && value.constructor?.name === "RecordBatch" && "schema" in value && "numRows" in value;
}

function asyncArg(fn: string, options: unknown): boolean {
  const checked = optionsArg(fn, "options", options as object | undefined, ["async"]) as ExecuteOptions;
  booleanArg(fn, "options.async", checked.async, true);
  if (checked.async !== undefined && typeof checked.async !== "boolean") throw argumentError(fn, "options.async", "a boolean", checked.async);
  return checked.async === true;
}
