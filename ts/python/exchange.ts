/**
 * The Arrow PyCapsule protocol between JS and the Python interpreter in
 * this process.
 *
 * Python to JS (`fromPython`): calls the object's protocol method (device
 * methods first), moves the structs out of the capsules (the capsules are
 * left consumed) and imports them: an ImportedArray or ImportedStream over
 * the producer's memory, zero-copy. The producer's release runs exactly
 * once, under the GIL, on whatever thread drops the last view.
 *
 * JS to Python (`toPython`): a Python object implementing the protocol
 * (bootstrap.ts) over JS data, zero-copy. Arrays and batch lists are
 * imported into native owners (the same buffers; the JS buffers stay alive
 * through the export's keepalive until the last Python consumer releases),
 * so every protocol call makes new structs natively, on any thread, and a
 * Table can be read as many times as Python asks. A one-shot source (an
 * iterator, a reader, an exported or imported stream) can be taken once.
 */
import { branded } from "../core/abi/pointers.ts";
import { type Pointer } from "bun:ffi";
import { ArrowDeviceArrayLayout, ArrowDeviceArrayStreamLayout, ArrowSchemaLayout } from "../core/abi/layout.ts";
import { optionsArg } from "../core/args.ts";
import { InvalidArgumentError, OutOfMemoryError, Status } from "../core/errors.ts";
import { native } from "../core/ffi/library.ts";
import { CSchema } from "../native/c_structs.ts";
import { ExportedArray } from "../native/exported.ts";
import { ExportedStream } from "../native/exported_stream.ts";
import { ImportedArray, type ImportOptions } from "../native/imported.ts";
import { importTaken } from "../native/import_structs.ts";
import { validationLevelArg } from "../core/abi/layout.ts";
import { ImportedStream } from "../native/imported_stream.ts";
import { deviceStreamAsArrayStream } from "../native/stream_adapters.ts";
import { exportArray, exportSchema } from "../arrow/export.ts";
import { exportStream } from "../arrow/stream_api.ts";
import { shapeOf } from "../arrow/source_shape.ts";
import { PythonError } from "./errors.ts";
import { PyObject, loadPython, loadedPython, pythonShim, pythonToken, type Python } from "./interpreter.ts";
import { ErrorText } from "./shim.ts";
import { nativeArray, nativeArrayOf } from "../core/ffi/native_arrays.ts";

/** Protocol methods by the kind numbers of native/abd_python.h. */
const Kind = { device_array: 0, array: 1, device_stream: 2, stream: 3, schema: 4 } as const;
/** A protocol method by kind: "device_array" (`__arrow_c_device_array__`), "array", "device_stream", "stream" or "schema". */
export type PythonMethodKind = keyof typeof Kind;
const preferArray = -1;
const preferStream = -2;

/** Options of `fromPython`: the import's validation level, and which protocol method is used. */
export type FromPythonOptions = ImportOptions & {
  /** Which the object is read as when it offers both: "array" (default)
   * or "stream". Device methods are preferred within either. */
  prefer?: "array" | "stream";
  /** Exactly this protocol method (no fallback). */
  method?: PythonMethodKind;
};

function pythonOf(object: PyObject, fn = "fromPython"): Python {
  if (!(object instanceof PyObject)) throw new InvalidArgumentError(Status.invalid_argument, `${fn}: expected a PyObject (from loadPython().eval(...)), got ${describe(object)}`);
  return object.python;
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (typeof value !== "object") return typeof value;
  return (value as object).constructor?.name ?? "object";
}

/** Calls the protocol; the moved structs land in a native slot: schema at
 * 0, the array or stream after it. Returns the kind. */
function take(object: PyObject, wanted: number, slot: number): number {
  const error = new ErrorText();
  const kind = pythonShim(pythonOf(object)).abdpy_import(object.address as Pointer, wanted, slot as Pointer, (slot + ArrowSchemaLayout.size) as Pointer, error.bytes, error.bytes.length);
  if (kind < 0) throw new PythonError("reading Arrow data from Python", error.text);
  return kind;
}

function withSlot<T>(use: (slot: number) => T): T {
  const bytes = ArrowSchemaLayout.size + Math.max(ArrowDeviceArrayLayout.size, ArrowDeviceArrayStreamLayout.size);
  const slot = native.abd_alloc_zeroed(bytes);
  if (!slot) throw new OutOfMemoryError(Status.out_of_memory, "out of memory allocating an import slot");
  try {
    return use(slot);
  } finally {
    native.abd_free(slot as Pointer);
  }
}

