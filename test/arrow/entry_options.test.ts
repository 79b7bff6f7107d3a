/**
 * Every import entry point forwards every option it accepts, whatever
 * form its source takes (struct addresses, a protocol producer, a capsule,
 * an ImportedStream): each option is passed through each entry point that
 * takes it, and the test shows it took effect.
 * - validation: invalid UTF-8 passes "default" and is refused at "full".
 * - materialize: run-end encoded data (which apache-arrow lacks) converts
 *   with it and is refused without it.
 * - as: the struct kind an address points to.
 * - requestedSchema: every producer method that honours it renames.
 */
import { describe, expect, test } from "bun:test";
import { Field, Int32, RecordBatch, Schema, Table, Type, Utf8, makeData, makeVector } from "apache-arrow";
import { ExportedStream, arrowProtocol, exportArray, exportSchema, exportStream, importRecordBatch, importTable, importVector, installArrowProtocol, recordBatches, uninstallArrowProtocol } from "../../ts/index.ts";
import { ArrowCArray, ArrowCDeviceArray, ArrowCDeviceStream, ArrowCSchema, ArrowCStream, ImportedArray, ImportedStream, type ArrowCapsule, type CapsuleKind, type SchemaProducer } from "../../ts/raw.ts";
import { nonZeroCounters } from "../helpers/leaks.ts";
import { streamPeer } from "../helpers/fixtures.ts";
import { collectUntil } from "../helpers/gc.ts";
import { produceDevice, type NodeSpec } from "../helpers/producer.ts";
import { withCode } from "../helpers/errors.ts";

/** A batch whose one utf8 column holds "A" and the invalid byte 0xff. */
function badUtf8Batch(): RecordBatch {
  const data = makeData({ type: new Utf8(), length: 2, nullCount: 0, valueOffsets: Int32Array.from([0, 1, 2]), data: Uint8Array.from([65, 0xff]) });
  return new Table({ s: makeVector(data) }).batches[0];
}

const badUtf8 = 'string 1 is not valid UTF-8';

/** `attempt` passes at "default" and is refused at "full" (fresh sources each time). */
async function validationTakesEffect(attempt: (validation: "default" | "full") => unknown): Promise<void> {
  await attempt("default");
  let error: unknown;
  try {
    await attempt("full");
  } catch (e) {
    error = e;
  }
  expect(error).toEqual(withCode("invalid_layout"));
  expect((error as Error).message).toContain(badUtf8);
}

/** A run-end encoded column [10, 10, 20, 20, 20] made by C, in a record batch when `inBatch`. */
function reeSpec(inBatch: boolean): NodeSpec {
  const ree: NodeSpec = {
    format: "+r", name: "r", length: 5, buffers: [],
    children: [
      { format: "i", name: "run_ends", length: 2, flags: 0, buffers: [null, Int32Array.from([2, 5])] },
      { format: "i", name: "values", length: 2, buffers: [null, Int32Array.from([10, 20])] },
    ],
  };
  return inBatch ? { format: "+s", name: "", length: 5, flags: 0, buffers: [null], children: [ree] } : ree;
}

/** A foreign producer of the REE column (docs/protocol.md by hand). */
function reeProducer(inBatch: boolean): { [ArrowCDeviceArray](): ArrowCapsule } {
  return {
    [ArrowCDeviceArray]() {
      const produced = produceDevice(reeSpec(inBatch));
      return {
        kind: "arrow_device_array" as CapsuleKind,
        schema: Number(produced.schema.address),
        deviceArray: Number(produced.array.address),
        [Symbol.dispose]: () => {
          produced.schema.dispose();
          produced.array.dispose();
        },
      };
    },
  };
}

/** A C stream of two REE batches, as a protocol producer (an ExportedStream offers its method). */
function reeStream(): ExportedStream {
  const slot = new ExportedStream("stream", "REE stream");
  streamPeer.sp_ree_stream(2, slot.stream);
  return slot;
}

/** `attempt` converts with materialize and is refused (code "unsupported") without. */
async function materializeTakesEffect(attempt: (materialize: boolean) => unknown): Promise<unknown> {
  let error: unknown;
  try {
    await attempt(false);
  } catch (e) {
    error = e;
  }
  expect(error).toEqual(withCode("unsupported"));
  expect((error as Error).message).toContain("is run-end encoded, which apache-arrow 21 cannot represent");
  return await attempt(true);
}

async function settled(): Promise<void> {
  expect(await collectUntil(() => Object.keys(nonZeroCounters()).length === 0)).toBe(true);
}

