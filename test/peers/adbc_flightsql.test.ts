/**
 * bun-arrow-device/adbc against the Flight SQL driver (the
 * adbc-driver-flightsql wheel's library) and arrow-go's SQLite-backed
 * example server, built by setup.sh --test and started on 127.0.0.1 for
 * this file: queries, parameters, partitions read back through
 * ReadPartition, a server error with its details, and a server that
 * goes away in the middle of a result.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { tableFromArrays } from "apache-arrow";
import { AdbcError, Database } from "../../ts/adbc.ts";
import { StreamError } from "../../ts/index.ts";
import { Errno } from "../../ts/raw.ts";
import { native } from "../../ts/core/ffi/library.ts";
import { startFlightSql, type FlightSqlServer } from "../helpers/flightsql.ts";
import { adbcDriver, dbapiQuery, expectAdbcSettled, expectSameTable } from "../helpers/adbc.ts";

let server: FlightSqlServer;
beforeAll(async () => {
  server = await startFlightSql();
});
afterAll(() => server?.stop());

afterEach(expectAdbcSettled);

const open = () => new Database({ driver: adbcDriver("flightsql"), options: { uri: server.uri } });
/** The example server's intTable, as its source creates it. */
const intTable = [
  { id: 1n, keyName: "one", value: 1n, foreignId: 1n },
  { id: 2n, keyName: "zero", value: 0n, foreignId: 1n },
  { id: 3n, keyName: "negative one", value: -1n, foreignId: 1n },
  { id: 4n, keyName: null, value: null, foreignId: null },
];

describe("Flight SQL through ADBC", () => {
  test("a query over gRPC returns the server's rows", () => {
    using db = open();
    using conn = db.connect();
    const table = conn.query("SELECT * FROM intTable ORDER BY id");
    expect(table.schema.fields.map((f) => `${f.name}:${f.type}`)).toEqual(["id:Int64", "keyName:Utf8", "value:Int64", "foreignId:Int64"]);
    expect(table.toArray().map((r) => r.toJSON())).toEqual(intTable);
  });

  test("results equal what pyarrow's adbc_driver_manager.dbapi reads through the same driver and server", () => {
    using db = open();
    using conn = db.connect();
    // The server's SQLite types it computes: integer, real, text.
    const sql = `WITH RECURSIVE r(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM r WHERE g < 3000)
      SELECT g * -3000000007 AS i, g / 7.0 AS f, 'row ' || g || ' é' AS s FROM r`;
    for (const query of [sql, "SELECT * FROM intTable ORDER BY id"]) {
      const ours = conn.query(query);
      expect(ours.numRows).toBeGreaterThan(0);
      expectSameTable(ours, dbapiQuery({ driver: adbcDriver("flightsql"), dbKwargs: { uri: server.uri }, sql: query }));
    }
  });

  test("parameters bind to the prepared statement", () => {
    using db = open();
    using conn = db.connect();
    const out = conn.query("SELECT * FROM intTable WHERE id = ?", tableFromArrays({ p: BigInt64Array.of(2n) }));
    expect(out.toArray().map((r) => r.toJSON())).toEqual([intTable[1]]);
  });

  test("ExecutePartitions hands out descriptors that ReadPartition reads, on another connection too", () => {
    using db = open();
    using conn = db.connect();
    using stmt = conn.statement().setSqlQuery("SELECT * FROM intTable ORDER BY id");
    const { partitions } = stmt.executePartitions();
    expect(partitions.length).toBeGreaterThanOrEqual(1);
    using other = db.connect();
    const rows = partitions.flatMap((p) => other.readPartition(p).toArray().map((r) => r.toJSON()));
    expect(rows).toEqual(intTable);
  });

  test("a server error is an AdbcError with the driver's details; the connection goes on", async () => {
    using db = open();
    using conn = db.connect();
    let error: AdbcError | null = null;
    try {
      conn.query("SELEC 1");
    } catch (e) {
      error = e as AdbcError;
    }
    expect(error).toBeInstanceOf(AdbcError);
    expect(error!.message).toContain("syntax error");
    expect(error!.details.size).toBeGreaterThan(0);
    expect((await conn.query("SELECT count(*) AS n FROM intTable", undefined, { async: true })).getChild("n")!.get(0)).toBe(4n);
  });

  test("a server that goes away mid-result: get_next's AdbcError with the gRPC code, the stream's to release", async () => {
    const doomed = await startFlightSql();
    try {
      using db = new Database({ driver: adbcDriver("flightsql"), options: { uri: doomed.uri } });
      using conn = db.connect();
      const ours = native.abd_adbc_errors_released();
      const sql = "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 3000000) SELECT i, 'padding' AS s FROM r";
      let rows = 0;
      let error: unknown = null;
      try {
        for await (const batch of conn.recordBatches(sql, { async: true })) {
          if (rows === 0) doomed.stop();
          rows += batch.numRows;
        }
      } catch (caught) {
        error = caught;
      }
      expect(rows).toBeGreaterThan(0);
      expect(rows).toBeLessThan(3000000);
      expect(error).toBeInstanceOf(AdbcError);
      const e = error as AdbcError;
      expect(e.message).toStartWith("get_next: [FlightSQL]");
      expect(e.message).toContain("Unavailable");
      expect(e.adbcStatus).toBe("io");
      expect(e.vendorCode).toBe(14); // gRPC UNAVAILABLE
      expect(e.errno).toBe(Errno.EIO);
      expect(e.cause).toBeInstanceOf(StreamError);
      expect(native.abd_adbc_errors_released() - ours).toBe(0);
    } finally {
      doomed.stop();
    }
  }, 60_000);
});
