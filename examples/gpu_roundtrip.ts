/**
 * Recipe 2: move a RecordBatch to a GPU and back, with the sync events the
 * C Device Data Interface carries.
 *
 *   bun examples/gpu_roundtrip.ts            CUDA (or: ... rocm)
 *
 * Needs a GPU runtime (libcuda / libamdhip64). Without one it says why and
 * exits 0. The tests run it under the fake drivers of build/fixtures
 * (ARROW_DEVICE_CUDA_LIBRARY / ARROW_DEVICE_HIP_LIBRARY).
 */
import { Float64, Int32, Table, makeVector, vectorFromArray } from "apache-arrow";
import { importRecordBatch } from "bun-arrow-device";
import { ImportedArray } from "bun-arrow-device/raw";
import { deviceAvailability, deviceRuntime, toDevice, type DeviceKind } from "bun-arrow-device/device";

const kind: DeviceKind = process.argv[2] === "rocm" ? "rocm" : "cuda";
const availability = deviceAvailability(kind);
if (!availability.available) {
  console.log(`${kind} is not available here: ${availability.reason}`);
  process.exit(0);
}
const gpu = deviceRuntime(kind);
console.log(`${kind}: ${gpu.device(0).name} (${availability.deviceCount} device(s))`);

const batch = new Table({
  id: makeVector(Int32Array.from({ length: 1000 }, (_, i) => i)),
  price: vectorFromArray(Array.from({ length: 1000 }, (_, i) => (i % 10 === 3 ? null : i / 4)), new Float64()),
}).batches[0];

// 1. Host -> GPU, on a stream of our own. One device allocation holds every
//    buffer; the copies are queued on `stream` and an event is recorded
//    after them: the array's sync_event. Nothing waits here.
using stream = gpu.createStream();
const onGpu = toDevice(batch, { device: kind, id: 0, stream });

// 2. A GPU consumer takes the ArrowSchema* + ArrowDeviceArray* (here: our
//    own importer; a CUDA library would wait on sync_event on its stream
//    before reading). Importing moves both structs in: from now on the
//    import owns the device memory and the event.
using imported = ImportedArray.fromDeviceArray(onGpu.schema, onGpu.array);
onGpu.release(); // frees only the moved-out slots
console.log(`on the GPU: device_type ${imported.deviceTypeName}, device_id ${imported.deviceId}, sync_event ${imported.syncEvent ? "set" : "NULL"}`);

// 3. GPU -> host: toHost waits on the sync_event, copies every buffer back
//    and returns an ordinary CPU import; the device copy is freed (and its
//    event destroyed) when `imported` is disposed, at the end of this scope.
using host = imported.toHost();
const back = importRecordBatch(host);

const same = back.numRows === batch.numRows
  && [...back.getChild("id")!].every((v, i) => v === batch.getChild("id")!.get(i))
  && [...back.getChild("price")!].every((v, i) => v === batch.getChild("price")!.get(i));
console.log(`back on the host: ${back.numRows} rows, ${back.getChild("price")!.nullCount} nulls, equal to the original: ${same}`);
