/**
 * GPU transfer benchmark (not a test): for each available runtime,
 *
 * - host to device and device to host GB/s of `toDevice` / `toHost` on an
 *   apache-arrow float64 column, against a raw driver memcpy of the same
 *   bytes in the same process (the baseline), as a ratio;
 * - raw memcpy from pageable (JS) memory against pinned memory;
 * - per-batch overhead: a table of many small batches, one event per batch,
 *   against one raw copy of the same bytes;
 * - small batches (10 columns x 1,000 rows, nulls and strings): the wall
 *   time of toDevice + release (which waits for the batch's event) and of
 *   toHost, beside one pinned copy of the batch's bytes through the same
 *   runtime; the library's own time per call is the difference. Under a
 *   fake driver, also its driver calls per batch (the fakes count them).
 *
 *   bun bench/device.ts                 every runtime that loads
 *   ARROW_DEVICE_BENCH_MB=64,512 ...    column sizes in MiB
 *
 * Under a fake driver (test/fixtures/fake_*.c) it runs, to check that it
 * works, and says loudly that its figures are not GPU figures: never
 * record them as such. Real figures come from scripts/gpu-suite.sh --bench
 * on a machine with a GPU.
 */
import { FFIType } from "bun:ffi";
import { Float64, Int32, RecordBatch, Table, Utf8, makeVector, vectorFromArray, type Vector } from "apache-arrow";
import { openLibrary } from "../ts/core/ffi/bun_ffi.ts";
import { ImportedArray } from "../ts/raw.ts";
import { deviceAvailability, deviceRuntime, toDevice, type DeviceKind, type DeviceRuntime } from "../ts/device.ts";
import { gbPerSecond as gbps, timeMedian as time } from "../ts/cli/measure.ts";
import { isFakeDriver } from "../ts/cli/runtimes.ts";

const kinds = (process.env.ARROW_DEVICE_BENCH_KINDS ?? "cuda,rocm").split(",").filter((k): k is DeviceKind => k === "cuda" || k === "rocm");
const fmt = (x: number) => x.toFixed(2).padStart(8);

function transfers(rt: DeviceRuntime, megabytes: number) {
  const bytes = megabytes * 2 ** 20;
  const values = new Float64Array(bytes / 8).map((_, i) => i * 0.5);
  const column = makeVector(values);
  const repeats = megabytes >= 256 ? 5 : 9;
  using device = rt.allocate(bytes);
  using pinned = rt.allocate(bytes, { memory: "pinned" });
  pinned.hostView().set(new Uint8Array(values.buffer));
  const back = new Float64Array(bytes / 8);

  const rawH2D = time(repeats, () => rt.copy("host_to_device", device, values));
  // toDevice allocates its device memory each time: so does this baseline.
  const rawAllocH2D = time(repeats, () => {
    using fresh = rt.allocate(bytes);
    rt.copy("host_to_device", fresh, values);
  });
  const rawH2DPinned = time(repeats, () => rt.copy("host_to_device", device, pinned));
  const rawD2H = time(repeats, () => rt.copy("device_to_host", back, device));
  const rawD2HPinned = time(repeats, () => rt.copy("device_to_host", pinned, device));

  let imported: ImportedArray | null = null;
  const toDeviceNs = time(repeats, () => {
    const handle = toDevice(column, { device: rt.kind });
    imported?.dispose();
    imported = ImportedArray.fromDeviceArray(handle.schema, handle.array);
    handle.release();
    rt.synchronizeEvent(imported.syncEvent, 0); // the copy is done when its event fired
  });
  const toHostNs = time(repeats, () => imported!.toHost().dispose());
  (imported as ImportedArray | null)?.dispose();

  console.log(`  ${String(megabytes).padStart(5)} MiB  H2D GB/s: raw pageable ${fmt(gbps(bytes, rawH2D))}  raw pinned ${fmt(gbps(bytes, rawH2DPinned))}  raw alloc+copy ${fmt(gbps(bytes, rawAllocH2D))}  toDevice ${fmt(gbps(bytes, toDeviceNs))}  toDevice/(alloc+copy) ${fmt(rawAllocH2D / toDeviceNs)}`);
  console.log(`             D2H GB/s: raw pageable ${fmt(gbps(bytes, rawD2H))}  raw pinned ${fmt(gbps(bytes, rawD2HPinned))}                      toHost   ${fmt(gbps(bytes, toHostNs))}  toHost/raw            ${fmt(rawD2H / toHostNs)}`);
}

function perBatch(rt: DeviceRuntime, batches: number, rowsPerBatch: number) {
  // One column chunk per batch: each goes to the device with its own event.
  const chunks = Array.from({ length: batches }, (_, b) => makeVector(new Float64Array(rowsPerBatch).map((_, i) => b + i)));
  using device = rt.allocate(rowsPerBatch * 8 * batches);
  const all = new Float64Array(rowsPerBatch * batches);
  const raw = time(5, () => rt.copy("host_to_device", device, all));
  const batched = time(5, () => {
    const handles = chunks.map((chunk) => toDevice(chunk, { device: rt.kind }));
    for (const handle of handles) handle.release(); // waits for each batch's event
  });
  const perBatchUs = (batched - raw) / batches / 1000;
  console.log(`  ${batches} batches x ${rowsPerBatch} rows: toDevice per batch ${(batched / 1e6).toFixed(2)} ms, one raw copy of the same bytes ${(raw / 1e6).toFixed(2)} ms, overhead ${perBatchUs.toFixed(1)} us per batch (ratio ${fmt(batched / raw)})`);
}

