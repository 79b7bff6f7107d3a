/**
 * The producer half of the protocol (docs/protocol.md): the methods that
 * apache-arrow objects get through `arrowProtocol(x)` or the opt-in
 * `installArrowProtocol()`, and that this library's own handles
 * (ImportedArray, ImportedStream, ExportedArray, ExportedStream) always
 * have. Every method follows the kwargs rule and returns a LibraryCapsule.
 *
 * Device rule: the CPU methods (`__arrow_c_array__`, `__arrow_c_stream__`)
 * are offered only for data on the CPU (device_type CPU); device data
 * offers the device methods only (the property reads undefined).
 */
import { Data, Field, RecordBatch, Table, Vector, type DataType } from "apache-arrow";
import { DeviceType } from "../../core/abi/layout.ts";
import { InvalidArgumentError, Status } from "../../core/errors.ts";
import { native } from "../../core/ffi/library.ts";
import { exportArray, exportSchema } from "../export.ts";
import { exportStream } from "../stream_export.ts";
import { toVector } from "../import.ts";
import { ExportedArray } from "../../native/exported.ts";
import { ExportedStream } from "../../native/exported_stream.ts";
import { ImportedArray } from "../../native/imported.ts";
import { ImportedStream } from "../../native/imported_stream.ts";
import { arrayStreamAsDeviceStream, deviceStreamAsArrayStream } from "../../native/stream_adapters.ts";
import { LibraryCapsule, moveExportedArray, moveExportedStream } from "../../native/protocol/capsule.ts";
import { requestedBatch, requestedColumn, requestedStructColumn, requestedTable, withRequested, type Column } from "./requested.ts";
import {
  ArrowCArray, ArrowCDeviceArray, ArrowCDeviceStream, ArrowCSchema, ArrowCStream, checkOptions, type ArrowCapsule, type ProtocolOptions,
} from "../../native/protocol/symbols.ts";

const withSchemaOption = ["requestedSchema"] as const;

/** The apache-arrow objects the protocol wraps. */
export type ArrowSource = Table | RecordBatch | Vector | Data;

/** The methods a producer offers (some may be absent). */
export type ProtocolMethods = {
  [ArrowCSchema]?: (options?: ProtocolOptions) => ArrowCapsule;
  [ArrowCArray]?: (options?: ProtocolOptions) => ArrowCapsule;
  [ArrowCDeviceArray]?: (options?: ProtocolOptions) => ArrowCapsule;
  [ArrowCStream]?: (options?: ProtocolOptions) => ArrowCapsule;
  [ArrowCDeviceStream]?: (options?: ProtocolOptions) => ArrowCapsule;
};

// ---- apache-arrow sources --------------------------------------------------

/** A Vector or Data as one column (a single chunk). */
function columnOf(source: Vector | Data): Column {
  const data = source instanceof Vector ? singleChunk(source) : source;
  return { data, field: new Field("", data.type as DataType, true) };
}

function singleChunk(vector: Vector): Data {
  if (vector.data.length !== 1) {
    throw new InvalidArgumentError(Status.invalid_argument, `a Vector with ${vector.data.length} chunks is not one Arrow array; use each chunk (vector.data[i])`);
  }
  return vector.data[0];
}

function arrowSchemaCapsule(source: ArrowSource, options: unknown): ArrowCapsule {
  checkOptions(options, [], "__arrow_c_schema__");
  if (source instanceof Table || source instanceof RecordBatch) return new LibraryCapsule(exportSchema(source.schema));
  return new LibraryCapsule(exportSchema(columnOf(source).field));
}

function arrowArrayCapsule(source: RecordBatch | Vector | Data, as: "array" | "device_array", options: unknown): ArrowCapsule {
  const checked = checkOptions(options, withSchemaOption, as === "array" ? "__arrow_c_array__" : "__arrow_c_device_array__");
  return withRequested(checked, (requested) => {
    if (source instanceof RecordBatch) {
      const batch = (requested && requestedBatch(source, requested)) ?? source;
      return new LibraryCapsule(exportArray(batch, { as }));
    }
    const column = columnOf(source);
    const chosen = (requested && requestedColumn(column, requested)) ?? column;
    return new LibraryCapsule(exportArray(chosen.data, { as, field: chosen.field }));
  });
}

