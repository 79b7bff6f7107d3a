/**
 * bun-arrow-device/adbc against DuckDB's ADBC driver (duckdb_adbc_init in
 * the libduckdb.so of the devDependency @duckdb/node-bindings-<platform>):
 * queries into apache-arrow Tables over the driver's memory, async forms,
 * parameters, ingest, metadata, options, transactions, and every kind of
 * failure as a typed error that leaves the connection usable, each
 * AdbcError released exactly once and every counter back at zero.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { resolve } from "node:path";
import { ptr } from "bun:ffi";
import { tableFromArrays, type Table } from "apache-arrow";
import { importRecordBatch, StreamError } from "../../ts/index.ts";
import { AdbcError, Connection, Database } from "../../ts/adbc.ts";
import { native } from "../../ts/core/ffi/library.ts";
import { counters } from "../helpers/leaks.ts";
import { adbcFailure, dbapiQuery, expectAdbcSettled, expectSameTable } from "../helpers/adbc.ts";

const platform = `${process.platform}-${process.arch}`;
const libduckdb = resolve(import.meta.dir, "../../node_modules/@duckdb", `node-bindings-${platform}`, "libduckdb.so");
const open = () => new Database({ driver: libduckdb, entrypoint: "duckdb_adbc_init" });

afterEach(expectAdbcSettled);

const failure = adbcFailure;

describe("DuckDB through ADBC", () => {
  test("a query returns a Table whose buffers the import holds (the driver's memory, not a copy)", () => {
    using db = open();
    expect(db.driverVersion).toBe("1.1.0");
    using conn = db.connect();
    const table = conn.query("SELECT range::BIGINT AS i, (range * 0.5)::DOUBLE AS d, 'v' || range AS s FROM range(100000)");
    expect(table.numRows).toBe(100000);
    expect(table.getChild("i")!.get(99999)).toBe(99999n);
    expect(table.getChild("d")!.get(3)).toBe(1.5);
    expect(table.getChild("s")!.get(7)).toBe("v7");
    // Zero-copy: the values are views of the imported batches, which stay
    // held (and counted) while the Table lives.
    const held = counters();
    expect(held.live_owners).toBeGreaterThan(0);
    expect(held.imported_bytes_held).toBeGreaterThanOrEqual(100000 * 8 * 2);
  });

  test("every type equals what pyarrow's adbc_driver_manager.dbapi reads from the same driver", () => {
    // 3000 rows: two of DuckDB's 2048-row batches; every column has nulls.
    const sql = `SELECT
      CASE WHEN range % 7 = 0 THEN NULL ELSE (range % 100 - 50)::TINYINT END AS i1,
      (range * 3 - 4000)::SMALLINT AS i2, (range * 100003)::INTEGER AS i4, CASE WHEN range % 5 = 0 THEN NULL ELSE range * -3000000007 END::BIGINT AS i8,
      18446744073709551615 - range::UBIGINT * 6148914 AS u8, (range / 3)::FLOAT AS f4, CASE WHEN range % 11 = 0 THEN NULL ELSE range / 7 END::DOUBLE AS f8,
      (range * 1.125)::DECIMAL(12, 3) AS dec, (range::HUGEINT * 1000000000000000000000) AS huge,
      CASE WHEN range % 3 = 0 THEN NULL ELSE 'row ' || range || ' é' END AS s, encode('b' || range)::BLOB AS b,
      DATE '2024-02-28' + range::INTEGER AS d, TIMESTAMPTZ '2024-01-02 03:04:05.123456+02' + range * INTERVAL '1 hour 1 microsecond' AS tz,
      TIMESTAMP '1969-12-31 23:59:59.999999' + range * INTERVAL '1 second' AS ts, TIME '01:02:03.000004' + range * INTERVAL '1 second' AS t,
      CASE WHEN range % 4 = 0 THEN NULL ELSE [range, NULL, -range]::INTEGER[] END AS l,
      {'a': range::INTEGER, 'b': 'x' || range} AS st, range % 2 = 0 AS flag, NULL::INTEGER AS n
    FROM range(3000) ORDER BY range`;
    using db = open();
    using conn = db.connect();
    const ours = conn.query(sql);
    const theirs = dbapiQuery({ driver: libduckdb, entrypoint: "duckdb_adbc_init", sql });
    expect(ours.numRows).toBe(3000);
    expect(ours.schema.fields.map((f) => String(f.type))).toContain("Timestamp<MICROSECOND, Etc/UTC>");
    expectSameTable(ours, theirs);
  });

  test("recordBatches holds one batch at a time and ends its stream when the loop ends", async () => {
    using db = open();
    using conn = db.connect();
    let rows = 0;
    for (const batch of conn.recordBatches("SELECT range AS i FROM range(10000)")) rows += batch.numRows;
    expect(rows).toBe(10000);
    rows = 0;
    for await (const batch of conn.recordBatches("SELECT range AS i FROM range(10000)", { async: true })) rows += batch.numRows;
    expect(rows).toBe(10000);
    // Breaking out early closes the statement and releases the stream.
    for (const batch of conn.recordBatches("SELECT range AS i FROM range(1000000)")) {
      expect(batch.numRows).toBeGreaterThan(0);
      break;
    }
    expect(conn.query("SELECT 1 AS one").numRows).toBe(1);
  });

  test("the async query runs off the JS thread and equals the sync one", async () => {
    using db = open();
    using conn = db.connect();
    const sql = "SELECT range AS i, range % 7 AS m FROM range(50000)";
    const pending = conn.query(sql, undefined, { async: true });
    expect(pending).toBeInstanceOf(Promise);
    const asyncTable = await pending;
    const syncTable = conn.query(sql);
    expect(asyncTable.numRows).toBe(50000);
    expect([...asyncTable.getChild("m")!].slice(0, 10)).toEqual([...syncTable.getChild("m")!].slice(0, 10));
  });

  test("a connection in use by a background call is refused on the JS thread with a typed error", async () => {
    using db = open();
    using conn = db.connect();
    // The background ExecuteQuery reads the bound parameters, a stream this
    // thread produces: it cannot finish before this thread yields, so the
    // connection is in use for as long as the synchronous code below runs.
    const running = conn.query("SELECT sum(range)::BIGINT + $1 AS s FROM range(1000000)", tableFromArrays({ p: BigInt64Array.of(0n) }), { async: true });
    const refused = failure(() => conn.query("SELECT 1"));
    expect((refused.error as { code: string }).code).toBe("wrong_thread");
    expect(String((refused.error as Error).message)).toContain("in use");
    expect(refused.released).toBe(0);
    // Refused by the guard itself, once, before any driver call.
    expect(native.abd_adbc_object_refused(conn.address)).toBe(1);
    expect((await running).getChild("s")!.get(0)).toBe(499999500000n);
    expect(conn.query("SELECT 2 AS two").getChild("two")!.get(0)).toBe(2);
  });

  test("parameters bind from a Table, prepared statements report their parameter schema", () => {
    using db = open();
    using conn = db.connect();
    // DuckDB binds one row of parameters per query.
    const params = tableFromArrays({ a: Int32Array.from([5]), b: Float64Array.from([0.5]) });
    const out = conn.query("SELECT $1 + 1 AS x, $2 * 2 AS y", params);
    expect([...out.getChild("x")!]).toEqual([6]);
    expect([...out.getChild("y")!]).toEqual([1]);
    using stmt = conn.prepare("SELECT $1::INTEGER AS p");
    expect(stmt.parameterSchema().fields.length).toBe(1);
  });

  test("ingest creates, appends, replaces and create_appends; metadata reads back as Tables", () => {
    using db = open();
    using conn = db.connect();
    const data = tableFromArrays({ a: Int32Array.from([1, 2, 3]), b: ["x", "y", "z"] });
    expect(conn.ingest(data, "t", { mode: "create" })).toBe(3);
    expect(conn.ingest(data, "t", { mode: "append" })).toBe(3);
    expect(conn.query("SELECT count(*) AS n FROM t").getChild("n")!.get(0)).toBe(6n);
    conn.ingest(data, "t", { mode: "replace" });
    expect(conn.query("SELECT count(*) AS n FROM t").getChild("n")!.get(0)).toBe(3n);
    conn.ingest(data, "t", { mode: "create_append" });
    conn.ingest(data, "u", { mode: "create_append" });
    expect(conn.query("SELECT count(*) AS n FROM t").getChild("n")!.get(0)).toBe(6n);
    expect(conn.getTableSchema("t").fields.map((f) => `${f.name}:${f.type}`)).toEqual(["a:Int32", "b:Utf8"]);
    expect([...conn.getTableTypes().getChild("table_type")!]).toContain("BASE TABLE");
    expect(conn.getInfo().numRows).toBeGreaterThan(0);
    const objects = conn.getObjects({ depth: "tables" });
    expect(objects.numRows).toBeGreaterThan(0);
    expect(JSON.stringify(objects.toArray())).toContain('"t"');
  });

  test("transactions: autocommit off, rollback undoes, commit keeps", () => {
    using db = open();
    using conn = db.connect();
    conn.execute("CREATE TABLE k (v INTEGER)");
    conn.autocommit = false;
    conn.execute("INSERT INTO k VALUES (1)");
    conn.rollback();
    expect(conn.query("SELECT count(*) AS n FROM k").getChild("n")!.get(0)).toBe(0n);
    conn.execute("INSERT INTO k VALUES (2)");
    conn.commit();
    conn.autocommit = true;
    expect(conn.query("SELECT count(*) AS n FROM k").getChild("n")!.get(0)).toBe(1n);
  });
});

describe("DuckDB through ADBC: failures", () => {
  test("bad SQL: an AdbcError with the driver's message, released once; the connection still works", () => {
    using db = open();
    using conn = db.connect();
    const { error, released } = failure(() => conn.query("SELEC 1"));
    expect(error).toBeInstanceOf(AdbcError);
    expect((error as AdbcError).code).toBe("callback_error");
    expect((error as AdbcError).message).toContain("syntax error");
    expect(released).toBe(1);
    expect(conn.query("SELECT 3 AS x").getChild("x")!.get(0)).toBe(3);
  });

  test("a wrong parameter count and a bound batch of the wrong schema are AdbcErrors", () => {
    using db = open();
    using conn = db.connect();
    const one = tableFromArrays({ a: Int32Array.from([1]) });
    const count = failure(() => conn.query("SELECT $1 + $2 AS x", one));
    expect(count.error).toBeInstanceOf(AdbcError);
    expect(count.released).toBe(1);
    conn.execute("CREATE TABLE w (a INTEGER)");
    const wrong = tableFromArrays({ z: ["not", "ints"], y: Float64Array.from([1, 2]) });
    const schema = failure(() => conn.ingest(wrong, "w", { mode: "append" }));
    expect(schema.error).toBeInstanceOf(AdbcError);
    expect(conn.query("SELECT count(*) AS n FROM w").getChild("n")!.get(0)).toBe(0n);
  });

  test("a runtime error in the middle of a result stream is the driver's AdbcError, with its details, on every read form", async () => {
    using db = open();
    using conn = db.connect();
    // One thread: the failing row comes after the batches before it.
    conn.execute("SET threads = 1");
    const sql = "SELECT CASE WHEN range < 300000 THEN range::VARCHAR ELSE 'x' END::INTEGER AS v FROM range(400000)";
    const ours = native.abd_adbc_errors_released();
    let rows = 0;
    const forms: [string, () => unknown][] = [
      ["recordBatches", () => {
        for (const batch of conn.recordBatches(sql)) rows += batch.numRows;
      }],
      ["recordBatches async", async () => {
        for await (const batch of conn.recordBatches(sql, { async: true })) void batch;
      }],
      ["query", () => conn.query(sql)],
      ["query async", () => conn.query(sql, undefined, { async: true })],
    ];
    for (const [form, run] of forms) {
      let error: unknown = null;
      try {
        await run();
      } catch (caught) {
        error = caught;
      }
      expect({ form, error }).toMatchObject({ form, error: expect.any(AdbcError) });
      const e = error as AdbcError;
      expect(e.message).toStartWith("get_next: Conversion Error: Could not convert string 'x' to INT32");
      expect(new TextDecoder().decode(e.details.get("duckdb:error_type"))).toBe("Conversion");
      expect(e.errno).toBeGreaterThan(0);
      expect(e.cause).toBeInstanceOf(StreamError);
    }
    expect(rows).toBeGreaterThan(0);
    // The stream owns its AdbcError: released with the stream, not here.
    expect(native.abd_adbc_errors_released() - ours).toBe(0);
    expect(conn.query("SELECT 5 AS x").getChild("x")!.get(0)).toBe(5);
  });

  test("a function the driver does not implement: AdbcError not_implemented", () => {
    using db = open();
    using conn = db.connect();
    using stmt = conn.statement().setSqlQuery("SELECT 1");
    const { error } = failure(() => stmt.executePartitions());
    expect(error).toBeInstanceOf(AdbcError);
    expect((error as AdbcError).adbcStatus).toBe("not_implemented");
    expect(conn.query("SELECT 4 AS x").getChild("x")!.get(0)).toBe(4);
  });

  test("a closed connection, database or statement refuses calls with a ReleasedError", () => {
    const db = open();
    const conn = db.connect();
    const stmt = conn.statement();
    db.close();
    expect(stmt.closed && conn.closed && db.closed).toBe(true);
    expect(failure(() => conn.query("SELECT 1")).error).toMatchObject({ code: "released" });
    expect(failure(() => stmt.setSqlQuery("SELECT 1")).error).toMatchObject({ code: "released" });
    expect(failure(() => db.connect()).error).toMatchObject({ code: "released" });
    db.close();
    conn.close();
  });

  test("a library that is not a driver, and a missing one, name the path and what is missing", () => {
    expect(failure(() => new Database({ driver: "libc.so.6" })).error).toMatchObject({ code: "invalid_argument", message: expect.stringContaining("no entry point AdbcDriverInit") });
    expect(failure(() => new Database({ driver: "/nonexistent/libadbc_x.so" })).error).toMatchObject({ code: "invalid_argument", message: expect.stringContaining("/nonexistent/libadbc_x.so") });
  });

  test("bad arguments are refused before any native call", () => {
    using db = open();
    using conn = db.connect();
    for (const bad of [null, 1, NaN, {}, new Uint8Array(2)]) {
      expect(failure(() => conn.query(bad as never)).error).toMatchObject({ code: "invalid_argument" });
    }
    expect(failure(() => conn.query("SELECT 1\0")).error).toMatchObject({ code: "invalid_argument" });
    expect(failure(() => conn.ingest(tableFromArrays({ a: Int32Array.of(1) }), "t", { mode: "upsert" as never })).error).toMatchObject({ code: "invalid_argument" });
    expect(failure(() => conn.setOption("k", Infinity)).error).toMatchObject({ code: "invalid_argument" });
    expect(failure(() => new Database(null as never)).error).toMatchObject({ code: "invalid_argument" });
  });
});

describe("DuckDB through ADBC: zero copy and threads", () => {
  test("each column of the Table views the very buffer the driver's ArrowArray points to", () => {
    using db = open();
    using conn = db.connect();
    using stmt = conn.statement().setSqlQuery("SELECT range::BIGINT AS i, (range * 0.25)::DOUBLE AS d FROM range(5000)");
    using stream = stmt.executeStream();
    const imported = stream.next()!;
    const driverAddresses = imported.root.children.map((child) => child.bufferAddress(1));
    const batch = importRecordBatch(imported);
    const viewAddresses: number[] = [0, 1].map((i) => ptr(batch.getChildAt(i)!.data[0]!.values as unknown as Float64Array));
    expect(driverAddresses.every((a) => a !== 0)).toBe(true);
    expect(viewAddresses).toEqual(driverAddresses);
    expect(batch.getChildAt(1)!.get(4)).toBe(1);
    imported.dispose();
  });

  test("a Worker opens its own database and connection and reads a Table there", async () => {
    const worker = new Worker(resolve(import.meta.dir, "../fixtures/workers/adbc_query.ts"));
    const reply = await new Promise<Record<string, unknown>>((done) => {
      worker.onmessage = (event) => done(event.data as Record<string, unknown>);
      worker.postMessage({ driver: libduckdb });
    });
    worker.terminate();
    expect(reply).toEqual({ rows: 1000, sum: 499500, closed: true });
  });

  test("a shared connection in use on one thread is refused on a Worker with a typed error, then taken in turn", async () => {
    using db = open();
    const conn = db.connect();
    const shared = conn.share();
    const worker = new Worker(resolve(import.meta.dir, "../fixtures/workers/adbc_borrow.ts"));
    const inbox: Record<string, unknown>[] = [];
    const waiters: ((message: Record<string, unknown>) => void)[] = [];
    worker.onmessage = (event) => {
      const waiter = waiters.shift();
      if (waiter) waiter(event.data as Record<string, unknown>);
      else inbox.push(event.data as Record<string, unknown>);
    };
    const next = () => (inbox.length > 0 ? Promise.resolve(inbox.shift()!) : new Promise<Record<string, unknown>>((done) => waiters.push(done)));
    const flag = new Int32Array(new SharedArrayBuffer(4));
    let running: Promise<Table> | undefined;
    try {
      worker.postMessage({ shared, flag });
      expect(await next()).toEqual({ borrowed: true });
      // This thread holds the connection: a background query whose bound
      // parameters this thread produces, and this thread blocks (below)
      // until the Worker has tried, so the query cannot end meanwhile.
      running = conn.query("SELECT sum(range)::BIGINT + $1 AS s FROM range(1000000)", tableFromArrays({ p: BigInt64Array.of(0n) }), { async: true });
      worker.postMessage({ op: "query" });
      // "not-equal": the Worker had tried before this thread got to wait.
      expect(["ok", "not-equal"]).toContain(Atomics.wait(flag, 0, 0, 30_000));
      expect(Atomics.load(flag, 0)).toBe(1);
      expect(await next()).toMatchObject({ name: "WrongThreadError", code: "wrong_thread", message: expect.stringContaining("in use by another thread") });
      expect((await running).getChild("s")!.get(0)).toBe(499999500000n);
      // The use ended: the Worker may use it now, and this thread after it.
      worker.postMessage({ op: "query" });
      expect(await next()).toEqual({ value: 42 });
      expect(conn.query("SELECT 7 AS x").getChild("x")!.get(0)).toBe(7);
      worker.postMessage({ op: "cancel" });
      expect(await next()).toEqual({ cancelled: true });
      // The owner closes it: the borrower's calls are refused, typed,
      // cancel (which skips the guard) included.
      conn.close();
      worker.postMessage({ op: "query" });
      expect(await next()).toMatchObject({ name: "ReleasedError", code: "released" });
      worker.postMessage({ op: "cancel" });
      expect(await next()).toMatchObject({ name: "ReleasedError", code: "released" });
      worker.postMessage({ op: "close" });
      expect(await next()).toEqual({ closed: true });
      // A closed connection cannot be borrowed again; nor a made-up one.
      expect(failure(() => Connection.borrow(shared)).error).toMatchObject({ code: "released" });
      expect(failure(() => Connection.borrow({ ...shared, connection: 4096 })).error).toMatchObject({ code: "released" });
      expect(failure(() => Connection.borrow({ ...shared, connection: 0.5 })).error).toMatchObject({ code: "invalid_argument" });
      expect(failure(() => Connection.borrow(null as never)).error).toMatchObject({ code: "invalid_argument" });
    } finally {
      // A failure above may leave the background query running: it ends
      // (and releases its parameters) before the connection closes.
      await running?.catch(() => undefined);
      conn.close();
      worker.terminate();
    }
  });
});
