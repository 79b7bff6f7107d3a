/**
 * The contenders of every group, through the public API only
 * (ts/index.ts, ts/raw.ts). Each `run(k)` times one block of k cycles and
 * returns its ns (untimed set-up before and clean-up after, the same for
 * every contender of a group). Who owns what:
 * - export: ours exports into a handle and releases it; pyarrow exports into
 *   C slots of the pool, which C then releases in one call (timed, added);
 *   the C floor fills the same slots (one FFI call per batch) and releases
 *   them in one call (timed).
 * - import: the C producer fills k slots (timed as "produce"); ours moves
 *   each into an ImportedArray, builds the RecordBatch and disposes it;
 *   pyarrow moves each into a RecordBatch and drops it (released at once).
 *   The JS floor wraps the same C buffers itself (see jsFloor).
 */
import { toArrayBuffer, type Pointer } from "bun:ffi";
import { Data, Field, Float64, Int32, RecordBatch, Schema, Struct, Table, tableFromArrays, tableFromIPC, tableToIPC } from "apache-arrow";
import { exportArray, recordBatches, importRecordBatch } from "../../ts/index.ts";
import { exportAsyncStream } from "../../ts/device.ts";
import { ImportedArray, ImportedStream, type StructPointer } from "../../ts/raw.ts";
import { AsyncStreamConsumer } from "../../ts/raw.ts";
import { streamPeer } from "../../test/helpers/fixtures.ts";
import { asyncPeer, CSink, CSource } from "../../test/helpers/async_peer.ts";
import { Columns, SlotPool, deviceArraySize, floor, schemaSize } from "./floor.ts";
import { countBuffers, flatBatch, nestedBatch } from "./shapes.ts";
import { group, type Contender, type Group } from "./runner.ts";
import type { Pyarrow } from "./pyarrow.ts";
import { now } from "./stats.ts";

export type Shape = { id: string; columns: number; rows: number; nested: boolean };

export type Context = { py: Pyarrow | null; pool: SlotPool; cleanups: (() => void)[] };

/** What a group's report needs beyond its samples. */
export type GroupInfo = { shape?: Shape; buffers?: number; distinct?: boolean };

export type Built = Group & { info: GroupInfo };

let keys = 0;

function built(g: Group, info: GroupInfo): Built {
  return Object.assign(g, { info });
}

// --- export -----------------------------------------------------------------

export function exportGroup(shape: Shape, ctx: Context): Built {
  const { py, pool } = ctx;
  const batch = shape.nested ? nestedBatch(shape.rows) : flatBatch(shape.columns, shape.rows);
  const probe = exportArray(batch);
  const buffers = countBuffers(probe.array);
  const key = keys++;
  if (py) py.call(`bench_keep(${key}, ${probe.schema}, ${probe.array})`); // moved into pyarrow
  probe.release();
  const contenders: Contender[] = [{
    name: "ours",
    run(k) {
      const t = now();
      for (let i = 0; i < k; i++) exportArray(batch).release();
      return now() - t;
    },
  }];
  if (py) {
    contenders.push({
      name: "pyarrow",
      run(k) {
        const exported = Number(py.call(`bench_export(${key}, ${k}, ${pool.schemas}, ${schemaSize}, ${pool.arrays}, ${deviceArraySize})`));
        const t = now();
        pool.releaseAll(k);
        const release = now() - t;
        return { ns: exported + release, parts: { release } };
      },
    });
    ctx.cleanups.push(() => py.call(`bench_drop(${key})`));
  }
  if (!shape.nested) {
    const columns = new Columns(shape.columns, Math.min(shape.rows, 1000), false); // addresses only: rows do not matter
    ctx.cleanups.push(() => columns.free());
    contenders.push({
      name: "C floor",
      run(k) {
        const t = now();
        for (let i = 0; i < k; i++) floor.bf_fill(columns.data, (pool.schemas + i * schemaSize) as Pointer, (pool.arrays + i * deviceArraySize) as Pointer);
        pool.releaseAll(k);
        return now() - t;
      },
    });
  }
  return built(group(`export ${shape.id}`, contenders, pool.capacity), { shape, buffers });
}

