/**
 * Every gold file goes CPU -> device -> CPU under each runtime and comes
 * back byte for byte: every batch is copied to device memory (toDevice),
 * imported as an opaque device array (nothing on the device is read by the
 * host: the fake drivers map it PROT_NONE), copied back (toHost), and the
 * host copy's every node and buffer is compared with the original, and,
 * converted with importRecordBatch, equals apache-arrow's own read.
 *
 * apache-arrow reads the `.stream`; the two files it cannot read (list
 * views, run-end encoded) are built from their integration JSON instead,
 * and an assertion records that apache-arrow still cannot read them.
 *
 * Shared with scripts/gpu-suite.sh (runs against a real GPU there).
 */
import { afterEach, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { read } from "bun:ffi";
import { ArrowDeviceArrayLayout } from "../../ts/core/abi/layout.ts";
import { RecordBatch, Table, tableFromIPC } from "apache-arrow";
import { deviceKinds, expectFakesSettled } from "../helpers/device.ts";
import { goldFiles, rawBatchesFromJson, treeDifferences, type GoldFile } from "../helpers/device_gold.ts";
import { compareBatches } from "../helpers/arrow_compare.ts";
import { DeviceType, exportArray, importRecordBatch, type ExportedArray } from "../../ts/index.ts";
import { ImportedArray } from "../../ts/raw.ts";
import { copyArrayToDevice, deviceRuntime, toDevice, type DeviceKind } from "../../ts/device.ts";
import { exportRawArray, type RawArrayNode } from "../../ts/raw.ts";
import { expectSettled } from "../helpers/settled.ts";

/** Files apache-arrow 21.2 cannot read, with the error it gives. */
const unreadable: Record<string, RegExp> = {
  generated_list_view: /Unrecognized type: "ListView"/,
  generated_run_end_encoded: /Unrecognized type: "RunEndEncoded"/,
};

afterEach(async () => {
  expectFakesSettled(deviceKinds, await expectSettled());
});

const deviceTypes: Record<DeviceKind, number> = { cuda: DeviceType.CUDA, rocm: DeviceType.ROCM };

/** One batch through the device: `cpu()` makes a fresh CPU export of it
 * (called twice: the original to compare with, and the one to copy). */
function roundTrip(kind: DeviceKind, id: number, cpu: () => ExportedArray<"device_array">, label: string, expected: RecordBatch | null = null) {
  const reference = cpu();
  const original = ImportedArray.fromDeviceArray(reference.schema, reference.array);
  reference.release();
  const source = cpu();
  const device = copyArrayToDevice(source.schema, source.array, { device: kind, id });
  source.release();
  const onDevice = ImportedArray.fromDeviceArray(device.schema, device.array);
  device.release();
  try {
    expect(onDevice.deviceType).toBe(deviceTypes[kind]);
    expect(onDevice.deviceId).toBe(id);
    expect(onDevice.syncEvent).not.toBe(0);
    expect(onDevice.hostReadable).toBe(false);
    const back = onDevice.toHost();
    try {
      expect(back.deviceType).toBe(DeviceType.CPU);
      const problems = treeDifferences(original, back);
      if (problems.length) throw new Error(`${label}: ${problems.slice(0, 5).join("; ")}`);
      expect(problems).toEqual([]);
      if (expected) expect(compareBatches(importRecordBatch(back), expected, label)).toEqual([]);
    } finally {
      back.dispose();
    }
  } finally {
    onDevice.dispose();
    original.dispose();
  }
}

function batchesOf(file: GoldFile): RecordBatch[] {
  return tableFromIPC(readFileSync(file.stream)).batches;
}

for (const kind of deviceKinds) {
  describe(`gold files, CPU -> ${kind} -> CPU`, () => {
    const files = goldFiles();

    test("all 33 gold files are here", () => {
      expect(files).toHaveLength(33);
    });

    for (const file of files) {
      test(`${file.label}`, () => {
        const devices = deviceRuntime(kind).deviceCount;
        let batches = 0;
        if (file.name in unreadable) {
          // apache-arrow cannot read it: say so, and build it from the JSON.
          expect(() => tableFromIPC(readFileSync(file.stream))).toThrow(unreadable[file.name]);
          const raw: RawArrayNode[] = rawBatchesFromJson(file);
          expect(raw.length).toBeGreaterThan(0);
          raw.forEach((node, i) => {
            roundTrip(kind, i % devices, () => exportRawArray(node), `${file.name} batch ${i}`);
            batches++;
          });
        } else {
          const all = batchesOf(file);
          all.forEach((batch, i) => {
            roundTrip(kind, i % devices, () => exportArray(batch), `${file.name} batch ${i}`, batch);
            batches++;
          });
          // A table goes as one device array per batch, each with its event.
          const handles = toDevice(new Table(all), { device: kind });
          expect(handles).toHaveLength(all.length);
          expect(new Set(handles.map((h) => read.ptr(h.array, ArrowDeviceArrayLayout.fields.sync_event))).size).toBe(all.length);
          for (const handle of handles) handle.release();
        }
        expect(batches).toBeGreaterThan(0);
      });
    }
  });
}
