/**
 * The CLI (ts/cli.ts, package.json "bin"): output and exit codes under the
 * fake drivers and with no driver at all, the bench JSON against the
 * schema documented in docs/cli.md, and the SVG chart.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chartInputLimitBytes } from "../../ts/cli/main.ts";
import { benchLimits, benchMemoryProblem } from "../../ts/cli/args.ts";
import { sweepBytes, type BenchResult, type Figure } from "../../ts/cli/bench.ts";
import { benchJsonSchema, benchSchemaId, schemaProblems } from "../../ts/cli/bench_schema.ts";
import { benchChart, sizeTicks, timeTicks } from "../../ts/cli/chart.ts";
import { headerLimitBytes } from "../../ts/cli/doctor.ts";
import { timeLabel } from "../../ts/cli/measure.ts";
import { declaredFunctions, defaultHeaderPath } from "../../ts/cli/doctor.ts";
import { Progress } from "../../ts/cli/progress.ts";
import { isFakeDriver } from "../../ts/cli/runtimes.ts";
import { fakePaths, repoRoot, runCli } from "../helpers/cli_run.ts";

const quickBench = ["--sizes", "1", "--rows", "1000", "--repeats", "2"];

function withTempDir<T>(run: (dir: string) => T): T {
  const dir = mkdtempSync(join(tmpdir(), "h6-cli-"));
  try {
    return run(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("CLI usage", () => {
  test("--help lists the commands and exits 0; no command prints it and exits 2", () => {
    const help = runCli(["--help"]);
    expect(help.exitCode).toBe(0);
    for (const command of ["info", "bench", "chart", "doctor"]) expect(help.stdout).toContain(`\n  ${command} `);
    const none = runCli([]);
    expect(none.exitCode).toBe(2);
    expect(none.stdout).toBe(help.stdout);
  }, 60_000);

  for (const command of ["info", "bench", "chart", "doctor"]) {
    test(`${command} --help and help ${command} print its usage and exit 0`, () => {
      const viaFlag = runCli([command, "--help"], "none");
      expect(viaFlag.exitCode).toBe(0);
      expect(viaFlag.stdout).toStartWith(`Usage: bun-arrow-device ${command}`);
      const viaHelp = runCli(["help", command], "none");
      expect(viaHelp.exitCode).toBe(0);
      expect(viaHelp.stdout).toBe(viaFlag.stdout);
    }, 60_000);
  }

  const usageErrors: [string[], string][] = [
    [["frob"], `unknown command "frob". Commands: info, bench, chart, doctor`],
    [["doctor", "--library"], "doctor: --library needs a value"],
    [["help", "frob"], `help: unknown command "frob"`],
    [["info", "--verbose"], "info: unknown option --verbose"],
    [["info", "extra"], `info: unexpected argument "extra"`],
    [["bench", "--sizes", "1,x"], `bench: --sizes must be a comma-separated list of positive numbers, got "1,x"`],
    [["bench", "--sizes", "1.5"], `bench: --sizes takes whole numbers, got "1.5"`],
    [["bench", "--kinds", "cuda,metal"], `bench: --kinds takes cuda and/or rocm, got "metal"`],
    [["bench", "--out"], "bench: --out needs a value"],
    [["bench", "--json=yes"], "bench: --json takes no value"],
    [["chart", "--out", "x.svg"], "chart: which bench JSON file?"],
    [["chart", "in.json"], "chart: --out FILE.svg is required"],
    [["bench", "--rows", "1e12"], "bench: --rows takes numbers up to 100,000,000, got 1,000,000,000,000"],
    [["bench", "--sizes", "1,1e6"], "bench: --sizes takes numbers up to 4,096, got 1,000,000"],
    [["bench", "--repeats", "1e9"], "bench: --repeats takes numbers up to 1,000, got 1,000,000,000"],
    [["bench", "--repeats", "0"], `bench: --repeats must be a comma-separated list of positive numbers, got "0"`],
    [["bench", "--repeats", "2,3"], "bench: --repeats takes one number"],
    [["bench", "--rows", Array.from({ length: 33 }, (_, i) => i + 1).join(",")], "bench: --rows takes at most 32 numbers, got 33"],
    [["bench", "--rows", "NaN"], `bench: --rows must be a comma-separated list of positive numbers, got "NaN"`],
    [["bench", "--sizes", "Infinity"], `bench: --sizes must be a comma-separated list of positive numbers, got "Infinity"`],
    [["bench", "--out", "--json"], "bench: --out needs a value"],
    [["bench", "--rows", "1", "--rows", "2"], "bench: --rows is given twice"],
    [["bench", "--no-host", "--no-device"], "bench: --no-host and --no-device leave nothing to measure"],
    [["chart", "a.json", "b.json", "--out", "x.svg"], `chart: unexpected argument "b.json"`],
    [["doctor", "--frob"], "doctor: unknown option --frob"],
    [["chart", "-o", "x.svg"], "chart: unknown option -o (options are spelled --name"],
    [["constructor"], `unknown command "constructor"`],
    [["help", "constructor"], `help: unknown command "constructor"`],
    [["help", "info", "bench"], `help: unexpected argument "bench"`],
    [["--version", "x"], `--version: unexpected argument "x"`],
  ];
  for (const [args, message] of usageErrors) {
    test(`${args.join(" ").slice(0, 60)}: a clear error and exit code 2`, () => {
      const run = runCli(args, "none");
      expect(run.exitCode).toBe(2);
      expect(run.stdout).toBe("");
      expect(run.stderr).toStartWith(`bun-arrow-device: ${message}`);
      expect(run.stderr.split("\n")).toHaveLength(2); // one line
    }, 60_000);
  }

  test("every bad value of every numeric option: one line and exit code 2, before any measuring", () => {
    const bad = ["-1", "0", "1.5", "1e400", "abc", " ", ",", "1,,2", "2e9", "-0", "1/2", "[1]"];
    for (const option of ["--sizes", "--rows", "--repeats"]) {
      for (const value of bad) {
        const run = runCli(["bench", `${option}=${value}`], "none");
        expect({ option, value, exitCode: run.exitCode, stdout: run.stdout }).toEqual({ option, value, exitCode: 2, stdout: "" });
        expect(run.stderr).toStartWith(`bun-arrow-device: bench: ${option} `);
        expect(run.stderr.split("\n")).toHaveLength(2);
      }
    }
  }, 120_000);

  test("sizes and rows that would not fit in the machine's memory are refused before allocating", () => {
    const GiB = 2 ** 30;
    expect(benchMemoryProblem([1, 4096], [1000], 8 * GiB)).toBe("bench: --sizes 4096 needs about 24.0 GiB of memory; this machine has 8.0 GiB");
    expect(benchMemoryProblem([1], [100_000_000], 2 * GiB)).toBe("bench: --rows 100000000 needs about 3.7 GiB of memory; this machine has 2.0 GiB");
    expect(benchMemoryProblem([4096], [100_000_000], 32 * GiB)).toBeNull();
    expect(benchMemoryProblem([], [], 1)).toBeNull();
  });

  test("the limits the usage errors enforce are the ones bench --help states", () => {
    const help = runCli(["bench", "--help"], "none").stdout;
    expect(help).toContain(`transfer sizes in MiB, up to ${benchLimits.sizesMiB}\n`);
    expect(help).toContain("export/import batch rows, up to 100,000,000\n");
    expect(help).toContain(`timed runs per figure, 1 to ${benchLimits.repeats}\n`);
  }, 60_000);
});

describe("CLI info", () => {
  test("under the fake drivers: versions, library, and each runtime marked fake with its devices", () => {
    const text = runCli(["info"], "fake");
    expect(text.exitCode).toBe(0);
    const version = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")).version;
    const arrowVersion = JSON.parse(readFileSync(join(repoRoot, "node_modules", "apache-arrow", "package.json"), "utf8")).version;
    expect(text.stdout).toContain(`bun-arrow-device ${version}\n`);
    expect(text.stdout).toContain(`apache-arrow  ${arrowVersion}\n`);
    expect(text.stdout).toContain("libarrow_device");
    expect(text.stdout).toContain(`cuda          available: FAKE driver (a test stand-in, not a GPU), driver 12.4 (12040), ${fakePaths.cuda}, 2 device(s)`);
    expect(text.stdout).toContain("0: Fake CUDA Device 0, 16.0 GiB");
    expect(text.stdout).toContain("rocm          available: FAKE driver");

    const json = runCli(["info", "--json"], "fake");
    expect(json.exitCode).toBe(0);
    const report = JSON.parse(json.stdout);
    expect(report.package).toBe(version);
    expect(report.apacheArrow).toBe(arrowVersion);
    expect(report.platform).toMatch(/^(linux-(x64|arm64)-(gnu|musl)|darwin-(x64|arm64)|win32-x64)$/);
    expect(report.runtimes.map((r: { kind: string; available: boolean; fake: boolean }) => [r.kind, r.available, r.fake]))
      .toEqual([["cuda", true, true], ["rocm", true, true]]);
    expect(report.runtimes[0].devices.map((d: { name: string }) => d.name)).toEqual(["Fake CUDA Device 0", "Fake CUDA Device 1"]);
  }, 60_000);

  test("with no driver at all: each runtime's reason names what was tried, and info still exits 0", () => {
    const run = runCli(["info", "--json"], "none");
    expect(run.exitCode).toBe(0);
    const report = JSON.parse(run.stdout);
    for (const runtime of report.runtimes) {
      expect(runtime.available).toBe(false);
      expect(runtime.reason).toContain(fakePaths.missing);
      expect(runtime.devices).toEqual([]);
    }
    const text = runCli(["info"], "none");
    // Said once: "not available: the driver library could not be loaded".
    expect(text.stdout).toContain("cuda          not available: the driver library could not be loaded (tried ");
    expect(text.stdout).toContain("rocm          not available: the HIP runtime could not be loaded (tried ");
    expect(text.stdout.match(/not available/g)?.length).toBe(2);
  }, 60_000);

  test("a library that cannot be loaded is exit code 1 with the loader's message", () => {
    const child = Bun.spawnSync([process.execPath, join(repoRoot, "ts", "cli.ts"), "info"], {
      env: { ...process.env, ARROW_DEVICE_LIBRARY: fakePaths.missing }, stdout: "pipe", stderr: "pipe",
    });
    expect(child.exitCode).toBe(1);
    expect(child.stderr.toString()).toStartWith("bun-arrow-device: the native library could not be loaded: ");
    expect(child.stderr.toString()).toContain(fakePaths.missing);
  }, 60_000);
});

describe("CLI bench", () => {
  test("--json under a fake driver: valid against the schema, figures beside their baselines, marked fake", () => {
    const run = runCli(["bench", "--json", ...quickBench], "fake-cuda");
    expect(run.exitCode).toBe(0);
    const result = JSON.parse(run.stdout); // stdout is the JSON alone
    expect(schemaProblems(result)).toEqual([]);
    expect(result.schema).toBe(benchSchemaId);
    expect(result.realGpu).toBe(false);
    expect(result.runtimes.map((r: { kind: string; fake: boolean; available: boolean }) => [r.kind, r.available, r.fake]))
      .toEqual([["cuda", true, true], ["rocm", false, false]]);
    const rows = result.figures.map((f: Figure) => [f.suite, f.operation, f.runtime, f.fake, f.bytes, f.repeats]);
    expect(rows).toEqual([
      ["transfer", "host_to_device", "cuda", true, 2 ** 20, 2],
      ["transfer", "host_to_device_pinned", "cuda", true, 2 ** 20, 2],
      ["transfer", "device_to_host", "cuda", true, 2 ** 20, 2],
      ["transfer", "device_to_device", "cuda", true, 2 ** 20, 2],
      ["transfer", "allocate", "cuda", true, 2 ** 20, 2],
      ["export_import", "round_trip", null, false, 8000, 2],
    ]);
    for (const f of result.figures as Figure[]) {
      const copies = f.suite === "transfer" && f.operation !== "allocate";
      // Copies are timed with events on the stream; allocation and the host round trip by the host clock.
      expect([f.ours.timing, f.baseline.timing]).toEqual(copies ? ["event", "event"] : ["wall", "wall"]);
      expect(f.endToEnd?.timing ?? null).toBe(copies ? "wall" : null);
      expect(f.pageableBaseline !== null).toBe(f.operation === "host_to_device" || f.operation === "device_to_host");
      expect(f.ratioMin).toBeLessThanOrEqual(f.ratioMax);
      for (const m of [f.ours, f.baseline, ...(f.pageableBaseline ? [f.pageableBaseline] : []), ...(f.endToEnd ? [f.endToEnd] : [])]) {
        // The spread of the runs, per point: fastest <= median <= slowest.
        expect(m.minNs).toBeGreaterThan(0);
        expect(m.minNs).toBeLessThanOrEqual(m.medianNs);
        expect(m.medianNs).toBeLessThanOrEqual(m.maxNs);
        // A rate only for the copies.
        if (copies) expect(m.gbPerSecond!).toBeCloseTo(f.bytes / m.medianNs, 9);
        else expect(m.gbPerSecond).toBeNull();
      }
    }
    // The raw driver, opened directly: pinned and pageable copies, allocation apart.
    expect(result.figures.slice(0, 5).map((f: Figure) => [f.baseline.what, f.pageableBaseline?.what ?? null])).toEqual([
      ["cuMemcpyHtoDAsync_v2 from pinned memory", "cuMemcpyHtoDAsync_v2 from pageable memory"],
      ["cuMemcpyHtoDAsync_v2 from pinned memory", null],
      ["cuMemcpyDtoHAsync_v2 to pinned memory", "cuMemcpyDtoHAsync_v2 to pageable memory"],
      ["cuMemcpyDtoDAsync_v2", null],
      ["cuMemAlloc_v2 + cuMemFree_v2", null],
    ]);
    for (const f of result.figures) expect(f.ratio).toBeCloseTo(f.baseline.medianNs / f.ours.medianNs, 9);
    expect(result.warnings).toEqual([`cuda: ${fakePaths.cuda} is a FAKE driver (a CPU stand-in for tests): its figures are NOT GPU figures`]);
    expect(result.machine.cpuCores).toBeGreaterThan(0);
    // Progress on stderr, one line per step when stderr is not a terminal.
    expect(run.stderr).toContain("[1/2] cuda transfers, 1 MiB\n");
    expect(run.stderr).toContain("[2/2] export/import, 1000 rows\n");
  }, 120_000);

  test("text output marks fake figures; --quiet leaves stderr empty", () => {
    const run = runCli(["bench", "--quiet", "--kinds", "rocm", ...quickBench], "fake");
    expect(run.exitCode).toBe(0);
    expect(run.stderr).toBe("");
    expect(run.stdout).toContain("*** FAKE DRIVER: not GPU figures ***");
    expect(run.stdout).toContain("transfer       host_to_device    rocm*");
    expect(run.stdout).toContain("hipMemcpyAsync(HostToDevice) from pinned memory");
    expect(run.stdout).toContain("hipMalloc + hipFree");
    expect(run.stdout).toContain("* fake driver: a CPU stand-in for tests; these are NOT GPU figures.");
  }, 120_000);

  test("with no driver, as text: each runtime's reason once, on stdout only", () => {
    const run = runCli(["bench", ...quickBench], "none");
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toContain("cuda: not available: the driver library could not be loaded (tried ");
    expect(run.stdout).toContain("rocm: not available: the HIP runtime could not be loaded (tried ");
    expect(run.stdout.match(/not available/g)?.length).toBe(2);
    expect(run.stderr).not.toContain("not available");
  }, 120_000);

  test("with no driver: host figures only, each runtime's reason in the JSON", () => {
    const run = runCli(["bench", "--json", "--quiet", ...quickBench], "none");
    expect(run.exitCode).toBe(0);
    const result = JSON.parse(run.stdout);
    expect(schemaProblems(result)).toEqual([]);
    expect(result.figures.map((f: { suite: string }) => f.suite)).toEqual(["export_import"]);
    expect(result.runtimes.every((r: { available: boolean; reason: string }) => !r.available && r.reason.includes(fakePaths.missing))).toBe(true);
    expect(result.realGpu).toBe(false);
  }, 120_000);

  for (const drivers of ["fake", "none"] as const) {
    test(`--require-gpu exits 3 before measuring (${drivers === "fake" ? "fake drivers are not GPUs" : "no driver"})`, () => {
      const run = runCli(["bench", "--require-gpu", "--json", ...quickBench], drivers);
      expect(run.exitCode).toBe(3);
      expect(run.stdout).toBe("");
      expect(run.stderr).toStartWith("bench: --require-gpu: no real GPU is usable here\n");
      expect(run.stderr).toContain(drivers === "fake" ? `cuda: ${fakePaths.cuda} is a fake driver (a test stand-in), not a GPU` : "cuda: not available: the driver library could not be loaded");
      expect(run.stderr).not.toContain("[1/");
    }, 60_000);
  }

  test("--out writes the JSON; chart turns it into an SVG with one panel per series, ours and the baseline", () => {
    withTempDir((dir) => {
      const jsonFile = join(dir, "bench.json");
      const svgFile = join(dir, "chart.svg");
      const bench = runCli(["bench", "--out", jsonFile, "--sizes", "1,2", "--rows", "1000,2000", "--repeats", "2"], "fake-cuda");
      expect(bench.exitCode).toBe(0);
      expect(bench.stderr).toContain(`bench: wrote ${jsonFile}`);
      expect(bench.stdout).toContain("suite          operation");
      const result = JSON.parse(readFileSync(jsonFile, "utf8"));
      expect(schemaProblems(result)).toEqual([]);
      expect(result.figures).toHaveLength(12);

      const chart = runCli(["chart", jsonFile, "--out", svgFile], "none");
      expect(chart.exitCode).toBe(0);
      const svg = readFileSync(svgFile, "utf8");
      expect(svg).toStartWith(`<svg xmlns="http://www.w3.org/2000/svg"`);
      expect(svg.trimEnd()).toEndWith("</svg>");
      const titles = [...svg.matchAll(/font-weight="bold">([^<]*)</g)].map((m) => m[1]);
      const fake = " (FAKE DRIVER: not GPU figures)";
      expect(titles).toEqual([
        ...["host_to_device", "host_to_device_pinned", "device_to_host", "device_to_device", "allocate"].flatMap((op) => [`transfer ${op} on cuda${fake}`, `transfer ${op} on cuda${fake}: ours / raw`]),
        "export_import round_trip (host)",
      ]);
      expect(svg.match(/<polyline fill/g)).toHaveLength(12); // ours and the baseline per time panel
      expect(svg.match(/<polygon class="band"/g)).toHaveLength(12); // each one's fastest-to-slowest band
      expect(svg.match(/<circle cx/g)).toHaveLength(24); // one per size per series
      // Each transfer's ratio panel: the median ratio over its per-repetition spread, and parity.
      expect(svg.match(/<polyline class="ratio"/g)).toHaveLength(5);
      expect(svg.match(/<polygon class="ratio-band"/g)).toHaveLength(5);
      expect(svg.match(/<circle class="ratio"/g)).toHaveLength(10);
      expect(svg.match(/<line class="parity"/g)).toHaveLength(5);
      for (const call of [">cuMemcpyHtoDAsync_v2 from pinned memory<", ">cuMemAlloc_v2<", ">+ cuMemFree_v2<"]) expect(svg).toContain(call); // the baseline, in the legend
      // Log-log: time per operation against size, ticks with unit suffixes.
      expect(svg.match(/>time per operation \(log scale\)</g)).toHaveLength(6);
      expect(svg).not.toContain(">GB/s<"); // no rate axis
      const yTicks = [...svg.matchAll(/text-anchor="end">([^<]*)</g)].map((m) => m[1]);
      for (const tick of yTicks.filter((t) => !t.endsWith("×"))) expect(tick).toMatch(/^(1|2|5)(0|00)? (ns|µs|ms|s)$/);
      expect(yTicks.filter((t) => t.endsWith("×"))).toContain("1×"); // the ratio panels' linear axis
      expect(svg).toContain(">1 MiB<");
      expect(svg).toContain(">2 MiB<");
      // A rate for the transfers (copies) only.
      expect(svg.match(/>throughput at 2 MiB:</g)).toHaveLength(4);
      expect(svg.match(/>ours [0-9.]+ GB\/s</g)).toHaveLength(4);
    });
  }, 120_000);

  test("chart refuses a file that is not a bench result (exit 1, naming the fields)", () => {
    withTempDir((dir) => {
      const bad = join(dir, "bad.json");
      writeFileSync(bad, JSON.stringify({ schema: benchSchemaId, figures: [{ unit: "MB" }] }));
      const run = runCli(["chart", bad, "--out", join(dir, "x.svg")], "none");
      expect(run.exitCode).toBe(1);
      expect(run.stderr).toContain(`chart: ${bad} is not a bench result`);
      expect(run.stderr).toContain(`$: missing "versions"`);
      expect(run.stderr).toContain(`$.figures[0]: missing "suite"`);
      expect(run.stderr).toContain("  ... 11 more\n"); // the first 10 problems, then a count
      writeFileSync(bad, JSON.stringify({ ...sampleResult(1), schema: "bun-arrow-device/bench/1" }));
      const older = runCli(["chart", bad, "--out", join(dir, "x.svg")], "none");
      expect(older.exitCode).toBe(1);
      expectOneLine(older.stderr, `chart: ${bad} is a bun-arrow-device/bench/1 result; this version charts ${benchSchemaId} (run bench again)`);
      writeFileSync(bad, "{ not json");
      const notJson = runCli(["chart", bad, "--out", join(dir, "x.svg")], "none");
      expect(notJson.exitCode).toBe(1);
      expect(notJson.stderr).toContain(`chart: cannot read ${bad} as JSON`);
    });
  }, 60_000);
});


/** One line on stderr, starting with the CLI's name: no source excerpt, no stack. */
function expectOneLine(stderr: string, message: string): void {
  expect(stderr).toStartWith(`bun-arrow-device: ${message}`);
  expect(stderr.split("\n")).toHaveLength(2);
  expect(stderr).not.toContain("    at ");
}