describe("validation", () => {
  test("array entry points, from a producer, a capsule and addresses", async () => {
    await validationTakesEffect((validation) => importVector(arrowProtocol(badUtf8Batch().getChildAt(0)!), { validation }));
    await validationTakesEffect((validation) => importRecordBatch(arrowProtocol(badUtf8Batch()), { validation }));
    await validationTakesEffect((validation) => importRecordBatch(arrowProtocol(badUtf8Batch())[ArrowCArray]!(), { validation }));
    await validationTakesEffect((validation) => ImportedArray.fromArray(arrowProtocol(badUtf8Batch()), { validation }).dispose());
    await validationTakesEffect((validation) => ImportedArray.fromDeviceArray(arrowProtocol(badUtf8Batch()), { validation }).dispose());
    await validationTakesEffect((validation) => {
      using exported = exportArray(badUtf8Batch(), { as: "array" });
      return importRecordBatch(exported.schema, exported.array, { validation, as: "array" });
    });
    await validationTakesEffect((validation) => {
      using exported = exportArray(badUtf8Batch().getChildAt(0)!.data[0], { as: "array" });
      return importVector(exported.schema, exported.array, { validation });
    });
    await validationTakesEffect((validation) => {
      using exported = exportArray(badUtf8Batch(), { as: "array" });
      return ImportedArray.fromArray(exported.schema, exported.array, { validation }).dispose();
    });
    await validationTakesEffect((validation) => {
      using exported = exportArray(badUtf8Batch(), { as: "device_array" });
      return ImportedArray.fromDeviceArray(exported.schema, exported.array, { validation }).dispose();
    });
    await settled();
  });

  test("stream entry points, from a producer, a capsule and addresses", async () => {
    const table = () => new Table(badUtf8Batch());
    await validationTakesEffect((validation) => importTable(arrowProtocol(table()), { validation }));
    await validationTakesEffect((validation) => importTable(arrowProtocol(table())[ArrowCStream]!(), { validation }));
    await validationTakesEffect((validation) => importTable(exportStream(table(), { as: "stream" }), { validation }));
    await validationTakesEffect((validation) => importTable(exportStream(table()).stream, { validation }));
    await validationTakesEffect((validation) => {
      using exported = exportStream(table(), { as: "stream" });
      return importTable(exported.stream, { validation, as: "stream" });
    });
    await validationTakesEffect((validation) => importTable(ImportedStream.fromArrayStream(arrowProtocol(table()), { validation })));
    await validationTakesEffect((validation) => importTable(ImportedStream.fromDeviceArrayStream(arrowProtocol(table()), { validation })));
    await validationTakesEffect((validation) => [...ImportedStream.fromArrayStream(arrowProtocol(table())[ArrowCDeviceStream]!(), { validation })].forEach((b) => b.dispose()));
    await settled();
  });

  test("an ImportedStream was validated when imported: importTable refuses a level for it rather than ignore it", async () => {
    const stream = ImportedStream.fromArrayStream(arrowProtocol(new Table(badUtf8Batch())));
    expect(() => importTable(stream, { validation: "full" })).toThrow(withCode("invalid_argument"));
    expect(() => importTable(stream, { validation: "full" })).toThrow("importTable: options.validation must be undefined for an ImportedStream");
    expect(importTable(stream).numRows).toBe(2); // its own level: default
    await settled();
  });

  test("both readers, in both forms, apply a level to the producer's stream they import", async () => {
    const producer = () => arrowProtocol(new Table(badUtf8Batch()));
    await validationTakesEffect((validation) => importTable(producer(), { validation, async: true }));
    await validationTakesEffect((validation) => [...recordBatches(producer(), { validation })]);
    await validationTakesEffect(async (validation) => {
      for await (const batch of recordBatches(producer(), { validation, async: true })) void batch;
    });
    await settled();
  });
});

describe("materialize", () => {
  test("array entry points, from a producer and from addresses", async () => {
    const vector = await materializeTakesEffect((materialize) => importVector(reeProducer(false), { materialize })) as ReturnType<typeof importVector>;
    expect([...vector]).toEqual([10, 10, 20, 20, 20]);
    const batch = await materializeTakesEffect((materialize) => importRecordBatch(reeProducer(true), { materialize })) as RecordBatch;
    expect([...batch.getChildAt(0)!]).toEqual([10, 10, 20, 20, 20]);
    const fromAddresses = await materializeTakesEffect((materialize) => {
      const produced = produceDevice(reeSpec(true));
      try {
        return importRecordBatch(produced.schema.address, produced.array.address, { materialize });
      } finally {
        produced.schema.dispose();
        produced.array.dispose();
      }
    }) as RecordBatch;
    expect([...fromAddresses.getChildAt(0)!]).toEqual([10, 10, 20, 20, 20]);
    const converted = await materializeTakesEffect((materialize) => {
      using imported = ImportedArray.fromDeviceArray(reeProducer(true));
      return importRecordBatch(imported, { materialize });
    }) as RecordBatch;
    expect(converted.getChildAt(0)!.type.typeId).toBe(Type.Int);
    await settled();
  });

  test("stream entry points, from a producer (an ExportedStream), an address and an ImportedStream", async () => {
    const rows = (table: unknown) => (table as Table).getChildAt(0)!.toArray();
    const expected = Int32Array.from([10, 10, 20, 20, 20, 20, 20, 40, 40, 40]);
    expect(rows(await materializeTakesEffect((materialize) => { using s = reeStream(); return importTable(s, { materialize }); }))).toEqual(expected);
    expect(rows(await materializeTakesEffect((materialize) => { using s = reeStream(); return importTable(s.stream, { materialize, as: "stream" }); }))).toEqual(expected);
    expect(rows(await materializeTakesEffect((materialize) => { using s = reeStream(); return importTable(ImportedStream.fromArrayStream(s), { materialize }); }))).toEqual(expected);
    expect(rows(await materializeTakesEffect((materialize) => { using s = reeStream(); return importTable(s, { materialize }); }))).toEqual(expected);
    expect(rows(await materializeTakesEffect((materialize) => { using s = reeStream(); return importTable(s, { async: true, materialize }); }))).toEqual(expected);
    const batches = await materializeTakesEffect((materialize) => { using s = reeStream(); return [...recordBatches(s, { materialize })]; }) as RecordBatch[];
    expect(batches.length).toBe(2);
    const asyncBatches = await materializeTakesEffect(async (materialize) => {
      using s = reeStream();
      const out: RecordBatch[] = [];
      for await (const batch of recordBatches(s, { async: true, materialize })) out.push(batch);
      return out;
    }) as RecordBatch[];
    expect(asyncBatches.length).toBe(2);
    expect(Number(streamPeer.sp_producer_streams_live())).toBe(0);
    await settled();
  });
});

