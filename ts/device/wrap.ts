/**
 * Exporting memory you already have, described node by node with format
 * strings: device pointers from another library (wrapped as an
 * ArrowDeviceArray with your event and your release), or JS buffers of a
 * type apache-arrow cannot express. No apache-arrow here.
 *
 * Ownership. The returned `ExportedArray` owns the two base structs. The
 * memory itself stays yours: it must stay valid and unchanged until the
 * consumer releases the tree. When that happens (on any thread), the JS
 * buffers and objects named here are let go and `onRelease` runs, later,
 * on the JS thread: that is when you may free device memory or destroy the
 * event. Nothing here reads any buffer.
 */
import { DeviceType, Flags } from "../core/abi/layout.ts";
import { asPointer } from "../core/abi/structs.ts";
import { schemaPlan } from "../core/abi/schema_plan.ts";
import { errorFor } from "../core/errors.ts";
import { lastError, native } from "../core/ffi/library.ts";
import { ExportedArray } from "../native/exported.ts";
import { drainReleased, forgetUnused, retainWithOwners, whenReleased } from "../native/keepalive.ts";
import { importOwnersOf } from "../native/imported.ts";
import { DeviceEvent, DeviceMemory, dropExport, holdForExport, hostAddress, memoryBehind, type DeviceKind } from "./runtime.ts";
import { checkTarget, targetDeviceType, type DeviceTarget } from "./transfer.ts";
import { addressArg, argumentError, deviceTypeArg, functionArg, int64Arg, integerArg, optionsArg, stringArg } from "../core/args.ts";

/** A buffer: a raw address, device memory, a JS buffer (a typed array or
 * DataView), or none (NULL). */
export type RawBuffer = number | bigint | NodeJS.ArrayBufferView | DeviceMemory | null;

/** One node of an array described by its C fields (format, length,
 * buffers, children, dictionary), for types or memory apache-arrow cannot
 * describe. Buffers are exported as given: nothing is copied. */
export type RawArrayNode = {
  /** C Data Interface format string, e.g. "i", "+vl", "+r". */
  format: string;
  name?: string | null;
  metadata?: Iterable<[string, string]> | null;
  /** ArrowSchema flags (default: NULLABLE). */
  flags?: number;
  length: number;
  /** Default: 0 without a validity buffer, -1 (unknown) with one. */
  nullCount?: number;
  offset?: number;
  buffers: RawBuffer[];
  children?: RawArrayNode[];
  dictionary?: RawArrayNode | null;
};

/** Options of `exportRawArray`. */
export type RawExportOptions = {
  /** Arrow device type of every buffer (default CPU). */
  deviceType?: number;
  /** Default: -1 for CPU, else 0. An int64: a safe integer or a bigint. */
  deviceId?: number | bigint;
  /** Event the consumer must wait on (a DeviceEvent or a `CUevent*` /
   * `hipEvent_t*` address); kept alive with the export. */
  syncEvent?: DeviceEvent | number | null;
  /** Runs on the JS thread after the consumer released the tree. */
  onRelease?: () => void;
  /** Anything else to keep reachable until then. */
  keepAlive?: unknown;
};

function bufferAddress(buffer: RawBuffer, retained: unknown[], where: string): number {
  if (buffer === null || buffer === undefined) return 0;
  if (typeof buffer === "number" || typeof buffer === "bigint") {
    // Any alignment: the consumer checks what its type needs.
    if (typeof buffer === "bigint" ? buffer >= 0n && buffer <= BigInt(Number.MAX_SAFE_INTEGER) : Number.isSafeInteger(buffer) && buffer >= 0) return Number(buffer);
    throw argumentError("exportRawArray", where, "an address (a non-negative safe integer or bigint), a DeviceMemory, a typed array or null", buffer);
  }
  if (buffer instanceof DeviceMemory) {
    retained.push(buffer);
    return buffer.address;
  }
  if (ArrayBuffer.isView(buffer)) {
    retained.push(buffer);
    // A hostView() of pinned memory: the export holds that memory too.
    const memory = memoryBehind(buffer);
    if (memory) retained.push(memory);
    return hostAddress(buffer);
  }
  throw argumentError("exportRawArray", where, "an address, a DeviceMemory, a typed array or null", buffer);
}

