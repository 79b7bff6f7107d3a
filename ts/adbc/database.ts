/**
 * ADBC databases and connections.
 *
 * `new Database({ driver, entrypoint?, options? })` loads the driver
 * (driver.ts), creates the AdbcDatabase, sets the options and initializes
 * it; `database.connect()` opens a Connection. Each is Disposable; closing
 * one closes what it opened first (statements, then connections), and each
 * ADBC object is released once, by the driver that made it; the driver
 * itself is released after its last database.
 *
 * A connection takes one call at a time, from any thread: a call made
 * while another runs (on a native thread for `{ async: true }`, or on a
 * thread the connection was handed to) is refused with a WrongThreadError
 * (zig/adbc/call.zig), never run concurrently inside the driver.
 */
import { type Pointer } from "bun:ffi";
import { type RecordBatch, type Schema, type Table } from "../arrow/arrow_types.ts";
import { argumentError, booleanArg, integerArg, isPlainObject, optionsArg, stringArg } from "../core/args.ts";
import { lastError, native } from "../core/ffi/library.ts";
import { importTable, recordBatches } from "../arrow/stream_api.ts";
import { addressOf, cString, Driver, newErrorStruct, resolveDriver } from "./driver.ts";
import { AdbcHandle, adbcToken, type OptionValue } from "./handle.ts";
import { ResultStream } from "./result.ts";
import { Statement, exportParameters, takeSchema, type ExecuteOptions, type Parameters } from "./statement.ts";
import { errorFor, InvalidArgumentError, Status } from "../core/errors.ts";
import { nativeArray } from "../core/ffi/native_arrays.ts";

/** Options of `new Database`. */
export type DatabaseOptions = {
  /** A driver library's path, a driver manifest (.toml) path, or a name
   * looked up as `<name>.toml` in the manifest directories (docs/adbc.md). */
  driver: string;
  /** The driver's init function; default "AdbcDriverInit" (or the manifest's). */
  entrypoint?: string;
  /** Database options set before AdbcDatabaseInit ("uri", "path", ...). */
  options?: Record<string, OptionValue>;
};

/** Modes of `ingest` (adbc.ingest.mode). */
export type IngestMode = "create" | "append" | "replace" | "create_append";

/** Options of `Connection.ingest`. */
export type IngestOptions = {
  mode?: IngestMode;
  catalog?: string;
  dbSchema?: string;
  temporary?: boolean;
};

/** Options of `Connection.recordBatches`: `async`, and parameters to bind. */
export type BatchOptions<A extends boolean = boolean> = ExecuteOptions<A> & { params?: Parameters };

/** Where `Connection.getTableSchema` looks (the connection's defaults when left out). */
export type TableLocation = { catalog?: string; dbSchema?: string };

/** Options of `Connection.getObjects` (AdbcConnectionGetObjects). */
export type GetObjectsOptions = {
  /** "all" (default), "catalogs", "db_schemas", "tables" or "columns". */
  depth?: "all" | "catalogs" | "db_schemas" | "tables" | "columns";
  catalog?: string;
  dbSchema?: string;
  tableName?: string;
  tableTypes?: string[];
  columnName?: string;
};

function scratch(bytes: number): Pointer {
  const address = native.abd_alloc_zeroed(bytes);
  if (!address) throw errorFor(Status.out_of_memory, "out of memory for an ADBC call");
  return address;
}

/** An ADBC database: a loaded driver and its AdbcDatabase. */
export class Database extends AdbcHandle {
  /** @internal */
  readonly address: Pointer;

  constructor(options: DatabaseOptions) {
    const fn = "Database";
    if (!isPlainObject(options)) throw argumentError(fn, "options", "an object with a driver", options);
    const checked = optionsArg(fn, "options", options, ["driver", "entrypoint", "options"]) as DatabaseOptions;
    stringArg(fn, "options.driver", checked.driver);
    stringArg(fn, "options.entrypoint", checked.entrypoint, true);
    if (checked.options !== undefined && !isPlainObject(checked.options)) throw argumentError(fn, "options.options", "an object of option values", checked.options);
    const found = resolveDriver(fn, checked.driver, checked.entrypoint ?? null);
    const driver = new Driver(found.path, found.entrypoint);
    try {
      super(adbcToken, driver, "Database", null);
    } catch (failure) {
      driver.release();
      throw failure;
    }
    this.address = this.object;
    try {
      this._call("DatabaseNew");
      for (const [key, value] of Object.entries(checked.options ?? {})) this.setOption(key, value);
      this._call("DatabaseInit");
    } catch (failure) {
      this.close();
      throw failure;
    }
  }

