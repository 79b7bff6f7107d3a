/**
 * Schema plans: apache-arrow DataType, Field and Schema -> the byte plan
 * that zig/export/schema.zig turns into an ArrowSchema tree (strings
 * copied natively), and the cache of native templates built from them
 * (one per source object), which every export of that schema copies.
 */
import { type Pointer } from "bun:ffi";
import { DataType, Field, Schema, Type, type Dictionary, type Map_ } from "apache-arrow";
import { Flags, maxNestingDepth } from "../core/abi/layout.ts";
import { encodeMetadata } from "../core/abi/metadata.ts";
import { Status, TooDeepError } from "../core/errors.ts";
import { check, native } from "../core/ffi/library.ts";
import { arrowKindError, isDataType } from "./arrow_args.ts";
import { formatOf } from "./formats.ts";

/** What `exportSchema` takes: an apache-arrow DataType, Field or Schema. */
export type SchemaSource = DataType | Field | Schema;

/** The kinds a SchemaSource may be (for argument errors). */
export const schemaKinds = ["DataType", "Field", "Schema"] as const;

const textEncoder = new TextEncoder();

/** A growable little-endian byte writer for schema plans. */
class PlanBytes {
  bytes = new Uint8Array(1024);
  view = new DataView(this.bytes.buffer);
  length = 0;

  reserve(n: number) {
    if (this.length + n <= this.bytes.length) return;
    let size = this.bytes.length * 2;
    while (size < this.length + n) size *= 2;
    const bigger = new Uint8Array(size);
    bigger.set(this.bytes.subarray(0, this.length));
    this.bytes = bigger;
    this.view = new DataView(bigger.buffer);
  }
  u32(v: number) { this.reserve(4); this.view.setUint32(this.length, v, true); this.length += 4; }
  i32(v: number) { this.reserve(4); this.view.setInt32(this.length, v, true); this.length += 4; }
  i64(v: number) { this.reserve(8); this.view.setBigInt64(this.length, BigInt(v), true); this.length += 8; }
  u8(v: number) { this.reserve(1); this.bytes[this.length++] = v; }
  raw(b: Uint8Array) { this.reserve(b.length); this.bytes.set(b, this.length); this.length += b.length; }
  optional(b: Uint8Array | null) {
    if (b === null) { this.i32(-1); return; }
    this.i32(b.length);
    this.raw(b);
  }
}

type SchemaNode = {
  format: string;
  name: string | null;
  metadata: Map<string, string> | null;
  flags: number;
  children: SchemaNode[];
  dictionary: SchemaNode | null;
};

function childFields(type: DataType): Field[] {
  return (type.children ?? []) as Field[];
}

function nodeForType(type: DataType, name: string | null, nullable: boolean, metadata: Map<string, string> | null, depth: number): SchemaNode {
  if (depth > maxNestingDepth) throw new TooDeepError(Status.too_deep, `schema nests deeper than ${maxNestingDepth} levels`);
  const format = formatOf(type);
  let flags = nullable ? Flags.NULLABLE : 0;
  let children: SchemaNode[] = [];
  let dictionary: SchemaNode | null = null;
  if (type.typeId === Type.Dictionary) {
    const encoded = type as Dictionary;
    if (encoded.isOrdered) flags |= Flags.DICTIONARY_ORDERED;
    dictionary = nodeForType(encoded.dictionary, null, true, null, depth + 1);
  } else {
    if (type.typeId === Type.Map && (type as Map_).keysSorted) flags |= Flags.MAP_KEYS_SORTED;
    children = childFields(type).map((f) => nodeForField(f, depth + 1));
  }
  return { format, name, metadata, flags, children, dictionary };
}

function nodeForField(field: Field, depth: number): SchemaNode {
  return nodeForType(field.type, field.name, field.nullable, field.metadata?.size ? field.metadata : null, depth);
}

function writeSchemaNode(plan: PlanBytes, node: SchemaNode) {
  const format = textEncoder.encode(node.format);
  plan.u32(format.length);
  plan.raw(format);
  plan.optional(node.name === null ? null : textEncoder.encode(node.name));
  plan.optional(encodeMetadata(node.metadata));
  plan.i64(node.flags);
  plan.u32(node.children.length);
  plan.u8(node.dictionary ? 1 : 0);
  for (const child of node.children) writeSchemaNode(plan, child);
  if (node.dictionary) writeSchemaNode(plan, node.dictionary);
}

function schemaNodeOf(source: SchemaSource): SchemaNode {
  if (source instanceof Schema) {
    return {
      format: "+s",
      name: "",
      metadata: source.metadata?.size ? source.metadata : null,
      flags: 0,
      children: source.fields.map((f) => nodeForField(f, 1)),
      dictionary: null,
    };
  }
  if (source instanceof Field) return nodeForField(source, 0);
  if (isDataType(source)) return nodeForType(source, "", true, null, 0);
  throw arrowKindError("exportSchema", "source", source, schemaKinds);
}

/** The schema plan of `source` (zig/export/schema.zig), for native code
 * that builds the schema again later (a stream's get_schema). */
export function schemaPlan(source: SchemaSource): Uint8Array {
  const plan = new PlanBytes();
  writeSchemaNode(plan, schemaNodeOf(source));
  return plan.bytes.slice(0, plan.length);
}

/** Encoded schema plans by source object, with the native template built
 * from each (zig/export/schema.zig `Template`: checked and measured once).
 * apache-arrow types, fields and schemas are not changed after
 * construction, so a batch stream (every batch shares one Schema) encodes
 * and checks its schema once, and each export then only copies it into a
 * new tree. The cache owns the templates: one is freed when its entry (so
 * its source object) is collected. Trees never point into a template. */
export type SchemaEntry = {
  plan: Uint8Array;
  template: number;
  /** For a Schema: whether two of its fields share a name (see
   * `schemaFits`); false for a Field or DataType. */
  repeatsNames: boolean;
};
const schemaEntries = new WeakMap<object, SchemaEntry>();
const templates = new FinalizationRegistry<number>((template) => native.abd_schema_template_free(template as Pointer));

export function schemaEntryOf(source: SchemaSource): SchemaEntry {
  const cached = schemaEntries.get(source);
  if (cached) return cached;
  const bytes = schemaPlan(source);
  const template = native.abd_schema_template_new(bytes, bytes.length);
  if (!template) check(native.abd_last_status() || Status.internal);
  const repeatsNames = source instanceof Schema && new Set(source.fields.map((f) => f.name)).size !== source.fields.length;
  const entry: SchemaEntry = { plan: bytes, template: template as number, repeatsNames };
  templates.register(entry, entry.template);
  schemaEntries.set(source, entry);
  return entry;
}

/** The native template of `source` (valid while `source` is reachable). */
export function templateOf(source: SchemaSource): number {
  return schemaEntryOf(source).template;
}

/** The unnamed, nullable field a Data or Vector of `type` exports as, one
 * per type object (so its schema template is cached with it). */
const unnamedFields = new WeakMap<DataType, Field>();

export function unnamedField(type: DataType): Field {
  let field = unnamedFields.get(type);
  if (!field) {
    field = new Field("", type, true);
    unnamedFields.set(type, field);
  }
  return field;
}
