/**
 * Run by test/peers/duckdb.test.ts in a subprocess (DuckDB leaks the schemas its
 * scans ask for, which would break the zero-counter checks of every later
 * test in a shared process; and a scenario that goes wrong must not hang
 * the suite). Prints one JSON line: the scenario's observations.
 *
 * Scenarios: "scan-js-thread", "scan-native-threads", "deadlock", "types".
 */
import { dlopen, FFIType, ptr, type Pointer } from "bun:ffi";
import { Table, Utf8, tableFromArrays, vectorFromArray, type RecordBatch } from "apache-arrow";
import { DuckDB, duckdbLibraryPath, fetchArrow, type ArrowBatch } from "../../examples/duckdb_c.ts";
import { exportStream, importRecordBatch } from "../../ts/index.ts";
import { callBlocking } from "../../ts/raw.ts";
import { counters } from "../../ts/diagnostics.ts";
import { fixturePath } from "./fixtures.ts";

const thread = dlopen(fixturePath("duckdb_thread"), {
  duckq_start: { args: [FFIType.cstring, FFIType.ptr, FFIType.cstring], returns: FFIType.i32 },
  duckq_state: { args: [], returns: FFIType.i32 },
  duckq_take_result: { args: [], returns: FFIType.ptr },
}).symbols;

const cstr = (text: string) => Buffer.from(`${text}\0`);

/** A three-batch table: ids 0..n-1, v = id / 2, s = "s<id % 7>". */
function sourceTable(n: number): Table {
  const parts = [0, 1, 2].map((k) => {
    const ids = Int32Array.from({ length: n / 3 }, (_, i) => k * (n / 3) + i);
    return tableFromArrays({ id: ids, v: Float64Array.from(ids, (i) => i / 2) }).assign(new Table({ s: vectorFromArray(Array.from(ids, (i) => `s${i % 7}`), new Utf8()) }));
  });
  return parts[0].concat(parts[1], parts[2]);
}

function expected(table: Table): { n: number; sum: number; maxS: string } {
  let sum = 0;
  let n = 0;
  let maxS = "";
  for (let i = 0; i < table.numRows; i++) {
    const id = table.getChild("id")!.get(i) as number;
    if (id % 2 !== 0) continue;
    n++;
    sum += table.getChild("v")!.get(i) as number;
    const s = table.getChild("s")!.get(i) as string;
    if (s > maxS) maxS = s;
  }
  return { n, sum, maxS };
}

const sql = "select count(*) as n, sum(v) as total, max(s) as max_s from t where id % 2 = 0";

/** Imports DuckDB's result batches. `zeroCopy`: the first column's data
 * buffer (a fixed-width column) is read by apache-arrow at the address
 * DuckDB gave, in every batch. */
function importResult(batches: ArrowBatch[], materialize = false): { rows: unknown[]; zeroCopy: boolean; formats: string[] } {
  const rows: unknown[] = [];
  let zeroCopy = batches.length > 0;
  let formats: string[] = [];
  for (const { schema, array } of batches) {
    formats = schema.children.map((c) => c.format ?? "");
    const duckdbAddress = array.child(0).bufferAddress(1);
    const batch: RecordBatch = importRecordBatch(schema, array, { as: "array", materialize });
    zeroCopy &&= Number(ptr(batch.getChildAt(0)!.data[0].values)) === duckdbAddress;
    for (const row of batch) rows.push(row.toJSON());
    schema.dispose();
    array.dispose();
  }
  return { rows, zeroCopy, formats };
}

function jsonSafe(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value, (_, v) => (typeof v === "bigint" ? String(v) : v)));
}

/** Counters once the exports ended; DuckDB never releases the schemas its
 * scans ask for (peers.md), reported apart. */
function leftovers(): { leakedSchemas: number; others: Record<string, number> } {
  const all = counters();
  const others = Object.fromEntries(Object.entries(all).filter(([k, v]) => v !== 0 && k !== "live_schema_exports" && k !== "live_owners" && k !== "live_imported_views" && k !== "imported_bytes_held"));
  return { leakedSchemas: all.live_schema_exports, others };
}

async function onNativeThread(db: DuckDB, query: string): Promise<ArrowBatch[]> {
  if (thread.duckq_start(cstr(duckdbLibraryPath()), db.connection, cstr(query)) !== 0) throw new Error("duckq_start failed");
  // The JS thread stays free: DuckDB's workers' get_next calls are answered here.
  while (thread.duckq_state() === 1) await Bun.sleep(1);
  const failed = thread.duckq_state() === 3;
  const result = thread.duckq_take_result() as Pointer;
  if (failed) throw new Error("the query failed on its native thread");
  return fetchArrow(result);
}

const scenario = process.argv[2];
const out: Record<string, unknown> = { scenario };
const table = sourceTable(30_000);
out.expected = expected(table);

