/**
 * `bun-arrow-device bench`: host/device transfers and export/import, each
 * figure beside its baseline measured the same way in the same run.
 *
 * - transfer (per available runtime, per size of a sweep from 1 KiB up, as
 *   `bandwidthTest --mode=shmoo` does): every copy is timed with events
 *   (timing enabled) recorded on the stream around it, read with
 *   cuEventElapsedTime / hipEventElapsedTime, beside the raw driver opened
 *   directly (raw_driver.ts: no code of this library in between):
 *   - host_to_device: `toDevice` of JS memory on a stream against the raw
 *     pinned cuMemcpyHtoDAsync of the same bytes (and the raw pageable
 *     one); host_to_device_pinned: the same from a batch over pinned
 *     memory (`DeviceMemory.hostView`);
 *   - device_to_host: `ImportedArray.toHost` against the raw pinned
 *     cuMemcpyDtoHAsync (and the pageable one);
 *   - device_to_device: `DeviceRuntime.copy` against cuMemcpyDtoDAsync;
 *   - allocate: `DeviceRuntime.allocate` + free against cuMemAlloc_v2 +
 *     cuMemFree_v2, by the host clock: allocation is kept apart from the
 *     copies (the raw copies reuse their buffers).
 *   Ours also gets the host wall clock of the whole call (`endToEnd`:
 *   allocation, staging, copies, waiting), and the ratio ours / raw per
 *   repetition, whose median and min-max spread are reported.
 * - export_import (per size): exportArray + ImportedArray.fromDeviceArray +
 *   importRecordBatch + release of a float64 batch, against apache-arrow's own
 *   IPC round trip (tableToIPC + tableFromIPC), the copy it replaces.
 *
 * Each measurement keeps the median, the fastest and the slowest run (the
 * chart draws the spread). The result is the JSON document of docs/cli.md.
 * A fake driver's figures are kept apart (`fake: true` on the runtime and
 * on each figure): they are CPU stand-ins, never GPU figures (its event
 * times are host times).
 */
import { ptr } from "bun:ffi";
import { exportImportCase, float64Column } from "../arrow/bench_cases.ts";
import { toDevice } from "../arrow/device.ts";
import { libraryPath } from "../core/ffi/library.ts";
import { deviceRuntime, type DeviceKind, type DeviceRuntime } from "../device/runtime.ts";
import { ImportedArray } from "../native/imported.ts";
import { benchMemoryProblem } from "./args.ts";
import { benchSchemaId } from "./bench_schema.ts";
import { gbPerSecond, median, sizeLabel, timeLabel, timeRuns, wallSamples, type Timing } from "./measure.ts";
import { apacheArrowVersion, machineInfo, packageVersion, type MachineInfo } from "./platform.ts";
import { Progress } from "./progress.ts";
import { openRawDriver, rawCallNames, type RawDriver } from "./raw_driver.ts";
import { isRealGpu, runtimeReport, unavailableText, type RuntimeReport } from "./runtimes.ts";
import { totalmem } from "node:os";

/** One timed operation: what ran, how it was timed, its time per run
 * (median, fastest, slowest), and for a copy its median throughput (null
 * otherwise). */
export type Measurement = Timing & { what: string; timing: "event" | "wall"; gbPerSecond: number | null };

export type Figure = {
  suite: "transfer" | "export_import";
  operation: "host_to_device" | "host_to_device_pinned" | "device_to_host" | "device_to_device" | "allocate" | "round_trip";
  /** The device runtime, null for host-only suites. */
  runtime: DeviceKind | null;
  deviceId: number | null;
  /** Measured through a fake driver: NOT a GPU figure. */
  fake: boolean;
  bytes: number;
  repeats: number;
  ours: Measurement;
  /** transfer: the raw driver (pinned host memory for host copies). */
  baseline: Measurement;
  /** The raw driver's copy from/to ordinary (pageable) host memory; null
   * where there is none. */
  pageableBaseline: Measurement | null;
  /** Ours by the host clock, the whole call (transfers); null otherwise. */
  endToEnd: Measurement | null;
  /** baseline.medianNs / ours.medianNs: above 1, ours is faster. */
  ratio: number;
  /** The same ratio per repetition: the slowest and the fastest. */
  ratioMin: number;
  ratioMax: number;
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
  /** Transfer sizes in MiB (default: the sweep, see `sweepBytes`). */
  sizesMiB: number[] | null;
  /** The short sweep (1 KiB to 1 MiB, the default under a fake driver). */
  quick: boolean;
  /** Rows of the export/import batches (default 1e3, 1e5, 1e6). */
  rows: number[] | null;
  repeats: number | null;
  host: boolean;
  device: boolean;
  quiet: boolean;
};

