/**
 * The README's "Query a database" recipe: DuckDB through its ADBC driver,
 * results as an apache-arrow Table over the driver's memory.
 */
import { dirname, join } from "node:path";
import { Database } from "bun-arrow-device/adbc";

// DuckDB's C library as npm ships it (bun add @duckdb/node-bindings-linux-x64).
const duckdb = join(dirname(require.resolve(`@duckdb/node-bindings-${process.platform}-${process.arch}/package.json`)), "libduckdb.so");

using db = new Database({ driver: duckdb, entrypoint: "duckdb_adbc_init" });
using conn = db.connect();
conn.execute("CREATE TABLE trips AS SELECT range AS id, range % 7 AS day, range * 1.5 AS km FROM range(1000)");
const table = conn.query("SELECT day::INTEGER AS day, count(*)::INTEGER AS trips FROM trips WHERE day < 3 GROUP BY day ORDER BY day");
console.log(JSON.stringify(table.toArray())); // [{"day":0,"trips":143},{"day":1,"trips":143},{"day":2,"trips":143}]
