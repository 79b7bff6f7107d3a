/**
 * Child process of test/core/wrong_addresses.test.ts: hands every function that
 * takes a C struct by address the wrong thing (a swapped pair, a device
 * stream where an array stream is expected and the reverse, a released or
 * zeroed struct, addresses of no memory, random bytes) and prints one JSON
 * line per call: the error's class and message, or "returned". Run apart,
 * so that a crash fails the test instead of killing the runner; the line
 * printed to stderr before each call names the case that crashed.
 */
import { writeSync } from "node:fs";
import { ptr } from "bun:ffi";
import { Table, makeVector, type RecordBatch } from "apache-arrow";
import { exportArray, exportStream, importRecordBatch, importTable, importVector, type ExportedArray, type ExportedStream } from "../../ts/index.ts";
import { exportAsyncStream } from "../../ts/device.ts";
import { ImportedArray, ImportedStream, type StructPointer } from "../../ts/raw.ts";
import { CArray, CDeviceArray, CSchema, arrayStreamAsDeviceStream, deviceStreamAsArrayStream, relay, relayArray } from "../../ts/raw.ts";
import { copyArrayToDevice } from "../../ts/device.ts";
import { consumeNatively } from "./native_consumer.ts";

const batch = (): RecordBatch => new Table({ x: makeVector(Int32Array.of(1, 2, 3)) }).batches[0];

/** Memory the tests point into: kept reachable for the whole run. */
const keep: unknown[] = [];
function bytesAt(fill: (bytes: Uint8Array) => void): number {
  const bytes = new Uint8Array(4096);
  void bytes.buffer; // a stable, out-of-line backing store (docs: bun-ffi)
  fill(bytes);
  keep.push(bytes);
  const address = Number(ptr(bytes));
  return address + ((8 - (address % 8)) % 8);
}

/** Deterministic pseudo-random bytes (xorshift32, fixed seed). */
function randomBytes(bytes: Uint8Array): void {
  let x = 0x9e3779b9;
  for (let i = 0; i < bytes.length; i++) {
    x ^= x << 13; x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5; x >>>= 0;
    bytes[i] = x & 0xff;
  }
}

const exports: (ExportedArray | ExportedStream)[] = [];
function pair(as?: "device_array"): ExportedArray<"device_array">;
function pair(as: "array"): ExportedArray<"array">;
function pair(as: "array" | "device_array" = "device_array"): ExportedArray {
  const h = exportArray(batch(), { as });
  exports.push(h);
  return h;
}
const stream = (as: "stream" | "device_stream"): number => {
  const s = exportStream([batch()], { as });
  exports.push(s);
  return Number(s.stream);
};
const releasedSchema = (): StructPointer<"ArrowSchema"> => {
  const h = pair();
  const moved = CSchema.at(h.schema).move();
  moved.dispose();
  return h.schema;
};

/** Addresses that name no struct at all. */
export const wrongAddresses: Record<string, () => unknown> = {
  "8": () => 8,
  "4096": () => 4096,
  "{ address: 16 }": () => ({ address: 16 }),
  "random bytes": () => bytesAt(randomBytes),
  "zeroed memory": () => bytesAt(() => {}),
  "a released schema": releasedSchema,
};

type Case = { name: string; run: () => unknown };
const cases: Case[] = [];
const add = (name: string, run: () => unknown) => cases.push({ name, run });

// Swapped pairs: every call that takes a schema and an array.
add("importRecordBatch(array, schema)", () => { const h = pair(); return importRecordBatch(h.array as never, h.schema as never); });
add("importVector(array, schema)", () => { const h = pair("array"); return importVector(h.array as never, h.schema as never); });
add("ImportedArray.fromArray(array, schema)", () => { const h = pair("array"); return ImportedArray.fromArray(h.array as never, h.schema as never); });
add("ImportedArray.fromDeviceArray(array, schema)", () => { const h = pair(); return ImportedArray.fromDeviceArray(h.array as never, h.schema as never); });
add("relay(array, schema)", () => { const h = pair(); return relay(h.array as never, h.schema as never); });
add("relayArray(array, schema)", () => { const h = pair("array"); return relayArray(h.array as never, h.schema as never); });
add("consumeNatively(array, schema)", () => { const h = pair(); return consumeNatively(h.array as never, h.schema as never); });
add("copyArrayToDevice(array, schema)", () => { const h = pair(); return copyArrayToDevice(h.array as never, h.schema as never, { device: "cuda" }); });
add("importRecordBatch(schema, schema)", () => { const h = pair(); return importRecordBatch(h.schema, h.schema as never); });
add("importRecordBatch(array, array)", () => { const h = pair(); return importRecordBatch(h.array as never, h.array); });

