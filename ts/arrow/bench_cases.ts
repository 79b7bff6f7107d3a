/**
 * The apache-arrow side of `bun-arrow-device bench` (cli/bench.ts times
 * them): the column a transfer moves, and the export/import round trip
 * beside apache-arrow's own IPC round trip, the copy it replaces. Each
 * case owns what it builds; the caller only runs and times it.
 */
import { Table, makeVector, tableFromIPC, tableToIPC, type Vector } from "apache-arrow";
import { ImportedArray } from "../native/imported.ts";
import { exportArray } from "./export.ts";
import { toRecordBatch } from "./import.ts";

/** A one-chunk float64 column over `values` (no copy). */
export function float64Column(values: Float64Array): Vector {
  return makeVector(values);
}

/** The two sides of the export/import round trip of a float64 batch of
 * `rows` rows; each run checks it got every row back. */
export function exportImportCase(rows: number): { ours: () => void; ipc: () => void } {
  const batch = new Table({ x: makeVector(new Float64Array(rows).map((_, i) => i)) }).batches[0];
  const table = new Table([batch]);
  return {
    ours: () => {
      const exported = exportArray(batch);
      const imported = ImportedArray.fromDeviceArray(exported.schema, exported.array);
      const back = toRecordBatch(imported);
      if (back.numRows !== rows) throw new Error("the round trip lost rows");
      imported.dispose();
      exported.release();
    },
    ipc: () => {
      if (tableFromIPC(tableToIPC(table, "stream")).numRows !== rows) throw new Error("the IPC round trip lost rows");
    },
  };
}
