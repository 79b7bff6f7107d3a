/**
 * Relays without conversion: a C producer's arrays pass through
 * this library to a C consumer with no apache-arrow involvement — list-view
 * and run-end encoded arrays, which apache-arrow cannot represent, and
 * device memory the host cannot read (PROT_NONE pages: one host read and
 * the process crashes).
 */
import { afterEach, describe, expect, test } from "bun:test";
import { read, toArrayBuffer, type Pointer } from "bun:ffi";
import { ArrowArrayLayout, DeviceType, ReexportFlag, ReexportShape, reexportRequestWords } from "../../ts/core/abi/layout.ts";
import { manifestText } from "../../ts/core/ffi/library.ts";
import { type ExportedArray } from "../../ts/index.ts";
import { structPointer, ImportedArray } from "../../ts/raw.ts";
import { relay, relayArray } from "../../ts/raw.ts";
import { fixtureText } from "../helpers/fixtures.ts";
import { ProducerSlot, deviceFields, expectOwnersSettled, heldSignature, owners, render, signature } from "../helpers/owners.ts";
import { withCode } from "../helpers/errors.ts";

const A = ArrowArrayLayout.fields;

afterEach(async () => {
  await expectOwnersSettled();
});

function releases(): number {
  return Number(owners.owners_root_releases());
}

type Maker = (schema: Pointer, array: Pointer) => void;
const makers: Record<string, Maker> = {
  "list-view": (s, a) => owners.owners_make_list_view(s, a),
  "run-end encoded": (s, a) => owners.owners_make_ree(s, a),
};
const rendered: Record<string, string> = {
  "list-view": "[1,2] null [] [3,1,2] [2]",
  "run-end encoded": '"a" "a" "a" "bb" "bb" null null null null "dddd"',
};

/** Runs `make`, records the producer's own signature, relays. */
function relayed(make: Maker): { out: ExportedArray; producerSignature: number[] } {
  using slot = new ProducerSlot();
  make(slot.schema, slot.array);
  const producerSignature = signature(slot.schema, slot.array);
  const out = relay(slot.schema, slot.array);
  expect(read.ptr(slot.array, A.release)).toBe(0); // moved in
  expect(read.ptr(slot.schema, 56)).toBe(0);
  return { out, producerSignature };
}

function handOver(exported: ExportedArray): Pointer {
  const held = owners.owners_take(exported.schema, exported.array)!;
  exported.release();
  return held;
}

describe("relay of types apache-arrow cannot represent", () => {
  for (const kind of Object.keys(makers)) {
    test(`${kind}: same structs' shape, same buffers, same values at the consumer; one release`, () => {
      const { out, producerSignature } = relayed(makers[kind]);
      const held = handOver(out);
      expect(heldSignature(held)).toEqual(producerSignature);
      expect(render(held)).toBe(rendered[kind]);
      expect(releases()).toBe(0);
      owners.owners_release_held_on_thread(held);
      expect(releases()).toBe(1);
    });
  }

  test("list-view and run-end encoded slices and children, through an owner", () => {
    using listSlot = new ProducerSlot();
    owners.owners_make_list_view(listSlot.schema, listSlot.array);
    const list = ImportedArray.fromDeviceArray(listSlot.schema, listSlot.array, { validation: "full" });
    using reeSlot = new ProducerSlot();
    owners.owners_make_ree(reeSlot.schema, reeSlot.array);
    const ree = ImportedArray.fromDeviceArray(reeSlot.schema, reeSlot.array, { validation: "full" });
    const reeTail = ree.slice(4, 6);
    const outs = [
      handOver(list.reexport({ slice: { offset: 1, length: 3 } })),
      handOver(list.reexport({ child: 0 })),
      handOver(ree.reexport({ slice: { offset: 2, length: 5 } })),
      handOver(ree.reexport({ child: 1 })),
      handOver(reeTail.reexport({ shape: "table" })),
    ];
    reeTail.dispose();
    list.dispose();
    ree.dispose();
    expect(outs.map(render)).toEqual([
      "null [] [3,1,2]",
      "3 1 2",
      '"a" "bb" "bb" null null',
      '"a" "bb" null "dddd"',
      '{"bb"} {null} {null} {null} {null} {"dddd"}',
    ]);
    for (const held of outs) owners.owners_release_held(held);
    expect(releases()).toBe(2);
  });
});