const nodeKeys = ["format", "name", "metadata", "flags", "length", "nullCount", "offset", "buffers", "children", "dictionary"] as const;

/** Checks the kinds of a node's fields (`where` names it: "root",
 * "root.children[1]", ...); the structure is checked natively. */
function checkNode(fn: string, node: RawArrayNode, where: string, depth: number): void {
  optionsArg(fn, where, node, nodeKeys, true, "a RawArrayNode { format, length, buffers, ... }");
  stringArg(fn, `${where}.format`, node.format);
  if (node.name !== undefined && node.name !== null) stringArg(fn, `${where}.name`, node.name);
  if (node.flags !== undefined) integerArg(fn, `${where}.flags`, node.flags, 0);
  integerArg(fn, `${where}.length`, node.length, 0);
  if (node.nullCount !== undefined) integerArg(fn, `${where}.nullCount`, node.nullCount, -1);
  if (node.offset !== undefined) integerArg(fn, `${where}.offset`, node.offset, 0);
  if (!Array.isArray(node.buffers)) throw argumentError(fn, `${where}.buffers`, "an array", node.buffers);
  if (node.children !== undefined && !Array.isArray(node.children)) throw argumentError(fn, `${where}.children`, "an array or undefined", node.children);
  if (depth > 64) throw argumentError(fn, where, "nested at most 64 levels deep", node);
  node.children?.forEach((child, i) => checkNode(fn, child, `${where}.children[${i}]`, depth + 1));
  if (node.dictionary !== undefined && node.dictionary !== null) checkNode(fn, node.dictionary, `${where}.dictionary`, depth + 1);
}

function planOf(root: RawArrayNode, retained: unknown[]): Float64Array {
  const words: number[] = [];
  const walk = (node: RawArrayNode, where: string) => {
    const children = node.children ?? [];
    const hasValidity = node.buffers.length > 0 && node.buffers[0] !== null;
    words.push(node.length, node.nullCount ?? (hasValidity ? -1 : 0), node.offset ?? 0, node.buffers.length, children.length, node.dictionary ? 1 : 0);
    node.buffers.forEach((buffer, i) => words.push(bufferAddress(buffer, retained, `${where}.buffers[${i}]`)));
    children.forEach((child, i) => walk(child, `${where}.children[${i}]`));
    if (node.dictionary) walk(node.dictionary, `${where}.dictionary`);
  };
  walk(root, "root");
  return Float64Array.from(words);
}

function withDefaultFlags(node: RawArrayNode): RawArrayNode {
  return {
    ...node,
    flags: node.flags ?? Flags.NULLABLE,
    children: node.children?.map(withDefaultFlags),
    dictionary: node.dictionary ? withDefaultFlags(node.dictionary) : null,
  };
}

/** Exports `root` (and its children) over the given buffers, without
 * copying or reading them. The structure is checked (buffer and child
 * counts per format, lengths); the data is not. */
