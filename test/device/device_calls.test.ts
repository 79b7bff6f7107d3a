/**
 * Driver calls per batch, counted by the fake drivers (every call by
 * name, test/fixtures/fake_gpu.h), for a 10-column x 1,000-row batch with
 * nulls and strings, after warm-up: `toDevice` (and its release), `toHost`,
 * a device stream's `get_next`, and the same stream pulled asynchronously
 * (each batch handed over from the stream's worker thread). The counts are
 * printed, and the bounds asserted are the ones docs/devices.md states.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { Float64, Int32, RecordBatch, Table, Utf8, vectorFromArray, type Vector } from "apache-arrow";
import { fake, expectFakesSettled, isFake, stagingPool } from "../helpers/device.ts";
import { exportStream } from "../../ts/index.ts";
import { AsyncStreamConsumer, ImportedArray, ImportedStream } from "../../ts/raw.ts";
import { exportAsyncStream, toDevice, type DeviceKind } from "../../ts/device.ts";
import { DeviceType } from "../../ts/index.ts";
import { expectSettled } from "../helpers/settled.ts";

if (!isFake) throw new Error("test/device/device_calls.test.ts needs the fake drivers");

const kinds: DeviceKind[] = ["cuda", "rocm"];
/** Most driver calls per batch: CUDA pushes and pops a context once per
 * operation, HIP gets and sets the device (and its pointer query is three
 * calls of hipPointerGetAttribute). */
const bounds: Record<DeviceKind, { toDevice: number; toHost: number }> = {
  cuda: { toDevice: 9, toHost: 5 },
  rocm: { toDevice: 13, toHost: 6 },
};
const rows = 1000;
const warmUp = 4;
const measured = 8;

afterEach(async () => {
  expectFakesSettled(kinds, await expectSettled());
});

/** Ten columns (numbers and strings, every one with nulls), `rows` rows. */
function wideBatch(seed: number): RecordBatch {
  const columns: Record<string, Vector> = {};
  for (let c = 0; c < 10; c++) {
    const values = Array.from({ length: rows }, (_, i) => (i % (c + 3) === 1 ? null : seed * 10_000 + i * (c + 1)));
    if (c % 3 === 0) columns[`s${c}`] = vectorFromArray(values.map((v) => (v === null ? null : `v${v}`)), new Utf8());
    else if (c % 3 === 1) columns[`i${c}`] = vectorFromArray(values, new Int32());
    else columns[`f${c}`] = vectorFromArray(values.map((v) => (v === null ? null : v / 4)), new Float64());
  }
  return new Table(columns).batches[0];
}

/** Driver calls per batch of `measured` runs of `step` after `warmUp` runs,
 * with queued work drained after each (draining is a fixture knob, not a
 * driver call). */
function perBatch(kind: DeviceKind, step: (i: number) => void): Record<string, number> {
  const d = fake(kind);
  for (let i = 0; i < warmUp; i++) {
    step(i);
    d.drain();
  }
  d.resetCalls();
  for (let i = 0; i < measured; i++) {
    step(warmUp + i);
    d.drain();
  }
  return Object.fromEntries(Object.entries(d.calls()).map(([name, count]) => [name, count / measured]));
}

const sum = (calls: Record<string, number>) => Object.values(calls).reduce((a, b) => a + b, 0);
const matching = (calls: Record<string, number>, pattern: RegExp) =>
  Object.entries(calls).filter(([name]) => pattern.test(name)).reduce((a, [, n]) => a + n, 0);
const allocations = /^(cuMemAlloc|cuMemAllocHost|cuMemAllocManaged|cuMemAllocAsync|cuMemAllocFromPoolAsync|hipMalloc|hipHostMalloc|hipMallocManaged|hipMallocAsync|hipMallocFromPoolAsync)(_v2)?$/;
const hostToDevice = /^(cuMemcpyHtoD(Async)?_v2|hipMemcpy(Async)?)$/;
const deviceToHost = /^(cuMemcpyDtoH(Async)?_v2|hipMemcpy(Async)?)$/;
const records = /^(cuEventRecord|hipEventRecord)$/;
const waits = /^(cuStreamSynchronize|cuEventSynchronize|hipStreamSynchronize|hipEventSynchronize)$/;

function report(kind: DeviceKind, what: string, calls: Record<string, number>) {
  const listed = Object.entries(calls).sort(([a], [b]) => a.localeCompare(b)).map(([n, c]) => `${n} ${c}`).join(", ");
  console.log(`${kind} ${what}: ${sum(calls)} driver calls per batch (${listed})`);
}

