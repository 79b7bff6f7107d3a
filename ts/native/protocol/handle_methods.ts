/**
 * The protocol methods of the imported handles (docs/protocol.md):
 * ImportedArray and ImportedStream define them in their class bodies and
 * call these, so that every entry point's handles have them (the export
 * handles move their own structs into a capsule: exported.ts,
 * exported_stream.ts). Every method follows the kwargs rule and returns a
 * LibraryCapsule.
 *
 * Device rule: the CPU methods (`__arrow_c_array__`, `__arrow_c_stream__`)
 * are offered only for data on the CPU (device_type CPU); device data
 * offers the device methods only (the property reads undefined).
 */
import { branded } from "../../core/abi/pointers.ts";
import { DeviceType } from "../../core/abi/layout.ts";
import { Status, UnsupportedError } from "../../core/errors.ts";
import { native } from "../../core/ffi/library.ts";
import { CSchema } from "../c_structs.ts";
import { ExportedArray } from "../exported.ts";
import type { ExportedStream } from "../exported_stream.ts";
import type { ImportedArray } from "../imported_array.ts";
import type { ImportedStream } from "../imported_stream.ts";
import { arrayStreamAsDeviceStream, deviceStreamAsArrayStream } from "../stream_adapters.ts";
import { LibraryCapsule } from "./capsule.ts";
import { sameSchema, withRequested } from "./requested_schema.ts";
import { checkOptions, type ArrowCapsule, type ProtocolOptions } from "./symbols.ts";

/** A protocol method, as the handles' getters return it. */
export type ProtocolMethod = (options?: ProtocolOptions) => ArrowCapsule;

const withSchemaOption = ["requestedSchema"] as const;

/** A schema-only handle holding the schema of `exported` (moved out; the
 * rest of `exported` is released). */
function schemaOnly(exported: ExportedArray): ExportedArray {
  const handle = new ExportedArray("schema", "protocol schema");
  try {
    native.abd_schema_move(exported.schema, handle.schema);
    return handle;
  } finally {
    exported.release();
  }
}

/** ImportedArray's `__arrow_c_schema__`. */
export function importedSchemaCapsule(imported: ImportedArray, options: unknown): ArrowCapsule {
  checkOptions(options, [], "__arrow_c_schema__");
  return new LibraryCapsule(schemaOnly(imported.reexport({ as: "device_array" })));
}

/** ImportedArray's `__arrow_c_array__` / `__arrow_c_device_array__`: a
 * zero-copy re-export. A requested schema is honoured for CPU data when it
 * is the array's own; any other is refused, whatever entry point loaded
 * the handle: a re-export keeps the producer's types (a cast builds new
 * arrays: convert the array with the root entry and cast with
 * `arrowProtocol`). Device data ignores it. */
export function importedArrayCapsule(imported: ImportedArray, as: "array" | "device_array", options: unknown): ArrowCapsule {
  const method = as === "array" ? "__arrow_c_array__" : "__arrow_c_device_array__";
  const checked = checkOptions(options, withSchemaOption, method);
  return withRequested(checked, (requested) => {
    if (requested && imported.deviceType === DeviceType.CPU && !sameSchema(requested, CSchema.at(branded(imported.root.schemaAddress)))) {
      throw new UnsupportedError(Status.unsupported, `${method}: requestedSchema differs from this array's schema, and an ImportedArray re-exports its memory with the producer's types; to cast, convert it with the root entry ("bun-arrow-device": importVector, importRecordBatch) and ask arrowProtocol(converted) for the requested schema`);
    }
    return new LibraryCapsule(imported.reexport({ as }));
  });
}

/** ImportedStream's `__arrow_c_stream__` / `__arrow_c_device_stream__`:
 * the stream relayed (adapted to the other kind when asked). */
export function importedStreamCapsule(stream: ImportedStream, as: "stream" | "device_stream", options: unknown): ArrowCapsule {
  checkOptions(options, withSchemaOption, as === "stream" ? "__arrow_c_stream__" : "__arrow_c_device_stream__");
  // requestedSchema is ignored: batches pass through unconverted.
  const relayed = stream.relay();
  if (relayed.kind === as) return new LibraryCapsule(relayed);
  try {
    const adapted = as === "device_stream"
      ? arrayStreamAsDeviceStream((relayed as ExportedStream<"stream">).stream)
      : deviceStreamAsArrayStream((relayed as ExportedStream<"device_stream">).stream);
    return new LibraryCapsule(adapted);
  } finally {
    relayed.release();
  }
}
