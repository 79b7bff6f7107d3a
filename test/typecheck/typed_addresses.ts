/**
 * Compiled, never run: what the typed addresses (docs/api.md, "Typed
 * addresses") let through the type checker and what they stop. Every line
 * under `@ts-expect-error` must fail to type-check (tsc reports an unused
 * directive otherwise); every other line must compile.
 * test/structure/typecheck.test.ts checks both, and that the marked lines fail for
 * the brand (the struct named in tsc's message).
 */
import { ptr } from "bun:ffi";
import { tableFromArrays } from "apache-arrow";
import { exportArray, exportStream, importRecordBatch, importTable, importVector } from "bun-arrow-device";
import { ImportedArray, ImportedStream, structPointer } from "bun-arrow-device/raw";
import { CSchema, arrayStreamAsDeviceStream, deviceStreamAsArrayStream, relay } from "bun-arrow-device/raw";

export function typedAddresses(fromC: { schema: number; deviceArray: bigint; stream: Uint8Array }): void {
  const table = tableFromArrays({ x: Int32Array.of(1, 2, 3) });
  const h = exportArray(table.batches[0]);
  const plain = exportArray(table.batches[0], { as: "array" });
  const deviceStream = exportStream(table);
  const arrayStream = exportStream(table, { as: "stream" });

  // The handles' addresses go where their structs are expected.
  importRecordBatch(h.schema, h.array);
  importVector(plain.schema, plain.array);
  ImportedArray.fromArray(plain.schema, plain.array).dispose();
  relay(h.schema, h.array).release();
  ImportedStream.fromDeviceArrayStream(deviceStream.stream).release();
  importTable(arrayStream.stream, { as: "stream" });
  arrayStreamAsDeviceStream(arrayStream.stream).release();
  deviceStreamAsArrayStream(deviceStream.stream).release();
  CSchema.at(h.schema);

  // Raw addresses from C: structPointer states what they point to.
  importRecordBatch(structPointer("ArrowSchema", fromC.schema), structPointer("ArrowDeviceArray", fromC.deviceArray));
  ImportedStream.fromArrayStream(structPointer("ArrowArrayStream", ptr(fromC.stream))).release();

  // @ts-expect-error a swapped pair: an ArrowDeviceArray* where the ArrowSchema* goes
  importRecordBatch(h.array, h.schema);
  // @ts-expect-error a plain ArrowArray* where an ArrowDeviceArray* goes
  importRecordBatch(plain.schema, plain.array);
  // @ts-expect-error a swapped pair for a plain array
  ImportedArray.fromArray(plain.array, plain.schema);
  // @ts-expect-error an ArrowDeviceArrayStream* where an ArrowArrayStream* goes
  ImportedStream.fromArrayStream(deviceStream.stream);
  // @ts-expect-error an ArrowArrayStream* where an ArrowDeviceArrayStream* goes
  ImportedStream.fromDeviceArrayStream(arrayStream.stream);
  // @ts-expect-error an ArrowArrayStream* read as a device stream (the default)
  importTable(arrayStream.stream);
  // @ts-expect-error an ArrowDeviceArrayStream* given to the array-stream adapter
  arrayStreamAsDeviceStream(deviceStream.stream);
  // @ts-expect-error an untyped number: say what it points to with structPointer
  importRecordBatch(fromC.schema, structPointer("ArrowDeviceArray", fromC.deviceArray));
  // @ts-expect-error an array's address viewed as a schema
  CSchema.at(h.array);
}