const KiB = 1024;
const MiB = 2 ** 20;

/** Transfer sizes: 1 KiB to 1 GiB by powers of 4 (quick: to 1 MiB). */
export function sweepBytes(quick: boolean): number[] {
  const sizes: number[] = [];
  for (let bytes = KiB; bytes <= (quick ? MiB : 2 ** 30); bytes *= 4) sizes.push(bytes);
  return sizes;
}

type Timed = Timing & { what: string; timing: "event" | "wall"; samples: number[] };

function timed(what: string, timing: "event" | "wall", samples: number[]): Timed {
  return { what, timing, samples, medianNs: median(samples), minNs: Math.min(...samples), maxNs: Math.max(...samples) };
}

function measurement(t: Timed, bytes: number | null): Measurement {
  return { what: t.what, timing: t.timing, medianNs: t.medianNs, minNs: t.minNs, maxNs: t.maxNs, gbPerSecond: bytes === null ? null : gbPerSecond(bytes, t.medianNs) };
}

function figure(base: Omit<Figure, "ours" | "baseline" | "pageableBaseline" | "endToEnd" | "ratio" | "ratioMin" | "ratioMax">, ours: Timed, baseline: Timed, extra: { pageable?: Timed; endToEnd?: Timed } = {}): Figure {
  // Only copies move their bytes: a rate is theirs alone.
  const copies = base.suite === "transfer" && base.operation !== "allocate";
  const bytes = copies ? base.bytes : null;
  const n = Math.min(ours.samples.length, baseline.samples.length);
  const perRun = Array.from({ length: n }, (_, i) => baseline.samples[i] / ours.samples[i]);
  return {
    ...base,
    ours: measurement(ours, bytes),
    baseline: measurement(baseline, bytes),
    pageableBaseline: extra.pageable ? measurement(extra.pageable, bytes) : null,
    endToEnd: extra.endToEnd ? measurement(extra.endToEnd, bytes) : null,
    ratio: baseline.medianNs / ours.medianNs,
    ratioMin: Math.min(...perRun),
    ratioMax: Math.max(...perRun),
  };
}

/** Times `repeats` runs (after one warm-up) with two timing events recorded
 * on `stream` around `run`, and the host clock around the whole; `after`
 * (not timed) cleans up each run. */
function eventRuns(raw: RawDriver, stream: number, repeats: number, run: () => unknown, after: (value: unknown) => void = () => {}): { event: number[]; wall: number[] } {
  const start = raw.createEvent();
  const end = raw.createEvent();
  try {
    const event: number[] = [];
    const wall: number[] = [];
    for (let i = 0; i <= repeats; i++) {
      raw.synchronizeStream(stream);
      const t0 = Bun.nanoseconds();
      raw.record(start, stream);
      const value = run();
      raw.record(end, stream);
      const ms = raw.elapsedMs(start, end); // waits for `end`
      const t1 = Bun.nanoseconds();
      after(value);
      if (i === 0) continue; // the warm-up
      event.push(Math.max(ms * 1e6, 1));
      wall.push(t1 - t0);
    }
    return { event, wall };
  } finally {
    raw.destroyEvent(start);
    raw.destroyEvent(end);
  }
}

