/**
 * The native smoke script that scripts/qemu-smoke.sh runs under qemu-user
 * (another CPU, another architecture): loads the library named by
 * ARROW_DEVICE_LIBRARY, exports a RecordBatch through the C Device Data
 * Interface and imports it back, then checks the values and that every
 * buffer came back at the address it left from (zero-copy). Prints one
 * "smoke ok" line; any problem throws (non-zero exit).
 */
import { ptr } from "bun:ffi";
import { Int32, Table, Utf8, vectorFromArray } from "apache-arrow";
import { exportArray, importRecordBatch } from "../../ts/index.ts";
import { ImportedArray } from "../../ts/raw.ts";
import { libraryPath } from "../../ts/diagnostics.ts";

const table = new Table({ id: vectorFromArray([1, 2, 3, 40000], new Int32()), name: vectorFromArray(["a", "bb", "", "dddd"], new Utf8()) });
const batch = table.batches[0]!;
using exported = exportArray(batch);
using imported = ImportedArray.fromDeviceArray(exported.schema, exported.array, { validation: "full" });
const back = importRecordBatch(imported);

const problems: string[] = [];
const ids = [...back.getChild("id")!.toArray()];
const names = [...back.getChild("name")!.toArray()];
if (JSON.stringify(ids) !== "[1,2,3,40000]") problems.push(`id values ${JSON.stringify(ids)}`);
if (JSON.stringify(names) !== '["a","bb","","dddd"]') problems.push(`name values ${JSON.stringify(names)}`);
for (const column of ["id", "name"] as const) {
  const sent = batch.getChild(column)!.data[0]!;
  const got = back.getChild(column)!.data[0]!;
  if (ptr(got.values) !== ptr(sent.values)) problems.push(`${column}: values at ${ptr(got.values)}, sent from ${ptr(sent.values)}`);
  if (column === "name" && ptr(got.valueOffsets) !== ptr(sent.valueOffsets)) problems.push(`name: offsets copied`);
}
if (problems.length > 0) throw new Error(`smoke failed: ${problems.join("; ")}`);
console.log(`smoke ok: ${process.arch} ${libraryPath()}: ${back.numRows} rows, values and buffer addresses as sent`);
