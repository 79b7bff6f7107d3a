/**
 * bun-arrow-device/adbc against the Flight SQL driver (the
 * adbc-driver-flightsql wheel's library) and arrow-go's SQLite-backed
 * example server, built by setup.sh --test and started on 127.0.0.1 for
 * this file: queries, parameters, partitions read back through
 * ReadPartition, and a server error with its details.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { tableFromArrays } from "apache-arrow";
import { AdbcError, Database } from "../../ts/adbc.ts";
import { startFlightSql, type FlightSqlServer } from "../helpers/flightsql.ts";
import { adbcDriver, expectAdbcSettled } from "../helpers/adbc.ts";

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
});