if (scenario === "scan-js-thread" || scenario === "scan-native-threads") {
  const threads = scenario === "scan-js-thread" ? "1" : "4";
  const db = new DuckDB({ threads });
  const stream = exportStream(table, { as: "stream" });
  db.registerStream("t", stream.stream);
  const batches = scenario === "scan-js-thread" ? db.queryArrow(sql) : await onNativeThread(db, sql);
  out.result = jsonSafe(importResult(batches).rows);
  // A second view over the same data, read back whole (every batch, in order).
  const again = exportStream(table, { as: "stream" });
  db.registerStream("t2", again.stream);
  const all = scenario === "scan-js-thread" ? db.queryArrow("select id, v, s from t2 order by id") : await onNativeThread(db, "select id, v, s from t2 order by id");
  const imported = importResult(all);
  out.roundTrip = imported.rows.length === table.numRows && imported.rows.every((r, i) => {
    const row = r as { id: number; v: number; s: string };
    return row.id === i && row.v === i / 2 && row.s === `s${i % 7}`;
  });
  out.resultZeroCopy = imported.zeroCopy;
  // Only column v (not the first): see DuckDB's options in examples/duckdb_c.ts.
  const third = exportStream(table, { as: "stream" });
  db.registerStream("t3", third.stream);
  const projected = scenario === "scan-js-thread" ? db.queryArrow("select sum(v) as total from t3") : await onNativeThread(db, "select sum(v) as total from t3");
  out.projected = jsonSafe(importResult(projected).rows);
  out.allV = (table.numRows - 1) * table.numRows / 4;
  third.release();
  stream.release();
  again.release();
  db.close();
  Bun.gc(true);
  out.leftovers = leftovers();
} else if (scenario === "deadlock") {
  const db = new DuckDB({ threads: "4" });
  const stream = exportStream(table, { as: "stream" });
  db.registerStream("t", stream.stream);
  try {
    callBlocking(() => db.queryArrow(sql));
    out.error = null;
  } catch (error) {
    out.error = { name: (error as Error).name, message: (error as Error).message, cause: String((error as Error).cause) };
  }
  stream.release();
  // The connection stays usable: the same query on a fresh view, run on a native thread.
  const again = exportStream(table, { as: "stream" });
  db.registerStream("t2", again.stream);
  out.afterwards = jsonSafe(importResult(await onNativeThread(db, sql.replace("from t ", "from t2 "))).rows);
  again.release();
  db.close();
  Bun.gc(true);
  out.leftovers = leftovers();
} else if (scenario === "types") {
  const columns: Record<string, string> = {
    bo: "true", ti: "-1::tinyint", si: "-2::smallint", i: "-3::integer", bi: "-4::bigint", hi: "170141183460469231731687303715884105727::hugeint",
    uti: "1::utinyint", usi: "2::usmallint", ui: "3::uinteger", ubi: "4::ubigint", uhi: "5::uhugeint", f: "1.5::float", d: "2.25::double",
    d41: "123.4::decimal(4,1)", d92: "1234567.89::decimal(9,2)", d183: "123456789012345.678::decimal(18,3)", d3810: "1234567890123456789012345678.0123456789::decimal(38,10)",
    s: "'héllo'", b: "'\\xAA\\xBB'::blob", dt: "date '2024-02-29'", tm: "time '12:34:56.789'", ts: "timestamp '2024-01-02 03:04:05.123456'",
    tss: "timestamp_s '2024-01-02 03:04:05'", tsms: "timestamp_ms '2024-01-02 03:04:05.123'", tsns: "timestamp_ns '2024-01-02 03:04:05.123456789'",
    tstz: "timestamptz '2024-01-02 03:04:05+00'", iv: "interval '1 month 2 days 3 seconds'", u: "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid",
    l: "[1, 2, null]", st: "{'a': 1, 'b': 'x'}", m: "map {'k': 1, 'j': 2}", e: "'b'::enum_t", un: "union_value(num := 2)::union(num int, str varchar)",
    ar: "[1, 2, 3]::int[3]", bit: "'0101'::bit", ttz: "time with time zone '12:00:00+01'", nested: "[{'x': [1, 2]}, null]", nul: "null::integer",
  };
  const settings: Record<string, string> = {
    default: "",
    string_view: "SET arrow_output_version = '1.5'; SET produce_arrow_string_view = true",
    list_view: "SET arrow_output_version = '1.5'; SET arrow_output_list_view = true",
    large_buffers: "SET arrow_large_buffer_size = true",
    lossless: "SET arrow_lossless_conversion = true",
  };
  const query = `select ${Object.entries(columns).map(([name, expr]) => `${expr} as ${name}`).join(", ")} from range(3)`;
  const results: Record<string, unknown> = {};
  for (const [name, setting] of Object.entries(settings)) {
    const db = new DuckDB({ threads: "1" });
    db.run("CREATE TYPE enum_t AS ENUM ('a', 'b')");
    if (setting) db.run(setting);
    const imported = importResult(db.queryArrow(query), true);
    results[name] = { formats: Object.fromEntries(Object.keys(columns).map((c, i) => [c, imported.formats[i]])), rows: jsonSafe(imported.rows), zeroCopy: imported.zeroCopy };
    db.close();
  }
  out.results = results;
} else {
  throw new Error(`unknown scenario ${scenario}`);
}
console.log(JSON.stringify(out));
