/**
 * bench/adbc.ts: bun-arrow-device/adbc against pyarrow's ADBC driver
 * manager (adbc_driver_manager, embedded in this process through
 * bun-arrow-device/python), both on DuckDB's driver (duckdb_adbc_init in
 * the devDependency's libduckdb.so), rounds interleaved:
 *
 *   read     SELECT * of a 1e6-row, 4-column table into an apache-arrow
 *            Table (ours) / a pyarrow Table (fetch_arrow_table);
 *            target: ours <= 1.1x pyarrow.
 *   ipc      the same result carried as Arrow IPC bytes into tableFromIPC,
 *            what an IPC-based driver manager must do: our read, then the
 *            IPC write (apache-arrow's tableToIPC standing in for the
 *            driver side's writer) and tableFromIPC; target: ours >= 5x
 *            faster.
 *   ingest   a 1e6-row Table into a DuckDB table (replace);
 *            target: ours <= 1.1x pyarrow's adbc_ingest.
 *   select1  the fixed cost of a one-row query, reported.
 *
 * `--quick` runs fewer rounds. Medians per operation.
 */
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { tableFromIPC, tableToIPC, type Table } from "apache-arrow";
import { Database } from "../ts/adbc.ts";
import { loadPython } from "../ts/python.ts";
import { readFileSync } from "node:fs";

const root = resolve(import.meta.dir, "..");
const quick = process.argv.includes("--quick");
const rounds = quick ? 3 : 7;
const libduckdb = join(root, "node_modules/@duckdb", `node-bindings-${process.platform}-${process.arch}`, "libduckdb.so");
const env = readFileSync(join(root, "scripts/toolchain.env"), "utf8");
const pin = (name: string) => new RegExp(`^${name}=(\\S+)`, "m").exec(env)![1]!;
const pyarrowDir = join(root, ".toolchain", `pyarrow-${pin("PYARROW_VERSION")}`);
const managerDir = process.env.ADBC_DRIVER_MANAGER_DIR ?? join(root, ".toolchain", `adbc-driver-manager-${pin("ADBC_DRIVERS_VERSION")}`);
const create = "CREATE TABLE t AS SELECT range::BIGINT AS a, (range * 0.5)::DOUBLE AS b, (range % 1000)::INTEGER AS c, range::DOUBLE AS d FROM range(1000000)";

const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;

function time(body: () => unknown, n = 1): number {
  const start = Bun.nanoseconds();
  for (let i = 0; i < n; i++) body();
  return (Bun.nanoseconds() - start) / n / 1e6;
}

using db = new Database({ driver: libduckdb, entrypoint: "duckdb_adbc_init" });
using conn = db.connect();
conn.execute(create);

let py: ((expression: string) => number) | null = null;
let reason = "";
if (!existsSync(join(managerDir, "adbc_driver_manager")) || !existsSync(pyarrowDir)) {
  reason = `${managerDir} or ${pyarrowDir} is missing (bash scripts/setup.sh --test installs them)`;
} else {
  const recorded = join(root, ".toolchain", "libpython-path");
  const libpython = process.env.ARROW_DEVICE_LIBPYTHON ?? (existsSync(recorded) ? readFileSync(recorded, "utf8").trim() : undefined);
  const python = loadPython({ libpython, sysPath: [managerDir, pyarrowDir] });
  python.exec(`
import time
import adbc_driver_manager.dbapi as dbapi
conn = dbapi.connect(driver=${JSON.stringify(libduckdb)}, entrypoint="duckdb_adbc_init")
cur = conn.cursor()
cur.execute(${JSON.stringify(create)})
def read(sql, n):
    start = time.perf_counter()
    for _ in range(n):
        cur.execute(sql)
        table = cur.fetch_arrow_table()
    return (time.perf_counter() - start) / n * 1e3
def ingest():
    cur.execute("SELECT * FROM t")
    table = cur.fetch_arrow_table()
    start = time.perf_counter()
    cur.adbc_ingest("t2", table, mode="replace")
    return (time.perf_counter() - start) * 1e3
`);
  py = (expression: string) => {
    using result = python.eval(expression);
    return Number(result.toString());
  };
}

const ours = { read: [] as number[], ipc: [] as number[], ingest: [] as number[], select1: [] as number[] };
const theirs = { read: [] as number[], ingest: [] as number[], select1: [] as number[] };
let sample: Table | null = null;
for (let round = 0; round < rounds + 1; round++) {
  const keep = round > 0; // round 0 warms both sides
  const read = time(() => (sample = conn.query("SELECT * FROM t")));
  const ipc = read + time(() => tableFromIPC(tableToIPC(sample!)));
  const ingest = time(() => conn.ingest(sample!, "t2", { mode: "replace" }));
  const select1 = time(() => conn.query("SELECT 1"), 200);
  if (keep) {
    ours.read.push(read);
    ours.ipc.push(ipc);
    ours.ingest.push(ingest);
    ours.select1.push(select1);
  }
  if (py) {
    const r = py(`read("SELECT * FROM t", 1)`);
    const i = py("ingest()");
    const s = py(`read("SELECT 1", 200)`);
    if (keep) {
      theirs.read.push(r);
      theirs.ingest.push(i);
      theirs.select1.push(s);
    }
  }
  Bun.gc(true);
}

const ms = (x: number) => `${x.toFixed(x < 1 ? 4 : 1)} ms`;
console.log(`adbc: DuckDB ${sample!.numRows} rows x ${sample!.numCols} columns, ${rounds} rounds, medians`);
const verdict = (ok: boolean) => (ok ? "holds" : "MISSED");
const rRead = py ? median(ours.read) / median(theirs.read) : NaN;
const rIpc = median(ours.ipc) / median(ours.read);
const rIngest = py ? median(ours.ingest) / median(theirs.ingest) : NaN;
console.log(`  read 1e6 x 4      ours ${ms(median(ours.read))}  pyarrow ${py ? ms(median(theirs.read)) : "-"}  ours/pyarrow ${rRead.toFixed(2)}x  target <= 1.1x: ${py ? verdict(rRead <= 1.1) : reason}`);
console.log(`  via IPC bytes     ${ms(median(ours.ipc))}  IPC/ours ${rIpc.toFixed(2)}x  target >= 5x: ${verdict(rIpc >= 5)}`);
console.log(`  ingest 1e6        ours ${ms(median(ours.ingest))}  pyarrow ${py ? ms(median(theirs.ingest)) : "-"}  ours/pyarrow ${rIngest.toFixed(2)}x  target <= 1.1x: ${py ? verdict(rIngest <= 1.1) : reason}`);
console.log(`  SELECT 1          ours ${(median(ours.select1) * 1000).toFixed(1)} us  pyarrow ${py ? `${(median(theirs.select1) * 1000).toFixed(1)} us` : "-"}`);
