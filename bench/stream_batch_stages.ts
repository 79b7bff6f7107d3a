/**
 * Per-batch cost of a synchronous stream pull (recordBatches over
 * test/fixtures/stream_peer.c's repeat source: struct<a: int32, b: float64>,
 * 3 non-null buffers per batch), split by stage, next to the JS floor (one
 * external ArrayBuffer + typed array per buffer, as an import must make).
 * Usage: bun run bench -- --section stream-batch-stages [rows=1000] [batches=200] [rounds=40]
 */
import { toArrayBuffer, type Pointer } from "bun:ffi";
import { recordBatches } from "../ts/index.ts";
import { ImportedStream, type StructPointer } from "../ts/raw.ts";
import { streamPeer } from "../test/helpers/fixtures.ts";
import { floor } from "./compare/floor.ts";
import { pullTransient } from "../ts/native/batch_source.ts";

const rows = Number(process.argv[2] ?? 1000);
const batches = Number(process.argv[3] ?? 200);
const rounds = Number(process.argv[4] ?? 40);
const slot = floor.bf_stream_slot()!;
const dealloc = floor.bf_view_deallocator()!;

function open(source: Pointer): void {
  streamPeer.sp_repeat_stream(source, slot);
}

function ours(source: Pointer): number {
  open(source);
  const t = Bun.nanoseconds();
  const stream = ImportedStream.fromArrayStream(slot as StructPointer<"ArrowArrayStream">);
  let n = 0;
  for (const batch of recordBatches(stream)) if (batch.numRows === rows) n++;
  stream.release();
  const ns = Bun.nanoseconds() - t;
  if (n !== batches) throw new Error(`${n} of ${batches}`);
  return ns / batches;
}

/** Pulls raw ImportedArrays, disposing each (no apache-arrow objects). */
function raw(source: Pointer): number {
  open(source);
  const t = Bun.nanoseconds();
  const stream = ImportedStream.fromArrayStream(slot as StructPointer<"ArrowArrayStream">);
  for (;;) {
    const b = pullTransient(stream);
    if (!b) break;
    b.dispose();
  }
  stream.release();
  return (Bun.nanoseconds() - t) / batches;
}

/** The JS floor: per batch, the batch's 3 buffers (int32 values, float64
 * validity and values, their real sizes) as external ArrayBuffers with a
 * deallocator each, and one typed array over each. */
const context = floor.bf_stream_slot()!;
const sizes = [rows * 4, Math.ceil(rows / 8), rows * 8];
function floorRun(addrs: number[]): number {
  const t = Bun.nanoseconds();
  let s = 0;
  for (let i = 0; i < batches; i++) {
    floor.bf_views_add(3);
    const a = new Int32Array(toArrayBuffer(addrs[0] as Pointer, 0, sizes[0], context, dealloc));
    const v = new Uint8Array(toArrayBuffer(addrs[1] as Pointer, 0, sizes[1], context, dealloc));
    const b = new Float64Array(toArrayBuffer(addrs[2] as Pointer, 0, sizes[2], context, dealloc));
    s += a.length + v.length + b.length;
  }
  return (Bun.nanoseconds() - t) / batches + (s < 0 ? 1 : 0);
}

const sources: Pointer[] = [];
const fresh = () => { const s = streamPeer.sp_repeat_new(batches, rows)!; sources.push(s); return s; };
// C memory the floor wraps (never read): room for the largest buffer.
const arena = floor.bf_schema_slots(Math.ceil((rows * 8) / 64) + 1)!;
const addrs = [Number(arena), Number(arena), Number(arena)];
const results: Record<string, number[]> = { ours: [], raw: [], floor: [] };
for (let r = 0; r < rounds; r++) {
  const order = r % 2 === 0 ? ["ours", "raw", "floor"] : ["floor", "raw", "ours"];
  for (const name of order) {
    const v = name === "ours" ? ours(fresh()) : name === "raw" ? raw(fresh()) : floorRun(addrs);
    if (r >= 3) results[name].push(v);
  }
}
const med = (a: number[]) => { const s = [...a].sort((x, y) => x - y); return s[s.length >> 1]; };
const mean = (a: number[]) => a.reduce((x, y) => x + y, 0) / a.length;
for (const [k, v] of Object.entries(results)) console.log(`${k.padEnd(6)} per batch: median ${(med(v) / 1000).toFixed(2)} µs, mean ${(mean(v) / 1000).toFixed(2)} µs`);