const hostOnly = ["--no-device", "--rows", "1000", "--repeats", "1", "--quiet"];

describe("CLI files: unreadable and unwritable paths get one line and exit code 1", () => {
  test("bench --out to a directory or a missing directory is refused before measuring", () => {
    withTempDir((dir) => {
      const toDir = runCli(["bench", ...hostOnly, "--out", dir], "none");
      expect(toDir.exitCode).toBe(1);
      expect(toDir.stdout).toBe(""); // nothing measured
      expectOneLine(toDir.stderr, `bench: cannot write the result to ${dir}: it is a directory`);
      const missing = join(dir, "no", "such.json");
      const toMissing = runCli(["bench", ...hostOnly, "--out", missing], "none");
      expect(toMissing.exitCode).toBe(1);
      expectOneLine(toMissing.stderr, `bench: cannot write the result to ${missing}: the directory ${join(dir, "no")} does not exist`);
    });
  }, 60_000);

  test.if(existsSync("/dev/full") && existsSync("/proc/self"))("bench --out to /dev/full or into /proc: the result still reaches stdout, then one line", () => {
    const full = runCli(["bench", ...hostOnly, "--json", "--out", "/dev/full"], "none");
    expect(full.exitCode).toBe(1);
    expect(schemaProblems(JSON.parse(full.stdout))).toEqual([]); // nothing lost
    expectOneLine(full.stderr, "bench: cannot write the result to /dev/full: no space left on device (ENOSPC)");
    const proc = runCli(["bench", ...hostOnly, "--out", "/proc/bun-arrow-device.json"], "none");
    expect(proc.exitCode).toBe(1);
    expect(proc.stdout).toContain("export_import  round_trip");
    expectOneLine(proc.stderr, "bench: cannot write the result to /proc/bun-arrow-device.json: ");
  }, 60_000);

  test("chart: a missing input, a directory, an unwritable --out", () => {
    withTempDir((dir) => {
      const input = join(dir, "bench.json");
      writeFileSync(input, JSON.stringify(sampleResult(3)));
      const missing = runCli(["chart", join(dir, "none.json"), "--out", join(dir, "x.svg")], "none");
      expect(missing.exitCode).toBe(1);
      expectOneLine(missing.stderr, `chart: cannot read the bench result ${join(dir, "none.json")}: no such file or directory (ENOENT)`);
      const directory = runCli(["chart", dir, "--out", join(dir, "x.svg")], "none");
      expect(directory.exitCode).toBe(1);
      expectOneLine(directory.stderr, `chart: cannot read the bench result ${dir}: it is a directory`);
      const toDir = runCli(["chart", input, "--out", dir], "none");
      expect(toDir.exitCode).toBe(1);
      expectOneLine(toDir.stderr, `chart: cannot write the chart to ${dir}: it is a directory`);
      if (existsSync("/dev/full")) {
        const full = runCli(["chart", input, "--out", "/dev/full"], "none");
        expect(full.exitCode).toBe(1);
        expectOneLine(full.stderr, "chart: cannot write the chart to /dev/full: no space left on device (ENOSPC)");
      }
    });
  }, 60_000);

  test("chart and doctor read at most their limit: a larger file, or an endless device, is refused", () => {
    withTempDir((dir) => {
      const big = join(dir, "big.json");
      writeFileSync(big, Buffer.alloc(chartInputLimitBytes + 1, 0x20));
      const run = runCli(["chart", big, "--out", join(dir, "x.svg")], "none");
      expect(run.exitCode).toBe(1);
      expectOneLine(run.stderr, `chart: the bench result ${big} is 16 MiB, more than the 16 MiB this command reads`);
      expect(existsSync(join(dir, "x.svg"))).toBe(false);
      const header = join(dir, "big.h");
      writeFileSync(header, Buffer.alloc(headerLimitBytes + 1, 0x20));
      const doctor = runCli(["doctor", "--header", header], "none");
      expect(doctor.exitCode).toBe(1);
      expectOneLine(doctor.stderr, `doctor: header ${header} is 4 MiB, more than the 4 MiB this command reads`);
    });
    if (existsSync("/dev/zero")) {
      const chart = runCli(["chart", "/dev/zero", "--out", join(tmpdir(), "never.svg")], "none");
      expect(chart.exitCode).toBe(1);
      expectOneLine(chart.stderr, "chart: the bench result /dev/zero is more than the 16 MiB this command reads");
      const doctor = runCli(["doctor", "--header", "/dev/zero"], "none");
      expect(doctor.exitCode).toBe(1);
      expectOneLine(doctor.stderr, "doctor: header /dev/zero is more than the 4 MiB this command reads");
      const library = runCli(["doctor", "--library", "/dev/zero"], "none");
      expect(library.exitCode).toBe(1);
      expectOneLine(library.stderr, "doctor: cannot load /dev/zero as a library: /dev/zero: invalid ELF header");
    }
  }, 60_000);
});

