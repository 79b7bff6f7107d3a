/**
 * bench/adbc.ts: bun-arrow-device/adbc against pyarrow's ADBC driver
 * manager (adbc_driver_manager, embedded in this process through
 * bun-arrow-device/python), both on DuckDB's driver (duckdb_adbc_init in
 * the devDependency's libduckdb.so), rounds interleaved (the side that
 * goes first alternates):
 *
 *   read     SELECT * of a 1e6-row, 4-column table into an apache-arrow
 *            Table (ours: its columns make their views on first use) / a
 *            pyarrow Table (fetch_arrow_table); target: ours <= 1.1x pyarrow.
 *            Also printed: ours with every column buffer viewed.
 *   ipc      the same result carried as Arrow IPC bytes, as an IPC-based
 *            driver manager must: native code (pyarrow's C++ IPC writer,
 *            standing in for the manager's) runs the query and serializes
 *            the driver's stream into one buffer, JS views that buffer
 *            without copying it and runs tableFromIPC, then views every
 *            column buffer; target: ours (viewed) >= 5x faster. Both routes include
 *            ExecuteQuery and the driver's get_next work.
 *   floor    the driver alone: ExecuteQuery, then every get_next, each
 *            batch imported by pyarrow's C++ reader and held, unread, as
 *            a Table's batches are (released after the clock stops, as
 *            the Tables of read are). No importer can do less, so
 *            IPC / floor bounds the ipc ratio.
 *   ingest   a 1e6-row Table into a DuckDB table (replace);
 *            target: ours <= 1.1x pyarrow's adbc_ingest.
 *   select1  the fixed cost of a one-row query, reported: SELECT 0, SELECT
 *            1, ... (new SQL each time: the DBAPI cursor skips
 *            SetSqlQuery when the SQL repeats), autocommit on both sides
 *            (the DBAPI's default is off: one open transaction).
 *
 * `--quick` runs fewer rounds. Medians per operation; the load average is
 * printed, since other work on the machine moves every figure.
 */
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { toArrayBuffer, type Pointer } from "bun:ffi";
import { loadavg } from "node:os";
import { tableFromIPC, type Table } from "apache-arrow";
import { Database } from "../ts/adbc.ts";
import { loadPython } from "../ts/python.ts";
import { readFileSync } from "node:fs";

const root = resolve(import.meta.dir, "..");
const quick = process.argv.includes("--quick");
// Five rounds at least: with three, one slow round of either side decides
// a median on a loaded machine.
const rounds = quick ? 5 : 7;
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
let pyText: (expression: string) => string = () => "";
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
conn = dbapi.connect(driver=${JSON.stringify(libduckdb)}, entrypoint="duckdb_adbc_init", autocommit=True)
cur = conn.cursor()
cur.execute(${JSON.stringify(create)})
def read(sql, n):
    start = time.perf_counter()
    for _ in range(n):
        cur.execute(sql)
        table = cur.fetch_arrow_table()
    return (time.perf_counter() - start) / n * 1e3
import pyarrow as pa
ipc_buffer = None
def ipc(sql):
    global ipc_buffer
    start = time.perf_counter()
    cur.execute(sql)
    reader = cur.fetch_record_batch()
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, reader.schema) as writer:
        for batch in reader:
            writer.write_batch(batch)
    ipc_buffer = sink.getvalue()
    elapsed = (time.perf_counter() - start) * 1e3
    return f"{elapsed} {ipc_buffer.address} {ipc_buffer.size}"
def drain(sql):
    start = time.perf_counter()
    cur.execute(sql)
    batches = list(cur.fetch_record_batch())
    return (time.perf_counter() - start) * 1e3
def select_each(n):
    start = time.perf_counter()
    for i in range(n):
        cur.execute(f"SELECT {i}")
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
  pyText = (expression: string) => {
    using result = python.eval(expression);
    return result.toString();
  };
}

/** Views every buffer of every column (our Tables make a column's views
 * on first use; pyarrow's and tableFromIPC's are made already). */
function touch(table: Table): number {
  let n = 0;
  for (const column of table.data) {
    for (const child of column.children) n += child.values.length + (child.nullBitmap?.length ?? 0);
  }
  return n;
}

