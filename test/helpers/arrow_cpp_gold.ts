/**
 * The gold files as both references see them, for the stream and async
 * proofs against Arrow C++ (reference_streams.test.ts,
 * reference_async.test.ts): Arrow C++'s own read (an ArrowCppRead), and
 * apache-arrow's own read (null for the two files apache-arrow cannot read).
 *
 * Zero-copy evidence. Arrow C++'s read holds every batch's buffers; any
 * export of batch i (ExportDeviceRecordBatch here, or the one inside a
 * stream's get_next or an async task's extract_data) points at those same
 * buffers. `CppBatches` exports each batch once more, records its C layout
 * (buffer addresses included) and converts it to apache-arrow without
 * copying, so a batch that came any other way can be checked to be that
 * very memory: same layout, same addresses (`expectSameMemory`), and, as
 * apache-arrow objects, no buffer of its own (`unsharedBuffers`).
 */
import { expect } from "bun:test";
import { readFileSync } from "node:fs";
import { RecordBatchReader, type RecordBatch, type Schema } from "apache-arrow";
import { importRecordBatch } from "../../ts/index.ts";
import { ImportedArray, type RawArray } from "../../ts/raw.ts";
import { ArrowCppRead, cArrayLayout, CSlot, type NodeLayout } from "./arrow_cpp.ts";
import { fieldSignature } from "./arrow_compare.ts";
import { unreadableByApacheArrow, type GoldFile } from "./shared_gold.ts";

/** apache-arrow's read: the schema, and the batches Arrow C++ also has (a
 * stream without batches reads as one empty placeholder batch in
 * apache-arrow, which is left out here: `placeholder` holds it). */
export type ApacheArrowRead = { schema: Schema; batches: RecordBatch[]; placeholder: RecordBatch | null };

export type Gold = {
  file: GoldFile;
  bytes: Uint8Array;
  /** Arrow C++'s read; free it (the caller's `using`). */
  cpp: ArrowCppRead;
  /** null for the files apache-arrow cannot read. */
  own: ApacheArrowRead | null;
};

/** Both reads of a gold file. */
export function readGold(file: GoldFile): Gold {
  const bytes = new Uint8Array(readFileSync(file.path));
  const cpp = ArrowCppRead.fromBytes(bytes);
  try {
    return { file, bytes, cpp, own: apacheArrowRead(file, bytes, cpp.batchCount) };
  } catch (error) {
    cpp.free();
    throw error;
  }
}

function apacheArrowRead(file: GoldFile, bytes: Uint8Array, cppBatches: number): ApacheArrowRead | null {
  if (unreadableByApacheArrow.has(file.label)) return null;
  const reader = RecordBatchReader.from(bytes);
  reader.open();
  const schema = reader.schema;
  const batches = [...reader];
  if (cppBatches === 0) {
    // apache-arrow yields one zero-row batch for a stream without batches.
    expect(batches.map((b) => b.numRows), `${file.label}: apache-arrow's placeholder batch`).toEqual([0]);
    return { schema, batches: [], placeholder: batches[0] };
  }
  expect(batches.length, `${file.label}: both readers see the same batches`).toBe(cppBatches);
  return { schema, batches, placeholder: null };
}

/** A schema's fields (name, nullability, type, metadata, nested) and
 * metadata, for one toEqual. */
export function schemaSignature(schema: Schema): string[] {
  return [...schema.fields.map(fieldSignature), JSON.stringify([...schema.metadata])];
}

/** The nodes of an imported tree in the shim's preorder: node, children,
 * then dictionary. */
function preorder(node: RawArray, out: RawArray[] = []): RawArray[] {
  out.push(node);
  for (const child of node.children) preorder(child, out);
  const dictionary = node.dictionary;
  if (dictionary) preorder(dictionary, out);
  return out;
}

/** Arrow C++ allocates the variadic-sizes buffer of a view array afresh
 * for each export (it is not part of its array data): that one address
 * differs between two exports of the same batch. */
function isView(node: RawArray): boolean {
  return node.format === "vu" || node.format === "vz";
}

/** The imported tree in cArrayLayout's shape, variadic sizes masked. */
export function importedLayout(imported: ImportedArray): NodeLayout[] {
  return preorder(imported.root).map((node) => ({
    length: node.length,
    nullCount: node.nullCount,
    offset: node.offset,
    nChildren: node.nChildren,
    hasDictionary: node.dictionary !== null,
    buffers: Array.from({ length: node.nBuffers }, (_, i) => (isView(node) && i === node.nBuffers - 1 ? -1 : node.bufferAddress(i))),
  }));
}

/** `layout` with the variadic-sizes buffers of `imported`'s view nodes
 * masked as importedLayout masks them (same preorder). */
function masked(layout: NodeLayout[], imported: ImportedArray): NodeLayout[] {
  const nodes = preorder(imported.root);
  return layout.map((node, k) => (nodes[k] && isView(nodes[k]) ? { ...node, buffers: node.buffers.map((a, i) => (i === node.buffers.length - 1 ? -1 : a)) } : node));
}

/** Batch i of Arrow C++'s read, exported again: its C layout and, when
 * apache-arrow can hold the types, the same memory as a RecordBatch. */
export class CppBatches implements Disposable {
  readonly layouts: NodeLayout[][] = [];
  readonly batches: (RecordBatch | null)[] = [];
  readonly #imports: ImportedArray[] = [];

  constructor(cpp: ArrowCppRead, convert: boolean) {
    try {
      for (let i = 0; i < cpp.batchCount; i++) {
        using slot = new CSlot("device_array");
        cpp.exportDeviceBatch(i, slot);
        this.layouts.push(cArrayLayout(slot.array));
        const imported = ImportedArray.fromDeviceArray(slot.schema, slot.array);
        this.#imports.push(imported);
        this.batches.push(convert ? importRecordBatch(imported) : null);
      }
    } catch (error) {
      this.dispose();
      throw error;
    }
  }

  get length(): number {
    return this.layouts.length;
  }

  /** `imported` is batch i's own memory: the same tree, lengths, offsets,
   * null counts and buffer addresses as Arrow C++'s export of it. */
  expectSameMemory(imported: ImportedArray, i: number, label: string): void {
    expect(i, `${label}: Arrow C++ has a batch ${i}`).toBeLessThan(this.length);
    expect(importedLayout(imported), `${label}: the layout and buffer addresses of Arrow C++'s own batch ${i} (zero-copy)`).toEqual(masked(this.layouts[i], imported));
  }

  dispose(): void {
    for (const imported of this.#imports.splice(0)) imported.dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }
}
