/**
 * What one small cycle executes, counted rather than timed: instructions,
 * simulated first-level cache misses and mispredicted branches per cycle,
 * from valgrind's cachegrind (cache and branch simulation) running this
 * script's cycles in child processes. The counts do not drift with the
 * machine's load, so they decide changes of a few percent that timings on
 * a shared VM cannot; docs/benchmarks.md ("Code footprint") says what they
 * show.
 *
 * Each cycle runs twice under cachegrind, `first` and `second` times in a
 * process, and the difference of the two runs' totals is divided by the
 * difference of the counts: start-up, loading and the JIT's warm-up cancel
 * out. JSC's compiler and collector run on the JS thread
 * (BUN_JSC_useConcurrentJIT=false, BUN_JSC_useConcurrentGC=false), so the
 * counts of a cycle repeat within about 6% from run to run (where timings
 * on a shared VM move by 30%). --quick runs shorter, and its counts are
 * less settled: the export's came out a third lower than in full runs. "library" is the native code of
 * libarrow_device; "rest" is everything else: the JIT's code, Bun and
 * JSC, libc.
 *
 *   bun run bench -- --section code-footprint [--quick] [--cycles export,round-trip,c-import,floors]
 *
 * Needs valgrind on PATH. Not a test: nothing here is asserted.
 */
import { spawn, which } from "bun";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { exportArray, importRecordBatch } from "../ts/index.ts";
import { ImportedArray } from "../ts/raw.ts";
import { flatBatch } from "./compare/shapes.ts";
import { Columns, SlotPool, floor } from "./compare/floor.ts";
import { jsFloor } from "./compare/cases.ts";

/** The cycles, each over a batch of one nullable int32 column x 1000 rows
 * (every cost per batch, none per byte). */
const cycles: Record<string, { what: string; make: () => () => void }> = {
  export: {
    what: "exportArray + release()",
    make() {
      const batch = flatBatch(1, 1000, true);
      return () => exportArray(batch).release();
    },
  },
  "round-trip": {
    what: "exportArray + ImportedArray.fromDeviceArray + importRecordBatch + dispose() + release()",
    make() {
      const batch = flatBatch(1, 1000, true);
      return () => {
        const exported = exportArray(batch);
        const imported = ImportedArray.fromDeviceArray(exported.schema, exported.array);
        if (importRecordBatch(imported).numRows !== 1000) throw new Error("round trip: wrong row count");
        imported.dispose();
        exported.release();
      };
    },
  },
  "c-import": {
    what: "a C producer's batch (one FFI call) + ImportedArray.fromDeviceArray + importRecordBatch + dispose() + the C release",
    make() {
      const columns = new Columns(1, 1000, true);
      const pool = new SlotPool(1);
      return () => {
        floor.bf_fill_many(columns.data, 1, pool.schemas, pool.arrays);
        const imported = ImportedArray.fromDeviceArray(pool.schema(0), pool.array(0));
        if (importRecordBatch(imported).numRows !== 1000) throw new Error("C import: wrong row count");
        imported.dispose();
        pool.releaseAll(1);
      };
    },
  },
  floors: {
    what: "the round trip's floors (compare's IPC row): the C floor's export (one FFI call fills ArrowSchema + ArrowDeviceArray), the JS floor's views (toArrayBuffer with a C deallocator + a typed array per buffer, then transfer(0); its loop's two clock reads included) and the C release",
    make() {
      const columns = new Columns(1, 1000, true);
      const pool = new SlotPool(1);
      const views = jsFloor(columns);
      return () => {
        floor.bf_fill(columns.data, pool.schemas, pool.arrays);
        views.run(1);
        pool.releaseAll(1);
      };
    },
  },
};

/** The counts cachegrind reports (`--cache-sim=yes --branch-sim=yes`). */
type Events = Record<string, number>;

/** Totals of a cachegrind output file: the whole process and the
 * library's own code. */