// --- import -----------------------------------------------------------------

/** Each column its own memory up to 1e7 values (40 MB), and always for 10
 * columns (the full-cycle target: 10 distinct columns of 1e7 rows, 400 MB);
 * else every column shares one column's memory. */
export const distinctLimit = 1e7;
export const isDistinct = (shape: Shape) => shape.columns * shape.rows <= distinctLimit || shape.columns === 10;

/** The JS floor of construction: what any import into JS views must do at
 * least, per cycle: one FFI call taking a reference per view (like the
 * library's abd_owner_retain_views), per distinct buffer one
 * toArrayBuffer(address, 0, bytes, context, deallocator) with a C
 * deallocator (one atomic decrement, like the library's) and one typed
 * array over it, then transfer(0) of every ArrayBuffer (detach: the
 * deallocators run), as ImportedArray.dispose() does. No apache-arrow
 * objects, no schema, no validation. */
export function jsFloor(columns: Columns): Contender {
  const buffers = columns.buffers();
  const deallocator = floor.bf_view_deallocator()!;
  const context = columns.data;
  return {
    name: "JS floor",
    run(k) {
      const t = now();
      for (let i = 0; i < k; i++) {
        floor.bf_views_add(buffers.length);
        const wrapped: ArrayBuffer[] = [];
        const views: ArrayBufferView[] = [];
        for (const b of buffers) {
          const ab = toArrayBuffer(b.address as Pointer, 0, b.bytes, context, deallocator);
          wrapped.push(ab);
          views.push(b.values ? new Int32Array(ab) : new Uint8Array(ab));
        }
        for (const ab of wrapped) ab.transfer(0);
      }
      return now() - t;
    },
  };
}

/** Reads each column's buffers once (its values and validity), as a
 * consumer of every column does. */
let readSink = 0;
function readEveryBuffer(batch: RecordBatch): void {
  for (const column of batch.data.children) readSink += (column.values?.length ?? 0) + (column.nullBitmap?.length ?? 0);
}

export function importGroup(shape: Shape, ctx: Context): Built | null {
  const { py, pool } = ctx;
  let produce: (k: number) => void;
  let buffers: number;
  let distinct = false;
  const contenders: Contender[] = [];
  if (shape.nested) {
    // No C producer of nested shapes: pyarrow exports them (untimed).
    if (!py) return null;
    const batch = nestedBatch(shape.rows);
    const source = exportArray(batch);
    buffers = countBuffers(source.array);
    const key = keys++;
    py.call(`bench_keep(${key}, ${source.schema}, ${source.array})`);
    source.release();
    ctx.cleanups.push(() => py.call(`bench_drop(${key})`));
    produce = (k) => void py.call(`bench_export(${key}, ${k}, ${pool.schemas}, ${schemaSize}, ${pool.arrays}, ${deviceArraySize})`);
  } else {
    distinct = isDistinct(shape);
    const columns = new Columns(shape.columns, shape.rows, distinct);
    ctx.cleanups.push(() => columns.free());
    buffers = shape.columns * 2;
    produce = (k) => floor.bf_fill_many(columns.data, k, pool.schemas, pool.arrays);
    contenders.push(jsFloor(columns));
  }
  // "ours, read" also reads every column's buffers once before the
  // dispose: a batch makes its views on first read (arrow/lazy_data.ts),
  // so "ours" alone does not make them, and the JS floor does.
  for (const read of shape.nested ? [false] : [false, true]) {
    contenders.push({
      name: read ? "ours, read" : "ours",
      run(k) {
        const tp = now();
        produce(k);
        const t0 = now();
        let construct = 0;
        for (let i = 0; i < k; i++) {
          const imported = ImportedArray.fromDeviceArray(pool.schema(i), pool.array(i));
          const t1 = now();
          const batch = importRecordBatch(imported);
          if (read) readEveryBuffer(batch);
          const rows = batch.numRows; // a disposed handle's batch has none
          imported.dispose();
          construct += now() - t1;
          if (rows !== shape.rows) throw new Error("ours: wrong row count");
        }
        const end = now();
        pool.releaseAll(k);
        return { ns: end - t0, parts: { construct, cycle: end - tp } };
      },
    });
  }
  if (py) {
    contenders.push({
      name: "pyarrow",
      run(k) {
        const tp = now();
        produce(k);
        const produced = now() - tp;
        const ns = Number(py.call(`bench_import(${k}, ${pool.schemas}, ${schemaSize}, ${pool.arrays}, ${deviceArraySize})`));
        pool.releaseAll(k);
        return { ns, parts: { cycle: produced + ns } };
      },
    });
  }
  return built(group(`import ${shape.id}`, contenders, pool.capacity), { shape, buffers, distinct });
}