/**
 * Imports any Python object implementing the Arrow PyCapsule protocol
 * (pyarrow, Polars, DuckDB, nanoarrow, ...): an ImportedArray for
 * `__arrow_c_device_array__` / `__arrow_c_array__`, an ImportedStream for
 * `__arrow_c_device_stream__` / `__arrow_c_stream__`. Zero-copy; the
 * producer's release runs exactly once. Throws PythonError when the object
 * implements none of them or its method raises (nothing is imported then).
 */
export function fromPython(object: PyObject, options: FromPythonOptions = {}): ImportedArray | ImportedStream {
  pythonOf(object);
  optionsArg("fromPython", "options", options, ["prefer", "method", "validation"]);
  // Only the import's own option goes on: the others are this function's.
  const importOptions: ImportOptions = options.validation === undefined ? {} : { validation: options.validation };
  let wanted: number = options.prefer === "stream" ? preferStream : preferArray;
  if (options.method !== undefined) {
    if (!(options.method in Kind) || options.method === "schema") {
      throw new InvalidArgumentError(Status.invalid_argument, `method "${options.method}": expected device_array, array, device_stream or stream (schemas: schemaFromPython)`);
    }
    wanted = Kind[options.method];
  }
  if (options.prefer !== undefined && options.prefer !== "array" && options.prefer !== "stream") {
    throw new InvalidArgumentError(Status.invalid_argument, `prefer "${options.prefer}": expected "array" or "stream"`);
  }
  // Checked before the producer is asked for anything: nothing to release yet.
  const level = validationLevelArg("fromPython", importOptions);
  return withSlot((slot) => {
    const at = slot + ArrowSchemaLayout.size;
    const kind = take(object, wanted, slot);
    // The shim moved the producer's structs into this slot: its word, not
    // an address typed into JS, so they are not probed (docs/validation.md).
    switch (kind) {
      case Kind.device_array: return importTaken("device_array", slot, at, level);
      case Kind.array: return importTaken("array", slot, at, level);
      case Kind.device_stream: return ImportedStream.fromDeviceArrayStream(branded(at), importOptions);
      case Kind.stream: return ImportedStream.fromArrayStream(branded(at), importOptions);
      default:
        native.abd_schema_release(at as Pointer);
        throw new InvalidArgumentError(Status.invalid_argument, "this Python object only has __arrow_c_schema__ (no data): read it with schemaFromPython");
    }
  });
}

/** Imports a Python object's `__arrow_c_schema__` as an owned CSchema
 * (moved out of the capsule). */
export function schemaFromPython(object: PyObject): CSchema {
  pythonOf(object, "schemaFromPython");
  const schema = CSchema.allocate();
  try {
    withSlot((slot) => {
      take(object, Kind.schema, slot);
      CSchema.at(branded(slot + ArrowSchemaLayout.size)).move(schema);
    });
  } catch (error) {
    schema.dispose();
    throw error;
  }
  return schema;
}

/** What `toPython` accepts. */
export type PythonSource = unknown;

/** The native owner of `exported` (its structs moved in), with one
 * reference for the caller, plus what the shim needs to know of it. */
function ownerOf(exported: ExportedArray): { owner: number; schema: number; deviceType: number } {
  const imported = exported.kind === "array"
    ? ImportedArray.fromArray(exported.schema, (exported as ExportedArray<"array">).array, { validation: "minimal" })
    : ImportedArray.fromDeviceArray(exported.schema, (exported as ExportedArray<"device_array">).array, { validation: "minimal" });
  try {
    const owner = imported.ownerAddress;
    native.abd_owner_retain(owner as Pointer, 1);
    return { owner, schema: imported.schemaAddress, deviceType: imported.deviceType };
  } finally {
    imported.dispose();
  }
}

function sourceArray(python: Python, exported: ExportedArray): PyObject {
  const { owner, schema, deviceType } = ownerOf(exported);
  const error = new ErrorText();
  // The shim takes the owner reference whatever happens.
  const object = pythonShim(python).abdpy_source_array(owner as Pointer, schema as Pointer, deviceType, error.bytes, error.bytes.length);
  if (object === null) throw new PythonError("making a Python array", error.text);
  return new PyObject(pythonToken, python, object);
}

