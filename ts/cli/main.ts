/**
 * The command line: `bunx bun-arrow-device <command>` (package.json "bin").
 *
 *   info     platform, library, versions, device runtimes
 *   bench    transfer and export/import benchmarks, text or JSON
 *   chart    an SVG chart of a `bench --out` file
 *   doctor   the native library against its C header
 *
 * Results go to stdout, progress and errors to stderr. Exit codes: 0 done,
 * 1 failed (library not loadable, unreadable or unwritable file), 2 wrong
 * command line, 3 `bench --require-gpu` without a real GPU. Every error is
 * one line on stderr (a list of problems may follow it), never a stack
 * trace. Every input is bounded: numeric options have ranges (cli/args.ts
 * `benchLimits`) and files have size limits. The commands load the native
 * library only when they need it, so `--help` and usage errors work
 * without one.
 */
import { totalmem } from "node:os";
import { UsageError, benchLimits, benchMemoryProblem, integerList, parseArgs, type CommandSpec } from "./args.ts";
import { FileError, checkWritable, readBounded, writeText } from "./files.ts";
import type { DeviceKind } from "../device/runtime.ts";

/** The most of a bench result `chart` reads: a result of thousands of
 * figures is a few MiB. */
export const chartInputLimitBytes = 16 * 2 ** 20;

const help: Record<string, string> = {
  main: `Usage: bun-arrow-device <command> [options]

Commands:
  info     platform, library path and version, apache-arrow version, and each
           device runtime (CUDA, ROCm) with its devices or why it is unavailable
  bench    host/device transfer and export/import benchmarks against their
           raw baselines (text, or JSON with --json / --out)
  chart    turn a bench JSON file into an SVG chart
  doctor   check that the native library exports every function its C
           header declares

Run \`bun-arrow-device <command> --help\` for a command's options.
Exit codes: 0 ok, 1 failed, 2 wrong command line, 3 --require-gpu without a GPU.`,
  info: `Usage: bun-arrow-device info [--json]

Prints the platform id, the native library's path and version, the
apache-arrow version, and for each device runtime the library drives its
driver library, driver version and devices, or the reason it is not available.
Fake drivers (the project's test stand-ins) are reported as such.

  --json   print the same as a JSON object`,
  bench: `Usage: bun-arrow-device bench [options]

Measures, each beside its baseline in the same process:
  transfer       toDevice, ImportedArray.toHost, DeviceRuntime.copy and
                 allocate against the raw driver opened directly (pinned and
                 pageable cuMemcpy*Async, cuMemAlloc; HIP alike), copies
                 timed with events on the stream, ours / raw per size
  export_import  exportArray + importRecordBatch against apache-arrow's
                 IPC round trip
Progress goes to stderr (a progress bar on a terminal).

  --json              print the result as JSON (schema: docs/cli.md)
  --out FILE          also write the JSON result to FILE
  --require-gpu       exit 3 before measuring unless a real GPU is usable
                      (fake drivers do not count)
  --kinds LIST        runtimes to measure, comma-separated (default: every
                      runtime \`info\` lists)
  --sizes LIST        transfer sizes in MiB, up to ${benchLimits.sizesMiB}
                      (default: 1 KiB to 1 GiB by powers of 4, as far as
                      memory allows; --quick or a fake driver: to 1 MiB)
  --quick             the short sweep, 1 KiB to 1 MiB
  --rows LIST         export/import batch rows, up to ${benchLimits.rows.toLocaleString("en-US")}
                      (default 1000,100000,1000000)
  --repeats N         timed runs per figure, 1 to ${benchLimits.repeats}
                      (median, fastest and slowest reported)
  --no-host           skip export/import
  --no-device         skip transfers
  --quiet             no progress on stderr`,
  chart: `Usage: bun-arrow-device chart FILE.json --out chart.svg

Draws time per operation against size on log-log axes, ours beside the
baseline, with the spread from the fastest to the slowest run as a band;
one panel per suite, operation and runtime, from a \`bench --out\` (or
--json) file of at most ${chartInputLimitBytes / 2 ** 20} MiB. Transfer panels, whose operations
copy their bytes, also give the throughput.

  --out FILE   the SVG file to write (required)`,
  doctor: `Usage: bun-arrow-device doctor [--library PATH] [--header PATH]

Checks that the native library exports every function its C header
(lib/include/arrow_device.h) declares; names each one missing. Exit 1 on a
mismatch (a stale or foreign build).

  --library PATH   the library to check (default: the one this package loads)
  --header PATH    the header (default: the package's arrow_device.h)`,
};

const specs: Record<string, CommandSpec> = {
  info: { flags: ["json", "help"], values: [], positionals: 0 },
  bench: { flags: ["json", "require-gpu", "no-host", "no-device", "quiet", "quick", "help"], values: ["out", "kinds", "sizes", "rows", "repeats"], positionals: 0 },
  chart: { flags: ["help"], values: ["out"], positionals: 1 },
  doctor: { flags: ["help"], values: ["library", "header"], positionals: 0 },
};