// --- streams ----------------------------------------------------------------

/** C streams (test/fixtures/stream_peer.c's "repeat" source: struct<a:
 * int32, b: float64 nullable>, every batch the same memory) of k batches,
 * k fixed (`batches`) so that opening a stream is spread over many.
 * A source is freed once no batch of it is alive (ours hands batch memory
 * to the GC, as recordBatches does). */
export function streamGroup(rows: number, batches: number, ctx: Context): Built {
  const { py } = ctx;
  const slot = floor.bf_stream_slot()!;
  const { open, sweep, pending } = repeatSources(rows, slot);
  ctx.cleanups.push(() => {
    for (let i = 0; i < 50 && pending.length > 0; i++) { Bun.gc(true); sweep(); }
    floor.bf_free(slot);
  });
  const contenders: Contender[] = [false, true].map((read) => ({
    name: read ? "ours, read" : "ours",
    run(k: number) {
      open(k);
      const t = now();
      const stream = ImportedStream.fromArrayStream(slot as StructPointer<"ArrowArrayStream">);
      let n = 0;
      for (const batch of recordBatches(stream)) {
        if (read) readEveryBuffer(batch);
        if (batch.numRows === rows) n++;
      }
      stream.release();
      const ns = now() - t;
      if (n !== k) throw new Error(`ours: ${n} of ${k} batches`);
      return ns;
    },
  }));
  contenders.push(streamFloor(rows, slot, open));
  if (py) {
    contenders.push({
      name: "pyarrow",
      run(k) {
        open(k);
        const [ns, n] = py.call(`bench_stream(${slot})`).split(" ").map(Number);
        if (n !== k) throw new Error(`pyarrow: ${n} of ${k} batches`);
        return ns;
      },
    });
  }
  return built(group(`stream 2 columns x ${rows} rows`, contenders, batches, batches), {});
}

/**
 * The "repeat" C stream sources behind `slot`: `open(k)` puts a new
 * stream of k batches of `rows` rows there; each source is freed by a
 * later `sweep` (open calls it) once none of its batches is alive, as the
 * batches' memory is the source's. `pending`: the sources not freed yet.
 */
export function repeatSources(rows: number, slot: Pointer): { open: (k: number) => void; sweep: () => void; pending: Pointer[] } {
  const pending: Pointer[] = [];
  const sweep = () => {
    for (let i = pending.length - 1; i >= 0; i--) {
      if (Number(streamPeer.sp_repeat_live_batches(pending[i])) === 0) {
        streamPeer.sp_repeat_free(pending[i]);
        pending.splice(i, 1);
      }
    }
  };
  const open = (k: number) => {
    sweep();
    const source = streamPeer.sp_repeat_new(k, rows)!;
    pending.push(source);
    streamPeer.sp_repeat_stream(source, slot);
  };
  return { open, sweep, pending };
}

/**
 * The least any Bun consumer of this stream must do per batch, as a
 * contender: one FFI call pulling the batch (test/fixtures/bench_floor.c
 * bf_stream_pull, which also releases the one before), one external
 * ArrayBuffer with a deallocator per buffer (Bun's only zero-copy view of
 * C memory), a typed array over each, an apache-arrow Data per column and
 * for the struct, and a RecordBatch object made without its constructor
 * (as ts/arrow/record_batch.ts makeBatch does). No validation, no ownership
 * bookkeeping, no schema import: the schema and types are built once.
 */