function readCounts(file: string): { all: Events; library: Events; caches: string[] } {
  let names: string[] = [];
  const caches: string[] = [];
  const all: Events = {};
  const library: Events = {};
  let inLibrary = false;
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (line.startsWith("events: ")) names = line.slice(8).trim().split(/\s+/);
    else if (line.startsWith("desc: ")) caches.push(line.slice(6).replace(/\s+/g, " ").trim());
    // The library's Zig sources, and the Zig toolchain's (compiler_rt's
    // memcpy), which only the library links.
    else if (line.startsWith("fl=")) inLibrary = /\/zig\/|\/zig-[\d.]+\/|libarrow_device/.test(line);
    else if (/^\d/.test(line)) {
      const values = line.trim().split(/\s+/).slice(1);
      values.forEach((value, i) => {
        const name = names[i]!;
        all[name] = (all[name] ?? 0) + Number(value);
        if (inLibrary) library[name] = (library[name] ?? 0) + Number(value);
      });
    }
  }
  return { all, library, caches };
}

async function underCachegrind(cycle: string, count: number, dir: string): Promise<ReturnType<typeof readCounts>> {
  const out = join(dir, `${cycle}.${count}.out`);
  const child = spawn(["valgrind", "--tool=cachegrind", "--cache-sim=yes", "--branch-sim=yes", "--smc-check=all-non-file", `--cachegrind-out-file=${out}`,
    process.execPath, import.meta.path, "--child", cycle, String(count)], {
    env: { ...process.env, BUN_JSC_useConcurrentJIT: "false", BUN_JSC_useConcurrentGC: "false" },
    stdout: "pipe", stderr: "pipe",
  });
  const [code, stderr] = await Promise.all([child.exited, new Response(child.stderr).text()]);
  if (code !== 0) throw new Error(`cachegrind of ${cycle} x ${count} exited ${code}:\n${stderr.slice(-2000)}`);
  return readCounts(out);
}

/** What the table prints, per cycle: [column, cachegrind event]. */
const columns: [string, string][] = [["instructions", "Ir"], ["I1 misses", "I1mr"], ["D1 misses", "D1mr+D1mw"], ["mispredicted", "Bcm+Bim"]];

function event(events: Events, spec: string): number {
  return spec.split("+").reduce((sum, name) => sum + (events[name] ?? 0), 0);
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const quick = args.includes("--quick");
  const at = args.indexOf("--cycles");
  const chosen = at >= 0 ? (args[at + 1] ?? "").split(",") : Object.keys(cycles);
  for (const name of chosen) if (!(name in cycles)) throw new Error(`no cycle "${name}" (cycles: ${Object.keys(cycles).join(", ")})`);
  if (which("valgrind") === null) {
    console.error("code-footprint: valgrind is not on PATH; this section counts with valgrind's cachegrind");
    process.exit(1);
  }
  // The full mode's first run is past JSC's tier-ups under valgrind.
  const [first, second] = quick ? [30000, 50000] : [40000, 100000];
  const dir = mkdtempSync(join(tmpdir(), "code-footprint-"));
  try {
    console.log(`Per cycle, from cachegrind runs of ${first} and ${second} cycles (library = libarrow_device's native code; the rest is the JIT's code, Bun, JSC and libc)`);
    let caches: string[] = [];
    const rows: string[] = [];
    for (const name of chosen) {
      // Two at a time: one per core of a small machine.
      const [a, b] = await Promise.all([underCachegrind(name, first, dir), underCachegrind(name, second, dir)]);
      const per = (part: "all" | "library", spec: string) => (event(b[part], spec) - event(a[part], spec)) / (second - first);
      const cells = columns.map(([, spec]) => {
        const total = per("all", spec);
        const library = per("library", spec);
        return `${total.toFixed(0)} (library ${library.toFixed(0)})`.padStart(24);
      });
      rows.push(`${name.padEnd(12)} ${cells.join(" ")}`);
      caches = b.caches;
    }
    console.log(`simulated: ${caches.join("; ")}`);
    console.log(`${"cycle".padEnd(12)} ${columns.map(([c]) => c.padStart(24)).join(" ")}`);
    for (const row of rows) console.log(row);
    for (const name of chosen) console.log(`  ${name}: ${cycles[name]!.what}`);
    console.log(`valgrind ${(await new Response(spawn(["valgrind", "--version"], { stdout: "pipe" }).stdout).text()).trim()}, Bun ${Bun.version}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === "--child") {
  const cycle = cycles[process.argv[3]!]!.make();
  const count = Number(process.argv[4]);
  for (let i = 0; i < count; i++) cycle();
} else {
  await main();
}
