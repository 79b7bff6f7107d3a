/**
 * The producer half of the protocol (docs/protocol.md) for apache-arrow
 * objects: the methods they get through `arrowProtocol(x)` or the opt-in
 * `installArrowProtocol()`. Every method follows the kwargs rule and
 * returns a LibraryCapsule. This library's own handles define theirs in
 * ts/native (native/protocol/handle_methods.ts), the same whatever entry
 * point loaded them.
 */
import { Data, Field, RecordBatch, Table, Vector, type DataType } from "apache-arrow";
import { InvalidArgumentError, Status } from "../../core/errors.ts";
import { exportArray, exportSchema } from "../export.ts";
import { exportStream } from "../stream_api.ts";
import { LibraryCapsule } from "../../native/protocol/capsule.ts";
import { requestedBatch, requestedColumn, requestedTable, withRequested, type Column } from "./requested.ts";
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
