/**
 * C Data Interface schemas -> apache-arrow types (the import direction; the
 * export direction is arrow/formats.ts).
 *
 * Reads a RawArray node (its format string, flags, name, metadata,
 * children and dictionary, all already validated natively) and builds the
 * apache-arrow DataType / Field / Schema. The classes are the generic ones
 * apache-arrow's own IPC reader creates (Int, Float, Timestamp, ...), so
 * apache-arrow's comparators treat both alike.
 *
 * - Extension types arrive as their storage type; `ARROW:extension:name`
 *   and `ARROW:extension:metadata` stay in the field's metadata (apache-arrow
 *   21 has no extension types; its IPC reader does the same).
 * - Dictionaries get a fresh apache-arrow dictionary id (the C interface has
 *   none), keep their ordered flag, and nest.
 * - A NULL name becomes "" (apache-arrow names are strings); empty and
 *   repeated names are kept as they are.
 * - List-view, large list-view and run-end encoded have no apache-arrow
 *   type: converting them throws UnsupportedError naming the type, unless
 *   `materialize: true`, which maps them to List / LargeList / the values
 *   type (arrow/data_builder.ts then copies the data into that layout).
 */
import {
  Binary, Bool, DataType, Date_, DateUnit, Decimal, Dictionary, Duration, Field, FixedSizeBinary,
  FixedSizeList, Float, Int, Interval, IntervalUnit, LargeBinary, LargeUtf8, List, Map_, Null, Precision,
  Schema, Struct, Time, Timestamp, TimeUnit, Union, UnionMode, Utf8,
} from "apache-arrow";
// Not in every apache-arrow release: through the version-checked module.
import { BinaryView, LargeList, Utf8View } from "./arrow_module.ts";
import { Flags, NodeWord } from "../core/abi/layout.ts";
import { ArrowDeviceError, InvalidArgumentError, InvalidFormatError, InvalidLayoutError, OutOfMemoryError, Status, UnsupportedError } from "../core/errors.ts";
import { booleanArg, argumentError, optionsArg } from "../core/args.ts";
import { ImportedArray, RawArray } from "../native/imported.ts";
import { nodeSchemaOf, nodeWordOf } from "../native/batch_source.ts";
import { arrowKindError, isDataType } from "./arrow_args.ts";

/** Options of the conversions to apache-arrow (`importVector`, `importTable`, ...). */
export type ConvertOptions = {
  /**
   * Convert list-view, large list-view and run-end encoded arrays, which
   * apache-arrow 21 cannot represent, into List / LargeList / plain arrays
   * of the values type. This copies (the offsets of list views whose
   * ranges are not back to back, and every run's values); the default is to
   * throw UnsupportedError naming the type.
   */
  materialize?: boolean;
};

const convertOptionKeys = ["materialize"] as const;

/** Checks `fn`'s RawArray (`param`) and ConvertOptions (plus `extraKeys`,
 * which the caller checks); returns clean ConvertOptions. */
export function convertArgs(fn: string, param: string, raw: unknown, rawKind: "RawArray" | "ImportedArray", options: unknown, extraKeys: readonly string[] = []): ConvertOptions {
  const ok = rawKind === "RawArray" ? raw instanceof RawArray : raw instanceof ImportedArray;
  if (!ok) throw argumentError(fn, param, rawKind === "RawArray" ? "a RawArray (e.g. imported.root)" : "an ImportedArray", raw);
  return convertOptionsArg(fn, options, extraKeys);
}

/** The clean ConvertOptions of a call without options (read-only). */
const noConvertOptions: ConvertOptions = Object.freeze({ materialize: undefined });

/** Checks `fn`'s ConvertOptions (plus `extraKeys`); returns clean ones. */
export function convertOptionsArg(fn: string, options: unknown, extraKeys: readonly string[] = []): ConvertOptions {
  // No options (every call of a plain conversion): nothing to check.
  if (options === undefined || options === noConvertOptions) return noConvertOptions;
  const checked = optionsArg(fn, "options", options as ConvertOptions | undefined, [...convertOptionKeys, ...extraKeys]);
  booleanArg(fn, "options.materialize", checked.materialize, true);
  return { materialize: checked.materialize };
}

/** The apache-arrow type of `raw` (a dictionary type if it has a dictionary). */
export function toDataType(raw: RawArray, options: ConvertOptions = {}): DataType {
  return dataTypeOf(raw, convertArgs("toDataType", "raw", raw, "RawArray", options));
}

