/**
 * Re-exports against the reference implementation: Arrow C++ as the consumer
 * of re-exports. For every batch of every gold file apache-arrow can read,
 * this library imports the batch (an owner), re-exports it twice, and
 * Arrow C++ imports both copies (ImportDeviceRecordBatch), checks each
 * equal to its own read of the same bytes, and drops them in either order.
 * The producer's release (intercepted) runs exactly once, after the second
 * drop, and the copies point at the producer's memory.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { RecordBatchReader, Type, type DataType, type Dictionary, type Field } from "apache-arrow";
import { exportArray } from "../../ts/index.ts";
import { ImportedArray } from "../../ts/raw.ts";
import {
  ArrowCppRead, CSlot, arrowCppLive, cArrayLayout, checkPassed, describeCheck, heldCheck, heldDrop,
  heldExportDevice, holdDeviceBatch,
} from "../helpers/arrow_cpp.ts";
import { peer } from "../helpers/fixtures.ts";
import { goldFiles, unreadableByApacheArrow } from "../helpers/shared_gold.ts";
import { expectSettled } from "../helpers/settled.ts";

const files = goldFiles().filter((f) => !unreadableByApacheArrow.has(f.label));

afterEach(async () => {
  await expectSettled();
  expect(arrowCppLive()).toEqual({ ipc: 0, held: 0, jobs: 0 });
  peer.peer_reset_counts();
});

/** The buffer addresses of a C array tree, node by node in preorder. */
function addressesOf(array: number): number[][] {
  return cArrayLayout(array).map((node) => node.buffers);
}

/** For each node of `type`'s tree in preorder (children, then the
 * dictionary): whether it is a binary/utf8 view. */
function viewNodes(type: DataType): boolean[] {
  const own = type.typeId === Type.BinaryView || type.typeId === Type.Utf8View;
  const children = (type.children ?? []).flatMap((field: Field) => viewNodes(field.type));
  const dictionary = type.typeId === Type.Dictionary ? viewNodes((type as Dictionary).dictionary) : [];
  return [own, ...children, ...dictionary];
}

/** Where the producer had a buffer, Arrow C++'s copy has that very buffer.
 * Arrow C++ substitutes its own empty buffers where the producer had NULL,
 * and makes a new variadic-sizes buffer (the last) for view arrays. */
function sameMemory(producer: number[][], consumer: number[][], isView: boolean[]): boolean {
  if (producer.length !== consumer.length) return false;
  return producer.every((buffers, node) =>
    buffers.length === consumer[node].length &&
    buffers.every((address, i) => address === 0 || (isView[node] && i === buffers.length - 1) || consumer[node][i] === address));
}

describe("Arrow C++ imports two re-exports of one owner and drops them in either order", () => {
  test("covers every gold file apache-arrow reads", () => {
    expect(files.length).toBe(31);
  });

  for (const file of files) {
    test(file.label, () => {
      const bytes = readFileSync(file.path);
      using own = ArrowCppRead.fromBytes(bytes);
      const batches = [...RecordBatchReader.from(bytes)];
      // apache-arrow reads a stream without batches as one empty batch; its
      // reference is Arrow C++'s empty batch of the same schema.
      using empty = own.batchCount === 0 ? own.emptyBatch() : null;
      const reference = empty ?? own;
      expect(batches.length).toBe(reference.batchCount);
      batches.forEach((batch, index) => {
        for (const secondFirst of [false, true]) {
          peer.peer_reset_counts();
          const exported = exportArray(batch);
          const producerAddresses = addressesOf(exported.array);
          peer.peer_intercept_array(exported.array);
          peer.peer_intercept_schema(exported.schema);
          const imported = ImportedArray.fromDeviceArray(exported.schema, exported.array, { validation: "full" });
          exported.release();
          const copyA = imported.reexport();
          const copyB = imported.reexport();
          imported.dispose();

          const ids = [holdDeviceBatch(copyA.schema, copyA.array), holdDeviceBatch(copyB.schema, copyB.array)];
          copyA.release();
          copyB.release();
          for (const id of ids) {
            const result = heldCheck(id, reference, index);
            expect(describeCheck(result), `${file.label} batch ${index}`).toBe("passed");
            expect(checkPassed(result)).toBe(true);
            // Arrow C++ holds views of the producer's memory: its own
            // export of what it holds points at the same buffers.
            using slot = new CSlot("device_array");
            heldExportDevice(id, slot);
            expect(sameMemory(producerAddresses, addressesOf(slot.array), viewNodes(batch.data.type)), `${file.label} batch ${index}`).toBe(true);
          }
          // Arrow C++ releases an imported array once no buffer of it is left
          // alive, so a batch without any buffer (null columns) is released
          // right at import. Everywhere else the release waits for the drops.
          const hasBuffers = producerAddresses.some((buffers) => buffers.some((a) => a !== 0));
          if (!hasBuffers) {
            expect(peer.peer_intercepted_array_releases()).toBe(1n);
            ids.forEach(heldDrop);
            expect(peer.peer_intercepted_array_releases()).toBe(1n);
            continue;
          }
          expect(peer.peer_intercepted_array_releases()).toBe(0n);
          const [first, second] = secondFirst ? [ids[1], ids[0]] : [ids[0], ids[1]];
          heldDrop(first);
          expect({ batch: index, releases: peer.peer_intercepted_array_releases() }).toEqual({ batch: index, releases: 0n });
          heldDrop(second);
          expect(peer.peer_intercepted_array_releases()).toBe(1n);
          expect(peer.peer_intercepted_schema_releases()).toBe(1n);
        }
      });
    });
  }
});