// Streams of the other kind.
add("ImportedStream.fromArrayStream(device stream)", () => ImportedStream.fromArrayStream(stream("device_stream") as never));
add("ImportedStream.fromDeviceArrayStream(array stream)", () => ImportedStream.fromDeviceArrayStream(stream("stream") as never));
add("importTable(array stream, as device_stream)", () => importTable(stream("stream") as never, { as: "device_stream" }));
add("importTable(device stream, as stream)", () => importTable(stream("device_stream") as never, { as: "stream" }));
add("arrayStreamAsDeviceStream(device stream)", () => arrayStreamAsDeviceStream(stream("device_stream") as never));
add("deviceStreamAsArrayStream(array stream)", () => deviceStreamAsArrayStream(stream("stream") as never));
add("ImportedStream.fromArrayStream(schema)", () => ImportedStream.fromArrayStream(pair().schema as never));

// A struct of another kind whose words pass for the expected one's.
add("exportAsyncStream(array stream as handler)", () => exportAsyncStream([batch()], stream("stream") as never));
add("CSchema.at(released device array)", () => {
  const h = pair();
  CDeviceArray.at(h.array).move().dispose();
  return CSchema.at(h.array as never).format;
});
add("CSchema.at(released array)", () => {
  const h = pair("array");
  CArray.at(h.array).move().dispose();
  return CSchema.at(h.array as never).format;
});

// Released structs of the kind expected.
add("released schema -> importRecordBatch", () => importRecordBatch(releasedSchema(), pair().array));
add("released device array -> ImportedArray.fromDeviceArray", () => {
  const h = pair();
  CDeviceArray.at(h.array).move().dispose();
  return ImportedArray.fromDeviceArray(pair().schema, h.array);
});
add("released array stream -> ImportedStream.fromArrayStream", () => {
  const address = stream("stream");
  ImportedStream.fromArrayStream(address as never).release();
  return ImportedStream.fromArrayStream(address as never);
});
add("released device stream -> ImportedStream.fromDeviceArrayStream", () => {
  const address = stream("device_stream");
  ImportedStream.fromDeviceArrayStream(address as never).release();
  return ImportedStream.fromDeviceArrayStream(address as never);
});

// Every address-taking call, with every wrong address.
const takers: Record<string, (address: unknown) => unknown> = {
  "importRecordBatch schema": (a) => importRecordBatch(a as never, pair().array),
  "importRecordBatch deviceArray": (a) => importRecordBatch(pair().schema, a as never),
  "importVector array": (a) => importVector(pair("array").schema, a as never),
  "ImportedArray.fromArray schema": (a) => ImportedArray.fromArray(a as never, pair("array").array),
  "ImportedArray.fromDeviceArray deviceArray": (a) => ImportedArray.fromDeviceArray(pair().schema, a as never),
  "relay deviceArray": (a) => relay(pair().schema, a as never),
  "relayArray schema": (a) => relayArray(a as never, pair("array").array),
  "consumeNatively deviceArray": (a) => consumeNatively(pair().schema, a as never),
  "copyArrayToDevice schema": (a) => copyArrayToDevice(a as never, pair().array, { device: "cuda" }),
  "ImportedStream.fromArrayStream": (a) => ImportedStream.fromArrayStream(a as never),
  "ImportedStream.fromDeviceArrayStream": (a) => ImportedStream.fromDeviceArrayStream(a as never),
  importTable: (a) => importTable(a as never),
  arrayStreamAsDeviceStream: (a) => arrayStreamAsDeviceStream(a as never),
  deviceStreamAsArrayStream: (a) => deviceStreamAsArrayStream(a as never),
  "exportAsyncStream handler": (a) => exportAsyncStream([batch()], a as never),
  "CSchema.at": (a) => CSchema.at(a as never).format,
  "CArray.at": (a) => CArray.at(a as never).length,
  "CDeviceArray.at": (a) => CDeviceArray.at(a as never).deviceType,
  "ImportedStream.moveTo": (a) => {
    const s = ImportedStream.fromArrayStream(stream("stream") as never);
    try {
      s.moveTo(a as never);
    } finally {
      s.release();
    }
    // Moved into zeroed memory: take it back, so that it is released.
    ImportedStream.fromArrayStream(a as never).release();
  },
};
for (const [taker, call] of Object.entries(takers)) {
  for (const [what, make] of Object.entries(wrongAddresses)) {
    // A released struct is a valid destination: moving a stream over an
    // export's released schema would only corrupt that export.
    if (taker === "ImportedStream.moveTo" && what === "a released schema") continue;
    add(`${taker} <- ${what}`, () => call(make()));
  }
}

const out: string[] = [];
const only = process.env.WRONG_ADDRESSES_ONLY; // a substring of case names, to reproduce one
for (const { name, run } of cases) {
  if (only && !name.includes(only)) continue;
  process.stderr.write(`calling ${name}\n`);
  let line: Record<string, unknown> = { name, outcome: "returned" };
  try {
    const result = run();
    (result as { dispose?: () => void } | null)?.dispose?.();
  } catch (error) {
    line = { name, outcome: "threw", error: (error as Error)?.name, message: String((error as Error)?.message) };
  }
  out.push(JSON.stringify(line));
}
for (const h of exports) h.release();
writeSync(1, `${out.join("\n")}\n`);
process.exit(0);
