/**
 * Proof against the reference implementation, C -> JS at the raw level:
 * for every gold file of test/data/gold (both folders, list-view and
 * run-end encoded included), Arrow C++ reads the bytes and exports each
 * batch (ExportDeviceRecordBatch, or ExportRecordBatch for a plain
 * ArrowArray) into a slot; this library imports it with full
 * validation. The import must succeed and see exactly the tree Arrow C++
 * exported: node count, lengths, null counts, offsets and buffer addresses
 * (zero-copy). Arrow C++'s release runs exactly once, at dispose() and not
 * before. Sliced batches (non-zero column offsets) are covered too.
 *
 * And the apache-arrow comparison: converted with importRecordBatch, each
 * imported batch equals apache-arrow's own read of the same bytes (values,
 * types, nullability, metadata), for every file apache-arrow can read
 * (list-view and run-end encoded it cannot: those stop at the raw views).
 */
import { afterEach, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { arrayFields, schemaFields } from "../../ts/core/abi/structs.ts";
import { DeviceType } from "../../ts/core/abi/layout.ts";
import { RecordBatchReader, type RecordBatch } from "apache-arrow";
import { importRecordBatch } from "../../ts/index.ts";
import { ImportedArray, structPointer, type RawArray } from "../../ts/raw.ts";
import { compareBatches } from "../helpers/arrow_compare.ts";
import { ArrowCppRead, arrowCppLive, CSlot, cArrayLayout, type NodeLayout } from "../helpers/arrow_cpp.ts";
import { peer } from "../helpers/fixtures.ts";
import { goldFiles, unreadableByApacheArrow, type GoldFile } from "../helpers/shared_gold.ts";
import { expectSettled } from "../helpers/settled.ts";

const files: GoldFile[] = goldFiles();

afterEach(async () => {
  peer.peer_reset_counts();
  await expectSettled();
  expect(arrowCppLive()).toEqual({ ipc: 0, held: 0, jobs: 0 });
});

/** The nodes of an imported tree in the shim's preorder: node, children,
 * then dictionary. */
function preorder(node: RawArray, out: RawArray[] = []): RawArray[] {
  out.push(node);
  for (const child of node.children) preorder(child, out);
  const dictionary = node.dictionary;
  if (dictionary) preorder(dictionary, out);
  return out;
}

/** What the import sees, in the layout's shape, for one toEqual. */
function importedLayout(imported: ImportedArray): NodeLayout[] {
  return preorder(imported.root).map((node) => ({
    length: node.length,
    nullCount: node.nullCount,
    offset: node.offset,
    nChildren: node.nChildren,
    hasDictionary: node.dictionary !== null,
    buffers: Array.from({ length: node.nBuffers }, (_, i) => node.bufferAddress(i)),
  }));
}

/** Counted releases since the last reset. */
function releases(): { array: number; schema: number } {
  return { array: Number(peer.peer_intercepted_array_releases()), schema: Number(peer.peer_intercepted_schema_releases()) };
}

/**
 * Imports what Arrow C++ exported into `slot` and checks it against the
 * layout Arrow C++ wrote there; then disposes and checks the one release.
 */
function importAndCompare(slot: CSlot, kind: "device_array" | "array", label: string, expected: RecordBatch | null): void {
  const layout = cArrayLayout(slot.array);
  expect(layout.length).toBeGreaterThan(0);
  peer.peer_reset_counts();
  peer.peer_intercept_array(slot.array);
  peer.peer_intercept_schema(slot.schema);
  const imported = kind === "device_array"
    ? ImportedArray.fromDeviceArray(slot.schema, structPointer("ArrowDeviceArray", slot.array), { validation: "full" })
    : ImportedArray.fromArray(slot.schema, structPointer("ArrowArray", slot.array), { validation: "full" });
  try {
    // Moved in: the slot is left released.
    expect(arrayFields.released(slot.array as number) && schemaFields.released(slot.schema as number)).toBe(true);
    expect(imported.nodeCount, label).toBe(layout.length);
    expect(importedLayout(imported), label).toEqual(layout);
    expect(imported.deviceType).toBe(DeviceType.CPU);
    expect(imported.deviceId).toBe(-1);
    expect(imported.root.format).toBe("+s");
    if (expected) expect(compareBatches(importRecordBatch(imported), expected, label)).toEqual([]);
    expect(releases(), `${label}: nothing released while imported`).toEqual({ array: 0, schema: 0 });
  } finally {
    imported.dispose();
  }
  expect(releases(), `${label}: Arrow C++'s release ran once`).toEqual({ array: 1, schema: 1 });
  imported.dispose(); // idempotent
  expect(releases()).toEqual({ array: 1, schema: 1 });
}

/** Arrow C++'s read of a gold file; a stream without batches gets Arrow
 * C++'s empty batch of its schema, so every file exports something. */
function readGold(file: GoldFile): ArrowCppRead {
  using read = ArrowCppRead.fromBytes(readFileSync(file.path));
  return read.batchCount === 0 ? read.emptyBatch() : read.slice(0, Number.MAX_SAFE_INTEGER);
}

/** apache-arrow's own read of a gold file (null for the files it cannot
 * read). A stream without batches reads as one empty batch, as the
 * exported Arrow C++ empty batch is. */
function apacheArrowRead(file: GoldFile): RecordBatch[] | null {
  if (unreadableByApacheArrow.has(file.label)) return null;
  return [...RecordBatchReader.from(readFileSync(file.path))];
}

/** `batch` sliced at the Data level, as compareBatches reads it. Not
 * RecordBatch.slice() or the RecordBatch constructor: apache-arrow 21
 * rebuilds the struct type there from a schema that merges repeated field
 * names and re-derives nullability from the slice's null count. */
function slicedBatch(batch: RecordBatch, offset: number, length: number): RecordBatch {
  return { schema: batch.schema, data: batch.data.slice(offset, length), numRows: length } as unknown as RecordBatch;
}

describe("C -> JS: every gold batch exported by Arrow C++ imports with full validation, zero-copy", () => {
  test("streams without batches are the two no_batches files", () => {
    const empty = files.filter((file) => {
      using read = ArrowCppRead.fromBytes(readFileSync(file.path));
      return read.batchCount === 0;
    });
    expect(empty.map((f) => f.name)).toEqual(["generated_primitive_no_batches", "generated_binary_no_batches"]);
  });

  for (const file of files) {
    test(`${file.label}: ExportDeviceRecordBatch -> ImportedArray.fromDeviceArray`, () => {
      using cpp = readGold(file);
      const own = apacheArrowRead(file);
      expect(cpp.batchCount).toBeGreaterThan(0);
      if (own) expect(own.length).toBe(cpp.batchCount);
      for (let i = 0; i < cpp.batchCount; i++) {
        using slot = new CSlot("device_array");
        cpp.exportDeviceBatch(i, slot);
        importAndCompare(slot, "device_array", `${file.label} batch ${i}`, own?.[i] ?? null);
      }
    });

    test(`${file.label}: ExportRecordBatch -> ImportedArray.fromArray`, () => {
      using cpp = readGold(file);
      const own = apacheArrowRead(file);
      for (let i = 0; i < cpp.batchCount; i++) {
        using slot = new CSlot("array");
        cpp.exportBatch(i, slot);
        importAndCompare(slot, "array", `${file.label} batch ${i}`, own?.[i] ?? null);
      }
    });
  }
});

describe("C -> JS: sliced Arrow C++ batches (non-zero column offsets)", () => {
  for (const file of files) {
    test(`${file.label}: every batch sliced at [1, length - 1)`, () => {
      using cpp = readGold(file);
      let sliced = 0;
      for (let i = 0; i < cpp.batchCount; i++) {
        const n = cpp.batchLength(i);
        if (n < 3) continue;
        using window = cpp.slice(1, n - 2);
        using slot = new CSlot("device_array");
        window.exportDeviceBatch(i, slot);
        const columns = cArrayLayout(slot.array).filter((_, k) => k > 0);
        expect(columns.some((node) => node.offset === 1)).toBe(true);
        const own = apacheArrowRead(file);
        importAndCompare(slot, "device_array", `${file.label} batch ${i} sliced`, own ? slicedBatch(own[i], 1, n - 2) : null);
        sliced++;
      }
      const longest = Math.max(0, ...Array.from({ length: cpp.batchCount }, (_, i) => cpp.batchLength(i)));
      expect(sliced > 0).toBe(longest >= 3);
    });
  }
});
