/**
 * bun-arrow-device/adbc against the SQLite driver (libadbc_driver_sqlite.so
 * from the adbc-driver-sqlite wheel, extracted by setup.sh --test): types,
 * many-row parameters, prepared statements, ingest modes, metadata,
 * transactions, integer options, and failures that leave the connection
 * usable; results checked against what was written to the database.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { tableFromArrays } from "apache-arrow";
import { AdbcError, Database } from "../../ts/adbc.ts";
import { StreamError } from "../../ts/index.ts";
import { adbcDriver, adbcFailure, dbapiQuery, expectAdbcSettled, expectSameTable } from "../helpers/adbc.ts";

const open = () => new Database({ driver: adbcDriver("sqlite"), options: { uri: ":memory:" } });

afterEach(expectAdbcSettled);

const failure = adbcFailure;

describe("SQLite through ADBC", () => {
  test("the driver loads at ADBC 1.1.0 and reads each SQLite type", () => {
    using db = open();
    expect(db.driverVersion).toBe("1.1.0");
    using conn = db.connect();
    const row = conn.query("SELECT 42 AS i, 1.5 AS f, 'text' AS s, x'0102ff' AS b, NULL AS n").toArray()[0]!.toJSON();
    expect(row.i).toBe(42n);
    expect(row.f).toBe(1.5);
    expect(row.s).toBe("text");
    expect([...(row.b as Uint8Array)]).toEqual([1, 2, 255]);
    expect(row.n).toBeNull();
  });

  test("every SQLite type equals what pyarrow's adbc_driver_manager.dbapi reads from the same driver", () => {
    // SQLite's own types (integer, real, text, blob, null); 2500 rows, so
    // several of the driver's batches, with nulls in each column.
    const sql = `WITH RECURSIVE r(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM r WHERE g < 2500)
      SELECT g * -3000000007 AS i, CASE WHEN g % 5 = 0 THEN NULL ELSE g / 7.0 END AS f,
        CASE WHEN g % 3 = 0 THEN NULL ELSE 'row ' || g || ' é' END AS s, CASE WHEN g % 4 = 0 THEN NULL ELSE CAST('b' || g AS BLOB) END AS b, x'00ff01' AS k,
        date('2024-02-28', '+' || g || ' days') AS d, CASE WHEN g % 2 = 0 THEN 1 ELSE NULL END AS n
      FROM r`;
    using db = open();
    using conn = db.connect();
    const ours = conn.query(sql);
    expect(ours.numRows).toBe(2500);
    expectSameTable(ours, dbapiQuery({ driver: adbcDriver("sqlite"), dbKwargs: { uri: ":memory:" }, sql }));
  });

  test("ingest writes a Table that SQL reads back unchanged, in every mode", () => {
    using db = open();
    using conn = db.connect();
    const data = tableFromArrays({ a: BigInt64Array.from([1n, 2n, 3n]), f: Float64Array.from([0.25, -1, 1e300]), s: ["x", "y", "z"] });
    expect(conn.ingest(data, "t", { mode: "create" })).toBe(3);
    const back = conn.query("SELECT a, f, s FROM t ORDER BY a");
    expect([...back.getChild("a")!]).toEqual([1n, 2n, 3n]);
    expect([...back.getChild("f")!]).toEqual([0.25, -1, 1e300]);
    expect([...back.getChild("s")!]).toEqual(["x", "y", "z"]);
    conn.ingest(data, "t", { mode: "append" });
    expect(conn.query("SELECT count(*) AS n FROM t").getChild("n")!.get(0)).toBe(6n);
    conn.ingest(data, "t", { mode: "replace" });
    expect(conn.query("SELECT count(*) AS n FROM t").getChild("n")!.get(0)).toBe(3n);
    conn.ingest(data, "t", { mode: "create_append" });
    expect(conn.query("SELECT count(*) AS n FROM t").getChild("n")!.get(0)).toBe(6n);
    expect(failure(() => conn.ingest(data, "t", { mode: "create" })).error).toBeInstanceOf(AdbcError);
  });

  test("many rows of parameters run the statement once per row", () => {
    using db = open();
    using conn = db.connect();
    const params = tableFromArrays({ p: BigInt64Array.from([5n, 6n, 7n]) });
    expect([...conn.query("SELECT ? * 2 AS d", params).getChild("d")!]).toEqual([10n, 12n, 14n]);
    conn.execute("CREATE TABLE k (v INTEGER)");
    conn.execute("INSERT INTO k VALUES (?)", params);
    expect(conn.query("SELECT sum(v) AS s FROM k").getChild("s")!.get(0)).toBe(18n);
  });

  test("a prepared statement reports its parameters and runs again with new ones", () => {
    using db = open();
    using conn = db.connect();
    using stmt = conn.prepare("SELECT ? + ? AS s");
    expect(stmt.parameterSchema().fields.length).toBe(2);
    stmt.bind(tableFromArrays({ a: BigInt64Array.of(1n), b: BigInt64Array.of(2n) }));
    expect(stmt.executeQuery().getChild("s")!.get(0)).toBe(3n);
    stmt.bind(tableFromArrays({ a: BigInt64Array.of(10n), b: BigInt64Array.of(20n) }));
    expect(stmt.executeQuery().getChild("s")!.get(0)).toBe(30n);
  });

  test("metadata: objects, table schema, table types, info", () => {
    using db = open();
    using conn = db.connect();
    conn.execute("CREATE TABLE m (a INTEGER, b TEXT)");
    expect(conn.getTableSchema("m").fields.map((f) => f.name)).toEqual(["a", "b"]);
    expect([...conn.getTableTypes().getChild("table_type")!]).toContain("table");
    expect(JSON.stringify(conn.getObjects({ depth: "columns" }).toArray())).toContain('"m"');
    expect(conn.getInfo([0, 1]).numRows).toBe(2);
  });

  test("transactions and options of each kind", () => {
    using db = open();
    using conn = db.connect();
    expect(conn.getOption("adbc.connection.autocommit")).toBe("true");
    conn.execute("CREATE TABLE x (v INTEGER)");
    conn.autocommit = false;
    conn.execute("INSERT INTO x VALUES (1)");
    conn.rollback();
    expect(conn.query("SELECT count(*) AS n FROM x").getChild("n")!.get(0)).toBe(0n);
    conn.execute("INSERT INTO x VALUES (1)");
    conn.commit();
    expect(conn.query("SELECT count(*) AS n FROM x").getChild("n")!.get(0)).toBe(1n);
    using stmt = conn.statement();
    stmt.setOption("adbc.sqlite.query.batch_rows", 7n);
    expect(stmt.getOption("adbc.sqlite.query.batch_rows", "int")).toBe(7n);
    let batches = 0;
    stmt.setSqlQuery("WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 20) SELECT i FROM r");
    for (const batch of stmt.recordBatches()) {
      expect(batch.numRows).toBeLessThanOrEqual(7);
      batches++;
    }
    expect(batches).toBe(3);
    const unknown = failure(() => conn.getOption("no.such.option"));
    expect(unknown.error).toBeInstanceOf(AdbcError);
    expect((unknown.error as AdbcError).adbcStatus).toBe("not_found");
  });

  test("a wrong parameter count, a missing table and a wrong-schema batch are AdbcErrors released once", () => {
    using db = open();
    using conn = db.connect();
    const count = failure(() => conn.query("SELECT ? + ? AS s", tableFromArrays({ a: BigInt64Array.of(1n) })));
    expect((count.error as AdbcError).adbcStatus).toBe("invalid_state");
    expect((count.error as AdbcError).message).toContain("parameter count mismatch");
    expect(count.released).toBe(1);
    const missing = failure(() => conn.execute("SELECT * FROM nope"));
    expect((missing.error as AdbcError).message).toContain("no such table");
    expect(missing.released).toBe(1);
    conn.execute("CREATE TABLE w (a INTEGER)");
    const wrong = failure(() => conn.ingest(tableFromArrays({ zz: ["a"] }), "w", { mode: "append" }));
    expect(wrong.error).toBeInstanceOf(AdbcError);
    expect(conn.query("SELECT count(*) AS n FROM w").getChild("n")!.get(0)).toBe(0n);
    expect(conn.query("SELECT 1 AS one").getChild("one")!.get(0)).toBe(1n);
  });

  test("a mid-stream failure: the driver describes none (no ErrorFromArrayStream error), so it stays the StreamError", () => {
    using db = open();
    using conn = db.connect();
    const sql = "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 200000) SELECT CASE WHEN i > 150000 THEN abs(-9223372036854775807 - 1) ELSE i END AS v FROM r";
    let rows = 0;
    const { error, released } = failure(() => {
      for (const batch of conn.recordBatches(sql)) rows += batch.numRows;
    });
    expect(rows).toBeGreaterThan(0);
    expect(error).toBeInstanceOf(StreamError);
    expect(error).not.toBeInstanceOf(AdbcError);
    expect((error as StreamError).message).toContain("integer overflow");
    expect((error as StreamError).errno).toBe(5);
    expect(released).toBe(0);
    expect(conn.query("SELECT 2 AS two").getChild("two")!.get(0)).toBe(2n);
  });

  test("an async query over SQLite equals the sync one", async () => {
    using db = open();
    using conn = db.connect();
    const sql = "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 5000) SELECT i, i * 0.5 AS h FROM r";
    const a = await conn.query(sql, undefined, { async: true });
    const b = conn.query(sql);
    expect(a.numRows).toBe(5000);
    expect([...a.getChild("h")!]).toEqual([...b.getChild("h")!]);
  });
});
