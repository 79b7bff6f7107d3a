/**
 * The protocol methods of this library's handles (docs/protocol.md):
 * ImportedArray, ImportedStream, ExportedArray and ExportedStream define
 * them in their class bodies and call these, so that every entry point's
 * handles have them. Every method follows the kwargs rule and returns a
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
import { ExportedStream } from "../exported_stream.ts";
import { type ImportedArray } from "../imported_array.ts";
import { type ImportedStream } from "../imported_stream.ts";
import { arrayStreamAsDeviceStream, deviceStreamAsArrayStream } from "../stream_adapters.ts";
import { LibraryCapsule, moveExportedArray, moveExportedStream } from "./capsule.ts";
import { requestedSchemaCast, sameSchema, withRequested } from "./requested_schema.ts";
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

/** ImportedArray's `__arrow_c_array__` / `__arrow_c_device_array__`. A
 * requested schema is honoured for CPU data through the arrow layer's
 * cast when it is loaded (otherwise it must be the array's own schema);
 * device data ignores it. */
export function importedArrayCapsule(imported: ImportedArray, as: "array" | "device_array", options: unknown): ArrowCapsule {
  const method = as === "array" ? "__arrow_c_array__" : "__arrow_c_device_array__";
  const checked = checkOptions(options, withSchemaOption, method);
  return withRequested(checked, (requested) => {
    if (requested && imported.deviceType === DeviceType.CPU) {
      const cast = requestedSchemaCast();
      if (cast !== null) {
        const exported = cast(imported, requested, as);
        if (exported !== null) return new LibraryCapsule(exported);
      } else if (!sameSchema(requested, CSchema.at(branded(imported.root.schemaAddress)))) {
        throw new UnsupportedError(Status.unsupported, `${method}: requestedSchema differs from this array's schema, and casting to it needs apache-arrow, which this program has not loaded; import the root entry ("bun-arrow-device") to cast`);
      }
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

/** The methods of ExportedArray and ExportedStream: the structs moved
 * into a capsule. */
export function exportedCapsule(handle: ExportedArray | ExportedStream, method: string, options: unknown): ArrowCapsule {
  // requestedSchema is ignored: the structs are already built.
  checkOptions(options, method === "__arrow_c_schema__" ? [] : withSchemaOption, method);
  return new LibraryCapsule(handle instanceof ExportedStream ? moveExportedStream(handle) : moveExportedArray(handle));
}