const ours = { read: [] as number[], viewed: [] as number[], ingest: [] as number[], select1: [] as number[] };
const theirs = { read: [] as number[], ipc: [] as number[], floor: [] as number[], ingest: [] as number[], select1: [] as number[] };
const load = [loadavg()[0]!];
let sample: Table | null = null;
for (let round = 0; round < rounds + 1; round++) {
  const keep = round > 0; // round 0 warms both sides
  const sides = [
    () => {
      const query = time(() => (sample = conn.query("SELECT * FROM t")));
      const view = time(() => touch(sample!));
      const ingest = time(() => conn.ingest(sample!, "t2", { mode: "replace" }));
      let q = 0;
      const select1 = time(() => conn.query(`SELECT ${q++}`), 200);
      if (keep) {
        ours.read.push(query);
        ours.viewed.push(query + view);
        ours.ingest.push(ingest);
        ours.select1.push(select1);
      }
    },
    () => {
      if (!py) return;
      const r = py(`read("SELECT * FROM t", 1)`);
      const [serialize, address, size] = pyText(`ipc("SELECT * FROM t")`).split(" ").map(Number);
      const parse = time(() => touch(tableFromIPC(new Uint8Array(toArrayBuffer(address as Pointer, 0, size)))));
      const f = py(`drain("SELECT * FROM t")`);
      const i = py("ingest()");
      const s = py("select_each(200)");
      if (keep) {
        theirs.read.push(r);
        theirs.ipc.push(serialize! + parse);
        theirs.floor.push(f);
        theirs.ingest.push(i);
        theirs.select1.push(s);
      }
    },
  ];
  if (round % 2 === 1) sides.reverse();
  for (const side of sides) side();
  Bun.gc(true);
}
load.push(loadavg()[0]!);

const ms = (x: number) => `${x.toFixed(x < 1 ? 4 : 1)} ms`;
console.log(`adbc: DuckDB ${sample!.numRows} rows x ${sample!.numCols} columns, ${rounds} rounds, medians (ratios: of the rounds' own, [range]); load average ${load.map((l) => l.toFixed(1)).join(" -> ")}`);
const verdict = (ok: boolean) => (ok ? "holds" : "MISSED");
// Each ratio is the median of the rounds' own ratios (both sides of a
// round run back to back), so a slow phase of the machine that one round
// falls into moves both of its figures, not one side's median. The range
// of the rounds' ratios is printed beside it.
const paired = (a: number[], b: number[]) => a.map((x, i) => x / b[i]!);
const ratio = (a: number[], b: number[]) => (py ? median(paired(a, b)) : NaN);
const range = (a: number[], b: number[]) => {
  if (!py) return "";
  const rs = paired(a, b);
  return `[${Math.min(...rs).toFixed(2)}-${Math.max(...rs).toFixed(2)}]`;
};
const rRead = ratio(ours.read, theirs.read);
const rIpc = ratio(theirs.ipc, ours.viewed);
const floor = median(theirs.floor);
const rCeiling = ratio(theirs.ipc, theirs.floor);
const rOverFloor = ratio(ours.viewed, theirs.floor);
const rIngest = ratio(ours.ingest, theirs.ingest);
console.log(`  read 1e6 x 4      ours ${ms(median(ours.read))}  pyarrow ${py ? ms(median(theirs.read)) : "-"}  ours/pyarrow ${rRead.toFixed(2)}x ${range(ours.read, theirs.read)}  target <= 1.1x: ${py ? verdict(rRead <= 1.1) : reason}`);
console.log(`  read, viewed      ours ${ms(median(ours.viewed))}  (every column buffer viewed: what tableFromIPC makes at once)`);
console.log(`  via IPC bytes     ${py ? ms(median(theirs.ipc)) : "-"}  IPC/ours viewed ${rIpc.toFixed(2)}x ${range(theirs.ipc, ours.viewed)}  target >= 5x: ${py ? verdict(rIpc >= 5) : reason}`);
console.log(`  driver floor      ${py ? ms(floor) : "-"}  ExecuteQuery + every get_next, batches held unread: IPC/floor ${rCeiling.toFixed(2)}x is the most any importer can gain over IPC; ours viewed/floor ${rOverFloor.toFixed(2)}x`);
console.log(`  ingest 1e6        ours ${ms(median(ours.ingest))}  pyarrow ${py ? ms(median(theirs.ingest)) : "-"}  ours/pyarrow ${rIngest.toFixed(2)}x ${range(ours.ingest, theirs.ingest)}  target <= 1.1x: ${py ? verdict(rIngest <= 1.1) : reason}`);
console.log(`  SELECT n          ours ${(median(ours.select1) * 1000).toFixed(1)} us  pyarrow ${py ? `${(median(theirs.select1) * 1000).toFixed(1)} us` : "-"}`);
