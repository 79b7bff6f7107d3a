/**
 * Bad input from C: each malformed tree (built by test/fixtures/
 * c_producer.c) gets its typed error, with a message that names the path
 * to the bad node, never a crash; and what was moved in is still released
 * exactly once (the producer counts every release and flags repeats).
 */
import { afterEach, describe, expect, test } from "bun:test";
import { CArray, CSchema } from "../../ts/raw.ts";
import { importRecordBatch, type ArrowDeviceError } from "../../ts/index.ts";
import { InvalidArgumentError, InvalidFormatError, InvalidLayoutError, ReleasedError, TooDeepError, UnknownDeviceError } from "../../ts/core/errors.ts";
import { ImportedArray, type ValidationLevelName } from "../../ts/raw.ts";
import { FxPatch, fx } from "../helpers/fixtures.ts";
import { bits, disposeProduced, produceArray, produceDevice, producerClean, type NodeSpec } from "../helpers/producer.ts";
import { withCode } from "../helpers/errors.ts";
import { expectSettled } from "../helpers/settled.ts";

afterEach(async () => {
  await expectSettled();
  // Every struct the producer made was released, and none twice.
  expect(producerClean()).toEqual({ live: 0, doubles: 0 });
  fx.fx_reset_counts();
});

type ErrorClass = new (...args: never[]) => ArrowDeviceError;

/** Imports `spec` and expects `ErrorClass` with `message` in it; the
 * landing structs must be left released (moved in, then released). */
function expectRejected(spec: NodeSpec, ErrorClass: ErrorClass, message: string | string[], validation: ValidationLevelName = "default") {
  const produced = produceArray(spec);
  try {
    let caught: unknown;
    try {
      ImportedArray.fromArray(produced.schema, produced.array, { validation }).dispose();
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ErrorClass);
    for (const part of Array.isArray(message) ? message : [message]) expect((caught as Error).message).toContain(part);
    expect(produced.schema.released).toBe(true);
    expect(produced.array.released).toBe(true);
  } finally {
    disposeProduced(produced);
  }
}

const int32 = (name: string, length = 3, extra: Partial<NodeSpec> = {}): NodeSpec => ({
  format: "i", name, length, buffers: [null, new Int32Array(Math.max(length, 1) + 4)], ...extra,
});
const batch = (children: NodeSpec[], length = 3): NodeSpec => ({ format: "+s", length, buffers: [null], children });

describe("bad input: null and released structs", () => {
  test("a NULL schema or array pointer: the other struct is still moved in and released", () => {
    const a = produceArray(int32("x"));
    expect(() => ImportedArray.fromArray(null, a.array)).toThrow(new InvalidArgumentError(1, "schema pointer is NULL"));
    expect(a.array.released).toBe(true);
    expect(() => ImportedArray.fromArray(a.schema, null)).toThrow("array pointer is NULL");
    expect(a.schema.released).toBe(true);
    disposeProduced(a);
    const d = produceDevice(int32("x"));
    expect(() => ImportedArray.fromDeviceArray(d.schema, null)).toThrow(withCode("invalid_argument"));
    expect(d.schema.released).toBe(true);
    disposeProduced(d);
  });

  test("a released base struct: ReleasedError, the other half released", () => {
    expectRejected(int32("x", 3, { patches: [[FxPatch.SCHEMA_RELEASED, 0]] }), ReleasedError, "schema is released (its release callback is NULL)");
    expectRejected(int32("x", 3, { patches: [[FxPatch.ARRAY_RELEASED, 0]] }), ReleasedError, "array is released");
  });

  test("a released child: named by its path", () => {
    expectRejected(batch([int32("a"), int32("b", 3, { patches: [[FxPatch.ARRAY_RELEASED, 0]] })]), ReleasedError, 'field "b": array is released');
  });

  test("an unknown validation level still moves and releases the input", () => {
    expectRejected(int32("x"), InvalidArgumentError, 'unknown validation level "paranoid"', "paranoid" as ValidationLevelName);
  });
});

describe("bad input: formats", () => {
  const cases: [string, string][] = [
    ["Q", "is not a known type"],
    ["", "is empty"],
    ["d:40,2", "decimal precision too large for its bit width"],
    ["d:5,2,100", "bit width other than 32, 64, 128 or 256"],
    ["w:-1", "fixed-size binary width that is not a non-negative integer"],
    ["tsx:", "unknown timestamp unit"],
    ["tsu", "needs ':' after the timestamp unit"],
    ["+ud:1,1", "repeats a union type id"],
    ["+us:300", "union type id that is not an integer in [0, 127]"],
    ["+q", "is not a known nested type"],
    ["vx", "not a known view type"],
  ];
  for (const [format, message] of cases) {
    test(`format "${format}"`, () => {
      expectRejected(batch([int32("ok"), { format, name: "bad", length: 0, buffers: [] }]), InvalidFormatError, [`field "bad": format "${format}"`, message]);
    });
  }

  test("a NULL format, and a dictionary on a non-integer type", () => {
    expectRejected(batch([int32("f", 3, { patches: [[FxPatch.SCHEMA_FORMAT_NULL, 0]] })]), InvalidFormatError, 'field "f": schema format is NULL');
    const dict: NodeSpec = { format: "u", length: 1, buffers: [null, new Int32Array([0, 1]), new Uint8Array([65])] };
    expectRejected({ format: "g", name: "d", length: 1, buffers: [null, new Float64Array(1)], dictionary: dict }, InvalidFormatError, 'format "g" is not an integer type');
  });
});

