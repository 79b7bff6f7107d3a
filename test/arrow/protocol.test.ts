/**
 * The JS Arrow exchange protocol (docs/protocol.md): the five global
 * symbols, capsules, requestedSchema, the kwargs rule, producers (apache-arrow
 * through the wrapper and the opt-in install, this library's handles) and
 * consumers (every import entry point), with exact release counts and
 * buffer addresses.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { ptr } from "bun:ffi";
import {
  Dictionary, Field, Int32, Int64, LargeUtf8, RecordBatch, Schema, Table, Type, Utf8, Utf8View, Vector, makeVector, tableFromArrays, vectorFromArray,
} from "apache-arrow";
import { arrowProtocol, arrowProtocolInstalled, exportArray, exportStream, exportSchema, importRecordBatch, importVector, installArrowProtocol, importTable, recordBatches, uninstallArrowProtocol } from "../../ts/index.ts";
import { InvalidArgumentError } from "../../ts/core/errors.ts";
import { ArrowCArray, ArrowCDeviceArray, ArrowCDeviceStream, ArrowCSchema, ArrowCStream, ImportedArray, ImportedStream, type ArrowCapsule, type CapsuleKind, type SchemaProducer } from "../../ts/raw.ts";
import { CSchema, structPointer } from "../../ts/raw.ts";
import { counters, nonZeroCounters } from "../helpers/leaks.ts";
import { fx } from "../helpers/fixtures.ts";
import { collectUntil } from "../helpers/gc.ts";
import { produceDevice, producerBuffer, producerClean, specFromData, type Produced } from "../helpers/producer.ts";
import type { CDeviceArray } from "../../ts/raw.ts";
import { withCode } from "../helpers/errors.ts";

afterEach(() => {
  uninstallArrowProtocol();
});

/** A producer that is not from this library: C-made arrays (c_producer.c)
 * in plain capsule objects, following docs/protocol.md by hand. Its method
 * key is `Symbol.for("__arrow_c_device_array__")` (the library's constant is
 * that symbol, as the first test checks; it only gives the key its type). */
class ForeignColumn {
  disposals = 0;
  last: Produced<CDeviceArray> | null = null;
  constructor(readonly values: number[], readonly deviceType = 1) {}

  [ArrowCDeviceArray](options?: Record<string, unknown>): ArrowCapsule {
    for (const [key, value] of Object.entries(options ?? {})) {
      if (value !== undefined && key !== "requestedSchema") throw new Error(`unsupported option ${key}`);
    }
    const data = makeVector(Int32Array.from(this.values)).data[0];
    const produced = produceDevice(specFromData(data, "foreign"), this.deviceType);
    this.last = produced;
    return {
      kind: "arrow_device_array" as CapsuleKind,
      schema: Number(produced.schema.address),
      deviceArray: Number(produced.array.address),
      [Symbol.dispose]: () => {
        this.disposals++;
        produced.schema.dispose();
        produced.array.dispose();
      },
    };
  }
}

/** One RecordBatch of `columns` (apache-arrow's RecordBatch constructor
 * keeps Vectors as children; a Table builds proper Data). */
function batchOf(columns: Record<string, Vector>): RecordBatch {
  return new Table(columns).batches[0];
}

function releases(): { schema: number; array: number } {
  return { schema: Number(fx.fx_schema_releases()), array: Number(fx.fx_array_releases()) };
}

/** Every export and import of this library ended (imports converted to
 * apache-arrow end when the GC collects their views). */
async function settled(): Promise<void> {
  expect(await collectUntil(() => Object.keys(nonZeroCounters()).length === 0)).toBe(true);
}

function clean(): void {
  expect(producerClean()).toEqual({ live: 0, doubles: 0 });
  expect(nonZeroCounters()).toEqual({});
}

