/**
 * Owned imports: the producer's release runs exactly once, after
 * the last holder — owner handle, views, child and slice handles,
 * re-exports — is gone, in every order; GC and explicit paths; typed errors
 * for bad requests, with nothing leaked.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { read, type Pointer } from "bun:ffi";
import { ArrowArrayLayout, ArrowDeviceArrayLayout, DeviceType } from "../../ts/core/abi/layout.ts";
import { type ExportedArray } from "../../ts/index.ts";
import { ImportedArray } from "../../ts/raw.ts";
import { counters, nonZeroCounters } from "../helpers/leaks.ts";
import { peer } from "../helpers/fixtures.ts";
import { collectUntil } from "../helpers/gc.ts";
import { ProducerSlot, deviceFields, expectOwnersSettled, heldSignature, owners, render, signature } from "../helpers/owners.ts";
import { withCode } from "../helpers/errors.ts";

const A = ArrowArrayLayout.fields;
const D = ArrowDeviceArrayLayout.fields;

afterEach(async () => {
  await expectOwnersSettled();
});

/** Producer releases seen by the c_peer interceptor wrapped around it. */
function releases(): number {
  return Number(peer.peer_intercepted_array_releases());
}

/** Imports a fresh 6-row batch from the C producer, its release
 * intercepted. The producer's structs are moved (the slot is left empty). */
function importBatch(rows = 6): ImportedArray {
  using slot = new ProducerSlot();
  owners.owners_make_batch(rows, slot.schema, slot.array);
  peer.peer_intercept_array(slot.array);
  return ImportedArray.fromDeviceArray(slot.schema, slot.array, { validation: "full" });
}

/** Moves a re-export into the C consumer; returns its box. */
function handOver(exported: ExportedArray): Pointer {
  const held = owners.owners_take(exported.schema, exported.array)!;
  exported.release(); // moved out: only the slot is freed
  return held;
}

function permutations<T>(items: T[]): T[][] {
  if (items.length <= 1) return [items];
  return items.flatMap((item, i) => permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest]));
}

