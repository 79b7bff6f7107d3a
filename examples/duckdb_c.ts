/**
 * A minimal binding of DuckDB's C API (libduckdb.so, as shipped in npm's
 * `@duckdb/node-bindings-<platform>` packages) over bun:ffi: open, connect,
 * run SQL, register an ArrowArrayStream as a view (`duckdb_arrow_scan`), and
 * fetch results as Arrow C structs. Used by examples/duckdb.ts and the
 * DuckDB tests; copy it into your own project as a starting point.
 *
 * Ownership: `DuckDB` owns the database and the connection (`close()`).
 * `registerStream` borrows the stream: DuckDB reads it while queries over
 * the view run, and never releases it (the caller does, after the last
 * query). `queryArrow` returns the result's batches as (ArrowSchema,
 * ArrowArray) pairs the caller moves into an import.
 *
 * Known DuckDB 1.5 behaviour: it pushes column projections into a
 * registered stream and then misreads it (worked around, see the
 * constructor); it calls a
 * stream's get_schema several times per scan and never releases those
 * schemas; it ignores the validity bitmap of dictionary columns whose
 * null_count is -1; with threads >= 2, a query run synchronously on the JS
 * thread over a stream produced on the JS thread waits forever (run it on a
 * native thread, or with threads = 1).
 */
import { CString, FFIType, dlopen, type Pointer } from "bun:ffi";
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { CArray, CSchema } from "bun-arrow-device/raw";

const { ptr, i32, cstring, void: none } = FFIType;

/** The npm package that ships libduckdb for this platform. */
export const duckdbPackage = `@duckdb/node-bindings-${process.platform}-${process.arch}`;

/** Where libduckdb is: DUCKDB_LIBRARY, else the first node_modules that
 * holds `duckdbPackage`, from the app's folder (the working directory)
 * up, then from this file's folder up (a checkout's devDependency). */
export function duckdbLibraryPath(): string {
  const fromEnv = process.env.DUCKDB_LIBRARY;
  if (fromEnv) return fromEnv;
  const file = process.platform === "darwin" ? "libduckdb.dylib" : process.platform === "win32" ? "duckdb.dll" : "libduckdb.so";
  const tried: string[] = [];
  for (const start of [process.cwd(), import.meta.dir]) {
    for (let dir = resolve(start); ; dir = dirname(dir)) {
      const path = join(dir, "node_modules", duckdbPackage, file);
      if (existsSync(path)) return path;
      tried.push(path);
      if (dirname(dir) === dir) break;
    }
  }
  return tried[0]!;
}

const symbols = {
  duckdb_create_config: { args: [ptr], returns: i32 },
  duckdb_set_config: { args: [ptr, cstring, cstring], returns: i32 },
  duckdb_destroy_config: { args: [ptr], returns: none },
  duckdb_open_ext: { args: [cstring, ptr, ptr, ptr], returns: i32 },
  duckdb_close: { args: [ptr], returns: none },
  duckdb_connect: { args: [ptr, ptr], returns: i32 },
  duckdb_disconnect: { args: [ptr], returns: none },
  duckdb_query: { args: [ptr, cstring, ptr], returns: i32 },
  duckdb_result_error: { args: [ptr], returns: cstring },
  duckdb_destroy_result: { args: [ptr], returns: none },
  duckdb_query_arrow: { args: [ptr, cstring, ptr], returns: i32 },
  duckdb_query_arrow_error: { args: [ptr], returns: cstring },
  duckdb_query_arrow_schema: { args: [ptr, ptr], returns: i32 },
  duckdb_query_arrow_array: { args: [ptr, ptr], returns: i32 },
  duckdb_destroy_arrow: { args: [ptr], returns: none },
  duckdb_arrow_scan: { args: [ptr, cstring, ptr], returns: i32 },
  duckdb_free: { args: [ptr], returns: none },
} as const;

let opened: ReturnType<typeof dlopen<typeof symbols>> | null = null;

/** The library's symbols (loaded once). Throws naming the path when the
 * package is not installed. */
export function duckdbSymbols(): ReturnType<typeof dlopen<typeof symbols>>["symbols"] {
  if (!opened) {
    const path = duckdbLibraryPath();
    if (!existsSync(path)) throw new Error(`libduckdb not found (${path}): this example needs DuckDB's C library: install it in the app (bun add ${duckdbPackage}) or set DUCKDB_LIBRARY to libduckdb's path`);
    opened = dlopen(path, symbols);
  }
  return opened.symbols;
}

const cstr = (text: string) => Buffer.from(`${text}\0`);

/** The address a one-cell out-parameter received. */
function cell(): BigUint64Array {
  return new BigUint64Array(1);
}

/** duckdb_result is 48 bytes (six words) in DuckDB 1.x. */
const resultBytes = 48;

/** One result batch: an ArrowSchema + ArrowArray DuckDB filled, owned by
 * the caller (move them into an import, then dispose the structs). */
export type ArrowBatch = { schema: CSchema; array: CArray };

/** Options of `new DuckDB`. */
export type DuckDBOptions = {
  /** Work around DuckDB 1.5's projection pushdown into Arrow streams
   * (default true; see the constructor). */
  projectionWorkaround?: boolean;
};

