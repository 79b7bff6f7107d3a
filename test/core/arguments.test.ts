/**
 * Every public function checks its arguments before any native call
 * (ts/core/args.ts): a table-driven run over every export of the entry points
 * (test/helpers/arguments_matrix.ts, in a child process so that a crash
 * fails this test instead of killing the runner), then the cases the
 * issues named: the crashes, int64 device ids, CPU device ids, what raw
 * exports refuse, a second apache-arrow instance, and messages that
 * describe a 1M-row Table instead of dumping it.
 */
import { describe, expect, test } from "bun:test";
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { read } from "bun:ffi";
import { Table, makeVector, type RecordBatch } from "apache-arrow";
import { DeviceType, exportArray, exportStream, importTable } from "../../ts/index.ts";
import { exportAsyncStream } from "../../ts/device.ts";
import { ImportedArray, ImportedStream } from "../../ts/raw.ts";
import { exportRawArray } from "../../ts/raw.ts";
import { setJsWorkSpin } from "../../ts/diagnostics.ts";
import { toDevice } from "../../ts/device.ts";
import { ArrowDeviceArrayLayout } from "../../ts/core/abi/layout.ts";
import { secretString, type CaseResult } from "../helpers/arguments_matrix.ts";
import { testRoot } from "../helpers/paths.ts";
import { withCode } from "../helpers/errors.ts";

const repoRoot = join(testRoot, "..");

type Line =
  | ({ kind: "case" } & CaseResult)
  | { kind: "valid"; name: string; error: string | null; allowed: string | null }
  | { kind: "missing"; names: string[] };