/** A valid bench result of `n` export/import figures, sizes in shuffled order. */
function sampleResult(n: number): BenchResult {
  const measurement = (what: string, ns: number) => ({ what, timing: "wall" as const, medianNs: ns, minNs: ns * 0.8, maxNs: ns * 1.5, gbPerSecond: null });
  const figures: Figure[] = [];
  for (let i = 0; i < n; i++) {
    const rows = 1000 + ((i * 7919) % n) * 13;
    figures.push({
      suite: "export_import", operation: "round_trip", runtime: null, deviceId: null, fake: false, bytes: rows * 8, repeats: 3,
      ours: measurement("ours", 20_000 + i), baseline: measurement("apache-arrow tableToIPC + tableFromIPC", rows * 40), ratio: (rows * 40) / (20_000 + i),
      pageableBaseline: null, endToEnd: null, ratioMin: (rows * 32) / (30_000 + i), ratioMax: (rows * 60) / (16_000 + i),
    });
  }
  return {
    schema: benchSchemaId, createdAt: "2026-01-01T00:00:00.000Z",
    versions: { package: "0.0.0", library: "/lib/libarrow_device.so", bun: "1.4.5", apacheArrow: "21.2.0" },
    machine: { os: "Linux", osRelease: "6", platform: "linux-x64-gnu", cpuModel: "cpu", cpuCores: 2, memoryBytes: 2 ** 33 },
    runtimes: [], realGpu: false, figures, warnings: [],
  };
}