export function exportRawArray(root: RawArrayNode, options: RawExportOptions = {}): ExportedArray<"device_array"> {
  const fn = "exportRawArray";
  checkNode(fn, root, "root", 0);
  optionsArg(fn, "options", options, ["deviceType", "deviceId", "syncEvent", "onRelease", "keepAlive"]);
  // An ArrowDeviceType is positive (CPU is 1); 0 and below name nothing.
  const deviceType = deviceTypeArg(fn, "options.deviceType", options.deviceType ?? DeviceType.CPU);
  const deviceId = int64Arg(fn, "options.deviceId", options.deviceId ?? (deviceType === DeviceType.CPU ? -1 : 0));
  functionArg(fn, "options.onRelease", options.onRelease, true);
  const event = options.syncEvent;
  if (!(event === undefined || event === null || event instanceof DeviceEvent)) addressArg(fn, "options.syncEvent", event);
  if (deviceType === DeviceType.CPU && event !== undefined && event !== null) {
    throw argumentError(fn, "options.syncEvent", "null on a CPU array (CPU memory has nothing to wait on)", event);
  }
  drainReleased();
  const retained: unknown[] = [];
  const plan = planOf(root, retained);
  let syncEvent = 0;
  if (event instanceof DeviceEvent) {
    retained.push(event);
    syncEvent = event.address;
  } else if (typeof event === "number" || typeof event === "bigint") {
    syncEvent = Number(event);
  }
  if (options.keepAlive !== undefined) retained.push(options.keepAlive);
  const handle = new ExportedArray("device_array", "raw ArrowDeviceArray");
  try {
    const schemaBytes = schemaPlan(withDefaultFlags(root));
    let status = native.abd_schema_build(schemaBytes, schemaBytes.length, handle.schema);
    if (status !== 0) throw errorFor(status, lastError());
    // JS buffers that view an import's memory hold its owner (as exports
    // of converted data do: arrow/export.ts).
    const keepaliveId = retainWithOwners(retained, importOwnersOf(retained));
    status = native.abd_device_array_build(plan, plan.length, keepaliveId, deviceType, deviceId, syncEvent ? asPointer(syncEvent) : null, handle.array);
    if (status !== 0) {
      const error = errorFor(status, lastError());
      forgetUnused(keepaliveId);
      throw error;
    }
    status = native.abd_device_array_check(handle.schema, handle.array);
    if (status !== 0) throw errorFor(status, lastError());
    // Memory from this library is not freed under the consumer: free()
    // waits for the release of every export that points into it.
    const memories = [...new Set(retained.filter((r): r is DeviceMemory => r instanceof DeviceMemory))];
    for (const memory of memories) holdForExport(memory);
    // Only a successful export tells the caller when it is released.
    const onRelease = options.onRelease;
    if (onRelease || memories.length > 0) {
      whenReleased(keepaliveId, () => {
        for (const memory of memories) dropExport(memory);
        onRelease?.();
      });
    }
    return handle;
  } catch (error) {
    handle.release();
    throw error;
  }
}

/** Options of `wrapDeviceMemory`. */
export type WrapOptions = {
  /** The runtime that owns the memory. */
  device: DeviceKind;
  /** Device ordinal: the array's device_id. */
  id: number;
  /** Where the buffers live (default "device"). */
  memory?: "device" | "pinned" | "managed";
  /** Event the consumer must wait on (a DeviceEvent or a `CUevent*` /
   * `hipEvent_t*` address); kept alive with the export. */
  syncEvent?: DeviceEvent | number | null;
  /** Runs on the JS thread after the consumer released the tree. */
  onRelease?: () => void;
  /** Anything else to keep reachable until then. */
  keepAlive?: unknown;
};

/** Exports device memory you own as an ArrowDeviceArray of `options.device`
 * (CUDA / CUDA_HOST / CUDA_MANAGED, ROCM / ROCM_HOST), with your event as
 * `sync_event` and `onRelease` telling you when the consumer is done. */
export function wrapDeviceMemory(root: RawArrayNode, options: WrapOptions): ExportedArray<"device_array"> {
  checkNode("wrapDeviceMemory", root, "root", 0);
  checkTarget("wrapDeviceMemory", options as DeviceTarget, "options", ["syncEvent", "onRelease", "keepAlive"]);
  if (options.id === undefined) throw argumentError("wrapDeviceMemory", "options.id", "a device ordinal", options.id);
  return exportRawArray(root, {
    deviceType: targetDeviceType(options.device, options.memory ?? "device"),
    deviceId: options.id,
    syncEvent: options.syncEvent,
    onRelease: options.onRelease,
    keepAlive: options.keepAlive,
  });
}
