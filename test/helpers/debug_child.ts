/**
 * Run by test/core/debug_mode.test.ts in a subprocess with ARROW_DEVICE_DEBUG=1:
 * creates one handle of every kind and leaves them alive ("leak"),
 * releases them all ("clean"), or lets an ImportedArray be collected
 * without dispose ("collected"). "disposed" (with debug mode on or off)
 * prints, one per line, the messages of reads after a dispose: of a
 * column converted from the handle, and of the handle itself.
 */
import { makeVector } from "apache-arrow";
import { exportArray, importRecordBatch } from "../../ts/index.ts";
import { ImportedArray } from "../../ts/raw.ts";
import { relay } from "../../ts/raw.ts";
import { liveHandles } from "../../ts/diagnostics.ts";
import { ProducerSlot, owners } from "./owners.ts";

function importBatch(): ImportedArray {
  using slot = new ProducerSlot();
  owners.owners_make_batch(4, slot.schema, slot.array);
  return ImportedArray.fromDeviceArray(slot.schema, slot.array);
}

function relayList() {
  using slot = new ProducerSlot();
  owners.owners_make_list_view(slot.schema, slot.array);
  return relay(slot.schema, slot.array);
}

function forget(): WeakRef<ImportedArray> {
  return new WeakRef(importBatch());
}

/** The message of what `read` throws ("" if nothing). */
function thrown(read: () => unknown): string {
  try {
    read();
  } catch (error) {
    return (error as Error).message;
  }
  return "";
}

const mode = process.argv[2];
if (mode === "disposed") {
  const imported = importBatch();
  const batch = importRecordBatch(imported);
  imported.dispose(); // the dispose site
  console.log(thrown(() => batch.getChildAt(0)!.toArray()));
  console.log(thrown(() => imported.root));
} else if (mode === "collected") {
  const weak = forget();
  for (let i = 0; i < 50 && weak.deref(); i++) {
    Bun.gc(true);
    await Bun.sleep(1);
  }
  // The finalizer runs on a later turn: bounded collections until it has.
  for (let i = 0; i < 200 && liveHandles().length > 0; i++) {
    Bun.gc(true);
    await Bun.sleep(1);
  }
} else {
  const disposed = importBatch();
  disposed.dispose(); // never reported
  const imported = importBatch();
  const child = imported.child(0);
  const slice = imported.slice(1, 2);
  const reexported = imported.reexport({ child: 2 });
  const relayed = relayList();
  const exported = exportArray(makeVector(Int32Array.from([1, 2, 3])));
  console.log(`live handles: ${liveHandles().length}`);
  if (mode === "clean") {
    for (const handle of [child, slice, imported]) handle.dispose();
    for (const handle of [reexported, relayed, exported]) handle.release();
    console.log(`live handles: ${liveHandles().length}`);
  }
}