describe("symbols", () => {
  test("are the global symbols named after the Python dunders", () => {
    expect(ArrowCSchema as symbol).toBe(Symbol.for("__arrow_c_schema__"));
    expect(ArrowCArray as symbol).toBe(Symbol.for("__arrow_c_array__"));
    expect(ArrowCDeviceArray as symbol).toBe(Symbol.for("__arrow_c_device_array__"));
    expect(ArrowCStream as symbol).toBe(Symbol.for("__arrow_c_stream__"));
    expect(ArrowCDeviceStream as symbol).toBe(Symbol.for("__arrow_c_device_stream__"));
  });
});

describe("a foreign producer", () => {
  test("importVector takes it zero-copy; its capsule is disposed once and its release runs once", async () => {
    fx.fx_reset_counts();
    const foreign = new ForeignColumn([1, 2, 3, 4]);
    let vector: ReturnType<typeof importVector> | null = importVector(foreign);
    expect([...vector]).toEqual([1, 2, 3, 4]);
    expect(Number(ptr(vector.data[0].values))).toBe(producerBuffer(foreign.last!.nodes[0], 1));
    expect(foreign.disposals).toBe(1);
    expect(releases()).toEqual({ schema: 0, array: 0 }); // held by the import until its views are collected
    vector = null;
    expect(await collectUntil(() => releases().array === 1)).toBe(true);
    expect(releases()).toEqual({ schema: 1, array: 1 });
    clean();
  });

  test("every array entry point accepts it", () => {
    fx.fx_reset_counts();
    const foreign = new ForeignColumn([5, 6]);
    using a = ImportedArray.fromArray(foreign);
    using b = ImportedArray.fromDeviceArray(foreign);
    expect(a.root.length).toBe(2);
    expect(b.root.format).toBe("i");
    expect(foreign.disposals).toBe(2);
    a.dispose();
    b.dispose();
    expect(releases()).toEqual({ schema: 2, array: 2 });
    clean();
  });

  test("a capsule passed directly is consumed and disposed", () => {
    fx.fx_reset_counts();
    const foreign = new ForeignColumn([7]);
    const capsule = foreign[ArrowCDeviceArray]();
    using imported = ImportedArray.fromDeviceArray(capsule);
    expect(imported.root.length).toBe(1);
    expect(foreign.disposals).toBe(1);
    imported.dispose();
    clean();
  });

  test("a method that returns no capsule, or the wrong kind, is refused with InvalidArgumentError", () => {
    expect(() => importVector({ [ArrowCArray]: () => ({ kind: "nonsense" }) } as never)).toThrow(withCode("invalid_argument"));
    let disposed = 0;
    const streamCapsule = { kind: "arrow_array_stream", stream: 8, [Symbol.dispose]: () => { disposed++; } };
    expect(() => importVector({ [ArrowCArray]: () => streamCapsule } as never)).toThrow(withCode("invalid_argument"));
    expect(disposed).toBe(1); // refused, and still disposed
  });

  test("device data: this library's import offers the device methods only", () => {
    fx.fx_reset_counts();
    const foreign = new ForeignColumn([1, 2], 2); // CUDA: the buffers are never read
    using imported = ImportedArray.fromDeviceArray(foreign);
    expect(imported.deviceType).toBe(2);
    expect((imported as unknown as Record<symbol, unknown>)[ArrowCArray]).toBeUndefined();
    expect(typeof (imported as unknown as Record<symbol, unknown>)[ArrowCDeviceArray]).toBe("function");
    // Relayed through the protocol, still on the device, zero-copy.
    using again = ImportedArray.fromDeviceArray(imported);
    expect(again.deviceType).toBe(2);
    expect(again.root.bufferAddress(1)).toBe(imported.root.bufferAddress(1));
    imported.dispose();
    again.dispose();
    clean();
  });
});