/** Every property read of the figures (and their measurements) that `run` makes. */
function countReads(result: BenchResult, run: (r: BenchResult) => unknown): number {
  let reads = 0;
  const counted = <T extends object>(target: T): T => new Proxy(target, { get: (t, key, receiver) => (reads++, Reflect.get(t, key, receiver)) });
  const figures = result.figures.map((f) => counted({ ...f, ours: counted({ ...f.ours }), baseline: counted({ ...f.baseline }) }));
  run({ ...result, figures });
  return reads;
}

describe("CLI chart: work linear in the input", () => {
  test("validating and drawing n figures reads each figure a bounded number of times", () => {
    const n = 800;
    for (const [name, run] of [["schemaProblems", (r: BenchResult) => schemaProblems(r)], ["benchChart", benchChart]] as const) {
      const small = countReads(sampleResult(n), run);
      const large = countReads(sampleResult(2 * n), run);
      // Linear, with a sort's log factor: twice the figures, about twice the reads.
      expect({ name, growth: large / small < 2.4 }).toEqual({ name, growth: true });
      expect({ name, perFigure: small / n < 80 }).toEqual({ name, perFigure: true });
    }
  });

  test("a generated large result (20,000 figures) is charted: one panel, every point drawn", () => {
    withTempDir((dir) => {
      const input = join(dir, "large.json");
      const text = JSON.stringify(sampleResult(20_000));
      expect(text.length).toBeLessThan(chartInputLimitBytes);
      writeFileSync(input, text);
      const run = runCli(["chart", input, "--out", join(dir, "large.svg")], "none");
      expect(run.stderr).toBe(`chart: wrote ${join(dir, "large.svg")}\n`);
      expect(run.exitCode).toBe(0);
      const svg = readFileSync(join(dir, "large.svg"), "utf8");
      expect(svg.match(/<circle /g)).toHaveLength(40_000);
      expect(svg.match(/<polygon class="band"/g)).toHaveLength(2);
    });
  }, 60_000);

  test("ticks: 1-2-5 over up to two decades, powers of ten beyond, sizes in powers of two", () => {
    expect(timeTicks(1e3, 1e5).map(timeLabel)).toEqual(["1 µs", "2 µs", "5 µs", "10 µs", "20 µs", "50 µs", "100 µs"]);
    expect(timeTicks(1e2, 1e7).map(timeLabel)).toEqual(["100 ns", "1 µs", "10 µs", "100 µs", "1 ms", "10 ms"]);
    expect(timeTicks(1, 1e18)).toHaveLength(7); // every third power of ten
    expect(sizeTicks(10, 20)).toEqual([2 ** 10, 2 ** 12, 2 ** 14, 2 ** 16, 2 ** 18, 2 ** 20]);
    expect(sizeTicks(19, 21)).toEqual([2 ** 19, 2 ** 20, 2 ** 21]);
  });

  test("one size: the spread is a whisker; a zero time is drawn at 1 ns, not off the axis", () => {
    const result = sampleResult(1);
    result.figures[0].ours = { what: "ours", timing: "wall", medianNs: 0, minNs: 0, maxNs: 5, gbPerSecond: null };
    const svg = benchChart(result);
    expect(svg.match(/<line class="band"/g)).toHaveLength(2);
    expect(svg).not.toContain("NaN");
    expect(svg).not.toContain("Infinity");
  });
});