/** Ten columns (ints, doubles, strings; every one with nulls), `rows` rows. */
function wideBatch(rows: number, seed: number): RecordBatch {
  const columns: Record<string, Vector> = {};
  for (let c = 0; c < 10; c++) {
    const values = Array.from({ length: rows }, (_, i) => (i % (c + 3) === 1 ? null : seed * 10_000 + i * (c + 1)));
    if (c % 3 === 0) columns[`s${c}`] = vectorFromArray(values.map((v) => (v === null ? null : `v${v}`)), new Utf8());
    else if (c % 3 === 1) columns[`i${c}`] = vectorFromArray(values, new Int32());
    else columns[`f${c}`] = vectorFromArray(values.map((v) => (v === null ? null : v / 4)), new Float64());
  }
  return new Table(columns).batches[0];
}

/** The fake driver's call counter (fake_gpu.h), or null for a real driver. */
function fakeCalls(kind: DeviceKind, library: string, isFake: boolean): { reset(): void; total(): number; jitter(us: number): void } | null {
  if (!isFake) return null;
  const prefix = kind === "cuda" ? "fake_cuda" : "fake_hip";
  const f = openLibrary(library, {
    [`${prefix}_calls`]: { args: [FFIType.ptr, FFIType.usize], returns: FFIType.i64 },
    [`${prefix}_calls_reset`]: { args: [], returns: FFIType.void },
    [`${prefix}_set_jitter_us`]: { args: [FFIType.i32], returns: FFIType.void },
  }).symbols;
  const none = new Uint8Array(1);
  return {
    reset: () => f[`${prefix}_calls_reset`]!(),
    total: () => Number(f[`${prefix}_calls`]!(none, 0)),
    jitter: (us) => f[`${prefix}_set_jitter_us`]!(us),
  };
}

function smallBatches(rt: DeviceRuntime, calls: ReturnType<typeof fakeCalls>, rows: number, repeats: number) {
  const batch = wideBatch(rows, 1);
  const bytes = batch.data.children.reduce((n, child) => n + (child.values?.byteLength ?? 0) + (child.valueOffsets?.byteLength ?? 0) + (child.nullBitmap?.byteLength ?? 0), 0);
  using device = rt.allocate(bytes);
  using pinned = rt.allocate(bytes, { memory: "pinned" });
  const rawCopy = time(repeats, () => rt.copy("host_to_device", device, pinned));
  const rawBack = time(repeats, () => rt.copy("device_to_host", pinned, device));
  for (let i = 0; i < 20; i++) toDevice(batch, { device: rt.kind }).release(); // warm the pools
  calls?.reset();
  const toDeviceNs = time(repeats, () => toDevice(batch, { device: rt.kind }).release());
  const toDeviceCalls = calls ? calls.total() / repeats : null;
  const handle = toDevice(batch, { device: rt.kind });
  const imported = ImportedArray.fromDeviceArray(handle.schema, handle.array);
  handle.release();
  for (let i = 0; i < 20; i++) imported.toHost().dispose();
  calls?.reset();
  const toHostNs = time(repeats, () => imported.toHost().dispose());
  const toHostCalls = calls ? calls.total() / repeats : null;
  imported.dispose();
  const us = (ns: number) => `${(ns / 1000).toFixed(1).padStart(7)} us`;
  const perCall = (n: number | null) => (n === null ? "" : `  driver calls per batch ${n.toFixed(1)}`);
  console.log(`  10 columns x ${rows} rows (${bytes} bytes of buffers), median of ${repeats}:`);
  console.log(`    toDevice + release ${us(toDeviceNs)}  one pinned copy ${us(rawCopy)}  library's own time ${us(toDeviceNs - rawCopy)}${perCall(toDeviceCalls)}`);
  console.log(`    toHost             ${us(toHostNs)}  one pinned copy ${us(rawBack)}  library's own time ${us(toHostNs - rawBack)}${perCall(toHostCalls)}`);
}

console.log(`bun-arrow-device GPU transfer benchmark (Bun ${Bun.version}, ${process.platform}-${process.arch})`);
let ran = 0;
for (const kind of kinds) {
  const availability = deviceAvailability(kind);
  if (!availability.available) {
    console.log(`\n${kind}: not available: ${availability.reason}`);
    continue;
  }
  const rt = deviceRuntime(kind);
  const device = rt.device(0);
  const isFake = isFakeDriver(kind, availability.library);
  console.log(`\n${kind}: ${device.name}, ${(device.totalMemoryBytes / 2 ** 30).toFixed(0)} GiB, ${availability.library}, version ${availability.version}`);
  if (isFake) console.log("  *** FAKE DRIVER: a CPU stand-in for tests. These figures are NOT GPU figures; do not record them. ***");
  const sizes = (process.env.ARROW_DEVICE_BENCH_MB ?? (isFake ? "1,16" : "16,256,1024")).split(",").map(Number);
  for (const megabytes of sizes) transfers(rt, megabytes);
  perBatch(rt, isFake ? 64 : 1000, 1024);
  const calls = fakeCalls(kind, availability.library, isFake);
  smallBatches(rt, calls, 1000, isFake ? 200 : 1000);
  if (calls) {
    // The fake's random delay per queued operation (0-20 us, on a worker
    // thread per stream) stands in for a GPU's latencies; without it, what
    // remains is the library's time plus the fake's thread hand-offs.
    console.log("  the same without the fake's random delay per operation:");
    calls.jitter(0);
    smallBatches(rt, calls, 1000, 200);
    calls.jitter(20);
  }
  ran++;
}
if (ran === 0) console.log("\nno GPU runtime is available here: nothing was measured.");