describe("as", () => {
  test("importVector, importRecordBatch and importTable read the struct kind they are told", async () => {
    const batch = new Table({ n: makeVector(Int32Array.from([1, 2])) }).batches[0];
    {
      using exported = exportArray(batch, { as: "array" });
      expect(importRecordBatch(exported.schema, exported.array, { as: "array" }).numRows).toBe(2);
      using column = exportArray(batch.getChildAt(0)!.data[0], { as: "array" });
      expect([...importVector(column.schema, column.array, { as: "array" })]).toEqual([1, 2]);
    }
    {
      using exported = exportArray(batch, { as: "device_array" });
      expect(importRecordBatch(exported.schema, exported.array, { as: "device_array" }).numRows).toBe(2);
      using column = exportArray(batch.getChildAt(0)!.data[0], { as: "device_array" });
      expect([...importVector(column.schema, column.array, { as: "device_array" })]).toEqual([1, 2]);
    }
    for (const as of ["stream", "device_stream"] as const) {
      using exported = exportStream(new Table(batch), { as });
      expect(importTable(exported.stream, { as }).numRows).toBe(2);
    }
    await settled();
  });
});

describe("requestedSchema", () => {
  /** An "arrow_schema" capsule requesting column "n" renamed to "m". */
  function renamed(field = false): ArrowCapsule {
    const handle = exportSchema(field ? new Field("m", new Int32(), true) : new Schema([new Field("m", new Int32(), true)]));
    const capsule = (handle as unknown as SchemaProducer)[ArrowCSchema]();
    handle.release();
    return capsule;
  }

  test("every producer method that honours it, given as a capsule or as a schema producer", async () => {
    const table = new Table({ n: makeVector(Int32Array.from([1, 2])) });
    const batch = table.batches[0];
    const column = batch.getChildAt(0)!;
    const schemaProducer = arrowProtocol(new Table({ m: makeVector(Int32Array.from([0])) }));
    for (const method of [ArrowCArray, ArrowCDeviceArray] as const) {
      using wanted = renamed();
      expect(importRecordBatch(arrowProtocol(batch)[method]!({ requestedSchema: wanted })).schema.fields[0].name).toBe("m");
      expect(importRecordBatch(arrowProtocol(batch)[method]!({ requestedSchema: schemaProducer as unknown as SchemaProducer })).schema.fields[0].name).toBe("m");
      using wantedField = renamed(true);
      using fromVector = ImportedArray.fromArray(arrowProtocol(column)[method]!({ requestedSchema: wantedField }));
      expect(fromVector.root.name).toBe("m");
      using fromData = ImportedArray.fromArray(arrowProtocol(column.data[0])[method]!({ requestedSchema: wantedField }));
      expect(fromData.root.name).toBe("m");
      // A handle re-exports the producer's types: it refuses another
      // schema (whatever entry is loaded); its conversion honours it.
      using imported = ImportedArray.fromDeviceArray(arrowProtocol(batch));
      const handleMethod = (imported as unknown as Record<symbol, (o: object) => ArrowCapsule>)[method];
      expect(() => handleMethod({ requestedSchema: wanted })).toThrow(withCode("unsupported"));
      expect(importRecordBatch(arrowProtocol(importRecordBatch(imported))[method]!({ requestedSchema: wanted })).schema.fields[0].name).toBe("m");
    }
    for (const method of [ArrowCStream, ArrowCDeviceStream] as const) {
      using wanted = renamed();
      expect(importTable(arrowProtocol(table)[method]!({ requestedSchema: wanted })).schema.fields[0].name).toBe("m");
    }
    installArrowProtocol();
    try {
      using wanted = renamed();
      const viaPrototype = (batch as unknown as Record<symbol, (o: object) => ArrowCapsule>)[ArrowCArray]({ requestedSchema: wanted });
      expect(importRecordBatch(viaPrototype).schema.fields[0].name).toBe("m");
    } finally {
      uninstallArrowProtocol();
    }
    await settled();
  });
});
