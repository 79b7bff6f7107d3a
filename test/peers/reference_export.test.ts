/**
 * Proof against the reference implementation, JS -> C: for every gold file of test/data/gold (both folders), apache-arrow
 * reads the .stream, this library exports each batch (exportArray), and
 * Arrow C++ imports it (ImportDeviceRecordBatch, or ImportRecordBatch for a
 * plain ArrowArray), runs ValidateFull, and compares it equal, schema
 * metadata included, to its own read of the same bytes. Sliced batches
 * (non-zero offsets at the batch, column and nested levels) are compared
 * with the same slice of Arrow C++'s batch.
 *
 * Arrow C++'s ValidateFull rejects the values of three gold files
 * (shared/README.md): there our export must get the same verdict as Arrow
 * C++'s own read, and nowhere else may it be rejected.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { read, type Pointer } from "bun:ffi";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  Data, Field, Int32, Int8, List, makeData, RecordBatch, RecordBatchReader, Schema, Struct, Utf8,
} from "apache-arrow";
import { arrayFields, schemaFields } from "../../ts/core/abi/structs.ts";
import { exportArray } from "../../ts/index.ts";
import {
  ArrowCppRead, arrowCppLive, arrowCppVersion, arrowShimUnavailable, checkPassed, describeCheck,
  heldDrop, heldValidation, holdDeviceArray, type CheckResult,
} from "../helpers/arrow_cpp.ts";
import { testRoot } from "../helpers/paths.ts";
import {
  goldFiles, goldFolders, rejectedByArrowCppValidation, unreadableByApacheArrow, type GoldFile,
} from "../helpers/shared_gold.ts";
import { expectSettled } from "../helpers/settled.ts";

const files: GoldFile[] = goldFiles();

afterEach(async () => {
  await expectSettled();
  expect(arrowCppLive()).toEqual({ ipc: 0, held: 0, jobs: 0 });
});

/** apache-arrow's batches of a gold file. */
function apacheArrowBatches(bytes: Uint8Array): RecordBatch[] {
  return [...RecordBatchReader.from(bytes)];
}

/** The verdict a gold file's batch must get: Arrow C++'s own, everywhere
 * the same; valid except for the files Arrow C++ itself rejects. */
function expectAccepted(file: GoldFile, result: CheckResult, what: string, wholeBatch = false) {
  expect(describeCheck(result), `${file.label} ${what}`).toBe("passed");
  expect(checkPassed(result)).toBe(true);
  if (!rejectedByArrowCppValidation.has(file.label)) {
    expect(result.valid, `${file.label} ${what}: ${result.messages.valid}`).toBe(true);
  } else if (wholeBatch) {
    // Tolerated exactly where Arrow C++ rejects its own read (every batch
    // of these files holds such a value; a slice may not).
    expect(result.referenceValid).toBe(false);
  }
}

/** The C offsets of the exported tree at `array`, per depth: the largest
 * offset seen at each level (root = 0). */
function offsetsByDepth(array: number, depth = 0, out: number[] = []): number[] {
  out[depth] = Math.max(out[depth] ?? 0, arrayFields.offset(array));
  for (let i = 0; i < arrayFields.nChildren(array); i++) offsetsByDepth(arrayFields.child(array, i), depth + 1, out);
  return out;
}

/** batch.slice(begin, end), without apache-arrow's RecordBatch.slice
 * rebuilding the struct type from `batch.schema` (whose fields it merged by
 * name, losing the nullability of duplicate-named columns). */
function sliceBatch(batch: RecordBatch, begin: number, end: number): RecordBatch {
  const fields = batch.data.type.children as Field[];
  return new RecordBatch(new Schema(fields, batch.schema.metadata), batch.data.slice(begin, end - begin));
}

/** Rows [begin, begin + length) of `batch` as one struct Data whose own
 * offset is 1 while its columns are sliced at `begin`: the export then has a
 * non-zero offset at the root and (begin - 1) at the columns. */
function offsetStruct(batch: RecordBatch, begin: number, length: number): Data {
  return makeData({
    type: batch.data.type as Struct,
    offset: 1,
    length,
    nullCount: 0,
    children: batch.data.children.map((column) => column.slice(begin, length)),
  });
}

function pinnedPyarrowVersion(): string {
  const env = readFileSync(join(testRoot, "..", "scripts", "toolchain.env"), "utf8");
  return /^PYARROW_VERSION=(.+)$/m.exec(env)![1].trim();
}

describe("the Arrow C++ reference", () => {
  test("the shim is built and runs the pinned Arrow C++", () => {
    expect(arrowShimUnavailable()).toBeNull();
    expect(arrowCppVersion()).toBe(pinnedPyarrowVersion());
  });

  test("both gold folders are found, with every case of shared/README.md", () => {
    expect(files.filter((f) => f.folder === goldFolders[0])).toHaveLength(22);
    expect(files.filter((f) => f.folder === goldFolders[1])).toHaveLength(11);
  });
});

