/**
 * GPU transfer benchmark (not a test): for each available runtime,
 *
 * - host to device and device to host GB/s of `toDevice` / `toHost` on an
 *   apache-arrow float64 column, against a raw driver memcpy of the same
 *   bytes in the same process (the baseline), as a ratio;
 * - raw memcpy from pageable (JS) memory against pinned memory;
 * - per-batch overhead: a table of many small batches, one event per batch,
 *   against one raw copy of the same bytes.
 *
 *   bun bench/device.ts                 every runtime that loads
 *   ARROW_DEVICE_BENCH_MB=64,512 ...    column sizes in MiB
 *
 * Under a fake driver (test/fixtures/fake_*.c) it runs, to check that it
 * works, and says loudly that its figures are not GPU figures: never
 * record them as such. Real figures come from scripts/gpu-suite.sh --bench
 * on a machine with a GPU.
 */
import { makeVector } from "apache-arrow";
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
  ran++;
}
if (ran === 0) console.log("\nno GPU runtime is available here: nothing was measured.");