  /** The driver's ADBC revision: "1.1.0" or "1.0.0". */
  get driverVersion(): string {
    return this.driver.version;
  }

  protected get guard(): Pointer {
    return this.object;
  }

  /** Opens a connection (options set before AdbcConnectionInit). */
  connect(options: Record<string, OptionValue> = {}): Connection {
    this._live("Database.connect");
    if (!isPlainObject(options)) throw argumentError("Database.connect", "options", "an object of option values", options);
    return new Connection(adbcToken, this.driver, this, options);
  }

  protected override _afterRelease(): void {
    this.driver.release();
  }
}

// ADBC_OBJECT_DEPTH_*: "columns" is "all" (both 0).
const depths = { all: 0, catalogs: 1, db_schemas: 2, tables: 3, columns: 0 } as const;

/** What `Connection.share()` returns: plain data a Worker receives by
 * postMessage and opens with `Connection.borrow`. */
export type SharedConnection = {
  readonly kind: "adbc.connection";
  /** The native connection's address (honoured only while it is shared). */
  readonly connection: number;
  readonly driver: string;
  readonly entrypoint: string | null;
};

/** An ADBC connection; one call at a time (see the module comment). */
export class Connection extends AdbcHandle {
  /** @internal */
  readonly address: Pointer;
  readonly #borrowed: boolean;

  /** @internal Made by Database.connect (or `borrow`, with `borrowed`). */
  constructor(token: symbol, driver: Driver, database: Database | null, options: Record<string, OptionValue>, borrowed: Pointer | null = null) {
    super(token, driver, "Connection", database, borrowed);
    this.address = this.object;
    this.#borrowed = borrowed !== null;
    if (borrowed !== null || database === null) return;
    try {
      this._call("ConnectionNew");
      for (const [key, value] of Object.entries(options)) this.setOption(key, value);
      this._call("ConnectionInit", [database.address]);
    } catch (failure) {
      this.close();
      throw failure;
    }
  }

  protected get guard(): Pointer {
    return this.object;
  }