/** A failure that is not the user's command line: exit code 1. */
class CommandFailed extends Error {}

async function loadLibrary(): Promise<void> {
  try {
    await import("../core/ffi/library.ts");
  } catch (error) {
    throw new CommandFailed(`the native library could not be loaded: ${(error as Error).message}`);
  }
}

async function info(json: boolean): Promise<number> {
  await loadLibrary();
  const { libraryPath } = await import("../core/ffi/library.ts");
  const { platformId, packageVersion, apacheArrowVersion } = await import("./platform.ts");
  const { deviceKinds, runtimeReport, unavailableText } = await import("./runtimes.ts");
  const report = {
    package: packageVersion(), platform: platformId(), bun: Bun.version, library: libraryPath(),
    apacheArrow: apacheArrowVersion(), runtimes: deviceKinds.map(runtimeReport),
  };
  if (json) {
    console.log(JSON.stringify(report, null, 2));
    return 0;
  }
  const lines = [
    `bun-arrow-device ${report.package}`,
    `platform      ${report.platform} (Bun ${report.bun})`,
    `library       ${report.library} (version ${report.package})`,
    `apache-arrow  ${report.apacheArrow}`,
  ];
  for (const r of report.runtimes) {
    if (!r.available) {
      lines.push(`${r.kind.padEnd(13)} ${unavailableText(r)}`);
      continue;
    }
    const fake = r.fake ? " FAKE driver (a test stand-in, not a GPU)," : "";
    lines.push(`${r.kind.padEnd(13)} available:${fake} driver ${r.driverVersionText} (${r.driverVersion}), ${r.library}, ${r.devices.length} device(s)`);
    for (const d of r.devices) lines.push(`${" ".repeat(16)}${d.id}: ${d.name}, ${(d.totalMemoryBytes / 2 ** 30).toFixed(1)} GiB`);
  }
  console.log(lines.join("\n"));
  return 0;
}

function integers(option: "sizes" | "rows" | "repeats", text: string | undefined, max: number): number[] | null {
  return text === undefined ? null : integerList("bench", option, text, max, benchLimits.listLength);
}

async function bench(args: ReturnType<typeof parseArgs>): Promise<number> {
  const { deviceKinds } = await import("./runtimes.ts");
  const kindsText = args.values.get("kinds") ?? deviceKinds.join(",");
  const kinds = [...new Set(kindsText.split(",").map((k) => k.trim()))];
  const unknown = kinds.filter((k) => !(deviceKinds as readonly string[]).includes(k));
  if (unknown.length > 0) throw new UsageError(`bench: --kinds takes ${deviceKinds.join(" and/or ")}, got "${unknown.join(",")}"`);
  const repeatsText = args.values.get("repeats");
  if (repeatsText?.includes(",")) throw new UsageError("bench: --repeats takes one number");
  const repeats = integers("repeats", repeatsText, benchLimits.repeats);
  if (args.flags.has("no-host") && args.flags.has("no-device")) throw new UsageError("bench: --no-host and --no-device leave nothing to measure");
  const options = {
    kinds: kinds as DeviceKind[],
    sizesMiB: integers("sizes", args.values.get("sizes"), benchLimits.sizesMiB),
    quick: args.flags.has("quick"),
    rows: integers("rows", args.values.get("rows"), benchLimits.rows),
    repeats: repeats?.[0] ?? null,
    host: !args.flags.has("no-host"),
    device: !args.flags.has("no-device"),
    quiet: args.flags.has("quiet"),
  };
  const memory = benchMemoryProblem(options.device ? options.sizesMiB ?? [] : [], options.host ? options.rows ?? [] : [], totalmem());
  if (memory !== null) throw new UsageError(memory);
  const out = args.values.get("out");
  // Before measuring: a run that cannot save its result is refused at once.
  if (out !== undefined) checkWritable(out, "the result to");
  await loadLibrary();
  const { runtimeReport, isRealGpu, unavailableText } = await import("./runtimes.ts");
  if (args.flags.has("require-gpu")) {
    const reports = options.kinds.map(runtimeReport);
    if (!reports.some(isRealGpu)) {
      const why = reports.map((r) => `  ${r.kind}: ${!r.available ? unavailableText(r) : r.fake ? `${r.library} is a fake driver (a test stand-in), not a GPU` : "no device"}`);
      console.error(`bench: --require-gpu: no real GPU is usable here\n${why.join("\n")}`);
      return 3;
    }
  }
  const { runBench, benchText } = await import("./bench.ts");
  let result;
  try {
    result = runBench(options);
  } catch (error) {
    const e = error as Error;
    const hint = e instanceof RangeError ? " (try smaller --sizes or --rows)" : "";
    throw new CommandFailed(`bench: ${e.message.split("\n")[0]}${hint}`);
  }
  const json = JSON.stringify(result, null, 2);
  // The result reaches stdout first: a failed --out write loses nothing.
  console.log(args.flags.has("json") ? json : benchText(result));
  if (out !== undefined) {
    writeText(out, `${json}\n`, "the result to");
    if (!options.quiet) console.error(`bench: wrote ${out}`);
  }
  return 0;
}