describe("JS -> C: every gold batch, exported by this library, equals Arrow C++'s own read", () => {
  for (const file of files) {
    if (unreadableByApacheArrow.has(file.label)) {
      test(`${file.label}: apache-arrow cannot read it; Arrow C++ can`, () => {
        const bytes = readFileSync(file.path);
        const type = file.name.includes("list_view") ? "ListView" : "RunEndEncoded";
        expect(() => apacheArrowBatches(bytes)).toThrow(`Unrecognized type: "${type}"`);
        using cpp = ArrowCppRead.fromBytes(bytes);
        expect(cpp.batchCount).toBe(3);
        for (let i = 0; i < cpp.batchCount; i++) expect(cpp.referenceValidation(i)).toBeNull();
      });
      continue;
    }

    test(`${file.label}: ImportDeviceRecordBatch + ValidateFull + Equals`, () => {
      const bytes = readFileSync(file.path);
      using cpp = ArrowCppRead.fromBytes(bytes);
      const batches = apacheArrowBatches(bytes);
      // A stream without batches: apache-arrow yields one empty placeholder
      // batch; Arrow C++'s empty batch of the schema is its reference.
      using reference = cpp.batchCount === 0 ? cpp.emptyBatch() : cpp.slice(0, Number.MAX_SAFE_INTEGER);
      if (cpp.batchCount === 0) expect(batches.map((b) => b.numRows)).toEqual([0]);
      else expect(batches).toHaveLength(cpp.batchCount);
      for (let i = 0; i < batches.length; i++) {
        using exported = exportArray(batches[i]);
        const result = reference.checkDeviceBatch(i, exported.schema, exported.array);
        expect(exported.schemaReleased && exported.arrayReleased).toBe(true); // moved into Arrow C++
        expectAccepted(file, result, `batch ${i}`, cpp.batchCount > 0);
      }
    });

    test(`${file.label}: ImportRecordBatch (plain ArrowArray) + ValidateFull + Equals`, () => {
      const bytes = readFileSync(file.path);
      using cpp = ArrowCppRead.fromBytes(bytes);
      using reference = cpp.batchCount === 0 ? cpp.emptyBatch() : cpp.slice(0, Number.MAX_SAFE_INTEGER);
      const batches = apacheArrowBatches(bytes);
      for (let i = 0; i < batches.length; i++) {
        using exported = exportArray(batches[i], { as: "array" });
        expectAccepted(file, reference.checkBatch(i, exported.schema, exported.array), `batch ${i}`, cpp.batchCount > 0);
      }
    });

    if (rejectedByArrowCppValidation.has(file.label)) {
      test(`${file.label}: Arrow C++ rejects its own read too (the tolerated verdict)`, () => {
        using cpp = ArrowCppRead.fromBytes(readFileSync(file.path));
        for (let i = 0; i < cpp.batchCount; i++) {
          expect(cpp.referenceValidation(i)).toContain(file.name.endsWith("datetime") ? "date64" : "does not fit in precision");
        }
      });
    }
  }
});

describe("JS -> C: sliced batches equal the same slice of Arrow C++'s batch", () => {
  for (const file of files) {
    if (unreadableByApacheArrow.has(file.label)) continue;
    const bytes = readFileSync(file.path);
    const lengths = apacheArrowBatches(bytes).map((b) => b.numRows);
    if (!lengths.some((n) => n >= 3)) continue; // nothing to slice inside

    test(`${file.label}: batch.slice (non-zero column offsets)`, () => {
      using cpp = ArrowCppRead.fromBytes(bytes);
      const batches = apacheArrowBatches(bytes);
      let checked = 0;
      for (let i = 0; i < batches.length; i++) {
        const n = batches[i].numRows;
        if (n < 3) continue;
        for (const [begin, end] of [[1, n - 1], [Math.floor(n / 2), Math.floor(n / 2) + 1]]) {
          using reference = cpp.slice(begin, end - begin);
          using exported = exportArray(sliceBatch(batches[i], begin, end));
          const offsets = offsetsByDepth(exported.array as number);
          expect(offsets[0]).toBe(0); // ImportDeviceRecordBatch needs a root offset of 0
          expect(offsets[1]).toBe(begin);
          expectAccepted(file, reference.checkDeviceBatch(i, exported.schema, exported.array), `batch ${i} [${begin}, ${end})`);
          checked++;
        }
      }
      expect(checked).toBeGreaterThan(0);
    });

    test(`${file.label}: struct offsets at the root and the columns (ImportDeviceArray)`, () => {
      using cpp = ArrowCppRead.fromBytes(bytes);
      const batches = apacheArrowBatches(bytes);
      let checked = 0;
      for (let i = 0; i < batches.length; i++) {
        const n = batches[i].numRows;
        if (n < 3) continue;
        const begin = 2;
        const length = n - 3;
        using reference = cpp.slice(begin, length);
        using exported = exportArray(offsetStruct(batches[i], begin, length));
        const offsets = offsetsByDepth(exported.array as number);
        expect(offsets[0]).toBe(1);
        expect(offsets[1]).toBe(begin - 1);
        const result = reference.checkDeviceArray(i, -1, exported.schema, exported.array);
        // A bare Data carries no field name, flags or schema metadata, so
        // only the data and the validation verdict are compared here.
        expect(result.valid).toBe(result.referenceValid);
        if (!rejectedByArrowCppValidation.has(file.label)) expect(result.valid, result.messages.valid).toBe(true);
        expect(result.equal, result.messages.equal).toBe(true);
        checked++;
      }
      expect(checked).toBeGreaterThan(0);
    });
  }
});

