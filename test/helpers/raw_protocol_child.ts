/**
 * Child process of test/native/raw_protocol.test.ts: loads only the
 * `bun-arrow-device/raw` entry (no apache-arrow), exports an array and a C
 * stream, and prints one JSON line: which protocol methods the handles
 * have, what capsule round trips read back, and how a requestedSchema is
 * answered without the arrow layer.
 */
import {
  ArrowCArray, ArrowCDeviceArray, ArrowCDeviceStream, ArrowCSchema, ArrowCStream,
} from "../../ts/native/protocol/symbols.ts";
import { DeviceType, ExportedStream, ImportedArray, ImportedStream, exportRawArray } from "../../ts/raw.ts";
import { streamPeer } from "./fixtures.ts";

type Methods = Record<string, string>;

function methods(handle: object): Methods {
  const out: Methods = {};
  for (const [name, symbol] of Object.entries({ ArrowCSchema, ArrowCArray, ArrowCDeviceArray, ArrowCStream, ArrowCDeviceStream })) {
    out[name] = typeof (handle as Record<symbol, unknown>)[symbol];
  }
  return out;
}

function errorOf(run: () => unknown): string | null {
  try {
    const result = run() as { [Symbol.dispose]?: () => void };
    result?.[Symbol.dispose]?.();
    return null;
  } catch (error) {
    return `${(error as Error).name}: ${(error as Error).message}`;
  }
}

const report: Record<string, unknown> = {};

const exported = exportRawArray({ format: "i", length: 3, buffers: [null, new Int32Array([1, 2, 3])] });
report.exportedArray = methods(exported);
const imported = ImportedArray.fromDeviceArray(exported);
report.importedArray = methods(imported);
const capsule = imported[ArrowCArray]!();
const again = ImportedArray.fromArray(capsule);
capsule[Symbol.dispose]();
report.arrayRoundTrip = Array.from(again.root.buffer(1) as Int32Array);
again.dispose();

report.sameSchema = errorOf(() => imported[ArrowCArray]!({ requestedSchema: imported }));
const int64 = ImportedArray.fromDeviceArray(exportRawArray({ format: "l", length: 1, buffers: [null, new BigInt64Array([7n])] }));
report.otherSchema = errorOf(() => imported[ArrowCArray]!({ requestedSchema: int64 }));
int64.dispose();
imported.dispose();

const slot = new ExportedStream("stream", "C stream slot");
streamPeer.sp_int_stream(0, 2, 4, -1, null, DeviceType.CPU, DeviceType.CPU, slot.stream);
report.exportedStream = methods(slot);
const stream = ImportedStream.fromArrayStream(slot.stream);
report.importedStream = methods(stream);
const relayed = ImportedStream.fromDeviceArrayStream(stream);
const rows: number[] = [];
for (const batch of relayed) {
  rows.push(batch.root.length);
  batch.dispose();
}
report.streamRoundTrip = rows;
slot.release();

report.apacheArrowLoaded = Object.keys(require.cache).some((path) => path.includes("apache-arrow"));
console.log(JSON.stringify(report));