/** The apache-arrow field of `raw`: name ("" for NULL), type, nullability
 * (ARROW_FLAG_NULLABLE) and metadata (extension keys included). */
export function toField(raw: RawArray, options: ConvertOptions = {}): Field {
  return fieldOf(raw, convertArgs("toField", "raw", raw, "RawArray", options));
}

/** The apache-arrow schema of a struct node (a record batch's root): its
 * children become the fields, its metadata the schema metadata. */
export function toSchema(raw: RawArray, options: ConvertOptions = {}): Schema {
  return schemaOf(raw, convertArgs("toSchema", "raw", raw, "RawArray", options));
}

/** apache-arrow's dictionary index types (its `TKeys`, not exported). */
type TKeys = Dictionary["indices"];

const timeUnits: Record<string, TimeUnit> = { s: TimeUnit.SECOND, m: TimeUnit.MILLISECOND, u: TimeUnit.MICROSECOND, n: TimeUnit.NANOSECOND };

/** A short, human path of a node for messages: `"name" (format)`. */
export function describeNode(raw: RawArray): string {
  return `"${raw.name ?? ""}" (${raw.format})`;
}

/** The path of a node from the root, for messages:
 * `"" (+s) > "a" (+l) > "item" (i)`. */
export function nodePath(raw: RawArray): string {
  const parts: string[] = [];
  const imported = raw.imported;
  // Parents come from the node table (the root's is -1); depth is bounded
  // by validation, the guard only keeps a corrupt table from looping.
  for (let node = raw.index, steps = 0; node >= 0 && steps <= 130; node = nodeWordOf(imported, node, NodeWord.parent), steps++) {
    const schema = nodeSchemaOf(imported, node);
    parts.push(`"${schema.name ?? ""}" (${schema.format})`);
  }
  return parts.reverse().join(" > ");
}

/**
 * Runs one conversion step of node `raw` and turns whatever plain error
 * escapes it (a RangeError from an allocation or a typed-array view, a
 * TypeError from apache-arrow) into this library's typed errors, naming
 * the node's path: conversion promises typed errors only.
 */
export function typedConversion<T>(raw: RawArray, step: () => T): T {
  try {
    return step();
  } catch (error) {
    throw conversionError(raw, error);
  }
}

/** What `typedConversion` throws for `error` escaping a step of `raw`
 * (for hot paths that catch themselves rather than pass a closure). */
export function conversionError(raw: RawArray, error: unknown): unknown {
  if (error instanceof ArrowDeviceError) return error;
  const message = error instanceof Error ? error.message : String(error);
  const where = nodePath(raw);
  if (error instanceof RangeError && /memory|allocat|too large|length/i.test(message)) {
    return new OutOfMemoryError(Status.out_of_memory, `${where}: converting needs more memory than is available (${message})`);
  }
  return new InvalidLayoutError(Status.invalid_layout, `${where}: cannot convert (${message})`);
}

/** `convert(imported, options)`, then the end of `imported`, a handle
 * that nothing else holds: its memory then belongs to the GC (the
 * converted object's views hold it), or, if conversion throws, is
 * released now. */
export function convertAndEnd<T, O>(imported: ImportedArray, convert: (imported: ImportedArray, options: O) => T, options: O): T {
  try {
    const result = convert(imported, options);
    imported.releaseToGC();
    return result;
  } catch (error) {
    imported.dispose();
    throw error;
  }
}

function unit(raw: RawArray, format: string, at: number): TimeUnit {
  const u = timeUnits[format[at]];
  if (u === undefined) throw new InvalidFormatError(Status.invalid_format, `format "${format}" of ${describeNode(raw)} has an unknown time unit`);
  return u;
}

function indexType(raw: RawArray): TKeys {
  switch (raw.typeId) {
    case "int8": return new Int(true, 8) as TKeys;
    case "uint8": return new Int(false, 8) as TKeys;
    case "int16": return new Int(true, 16) as TKeys;
    case "uint16": return new Int(false, 16) as TKeys;
    case "int32": return new Int(true, 32) as TKeys;
    case "uint32": return new Int(false, 32) as TKeys;
    // apache-arrow's TKeys stops at 32 bits, but 64-bit indices read fine.
    case "int64": return new Int(true, 64) as unknown as TKeys;
    case "uint64": return new Int(false, 64) as unknown as TKeys;
  }
  throw new InvalidFormatError(Status.invalid_format, `${describeNode(raw)} is dictionary-encoded but its format is not an integer type`);
}

