/**
 * The Python bridge with input that could crash it: capsules that hold
 * an address of no struct (fromPython probes every struct a capsule
 * holds before moving it), and a Table of zero batches handed to Python.
 * Each case runs in its own child process
 * (test/helpers/python_hostile_child.ts), so that a crash fails the case.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { testRoot } from "../helpers/paths.ts";

function runCase(name: string): { exitCode: number | null; line: Record<string, unknown> | null; stderr: string } {
  const child = Bun.spawnSync([process.execPath, join(testRoot, "helpers", "python_hostile_child.ts"), name], { cwd: join(testRoot, ".."), stdout: "pipe", stderr: "pipe" });
  const text = child.stdout.toString().trim();
  return { exitCode: child.exitCode, line: text ? (JSON.parse(text) as Record<string, unknown>) : null, stderr: child.exitCode === 0 ? "" : child.stderr.toString().slice(-2000) };
}

describe("the Python bridge, in a child process per case", () => {
  test("a stream capsule that holds 4096 is a PythonError naming the probe's reason", () => {
    expect(runCase("stream capsule holding 4096")).toEqual({
      exitCode: 0,
      line: { outcome: "threw", error: "PythonError", message: expect.stringContaining('__arrow_c_stream__() returned a "arrow_array_stream" capsule that holds no struct: 0x1000 is not readable memory for an ArrowArrayStream (40 bytes)') },
      stderr: "",
    });
  });

  test("a device stream capsule that holds 8 is a PythonError too", () => {
    expect(runCase("device stream capsule holding 8")).toEqual({
      exitCode: 0,
      line: { outcome: "threw", error: "PythonError", message: expect.stringContaining("0x8 is not readable memory for an ArrowDeviceArrayStream") },
      stderr: "",
    });
  });

  test("a Table of 0 batches goes to Python as an empty table with its schema", () => {
    expect(runCase("a Table of 0 batches")).toEqual({ exitCode: 0, line: { outcome: "returned", result: ["x: int32", 0] }, stderr: "" });
  });
});