describe("relay of device memory the host cannot read", () => {
  const region = () => [Number(owners.owners_device_region_start()), Number(owners.owners_device_region_end())];

  for (const [name, deviceType] of [["CUDA", DeviceType.CUDA], ["ROCM", DeviceType.ROCM], ["unknown device 99", 99]] as const) {
    test(`${name}: relayed at full validation without a single host read`, () => {
      const { out, producerSignature } = relayed((s, a) => owners.owners_make_device(deviceType, s, a));
      const held = handOver(out);
      expect(heldSignature(held)).toEqual(producerSignature);
      const [start, end] = region();
      const fields = deviceFields(held);
      expect(fields).toEqual({ deviceType, deviceId: 7, syncEvent: start + 0xf000, reservedZero: true });
      expect(fields.syncEvent).toBeLessThan(end);
      owners.owners_release_held(held);
      expect(releases()).toBe(1);
    });
  }

  test("children, slices, dictionaries and shapes of device memory, through an owner", () => {
    using slot = new ProducerSlot();
    owners.owners_make_device(DeviceType.CUDA, slot.schema, slot.array);
    const imported = ImportedArray.fromDeviceArray(slot.schema, slot.array, { validation: "full" });
    expect(imported.hostReadable).toBe(false);
    expect(() => imported.root.child(0).buffer(1)).toThrow(withCode("unsupported"));
    const [start, end] = region();
    const column = imported.child(0);
    const x = column.slice(10, 20);
    column.dispose();
    expect(x.root.nullCount).toBe(-1); // would need a read of the bitmap
    expect(x.root.offset).toBe(10);
    const lastHalf = imported.slice(50, 50);
    const outs = [
      handOver(x.reexport()),
      handOver(imported.reexport({ child: 3, dictionary: true })),
      handOver(imported.reexport({ child: 2, shape: "table" })),
      handOver(lastHalf.reexport({ child: 1 })),
    ];
    x.dispose();
    lastHalf.dispose();
    imported.dispose();
    const [xs, dictionary, table, y] = outs.map(heldSignature);
    // Node words: format, name, flags, length, null_count, offset, n_buffers, n_children, has_dictionary, buffers...
    expect(xs.slice(3, 6)).toEqual([20, -1, 10]);
    expect(dictionary.slice(3, 9)).toEqual([4, 0, 0, 3, 0, 0]);
    expect(table.slice(3, 9)).toEqual([100, 0, 0, 1, 1, 0]);
    expect(y.slice(3, 6)).toEqual([50, 0, 50]);
    for (const words of [xs, dictionary, y]) {
      const buffers = words.slice(9, 9 + words[6]).filter((address) => address !== 0);
      expect(buffers.length).toBeGreaterThan(0);
      for (const address of buffers) expect(address >= start && address < end).toBe(true);
    }
    for (const held of outs) expect(deviceFields(held).deviceType).toBe(DeviceType.CUDA);
    for (const held of outs) owners.owners_release_held_on_thread(held);
    expect(releases()).toBe(1);
  });
});

describe("relay errors and plain arrays", () => {
  test("a plain ArrowArray relays as a plain ArrowArray", () => {
    using slot = new ProducerSlot();
    owners.owners_make_list_view(slot.schema, slot.array); // the device array's first member is its ArrowArray
    const before = signature(slot.schema, slot.array);
    const out = relayArray(slot.schema, structPointer("ArrowArray", slot.array));
    expect(out.kind).toBe("array");
    expect(signature(out.schema, out.array)).toEqual(before);
    expect(releases()).toBe(0);
    out.release();
    expect(releases()).toBe(1);
  });

  test("bad input is released once and reported with a typed error", () => {
    using slot = new ProducerSlot();
    owners.owners_make_list_view(slot.schema, slot.array);
    // More nulls than rows.
    new BigInt64Array(toArrayBuffer(slot.array, 0, 128))[A.null_count / 8] = 99n;
    expect(() => relay(slot.schema, slot.array)).toThrow(withCode("invalid_layout"));
    expect(releases()).toBe(1);
    // Already released (moved): the release callback is NULL.
    expect(() => relay(slot.schema, slot.array)).toThrow(withCode("released"));
    owners.owners_make_ree(slot.schema, slot.array);
    expect(() => relay(slot.schema, slot.array, { validation: "paranoid" as "full" })).toThrow(withCode("invalid_argument"));
    expect(releases()).toBe(2);
    expect(read.ptr(slot.array, A.release)).toBe(0);
  });
});

test("the header's re-export constants match the library's manifest", () => {
  const header = JSON.parse(fixtureText(owners.owners_header_constants_json(), "owners_header_constants_json"));
  const manifest = JSON.parse(manifestText());
  expect(header.request_words).toBe(reexportRequestWords);
  expect(header.flags).toEqual(manifest.reexport_flags);
  expect(header.flags).toEqual(ReexportFlag);
  expect(header.shapes).toEqual(manifest.reexport_shapes);
  expect(header.shapes).toEqual(ReexportShape);
  expect(Object.keys(manifest.reexport_request_words)).toHaveLength(reexportRequestWords);
});
