/**
 * A conversion that fails is typed and releases what it
 * took. A buffer larger than a JS ArrayBuffer can be (4 GiB in Bun) is
 * honest Arrow data; here it lies over a reserved PROT_NONE range
 * (c_producer.c's fx_reserve), so any read of it would crash the test.
 * Its conversion is refused before any view or owner reference is made,
 * and the producer's release runs exactly once at dispose.
 */
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import { importVector } from "../../ts/index.ts";
import { ImportedArray } from "../../ts/raw.ts";
import { fx } from "../helpers/fixtures.ts";
import { produceDevice } from "../helpers/producer.ts";
import { withCode } from "../helpers/errors.ts";
import { expectSettled } from "../helpers/settled.ts";

const huge = 5 * 2 ** 30;
const reserved = fx.fx_reserve(huge)!;

afterAll(() => fx.fx_unreserve(reserved, huge));

afterEach(async () => {
  await expectSettled();
  expect(fx.fx_double_releases()).toBe(0n);
});

/** Dictionary indices (int8) over the huge range, then a small utf8
 * dictionary: the huge buffer comes first in the owner's buffer table, so
 * views of the buffers after it are at stake too. */
function produceHuge() {
  fx.fx_reset_counts();
  return produceDevice({
    format: "c", length: huge, nullCount: 0, buffers: [null, Number(reserved)],
    dictionary: { format: "u", length: 2, nullCount: 0, buffers: [null, new Int32Array([0, 1, 3]), new TextEncoder().encode("abc")] },
  });
}

describe("a buffer too large for JS", () => {
  test("importVector throws a typed error naming the buffer; dispose releases the producer once", () => {
    expect(reserved).not.toBeNull();
    const { schema, array } = produceHuge();
    const imported = ImportedArray.fromDeviceArray(schema, array);
    expect(() => importVector(imported)).toThrow(withCode("unsupported"));
    expect(() => importVector(imported)).toThrow(/buffer 1 of node 0 "" \(c\) is 5368709120 bytes/);
    expect(() => imported.root.buffer(1)).toThrow(withCode("unsupported"));
    expect(imported.root.bufferSize(1)).toBe(huge); // the raw view still reads
    expect(fx.fx_live_nodes()).toBe(2n);
    imported.dispose();
    expect(fx.fx_live_nodes()).toBe(0n);
    expect(fx.fx_array_releases()).toBe(2n); // root and dictionary, once each
  });

  test("importVector throws the typed error and releases the producer before returning", () => {
    const { schema, array } = produceHuge();
    expect(() => importVector(schema, array, { as: "device_array" })).toThrow(withCode("unsupported"));
    expect(fx.fx_live_nodes()).toBe(0n);
    expect(fx.fx_array_releases()).toBe(2n);
  });
});

describe("an import refused on one argument", () => {
  test("releases the other, valid struct once, and its error says so (a retry needs new structs)", () => {
    fx.fx_reset_counts();
    const produced = produceDevice({ format: "i", length: 2, nullCount: 0, buffers: [null, new Int32Array([1, 2])] });
    let error: unknown = null;
    try {
      ImportedArray.fromDeviceArray(8 as never, produced.array);
    } catch (caught) {
      error = caught;
    }
    expect((error as { code?: string }).code).toBe("invalid_argument");
    expect((error as Error).message).toStartWith("ImportedArray.fromDeviceArray: schema: 0x8 is not readable memory");
    expect((error as Error).message).toEndWith("; the deviceArray given was released too (a failed import owns its structs: retry with new ones)");
    expect(produced.array.released).toBe(true);
    expect(fx.fx_array_releases()).toBe(1n);
    expect(fx.fx_schema_releases()).toBe(0n);
    // The producer's schema was never given: the caller still owns it.
    expect(produced.schema.released).toBe(false);
    produced.schema.dispose();
    produced.array.dispose();
    expect(fx.fx_schema_releases()).toBe(1n);
  });
});