function transfers(rt: DeviceRuntime, raw: RawDriver, report: RuntimeReport, bytes: number, repeats: number): Figure[] {
  const values = new Float64Array(bytes / 8).map((_, i) => i * 0.5);
  const column = float64Column(values);
  const calls = rawCallNames[rt.kind];
  const base = { runtime: rt.kind, deviceId: 0, fake: report.fake, bytes, repeats, suite: "transfer" as const };
  const figures: Figure[] = [];
  using stream = rt.createStream(0);
  const rawStream = raw.createStream();
  const device = raw.allocDevice(bytes);
  const device2 = raw.allocDevice(bytes);
  const pinned = raw.allocPinned(bytes);
  const back = new Float64Array(bytes / 8);
  try {
    const src = ptr(values);
    const dst = ptr(back);
    // Host to device.
    const rawPinnedH2D = eventRuns(raw, rawStream, repeats, () => raw.copy("h2d", device, pinned, bytes, rawStream));
    const rawPageableH2D = eventRuns(raw, rawStream, repeats, () => raw.copy("h2d", device, src, bytes, rawStream));
    const oursH2D = eventRuns(raw, stream.handle, repeats, () => toDevice(column, { device: rt.kind, id: 0, stream }), (h) => (h as { release(): void }).release());
    figures.push(figure({ ...base, operation: "host_to_device" },
      timed("toDevice on a stream (allocation, staging, copies, event)", "event", oursH2D.event),
      timed(`${calls.h2d} from pinned memory`, "event", rawPinnedH2D.event),
      { pageable: timed(`${calls.h2d} from pageable memory`, "event", rawPageableH2D.event), endToEnd: timed("toDevice until its sync_event fired", "wall", oursH2D.wall) }));

    // Host to device from a batch over pinned memory (no staging).
    {
      using pinnedMemory = rt.allocate(bytes, { memory: "pinned" });
      const pinnedValues = new Float64Array(pinnedMemory.hostView().buffer);
      pinnedValues.set(values);
      const pinnedColumn = float64Column(pinnedValues);
      const oursPinned = eventRuns(raw, stream.handle, repeats, () => toDevice(pinnedColumn, { device: rt.kind, id: 0, stream }), (h) => (h as { release(): void }).release());
      figures.push(figure({ ...base, operation: "host_to_device_pinned" },
        timed("toDevice of a batch over pinned memory, on a stream (allocation, copies, event)", "event", oursPinned.event),
        timed(`${calls.h2d} from pinned memory`, "event", rawPinnedH2D.event),
        { endToEnd: timed("toDevice until its sync_event fired", "wall", oursPinned.wall) }));
    }

    // Device to host.
    const handle = toDevice(column, { device: rt.kind, id: 0 });
    using imported = ImportedArray.fromDeviceArray(handle.schema, handle.array);
    handle.release();
    const rawPinnedD2H = eventRuns(raw, rawStream, repeats, () => raw.copy("d2h", pinned, device, bytes, rawStream));
    const rawPageableD2H = eventRuns(raw, rawStream, repeats, () => raw.copy("d2h", dst, device, bytes, rawStream));
    const oursD2H = eventRuns(raw, stream.handle, repeats, () => imported.toHost({ stream }), (h) => (h as { dispose(): void }).dispose());
    figures.push(figure({ ...base, operation: "device_to_host" },
      timed("ImportedArray.toHost on a stream (wait, staging, copies, CPU import)", "event", oursD2H.event),
      timed(`${calls.d2h} to pinned memory`, "event", rawPinnedD2H.event),
      { pageable: timed(`${calls.d2h} to pageable memory`, "event", rawPageableD2H.event), endToEnd: timed("ImportedArray.toHost", "wall", oursD2H.wall) }));

    // Device to device.
    using from = rt.allocate(bytes);
    using to = rt.allocate(bytes);
    const rawD2D = eventRuns(raw, rawStream, repeats, () => raw.copy("d2d", device2, device, bytes, rawStream));
    const oursD2D = eventRuns(raw, stream.handle, repeats, () => rt.copy("device_to_device", to, from, bytes, { stream }));
    figures.push(figure({ ...base, operation: "device_to_device" },
      timed("DeviceRuntime.copy on a stream", "event", oursD2D.event),
      timed(calls.d2d, "event", rawD2D.event),
      { endToEnd: timed("DeviceRuntime.copy", "wall", oursD2D.wall) }));

    // Allocation, apart from the copies.
    const rawAlloc = wallSamples(repeats, () => raw.freeDevice(raw.allocDevice(bytes)));
    const oursAlloc = wallSamples(repeats, () => rt.allocate(bytes).free());
    figures.push(figure({ ...base, operation: "allocate" },
      timed("DeviceRuntime.allocate + free", "wall", oursAlloc),
      timed(`${calls.alloc} + ${calls.free}`, "wall", rawAlloc)));
  } finally {
    raw.synchronizeStream(rawStream);
    raw.freePinned(pinned);
    raw.freeDevice(device2);
    raw.freeDevice(device);
    raw.destroyStream(rawStream);
  }
  return figures;
}

