/**
 * A comparable description of an imported tree: per node its schema
 * fields, lengths, and per buffer its kind, size, FNV-1a checksum (the
 * values) and address (the memory it is: equal addresses prove zero-copy).
 * Variadic-size buffers of view types are made fresh by every export, so
 * their address is left out.
 */
import { BufferKind } from "../../ts/core/abi/layout.ts";
import { fnv1a32 } from "./native_consumer.ts";
import { type RawArray } from "../../ts/raw.ts";

export type Fingerprint = {
  format: string;
  name: string | null;
  flags: number;
  metadata: [string, string][];
  length: number;
  nullCount: number;
  offset: number;
  buffers: { kind: number; size: number; checksum: number; address: number | "made by the export" }[];
  children: Fingerprint[];
  dictionary: Fingerprint | null;
};

export function fingerprint(node: RawArray): Fingerprint {
  return {
    format: node.format,
    name: node.name,
    flags: node.flags,
    metadata: node.metadataPairs,
    length: node.length,
    nullCount: node.nullCount,
    offset: node.offset,
    buffers: Array.from({ length: node.nBuffers }, (_, i) => {
      const kind = node.bufferKind(i);
      const size = node.bufferSize(i);
      const memory = node.imported.bufferMemory(node.bufferIndex(i));
      return {
        kind,
        size,
        checksum: fnv1a32(new Uint8Array(memory)),
        address: kind === BufferKind.variadic_sizes ? "made by the export" : node.bufferAddress(i),
      };
    }),
    children: node.children.map(fingerprint),
    dictionary: node.dictionary ? fingerprint(node.dictionary) : null,
  };
}

/** The fingerprint without buffer addresses (two copies of the same data). */
export function withoutAddresses(print: Fingerprint): unknown {
  return {
    ...print,
    buffers: print.buffers.map(({ address: _, ...rest }) => rest),
    children: print.children.map(withoutAddresses),
    dictionary: print.dictionary ? withoutAddresses(print.dictionary) : null,
  };
}

/** Every buffer address, in preorder (node, its buffers, children, then
 * dictionary): the order a C producer's nodes are built in. */
export function addresses(print: Fingerprint): (number | string)[] {
  return [
    ...print.buffers.map((b) => b.address),
    ...print.children.flatMap(addresses),
    ...(print.dictionary ? addresses(print.dictionary) : []),
  ];
}