  /** Lets other JS threads (Workers) use this connection: post the result
   * to them and open it there with `Connection.borrow`. Calls from any
   * thread take turns (one at a time; a call that finds another running is
   * refused with WrongThreadError). This connection stays the owner:
   * closing it ends every borrower's use (their calls get ReleasedError). */
  share(): SharedConnection {
    this._live("Connection.share");
    if (this.#borrowed) throw new InvalidArgumentError(Status.invalid_argument, "Connection.share: a borrowed connection cannot be shared again; share the owner's");
    const status = native.abd_adbc_object_share(this.object, this.driver.address);
    if (status !== 0) throw errorFor(status, lastError());
    return { kind: "adbc.connection", connection: Number(this.object), driver: this.driver.path, entrypoint: this.driver.entrypoint };
  }

  /** Opens a connection another JS thread shared (`share()`), on this
   * thread. Closing it drops this thread's hold only; a connection its
   * owner closed (or never shared) is refused with ReleasedError. */
  static borrow(shared: SharedConnection): Connection {
    const fn = "Connection.borrow";
    if (!isPlainObject(shared) || (shared as { kind?: unknown }).kind !== "adbc.connection") throw argumentError(fn, "shared", "what Connection.share() returned", shared);
    integerArg(fn, "shared.connection", shared.connection, 1, 2 ** 53);
    stringArg(fn, "shared.driver", shared.driver);
    if (shared.entrypoint !== null) stringArg(fn, "shared.entrypoint", shared.entrypoint);
    const out = nativeArray(Float64Array, 1);
    const status = native.abd_adbc_object_borrow(shared.connection, out);
    if (status !== 0) throw errorFor(status, lastError());
    const driver = new Driver(shared.driver, shared.entrypoint, out[0] as unknown as Pointer);
    return new Connection(adbcToken, driver, null, {}, shared.connection as unknown as Pointer);
  }

  protected override _retire(): void {
    const status = native.abd_adbc_object_retire(this.object);
    if (status !== 0) throw errorFor(status, lastError());
  }

  protected override _releaseGuard(): Pointer | null {
    return null;
  }

  protected override _afterRelease(): void {
    // A borrower's hold on the driver (the owner's is its database's).
    if (this.#borrowed) this.driver.release();
  }

  /** A new statement of this connection (closed with it). */
  statement(): Statement {
    this._live("Connection.statement");
    return new Statement(adbcToken, this.driver, this.object, this);
  }

  /** A prepared statement for `sql`. */
  prepare(sql: string): Statement {
    stringArg("Connection.prepare", "sql", sql);
    const statement = this.statement();
    try {
      return statement.setSqlQuery(sql).prepare();
    } catch (failure) {
      statement.close();
      throw failure;
    }
  }

  /** Runs `sql` (with `params` bound, if given) and returns the whole
   * result as a Table over the driver's memory (a Promise with
   * `{ async: true }`: ExecuteQuery and every get_next then run off the JS
   * thread). */
  query(sql: string, params?: Parameters, options?: ExecuteOptions<false>): Table;
  /** `query` off the JS thread: ExecuteQuery on a native thread, get_next on the stream's worker. */
  query(sql: string, params: Parameters | undefined, options: ExecuteOptions<true>): Promise<Table>;
  /** `query` with the form known only at run time. */
  query(sql: string, params?: Parameters, options: ExecuteOptions = {}): Table | Promise<Table> {
    const statement = this.#prepared("Connection.query", sql, params);
    if (options.async === true) return statement.executeQuery({ async: true }).finally(() => statement.close());
    try {
      return statement.executeQuery(options as ExecuteOptions<false>);
    } finally {
      statement.close();
    }
  }

  /** Runs `sql` and iterates its batches one at a time (an async iterator
   * with `{ async: true }`); the statement closes when the iteration ends. */
  recordBatches(sql: string, options?: BatchOptions<false>): Generator<RecordBatch, void, undefined>;
  /** `recordBatches` off the JS thread, as an async iterator. */
  recordBatches(sql: string, options: BatchOptions<true>): AsyncGenerator<RecordBatch, void, undefined>;
  /** `recordBatches` with the form known only at run time. */
  recordBatches(sql: string, options: BatchOptions = {}): Generator<RecordBatch, void, undefined> | AsyncGenerator<RecordBatch, void, undefined> {
    const fn = "Connection.recordBatches";
    const checked = optionsArg(fn, "options", options, ["async", "params"]) as ExecuteOptions & { params?: Parameters };
    const statement = this.#prepared(fn, sql, checked.params);
    if (checked.async === true) {
      const inner = statement.recordBatches({ async: true });
      return (async function* () {
        try {
          yield* inner;
        } finally {
          statement.close();
        }
      })();
    }
    let inner: Generator<RecordBatch, void, undefined>;
    try {
      inner = statement.recordBatches({ async: checked.async as false | undefined });
    } catch (failure) {
      statement.close();
      throw failure;
    }
    return (function* () {
      try {
        yield* inner;
      } finally {
        statement.close();
      }
    })();
  }

  /** Runs `sql` for its effect (with `params`, if given); the rows
   * affected, or null when the driver does not know. */
  execute(sql: string, params?: Parameters): number | null {
    using statement = this.#prepared("Connection.execute", sql, params);
    return statement.executeUpdate();
  }

  #prepared(fn: string, sql: string, params: Parameters | undefined): Statement {
    this._live(fn);
    stringArg(fn, "sql", sql);
    // Exported first: bad parameters are refused before any driver call.
    const exported = params === undefined ? null : exportParameters(fn, params);
    let statement: Statement;
    try {
      statement = this.statement();
    } catch (failure) {
      exported?.release();
      throw failure;
    }
    try {
      statement.setSqlQuery(sql);
      // Parameters go to a prepared statement (a driver may read a bind
      // to an unprepared one as bulk ingest: Flight SQL's does).
      if (exported !== null) statement.prepare()._bindExported(exported);
      return statement;
    } catch (failure) {
      exported?.release();
      statement.close();
      throw failure;
    }
  }


  /** Bulk-inserts `data` (a Table, batches or any stream source) into
   * table `name` through adbc.ingest.*; returns the rows written, or null. */
  ingest(data: Parameters, name: string, options: IngestOptions = {}): number | null {
    const fn = "Connection.ingest";
    this._live(fn);
    stringArg(fn, "name", name);
    const checked = optionsArg(fn, "options", options, ["mode", "catalog", "dbSchema", "temporary"]) as IngestOptions;
    const mode = checked.mode ?? "create";
    if (!["create", "append", "replace", "create_append"].includes(mode)) throw argumentError(fn, "options.mode", `"create", "append", "replace" or "create_append"`, mode);
    stringArg(fn, "options.catalog", checked.catalog, true);
    stringArg(fn, "options.dbSchema", checked.dbSchema, true);
    booleanArg(fn, "options.temporary", checked.temporary, true);
    const exported = exportParameters(fn, data);
    let statement: Statement;
    try {
      statement = this.statement();
    } catch (failure) {
      exported.release();
      throw failure;
    }
    try {
      statement.setOption("adbc.ingest.target_table", name);
      statement.setOption("adbc.ingest.mode", `adbc.ingest.mode.${mode}`);
      if (checked.catalog !== undefined) statement.setOption("adbc.ingest.target_catalog", checked.catalog);
      if (checked.dbSchema !== undefined) statement.setOption("adbc.ingest.target_db_schema", checked.dbSchema);
      if (checked.temporary !== undefined) statement.setOption("adbc.ingest.temporary", checked.temporary);
      statement._bindExported(exported);
      return statement.executeUpdate();
    } catch (failure) {
      exported.release();
      throw failure;
    } finally {
      statement.close();
    }
  }

  /** AdbcConnectionGetInfo as a Table (info_name, info_value); `codes`
   * selects info codes (all by default). */
  getInfo(codes?: number[]): Table {
    const fn = "Connection.getInfo";
    this._live(fn);
    let list: Uint32Array | null = null;
    if (codes !== undefined) {
      if (!Array.isArray(codes)) throw argumentError(fn, "codes", "an array of info codes", codes);
      codes.forEach((c, i) => integerArg(fn, `codes[${i}]`, c, 0, 2 ** 32 - 1));
      list = Uint32Array.from(codes);
      void list.buffer;
    }
    return this.#streamCall("ConnectionGetInfo", (stream) => [list && list.length > 0 ? addressOf(new Uint8Array(list.buffer)) : 0, list?.length ?? 0, stream], list);
  }

  /** AdbcConnectionGetObjects as a Table (the nested catalog schema). */
  getObjects(options: GetObjectsOptions = {}): Table {
    const fn = "Connection.getObjects";
    this._live(fn);
    const checked = optionsArg(fn, "options", options, ["depth", "catalog", "dbSchema", "tableName", "tableTypes", "columnName"]) as GetObjectsOptions;
    const depth = checked.depth ?? "all";
    if (!(depth in depths)) throw argumentError(fn, "options.depth", `"all", "catalogs", "db_schemas", "tables" or "columns"`, depth);
    const strings = (["catalog", "dbSchema", "tableName", "columnName"] as const).map((key) => (checked[key] === undefined ? null : cString(fn, `options.${key}`, checked[key])));
    let types: BigUint64Array | null = null;
    const typeBytes: Uint8Array[] = [];
    if (checked.tableTypes !== undefined) {
      if (!Array.isArray(checked.tableTypes)) throw argumentError(fn, "options.tableTypes", "an array of strings", checked.tableTypes);
      checked.tableTypes.forEach((t, i) => typeBytes.push(cString(fn, `options.tableTypes[${i}]`, t)));
      types = nativeArray(BigUint64Array, typeBytes.length + 1);
      void types.buffer;
      typeBytes.forEach((b, i) => (types![i] = BigInt(addressOf(b))));
    }
    const at = (b: Uint8Array | null): number => (b === null ? 0 : addressOf(b));
    return this.#streamCall("ConnectionGetObjects", (stream) => [
      depths[depth], at(strings[0]!), at(strings[1]!), at(strings[2]!), types === null ? 0 : addressOf(new Uint8Array(types.buffer)), at(strings[3]!), stream,
    ], [strings, types, typeBytes]);
  }

  /** The Arrow schema of table `name` (AdbcConnectionGetTableSchema). */
  getTableSchema(name: string, options: TableLocation = {}): Schema {
    const fn = "Connection.getTableSchema";
    this._live(fn);
    const checked = optionsArg(fn, "options", options, ["catalog", "dbSchema"]) as { catalog?: string; dbSchema?: string };
    const table = cString(fn, "name", name);
    const catalog = checked.catalog === undefined ? null : cString(fn, "options.catalog", checked.catalog);
    const dbSchema = checked.dbSchema === undefined ? null : cString(fn, "options.dbSchema", checked.dbSchema);
    const schema = scratch(72);
    try {
      this._call("ConnectionGetTableSchema", [catalog ? addressOf(catalog) : 0, dbSchema ? addressOf(dbSchema) : 0, addressOf(table), schema]);
      return takeSchema(schema);
    } finally {
      native.abd_free(schema);
    }
  }

  /** AdbcConnectionGetTableTypes as a Table (table_type). */
  getTableTypes(): Table {
    this._live("Connection.getTableTypes");
    return this.#streamCall("ConnectionGetTableTypes", (stream) => [stream], null);
  }

  /** Reads one partition of a result (AdbcConnectionReadPartition). */
  readPartition(partition: Uint8Array): Table {
    const fn = "Connection.readPartition";
    this._live(fn);
    if (!(partition instanceof Uint8Array)) throw argumentError(fn, "partition", "a Uint8Array (from executePartitions)", partition);
    const copy = partition.slice();
    void copy.buffer;
    return this.#streamCall("ConnectionReadPartition", (stream) => [copy.byteLength === 0 ? 0 : addressOf(copy), copy.byteLength, stream], copy);
  }

  /** Autocommit (adbc.connection.autocommit): true by default in ADBC. */
  set autocommit(on: boolean) {
    if (typeof on !== "boolean") throw argumentError("Connection.autocommit", "value", "true or false", on);
    this.setOption("adbc.connection.autocommit", on);
  }

  /** Commits the current transaction (autocommit off). */
  commit(): void {
    this._live("Connection.commit");
    this._call("ConnectionCommit");
  }

  /** Rolls back the current transaction (autocommit off). */
  rollback(): void {
    this._live("Connection.rollback");
    this._call("ConnectionRollback");
  }

  /** Asks the driver to stop what this connection runs (1.1.0). */
  cancel(): void {
    this._live("Connection.cancel");
    // An error struct of its own: cancel is meant to be called while
    // another call of this connection runs (and uses this.error).
    const error = newErrorStruct(this.driver);
    try {
      this.driver.callCancel(this.object, "ConnectionCancel", this.object, error);
    } finally {
      native.abd_free(error);
    }
  }

  /** Calls `name` with the words `args(stream)` and reads the stream it
   * fills into a Table. `keep` stays reachable during the call. */
  #streamCall(name: "ConnectionGetInfo" | "ConnectionGetObjects" | "ConnectionGetTableTypes" | "ConnectionReadPartition", args: (stream: number) => number[], keep: unknown): Table {
    const stream = scratch(40);
    try {
      this._call(name, args(stream));
      void keep;
      const result = new ResultStream(this.driver, stream);
      try {
        return importTable(result.stream, {});
      } catch (failure) {
        throw result.convert(failure);
      } finally {
        result.release();
      }
    } finally {
      native.abd_free(stream);
    }
  }

}