function exportImport(rows: number, repeats: number): Figure {
  const round = exportImportCase(rows);
  const ours = wallSamples(repeats, round.ours);
  const ipc = wallSamples(repeats, round.ipc);
  return figure(
    { suite: "export_import", operation: "round_trip", runtime: null, deviceId: null, fake: false, bytes: rows * 8, repeats },
    timed("exportArray + ImportedArray.fromDeviceArray + importRecordBatch + release", "wall", ours),
    timed("apache-arrow tableToIPC + tableFromIPC", "wall", ipc),
  );
}

export function runBench(options: BenchOptions): BenchResult {
  const runtimes = options.device ? options.kinds.map(runtimeReport) : [];
  const usable = runtimes.filter((r) => r.available && r.devices.length > 0);
  const warnings: string[] = [];
  // The sweep stops below what this machine's memory holds.
  const fits = (bytes: number) => benchMemoryProblem([bytes / MiB], [], totalmem()) === null;
  const sizesFor = (r: RuntimeReport) => {
    if (options.sizesMiB) return options.sizesMiB.map((m) => m * MiB);
    return sweepBytes(options.quick || r.fake).filter(fits);
  };
  const rows = options.host ? options.rows ?? [1e3, 1e5, 1e6] : [];
  const total = usable.reduce((n, r) => n + sizesFor(r).length, 0) + rows.length;
  const progress = new Progress({ total, quiet: options.quiet });

  const figures: Figure[] = [];
  for (const report of runtimes) {
    // Said once, in the result (benchText, the JSON's reason), not here too.
    if (!report.available) continue;
    if (report.fake) {
      const warning = `${report.kind}: ${report.library} is a FAKE driver (a CPU stand-in for tests): its figures are NOT GPU figures`;
      warnings.push(warning);
      progress.note(warning);
    }
    const sizes = sizesFor(report);
    if (!options.sizesMiB && sizes.length < sweepBytes(options.quick || report.fake).length) {
      warnings.push(`${report.kind}: the sweep stops at ${sizeLabel(sizes.at(-1) ?? 0)}: larger sizes would not fit in this machine's memory`);
    }
    const rt = deviceRuntime(report.kind);
    const raw = openRawDriver(report.kind, report.library!);
    try {
      const repeats = options.repeats ?? (report.fake ? 3 : 9);
      for (const bytes of sizes) {
        progress.step(`${report.kind} transfers, ${sizeLabel(bytes)}`);
        figures.push(...transfers(rt, raw, report, bytes, repeats));
      }
    } finally {
      raw.close();
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
      : `${r.kind}: ${unavailableText(r)}`);
  }
  lines.push("", "suite          operation         runtime  size        ours (min-max)                baseline (min-max)            ours/raw (min-max)     GB/s ours/base  baseline");
  const time = (m: Measurement) => `${timeLabel(m.medianNs)} (${timeLabel(m.minNs)}-${timeLabel(m.maxNs)})`;
  const rate = (m: Measurement) => (m.gbPerSecond === null ? "-" : m.gbPerSecond.toFixed(2));
  for (const f of result.figures) {
    lines.push([
      f.suite.padEnd(14), f.operation.padEnd(17), `${f.runtime ?? "host"}${f.fake ? "*" : ""}`.padEnd(8), sizeLabel(f.bytes).padStart(10),
      ` ${time(f.ours).padEnd(29)}`, time(f.baseline).padEnd(29), `${f.ratio.toFixed(2)}x (${f.ratioMin.toFixed(2)}-${f.ratioMax.toFixed(2)})`.padEnd(22),
      `${rate(f.ours)}/${rate(f.baseline)}`.padStart(15), ` ${f.baseline.what}`,
    ].join(" "));
  }
  lines.push("", "times per operation: median (fastest-slowest run); transfers timed with events on the stream, allocate and export_import by the host clock;",
    "ours/raw: baseline time / ours (above 1, ours is faster), median and per-run spread; baseline: the raw driver (pinned memory for host copies); GB/s only for copies");
  if (result.figures.some((f) => f.fake)) lines.push("", "* fake driver: a CPU stand-in for tests; these are NOT GPU figures.");
  for (const w of result.warnings) if (!w.includes("FAKE")) lines.push(`warning: ${w}`);
  return lines.join("\n");
}