describe("apache-arrow producers", () => {
  const batch = batchOf({ a: makeVector(Int32Array.from([1, 2, 3])), s: vectorFromArray(["x", "y", "z"], new Utf8()) });

  test("arrowProtocol(batch): importRecordBatch reads the same buffers", () => {
    const back = importRecordBatch(arrowProtocol(batch));
    expect(back.toArray().map((r) => r.toJSON())).toEqual(batch.toArray().map((r) => r.toJSON()));
    expect(ptr(back.getChildAt(0)!.data[0].values)).toBe(ptr(batch.getChildAt(0)!.data[0].values));
  });

  test("arrowProtocol(table): importTable and recordBatches read it as a stream", () => {
    const table = tableFromArrays({ n: Int32Array.from([1, 2, 3]) });
    const read = importTable(arrowProtocol(table));
    expect(read.getChild("n")!.toArray()).toEqual(Int32Array.from([1, 2, 3]));
    expect(ptr(read.getChild("n")!.data[0].values)).toBe(ptr(table.getChild("n")!.data[0].values));
    expect([...recordBatches(arrowProtocol(table))].length).toBe(1);
    using stream = ImportedStream.fromArrayStream(arrowProtocol(table));
    expect(stream.kind).toBe("device_stream"); // the device method is preferred
  });

  test("the wrapper refuses what is not apache-arrow", () => {
    expect(() => arrowProtocol({} as never)).toThrow(withCode("invalid_argument"));
  });

  test("installArrowProtocol is off by default, opt-in, and undone by uninstall", () => {
    const vector = makeVector(Int32Array.from([4, 5]));
    expect(arrowProtocolInstalled()).toBe(false);
    expect((vector as unknown as Record<symbol, unknown>)[ArrowCArray]).toBeUndefined();
    installArrowProtocol();
    expect(arrowProtocolInstalled()).toBe(true);
    expect([...importVector(vector as never)]).toEqual([4, 5]);
    const table = new Table(batch);
    expect(importTable(table as never).numRows).toBe(3);
    uninstallArrowProtocol();
    expect((vector as unknown as Record<symbol, unknown>)[ArrowCArray]).toBeUndefined();
    expect(() => importVector(vector as never, undefined as never)).toThrow(withCode("invalid_argument"));
  });

  test("the schema method", async () => {
    const capsule = arrowProtocol(batch)[ArrowCSchema]!();
    expect(capsule.kind).toBe("arrow_schema");
    const schema = CSchema.at(structPointer("ArrowSchema", capsule.schema!));
    expect(schema.format).toBe("+s");
    expect(schema.children.map((c) => c.name)).toEqual(["a", "s"]);
    capsule[Symbol.dispose]();
    capsule[Symbol.dispose](); // idempotent
    await settled();
  });
});

/** An "arrow_schema" capsule of `schema`, for requestedSchema (through
 * this library's schema handle, which moves its struct into the capsule). */
function request(schema: Schema | Field): ArrowCapsule {
  const handle = exportSchema(schema);
  const capsule = (handle as unknown as SchemaProducer)[ArrowCSchema]();
  handle.release();
  return capsule;
}