describe("export fixes found by Arrow C++", () => {
  /** Arrow C++ imports an exported Data and validates it fully. */
  function arrowCppValidation(data: Data | RecordBatch): string | null {
    using exported = exportArray(data);
    const id = holdDeviceArray(exported.schema, exported.array);
    try {
      return heldValidation(id);
    } finally {
      heldDrop(id);
    }
  }

  test("zero-length string and list arrays export one zero offset, not NULL", () => {
    // What apache-arrow builds for empty columns (e.g. the placeholder batch
    // of a stream without batches): no offsets at all.
    const emptyStrings = makeData({ type: new Utf8(), length: 0, nullCount: 0, valueOffsets: new Int32Array(0), data: new Uint8Array(0) });
    const emptyLists = makeData({
      type: new List(new Field("item", new Int32(), true)),
      length: 0,
      nullCount: 0,
      valueOffsets: new Int32Array(0),
      child: makeData({ type: new Int32(), length: 0, nullCount: 0, data: new Int32Array(0) }),
    });
    for (const empty of [emptyStrings, emptyLists] as Data[]) {
      expect(empty.valueOffsets).toHaveLength(0);
      {
        using exported = exportArray(empty);
        const offsets = arrayFields.buffer(exported.array as number, 1);
        expect(offsets).not.toBe(0);
        expect(read.i32(offsets as Pointer, 0)).toBe(0);
      }
      expect(arrowCppValidation(empty)).toBeNull();
    }
  });

  test("a struct column sliced inside a batch exports children long enough for its offset", () => {
    const inner = new Struct([new Field("x", new Int32(), true), new Field("s", new Utf8(), true)]);
    const column = makeData({
      type: inner,
      length: 6,
      nullCount: 0,
      children: [
        makeData({ type: new Int32(), length: 6, nullCount: 0, data: Int32Array.from([0, 1, 2, 3, 4, 5]) }),
        makeData({ type: new Utf8(), length: 6, nullCount: 0, valueOffsets: Int32Array.from([0, 1, 2, 3, 4, 5, 6]), data: new TextEncoder().encode("abcdef") }),
      ],
    });
    const batch = new RecordBatch(new Schema([new Field("c", inner, true)]), makeData({ type: new Struct([new Field("c", inner, true)]), length: 6, nullCount: 0, children: [column] }));
    const sliced = batch.slice(2, 5);
    using exported = exportArray(sliced);
    const structColumn = arrayFields.child(exported.array as number, 0);
    const x = arrayFields.child(structColumn, 0);
    // The column has C offset 2; its children must cover slots [0, 2 + 3).
    expect(arrayFields.offset(structColumn)).toBe(2);
    expect(arrayFields.offset(x) + arrayFields.length(x)).toBeGreaterThanOrEqual(arrayFields.offset(structColumn) + arrayFields.length(structColumn));
    expect(arrowCppValidation(sliced)).toBeNull();
  });

  test("a RecordBatch with duplicate field names exports each column's own type and flags", () => {
    const fields = [new Field("a", new Int8(), false), new Field("a", new Int32(), true)];
    const data = makeData({
      type: new Struct(fields),
      length: 2,
      nullCount: 0,
      children: [
        makeData({ type: new Int8(), length: 2, nullCount: 0, data: Int8Array.from([1, 2]) }),
        makeData({ type: new Int32(), length: 2, nullCount: 0, data: Int32Array.from([3, 4]) }),
      ],
    });
    const batch = new RecordBatch(new Schema(fields), data);
    // apache-arrow's batch.schema merged the two "a" fields into the second.
    expect(batch.schema.fields.map((f) => String(f.type))).toEqual(["Int32", "Int32"]);
    using exported = exportArray(batch);
    const schema = exported.schema as number;
    const columns = [0, 1].map((i) => schemaFields.child(schema, i));
    expect(columns.map((c) => schemaFields.format(c))).toEqual(["c", "i"]);
    expect(columns.map((c) => schemaFields.flags(c) & 2)).toEqual([0, 2]);
    expect(arrowCppValidation(batch)).toBeNull();
  });
});
