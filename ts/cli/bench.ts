/**
 * `bun-arrow-device bench`: host/device transfers and export/import, each
 * figure beside its baseline measured the same way in the same process.
 *
 * - transfer (per available runtime and size): `toDevice` + release (one
 *   allocation, the copies, waiting on the sync event, the free) against
 *   the raw driver calls for the same bytes through `DeviceRuntime`
 *   (alloc + synchronous copy + free); `ImportedArray.toHost` against one
 *   raw device-to-host copy.
 * - export_import (per size): exportArray + ImportedArray.fromDeviceArray +
 *   toRecordBatch + release of a float64 batch, against apache-arrow's own
 *   IPC round trip (tableToIPC + tableFromIPC), the copy it replaces.
 *
 * Each measurement keeps the median, the fastest and the slowest run (the
 * chart draws the spread). Throughput is given only for the transfers,
 * which copy their bytes; the export/import round trip copies nothing, so
 * its time does not grow with the bytes and a rate would mean nothing.
 *
 * The result is the JSON document of docs/cli.md. A fake driver's figures
 * are kept apart (`fake: true` on the runtime and on each figure): they are
 * CPU stand-ins, never GPU figures.
 */
import { RecordBatch, Table, makeVector, tableFromIPC, tableToIPC } from "apache-arrow";
import { ImportedArray, exportArray, toRecordBatch } from "../index.ts";
import { deviceRuntime, toDevice, type DeviceKind, type DeviceRuntime } from "../device.ts";
import { libraryPath } from "../diagnostics.ts";
import { benchSchemaId } from "./bench_schema.ts";
import { gbPerSecond, sizeLabel, timeLabel, timeRuns, type Timing } from "./measure.ts";
import { apacheArrowVersion, machineInfo, packageVersion, type MachineInfo } from "./platform.ts";
import { Progress } from "./progress.ts";
import { isRealGpu, runtimeReport, type RuntimeReport } from "./runtimes.ts";

/** One timed operation: what ran, its time per run (median, fastest,
 * slowest), and for a copy its median throughput (null otherwise). */
export type Measurement = Timing & { what: string; gbPerSecond: number | null };

export type Figure = {
  suite: "transfer" | "export_import";
  operation: "host_to_device" | "device_to_host" | "round_trip";
  /** The device runtime, null for host-only suites. */
  runtime: DeviceKind | null;
  deviceId: number | null;
  /** Measured through a fake driver: NOT a GPU figure. */
  fake: boolean;
  bytes: number;
  repeats: number;
  ours: Measurement;
  baseline: Measurement;
  /** baseline.medianNs / ours.medianNs: above 1, ours is faster. */
  ratio: number;
};

export type BenchResult = {
  schema: typeof benchSchemaId;
  createdAt: string;
  versions: { package: string; library: string; bun: string; apacheArrow: string };
  machine: MachineInfo;
  runtimes: RuntimeReport[];
  /** Whether any figure was measured on a real GPU. */
  realGpu: boolean;
  figures: Figure[];
  warnings: string[];
};

export type BenchOptions = {
  kinds: DeviceKind[];
  /** Transfer sizes in MiB (default: 1,16,64,256 on a GPU, 1,4 on a fake driver). */
  sizesMiB: number[] | null;
  /** Rows of the export/import batches (default 1e3, 1e5, 1e6). */
  rows: number[] | null;
  repeats: number | null;
  host: boolean;
  device: boolean;
  quiet: boolean;
};

const MiB = 2 ** 20;

const driverCalls: Record<DeviceKind, { alloc: string; h2d: string; d2h: string; free: string }> = {
  cuda: { alloc: "cuMemAlloc_v2", h2d: "cuMemcpyHtoD_v2", d2h: "cuMemcpyDtoH_v2", free: "cuMemFree_v2" },
  rocm: { alloc: "hipMalloc", h2d: "hipMemcpy", d2h: "hipMemcpy", free: "hipFree" },
};

type Timed = Timing & { what: string };

function figure(base: Omit<Figure, "ours" | "baseline" | "ratio">, ours: Timed, baseline: Timed): Figure {
  // Only the transfers copy their bytes: a rate is theirs alone.
  const rate = (t: Timed) => (base.suite === "transfer" ? gbPerSecond(base.bytes, t.medianNs) : null);
  const measurement = (t: Timed): Measurement => ({ what: t.what, medianNs: t.medianNs, minNs: t.minNs, maxNs: t.maxNs, gbPerSecond: rate(t) });
  return { ...base, ours: measurement(ours), baseline: measurement(baseline), ratio: baseline.medianNs / ours.medianNs };
}

function transfers(rt: DeviceRuntime, report: RuntimeReport, megabytes: number, repeats: number): Figure[] {
  const bytes = megabytes * MiB;
  const values = new Float64Array(bytes / 8).map((_, i) => i * 0.5);
  const column = makeVector(values);
  const calls = driverCalls[rt.kind];
  const base = { suite: "transfer" as const, runtime: rt.kind, deviceId: 0, fake: report.fake, bytes, repeats };

  const rawH2D = timeRuns(repeats, () => {
    using fresh = rt.allocate(bytes);
    rt.copy("host_to_device", fresh, values);
  });
  const oursH2D = timeRuns(repeats, () => toDevice(column, { device: rt.kind, id: 0 }).release()); // release waits on the event

  using device = rt.allocate(bytes);
  rt.copy("host_to_device", device, values);
  const back = new Float64Array(bytes / 8);
  const rawD2H = timeRuns(repeats, () => rt.copy("device_to_host", back, device));
  const handle = toDevice(column, { device: rt.kind, id: 0 });
  using imported = ImportedArray.fromDeviceArray(handle.schema, handle.array);
  handle.release();
  const oursD2H = timeRuns(repeats, () => imported.toHost().dispose());

  return [
    figure({ ...base, operation: "host_to_device" },
      { what: "toDevice + release (alloc, copy, event, wait, free)", ...oursH2D },
      { what: `${calls.alloc} + ${calls.h2d} + ${calls.free}`, ...rawH2D }),
    figure({ ...base, operation: "device_to_host" },
      { what: "ImportedArray.toHost (wait on sync_event, copy, CPU import)", ...oursD2H },
      { what: calls.d2h, ...rawD2H }),
  ];
}