describe("requestedSchema", () => {
  test("honoured zero-copy: names, metadata and nullability", () => {
    const batch = batchOf({ a: makeVector(Int32Array.from([1, 2])) });
    using wanted = request(new Schema([new Field("renamed", new Int32(), false, new Map([["k", "v"]]))], new Map([["top", "1"]])));
    const back = importRecordBatch(arrowProtocol(batch)[ArrowCDeviceArray]!({ requestedSchema: wanted }));
    const field = back.schema.fields[0];
    expect(field.name).toBe("renamed");
    expect(field.nullable).toBe(false);
    expect(field.metadata.get("k")).toBe("v");
    expect(back.schema.metadata.get("top")).toBe("1");
    expect(ptr(back.getChildAt(0)!.data[0].values)).toBe(ptr(batch.getChildAt(0)!.data[0].values));
  });

  test("honoured by copying: dictionary decoding, 32 -> 64-bit offsets, non-view <-> view", () => {
    const dict = vectorFromArray(["a", "b", "a", null], new Dictionary(new Utf8(), new Int32()));
    const strings = vectorFromArray(["p", "q"], new Utf8());
    using asUtf8 = request(new Schema([new Field("d", new Utf8(), true)]));
    const decoded = importRecordBatch(arrowProtocol(batchOf({ d: dict }))[ArrowCArray]!({ requestedSchema: asUtf8 }));
    expect(decoded.getChildAt(0)!.type.typeId).toBe(Type.Utf8);
    expect(decoded.getChildAt(0)!.toArray()).toEqual(["a", "b", "a", null]);
    using asLarge = request(new Schema([new Field("s", new LargeUtf8(), true)]));
    const large = importRecordBatch(arrowProtocol(batchOf({ s: strings }))[ArrowCArray]!({ requestedSchema: asLarge }));
    expect(large.getChildAt(0)!.type.typeId).toBe(Type.LargeUtf8);
    expect(large.getChildAt(0)!.toArray()).toEqual(["p", "q"]);
    using asView = request(new Schema([new Field("s", new Utf8View(), true)]));
    const view = importRecordBatch(arrowProtocol(batchOf({ s: strings }))[ArrowCArray]!({ requestedSchema: asView }));
    expect(view.getChildAt(0)!.type.typeId).toBe(Type.Utf8View);
    expect([...view.getChildAt(0)!]).toEqual(["p", "q"]);
    using backToUtf8 = request(new Schema([new Field("s", new Utf8(), true)]));
    const plain = importRecordBatch(arrowProtocol(view)[ArrowCArray]!({ requestedSchema: backToUtf8 }));
    expect(plain.getChildAt(0)!.type.typeId).toBe(Type.Utf8);
    expect([...plain.getChildAt(0)!]).toEqual(["p", "q"]);
  });

  test("ignored when the cast is not one this producer makes: the consumer gets the producer's schema", () => {
    const batch = batchOf({ a: makeVector(Int32Array.from([1, 2])) });
    using asInt64 = request(new Schema([new Field("a", new Int64(), true)]));
    const back = importRecordBatch(arrowProtocol(batch)[ArrowCDeviceArray]!({ requestedSchema: asInt64 }));
    expect(back.getChildAt(0)!.type.typeId).toBe(Type.Int);
    expect((back.getChildAt(0)!.type as Int32).bitWidth).toBe(32);
    expect(ptr(back.getChildAt(0)!.data[0].values)).toBe(ptr(batch.getChildAt(0)!.data[0].values));
    // Non-nullable requested over data with nulls: ignored too.
    const withNull = batchOf({ a: vectorFromArray([1, null], new Int32()) });
    using strict = request(new Schema([new Field("a", new Int32(), false)]));
    const kept = importRecordBatch(arrowProtocol(withNull)[ArrowCDeviceArray]!({ requestedSchema: strict }));
    expect(kept.schema.fields[0].nullable).toBe(true);
  });

  test("a stream honours it for every batch", () => {
    const table = tableFromArrays({ n: Int32Array.from([1, 2, 3]) });
    using wanted = request(new Schema([new Field("m", new Int32(), false)]));
    const read = importTable(arrowProtocol(table)[ArrowCStream]!({ requestedSchema: wanted }));
    expect(read.schema.fields.map((f) => [f.name, f.nullable])).toEqual([["m", false]]);
  });

  test("an imported CPU array refuses a schema other than its own, with the root entry loaded too; converted, it casts zero-copy", () => {
    fx.fx_reset_counts();
    using imported = ImportedArray.fromDeviceArray(new ForeignColumn([3, 4]));
    using wanted = request(new Field("renamed", new Int32(), false));
    const methods = imported as unknown as Record<symbol, (o: object) => ArrowCapsule>;
    expect(() => methods[ArrowCArray]({ requestedSchema: wanted })).toThrow(withCode("unsupported"));
    expect(() => methods[ArrowCArray]({ requestedSchema: wanted })).toThrow("ask arrowProtocol(converted) for the requested schema");
    const capsule = arrowProtocol(importVector(imported))[ArrowCArray]!({ requestedSchema: wanted });
    using back = ImportedArray.fromArray(capsule);
    expect([back.root.format, back.root.name, back.root.nullable]).toEqual(["i", "renamed", false]);
    expect(back.root.bufferAddress(1)).toBe(imported.root.bufferAddress(1));
    imported.dispose();
    back.dispose();
  });
});