export function streamFloor(rows: number, slot: Pointer, open: (k: number) => void): Contender {
  const fields = [new Field("a", new Int32(), false), new Field("b", new Float64(), true)];
  const schema = new Schema(fields);
  const type = new Struct(fields);
  const array = floor.bf_device_array_slots(1)!; // an ArrowArray at its start
  const addresses = new Float64Array(8);
  const dealloc = floor.bf_view_deallocator()!;
  const context = array; // any pointer: the deallocator ignores it
  const sizes = [0, rows * 4, Math.ceil(rows / 8), rows * 8]; // a: NULL, values; b: validity, values
  const nullCount = Math.floor(rows / 4); // the repeat source's
  return {
    name: "JS floor",
    run(k) {
      open(k);
      let n = 0;
      const t = now();
      while (floor.bf_stream_pull(slot, array, addresses, addresses.length) >= 0) {
        floor.bf_views_add(3);
        const a = new Int32Array(toArrayBuffer(addresses[1] as Pointer, 0, sizes[1], context, dealloc));
        const valid = new Uint8Array(toArrayBuffer(addresses[2] as Pointer, 0, sizes[2], context, dealloc));
        const b = new Float64Array(toArrayBuffer(addresses[3] as Pointer, 0, sizes[3], context, dealloc));
        const children = [
          new Data(fields[0].type, 0, rows, 0, [undefined, a, undefined] as never),
          new Data(fields[1].type, 0, rows, nullCount, [undefined, b, valid] as never),
        ];
        const batch = Object.create(RecordBatch.prototype) as { schema: Schema; data: Data; _metadata: Map<string, string>; numRows: number };
        batch.schema = schema;
        batch.data = new Data(type, 0, rows, 0, [undefined, undefined, undefined] as never, children);
        batch._metadata = new Map();
        if (batch.numRows === rows) n++;
      }
      const ns = now() - t;
      if (n !== k) throw new Error(`JS floor: ${n} of ${k} batches`);
      return ns;
    },
  };
}

// --- async ------------------------------------------------------------------

/** bench/async.ts's comparison: async stream vs a synchronous loop doing
 * the same per-batch work, `k` batches of `rows` rows per run. */