describe("re-export", () => {
  test("the whole array, a child, a slice, a dictionary and a table, to several consumers at once", () => {
    const imported = importBatch();
    const producerSignature = signature(imported.schemaAddress, imported.deviceArrayAddress);
    const whole = handOver(imported.reexport());
    const again = handOver(imported.reexport());
    const child = handOver(imported.reexport({ child: 2 }));
    const sliced = handOver(imported.reexport({ child: 0, slice: { offset: 1, length: 4 } }));
    const dictionary = handOver(imported.reexport({ child: 1, dictionary: true }));
    const table = handOver(imported.reexport({ child: 1, slice: { offset: 2, length: 3 }, shape: "table" }));
    expect(counters().live_reexports).toBe(6);
    imported.dispose();

    // Same structure and the producer's own buffer addresses: zero-copy.
    expect(heldSignature(whole)).toEqual(producerSignature);
    expect(heldSignature(again)).toEqual(producerSignature);
    expect(render(whole)).toBe('{0,"red","s0"} {10,"green","s1"} {null,"blue","s2"} {30,"red","s3"} {40,"green","s4"} {null,"blue","s5"}');
    expect(render(child)).toBe('"s0" "s1" "s2" "s3" "s4" "s5"');
    expect(render(sliced)).toBe("10 null 30 40");
    expect(render(dictionary)).toBe('"red" "green" "blue"');
    expect(render(table)).toBe('{"blue"} {"red"} {"green"}');
    for (const held of [whole, again, child, sliced, dictionary, table]) {
      expect(deviceFields(held)).toEqual({ deviceType: DeviceType.CPU, deviceId: -1, syncEvent: 0, reservedZero: true });
    }
    // The sliced child has its null count recomputed (row 2 is null).
    const slicedArray = owners.owners_held_array(sliced)!;
    expect(read.i64(slicedArray, A.offset)).toBe(1n);
    expect(read.i64(slicedArray, A.length)).toBe(4n);
    expect(read.i64(slicedArray, A.null_count)).toBe(1n);

    for (const held of [whole, again, child, sliced, dictionary]) owners.owners_release_held(held);
    expect(releases()).toBe(0);
    owners.owners_release_held_on_thread(table);
    expect(releases()).toBe(1);
  });

  test("a one-column table goes out as its column, and a column as a one-column table", () => {
    const imported = importBatch();
    using table = imported.reexport({ child: 2, shape: "table" });
    imported.dispose();
    using tableImport = ImportedArray.fromDeviceArray(table.schema, table.array);
    expect(tableImport.root.format).toBe("+s");
    expect(tableImport.root.nChildren).toBe(1);
    const column = handOver(tableImport.reexport({ shape: "column" }));
    tableImport.dispose();
    expect(render(column)).toBe('"s0" "s1" "s2" "s3" "s4" "s5"');
    expect(releases()).toBe(0);
    owners.owners_release_held(column);
    expect(releases()).toBe(1);
  });

  test("dictionaries are refcounted: a dictionary moved out keeps the producer's data alive", () => {
    const imported = importBatch();
    const dictionaryAddress = imported.root.child(1).dictionary!.arrayAddress;
    const table = imported.reexport({ child: 1, shape: "table" });
    imported.dispose();
    const column = read.ptr(read.ptr(table.array, A.children) as Pointer, 0) as Pointer;
    // A fresh dictionary struct, over the producer's dictionary buffers.
    const columnDictionary = read.ptr(column, A.dictionary);
    expect(columnDictionary).not.toBe(dictionaryAddress);
    expect(read.ptr(read.ptr(columnDictionary as Pointer, A.buffers) as Pointer, 16)).toBe(
      read.ptr(read.ptr(dictionaryAddress as Pointer, A.buffers) as Pointer, 16),
    );
    // The consumer moves the column out of the table, then the dictionary
    // out of the column, releasing the rest each time.
    const onlyColumn = owners.owners_keep_only_child(handOver(table), 0)!;
    expect(render(onlyColumn)).toBe('"red" "green" "blue" "red" "green" "blue"');
    const onlyDictionary = owners.owners_keep_only_dictionary(onlyColumn)!;
    expect(releases()).toBe(0);
    expect(render(onlyDictionary)).toBe('"red" "green" "blue"');
    owners.owners_release_held(onlyDictionary);
    expect(releases()).toBe(1);
  });

  test("a dictionary handle reads the dictionary in place and outlives its parents", () => {
    const imported = importBatch();
    const column = imported.child(1);
    const dictionary = column.dictionaryArray();
    column.dispose();
    imported.dispose();
    expect(dictionary.root.format).toBe("u");
    expect(dictionary.root.length).toBe(3);
    expect(new TextDecoder().decode(dictionary.root.buffer(2) as Uint8Array)).toBe("redgreenblue");
    expect(() => dictionary.dictionaryArray()).toThrow(withCode("invalid_argument"));
    expect(releases()).toBe(0);
    dictionary.dispose();
    expect(releases()).toBe(1);
  });

  test("device fields, reserved and the sync event pointer are the producer's", () => {
    using slot = new ProducerSlot();
    owners.owners_make_device(DeviceType.CUDA, slot.schema, slot.array);
    const event = read.ptr(slot.array, D.sync_event);
    peer.peer_intercept_array(slot.array);
    const imported = ImportedArray.fromDeviceArray(slot.schema, slot.array);
    const copies = [imported.reexport(), imported.reexport({ child: 3, dictionary: true }), imported.reexport({ child: 0, slice: { offset: 10, length: 20 } })];
    imported.dispose();
    for (const copy of copies) {
      expect(read.i32(copy.array, D.device_type)).toBe(DeviceType.CUDA);
      expect(read.i64(copy.array, D.device_id)).toBe(7n);
      expect(read.ptr(copy.array, D.sync_event)).toBe(event);
      for (let i = 0; i < 3; i++) expect(read.i64(copy.array, D.reserved + 8 * i)).toBe(0n);
    }
    // A slice of device memory with nulls: the count is unknown, not read.
    expect(read.i64(copies[2].array, A.null_count)).toBe(-1n);
    copies[0].release();
    copies[2].release();
    expect(releases()).toBe(0);
    copies[1].release();
    expect(releases()).toBe(1);
  });
});