describe("requestedSchema on a record batch imported from C", () => {
  test("refused by the handle; converted, the copy-casts (dictionary decoding, utf8 -> large_utf8 / utf8_view) and renames, as on an apache-arrow RecordBatch", async () => {
    const batch = batchOf({
      d: vectorFromArray(["a", "b", "a", null], new Dictionary(new Utf8(), new Int32())),
      s: vectorFromArray(["p", "q", null, "r"], new Utf8()),
      v: vectorFromArray(["x", null, "y", "z"], new Utf8()),
      n: makeVector(Int32Array.from([1, 2, 3, 4])),
    });
    const wantedSchema = new Schema([
      new Field("decoded", new Utf8(), true), new Field("large", new LargeUtf8(), true), new Field("view", new Utf8View(), true), new Field("renamed", new Int32(), true),
    ]);
    const viaArrow = (() => {
      using wanted = request(wantedSchema);
      return importRecordBatch(arrowProtocol(batch)[ArrowCArray]!({ requestedSchema: wanted }));
    })();
    using fromC = ImportedArray.fromDeviceArray(exportArray(batch));
    for (const method of [ArrowCArray, ArrowCDeviceArray] as const) {
      using wanted = request(wantedSchema);
      const methods = fromC as unknown as Record<symbol, (o: object) => ArrowCapsule>;
      expect(() => methods[method]({ requestedSchema: wanted })).toThrow(withCode("unsupported"));
      // Converted, it casts as the apache-arrow RecordBatch does.
      const capsule = arrowProtocol(importRecordBatch(fromC))[method]!({ requestedSchema: wanted });
      const back = importRecordBatch(capsule);
      for (const got of [back, viaArrow]) {
        expect(got.schema.fields.map((f) => [f.name, f.type.typeId])).toEqual([["decoded", Type.Utf8], ["large", Type.LargeUtf8], ["view", Type.Utf8View], ["renamed", Type.Int]]);
        expect([...got.getChildAt(0)!]).toEqual(["a", "b", "a", null]);
        expect([...got.getChildAt(1)!]).toEqual(["p", "q", null, "r"]);
        expect([...got.getChildAt(2)!]).toEqual(["x", null, "y", "z"]);
      }
      // The column that needs no cast is still the producer's memory.
      expect(Number(ptr(back.getChildAt(3)!.data[0].values))).toBe(fromC.root.child(3).bufferAddress(1));
    }
    fromC.dispose();
    await settled();
  });
});

describe("the kwargs rule", () => {
  test("an unknown option with a value is refused; undefined is accepted", async () => {
    const batch = batchOf({ a: makeVector(Int32Array.from([1])) });
    const producer = arrowProtocol(batch);
    expect(() => producer[ArrowCDeviceArray]!({ stream: 5 })).toThrow(withCode("unsupported"));
    expect(() => producer[ArrowCSchema]!({ requestedSchema: undefined, copy: true })).toThrow(withCode("unsupported")); // the schema method takes none
    expect(() => producer[ArrowCArray]!({ requestedSchema: undefined, future: "x" })).toThrow(withCode("unsupported"));
    const fine = producer[ArrowCArray]!({ requestedSchema: undefined, future: undefined });
    fine[Symbol.dispose]();
    const table = new Table(batch);
    expect(() => arrowProtocol(table)[ArrowCStream]!({ copy: true })).toThrow(withCode("unsupported"));
    await settled();
  });
});