function exportImport(rows: number, repeats: number): Figure {
  const batch = new Table({ x: makeVector(new Float64Array(rows).map((_, i) => i)) }).batches[0];
  const table = new Table([batch]);
  const ours = timeRuns(repeats, () => {
    const exported = exportArray(batch);
    const imported = ImportedArray.fromDeviceArray(exported.schema, exported.array);
    const back: RecordBatch = toRecordBatch(imported);
    if (back.numRows !== rows) throw new Error("the round trip lost rows");
    imported.dispose();
    exported.release();
  });
  const ipc = timeRuns(repeats, () => {
    if (tableFromIPC(tableToIPC(table, "stream")).numRows !== rows) throw new Error("the IPC round trip lost rows");
  });
  return figure(
    { suite: "export_import", operation: "round_trip", runtime: null, deviceId: null, fake: false, bytes: rows * 8, repeats },
    { what: "exportArray + ImportedArray.fromDeviceArray + toRecordBatch + release", ...ours },
    { what: "apache-arrow tableToIPC + tableFromIPC", ...ipc },
  );
}

export function runBench(options: BenchOptions): BenchResult {
  const runtimes = options.device ? options.kinds.map(runtimeReport) : [];
  const usable = runtimes.filter((r) => r.available && r.devices.length > 0);
  const warnings: string[] = [];
  const sizesFor = (r: RuntimeReport) => options.sizesMiB ?? (r.fake ? [1, 4] : [1, 16, 64, 256]);
  const rows = options.host ? options.rows ?? [1e3, 1e5, 1e6] : [];
  const total = usable.reduce((n, r) => n + sizesFor(r).length, 0) + rows.length;
  const progress = new Progress({ total, quiet: options.quiet });

  const figures: Figure[] = [];
  for (const report of runtimes) {
    if (!report.available) {
      progress.note(`${report.kind}: not available: ${report.reason}`);
      continue;
    }
    if (report.fake) {
      const warning = `${report.kind}: ${report.library} is a FAKE driver (a CPU stand-in for tests): its figures are NOT GPU figures`;
      warnings.push(warning);
      progress.note(warning);
    }
    const rt = deviceRuntime(report.kind);
    const repeats = options.repeats ?? (report.fake ? 3 : 9);
    for (const megabytes of sizesFor(report)) {
      progress.step(`${report.kind} transfers, ${megabytes} MiB`);
      figures.push(...transfers(rt, report, megabytes, repeats));
    }
  }
  for (const n of rows) {
    progress.step(`export/import, ${n} rows`);
    figures.push(exportImport(n, options.repeats ?? (n >= 1e6 ? 9 : 25)));
    Bun.gc(true);
  }
  progress.finish();
  return {
    schema: benchSchemaId,
    createdAt: new Date().toISOString(),
    versions: { package: packageVersion(), library: libraryPath(), bun: Bun.version, apacheArrow: apacheArrowVersion() },
    machine: machineInfo(),
    runtimes,
    realGpu: runtimes.some(isRealGpu) && figures.some((f) => f.runtime !== null && !f.fake),
    figures,
    warnings,
  };
}

/** The result as a text table, for a terminal. */
export function benchText(result: BenchResult): string {
  const lines = [`bun-arrow-device ${result.versions.package} bench: Bun ${result.versions.bun}, apache-arrow ${result.versions.apacheArrow}, ${result.machine.platform}, ${result.machine.cpuModel} (${result.machine.cpuCores} cores)`];
  for (const r of result.runtimes) {
    lines.push(r.available
      ? `${r.kind}: ${r.devices.map((d) => d.name).join(", ")}; driver ${r.driverVersionText} (${r.library})${r.fake ? "  *** FAKE DRIVER: not GPU figures ***" : ""}`
      : `${r.kind}: not available: ${r.reason}`);
  }
  lines.push("", "suite          operation       runtime  size        ours (min-max)                baseline (min-max)            speedup  GB/s ours/base  baseline");
  const time = (m: Measurement) => `${timeLabel(m.medianNs)} (${timeLabel(m.minNs)}-${timeLabel(m.maxNs)})`;
  const rate = (m: Measurement) => (m.gbPerSecond === null ? "-" : m.gbPerSecond.toFixed(2));
  for (const f of result.figures) {
    lines.push([
      f.suite.padEnd(14), f.operation.padEnd(15), `${f.runtime ?? "host"}${f.fake ? "*" : ""}`.padEnd(8), sizeLabel(f.bytes).padStart(10),
      ` ${time(f.ours).padEnd(29)}`, time(f.baseline).padEnd(29), `${f.ratio.toFixed(2)}x`.padStart(8),
      `${rate(f.ours)}/${rate(f.baseline)}`.padStart(15), ` ${f.baseline.what}`,
    ].join(" "));
  }
  lines.push("", "times per operation: median (fastest-slowest run); speedup: baseline median / ours; GB/s only for copies");
  if (result.figures.some((f) => f.fake)) lines.push("", "* fake driver: a CPU stand-in for tests; these are NOT GPU figures.");
  for (const w of result.warnings) if (!w.includes("FAKE")) lines.push(`warning: ${w}`);
  return lines.join("\n");
}