export function asyncGroup(role: "consumer" | "producer", rows: number, batches: number, depths: number[], ctx: Context): Built {
  const { pool } = ctx;
  const contenders: Contender[] = [];
  if (role === "consumer") {
    // Ours reads one value of each batch through a JS view of its buffer;
    // "no view" (first depth only) reads each batch's row count instead,
    // from the import's tables, so that it makes no view: what separates
    // the two is the view (Bun's external ArrayBuffer, its detach at
    // dispose and the collections its bytes start), which no C consumer
    // pays.
    const variants = [...depths.map((depth) => ({ depth, view: true })), { depth: depths[0], view: false }];
    for (const { depth, view } of variants) {
      contenders.push({
        name: view ? `async d${depth}` : `async d${depth}, no view`,
        async run(k) {
          const source = new CSource({ generate: k, generate_rows: rows });
          const stream = new AsyncStreamConsumer({ queueDepth: depth });
          const t = now();
          source.start(stream.handler);
          let check = 0;
          for await (const { array } of stream.arrays()) {
            check += view ? (array.root.child(0).buffer(1) as Int32Array)[0] : array.root.child(0).length;
            array.dispose();
          }
          const ns = now() - t;
          await stream.closed;
          source.free();
          if (check !== (view ? (1000 * k * (k - 1)) / 2 : rows * k)) throw new Error("consumer: wrong data");
          return ns;
        },
      });
    }
    // The C floor of this role: the same C producer feeding a C consumer
    // that extracts and releases each batch on its own thread, no JS; the
    // JS thread waits for the end. The most any consumer of these batches
    // can reach on this machine.
    for (const depth of depths) {
      contenders.push({
        name: `C floor d${depth}`,
        run(k) {
          const source = new CSource({ generate: k, generate_rows: rows });
          const sink = new CSink({ depth });
          const t = now();
          source.start(sink.handler);
          sink.join();
          const ns = now() - t;
          const extracted = sink.stat("extracted");
          sink.free();
          source.free();
          if (extracted !== k) throw new Error(`C floor consumer: ${extracted} of ${k} extracted`);
          return ns;
        },
      });
    }
    contenders.push({
      name: "sync",
      run(k) {
        const schema = pool.schema(0);
        const array = pool.array(0);
        let check = 0;
        const t = now();
        for (let i = 0; i < k; i++) {
          asyncPeer.peer_async_make_device_batch(rows, i * 1000, 1, -1, null, schema, array);
          const imported = ImportedArray.fromDeviceArray(schema, array);
          check += (imported.root.child(0).buffer(1) as Int32Array)[0];
          imported.dispose();
        }
        const ns = now() - t;
        if (check !== (1000 * k * (k - 1)) / 2) throw new Error("consumer sync: wrong data");
        return ns;
      },
    });
  } else {
    const pool16 = Array.from({ length: 16 }, (_, b) => batchOf(rows, b));
    // The consumer both producers feed, configured alike (the floor's
    // ceiling is only meaningful against the same consumer's cycle).
    const consumer = (depth: number, k: number) => new CSink({ depth, timestamps: k });
    for (const depth of depths) {
      contenders.push({
        name: `async d${depth}`,
        async run(k) {
          const sink = consumer(depth, k);
          function* items(): Generator<RecordBatch> {
            for (let i = 0; i < k; i++) yield pool16[i % pool16.length];
          }
          const t = now();
          const result = await exportAsyncStream(items(), sink.handler).done;
          sink.join();
          const ns = now() - t;
          const extracted = sink.stat("extracted");
          sink.free();
          if (result.outcome !== "ended" || extracted !== k) throw new Error(`producer: ${result.outcome}, ${extracted} extracted`);
          return ns;
        },
      });
    }
    contenders.push({
      name: "sync",
      run(k) {
        const t = now();
        for (let i = 0; i < k; i++) {
          const exported = exportArray(pool16[i % pool16.length]);
          asyncPeer.peer_async_consume_sync(exported.schema, exported.array);
          exported.release();
        }
        return now() - t;
      },
    });
    // The C floor of this role: a C producer that does nothing per batch
    // (ready-made batches of the same values, atomic credits, no export)
    // feeding the same consumer, against the same consumer's work done
    // synchronously. Its async/sync is the most any producer can reach
    // against this consumer on this machine.
    const floorPool = asyncPeer.peer_async_floor_pool_new(rows)!;
    ctx.cleanups.push(() => asyncPeer.peer_async_floor_pool_free(floorPool));
    for (const depth of depths) {
      contenders.push({
        name: `C floor d${depth}`,
        run(k) {
          const sink = consumer(depth, k);
          const t = now();
          const sent = Number(asyncPeer.peer_async_floor_produce(floorPool, sink.handler, k));
          sink.join();
          const ns = now() - t;
          const sum = sink.stat("sum");
          sink.free();
          if (sent !== k || sum !== Number(asyncPeer.peer_async_floor_pool_sum(floorPool, k))) throw new Error(`C floor producer: ${sent} sent, sum ${sum}`);
          return ns;
        },
      });
    }
    contenders.push({
      name: "C floor sync",
      run(k) {
        const t = now();
        const sum = Number(asyncPeer.peer_async_floor_sync(floorPool, k));
        const ns = now() - t;
        if (sum !== Number(asyncPeer.peer_async_floor_pool_sum(floorPool, k))) throw new Error("C floor sync: wrong sum");
        return ns;
      },
    });
  }
  return built(group(`async ${role} ${rows} rows`, contenders, batches, batches), {});
}

/** struct<v: int32> of `rows` rows, values (b + i) % 1000 (bench/async.ts). */
function batchOf(rows: number, b: number): RecordBatch {
  return tableFromArrays({ v: Int32Array.from({ length: rows }, (_, i) => (b + i) % 1000) }).batches[0];
}