async function chart(args: ReturnType<typeof parseArgs>): Promise<number> {
  const input = args.positionals[0];
  const out = args.values.get("out");
  if (input === undefined) throw new UsageError("chart: which bench JSON file? (bun-arrow-device chart FILE.json --out chart.svg)");
  if (out === undefined) throw new UsageError("chart: --out FILE.svg is required");
  const { benchSchemaId, schemaProblems } = await import("./bench_schema.ts");
  const { benchChart } = await import("./chart.ts");
  checkWritable(out, "the chart to");
  const text = readBounded(input, chartInputLimitBytes, "the bench result");
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new CommandFailed(`chart: cannot read ${input} as JSON: ${(error as Error).message}`);
  }
  const schema = (parsed as { schema?: unknown } | null)?.schema;
  if (typeof schema === "string" && schema.startsWith("bun-arrow-device/bench/") && schema !== benchSchemaId) {
    throw new CommandFailed(`chart: ${input} is a ${schema} result; this version charts ${benchSchemaId} (run bench again)`);
  }
  const problems = schemaProblems(parsed);
  if (problems.length > 0) {
    const shown = problems.slice(0, 10).join("\n  ");
    throw new CommandFailed(`chart: ${input} is not a bench result (docs/cli.md):\n  ${shown}${problems.length > 10 ? `\n  ... ${problems.length - 10} more` : ""}`);
  }
  writeText(out, benchChart(parsed as import("./bench.ts").BenchResult), "the chart to");
  console.error(`chart: wrote ${out}`);
  return 0;
}

async function runDoctor(args: ReturnType<typeof parseArgs>): Promise<number> {
  let library = args.values.get("library");
  if (library === undefined) {
    // The library this package loads; if loading it fails, the one it tried.
    const { LibraryLoadError } = await import("../core/errors.ts");
    try {
      library = (await import("../core/ffi/library.ts")).libraryPath();
    } catch (error) {
      if (!(error instanceof LibraryLoadError)) throw new CommandFailed(`doctor: ${(error as Error).message} (check another library with --library)`);
      library = error.path;
    }
  }
  const { doctor, defaultHeaderPath } = await import("./doctor.ts");
  let report;
  try {
    report = doctor(library, args.values.get("header") ?? defaultHeaderPath);
  } catch (error) {
    throw new CommandFailed(`doctor: ${(error as Error).message}`);
  }
  if (report.missing.length > 0) {
    console.log(`${report.library}: ${report.missing.length} of the ${report.declared} functions ${report.header} declares are missing:\n  ${report.missing.join("\n  ")}`);
    return 1;
  }
  console.log(`${report.library}: exports all ${report.declared} functions ${report.header} declares`);
  return 0;
}

/** Runs the CLI on `argv` (without `bun` and the script) and returns the exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    if (command === undefined || command === "--help" || command === "-h" || command === "help") {
      const topic = command === "help" ? rest[0] : undefined;
      if (topic !== undefined && !(Object.hasOwn(help, topic) && topic !== "main")) throw new UsageError(`help: unknown command "${topic}"`);
      if (rest.length > (command === "help" ? 1 : 0)) throw new UsageError(`${command}: unexpected argument "${rest[command === "help" ? 1 : 0]}"`);
      console.log(help[topic ?? "main"]);
      return command === undefined ? 2 : 0;
    }
    if (command === "--version") {
      if (rest.length > 0) throw new UsageError(`--version: unexpected argument "${rest[0]}"`);
      const { packageVersion } = await import("./platform.ts");
      console.log(packageVersion());
      return 0;
    }
    const spec = Object.hasOwn(specs, command) ? specs[command] : undefined;
    if (spec === undefined) {
      throw new UsageError(`unknown command "${command}". Commands: ${Object.keys(specs).join(", ")} (see \`bun-arrow-device --help\`)`);
    }
    if (rest.includes("--help") || rest.includes("-h")) {
      console.log(help[command]);
      return 0;
    }
    const args = parseArgs(command, rest, spec);
    if (command === "info") return await info(args.flags.has("json"));
    if (command === "bench") return await bench(args);
    if (command === "doctor") return await runDoctor(args);
    return await chart(args);
  } catch (error) {
    if (error instanceof UsageError) {
      console.error(`bun-arrow-device: ${error.message}`);
      return 2;
    }
    if (error instanceof CommandFailed) {
      console.error(`bun-arrow-device: ${error.message}`);
      return 1;
    }
    if (error instanceof FileError) {
      console.error(`bun-arrow-device: ${command}: ${error.message}`);
      return 1;
    }
    // Anything else still gets one line, never a stack trace.
    const e = error as Error;
    console.error(`bun-arrow-device: ${command}: ${e?.name ?? "Error"}: ${String(e?.message ?? error).split("\n")[0]}`);
    return 1;
  }
}

