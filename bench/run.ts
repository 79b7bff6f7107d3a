/**
 * The one benchmark entry point (`bun run bench`). Each section is a
 * script of bench/ run in a process of its own (so that one section's
 * garbage and threads never land in another's figures), one after the
 * other, with this process's Bun.
 *
 *   bun run bench                          # the comparison against pyarrow and the floors
 *   bun run bench -- --quick               # the same, shorter
 *   bun run bench -- --list                # every section and what it measures
 *   bun run bench -- --section streams     # one section (or several: a,b)
 *   bun run bench -- --all --quick         # every section
 *
 * Any other argument goes to the sections (`--results`, `--json out.json`
 * and `--smoke` to the comparison; `--quick` to every section that has a
 * short mode). docs/benchmarks.md says what each section measures against
 * what, and what the figures show.
 */
import { join } from "node:path";

type Section = {
  /** What the section measures, named by what it measures. */
  name: string;
  /** Its script, in bench/. */
  script: string;
  /** One line for --list. */
  measures: string;
  /** Arguments that make it short, for --quick (none: it is short already). */
  quick?: string[];
};

export const sections: Section[] = [
  { name: "compare", script: "compare.ts", quick: ["--quick"], measures: "export, import, streams, async streams and the IPC round trip against pyarrow, a C floor and a JS floor, with the targets and their verdicts" },
  { name: "export-fixed-cost", script: "export_fixed.ts", measures: "exportArray + release per batch for a few shapes (--against <checkout> times another checkout in the same rounds)" },
  { name: "export-import", script: "export_import.ts", quick: ["--quick"], measures: "zero-copy export and import per buffer against apache-arrow's IPC round trip" },
  { name: "streams", script: "streams.ts", quick: ["--quick"], measures: "batches per second through both stream kinds, both directions, against a C loop over a native stream" },
  { name: "stream-batch-stages", script: "stream_batch_stages.ts", quick: ["1000", "50", "10"], measures: "one synchronous stream pull split by stage, beside the JS floor of the same import" },
  { name: "async-streams", script: "async.ts", quick: ["--quick"], measures: "async device streams, both roles, queue depths 1, 4 and 16, against a synchronous loop of the same work" },
  { name: "async-producer-stages", script: "async_producer_stages.ts", quick: ["500", "3"], measures: "where an async producer's batch time goes, against the synchronous export loop" },
  { name: "address-probe", script: "probe.ts", quick: ["--rounds", "3"], measures: "what the fault-safe address probe adds to an import, from our export and from a C producer" },
  { name: "code-footprint", script: "footprint.ts", quick: ["--quick"], measures: "instructions, simulated cache misses and mispredicted branches per small cycle (export, round trip, C import), counted under valgrind's cachegrind" },
  { name: "reexport", script: "reexport.ts", measures: "re-export and relay of imported data against exporting from apache-arrow and importing into a handle" },
  { name: "arrow-objects", script: "arrow_objects.ts", quick: ["10", "20"], measures: "what apache-arrow's own objects of an import cost on top of the JS floor" },
  { name: "lazy-cycle", script: "lazy_cycle.ts", quick: ["1"], measures: "the full import cycle (C batch, import, RecordBatch, dispose) with ours alone in the process, batch read and not read" },
  { name: "external-memory-gc", script: "external_memory_gc.ts", quick: ["--quick"], measures: "what an ArrayBuffer over native memory costs Bun's collector, with no library code" },
  { name: "adbc", script: "adbc.ts", quick: ["--quick"], measures: "DuckDB through bun-arrow-device/adbc against pyarrow's adbc_driver_manager: 1e6 x 4 read, the IPC route, ingest, SELECT 1" },
  { name: "device-transfers", script: "device.ts", measures: "toDevice / toHost GB/s per runtime and size against the raw driver's copies (needs a GPU or the fake drivers)" },
];

const usage = `usage: bun run bench -- [--list] [--section NAME[,NAME...] | --all] [--quick] [section arguments]
sections: ${sections.map((s) => s.name).join(", ")}`;

/** Which sections to run and with what arguments, or a usage error. */
export function plan(argv: readonly string[]): { list: true } | { runs: { section: Section; args: string[] }[] } | { error: string } {
  let chosen: Section[] | null = null;
  let quick = false;
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--list") return { list: true };
    if (arg === "--all") { chosen = sections; continue; }
    if (arg === "--quick") { quick = true; continue; }
    if (arg === "--section") {
      const names = argv[++i];
      if (names === undefined) return { error: "--section needs a section name" };
      chosen = [];
      for (const name of names.split(",")) {
        const section = sections.find((s) => s.name === name);
        if (section === undefined) return { error: `no section "${name}"` };
        chosen.push(section);
      }
      continue;
    }
    rest.push(arg);
  }
  const runs = (chosen ?? [sections[0]!]).map((section) => ({ section, args: [...(quick ? section.quick ?? [] : []), ...rest] }));
  return { runs };
}

if (import.meta.main) {
  const planned = plan(process.argv.slice(2));
  if ("error" in planned) {
    console.error(`bench: ${planned.error}\n${usage}`);
    process.exit(2);
  }
  if ("list" in planned) {
    const width = Math.max(...sections.map((s) => s.name.length));
    for (const s of sections) console.log(`${s.name.padEnd(width)}  ${s.measures}`);
    process.exit(0);
  }
  let failed = 0;
  for (const { section, args } of planned.runs) {
    if (planned.runs.length > 1) console.log(`\n== ${section.name}: ${section.measures}`);
    const child = Bun.spawnSync([process.execPath, join(import.meta.dir, section.script), ...args], { stdout: "inherit", stderr: "inherit", cwd: join(import.meta.dir, "..") });
    if (child.exitCode !== 0) {
      console.error(`bench: section ${section.name} exited ${child.exitCode}`);
      failed++;
    }
  }
  process.exit(failed === 0 ? 0 : 1);
}
