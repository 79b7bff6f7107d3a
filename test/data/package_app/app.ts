// A sample app for the package smoke test (test/release/package.test.ts): it uses
// every entry point of the installed package, and is type-checked under
// four tsconfigs, then run, bundled and compiled.
import { tableFromArrays, type Table } from "apache-arrow";
import { ArrowDeviceError, exportArray, exportStream, importRecordBatch, importTable, type ExportOptions, type ImportStreamOptions } from "bun-arrow-device";
import { CSchema, type ValidationLevelName } from "bun-arrow-device/raw";
import { DeviceType } from "bun-arrow-device";
import { deviceAvailability, type DeviceAvailability } from "bun-arrow-device/device";
import { librarySource, nonZeroCounters, platformId } from "bun-arrow-device/diagnostics";

const table: Table = tableFromArrays({ id: Int32Array.of(1, 2, 3), score: Float64Array.of(0.5, 1.5, 2.5) });
const options: ExportOptions<"device_array"> = { as: "device_array" };
const validation: ValidationLevelName = "full";
const importOptions: ImportStreamOptions = { validation };

const stream = exportStream(table);
const back: Table = importTable(stream.stream, importOptions);
stream.release();
const single = exportArray(table, options);
const batch = importRecordBatch(single.schema, single.array);
single.release();

const schema = CSchema.allocate();
schema.release();
const cuda: DeviceAvailability = deviceAvailability("cuda");
let typed = false;
try {
  exportStream(batch as unknown as Table);
} catch (error) {
  typed = error instanceof ArrowDeviceError;
}
console.log(JSON.stringify({
  rows: back.numRows,
  ids: [...back.getChild("id")!.toArray()],
  batchRows: batch.numRows,
  cpu: DeviceType.CPU,
  cudaReported: typeof cuda.available === "boolean",
  typedError: typed,
  source: librarySource(),
  platformId: platformId(),
  counters: typeof nonZeroCounters(),
}));