function unsupported(raw: RawArray, what: string): never {
  throw new UnsupportedError(
    Status.unsupported,
    `${describeNode(raw)} is ${what}, which apache-arrow 21 cannot represent; read it through the raw view (ImportedArray.root), or convert with { materialize: true } to copy it into ${what === "run-end encoded" ? "a plain array of its values type" : "a list"}`,
  );
}

/** `toDataType` without the argument checks (for this layer's callers). */
export function dataTypeOf(raw: RawArray, options: ConvertOptions): DataType {
  const dictionary = raw.dictionary;
  if (dictionary) {
    const ordered = (raw.flags & Flags.DICTIONARY_ORDERED) !== 0;
    return new Dictionary(dataTypeOf(dictionary, options), indexType(raw), null, ordered);
  }
  const format = raw.format;
  switch (raw.typeId) {
    case "null": return new Null();
    case "boolean": return new Bool();
    case "int8": return new Int(true, 8);
    case "uint8": return new Int(false, 8);
    case "int16": return new Int(true, 16);
    case "uint16": return new Int(false, 16);
    case "int32": return new Int(true, 32);
    case "uint32": return new Int(false, 32);
    case "int64": return new Int(true, 64);
    case "uint64": return new Int(false, 64);
    case "float16": return new Float(Precision.HALF);
    case "float32": return new Float(Precision.SINGLE);
    case "float64": return new Float(Precision.DOUBLE);
    case "binary": return new Binary();
    case "large_binary": return new LargeBinary();
    case "binary_view": return new BinaryView();
    case "utf8": return new Utf8();
    case "large_utf8": return new LargeUtf8();
    case "utf8_view": return new Utf8View();
    case "decimal": {
      // d:precision,scale[,bitWidth]
      const [precision, scale, bitWidth] = format.slice(2).split(",").map(Number);
      return new Decimal(scale, precision, bitWidth ?? 128);
    }
    case "fixed_size_binary": return new FixedSizeBinary(Number(format.slice(2)));
    case "date32": return new Date_(DateUnit.DAY);
    case "date64": return new Date_(DateUnit.MILLISECOND);
    case "time32": return new Time(unit(raw, format, 2), 32);
    case "time64": return new Time(unit(raw, format, 2), 64);
    case "timestamp": {
      const timezone = format.slice(4);
      return new Timestamp(unit(raw, format, 2), timezone === "" ? null : timezone);
    }
    case "duration": return new Duration(unit(raw, format, 2));
    case "interval_months": return new Interval(IntervalUnit.YEAR_MONTH);
    case "interval_day_time": return new Interval(IntervalUnit.DAY_TIME);
    case "interval_month_day_nano": return new Interval(IntervalUnit.MONTH_DAY_NANO);
    case "list": return new List(fieldOf(raw.child(0), options));
    case "large_list": return new LargeList(fieldOf(raw.child(0), options));
    case "fixed_size_list": return new FixedSizeList(Number(format.slice(3)), fieldOf(raw.child(0), options));
    case "struct": return new Struct(raw.children.map((c) => fieldOf(c, options)));
    case "map": return new Map_(fieldOf(raw.child(0), options) as Field<Struct>, (raw.flags & Flags.MAP_KEYS_SORTED) !== 0);
    case "dense_union":
    case "sparse_union": {
      const ids = format.slice(4);
      const typeIds = ids === "" ? [] : ids.split(",").map(Number);
      const mode = raw.typeId === "dense_union" ? UnionMode.Dense : UnionMode.Sparse;
      return new Union(mode, typeIds, raw.children.map((c) => fieldOf(c, options)));
    }
    case "list_view":
      if (!options.materialize) unsupported(raw, "a list-view");
      return new List(fieldOf(raw.child(0), options));
    case "large_list_view":
      if (!options.materialize) unsupported(raw, "a large list-view");
      return new LargeList(fieldOf(raw.child(0), options));
    case "run_end_encoded":
      if (!options.materialize) unsupported(raw, "run-end encoded");
      return dataTypeOf(raw.child(1), options);
  }
  throw new InvalidFormatError(Status.invalid_format, `${describeNode(raw)} has a type this converter does not know (${raw.typeId})`);
}

/** `toField` without the argument checks. */
export function fieldOf(raw: RawArray, options: ConvertOptions): Field {
  const { name, flags, metadataPairs } = nodeSchemaOf(raw.imported, raw.index);
  const metadata = metadataPairs?.length ? new Map(metadataPairs) : null;
  return new Field(name ?? "", dataTypeOf(raw, options), (flags & Flags.NULLABLE) !== 0, metadata);
}

