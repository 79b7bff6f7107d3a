/**
 * Re-exports released concurrently from many threads: a C fixture
 * imports a batch, re-exports it once per thread (whole, child, slice,
 * dictionary, one-column table), then 8 threads release one re-export each
 * at the same moment while the importing thread drops the owner's own
 * reference. 10,000 cycles: the producer's release runs exactly once per
 * import, never before the cycle's releases, and memory stays flat.
 */
import { afterEach, expect, test } from "bun:test";
import { libraryPath } from "../../ts/core/ffi/library.ts";
import { nonZeroCounters } from "../helpers/leaks.ts";
import { owners, ownersRootsLeft } from "../helpers/owners.ts";

afterEach(() => {
  expect(nonZeroCounters()).toEqual({});
  expect(ownersRootsLeft()).toBe(0);
  owners.owners_reset();
});

const cycles = 10_000;
const warmup = 1_000;
const threads = 8;
/**
 * Heap growth allowed over the measured cycles. Whatever one cycle could
 * leak is at least one small block per re-export (8 x >= 16 bytes), so a
 * leak grows the heap by > 1 MiB over 10,000 cycles; what stays is noise
 * from the process's other threads and per-thread malloc caches, measured
 * at 0-62 KiB.
 */
const heapSlackBytes = 256 * 1024;

function stress(leakBytesPerCycle: number) {
  const report = new Float64Array(12);
  const path = Buffer.from(`${libraryPath()}\0`);
  expect(owners.owners_stress(path, cycles, warmup, threads, leakBytesPerCycle, report)).toBe(0);
  const [ran, producerReleases, early, miscounted, failures, heapBefore, heapAfter, rssBefore, rssAfter, ms, counterWorks, live] = report;
  return { ran, producerReleases, early, miscounted, failures, heapGrowth: heapAfter - heapBefore, rssGrowthKiB: rssAfter - rssBefore, ms, counterWorks, live };
}

test("10,000 cycles of 8 threads releasing re-exports of one import at once", () => {
  const r = stress(0);
  console.log(`stress: ${r.ran} cycles x ${threads} threads in ${r.ms.toFixed(0)} ms (${((r.ms * 1000) / r.ran).toFixed(1)} us/cycle); heap growth ${r.heapGrowth} bytes; RSS growth ${r.rssGrowthKiB} KiB`);
  expect(r.ran).toBe(cycles);
  expect(r.failures).toBe(0);
  expect(r.producerReleases).toBe(cycles + warmup); // exactly one per import
  expect(r.early).toBe(0); // never while a re-export or the owner lived
  expect(r.miscounted).toBe(0); // exactly once after the last one
  expect(r.live).toBe(0);
  expect(r.counterWorks).toBe(1); // the heap figure sees this thread's allocations
  expect(Math.abs(r.heapGrowth)).toBeLessThan(heapSlackBytes);
  expect(r.rssGrowthKiB).toBeLessThan(4 * 1024);
});

test("the heap measurement does catch a leak as small as 32 bytes per cycle", () => {
  const r = stress(32);
  expect(r.producerReleases).toBe(cycles + warmup);
  expect(r.heapGrowth).toBeGreaterThan(heapSlackBytes);
});
