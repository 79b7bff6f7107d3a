/**
 * SQL over apache-arrow tables with DuckDB's C library, zero-copy both ways:
 *
 *   bun examples/duckdb.ts
 *
 * JS -> DuckDB: each Table is exported as an ArrowArrayStream
 * (`exportStream`): DuckDB's Arrow scan reads the batches' JS buffers in
 * place. DuckDB -> JS: each result batch (ArrowSchema + ArrowArray) is moved
 * into `importRecordBatch`: apache-arrow vectors over DuckDB's memory,
 * released when the GC collects them. The binding (examples/duckdb_c.ts)
 * loads libduckdb from the npm package @duckdb/node-bindings-<platform>,
 * installed in the app (or a checkout), or from DUCKDB_LIBRARY.
 *
 * Threads: this runs the query on the JS thread, so DuckDB must call the
 * streams' get_next on that thread too: `threads: "1"`. With more threads,
 * run the query on a native thread and keep the JS event loop free (see
 * test/peers/duckdb.test.ts); `callBlocking` turns the would-be deadlock into a
 * typed error (code "wrong_thread"), shown at the end.
 */
import { ptr } from "bun:ffi";
import { Table, tableFromArrays, vectorFromArray, Utf8, type RecordBatch } from "apache-arrow";
import { ArrowDeviceError, exportStream, importRecordBatch } from "bun-arrow-device";
import { callBlocking } from "bun-arrow-device/raw";
import { existsSync } from "node:fs";
import { DuckDB, duckdbLibraryPath, duckdbPackage } from "./duckdb_c.ts";

// DuckDB's C library comes from npm (or DUCKDB_LIBRARY): say so in one line.
if (!existsSync(duckdbLibraryPath())) {
  console.error(`duckdb.ts needs DuckDB's C library: bun add ${duckdbPackage} in this app (or set DUCKDB_LIBRARY to libduckdb's path); not found: ${duckdbLibraryPath()}`);
  process.exit(2);
}

const orders = tableFromArrays({
  id: Int32Array.from({ length: 10_000 }, (_, i) => i),
  customer: Int32Array.from({ length: 10_000 }, (_, i) => i % 4),
  amount: Float64Array.from({ length: 10_000 }, (_, i) => (i % 100) / 4),
});
const customers = new Table({
  customer: vectorFromArray([0, 1, 2, 3]),
  name: vectorFromArray(["Ada", "Grace", "Edsger", "Barbara"], new Utf8()),
});

/** Registers `table` with DuckDB as view `name`; the returned handle owns
 * the stream (release it after the last query over the view). */
function register(db: DuckDB, name: string, table: Table) {
  const stream = exportStream(table, { as: "stream" });
  db.registerStream(name, stream.stream);
  return stream;
}

/** Runs `sql` and imports the result, checking that apache-arrow reads the
 * first column at DuckDB's own address (no copy). */
function query(db: DuckDB, sql: string): { table: Table; zeroCopy: boolean } {
  const batches: RecordBatch[] = [];
  let zeroCopy = true;
  for (const { schema, array } of db.queryArrow(sql)) {
    const duckdbBuffer = array.child(0).bufferAddress(1);
    const batch = importRecordBatch(schema, array, { as: "array" }); // moves both structs in
    zeroCopy &&= Number(ptr(batch.getChildAt(0)!.data[0].values)) === duckdbBuffer;
    schema.dispose(); // the (now released) landing structs
    array.dispose();
    batches.push(batch);
  }
  return { table: new Table(batches), zeroCopy };
}

{
  using db = new DuckDB({ threads: "1" });
  using ordersStream = register(db, "orders", orders);
  using customersStream = register(db, "customers", customers);
  const { table, zeroCopy } = query(db, `
    select o.customer, c.name, count(*) as n, sum(o.amount) as total
    from orders o join customers c on o.customer = c.customer
    group by o.customer, c.name order by o.customer`);
  for (const row of table) console.log(`${row.name}: ${row.n} orders, ${row.total}`);
  console.log(`result read in place from DuckDB's memory: ${zeroCopy}`);
  void ordersStream;
  void customersStream;
}

{
  // The mistake the library catches: threads >= 2, query on the JS thread.
  // A hundred small batches, so that DuckDB's workers share the scan (with
  // few batches the JS thread may read them all before any worker asks).
  const smallBatches = new Table(Array.from({ length: 100 }, (_, k) => orders.slice(k * 100, (k + 1) * 100).batches[0]!));
  // Whether a worker asks at all is DuckDB's scheduling: a few tries, each
  // with a database and a stream of its own.
  let refused: ArrowDeviceError | null = null;
  for (let attempt = 0; attempt < 5 && refused === null; attempt++) {
    using db = new DuckDB({ threads: "4" });
    using ordersStream = register(db, "orders", smallBatches);
    try {
      callBlocking(() => query(db, "select sum(amount) from orders"));
    } catch (error) {
      if (!(error instanceof ArrowDeviceError && error.code === "wrong_thread")) throw error;
      refused = error;
    }
    void ordersStream;
  }
  console.log(refused === null ? "no deadlock risk this time (DuckDB pulled on the JS thread only)" : `refused instead of hanging: ${refused.name}`);
}