/** `toSchema` without the argument checks. */
export function schemaOf(raw: RawArray, options: ConvertOptions): Schema {
  if (raw.typeId !== "struct" || raw.dictionary) {
    throw new InvalidArgumentError(Status.invalid_argument, `a schema (record batch) needs a struct root, but the root is ${describeNode(raw)}`);
  }
  return new Schema(raw.children.map((c) => fieldOf(c, options)), raw.metadata);
}

/**
 * A canonical description of a type: every parameter, child names and
 * nullability, but not dictionary ids (which apache-arrow assigns per
 * import). Two types with the same description hold the same data layout.
 */
export function typeSignature(type: DataType): string {
  if (!isDataType(type)) throw arrowKindError("typeSignature", "type", type, ["DataType"]);
  const t = type as DataType & Record<string, unknown>;
  const fields = (children: Field[]) => children.map((f) => `${JSON.stringify(f.name)}${f.nullable ? "?" : ""}:${typeSignature(f.type)}`).join(",");
  if (DataType.isDictionary(type)) {
    return `dict<${typeSignature(type.indices)},${typeSignature(type.dictionary)}${type.isOrdered ? ",ordered" : ""}>`;
  }
  const params = ["bitWidth", "isSigned", "precision", "scale", "unit", "timezone", "byteWidth", "listSize", "mode", "keysSorted"]
    .filter((k) => t[k] !== undefined && t[k] !== null)
    .map((k) => `${k}=${String(t[k])}`);
  if (DataType.isUnion(type)) params.push(`typeIds=${Array.from(type.typeIds).join("|")}`);
  const children = type.children?.length ? `<${fields(type.children)}>` : "";
  return `${type.typeId}${params.length ? `(${params.join(",")})` : ""}${children}`;
}

function sameMetadata(a: Map<string, string> | undefined, b: Map<string, string> | undefined): boolean {
  const sizeA = a?.size ?? 0;
  if (sizeA !== (b?.size ?? 0)) return false;
  if (sizeA === 0) return true;
  for (const [key, value] of a!) if (b!.get(key) !== value) return false;
  return true;
}

function clipText(text: string, limit = 60): string {
  return text.length <= limit ? text : `${text.slice(0, limit - 1)}…`;
}

/**
 * Where `actual` differs from `expected`, structurally: type ids and every
 * parameter (`typeSignature`), child names, nullability and metadata. Null
 * when they are the same. Never uses identity, `instanceof` or
 * `toString`, so types from two apache-arrow instances compare equal when
 * they describe the same data. The description is bounded (a path and two
 * clipped signatures), never a whole schema.
 */
export function typeDifference(expected: DataType, actual: DataType, path = ""): string | null {
  if (expected === actual) return null;
  const here = path || "the root";
  const childrenA = expected.children ?? [];
  const childrenB = actual.children ?? [];
  if (expected.typeId !== actual.typeId || childrenA.length !== childrenB.length) {
    return `${here} is ${clipText(typeSignature(actual))}, expected ${clipText(typeSignature(expected))}`;
  }
  for (let i = 0; i < childrenA.length; i++) {
    const [a, b] = [childrenA[i], childrenB[i]];
    const where = `${path ? `${path}.` : ""}${JSON.stringify(clipText(String(a.name), 40))}`;
    if (a.name !== b.name) return `field ${i} of ${here} is named ${JSON.stringify(clipText(String(b.name), 40))}, expected ${where}`;
    if (a.nullable !== b.nullable) return `${where} is ${b.nullable ? "" : "not "}nullable, expected ${a.nullable ? "" : "not "}nullable`;
    if (!sameMetadata(a.metadata, b.metadata)) return `${where} has different field metadata`;
    const inner = typeDifference(a.type, b.type, where);
    if (inner) return inner;
  }
  // Children agree; the node's own parameters (and a dictionary's types).
  const strip = (t: DataType) => typeSignature(t).replace(/<.*$/s, "");
  if (strip(expected) !== strip(actual)) return `${here} is ${clipText(typeSignature(actual))}, expected ${clipText(typeSignature(expected))}`;
  if (DataType.isDictionary(expected) && DataType.isDictionary(actual)) {
    return typeDifference(expected.dictionary, actual.dictionary, `${here} (dictionary)`);
  }
  return null;
}