// --- IPC --------------------------------------------------------------------

/** apache-arrow's IPC round trip (tableToIPC + tableFromIPC, the copy a
 * user would make otherwise) against our zero-copy round trip: exportArray
 * + ImportedArray.fromDeviceArray + importRecordBatch + dispose + release.
 * k is fixed (`k`): with the block size of the other groups an IPC block
 * would be one cycle, and a one-cycle block of ours pays what the block
 * before it left (the IPC's garbage, cold caches) on that single cycle. */
export function ipcGroup(columns: number, rows: number, k: number, ctx: Context): Built {
  // Distinct column memory: with one shared column (as the export groups
  // use) the import would wrap one region for all columns, flattering ours.
  const batch = flatBatch(columns, rows, true);
  const table = new Table([batch]);
  const ours = (read: boolean): Contender => ({
    name: read ? "ours, read" : "ours",
    run(k) {
      // Two clock reads per cycle split it: export + import, construction
      // (and the read), dispose + release. "first" is the block's first
      // round trip, which runs after every other group's blocks with cold
      // caches (recorded times k, so that its per-cycle summary is that
      // round trip's own time).
      let construct = 0;
      let end = 0;
      let first = 0;
      const t = now();
      for (let i = 0; i < k; i++) {
        const exported = exportArray(batch);
        const imported = ImportedArray.fromDeviceArray(exported.schema, exported.array);
        const a = now();
        const back = importRecordBatch(imported);
        if (read) readEveryBuffer(back);
        const backRows = back.numRows; // a disposed handle's batch has none
        const b = now();
        imported.dispose();
        exported.release();
        const c = now();
        end += c - b;
        construct += b - a;
        if (i === 0) first = (c - t) * k;
        if (backRows !== rows) throw new Error("ours: wrong row count");
      }
      const ns = now() - t;
      return { ns, parts: { construct, end, first } };
    },
  });
  const contenders: Contender[] = [
    ours(false),
    ours(true),
    {
      name: "IPC",
      run(k) {
        const t = now();
        for (let i = 0; i < k; i++) if (tableFromIPC(tableToIPC(table, "stream")).numRows !== rows) throw new Error("IPC: wrong row count");
        return now() - t;
      },
    },
  ];
  // The floors of the same round trip, in this group (so that they pay
  // what the IPC contender leaves behind, as ours does): the C floor's
  // export (one FFI call fills the structs) and the JS floor's views of
  // the same shape's buffers, then the bulk release.
  const { py, pool } = ctx;
  const floorColumns = new Columns(columns, rows, true);
  ctx.cleanups.push(() => floorColumns.free());
  const views = jsFloor(floorColumns);
  contenders.push({
    name: "floors",
    run(k) {
      const t = now();
      for (let i = 0; i < k; i++) floor.bf_fill(floorColumns.data, (pool.schemas + i * schemaSize) as Pointer, (pool.arrays + i * deviceArraySize) as Pointer);
      views.run(k);
      pool.releaseAll(k);
      return now() - t;
    },
  });
  // The reference: Arrow C++ (pyarrow) doing the same round trip through
  // the C Device Data Interface, and its own IPC round trip of the batch.
  if (py) {
    const probe = exportArray(batch);
    const key = keys++;
    py.call(`bench_keep(${key}, ${probe.schema}, ${probe.array})`); // moved into pyarrow
    probe.release();
    ctx.cleanups.push(() => py.call(`bench_drop(${key})`));
    contenders.push(
      { name: "pyarrow", run: (k) => Number(py.call(`bench_round_trip(${key}, ${k}, ${pool.schemas}, ${schemaSize}, ${pool.arrays}, ${deviceArraySize})`)) },
      { name: "pyarrow IPC", run: (k) => Number(py.call(`bench_ipc(${key}, ${k})`)) },
    );
  }
  return built(group(`ipc ${columns} columns x ${rows} rows`, contenders, k, k), { buffers: columns * 2 });
}
