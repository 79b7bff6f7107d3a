/**
 * Recipe 3: a scripted device benchmark, as a CI job would run it: the CLI
 * writes its results as JSON, the script reads them and draws the chart.
 *
 *   bun examples/scripted_bench.ts [OUT_DIR] [--require-gpu]
 *
 * The same from a shell, in an app that depends on bun-arrow-device:
 *   bunx bun-arrow-device bench --require-gpu --out bench.json
 *   bunx bun-arrow-device chart bench.json --out bench.svg
 *
 * Under a fake driver the figures are marked fake: never GPU figures.
 */
import { existsSync, mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

/** The fields of the bench JSON (docs/cli.md) this script reads. */
type BenchResult = {
  machine: { cpuModel: string; cpuCores: number; platform: string };
  runtimes: { kind: string; available: boolean; fake?: boolean; driverVersionText?: string; devices: { name: string }[] }[];
  figures: { suite: string; operation: string; runtime: string | null; bytes: number; ratio: number; fake: boolean }[];
  realGpu: boolean;
};

// The package's CLI, wherever this script is (a copy in an app, the
// installed package's examples/, a checkout): its compiled bin, or the
// sources in a checkout.
const packageDir = dirname(Bun.resolveSync("bun-arrow-device/package.json", import.meta.dir));
const source = join(packageDir, "ts", "cli.ts");
const cli = existsSync(source) ? source : join(packageDir, "dist", "js", "cli.js");
const args = process.argv.slice(2);
const outDir = args.find((a) => !a.startsWith("--")) ?? mkdtempSync(join(tmpdir(), "arrow-device-bench-"));
mkdirSync(outDir, { recursive: true });
const requireGpu = args.includes("--require-gpu") ? ["--require-gpu"] : [];
const jsonFile = join(outDir, "bench.json");
const svgFile = join(outDir, "bench.svg");

// 1. Measure. Small sizes keep this example quick; drop --sizes/--rows for the defaults.
const bench = Bun.spawnSync([process.execPath, cli, "bench", ...requireGpu, "--sizes", "1,4", "--rows", "1000,100000", "--out", jsonFile, "--quiet"], {
  stdout: "ignore", stderr: "inherit",
});
if (bench.exitCode === 3) {
  console.log("no real GPU here (--require-gpu): nothing measured");
  process.exit(3);
}
if (bench.exitCode !== 0) throw new Error(`bench failed with exit code ${bench.exitCode}`);

// 2. Read the JSON (schema: docs/cli.md) and summarize it.
const result: BenchResult = await Bun.file(jsonFile).json();
console.log(`machine: ${result.machine.cpuModel}, ${result.machine.cpuCores} cores, ${result.machine.platform}`);
for (const r of result.runtimes) {
  console.log(`${r.kind}: ${r.available ? `${r.devices[0]?.name ?? "no device"}, driver ${r.driverVersionText}${r.fake ? " (FAKE driver, not a GPU)" : ""}` : "not available"}`);
}
for (const f of result.figures) {
  console.log(`${f.suite} ${f.operation} ${f.runtime ?? "host"} ${f.bytes} B: speedup ${f.ratio.toFixed(2)}x (baseline time / ours)${f.fake ? " (fake driver)" : ""}`);
}
console.log(`real GPU figures: ${result.realGpu ? "yes" : "no"}`);

// 3. Chart it.
const chart = Bun.spawnSync([process.execPath, cli, "chart", jsonFile, "--out", svgFile], { stdout: "inherit", stderr: "ignore" });
if (chart.exitCode !== 0) throw new Error(`chart failed with exit code ${chart.exitCode}`);
console.log(`wrote ${jsonFile} and ${svgFile}`);