describe("bad input: structure", () => {
  test("n_buffers inconsistent with the format", () => {
    expectRejected(batch([int32("a"), { format: "u", name: "s", length: 0, buffers: [null, null] }]), InvalidLayoutError, 'field "s": n_buffers is 2 but format "u" needs 3');
    expectRejected({ format: "+us:0", name: "u", length: 0, buffers: [null, null, null], children: [{ format: "n" }] }, InvalidLayoutError, 'n_buffers is 3 but format "+us:0" needs 1');
    expectRejected({ format: "vu", length: 0, buffers: [null, null] }, InvalidLayoutError, "needs at least 3");
    expectRejected(int32("x", 3, { patches: [[FxPatch.ARRAY_BUFFERS_NULL, 0]] }), InvalidLayoutError, "buffers is NULL but n_buffers is 2");
  });

  test("n_children inconsistent with the format or between schema and array", () => {
    expectRejected({ format: "+l", name: "l", length: 0, buffers: [null, null] }, InvalidLayoutError, 'n_children is 0 but format "+l" needs 1');
    expectRejected({ format: "+ud:3,4", length: 0, buffers: [null, null], children: [int32("a", 0)] }, InvalidLayoutError, 'needs 2');
    const patched = batch([int32("a"), int32("b")]);
    patched.patches = [[FxPatch.ARRAY_N_CHILDREN, 1]];
    expectRejected(patched, InvalidLayoutError, "array has 1 children but schema has 2");
    const nullChildren = batch([int32("a")]);
    nullChildren.patches = [[FxPatch.ARRAY_CHILDREN_NULL, 0]];
    expectRejected(nullChildren, InvalidLayoutError, "children is NULL but n_children is 1");
    expectRejected({ format: "+m", name: "m", length: 0, buffers: [null, null], children: [batch([int32("k", 0)], 0)] }, InvalidLayoutError, "map entries must be a struct of two children");
  });

  test("negative length and offset, impossible null counts", () => {
    expectRejected(batch([int32("a"), int32("n", -1)]), InvalidLayoutError, 'field "n": length is negative (-1)');
    expectRejected(batch([int32("o", 3, { offset: -2 })]), InvalidLayoutError, 'field "o": offset is negative (-2)');
    expectRejected(int32("c", 3, { nullCount: -7 }), InvalidLayoutError, "null_count is -7 (must be -1 or at least 0)");
    expectRejected(int32("c", 3, { nullCount: 4, buffers: [bits([false, false, false]), new Int32Array(3)] }), InvalidLayoutError, "null_count 4 exceeds length 3");
  });

  test("NULL required buffers", () => {
    expectRejected(batch([int32("v", 3, { buffers: [null, null] })]), InvalidLayoutError, 'field "v": buffer 1 (fixed) is NULL but must hold 12 bytes');
    expectRejected(batch([int32("n", 3, { nullCount: 2, buffers: [null, new Int32Array(3)] })]), InvalidLayoutError, 'field "n": validity buffer is NULL but null_count is 2');
    expectRejected({ format: "u", name: "s", length: 2, buffers: [null, new Int32Array([0, 1, 3]), null] }, InvalidLayoutError, "buffer 2 (bytes) is NULL but must hold 3 bytes");
  });

  test("offsets out of range", () => {
    const list = (offsets: number[], childLength: number): NodeSpec => ({
      format: "+l", name: "l", length: offsets.length - 1, buffers: [null, Int32Array.from(offsets)], children: [int32("item", childLength)],
    });
    expectRejected(batch([list([0, 2, 5], 4)], 2), InvalidLayoutError, 'field "l" > child 0 "item": last offset 5 is past the end of the child\'s 4 values');
    expectRejected(batch([list([-1, 2], 4)], 1), InvalidLayoutError, "first offset is negative");
    expectRejected({ format: "u", length: 1, buffers: [null, new Int32Array([3, 1]), new Uint8Array(4)] }, InvalidLayoutError, "last offset is smaller than the first");
    expectRejected({ format: "+s", name: "s", length: 2, offset: 2, buffers: [null], children: [int32("short", 3)] }, InvalidLayoutError, "less than the parent's offset + length 4");
  });

  test("full validation reads every value: bad UTF-8, dictionary indices, union type ids", () => {
    const text: NodeSpec = { format: "u", name: "t", length: 2, buffers: [null, new Int32Array([0, 1, 2]), new Uint8Array([65, 0xff])] };
    expectRejected(batch([text], 2), InvalidLayoutError, 'field "t": string 1 is not valid UTF-8', "full");
    const words: NodeSpec = { format: "u", length: 2, buffers: [null, new Int32Array([0, 1, 2]), new Uint8Array([65, 66])] };
    expectRejected({ format: "c", name: "d", length: 2, buffers: [null, new Int8Array([1, 2])], dictionary: words }, InvalidLayoutError, "dictionary index 2 at slot 1 is out of the dictionary's 2 values", "full");
    expectRejected({ format: "+us:1", length: 2, buffers: [new Int8Array([1, 3])], children: [int32("a", 2)] }, InvalidLayoutError, "slot 1 has type id 3, which the format does not declare", "full");
  });

  test("malformed metadata: refused by import with its path, and by the raw struct view", () => {
    const broken = new Uint8Array([1, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff]);
    expectRejected(batch([int32("a"), int32("m", 3, { rawMetadata: broken })]), InvalidLayoutError, 'field "m": metadata has a key or value with a negative length', "none");
    const p = produceArray(int32("m", 3, { rawMetadata: new Uint8Array([0x10, 0, 0, 0x7f]) }));
    try {
      expect(() => p.schema.metadata).toThrow(new InvalidLayoutError(4, "metadata has more than 1048576 pairs"));
      expect(p.schema.format).toBe("i");
    } finally {
      disposeProduced(p);
    }
  });

  test("the path names every level: field, then child index and name", () => {
    const inner: NodeSpec = {
      format: "+s", name: "a", length: 3, buffers: [null],
      children: [int32("v"), int32("w"), { format: "u", name: "x", length: 3, buffers: [null, null, null] }],
    };
    expectRejected(batch([int32("first"), inner]), InvalidLayoutError, 'field "a" > child 2 "x": buffer 1 (offsets32) is NULL but must hold 16 bytes');
    const dict: NodeSpec = { format: "u", length: 2, buffers: [null, null, null] };
    expectRejected(batch([{ format: "c", name: "d", length: 3, buffers: [null, new Int8Array(3)], dictionary: dict }]), InvalidLayoutError, 'field "d" > dictionary: buffer 1 (offsets32) is NULL');
  });

  test("nesting deeper than 64 levels: TooDeepError; 64 is fine", () => {
    for (const [depth, ok] of [[64, true], [65, false]] as const) {
      const root = fx.fx_nested_lists(depth)!;
      const schema = CSchema.allocate();
      const array = CArray.allocate();
      fx.fx_finish(root, schema.address, array.address);
      try {
        if (ok) ImportedArray.fromArray(schema, array, { validation: "full" }).dispose();
        else {
          let caught: unknown;
          try { ImportedArray.fromArray(schema, array); } catch (error) { caught = error; }
          expect(caught).toEqual(withCode("too_deep"));
          expect((caught as Error).message).toMatch(/^child 0 "item" > child 0 "item" > child 0 "item" > \.\.\. 57 levels \.\.\. (> child 0 "item" ){3}> child 0 "item": nesting is deeper than 64 levels$/);
        }
        expect(schema.released && array.released).toBe(true);
      } finally {
        schema.dispose();
        array.dispose();
      }
    }
  });
});