describe("CLI pieces", () => {
  test("the transfer sweep: 1 KiB to 1 GiB by powers of 4, the quick one to 1 MiB", () => {
    expect(sweepBytes(true)).toEqual([2 ** 10, 2 ** 12, 2 ** 14, 2 ** 16, 2 ** 18, 2 ** 20]);
    expect(sweepBytes(false)).toEqual(Array.from({ length: 11 }, (_, i) => 2 ** (10 + 2 * i)));
  });

  test("docs/cli.md documents exactly the schema the CLI validates against", () => {
    const doc = readFileSync(join(repoRoot, "docs", "cli.md"), "utf8");
    const block = doc.match(/<!-- bench-schema -->\n```json\n([\s\S]*?)\n```/);
    expect(block).not.toBeNull();
    expect(JSON.parse(block![1])).toEqual(JSON.parse(JSON.stringify(benchJsonSchema)));
  });

  test("the schema validator reports each kind of problem with its path", () => {
    expect(schemaProblems([])).toEqual(["$: expected object, found array"]);
    const problems = schemaProblems({
      schema: "other", createdAt: "t", versions: { package: "1", library: "l", bun: "b", apacheArrow: "a", extra: 1 },
      machine: { os: "o", osRelease: "r", platform: "p", cpuModel: "c", cpuCores: 0, memoryBytes: 1.5 },
      runtimes: [{ kind: "metal" }], realGpu: "no", figures: [], warnings: [3],
    });
    expect(problems).toEqual([
      `$.schema: expected "${benchSchemaId}"`,
      `$.versions: unexpected "extra"`,
      "$.machine.cpuCores: 0 is below the minimum 1",
      "$.machine.memoryBytes: expected integer, found number",
      `$.runtimes[0]: missing "available"`,
      `$.runtimes[0]: missing "reason"`,
      `$.runtimes[0]: missing "library"`,
      `$.runtimes[0]: missing "driverVersion"`,
      `$.runtimes[0]: missing "driverVersionText"`,
      `$.runtimes[0]: missing "fake"`,
      `$.runtimes[0]: missing "devices"`,
      `$.runtimes[0].kind: expected one of "cuda", "rocm"`,
      "$.realGpu: expected boolean, found string",
      "$.warnings[0]: expected string, found integer",
    ]);
  });

  test("fake drivers are told from other libraries by the symbol only they export", () => {
    expect(isFakeDriver("cuda", fakePaths.cuda)).toBe(true);
    expect(isFakeDriver("rocm", fakePaths.rocm)).toBe(true);
    expect(isFakeDriver("rocm", fakePaths.cuda)).toBe(false);
    expect(isFakeDriver("cuda", join(repoRoot, "build", "fixtures", "libc_peer.so"))).toBe(false);
    expect(isFakeDriver("cuda", fakePaths.missing)).toBe(false);
  });

  test("progress: a bar on a terminal once the run is long, lines elsewhere, nothing when quiet", () => {
    const tty: string[] = [];
    const bar = new Progress({ total: 4, tty: true, barAfterMs: 0, write: (t) => tty.push(t) });
    bar.step("a");
    bar.step("b");
    bar.finish();
    expect(tty).toEqual([
      `\r\x1b[2K[${".".repeat(30)}] 0/4 a`,
      `\r\x1b[2K[${"#".repeat(8)}${".".repeat(22)}] 1/4 b`,
      "\r\x1b[2K",
    ]);
    const short: string[] = [];
    const notYet = new Progress({ total: 2, tty: true, barAfterMs: 60_000, write: (t) => short.push(t) });
    notYet.step("a");
    notYet.finish();
    expect(short).toEqual([]);
    const lines: string[] = [];
    const plain = new Progress({ total: 2, tty: false, write: (t) => lines.push(t) });
    plain.step("a");
    plain.note("warning");
    plain.step("b");
    expect(lines).toEqual(["[1/2] a\n", "warning\n", "[2/2] b\n"]);
    const quiet: string[] = [];
    const silent = new Progress({ total: 2, quiet: true, tty: true, barAfterMs: 0, write: (t) => quiet.push(t) });
    silent.step("a");
    silent.note("n");
    silent.finish();
    expect(quiet).toEqual([]);
  });
});