describe("the producer's release runs once, after the last holder", () => {
  test("in every order of dropping owner, view, child, slice and two re-exports (720 orders)", () => {
    type Holder = "owner" | "view" | "child" | "slice" | "reexport" | "reexportOnThread";
    const holders: Holder[] = ["owner", "view", "child", "slice", "reexport", "reexportOnThread"];
    let orders = 0;
    for (const order of permutations(holders)) {
      peer.peer_reset_counts();
      const imported = importBatch();
      const view = imported.root.child(0).buffer(1) as Int32Array<ArrayBuffer>; // column a's values
      const child = imported.child(2);
      const slice = imported.slice(1, 4);
      const reexported = handOver(imported.reexport({ child: 1 }));
      const reexportedSlice = handOver(slice.reexport({ child: 0, slice: { offset: 1, length: 2 } }));
      expect(view[3]).toBe(30);
      expect(child.root.length).toBe(6);
      expect(slice.root.length).toBe(4);
      expect(render(reexported)).toBe('"red" "green" "blue" "red" "green" "blue"');
      expect(render(reexportedSlice)).toBe("null 30");

      const dropped = new Set<Holder>();
      const drop: Record<Holder, () => void> = {
        owner: () => imported.dispose(),
        // Detaching is what GC does to a dropped view, deterministically.
        view: () => { if (!view.buffer.detached) view.buffer.transfer(0); },
        child: () => child.dispose(),
        slice: () => slice.dispose(),
        reexport: () => owners.owners_release_held(reexported),
        reexportOnThread: () => owners.owners_release_held_on_thread(reexportedSlice),
      };
      const aliveNow = () => holders.filter((h) => !dropped.has(h));
      for (const holder of order) {
        // (The view may already be gone with the owner handle.)
        expect(releases()).toBe(aliveNow().length === 0 ? 1 : 0);
        drop[holder]();
        dropped.add(holder);
        // Disposing the owner handle detaches the view it made.
        if (holder === "owner") dropped.add("view");
        const expected = aliveNow().length === 0 ? 1 : 0;
        expect({ order: order.join(","), after: holder, releases: releases() }).toEqual({ order: order.join(","), after: holder, releases: expected });
      }
      expect(releases()).toBe(1);
      const left = nonZeroCounters();
      expect(left).toEqual({});
      orders++;
    }
    expect(orders).toBe(720);
  });
});

/** Makes a handle and a view in this frame only, then forgets the handle:
 * nothing on the caller's stack can keep the handle alive. */
function viewOfForgottenHandle(box: { view: Int32Array | null }): WeakRef<ImportedArray> {
  const imported = importBatch(1000);
  box.view = imported.root.child(0).buffer(1) as Int32Array<ArrayBuffer>;
  return new WeakRef(imported);
}

function manyChildViews(box: { views: Int32Array[] }, handles: number): void {
  const imported = importBatch(100);
  for (let i = 0; i < handles; i++) {
    const child = imported.child(0).slice(i, 10);
    box.views.push(child.root.buffer(1) as Int32Array);
  }
  imported.dispose();
}

describe("GC path", () => {
  test("a view outlives its collected handle, and its collection releases the producer", async () => {
    const box: { view: Int32Array | null } = { view: null };
    const handle = viewOfForgottenHandle(box);
    // The handle's anchor view goes; the buffer view stays.
    expect(await collectUntil(() => handle.deref() === undefined && counters().live_imported_views === 1)).toBe(true);
    expect(counters().live_owners).toBe(1);
    expect(releases()).toBe(0);
    expect(box.view![999]).toBe(9990);
    box.view = null;
    expect(await collectUntil(() => counters().live_owners === 0)).toBe(true);
    expect(releases()).toBe(1);
    expect(counters().live_imported_views).toBe(0);
    expect(counters().imported_bytes_held).toBe(0);
  });

  test("views of child and slice handles dropped without dispose release exactly their references", async () => {
    const box: { views: Int32Array[] } = { views: [] };
    manyChildViews(box, 20);
    // 20 child handles (one anchor view each) + 20 slice handles (one
    // anchor + one buffer view each); the parent disposed its own.
    expect(counters().live_imported_views).toBe(20 * 1 + 20 * 2);
    // A buffer view covers the buffer from its start (C offsets apply).
    expect(box.views[5][5]).toBe(50);
    expect(await collectUntil(() => counters().live_imported_views === 20)).toBe(true); // only the buffer views left
    expect(releases()).toBe(0);
    box.views.length = 10;
    expect(await collectUntil(() => counters().live_imported_views === 10)).toBe(true);
    expect(releases()).toBe(0);
    box.views.length = 0;
    expect(await collectUntil(() => counters().live_owners === 0)).toBe(true);
    expect(releases()).toBe(1);
  });
});