describe("capsules dropped unconsumed", () => {
  test("are released exactly once on garbage collection", async () => {
    fx.fx_reset_counts();
    let imported: ImportedArray | null = ImportedArray.fromDeviceArray(new ForeignColumn([1, 2, 3]));
    // The capsule's re-export holds the producer's memory; nobody consumes it.
    let capsule: ArrowCapsule | null = (imported as unknown as Record<symbol, () => ArrowCapsule>)[ArrowCDeviceArray]();
    expect(capsule.kind).toBe("arrow_device_array");
    imported.dispose();
    expect(releases().array).toBe(0);
    capsule = null;
    imported = null;
    expect(await collectUntil(() => releases().array === 1)).toBe(true);
    expect(releases()).toEqual({ schema: 1, array: 1 });
    clean();
  });

  test("and explicitly, once, however often disposed", () => {
    fx.fx_reset_counts();
    using imported = ImportedArray.fromDeviceArray(new ForeignColumn([1]));
    const capsule = (imported as unknown as Record<symbol, () => ArrowCapsule>)[ArrowCDeviceArray]();
    imported.dispose();
    capsule[Symbol.dispose]();
    capsule[Symbol.dispose]();
    expect(releases()).toEqual({ schema: 1, array: 1 });
    clean();
  });

  test("stream capsules too", async () => {
    const table = tableFromArrays({ n: Int32Array.from([1, 2]) });
    let capsule: ArrowCapsule | null = arrowProtocol(table)[ArrowCDeviceStream]!();
    expect(capsule.kind).toBe("arrow_device_array_stream");
    expect(counters().live_stream_exports).toBe(1);
    capsule = null;
    expect(await collectUntil(() => Object.keys(nonZeroCounters()).length === 0)).toBe(true);
  });
});

describe("this library's export handles", () => {
  test("an ExportedArray moves its structs into the capsule (one-shot)", () => {
    const batch = batchOf({ a: makeVector(Int32Array.from([9, 8])) });
    using exported = exportArray(batch);
    const back = importRecordBatch(exported);
    expect(back.getChildAt(0)!.toArray()).toEqual(Int32Array.from([9, 8]));
    expect(exported.schemaReleased && exported.arrayReleased).toBe(true);
    expect(() => importRecordBatch(exported)).toThrow();
  });

  test("an ImportedStream hands its producer's stream on, either kind, unconverted", async () => {
    const table = tableFromArrays({ n: Int32Array.from([4, 5, 6]) });
    const imported = ImportedStream.fromArrayStream(exportStream(table, { as: "stream" }));
    expect(imported.kind).toBe("stream");
    const asDevice = imported[ArrowCDeviceStream]!();
    expect(asDevice.kind).toBe("arrow_device_array_stream");
    expect(imported.released).toBe(true); // moved on
    const read = importTable(asDevice);
    expect(read.getChild("n")!.toArray()).toEqual(Int32Array.from([4, 5, 6]));
    expect(ptr(read.getChild("n")!.data[0].values)).toBe(ptr(table.getChild("n")!.data[0].values));
    await settled();
  });

  test("an ExportedStream offers the method of its kind only", async () => {
    const table = tableFromArrays({ n: Int32Array.from([1]) });
    using exported = exportStream(table, { as: "stream" });
    expect((exported as unknown as Record<symbol, unknown>)[ArrowCDeviceStream]).toBeUndefined();
    expect(importTable(exported).numRows).toBe(1);
    exported.release();
    await settled();
  });
});

