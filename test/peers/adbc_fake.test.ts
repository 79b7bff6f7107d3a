/**
 * The ADBC loader and error path against a fake driver
 * (test/fixtures/fake_adbc.c) that counts what it allocates and every
 * error it releases: the 1.1.0 -> 1.0.0 fallback, a driver that refuses
 * every revision, a function table missing ExecuteQuery, a library that is
 * no driver; errors with their details (1.1.0) or vendor code (1.0.0),
 * each released exactly once by the driver's own count; a result stream
 * whose get_next fails, with the AdbcError the stream keeps.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { dlopen, FFIType, ptr } from "bun:ffi";
import { tableFromArrays } from "apache-arrow";
import { AdbcError, Database } from "../../ts/adbc.ts";
import { StreamError } from "../../ts/index.ts";
import { native } from "../../ts/core/ffi/library.ts";
import { fixturePath } from "../helpers/fixtures.ts";
import { expectSettled } from "../helpers/settled.ts";

const path = fixturePath("fake_adbc");
const fake = dlopen(path, {
  fake_adbc_error_releases: { args: [], returns: FFIType.i64 },
  fake_adbc_live: { args: [], returns: FFIType.i64 },
  fake_adbc_bound_address: { args: [], returns: FFIType.u64 },
  fake_adbc_bound_rows: { args: [], returns: FFIType.i64 },
}).symbols;
const releases = () => Number(fake.fake_adbc_error_releases());
const live = () => Number(fake.fake_adbc_live());

afterEach(async () => {
  expect(live()).toBe(0);
  await expectSettled();
});

function failure(body: () => unknown): unknown {
  try {
    body();
  } catch (error) {
    return error;
  }
  throw new Error("expected a failure");
}

describe("ADBC loader and errors against a fake driver", () => {
  test("a 1.1.0 driver: the error's message, SQLSTATE and two details, released once", () => {
    const before = releases();
    {
      using db = new Database({ driver: path });
      expect(db.driverVersion).toBe("1.1.0");
      using conn = db.connect();
      const error = failure(() => conn.query("SELECT 1")) as AdbcError;
      expect(error).toBeInstanceOf(AdbcError);
      expect(error.adbcStatus).toBe("invalid_argument");
      expect(error.message).toBe("StatementExecuteQuery: fake: execution failed");
      expect(error.sqlstate).toBe("HY000");
      expect(error.vendorCode).toBeNull();
      expect([...error.details.keys()]).toEqual(["fake.key", "fake.bytes"]);
      expect(new TextDecoder().decode(error.details.get("fake.key"))).toBe("value");
      expect([...error.details.get("fake.bytes")!]).toEqual([0, 1, 255]);
      expect(releases() - before).toBe(1);
      expect(live()).toBeGreaterThan(0);
    }
    // Statement, connection, database and driver: each released once.
    expect(live()).toBe(0);
  });

  test("a driver that refuses 1.1.0 is initialized at 1.0.0; its errors carry the vendor code and no details", () => {
    const before = releases();
    using db = new Database({ driver: path, entrypoint: "FakeInitV100" });
    expect(db.driverVersion).toBe("1.0.0");
    using conn = db.connect();
    const error = failure(() => conn.query("SELECT 1")) as AdbcError;
    expect(error.vendorCode).toBe(42);
    expect(error.details.size).toBe(0);
    // The refusal of 1.1.0 and the failed query: two errors, each released once.
    expect(releases() - before).toBe(2);
    // A 1.1.0 function the driver does not have is NOT_IMPLEMENTED, typed.
    expect(failure(() => conn.cancel())).toMatchObject({ adbcStatus: "not_implemented" });
    expect(failure(() => conn.getTableTypes())).toMatchObject({ adbcStatus: "not_implemented" });
  });

  test("a driver that refuses every revision, or leaves out ExecuteQuery, is refused with the path and the reason", () => {
    const before = releases();
    expect(failure(() => new Database({ driver: path, entrypoint: "FakeInitRefuse" }))).toMatchObject({
      code: "callback_error", message: expect.stringContaining(`${path}: FakeInitRefuse refused revision 1.1.0 (ADBC status 5: fake: refuses every revision)`),
    });
    expect(releases() - before).toBe(1);
    expect(failure(() => new Database({ driver: path, entrypoint: "FakeInitIncomplete" }))).toMatchObject({
      code: "unsupported", message: expect.stringContaining("has no StatementExecuteQuery"),
    });
    expect(failure(() => new Database({ driver: path, entrypoint: "NoSuchInit" }))).toMatchObject({
      code: "invalid_argument", message: expect.stringContaining("exports no entry point NoSuchInit"),
    });
  });

  test("closing a database closes its connections and statements first, each once", () => {
    const db = new Database({ driver: path });
    const a = db.connect();
    const b = db.connect();
    const s = a.statement();
    expect(live()).toBe(5); // driver, database, two connections, statement
    db.close();
    expect([db.closed, a.closed, b.closed, s.closed]).toEqual([true, true, true, true]);
    expect(live()).toBe(0);
    s.close();
    a.close();
    db.close();
    expect(live()).toBe(0);
  });

  test("a get_next that fails mid-stream: the stream's AdbcError (ErrorFromArrayStream), read once, released once by the stream", async () => {
    const ours = native.abd_adbc_errors_released();
    const before = releases();
    {
      using db = new Database({ driver: path, entrypoint: "FakeInitStreamError" });
      using conn = db.connect();
      const forms: [string, () => unknown][] = [
        ["query", () => conn.query("SELECT 1")],
        ["recordBatches", () => [...conn.recordBatches("SELECT 1")]],
        ["query async", () => conn.query("SELECT 1", undefined, { async: true })],
        ["recordBatches async", async () => {
          for await (const batch of conn.recordBatches("SELECT 1", { async: true })) void batch;
        }],
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
        expect(e.message).toBe("get_next: fake: the stream broke");
        expect(e.adbcStatus).toBe("invalid_state");
        expect(e.sqlstate).toBe("22012");
        expect(e.errno).toBe(5);
        expect([...e.details.keys()]).toEqual(["fake.key", "fake.bytes"]);
        expect(e.cause).toBeInstanceOf(StreamError);
      }
      // Each stream released its error once; this library released none of them.
      expect(releases() - before).toBe(4);
      expect(native.abd_adbc_errors_released() - ours).toBe(0);
    }
  });

  test("bound parameters reach the driver at their JS addresses: the driver reads the Table's own buffer", () => {
    using db = new Database({ driver: path });
    using conn = db.connect();
    using stmt = conn.statement().setSqlQuery("INSERT INTO t VALUES (?)");
    const values = Float64Array.from({ length: 4096 }, (_, i) => i * 0.5);
    const table = tableFromArrays({ v: values });
    stmt.bind(table);
    const column = table.getChild("v")!.data[0]!.values as Float64Array;
    expect(Number(fake.fake_adbc_bound_rows())).toBe(4096);
    expect(Number(fake.fake_adbc_bound_address())).toBe(ptr(column));
  });
});

describe("ADBC classes built from outside", () => {
  test("Connection, Statement and AdbcHandle refuse construction with a typed error before any native call", async () => {
    const { Connection, Statement, AdbcHandle } = await import("../../ts/adbc.ts");
    for (const cls of [Connection, Statement, AdbcHandle] as unknown as (new (...args: unknown[]) => unknown)[]) {
      expect(failure(() => new cls(undefined, 1, 2, 3))).toMatchObject({ code: "invalid_argument", message: expect.stringContaining("the constructor is not public") });
    }
  });
});