describe("CLI packaging", () => {
  test('package.json "bin" runs the compiled ts/cli.ts with bun, and the CLI imports only what the package ships', () => {
    const pkg = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8"));
    expect(pkg.bin).toEqual({ "bun-arrow-device": "./dist/js/cli.js" });
    expect(pkg.files).toContain("dist/js");
    // scripts/build-js.sh compiles it (test/release/package.test.ts runs the installed one).
    expect(JSON.parse(readFileSync(join(repoRoot, "tsconfig.build.json"), "utf8")).files).toContain("ts/cli.ts");
    expect(readFileSync(join(repoRoot, "ts", "cli.ts"), "utf8")).toStartWith("#!/usr/bin/env bun\n");
    const modules = ["ts/cli.ts", ...readdirSync(join(repoRoot, "ts", "cli")).map((f) => `ts/cli/${f}`)];
    for (const module of modules) {
      const source = readFileSync(join(repoRoot, module), "utf8");
      for (const [, specifier] of source.matchAll(/(?:from|import\()\s*"([^"]+)"/g)) {
        const shipped = specifier.startsWith("./") || specifier.startsWith("../") && !specifier.includes("bench/") && !specifier.includes("test/");
        const external = specifier === "apache-arrow" || specifier.startsWith("node:") || specifier.startsWith("bun:");
        expect({ module, specifier, ok: shipped || external }).toEqual({ module, specifier, ok: true });
      }
    }
  });
});

