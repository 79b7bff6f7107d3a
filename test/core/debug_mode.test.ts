/**
 * Debug mode (ARROW_DEVICE_DEBUG=1): every handle kind records where it was
 * created; the handles still alive at exit are reported on stderr with
 * their creation sites; a handle collected without dispose is reported
 * then. Runs test/helpers/debug_child.ts in a subprocess.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { testRoot } from "../helpers/paths.ts";

const child = join(testRoot, "helpers", "debug_child.ts");
const childLines = readFileSync(child, "utf8").split("\n");

/** The 1-based line of debug_child.ts that contains `snippet`. */
function lineOf(snippet: string): number {
  const index = childLines.findIndex((line) => line.includes(snippet));
  if (index < 0) throw new Error(`debug_child.ts has no line with ${snippet}`);
  return index + 1;
}

function run(mode: string, debug = "1") {
  const result = Bun.spawnSync([process.execPath, child, mode], {
    env: { ...process.env, ARROW_DEVICE_DEBUG: debug },
    stdout: "pipe",
    stderr: "pipe",
  });
  return { code: result.exitCode, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
}

/** The report's entries: kind -> creation-site text. */
function entries(stderr: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const block of stderr.split(/\n(?=- )/).slice(1)) {
    const kind = /^- (.+), created at:/.exec(block)?.[1];
    if (kind) out.set(kind, block);
  }
  return out;
}

describe("debug mode", () => {
  test("reports every live handle kind at exit, with where it was created", () => {
    const { code, stdout, stderr } = run("leak");
    expect(code).toBe(0);
    expect(stdout).toContain("live handles: 6");
    expect(stderr).toContain("[bun-arrow-device] 6 handle(s) still alive at exit:");
    const report = entries(stderr);
    expect([...report.keys()].sort()).toEqual([
      "ImportedArray", "ImportedArray.child", "ImportedArray.slice",
      "exported ArrowDeviceArray", "re-exported ArrowDeviceArray", "relayed ArrowDeviceArray",
    ]);
    // Each creation site names the line of debug_child.ts that made it.
    const sites: Record<string, string> = {
      "ImportedArray": "return ImportedArray.fromDeviceArray(",
      "ImportedArray.child": "imported.child(0)",
      "ImportedArray.slice": "imported.slice(1, 2)",
      "re-exported ArrowDeviceArray": "imported.reexport({ child: 2 })",
      "relayed ArrowDeviceArray": "return relay(",
      "exported ArrowDeviceArray": "exportArray(makeVector(",
    };
    for (const [kind, snippet] of Object.entries(sites)) expect(report.get(kind)).toContain(`debug_child.ts:${lineOf(snippet)}:`);
  });

  test("a read after dispose() names the line where it ran; without debug mode, how to learn it", () => {
    const debug = run("disposed");
    expect(debug.code).toBe(0);
    const [converted, handle] = debug.stdout.trim().split("\n");
    const where = new RegExp(`disposed at .*debug_child\\.ts:${lineOf("imported.dispose(); // the dispose site")}:\\d+`);
    expect(converted).toContain("data was converted from an ImportedArray that was disposed at ");
    expect(converted).toMatch(where);
    expect(handle).toStartWith("this imported array was disposed at ");
    expect(handle).toMatch(where);
    const plain = run("disposed", "0");
    expect(plain.code).toBe(0);
    expect(plain.stdout.trim().split("\n")).toEqual([
      expect.stringContaining("data was converted from an ImportedArray that was disposed (ARROW_DEVICE_DEBUG=1 records where), which released its memory"),
      "this imported array was disposed (ARROW_DEVICE_DEBUG=1 records where); its memory is released",
    ]);
  });

  test("reports nothing when every handle was released", () => {
    const { code, stdout, stderr } = run("clean");
    expect(code).toBe(0);
    expect(stdout).toContain("live handles: 6\nlive handles: 0");
    expect(stderr).not.toContain("still alive at exit");
  });

  test("reports an imported array collected without dispose()", () => {
    const { code, stderr } = run("collected");
    expect(code).toBe(0);
    expect(stderr).toContain("ImportedArray was garbage-collected without dispose(); created at:");
    expect(stderr).toContain(`debug_child.ts:${lineOf("return ImportedArray.fromDeviceArray(")}:`);
    expect(stderr).not.toContain("still alive at exit");
  });

  test("is silent without the environment variable", () => {
    const { code, stdout, stderr } = run("leak", "");
    expect(code).toBe(0);
    expect(stdout).toContain("live handles: 0"); // nothing is recorded
    expect(stderr).toBe("");
  });
});
