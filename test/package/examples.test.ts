/**
 * Every example of the README's recipes runs, in a child process, and
 * prints what the recipe promises. The device ones run under the fake
 * drivers of build/fixtures, and without any driver.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { schemaProblems } from "../../ts/cli/bench_schema.ts";
import { repoRoot, runScript } from "../helpers/cli_run.ts";

/** The examples this file runs; the README may link only to these and to
 * those run elsewhere (below). */
const tested = ["examples/quick_start.ts", "examples/c_library.ts", "examples/gpu_roundtrip.ts", "examples/scripted_bench.ts", "examples/worker_table.ts", "examples/query_database.ts"];
/** Run by test/peers/duckdb.test.ts ("examples/duckdb.ts runs: ..."). */
const testedElsewhere = ["examples/duckdb.ts"];

describe("examples", () => {
  test("the README links its quick start and every recipe to an example this file runs", () => {
    const readme = readFileSync(join(repoRoot, "README.md"), "utf8");
    const linked = [...new Set([...readme.matchAll(/\]\((examples\/[\w/]+\.ts)\)/g)].map((m) => m[1]))];
    expect(linked.sort()).toEqual([...tested.filter((f) => f !== "examples/quick_start.ts"), ...testedElsewhere].sort());
    for (const file of [...tested, ...testedElsewhere]) expect(existsSync(join(repoRoot, file))).toBe(true);
    // The quick start's code is the example's (the lines after the imports).
    expect(readme).toContain("tableFromArrays({ id: Int32Array.of(1, 2, 3), price: Float64Array.of(9.5, 3, 7.25) })");
    expect(readFileSync(join(repoRoot, "examples/quick_start.ts"), "utf8")).toContain("tableFromArrays({ id: Int32Array.of(1, 2, 3), price: Float64Array.of(9.5, 3, 7.25) })");
  });

  test("quick_start.ts: a Table out as a C stream and back, the README's printed result", () => {
    const run = runScript("examples/quick_start.ts", [], "none");
    expect(run.stderr).toBe("");
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toBe(`[{"id":1,"price":9.5},{"id":2,"price":3},{"id":3,"price":7.25}]\n`);
    const readme = readFileSync(join(repoRoot, "README.md"), "utf8");
    expect(readme).toContain(`// ${run.stdout.trim()}`);
  }, 60_000);

  test("worker_table.ts: a Worker reads the main thread's Table in place, the README's printed result", () => {
    const run = runScript("examples/worker_table.ts", [], "none");
    expect(run.stderr).toBe("");
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toBe(`{"rows":1000000,"sum":499999500000}\n`);
    const readme = readFileSync(join(repoRoot, "README.md"), "utf8");
    expect(readme).toContain(`// ${run.stdout.trim()}`);
    // The README's code is the example's (the lines after its header).
    const code = readFileSync(join(repoRoot, "examples/worker_table.ts"), "utf8").split("\n").slice(3).join("\n");
    expect(readme).toContain(code);
  }, 60_000);

  test("query_database.ts: DuckDB through ADBC, the README's printed result and code", () => {
    const run = runScript("examples/query_database.ts", [], "none");
    expect(run.stderr).toBe("");
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toBe(`[{"day":0,"trips":143},{"day":1,"trips":143},{"day":2,"trips":143}]\n`);
    const readme = readFileSync(join(repoRoot, "README.md"), "utf8");
    const code = readFileSync(join(repoRoot, "examples/query_database.ts"), "utf8").split("\n").slice(4).join("\n").trimEnd();
    expect(readme).toContain(code);
  }, 60_000);

  test("c_library.ts: a Table goes to a C function and a new one comes back", () => {
    const run = runScript("examples/c_library.ts", [], "none");
    expect(run.stderr).toBe("");
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toContain("sent 6 rows in 2 batches: x = [1.5,null,3,4.25,10,20]");
    expect(run.stdout).toContain("got back 6 rows in 2 batches, schema { doubled: Float64 }");
    expect(run.stdout).toContain("doubled = [3,null,6,8.5,20,40]");
    expect(run.stdout).toContain("input stream released by C: true");
  }, 60_000);

  for (const kind of ["cuda", "rocm"] as const) {
    test(`gpu_roundtrip.ts ${kind}: to the device with a sync event and back, under the fake driver`, () => {
      const run = runScript("examples/gpu_roundtrip.ts", [kind], "fake");
      expect(run.stderr).toBe("");
      expect(run.exitCode).toBe(0);
      expect(run.stdout).toContain(kind === "cuda" ? "cuda: Fake CUDA Device 0 (2 device(s))" : "rocm: Fake AMD Instinct 0 (2 device(s))");
      expect(run.stdout).toContain(`on the GPU: device_type ${kind === "cuda" ? "CUDA" : "ROCM"}, device_id 0, sync_event set`);
      expect(run.stdout).toContain("back on the host: 1000 rows, 100 nulls, equal to the original: true");
    }, 60_000);
  }

  test("gpu_roundtrip.ts without a driver says why and exits 0", () => {
    const run = runScript("examples/gpu_roundtrip.ts", [], "none");
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toStartWith("cuda is not available here: CUDA is not available");
    expect(run.stdout).toContain("no-such-driver.so");
  }, 60_000);

  test("scripted_bench.ts: JSON that matches the schema, a chart, fake figures marked fake", () => {
    const dir = mkdtempSync(join(tmpdir(), "h6-example-bench-"));
    try {
      const run = runScript("examples/scripted_bench.ts", [dir], "fake-cuda");
      expect(run.exitCode).toBe(0);
      expect(run.stdout).toContain("cuda: Fake CUDA Device 0, driver 12.4 (FAKE driver, not a GPU)");
      expect(run.stdout).toContain("rocm: not available");
      expect(run.stdout).toContain("transfer host_to_device cuda 1048576 B");
      expect(run.stdout).toContain("export_import round_trip host 800000 B");
      expect(run.stdout).toContain("real GPU figures: no");
      const result = JSON.parse(readFileSync(join(dir, "bench.json"), "utf8"));
      expect(schemaProblems(result)).toEqual([]);
      expect(result.figures.filter((f: { runtime: string | null }) => f.runtime === "cuda").every((f: { fake: boolean }) => f.fake)).toBe(true);
      expect(readFileSync(join(dir, "bench.svg"), "utf8")).toStartWith("<svg");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  test("scripted_bench.ts --require-gpu exits 3 under a fake driver and measures nothing", () => {
    const dir = mkdtempSync(join(tmpdir(), "h6-example-bench-"));
    try {
      const run = runScript("examples/scripted_bench.ts", [dir, "--require-gpu"], "fake");
      expect(run.exitCode).toBe(3);
      expect(run.stdout).toContain("no real GPU here");
      expect(existsSync(join(dir, "bench.json"))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