describe("hostile producers", () => {
  /** `capsule` with each address property turned into a getter that counts
   * its reads and answers 8 (an unreadable address) from the second on. */
  function fickle(capsule: ArrowCapsule): { capsule: ArrowCapsule; reads: Record<string, number> } {
    const reads: Record<string, number> = {};
    const out: Record<string | symbol, unknown> = { kind: capsule.kind, [Symbol.dispose]: () => capsule[Symbol.dispose]() };
    for (const key of ["schema", "array", "deviceArray", "stream"] as const) {
      const value = capsule[key];
      if (value === undefined) continue;
      reads[key] = 0;
      Object.defineProperty(out, key, { get: () => (++reads[key] === 1 ? value : 8), enumerable: true });
    }
    return { capsule: out as unknown as ArrowCapsule, reads };
  }

  test("a requestedSchema whose schema method returns itself is refused at once, naming the method", () => {
    const batch = batchOf({ a: makeVector(Int32Array.from([1, 2])) });
    let calls = 0;
    const selfish = { [ArrowCSchema]() { calls++; return selfish; } } as unknown as SchemaProducer;
    expect(() => arrowProtocol(batch)[ArrowCArray]!({ requestedSchema: selfish })).toThrow(withCode("invalid_argument"));
    expect(() => arrowProtocol(batch)[ArrowCArray]!({ requestedSchema: selfish }))
      .toThrow('requestedSchema[Symbol.for("__arrow_c_schema__")]() returned the producer itself, not an "arrow_schema" capsule');
    expect(calls).toBe(2);
    const table = new Table(batch);
    expect(() => arrowProtocol(table)[ArrowCDeviceStream]!({ requestedSchema: selfish })).toThrow(withCode("invalid_argument"));
  });

  test("a schema method that returns no capsule is a typed error naming what it returned", () => {
    const batch = batchOf({ a: makeVector(Int32Array.from([1])) });
    for (const [value, said] of [[undefined, "undefined"], [null, "null"], [42, "a number (42)"], [{}, "a Object"], [() => 0, "a function"]] as const) {
      const producer = { [ArrowCSchema]: () => value } as unknown as SchemaProducer;
      expect(() => arrowProtocol(batch)[ArrowCArray]!({ requestedSchema: producer })).toThrow(withCode("invalid_argument"));
      expect(() => arrowProtocol(batch)[ArrowCArray]!({ requestedSchema: producer })).toThrow(`returned ${said}, not an "arrow_schema" capsule`);
    }
  });

  test("array and stream methods that return no capsule are typed errors naming the method and what it returned", () => {
    for (const [value, said] of [[undefined, "undefined"], [7, "a number (7)"], ["x", "a string (x)"]] as const) {
      const array = { [ArrowCDeviceArray]: () => value };
      expect(() => importRecordBatch(array as never)).toThrow(withCode("invalid_argument"));
      expect(() => importRecordBatch(array as never)).toThrow(`[Symbol(__arrow_c_device_array__)]() returned ${said}, not a capsule`);
      const stream = { [ArrowCStream]: () => value };
      expect(() => importTable(stream as never)).toThrow(withCode("invalid_argument"));
      expect(() => importTable(stream as never)).toThrow(`[Symbol(__arrow_c_stream__)]() returned ${said}, not a capsule`);
    }
    const selfish = { [ArrowCStream]() { return selfish; } };
    expect(() => importTable(selfish as never)).toThrow("returned the producer itself, not a capsule");
  });

  test("each capsule address is read once, so a getter that changes its answer cannot swap the structs", async () => {
    const batch = batchOf({ a: makeVector(Int32Array.from([3, 4])) });
    for (const method of [ArrowCArray, ArrowCDeviceArray] as const) {
      const { capsule, reads } = fickle(arrowProtocol(batch)[method]!());
      const back = importRecordBatch(capsule);
      expect(back.getChildAt(0)!.toArray()).toEqual(Int32Array.from([3, 4]));
      expect(Object.values(reads).every((n) => n === 1)).toBe(true);
      expect(Object.keys(reads).length).toBe(2);
    }
    const table = tableFromArrays({ n: Int32Array.from([1, 2, 3]) });
    for (const method of [ArrowCStream, ArrowCDeviceStream] as const) {
      const { capsule, reads } = fickle(arrowProtocol(table)[method]!());
      expect(importTable(capsule).numRows).toBe(3);
      expect(reads).toEqual({ stream: 1 });
    }
    const { capsule: wanted, reads } = fickle(request(new Schema([new Field("renamed", new Int32(), true)])));
    const renamed = importRecordBatch(arrowProtocol(batch)[ArrowCArray]!({ requestedSchema: wanted }));
    expect(renamed.schema.fields[0].name).toBe("renamed");
    expect(reads).toEqual({ schema: 1 });
    wanted[Symbol.dispose]();
    await settled();
  });
});
