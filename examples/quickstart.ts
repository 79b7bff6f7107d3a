// Quick start: hand a RecordBatch to C and take it back, zero-copy.
import { tableFromArrays } from "apache-arrow";
import { exportArray, importRecordBatch } from "bun-arrow-device";

const batch = tableFromArrays({ id: Int32Array.of(1, 2, 3), name: ["a", "b", "c"] }).batches[0]!;
using out = exportArray(batch); // an ArrowSchema + ArrowDeviceArray owned by `out`
// Any C function taking (struct ArrowSchema*, struct ArrowDeviceArray*) gets these two addresses;
// here the import side plays that C consumer: it moves both structs in and releases them when done.
const back = importRecordBatch(out.schema, out.array);
console.log(`${back.numRows} rows: id=${back.getChild("id")!.toArray().join(",")} name=${back.getChild("name")!.toArray().join(",")}`);