for (const kind of kinds) {
  describe(`${kind} (fake driver): driver calls per 10 x 1,000 batch after warm-up`, () => {
    // Two more than pulled: a stream copies ahead, and its end is not measured.
    const batches = Array.from({ length: warmUp + measured + 2 }, (_, i) => wideBatch(i));

    test("toDevice: no allocation, one host-to-device copy, one event record", () => {
      const calls = perBatch(kind, (i) => {
        toDevice(batches[i], { device: kind }).release();
      });
      report(kind, "toDevice + release", calls);
      expect(matching(calls, allocations)).toBe(0);
      expect(matching(calls, hostToDevice)).toBe(1);
      expect(matching(calls, records)).toBe(1);
      expect(sum(calls)).toBeLessThanOrEqual(bounds[kind].toDevice);
    });

    test("toHost: no allocation, one device-to-host copy, one wait", () => {
      const handles = batches.map((b) => toDevice(b, { device: kind }));
      fake(kind).drain();
      const imports = handles.map((h) => ImportedArray.fromDeviceArray(h.schema, h.array));
      for (const h of handles) h.release();
      const calls = perBatch(kind, (i) => {
        imports[i].toHost().dispose();
      });
      report(kind, "toHost", calls);
      for (const imported of imports) imported.dispose();
      expect(matching(calls, allocations)).toBe(0);
      expect(matching(calls, deviceToHost)).toBe(1);
      expect(matching(calls, waits)).toBe(1);
      expect(sum(calls)).toBeLessThanOrEqual(bounds[kind].toHost);
    });

    /** A device stream over `batches`, imported back. */
    function deviceStream() {
      const table = new Table(batches);
      const exported = exportStream(table, { device: { device: kind } });
      return { exported, stream: ImportedStream.fromDeviceArrayStream(exported.stream) };
    }

    test("a device stream's get_next (and the batch's release)", () => {
      const { exported, stream } = deviceStream();
      const calls = perBatch(kind, () => {
        stream.next()!.dispose();
      });
      report(kind, "device stream get_next", calls);
      stream.release();
      exported.release();
      expect(matching(calls, allocations)).toBe(0);
      expect(matching(calls, hostToDevice)).toBe(1);
      expect(matching(calls, records)).toBe(1);
      expect(sum(calls)).toBeLessThanOrEqual(bounds[kind].toDevice);
    });

    test("an async pull of the same stream: each hand-off costs no more driver calls than get_next", async () => {
      // Whole streams, end included, so that read-ahead does not shift
      // copies between measured windows; the pools are warm.
      const d = fake(kind);
      toDevice(batches[0], { device: kind }).release();
      d.drain();
      const sync = deviceStream();
      d.resetCalls();
      let pulled = 0;
      for (let batch = sync.stream.next(); batch; batch = sync.stream.next()) {
        batch.dispose();
        d.drain();
        pulled++;
      }
      sync.stream.release();
      sync.exported.release();
      d.drain();
      const syncCalls = Object.fromEntries(Object.entries(d.calls()).map(([n, c]) => [n, c / pulled]));

      const { exported, stream } = deviceStream();
      d.resetCalls();
      let seen = 0;
      for await (const imported of stream) {
        imported.dispose();
        d.drain();
        seen++;
      }
      exported.release();
      d.drain();
      const asyncCalls = Object.fromEntries(Object.entries(d.calls()).map(([n, c]) => [n, c / seen]));
      report(kind, "device stream, whole, sync", syncCalls);
      report(kind, "device stream, whole, async hand-offs", asyncCalls);
      expect(seen).toBe(batches.length);
      expect(pulled).toBe(batches.length);
      expect(matching(asyncCalls, allocations)).toBe(0);
      expect(matching(asyncCalls, hostToDevice)).toBe(1);
      expect(matching(asyncCalls, records)).toBe(1);
      expect(sum(asyncCalls)).toBeLessThanOrEqual(sum(syncCalls));
    });

    test("an async device stream (ArrowAsyncDeviceStreamHandler), JS to JS: per batch no more driver calls than toDevice + release", async () => {
      const d = fake(kind);
      toDevice(batches[0], { device: kind }).release();
      d.drain();
      const direct = perBatch(kind, (i) => {
        toDevice(batches[i % batches.length], { device: kind }).release();
      });
      async function handOffs() {
        const consumer = new AsyncStreamConsumer({ queueDepth: 4 });
        async function* source() {
          for (const batch of batches) yield toDevice(batch, { device: kind });
        }
        d.resetCalls();
        const run = exportAsyncStream(source(), consumer.handler, { deviceType: kind === "cuda" ? DeviceType.CUDA : DeviceType.ROCM });
        let seen = 0;
        for await (const { array } of consumer.arrays()) {
          array.dispose();
          d.drain();
          seen++;
        }
        expect((await run.done).outcome).toBe("ended");
        d.drain();
        expect(seen).toBe(batches.length);
        return Object.fromEntries(Object.entries(d.calls()).map(([n, c]) => [n, c / seen]));
      }
      await handOffs(); // warm-up: up to queueDepth batches in flight, each with its event
      const asyncCalls = await handOffs();
      report(kind, "async device stream hand-off", asyncCalls);
      expect(matching(asyncCalls, allocations)).toBe(0);
      expect(matching(asyncCalls, hostToDevice)).toBe(1);
      expect(matching(asyncCalls, records)).toBe(1);
      expect(sum(asyncCalls)).toBeLessThanOrEqual(sum(direct));
    });

    test("the counters themselves: every call is counted by name, and a reset clears them", () => {
      const d = fake(kind);
      d.resetCalls();
      expect(d.calls()).toEqual({});
      stagingPool(kind);
      toDevice(batches[0], { device: kind }).release();
      d.drain();
      const calls = d.calls();
      expect(matching(calls, records)).toBeGreaterThanOrEqual(1);
      expect(sum(calls)).toBeGreaterThan(0);
      d.resetCalls();
      expect(d.calls()).toEqual({});
    });
  });
}