describe("CLI doctor", () => {
  test("the built library exports every function its header declares", () => {
    const run = runCli(["doctor"], "none");
    expect(run.exitCode).toBe(0);
    const declared = declaredFunctions(readFileSync(defaultHeaderPath, "utf8"));
    expect(declared.length).toBeGreaterThan(50);
    expect(run.stdout).toContain(`exports all ${declared.length} functions ${defaultHeaderPath} declares`);
  }, 60_000);

  test("a function the library lacks is named, exit 1; so is every function of a foreign library", () => {
    withTempDir((dir) => {
      const header = join(dir, "arrow_device.h");
      const text = readFileSync(defaultHeaderPath, "utf8");
      writeFileSync(header, `${text}\nint abd_not_exported(void);\n`);
      const total = declaredFunctions(text).length + 1;
      const run = runCli(["doctor", "--header", header], "none");
      expect(run.exitCode).toBe(1);
      expect(run.stdout).toContain(`: 1 of the ${total} functions ${header} declares are missing:\n  abd_not_exported\n`);
    });
    const foreign = join(repoRoot, "build", "fixtures", "libc_peer.so");
    const run = runCli(["doctor", "--library", foreign], "none");
    expect(run.exitCode).toBe(1);
    expect(run.stdout).toStartWith(`${foreign}: ${declaredFunctions(readFileSync(defaultHeaderPath, "utf8")).length} of the`);
  }, 60_000);

  test("a library that is not there: exit 1 naming the path", () => {
    const child = Bun.spawnSync([process.execPath, join(repoRoot, "ts", "cli.ts"), "doctor"], {
      env: { ...process.env, ARROW_DEVICE_LIBRARY: fakePaths.missing }, stdout: "pipe", stderr: "pipe",
    });
    expect(child.exitCode).toBe(1);
    expect(child.stderr.toString()).toBe(`bun-arrow-device: doctor: no library at ${fakePaths.missing}\n`);
  }, 60_000);

  test("declarations are read from prototypes only: not comments, typedefs or macros", () => {
    const header = [
      "/* abd_in_comment(void) */",
      "typedef void (*abd_callback)(int);",
      "#define ABD_X abd_macro(1)",
      "abd_status abd_first(const char* name,",
      "                     int n);",
      "void abd_second(void (*produce)(double key, void* abd_arg));",
      "  abd_indented(void);",
    ].join("\n");
    expect(declaredFunctions(header)).toEqual(["abd_first", "abd_second"]);
  });
});