describe("explicit path", () => {
  test("`using` detaches views at once; views then read empty, not freed memory", () => {
    let view: Int32Array<ArrayBuffer>;
    let child: ImportedArray;
    let handle: ImportedArray;
    {
      using imported = importBatch(1000);
      handle = imported;
      view = imported.root.child(0).buffer(1) as Int32Array<ArrayBuffer>;
      child = imported.child(2);
      expect(view.length).toBe(1000);
      expect(view[999]).toBe(9990);
    }
    expect(handle.disposed).toBe(true);
    expect(view.buffer.detached).toBe(true);
    expect(view.length).toBe(0);
    expect(view[999]).toBeUndefined();
    expect(releases()).toBe(0); // the child handle still holds the data
    expect(child.root.length).toBe(1000);
    expect(child.root.buffer(1).byteLength).toBe((1000 + 1) * 4); // the utf8 offsets

    child.dispose();
    expect(releases()).toBe(1);
    // The producer's memory is gone; the detached view is still safe.
    expect(view[0]).toBeUndefined();
    expect(view.byteLength).toBe(0);
    // Iterating a detached view is a JS TypeError, never a read of freed memory.
    expect(() => Array.from(view)).toThrow(TypeError);
    // Double dispose is a no-op, and nothing is alive without any GC.
    child.dispose();
    handle.dispose();
    expect(releases()).toBe(1);
    expect(nonZeroCounters()).toEqual({});
  });

  test("a disposed handle refuses to hand out anything", () => {
    const imported = importBatch();
    imported.dispose();
    expect(() => imported.reexport()).toThrow(withCode("released"));
    expect(() => imported.child(0)).toThrow(withCode("released"));
    expect(() => imported.slice(0, 1)).toThrow(withCode("released"));
    expect(() => imported.root).toThrow(withCode("released"));
    expect(releases()).toBe(1);
  });
});

describe("bad input", () => {
  test("children and slices out of range get typed errors, and nothing is retained", () => {
    const imported = importBatch();
    const before = counters();
    expect(() => imported.reexport({ child: 3 })).toThrow(withCode("out_of_range"));
    expect(() => imported.reexport({ child: 3 })).toThrow("child 3 is out of the 3 children");
    expect(() => imported.reexport({ child: -1 })).toThrow(withCode("out_of_range"));
    expect(() => imported.child(7)).toThrow(withCode("out_of_range"));
    expect(() => imported.reexport({ slice: { offset: 4, length: 3 } })).toThrow("slice (offset 4, length 3) is out of the 6 rows");
    expect(() => imported.reexport({ slice: { offset: -1, length: 2 } })).toThrow(withCode("out_of_range"));
    expect(() => imported.slice(0, 7)).toThrow(withCode("out_of_range"));
    const part = imported.slice(2, 3);
    expect(() => part.slice(1, 3)).toThrow(withCode("out_of_range")); // rows are relative to the slice
    part.dispose();
    expect(() => imported.reexport({ child: 1.5 })).toThrow(withCode("invalid_argument"));
    expect(() => imported.reexport({ dictionary: true })).toThrow("not dictionary-encoded");
    expect(() => imported.reexport({ dictionary: true })).toThrow(withCode("invalid_argument"));
    expect(() => imported.reexport({ shape: "column" })).toThrow(withCode("invalid_argument"));
    expect(() => imported.reexport({ shape: "sideways" as "column" })).toThrow(withCode("invalid_argument"));
    expect(() => imported.reexport({ as: "stream" as "array" })).toThrow(withCode("invalid_argument"));
    const after = counters();
    expect(after.live_reexports).toBe(0);
    expect(after.live_schema_exports).toBe(before.live_schema_exports);
    expect(after.live_imported_views).toBe(before.live_imported_views);
    expect(after.live_owners).toBe(1);
    imported.dispose();
    expect(releases()).toBe(1);
  });

  test("device memory cannot go out as a plain ArrowArray", () => {
    using slot = new ProducerSlot();
    owners.owners_make_device(DeviceType.CUDA, slot.schema, slot.array);
    using imported = ImportedArray.fromDeviceArray(slot.schema, slot.array);
    expect(() => imported.reexport({ as: "array" })).toThrow(withCode("unsupported"));
    expect(() => imported.reexport({ as: "array" })).toThrow("cannot be re-exported as a plain (CPU) ArrowArray");
    expect(counters().live_reexports).toBe(0);
  });

  test("a CPU array goes out as a plain ArrowArray too", () => {
    const imported = importBatch();
    const plain = imported.reexport({ child: 0, as: "array" });
    imported.dispose();
    expect(plain.kind).toBe("array");
    expect(read.i64(plain.array, A.length)).toBe(6n);
    expect(read.i64(plain.array, A.n_buffers)).toBe(2n);
    expect(releases()).toBe(0);
    plain.release();
    expect(releases()).toBe(1);
  });
});