/** A database and one connection. */
export class DuckDB implements Disposable {
  readonly #db = cell();
  readonly #conn = cell();
  #open = false;

  /** An in-memory database; `config` are DuckDB settings (e.g. threads). */
  constructor(config: Record<string, string> = {}, options: DuckDBOptions = {}) {
    const lib = duckdbSymbols();
    const configCell = cell();
    if (lib.duckdb_create_config(configCell) !== 0) throw new Error("duckdb_create_config failed");
    const configPtr = Number(configCell[0]) as Pointer;
    try {
      for (const [name, value] of Object.entries(config)) {
        if (lib.duckdb_set_config(configPtr, cstr(name), cstr(value)) !== 0) throw new Error(`duckdb_set_config ${name}=${value} failed`);
      }
      const error = cell();
      if (lib.duckdb_open_ext(null, this.#db, configPtr, error) !== 0) {
        const message = error[0] ? new CString(Number(error[0]) as Pointer).toString() : "unknown error";
        if (error[0]) lib.duckdb_free(Number(error[0]) as Pointer);
        throw new Error(`duckdb_open_ext failed: ${message}`);
      }
    } finally {
      lib.duckdb_destroy_config(configCell);
    }
    if (lib.duckdb_connect(Number(this.#db[0]) as Pointer, this.#conn) !== 0) {
      lib.duckdb_close(this.#db);
      throw new Error("duckdb_connect failed");
    }
    this.#open = true;
    // DuckDB 1.5.6 pushes a query's column projection into a stream
    // registered with duckdb_arrow_scan, then reads the projected columns
    // by their position in the projection, although a plain ArrowArrayStream
    // still delivers every column: `select sum(v) from t` reads the first
    // column instead of v (seen with pyarrow's streams too). Disabling the
    // optimizer that prunes unused columns avoids it.
    if (options.projectionWorkaround ?? true) this.run("SET disabled_optimizers = 'unused_columns'");
  }

  /** The `duckdb_connection` (for native helpers). */
  get connection(): Pointer {
    return Number(this.#conn[0]) as Pointer;
  }

  /** Runs a statement whose result is not needed (SET, CREATE, ...). */
  run(sql: string): void {
    const lib = duckdbSymbols();
    const result = new Uint8Array(resultBytes);
    const state = lib.duckdb_query(this.connection, cstr(sql), result);
    try {
      if (state !== 0) throw new Error(`DuckDB: ${lib.duckdb_result_error(result) ?? "query failed"} (${sql})`);
    } finally {
      lib.duckdb_destroy_result(result);
    }
  }

  /** Registers the `ArrowArrayStream*` as view `name` (borrowed: keep the
   * stream alive, and release it yourself, after the last query). */
  registerStream(name: string, stream: Pointer | number): void {
    if (duckdbSymbols().duckdb_arrow_scan(this.connection, cstr(name), stream as Pointer) !== 0) throw new Error(`duckdb_arrow_scan ${name} failed`);
  }

  /** Runs `sql` on this thread and returns its result as Arrow batches. */
  queryArrow(sql: string): ArrowBatch[] {
    const lib = duckdbSymbols();
    const arrow = cell();
    if (lib.duckdb_query_arrow(this.connection, cstr(sql), arrow) !== 0) {
      const message = arrow[0] ? lib.duckdb_query_arrow_error(Number(arrow[0]) as Pointer) : null;
      if (arrow[0]) lib.duckdb_destroy_arrow(arrow);
      throw new Error(`DuckDB: ${message ?? "query failed"} (${sql})`);
    }
    try {
      return fetchArrow(Number(arrow[0]) as Pointer);
    } finally {
      lib.duckdb_destroy_arrow(arrow);
    }
  }

  close(): void {
    if (!this.#open) return;
    this.#open = false;
    const lib = duckdbSymbols();
    lib.duckdb_disconnect(this.#conn);
    lib.duckdb_close(this.#db);
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

/** Reads every batch of a `duckdb_arrow` result (a `duckdb_arrow` handle).
 * DuckDB leaves the array released (release NULL) after the last batch. */
export function fetchArrow(arrow: Pointer): ArrowBatch[] {
  const lib = duckdbSymbols();
  const out = cell();
  const batches: ArrowBatch[] = [];
  for (;;) {
    const batch = { schema: CSchema.allocate(), array: CArray.allocate() };
    out[0] = BigInt(batch.schema.address);
    let state = lib.duckdb_query_arrow_schema(arrow, out);
    out[0] = BigInt(batch.array.address);
    if (state === 0) state = lib.duckdb_query_arrow_array(arrow, out);
    if (state !== 0 || batch.array.released) {
      batch.schema.dispose();
      batch.array.dispose();
      if (state !== 0) {
        for (const b of batches) { b.schema.dispose(); b.array.dispose(); }
        throw new Error(`DuckDB: ${lib.duckdb_query_arrow_error(arrow) ?? "fetching the result failed"}`);
      }
      return batches;
    }
    batches.push(batch);
  }
}