describe("every public export, every wrong kind of value", () => {
  const child = Bun.spawnSync([process.execPath, join(testRoot, "helpers", "arguments_matrix.ts")], {
    cwd: repoRoot,
    env: { ...process.env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const stderr = child.stderr.toString();
  const lines: Line[] = child.stdout.toString().split("\n").filter(Boolean).map((l) => JSON.parse(l) as Line);
  const cases = lines.filter((l): l is { kind: "case" } & CaseResult => l.kind === "case");

  test("the process survives every call (the last case tried is named on a crash)", () => {
    const lastTried = stderr.split("\n").filter((l) => l.startsWith("calling ")).pop();
    expect({ exitCode: child.exitCode, lastTried: child.exitCode === 0 ? null : lastTried }).toEqual({ exitCode: 0, lastTried: null });
    // Thousands of cases: 17 exports named by the issue grew to every export.
    expect(cases.length).toBeGreaterThan(2000);
  });

  test("every export is in the table (a new export must be added to it)", () => {
    const missing = lines.find((l) => l.kind === "missing");
    expect(missing).toEqual({ kind: "missing", names: [] });
  });

  test("each export works with the table's valid arguments (so the bad ones are what fails)", () => {
    const broken = lines.filter((l) => l.kind === "valid" && l.error !== null && l.error !== l.allowed);
    expect(broken).toEqual([]);
    expect(lines.filter((l) => l.kind === "valid").length).toBeGreaterThan(60);
  });

  test("each wrong value gets a typed error naming the function, with a short message that never echoes the value", () => {
    // A method (`Class#method`) is named "Class.method", or by the function it is ("reexport: ...").
    const names = (name: string) => (name.includes("#") ? [name.replace("#", "."), `${name.split("#")[1]}:`] : [name]);
    const wrong = cases.filter((c) => !c.accepted).filter((c) =>
      c.outcome !== "threw" || !c.typed || (c.message ?? "").length > 300 || !names(c.name).some((n) => (c.message ?? "").includes(n)) || (c.message ?? "").includes(secretString));
    expect(wrong.map((c) => `${c.name} #${c.param} ${c.bad}: ${c.outcome} ${c.errorName ?? ""} ${c.message ?? ""}`)).toEqual([]);
  });

  test("values a parameter legitimately takes never give an untyped error", () => {
    const untyped = cases.filter((c) => c.accepted && c.outcome === "threw" && !c.typed);
    expect(untyped.map((c) => `${c.name} #${c.param} ${c.bad}: ${c.errorName} ${c.message}`)).toEqual([]);
  });
});

const batchOf = (values: number[]): RecordBatch => new Table({ x: makeVector(Int32Array.from(values)) }).batches[0];
const rawNode = () => ({ format: "i", length: 2, buffers: [null, Int32Array.of(7, 8)] });

describe("the crashes the issue found", () => {
  test("exportAsyncStream(table, undefined) is refused before any native call", () => {
    expect(() => exportAsyncStream(new Table({ x: makeVector(Int32Array.of(1)) }), undefined as never)).toThrow(withCode("invalid_argument"));
    expect(() => exportAsyncStream([], undefined as never)).toThrow("exportAsyncStream: handler must be a non-zero, 8-byte aligned address");
  });

  test("setJsWorkSpin refuses Infinity, NaN, negatives and fractions (and the library clamps what it gets)", () => {
    for (const bad of [Infinity, Number.NaN, -1, 1.5, 2e9]) expect(() => setJsWorkSpin(bad)).toThrow(withCode("invalid_argument"));
    const previous = setJsWorkSpin(1000);
    expect(setJsWorkSpin(previous)).toBe(1000);
  });

  test("a typo'd option key is named", () => {
    expect(() => exportArray(batchOf([1]), { az: "array" } as never)).toThrow('exportArray: options has an unknown key "az" (known: as, field)');
  });
});

describe("device_id is an int64_t", () => {
  const big = 2 ** 32 + 5;
  for (const [label, deviceId] of [["a number", big], ["a bigint", BigInt(big)]] as const) {
    test(`2^32+5 as ${label} stays 2^32+5 in the exported struct and after import`, () => {
      const handle = exportRawArray(rawNode(), { deviceType: DeviceType.CPU, deviceId });
      expect(read.i64(handle.array, ArrowDeviceArrayLayout.fields.device_id)).toBe(BigInt(big));
      const imported = ImportedArray.fromDeviceArray(handle.schema, handle.array);
      expect(imported.deviceId).toBe(big);
      imported.dispose();
      handle.release();
    });
  }

  test("an unsafe integer or a bigint outside int64 is refused with a typed error", () => {
    expect(() => exportRawArray(rawNode(), { deviceId: 2 ** 53 + 2 })).toThrow("options.deviceId must be an int64");
    expect(() => exportRawArray(rawNode(), { deviceId: 2n ** 63n })).toThrow(withCode("invalid_argument"));
  });
});

describe("CPU imports accept any device_id", () => {
  test("the library's own exporter producing device_id 3 on the CPU is importable", () => {
    const handle = exportRawArray(rawNode(), { deviceId: 3 });
    const imported = ImportedArray.fromDeviceArray(handle.schema, handle.array);
    expect(imported.deviceId).toBe(3);
    expect(Array.from(imported.root.buffer(1) as Int32Array)).toEqual([7, 8]);
    imported.dispose();
    handle.release();
  });
});

describe("exportRawArray checks what it emits", () => {
  test("device type 0 and negative ones are refused", () => {
    for (const deviceType of [0, -1, -(2 ** 31)]) {
      expect(() => exportRawArray(rawNode(), { deviceType })).toThrow("exportRawArray: options.deviceType must be an Arrow device type");
    }
  });

  test("a sync event on a CPU array is refused", () => {
    expect(() => exportRawArray(rawNode(), { syncEvent: 4096 })).toThrow("exportRawArray: options.syncEvent must be null on a CPU array");
    expect(() => exportRawArray(rawNode(), { deviceType: DeviceType.CPU, syncEvent: 4096 })).toThrow(withCode("invalid_argument"));
  });
});

describe("a second apache-arrow instance", () => {
  test("exportStream takes batches of two apache-arrow instances in one stream (schemas compared structurally)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "arrow-twice-"));
    try {
      for (const name of ["apache-arrow", "flatbuffers", "tslib", "json-with-bigint"]) {
        cpSync(join(repoRoot, "node_modules", name), join(dir, "node_modules", name), { recursive: true, dereference: true });
      }
      const other = (await import(join(dir, "node_modules", "apache-arrow", "Arrow.node.mjs"))) as typeof import("apache-arrow");
      expect(other.Table).not.toBe(Table);
      const theirs = new other.Table({ x: other.makeVector(Int32Array.of(3, 4)) }).batches[0];
      using stream = exportStream([batchOf([1, 2]), theirs as unknown as RecordBatch], { as: "stream" });
      const table = importTable(ImportedStream.fromArrayStream(stream.stream));
      expect(table.batches.length).toBe(2);
      expect(Array.from(table.getChild("x")!.toArray() as Int32Array)).toEqual([1, 2, 3, 4]);

      // A batch that really differs is still refused, with what differs.
      const wrong = new other.Table({ y: other.makeVector(Int32Array.of(5)) }).batches[0];
      using refused = exportStream([batchOf([1]), wrong as unknown as RecordBatch], { as: "stream" });
      expect(() => importTable(ImportedStream.fromArrayStream(refused.stream))).toThrow('batch 1\'s schema differs from the stream\'s: field 0 of the root is named "y", expected "x"');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("errors describe, never dump", () => {
  const million = new Table({ x: makeVector(new Int32Array(1_000_000).map((_, i) => i)) });

  test("a 1M-row Table where a batch is expected: a short message naming the kind and the way out", () => {
    let message = "";
    try {
      exportArray(new Table([...million.batches, ...million.batches]));
    } catch (error) {
      expect(error).toEqual(withCode("invalid_argument"));
      message = (error as Error).message;
    }
    expect(message.length).toBeGreaterThan(0);
    expect(message.length).toBeLessThan(1024);
    expect(message).toBe("exportArray: a Table with 2 batches cannot be one C array; export it as a stream (exportStream) or each batch (exportBatches)");
  });

  test("the same Table where a C struct, a stream item or a device target is expected", () => {
    const messages: string[] = [];
    const attempt = (run: () => unknown) => {
      try {
        run();
      } catch (error) {
        expect(error).toEqual(withCode("invalid_argument"));
        messages.push((error as Error).message);
      }
    };
    attempt(() => ImportedArray.fromArray(million as never, null));
    attempt(() => exportStream([million as never]).release());
    attempt(() => toDevice(batchOf([1]), million as never));
    expect(messages.length).toBe(3);
    for (const message of messages) {
      expect(message.length).toBeLessThan(1024);
      expect(message).toContain("a Table");
      expect(message).not.toContain("999999");
    }
  });
});