function sourceStream(python: Python, stream: ExportedStream): PyObject {
  if (stream.kind === "device_stream") {
    using plain = deviceStreamAsArrayStream((stream as ExportedStream<"device_stream">).stream);
    return sourceStream(python, plain);
  }
  const error = new ErrorText();
  const object = pythonShim(python).abdpy_source_stream(stream.stream, error.bytes, error.bytes.length);
  if (object === null) throw new PythonError("making a Python stream", error.text);
  return new PyObject(pythonToken, python, object);
}

function sourceSchema(python: Python, exported: ExportedArray): PyObject {
  const error = new ErrorText();
  const object = pythonShim(python).abdpy_source_schema(exported.schema, error.bytes, error.bytes.length);
  if (object === null) throw new PythonError("making a Python schema", error.text);
  return new PyObject(pythonToken, python, object);
}

function sourceBatches(python: Python, schema: Parameters<typeof exportSchema>[0], batches: Parameters<typeof exportArray>[0][]): PyObject {
  const owners: number[] = [];
  try {
    for (const batch of batches) {
      using exported = exportArray(batch);
      owners.push(ownerOf(exported).owner);
    }
  } catch (error) {
    for (const owner of owners) native.abd_owner_release(owner as Pointer);
    throw error;
  }
  const list = nativeArrayOf(BigUint64Array, owners.map(BigInt));
  using exportedSchema = (() => {
    try {
      return exportSchema(schema);
    } catch (error) {
      for (const owner of owners) native.abd_owner_release(owner as Pointer);
      throw error;
    }
  })();
  const error = new ErrorText();
  // The shim takes the owner references and the schema whatever happens.
  const object = pythonShim(python).abdpy_source_table(exportedSchema.schema, owners.length > 0 ? list : null, owners.length, error.bytes, error.bytes.length);
  if (object === null) throw new PythonError("making a Python table", error.text);
  return new PyObject(pythonToken, python, object);
}

/**
 * A Python object over JS Arrow data, implementing the Arrow PyCapsule
 * protocol, zero-copy:
 * - apache-arrow RecordBatch, Vector, Data; ExportedArray (its structs are
 *   moved, as by any consumer); ImportedArray (re-exported): `Array`
 *   (`__arrow_c_array__`, `__arrow_c_device_array__`, `__arrow_c_schema__`);
 *   data on another device gets only the device method.
 * - apache-arrow Table or RecordBatch[]: `Stream`, readable any number of
 *   times (`__arrow_c_stream__`, `__arrow_c_device_stream__`).
 * - A RecordBatchReader, an iterable of batches, an ExportedStream (moved),
 *   an ImportedStream (relayed): `Stream`, readable once.
 * - apache-arrow Schema, Field, DataType: `Schema` (`__arrow_c_schema__`).
 * Loads Python (`loadPython()`) if it is not loaded yet.
 */
export function toPython(source: PythonSource): PyObject {
  const python = loadedPython() ?? loadPython();
  if (source instanceof PyObject) throw new InvalidArgumentError(Status.invalid_argument, "toPython: this is already a Python object");
  if (source instanceof ExportedArray) return source.kind === "schema" ? sourceSchema(python, source) : sourceArray(python, source);
  if (source instanceof ImportedArray) {
    using exported = source.reexport();
    return sourceArray(python, exported);
  }
  if (source instanceof ExportedStream) return sourceStream(python, source);
  if (source instanceof ImportedStream) {
    using relayed = source.relay();
    return sourceStream(python, relayed);
  }
  const shape = shapeOf(source);
  switch (shape?.shape) {
    case "array": {
      using exported = exportArray(shape.source);
      return sourceArray(python, exported);
    }
    case "batches": return sourceBatches(python, shape.schema, shape.batches);
    case "schema": {
      using exported = exportSchema(shape.source);
      return sourceSchema(python, exported);
    }
    case "stream": {
      using exported = exportStream(shape.source, { as: "stream" });
      return sourceStream(python, exported);
    }
    default:
      throw new InvalidArgumentError(Status.invalid_argument, `toPython: expected Arrow data (an apache-arrow Table, RecordBatch, Vector, Data, Schema, Field or DataType; a RecordBatchReader or iterable of batches; or this library's ExportedArray, ExportedStream, ImportedArray, ImportedStream), got ${describe(source)}`);
  }
}