describe("bad input: devices", () => {
  test("device_type 0 or negative is not a device: UnknownDeviceError, released", () => {
    for (const deviceType of [0, -3]) {
      const d = produceDevice(int32("x"), deviceType, 0);
      expect(() => ImportedArray.fromDeviceArray(d.schema, d.array)).toThrow(withCode("unknown_device"));
      expect(d.schema.released && d.array.released).toBe(true);
      disposeProduced(d);
    }
  });

  test("a CPU array with any device_id imports (the spec only recommends -1)", () => {
    const d = produceDevice(int32("x"), 1, 7);
    const imported = ImportedArray.fromDeviceArray(d.schema, d.array);
    expect(imported.deviceId).toBe(7);
    imported.dispose();
    disposeProduced(d);
  });

  test("an unknown positive device type is accepted as opaque data, never read", () => {
    const d = produceDevice(batch([int32("x", 3, { buffers: [null, 0x10] })]), 77, 3);
    using imported = ImportedArray.fromDeviceArray(d.schema, d.array, { validation: "full" });
    expect(imported.hostReadable).toBe(false);
    expect(() => importRecordBatch(imported)).toThrow(withCode("unknown_device"));
    disposeProduced(d);
  });
});

describe("bad input the default level accepts but conversion refuses", () => {
  test("validation 'none' trusts sizes; conversion still never reads past a buffer", () => {
    // The struct child is shorter than the parent's offset + length: only
    // 'none' lets it in; building the apache-arrow view is refused.
    const spec: NodeSpec = batch([{ format: "+s", name: "s", length: 3, offset: 2, buffers: [null], children: [int32("short", 3)] }]);
    const produced = produceArray(spec);
    try {
      using imported = ImportedArray.fromArray(produced.schema, produced.array, { validation: "none" });
      expect(() => importRecordBatch(imported)).toThrow(withCode("invalid_layout"));
      expect(() => importRecordBatch(imported)).toThrow('"short" (i): buffer 1 holds 12 bytes, but slots need bytes [8, 20)');
    } finally {
      disposeProduced(produced);
    }
  });
});
