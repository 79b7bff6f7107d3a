/**
 * What an import does with the structs the address probe refuses
 * (docs/validation.md, "The address probe"): an import owns what it is
 * given, so a refused struct that is still safe to release (its bytes
 * read, not taken for another kind, its release callback code) is
 * released, as Arrow C++ does on a failed import, and so is every good
 * struct beside it. Anything else is left untouched. Inner pointers such
 * as a schema's name are probed at validation "full" (below it, only the
 * roots are: docs/validation.md). A long format (a
 * time zone of thousands of bytes) is spec-valid and imported.
 */
import { describe, expect, test } from "bun:test";
import { toArrayBuffer } from "bun:ffi";
import { Table, makeVector } from "apache-arrow";
import { exportStream, importVector } from "../../ts/index.ts";
import { ImportedArray, ImportedStream } from "../../ts/raw.ts";
import { fx } from "../helpers/fixtures.ts";
import { disposeProduced, produceDevice, producerClean } from "../helpers/producer.ts";
import { withCode } from "../helpers/errors.ts";

/** Releases the producer counted during `run`. */
function releasesDuring(run: () => void): { schemas: number; arrays: number } {
  const schemas = Number(fx.fx_schema_releases());
  const arrays = Number(fx.fx_array_releases());
  run();
  return { schemas: Number(fx.fx_schema_releases()) - schemas, arrays: Number(fx.fx_array_releases()) - arrays };
}

/** Overwrites word `index` (8 bytes each) of the struct at `address`. */
function pokeWord(address: number, index: number, value: bigint): bigint {
  const words = new BigUint64Array(toArrayBuffer(address as never, 0, (index + 1) * 8));
  const old = words[index];
  words[index] = value;
  return old;
}

describe("a refused struct that is safe to release", () => {
  test("a live schema whose name is no readable memory: refused, and it and its array are released once", () => {
    const produced = produceDevice({ format: "i", length: 2, buffers: [null, Int32Array.of(1, 2)] });
    pokeWord(Number(produced.schema.address), 1, 8n); // name -> 0x8
    const counted = releasesDuring(() => {
      expect(() => ImportedArray.fromDeviceArray(produced.schema, produced.array, { validation: "full" })).toThrow(withCode("invalid_argument"));
    });
    expect(counted).toEqual({ schemas: 1, arrays: 1 });
    expect(produced.schema.released).toBe(true);
    expect(produced.array.released).toBe(true);
    disposeProduced(produced);
    expect(producerClean()).toEqual({ live: 0, doubles: 0 });
  });

  test("the message still names the parameter and why", () => {
    const produced = produceDevice({ format: "i", length: 2, buffers: [null, Int32Array.of(1, 2)] });
    pokeWord(Number(produced.schema.address), 1, 8n);
    expect(() => ImportedArray.fromDeviceArray(produced.schema, produced.array, { validation: "full" })).toThrow(/^ImportedArray\.fromDeviceArray: schema: 0x[0-9a-f]+ is not a live ArrowSchema: its name 0x8 is not a readable NUL-terminated string; the deviceArray given was released too \(a failed import owns its structs: retry with new ones\)$/);
    disposeProduced(produced);
    expect(producerClean()).toEqual({ live: 0, doubles: 0 });
  });

  test("a stream whose get_next is no code: refused, and released", () => {
    const exported = exportStream([new Table({ x: makeVector(Int32Array.of(1)) }).batches[0]], { as: "stream" });
    const stream = Number(exported.stream);
    pokeWord(stream, 1, 8n); // get_next -> 0x8
    expect(() => ImportedStream.fromArrayStream(stream as never)).toThrow(/get_next 0x8 is not in executable memory/);
    expect(pokeWord(stream, 3, 0n)).toBe(0n); // its release ran (and set release to NULL)
    exported.release();
  });
});

describe("what is left untouched", () => {
  test("a struct taken for another kind (a schema where an array goes) is not released", () => {
    const produced = produceDevice({ format: "i", length: 2, buffers: [null, Int32Array.of(1, 2)] });
    const counted = releasesDuring(() => {
      expect(() => ImportedArray.fromDeviceArray(Number(produced.array.address) as never, Number(produced.schema.address) as never)).toThrow(/swapped/);
    });
    expect(counted).toEqual({ schemas: 0, arrays: 0 });
    disposeProduced(produced);
    expect(producerClean()).toEqual({ live: 0, doubles: 0 });
  });
});

describe("a long format", () => {
  test("a timestamp with a time zone of 5,000 bytes is imported, and released once", () => {
    const zone = `Z${"x".repeat(4999)}`;
    const produced = produceDevice({ format: `tsu:${zone}`, length: 2, buffers: [null, BigInt64Array.of(1n, 2n)] });
    const counted = releasesDuring(() => {
      const imported = ImportedArray.fromDeviceArray(produced.schema, produced.array);
      const vector = importVector(imported);
      expect((vector.type as { timezone?: string }).timezone).toBe(zone);
      imported.dispose();
    });
    expect(counted).toEqual({ schemas: 1, arrays: 1 });
    disposeProduced(produced);
    expect(producerClean()).toEqual({ live: 0, doubles: 0 });
  });
});
