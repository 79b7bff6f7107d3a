/**
 * The byte plan zig/export/schema.zig builds ArrowSchema trees from, written
 * from plain nodes (format strings, not apache-arrow types), for producers
 * of types apache-arrow cannot express and for raw exports. One node in
 * preorder (children, then dictionary), little-endian:
 *   u32 format length, format; i32 name length (-1: NULL), name;
 *   i32 metadata length (-1: NULL), metadata (spec encoding);
 *   i64 flags; u32 n_children; u8 has_dictionary.
 */
import { argumentError, integerArg, objectArg, stringArg } from "../args.ts";
import { encodeMetadata } from "./metadata.ts";

/** One ArrowSchema node, described by its C fields. An absent or null
 * `name` or `metadata` is NULL; `flags` defaults to 0. */
export type SchemaPlanNode = {
  format: string;
  name?: string | null;
  metadata?: Iterable<[string, string]> | null;
  flags?: number;
  children?: SchemaPlanNode[];
  dictionary?: SchemaPlanNode | null;
};

const encoder = new TextEncoder();

/** Checks the kinds of one node's fields (other keys are the caller's:
 * exportRawArray's nodes carry lengths and buffers too). */
function checkNode(node: SchemaPlanNode, where: string, depth: number): void {
  const fn = "schemaPlan";
  objectArg(fn, where, node, "a schema node { format, name?, metadata?, flags?, children?, dictionary? }");
  stringArg(fn, `${where}.format`, node.format);
  if (node.name !== undefined && node.name !== null) stringArg(fn, `${where}.name`, node.name);
  if (node.flags !== undefined) integerArg(fn, `${where}.flags`, node.flags, 0);
  if (node.children !== undefined && !Array.isArray(node.children)) throw argumentError(fn, `${where}.children`, "an array", node.children);
  if (node.dictionary !== undefined && node.dictionary !== null && typeof node.dictionary !== "object") throw argumentError(fn, `${where}.dictionary`, "a schema node or null", node.dictionary);
  if (depth > 64) throw argumentError(fn, where, "nested at most 64 levels deep", node);
}

/** The byte plan of the tree at `root` (see the module comment), as the
 * native schema builder reads it. */
export function schemaPlan(root: SchemaPlanNode): Uint8Array {
  // Checked as it is walked (before any byte is written).
  const chunks: Uint8Array[] = [];
  let total = 0;
  const push = (bytes: Uint8Array) => {
    chunks.push(bytes);
    total += bytes.length;
  };
  const int = (bytes: number, write: (view: DataView) => void) => {
    const b = new Uint8Array(bytes);
    write(new DataView(b.buffer));
    push(b);
  };
  const optional = (bytes: Uint8Array | null) => {
    int(4, (v) => v.setInt32(0, bytes === null ? -1 : bytes.length, true));
    if (bytes) push(bytes);
  };
  const walk = (node: SchemaPlanNode, where: string, depth: number) => {
    checkNode(node, where, depth);
    const format = encoder.encode(node.format);
    int(4, (v) => v.setUint32(0, format.length, true));
    push(format);
    optional(node.name === undefined || node.name === null ? null : encoder.encode(node.name));
    optional(encodeMetadata(node.metadata ?? null));
    int(8, (v) => v.setBigInt64(0, BigInt(node.flags ?? 0), true));
    const children = node.children ?? [];
    int(4, (v) => v.setUint32(0, children.length, true));
    int(1, (v) => v.setUint8(0, node.dictionary ? 1 : 0));
    children.forEach((child, i) => walk(child, `${where}.children[${i}]`, depth + 1));
    if (node.dictionary) walk(node.dictionary, `${where}.dictionary`, depth + 1);
  };
  walk(root, "root", 0);
  const out = new Uint8Array(Math.max(total, 1));
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out.subarray(0, total);
}