function arrowStreamCapsule(source: Table, as: "stream" | "device_stream", options: unknown): ArrowCapsule {
  const checked = checkOptions(options, withSchemaOption, as === "stream" ? "__arrow_c_stream__" : "__arrow_c_device_stream__");
  return withRequested(checked, (requested) => {
    const table = (requested && requestedTable(source, requested)) ?? source;
    return new LibraryCapsule(exportStream(table, { as }));
  });
}

/** The protocol methods of an apache-arrow object: a Table offers schema
 * and the two streams; a RecordBatch, Vector or Data schema and the two
 * arrays. */
function arrowMethods(source: ArrowSource): ProtocolMethods {
  const schema = (options?: ProtocolOptions) => arrowSchemaCapsule(source, options);
  if (source instanceof Table) {
    return {
      [ArrowCSchema]: schema,
      [ArrowCStream]: (options) => arrowStreamCapsule(source, "stream", options),
      [ArrowCDeviceStream]: (options) => arrowStreamCapsule(source, "device_stream", options),
    };
  }
  return {
    [ArrowCSchema]: schema,
    [ArrowCArray]: (options) => arrowArrayCapsule(source, "array", options),
    [ArrowCDeviceArray]: (options) => arrowArrayCapsule(source, "device_array", options),
  };
}

function isArrowSource(source: unknown): source is ArrowSource {
  return source instanceof Table || source instanceof RecordBatch || source instanceof Vector || source instanceof Data;
}

/** A protocol producer over an apache-arrow Table, RecordBatch, Vector or
 * Data (zero-copy; the object stays usable). `source` is kept as `value`. */
export function arrowProtocol<T extends ArrowSource>(source: T): ProtocolMethods & { readonly value: T } {
  if (!isArrowSource(source)) {
    throw new InvalidArgumentError(Status.invalid_argument, `arrowProtocol: expected an apache-arrow Table, RecordBatch, Vector or Data, not ${source === null ? "null" : typeof source === "object" ? `a ${(source as object).constructor?.name}` : typeof source}`);
  }
  return Object.assign(arrowMethods(source), { value: source });
}

const prototypes = [
  { proto: Table.prototype, methods: [ArrowCSchema, ArrowCStream, ArrowCDeviceStream] },
  { proto: RecordBatch.prototype, methods: [ArrowCSchema, ArrowCArray, ArrowCDeviceArray] },
  { proto: Vector.prototype, methods: [ArrowCSchema, ArrowCArray, ArrowCDeviceArray] },
  { proto: Data.prototype, methods: [ArrowCSchema, ArrowCArray, ArrowCDeviceArray] },
] as const;

/** Whether `installArrowProtocol()` is in effect. */
export function arrowProtocolInstalled(): boolean {
  return Object.prototype.hasOwnProperty.call(Table.prototype, ArrowCSchema);
}

/** Opt-in: gives apache-arrow's Table, RecordBatch, Vector and Data (this
 * module instance's classes) the protocol methods on their prototypes, so
 * any protocol consumer accepts them directly. Off by default; idempotent;
 * `uninstallArrowProtocol()` undoes it. */
export function installArrowProtocol(): void {
  for (const { proto, methods } of prototypes) {
    for (const symbol of methods) {
      Object.defineProperty(proto, symbol, {
        configurable: true,
        enumerable: false,
        writable: true,
        value: function (this: ArrowSource, options?: ProtocolOptions) {
          return (arrowMethods(this)[symbol] as (options?: ProtocolOptions) => ArrowCapsule)(options);
        },
      });
    }
  }
}

/** Removes what `installArrowProtocol()` added. Idempotent. */
export function uninstallArrowProtocol(): void {
  for (const { proto, methods } of prototypes) for (const symbol of methods) delete (proto as unknown as Record<symbol, unknown>)[symbol];
}

