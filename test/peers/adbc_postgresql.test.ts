/**
 * bun-arrow-device/adbc against the PostgreSQL driver (the
 * adbc-driver-postgresql wheel's library) and a real server that
 * test/helpers/postgres.ts starts for this file (loopback only, not as
 * root) and stops at the end. Values of every type are checked against
 * PostgreSQL's own rendering of the same rows; errors carry PostgreSQL's
 * SQLSTATE and the 1.1.0 error details.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { tableFromArrays } from "apache-arrow";
import { AdbcError, Database } from "../../ts/adbc.ts";
import { native } from "../../ts/core/ffi/library.ts";
import { StreamError } from "../../ts/index.ts";
import { Errno } from "../../ts/raw.ts";
import { startPostgres, type PostgresServer } from "../helpers/postgres.ts";
import { adbcDriver, dbapiQuery, expectAdbcSettled, expectSameTable } from "../helpers/adbc.ts";

let server: PostgresServer;
beforeAll(async () => {
  server = await startPostgres();
});
afterAll(() => server?.stop());

afterEach(expectAdbcSettled);

const open = () => new Database({ driver: adbcDriver("postgresql"), options: { uri: server.uri } });

const rows = `SELECT
  CASE WHEN g % 5 = 0 THEN NULL ELSE g END::int2 AS i2,
  (g * 1000)::int4 AS i4,
  (g::int8 * 3000000000) AS i8,
  (g / 4.0)::float4 AS f4,
  (g / 3.0)::float8 AS f8,
  (g * 1.125)::numeric(12, 3) AS dec,
  'row ' || g || ' é' AS s,
  decode(lpad(to_hex(g), 4, '0'), 'hex') AS b,
  (date '2024-02-28' + g) AS d,
  (timestamptz '2024-01-02 03:04:05.123456+02' + g * interval '1 hour 1 microsecond') AS ts,
  CASE WHEN g % 3 = 0 THEN NULL ELSE ARRAY[g, NULL, -g]::int4[] END AS l
FROM generate_series(1, 40) AS g ORDER BY g`;

describe("PostgreSQL through ADBC", () => {
  test("every type equals PostgreSQL's own rendering of the same rows", () => {
    using db = open();
    using conn = db.connect();
    const table = conn.query(rows);
    expect(table.schema.fields.map((f) => `${f.name}:${f.type}`)).toEqual([
      "i2:Int16", "i4:Int32", "i8:Int64", "f4:Float32", "f8:Float64", "dec:Utf8", "s:Utf8", "b:Binary",
      "d:Date32<DAY>", "ts:Timestamp<MICROSECOND, UTC>", "l:List<Int32>",
    ]);
    const text = conn.query(`SELECT i2::text, i4::text, i8::text, f4::float8::text AS f4, f8::text, dec::text, s, encode(b, 'hex') AS b,
      (d - date '1970-01-01')::text AS d, (extract(epoch FROM ts) * 1000000)::int8::text AS ts, array_to_string(l, ',', 'null') AS l FROM (${rows}) q`);
    expect(text.numRows).toBe(40);
    const ours = table.toArray().map((r) => r.toJSON());
    const theirs = text.toArray().map((r) => r.toJSON());
    for (let i = 0; i < 40; i++) {
      const o = ours[i]!, t = theirs[i]!;
      expect(o.i2 === null ? null : String(o.i2)).toBe(t.i2 as string | null);
      expect(String(o.i4)).toBe(t.i4 as string);
      expect(String(o.i8)).toBe(t.i8 as string);
      expect(o.f4).toBe(Math.fround(Number(t.f4)));
      expect(o.f8).toBe(Number(t.f8));
      expect(o.dec).toBe(t.dec);
      expect(o.s).toBe(t.s);
      expect(Buffer.from(o.b as Uint8Array).toString("hex")).toBe(t.b as string);
      expect(o.d).toBe(Number(t.d) * 86_400_000);
      expect(BigInt(Math.round((o.ts as number) * 1000))).toBe(BigInt(t.ts as string));
      const list = o.l === null ? null : [...(o.l as Iterable<number | null>)].map((v) => (v === null ? "null" : String(v))).join(",");
      expect(list).toBe(t.l as string | null);
    }
  });

  test("every type equals what pyarrow's adbc_driver_manager.dbapi reads from the same driver and server", () => {
    using db = open();
    using conn = db.connect();
    const sql = `SELECT q.*, (g * 7.5)::numeric(10, 2)::float8 AS num_f8, interval '1 day 2 hours' * g AS iv, ARRAY['a' || g, NULL]::text[] AS tl
      FROM (${rows}) q, LATERAL (SELECT q.i4 / 1000 AS g) x`;
    const ours = conn.query(sql);
    expect(ours.numRows).toBe(40);
    expectSameTable(ours, dbapiQuery({ driver: adbcDriver("postgresql"), dbKwargs: { uri: server.uri }, sql }));
  });

  test("ingest a Table, bind parameters, transactions, metadata", () => {
    using db = open();
    using conn = db.connect();
    const data = tableFromArrays({ id: Int32Array.from([1, 2, 3]), name: ["a", "b", null as unknown as string], v: Float64Array.from([0.5, 1.5, 2.5]) });
    conn.execute("DROP TABLE IF EXISTS people");
    expect(conn.ingest(data, "people", { mode: "create" })).toBe(3);
    conn.ingest(data, "people", { mode: "append" });
    expect(conn.query("SELECT count(*) AS n, count(name) AS named, sum(v) AS s FROM people").toArray()[0]!.toJSON()).toEqual({ n: 6n, named: 4n, s: 9 });
    const found = conn.query("SELECT name FROM people WHERE id = $1 ORDER BY name", tableFromArrays({ p: Int32Array.of(2) }));
    expect([...found.getChild("name")!]).toEqual(["b", "b"]);
    conn.autocommit = false;
    conn.execute("DELETE FROM people");
    conn.rollback();
    conn.autocommit = true;
    expect(conn.query("SELECT count(*) AS n FROM people").getChild("n")!.get(0)).toBe(6n);
    expect(conn.getTableSchema("people").fields.map((f) => f.name)).toEqual(["id", "name", "v"]);
    expect(JSON.stringify(conn.getObjects({ depth: "tables", tableName: "people" }).toArray())).toContain('"people"');
    expect([...conn.getTableTypes().getChild("table_type")!]).toContain("table");
  });

  test("errors carry SQLSTATE and the driver's details, are released once, and the connection goes on", () => {
    using db = open();
    using conn = db.connect();
    const before = native.abd_adbc_errors_released();
    let error: AdbcError | null = null;
    try {
      conn.query("SELECT * FROM no_such_table");
    } catch (e) {
      error = e as AdbcError;
    }
    expect(error).toBeInstanceOf(AdbcError);
    expect(error!.sqlstate).toBe("42P01");
    expect(error!.message).toContain("no_such_table");
    expect(error!.details.size).toBeGreaterThan(0);
    expect(native.abd_adbc_errors_released() - before).toBe(1);
    expect(conn.query("SELECT 7 AS x").getChild("x")!.get(0)).toBe(7);
  });

  test("an error in the middle of a result stream carries SQLSTATE and details; the stream's error is not released here", async () => {
    using db = open();
    using conn = db.connect();
    const sql = "SELECT CASE WHEN g < 900000 THEN g ELSE 1 / (g - g) END AS v, repeat('x', 100) AS pad FROM generate_series(1, 1000000) AS g";
    const ours = native.abd_adbc_errors_released();
    for (const async of [false, true]) {
      let rows = 0;
      let error: unknown = null;
      try {
        if (async) for await (const batch of conn.recordBatches(sql, { async: true })) rows += batch.numRows;
        else for (const batch of conn.recordBatches(sql)) rows += batch.numRows;
      } catch (caught) {
        error = caught;
      }
      // Batches came before the failure: it is get_next's, not ExecuteQuery's.
      expect(rows).toBeGreaterThan(0);
      expect(error).toBeInstanceOf(AdbcError);
      const e = error as AdbcError;
      expect(e.message).toStartWith("get_next: ");
      expect(e.message).toContain("division by zero");
      expect(e.sqlstate).toBe("22012");
      expect(e.errno).toBe(Errno.EIO);
      expect(new TextDecoder().decode(e.details.get("PG_DIAG_SQLSTATE"))).toBe("22012");
      expect(e.cause).toBeInstanceOf(StreamError);
    }
    // The driver owns a stream's AdbcError and released it with the stream.
    expect(native.abd_adbc_errors_released() - ours).toBe(0);
    expect(conn.query("SELECT 9 AS x").getChild("x")!.get(0)).toBe(9);
  });

  test("an async query equals the sync one", async () => {
    using db = open();
    using conn = db.connect();
    const sql = "SELECT g, g * 2 AS h FROM generate_series(1, 100000) AS g";
    const a = await conn.query(sql, undefined, { async: true });
    expect(a.numRows).toBe(100000);
    expect(a.getChild("h")!.get(99999)).toBe(200000);
  });

  test("cancel() from the JS thread stops a query running in the background", async () => {
    using db = open();
    using conn = db.connect();
    using stmt = conn.statement().setSqlQuery("SELECT pg_sleep(30)");
    const running = stmt.executeQuery({ async: true });
    let settled = false;
    const outcome = running.then(() => "finished", (error: unknown) => error).finally(() => (settled = true));
    // Cancel until the query is seen to stop (a cancel sent before the
    // server started it has nothing to stop).
    for (let i = 0; i < 200 && !settled; i++) {
      await Bun.sleep(50);
      if (!settled) stmt.cancel();
    }
    // PostgreSQL's driver streams results: the cancel surfaces in get_next,
    // as the driver's AdbcError (SQLSTATE query_canceled).
    const error = await outcome;
    expect(error).toBeInstanceOf(AdbcError);
    expect((error as AdbcError).errno).toBe(Errno.ECANCELED);
    expect((error as AdbcError).sqlstate).toBe("57014");
    expect((error as AdbcError).message).toContain("canceling statement due to user request");
    expect((error as AdbcError).cause).toBeInstanceOf(StreamError);
    stmt.setSqlQuery("SELECT 8 AS x");
    expect(stmt.executeQuery().getChild("x")!.get(0)).toBe(8);
  }, 30_000);
});
