/**
 * The "Arrow C++ as consumer" scenario of re-exports, with the C fixture as
 * the consumer (an Arrow C++ variant belongs with the Arrow C++ shim): each
 * gold file's batches are exported from apache-arrow, imported into an
 * owner, re-exported twice, and both copies go to a C consumer that drops
 * them in either order. Checked: both copies have the producer's structure
 * and buffer addresses (zero-copy), their bytes match the JS buffers, and
 * the producer's release runs once, after the second copy is dropped.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { tableFromIPC } from "apache-arrow";
import { exportArray, type ExportedArray } from "../../ts/index.ts";
import { ImportedArray } from "../../ts/raw.ts";
import { consumeNatively } from "../helpers/native_consumer.ts";
import { counters } from "../helpers/leaks.ts";
import { peer } from "../helpers/fixtures.ts";
import { heldSignature, owners, signature } from "../helpers/owners.ts";
import { goldFiles as goldCases, readStream, unreadableByApacheArrow } from "../helpers/shared_gold.ts";
import { expectSettled } from "../helpers/settled.ts";

/** Files apache-arrow 21.2 cannot read (list-view, run-end encoded) are
 * covered by test/native/relay.test.ts with C producers. */
const goldFiles = goldCases().filter((gold) => !unreadableByApacheArrow.has(gold.label));

afterEach(async () => {
  await expectSettled();
  peer.peer_reset_counts();
});

function handOver(exported: ExportedArray) {
  const held = owners.owners_take(exported.schema, exported.array)!;
  exported.release();
  return held;
}

describe("gold files: import, re-export twice, a C consumer drops both copies in either order", () => {
  test("there are gold files to check", () => {
    expect(goldFiles.length).toBeGreaterThanOrEqual(30);
  });

  for (const file of goldFiles) {
    test(file.label, () => {
      const table = tableFromIPC(readStream(file));
      expect(table.batches.length).toBeGreaterThan(0);
      table.batches.forEach((batch, index) => {
        for (const secondFirst of [false, true]) {
          peer.peer_reset_counts();
          // What a direct consumer sees of the JS memory: every buffer's
          // size and checksum.
          const direct = (() => {
            using e = exportArray(batch);
            return consumeNatively(e.schema, e.array);
          })();

          const exported = exportArray(batch);
          peer.peer_intercept_array(exported.array);
          peer.peer_intercept_schema(exported.schema);
          const imported = ImportedArray.fromDeviceArray(exported.schema, exported.array, { validation: "full" });
          exported.release();
          const producer = signature(imported.schemaAddress, imported.deviceArrayAddress);
          const first = handOver(imported.reexport());
          const second = handOver(imported.reexport());
          const third = imported.reexport();
          const relayed = consumeNatively(third.schema, third.array);
          third.release();
          imported.dispose();

          expect(heldSignature(first)).toEqual(producer);
          expect(heldSignature(second)).toEqual(producer);
          // Same bytes as a direct export of the batch. (Addresses are
          // compared with the producer's above: a direct export is another
          // export, whose view-type sizes buffer is made afresh.)
          const bytesOf = (report: typeof direct) => report.map(({ size, checksum }) => ({ size, checksum }));
          expect(bytesOf(relayed)).toEqual(bytesOf(direct));
          expect(peer.peer_intercepted_array_releases()).toBe(0n);
          const [a, b] = secondFirst ? [second, first] : [first, second];
          owners.owners_release_held(a);
          expect({ batch: index, releases: peer.peer_intercepted_array_releases() }).toEqual({ batch: index, releases: 0n });
          owners.owners_release_held_on_thread(b);
          expect(peer.peer_intercepted_array_releases()).toBe(1n);
          expect(peer.peer_intercepted_schema_releases()).toBe(1n);
          expect(counters().js_retained_exports).toBe(0);
        }
      });
    });
  }
});