// ---- this library's handles -----------------------------------------------

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

function importedArrayCapsule(imported: ImportedArray, as: "array" | "device_array", options: unknown): ArrowCapsule {
  const checked = checkOptions(options, withSchemaOption, as === "array" ? "__arrow_c_array__" : "__arrow_c_device_array__");
  return withRequested(checked, (requested) => {
    if (requested && imported.deviceType === DeviceType.CPU) {
      // Through apache-arrow views of the same memory (zero-copy).
      const vector = toVector(imported);
      const column = columnOf(vector);
      // A record batch from C (a struct without nulls) gets the per-column
      // casts an apache-arrow RecordBatch gets.
      const chosen = requestedColumn(column, requested) ?? requestedStructColumn(column, requested);
      if (chosen) return new LibraryCapsule(exportArray(chosen.data, { as, field: chosen.field }));
    }
    return new LibraryCapsule(imported.reexport({ as }));
  });
}

function importedStreamCapsule(stream: ImportedStream, as: "stream" | "device_stream", options: unknown): ArrowCapsule {
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

function exportedCapsule(handle: ExportedArray | ExportedStream, method: string, options: unknown): ArrowCapsule {
  // requestedSchema is ignored: the structs are already built.
  checkOptions(options, method === "__arrow_c_schema__" ? [] : withSchemaOption, method);
  return new LibraryCapsule(handle instanceof ExportedStream ? moveExportedStream(handle) : moveExportedArray(handle));
}

/** Defines `symbol` on `proto` as a getter: the method when `offered(this)`,
 * otherwise undefined. */
function offer<T>(proto: object, symbol: symbol, offered: (self: T) => boolean, method: (self: T, options?: unknown) => ArrowCapsule): void {
  Object.defineProperty(proto, symbol, {
    configurable: true,
    enumerable: false,
    get(this: T) {
      if (!offered(this)) return undefined;
      return (options?: unknown) => method(this, options);
    },
  });
}

const onCpu = (x: { deviceType: number }) => x.deviceType === DeviceType.CPU;
const always = () => true;

offer<ImportedArray>(ImportedArray.prototype, ArrowCSchema, always, (self, options) => {
  checkOptions(options, [], "__arrow_c_schema__");
  return new LibraryCapsule(schemaOnly(self.reexport({ as: "device_array" })));
});
offer<ImportedArray>(ImportedArray.prototype, ArrowCArray, onCpu, (self, options) => importedArrayCapsule(self, "array", options));
offer<ImportedArray>(ImportedArray.prototype, ArrowCDeviceArray, always, (self, options) => importedArrayCapsule(self, "device_array", options));
offer<ImportedStream>(ImportedStream.prototype, ArrowCStream, onCpu, (self, options) => importedStreamCapsule(self, "stream", options));
offer<ImportedStream>(ImportedStream.prototype, ArrowCDeviceStream, always, (self, options) => importedStreamCapsule(self, "device_stream", options));
offer<ExportedArray>(ExportedArray.prototype, ArrowCSchema, (self) => self.kind === "schema", (self, options) => exportedCapsule(self, "__arrow_c_schema__", options));
offer<ExportedArray>(ExportedArray.prototype, ArrowCArray, (self) => self.kind === "array", (self, options) => exportedCapsule(self, "__arrow_c_array__", options));
offer<ExportedArray>(ExportedArray.prototype, ArrowCDeviceArray, (self) => self.kind === "device_array", (self, options) => exportedCapsule(self, "__arrow_c_device_array__", options));
offer<ExportedStream>(ExportedStream.prototype, ArrowCStream, (self) => self.kind === "stream", (self, options) => exportedCapsule(self, "__arrow_c_stream__", options));
offer<ExportedStream>(ExportedStream.prototype, ArrowCDeviceStream, (self) => self.kind === "device_stream", (self, options) => exportedCapsule(self, "__arrow_c_device_stream__", options));
