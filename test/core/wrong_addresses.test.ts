/**
 * Wrong addresses get typed errors, never a crash: a swapped schema/array
 * pair, a device stream where an array stream is expected (and the
 * reverse), a released or zeroed struct, and addresses of no struct at all
 * (8, 4096, `{ address: 16 }`, random bytes). Every call that takes a C
 * struct by address checks it with the fault-safe probe (zig/validate/probe.zig)
 * before reading it. The calls run in a child process
 * (test/helpers/wrong_addresses_child.ts), so that a crash fails the test
 * and names the call.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { ptr } from "bun:ffi";
import { Table, makeVector } from "apache-arrow";
import { exportArray, importRecordBatch } from "../../ts/index.ts";
import { InvalidArgumentError, ReleasedError } from "../../ts/core/errors.ts";
import { ImportedArray } from "../../ts/raw.ts";
import { CSchema, structPointer } from "../../ts/raw.ts";
import { nonZeroCounters } from "../helpers/leaks.ts";
import { collectUntil } from "../helpers/gc.ts";
import { testRoot } from "../helpers/paths.ts";
import { withCode } from "../helpers/errors.ts";

type Line = { name: string; outcome: "threw" | "returned"; error?: string; message?: string };

const child = Bun.spawnSync([process.execPath, join(testRoot, "helpers", "wrong_addresses_child.ts")], {
  cwd: join(testRoot, ".."),
  stdout: "pipe",
  stderr: "pipe",
});
const lines: Line[] = child.stdout.toString().split("\n").filter(Boolean).map((l) => JSON.parse(l) as Line);
const byName = new Map(lines.map((l) => [l.name, l]));

describe("wrong addresses, in a child process", () => {
  test("the process survives every call (the call that crashed is named)", () => {
    const lastTried = child.stderr.toString().split("\n").filter((l) => l.startsWith("calling ")).pop();
    expect({ exitCode: child.exitCode, lastTried: child.exitCode === 0 ? null : lastTried }).toEqual({ exitCode: 0, lastTried: null });
    expect(lines.length).toBeGreaterThan(100);
  });

  test("every wrong address gets InvalidArgumentError, or ReleasedError for a released or zeroed struct", () => {
    const wrong = lines.filter((l) => {
      const zeroed = l.name.endsWith("<- zeroed memory");
      // A zeroed struct is a fine destination or view (X.at, moveTo).
      if (zeroed && /^(CSchema|CArray|CDeviceArray)\.at|moveTo/.test(l.name)) return l.outcome !== "returned";
      const releasedSchema = l.name.endsWith("<- a released schema");
      if (releasedSchema && l.name.startsWith("CSchema.at")) return l.outcome !== "returned";
      if (l.outcome !== "threw") return true;
      // Where a schema is expected, or where the probe cannot tell (a
      // handler's release member lies where a schema's flags do).
      const releasedKind = releasedSchema && /schema|exportAsyncStream/.test(l.name.split(" <- ")[0]);
      if (zeroed || releasedKind || l.name.startsWith("released ")) return l.error !== "ReleasedError" || !l.message!.includes("is released (its release callback is NULL)");
      // A released schema where another struct is expected: its format
      // pointer still names it.
      return l.error !== "InvalidArgumentError";
    });
    expect(wrong.map((l) => `${l.name}: ${l.outcome} ${l.error ?? ""} ${l.message ?? ""}`)).toEqual([]);
  });

  test("a released struct of the kind expected is ReleasedError", () => {
    for (const name of ["released schema -> importRecordBatch", "released device array -> ImportedArray.fromDeviceArray", "released array stream -> ImportedStream.fromArrayStream", "released device stream -> ImportedStream.fromDeviceArrayStream"]) {
      expect(`${name}: ${byName.get(name)?.error}`).toBe(`${name}: ReleasedError`);
    }
  });

  test("a zeroed struct is a fine view or destination", () => {
    expect(byName.get("CSchema.at <- zeroed memory")).toEqual({ name: "CSchema.at <- zeroed memory", outcome: "returned" });
    expect(byName.get("CSchema.at <- a released schema")?.outcome).toBe("returned");
    expect(byName.get("CArray.at <- a released schema")?.message).toContain("it looks like an ArrowSchema");
  });

  test("the message names the call, the parameter and why", () => {
    expect(byName.get("importRecordBatch schema <- 8")?.message).toBe("importRecordBatch: schemaPtr: 0x8 is not readable memory for an ArrowSchema (72 bytes); the arrayPtr given was released too (a failed import owns its structs: retry with new ones)");
    expect(byName.get("ImportedStream.fromArrayStream <- 4096")?.message).toBe("ImportedStream.fromArrayStream: stream: 0x1000 is not readable memory for an ArrowArrayStream (40 bytes)");
    expect(byName.get("importRecordBatch deviceArray <- { address: 16 }")?.message).toBe("importRecordBatch: arrayPtr: 0x10 is not readable memory for an ArrowDeviceArray (128 bytes); the schemaPtr given was released too (a failed import owns its structs: retry with new ones)");
    expect(byName.get("CSchema.at <- random bytes")?.message).toMatch(/^CSchema\.at: address: 0x[0-9a-f]+ is not a live ArrowSchema: /);
  });

  test("a swapped schema and array are named as such", () => {
    for (const name of [
      "importRecordBatch(array, schema)", "importVector(array, schema)", "ImportedArray.fromArray(array, schema)",
      "ImportedArray.fromDeviceArray(array, schema)", "relay(array, schema)", "relayArray(array, schema)",
      "consumeNatively(array, schema)", "copyArrayToDevice(array, schema)",
    ]) {
      const line = byName.get(name)!;
      expect(`${name}: ${line.error}`).toBe(`${name}: InvalidArgumentError`);
      expect(line.message).toContain("are the schema and the array swapped?");
    }
    expect(byName.get("importRecordBatch(array, schema)")?.message).toMatch(
      /^importRecordBatch: schemaPtr: 0x[0-9a-f]+ is not a live ArrowSchema: it looks like an ArrowArray \(its first word is 3, a length, not a format string\)/);
    expect(byName.get("importRecordBatch(schema, schema)")?.message).toContain('arrayPtr: 0x');
    expect(byName.get("importRecordBatch(schema, schema)")?.message).toContain('it looks like an ArrowSchema (its first word points to the format "+s")');
  });

  test("one of this library's array streams is refused as an async handler, untouched", () => {
    const line = byName.get("exportAsyncStream(array stream as handler)")!;
    expect(line.error).toBe("InvalidArgumentError");
    expect(line.message).toMatch(/^exportAsyncStream: handler: 0x[0-9a-f]+ is not a live ArrowAsyncDeviceStreamHandler: it looks like an ArrowArrayStream/);
  });

  test("a released array or device array viewed as a schema is refused: its length is no format", () => {
    for (const name of ["CSchema.at(released device array)", "CSchema.at(released array)"]) {
      expect(byName.get(name)).toEqual({ name, outcome: "threw", error: "InvalidArgumentError", message: expect.stringContaining("it is released, and its format 0x3 is not a readable NUL-terminated string") });
    }
  });

  test("a stream of the other kind is named as such", () => {
    for (const name of ["ImportedStream.fromArrayStream(device stream)", "importTable(device stream, as stream)", "deviceStreamAsArrayStream(array stream)"]) {
      const line = byName.get(name)!;
      expect(`${name}: ${line.error}`).toBe(`${name}: InvalidArgumentError`);
    }
    expect(byName.get("ImportedStream.fromArrayStream(device stream)")?.message).toContain(
      "it looks like an ArrowDeviceArrayStream (its first word is 1, a device_type, not the get_schema callback)");
    expect(byName.get("ImportedStream.fromDeviceArrayStream(array stream)")?.message).toContain(
      "it looks like an ArrowArrayStream (its first word 0x");
    expect(byName.get("arrayStreamAsDeviceStream(device stream)")?.error).toBe("InvalidArgumentError");
    expect(byName.get("importTable(array stream, as device_stream)")?.error).toBe("InvalidArgumentError");
  });
});

const batch = () => new Table({ x: makeVector(Int32Array.of(1, 2, 3)) }).batches[0];

describe("wrong addresses in this process", () => {
  test("a swapped pair is refused untouched: both structs stay live and import afterwards", async () => {
    const h = exportArray(batch());
    expect(() => importRecordBatch(h.array as never, h.schema as never)).toThrow(withCode("invalid_argument"));
    expect(CSchema.at(h.schema).released).toBe(false);
    const imported = importRecordBatch(h.schema, h.array);
    expect(imported.getChild("x")?.toArray()).toEqual(Int32Array.of(1, 2, 3));
    h.release();
    expect(await collectUntil(() => Object.keys(nonZeroCounters()).length === 0)).toBe(true);
  });

  test("a good struct paired with a wrong address is still moved in and released", () => {
    const h = exportArray(batch());
    expect(() => ImportedArray.fromDeviceArray(h.schema, 4096 as never)).toThrow(withCode("invalid_argument"));
    expect(CSchema.at(h.schema).released).toBe(true);
    h.release();
  });

  test("random bytes in a JS buffer are not a schema", () => {
    const bytes = new Uint8Array(256).map((_, i) => (i * 167 + 13) & 0xff);
    void bytes.buffer;
    const address = Number(ptr(bytes));
    expect(() => CSchema.at(structPointer("ArrowSchema", address + ((8 - (address % 8)) % 8)))).toThrow(withCode("invalid_argument"));
  });

  test("a zeroed struct moved in is ReleasedError", () => {
    const zero = new Uint8Array(256);
    void zero.buffer;
    const address = Number(ptr(zero));
    const aligned = address + ((8 - (address % 8)) % 8);
    const h = exportArray(batch());
    expect(() => importRecordBatch(aligned as never, h.array)).toThrow(withCode("released"));
    h.release();
  });
});
