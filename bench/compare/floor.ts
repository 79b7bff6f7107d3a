/**
 * bench/compare's native side: test/fixtures/bench_floor.c (the C floor and
 * producer, built by build.zig into build/fixtures/) opened with bun:ffi,
 * and a slot pool for batches produced or exported into C memory.
 *
 * Ownership: a Columns value owns its bf_data (C memory) until free();
 * the pool owns its slots for the whole run; a batch in a slot is owned by
 * whoever released or moved it last (bf_release_many releases what is left).
 */
import { type StructPointer } from "../../ts/raw.ts";
import { FFIType, suffix, type Pointer } from "bun:ffi";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { openLibrary } from "../../ts/core/ffi/bun_ffi.ts";

const { ptr, i32, i64, void: none } = FFIType;

export const floorPath = join(resolve(import.meta.dir, "..", ".."), "build", "fixtures", `libbench_floor.${suffix}`);

function open() {
  if (!existsSync(floorPath)) throw new Error(`${floorPath} is missing: run bash scripts/setup.sh (or zig build --prefix .)`);
  return openLibrary(floorPath, {
    bf_data_new: { args: [i64, i64, i32], returns: ptr },
    bf_data_free: { args: [ptr], returns: none },
    bf_data_buffer: { args: [ptr, i64, i32], returns: ptr },
    bf_data_buffer_bytes: { args: [ptr, i32], returns: i64 },
    bf_data_null_count: { args: [ptr], returns: i64 },
    bf_fill: { args: [ptr, ptr, ptr], returns: none },
    bf_fill_many: { args: [ptr, i64, ptr, ptr], returns: none },
    bf_release_many: { args: [i64, ptr, ptr], returns: none },
    bf_schema_slots: { args: [i64], returns: ptr },
    bf_device_array_slots: { args: [i64], returns: ptr },
    bf_stream_slot: { args: [], returns: ptr },
    bf_stream_pull: { args: [ptr, ptr, ptr, i64], returns: i64 },
    bf_free: { args: [ptr], returns: none },
    bf_sizeof_schema: { args: [], returns: i64 },
    bf_sizeof_device_array: { args: [], returns: i64 },
    bf_view_deallocator: { args: [], returns: ptr },
    bf_views_add: { args: [i64], returns: none },
    bf_views_live: { args: [], returns: i64 },
  }).symbols;
}

export const floor = open();

export const schemaSize = Number(floor.bf_sizeof_schema());
export const deviceArraySize = Number(floor.bf_sizeof_device_array());

/** `capacity` consecutive ArrowSchema and ArrowDeviceArray slots. */
export class SlotPool {
  readonly schemas: Pointer;
  readonly arrays: Pointer;
  constructor(readonly capacity: number) {
    this.schemas = floor.bf_schema_slots(capacity)!;
    this.arrays = floor.bf_device_array_slots(capacity)!;
  }
  // Typed by assertion rather than structPointer(): its argument check
  // would be counted in the measured loops.
  schema(i: number): StructPointer<"ArrowSchema"> {
    return (this.schemas + i * schemaSize) as StructPointer<"ArrowSchema">;
  }
  array(i: number): StructPointer<"ArrowDeviceArray"> {
    return (this.arrays + i * deviceArraySize) as StructPointer<"ArrowDeviceArray">;
  }
  /** Releases whatever the first `n` slots still hold. */
  releaseAll(n = this.capacity): void {
    floor.bf_release_many(n, this.schemas, this.arrays);
  }
  free(): void {
    this.releaseAll();
    floor.bf_free(this.schemas);
    floor.bf_free(this.arrays);
  }
}

/** A buffer of a Columns value, for the JS floor. */
export type FloorBuffer = { address: number; bytes: number; values: boolean };

/** `columns` nullable int32 columns of `rows` rows in C memory. */
export class Columns {
  readonly data: Pointer;
  constructor(readonly columns: number, readonly rows: number, readonly distinct: boolean) {
    const data = floor.bf_data_new(columns, rows, distinct ? 1 : 0);
    if (data === null) throw new Error(`bf_data_new(${columns}, ${rows}) failed`);
    this.data = data;
  }
  /** The distinct buffers (validity and values of each column that has its
   * own memory), as the JS floor wraps them. */
  buffers(): FloorBuffer[] {
    const out: FloorBuffer[] = [];
    const seen = new Set<number>();
    for (let c = 0; c < this.columns; c++) {
      for (const which of [0, 1]) {
        const address = Number(floor.bf_data_buffer(this.data, c, which));
        if (seen.has(address)) continue;
        seen.add(address);
        out.push({ address, bytes: Number(floor.bf_data_buffer_bytes(this.data, which)), values: which === 1 });
      }
    }
    return out;
  }
  free(): void {
    floor.bf_data_free(this.data);
  }
}
