/**
 * ts/arrow/arrow_data.ts: the Data objects imports make without
 * apache-arrow's constructor are the constructor's own objects, property
 * for property; and with any difference the constructor is used.
 */
import { describe, expect, test } from "bun:test";
import { ptr } from "bun:ffi";
import { Data, Field, Int32, Struct, Table, Utf8, Vector, vectorFromArray } from "apache-arrow";
import { dataAssembled, dataMakers, newData, noArrays } from "../../ts/arrow/arrow_data.ts";
import { exportArray, importRecordBatch } from "../../ts/index.ts";
import { ImportedArray } from "../../ts/raw.ts";

const { assembled, constructed, sameData } = dataMakers;

describe("arrow_data", () => {
  test("with the pinned apache-arrow the constructor is bypassed, and every probe shape matches it", () => {
    expect(dataAssembled).toBe(true);
    expect(newData).toBe(assembled);
  });

  test("an assembled Data has the constructor's properties in the constructor's order, and behaves as one", () => {
    const type = new Int32();
    const values = new Int32Array([1, 2, 3, 4]);
    const bitmap = new Uint8Array([0b1011]);
    const made = newData(type, 0, 4, -1, undefined, values, bitmap);
    const real = new Data(type, 0, 4, -1, [undefined, values, bitmap] as never);
    expect(Object.keys(made)).toEqual(Object.keys(real));
    expect(made).toBeInstanceOf(Data);
    expect(made.stride).toBe(real.stride);
    expect(made.nullCount).toBe(1); // computed lazily from the bitmap, as for the real one
    expect([...new Vector([made])]).toEqual([1, 2, null, 4]);
    expect([...new Vector([made.slice(1, 2)])]).toEqual([2, null]);
  });

  test("children, type ids and variadic buffers land where the constructor puts them", () => {
    const child = new Data(new Int32(), 0, 2, 0, [undefined, new Int32Array([5, 6])] as never);
    const struct = new Struct([new Field("a", new Int32(), true)]);
    const typeIds = new Int8Array([0, 0]);
    const args: Parameters<typeof assembled> = [struct, 0, 2, 0, undefined, undefined, undefined, [child], undefined, typeIds, undefined];
    const made = assembled(...args);
    expect(sameData(made, constructed(...args))).toBe(true);
    expect(made.children[0]).toBe(child);
    expect(made.typeIds).toBe(typeIds);
  });

  test("sameData notices another property order, a missing property and another value", () => {
    const type = new Utf8();
    const args: Parameters<typeof assembled> = [type, 0, 1, 0, new Int32Array([0, 1]), new Uint8Array([65]), undefined, undefined, undefined, undefined, undefined];
    const real = constructed(...args);
    expect(sameData(assembled(...args), real)).toBe(true);
    const reordered = Object.assign(Object.create(Data.prototype), { children: real.children, type: real.type }) as Data;
    for (const key of Object.keys(real)) if (!(key in reordered)) (reordered as unknown as Record<string, unknown>)[key] = (real as unknown as Record<string, unknown>)[key];
    expect(sameData(reordered, real)).toBe(false);
    const missing = newData(type, 0, 1, 0, undefined, new Uint8Array([65]), undefined);
    expect(sameData(missing, real)).toBe(false);
    const otherValue = newData(type, 0, 1, 1, args[4], args[5], undefined);
    expect(sameData(otherValue, real)).toBe(false);
  });

  test("an imported batch's Data read exactly like the constructor's, over the producer's memory", () => {
    const source = new Table({ n: vectorFromArray([1, 2, 3], new Int32()), s: vectorFromArray(["x", null, "zz"], new Utf8()) }).batches[0];
    const exported = exportArray(source);
    const imported = ImportedArray.fromDeviceArray(exported.schema, exported.array);
    const batch = importRecordBatch(imported);
    for (const [i, data] of batch.data.children.entries()) {
      const original = source.data.children[i];
      expect(data).toBeInstanceOf(Data);
      const rebuilt = new Data(data.type, data.offset, data.length, data.nullCount, [data.valueOffsets, data.values, data.nullBitmap, data.typeIds] as never, data.children);
      // Every property the constructor sets reads the same (the buffers
      // through lazy_data.ts's accessors).
      for (const key of Object.keys(rebuilt)) {
        const mine = (data as unknown as Record<string, unknown>)[key];
        const theirs = (rebuilt as unknown as Record<string, unknown>)[key];
        if (Array.isArray(theirs)) expect(mine).toEqual(theirs);
        else expect(mine).toBe(theirs);
      }
      // Zero-copy: the same memory as the exported column.
      expect(ptr(data.values)).toBe(ptr(original.values));
      expect(Bun.deepEquals([...new Vector([data])], [...new Vector([original])])).toBe(true);
    }
    imported.dispose();
    exported.release();
  });

  test("Data made without children or variadic buffers share one frozen empty array for them, lazy and eager alike; a write throws", () => {
    const eager = newData(new Int32(), 0, 2, 0, undefined, new Int32Array([1, 2]), undefined);
    expect(eager.children).toBe(noArrays);
    expect(eager.variadicBuffers).toBe(noArrays);
    const given: Data[] = [];
    expect(newData(new Struct([]), 0, 0, 0, undefined, undefined, undefined, given).children).toBe(given);
    const source = new Table({ a: vectorFromArray([1, 2], new Int32()), b: vectorFromArray([3, 4], new Int32()) }).batches[0];
    const exported = exportArray(source);
    const imported = ImportedArray.fromDeviceArray(exported.schema, exported.array);
    const [a, b] = importRecordBatch(imported).data.children;
    expect(a.children).toBe(noArrays);
    expect(b.variadicBuffers).toBe(noArrays);
    expect(Object.isFrozen(noArrays) && noArrays.length === 0).toBe(true);
    expect(() => (a.children as Data[]).push(b)).toThrow(TypeError);
    expect(b.children).toHaveLength(0);
    // What apache-arrow derives from them is its own.
    expect(a.slice(1, 1).children).toHaveLength(0);
    expect([...new Vector([a])]).toEqual([1, 2]);
    imported.dispose();
    exported.release();
  });
});
