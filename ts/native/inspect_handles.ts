/**
 * The printed form of each handle class (inspect.ts renders it): each
 * class's `[inspectCustom]` calls one function here, which reads only the
 * class's public getters. Formats are the C Data Interface's; lengths
 * and null counts are the struct's (a slice's for a window).
 */
import { CArray, CDeviceArray, CSchema } from "./c_structs.ts";
import type { AsyncStreamConsumer } from "./async_consumer.ts";
import type { ExportedArray } from "./exported.ts";
import type { ExportedStream } from "./exported_stream.ts";
import type { ImportedArray } from "./imported_array.ts";
import type { ImportedStream } from "./imported_stream.ts";
import type { RawArray } from "./raw_array.ts";
import { childLine, deviceText, formatText, readOr, renderTree, type Shown } from "./inspect.ts";
import { arrayChildren, arrayLine, named, schemaChildren } from "./inspect_structs.ts";

function rawLine(raw: RawArray): string {
  const offset = raw.offset === 0 ? "" : `, offset ${raw.offset}`;
  return `${formatText(raw.format, raw.typeId)}, length ${raw.length}, nulls ${raw.nullCount}${offset}`;
}

function rawChildren(raw: RawArray): Shown[] {
  const shown: Shown[] = raw.children.map((child) => ({ line: childLine(child.name, rawLine(child)), children: () => rawChildren(child) }));
  const dictionary = raw.dictionary;
  if (dictionary !== null) shown.push({ line: `dictionary: ${rawLine(dictionary)}`, children: () => rawChildren(dictionary) });
  return shown;
}

export function showRawArray(raw: RawArray): string {
  if (raw.imported.disposed) return `RawArray node ${raw.index} (its ImportedArray was disposed)`;
  return readOr(() => renderTree(`RawArray node ${raw.index}${named(raw.name)}: ${rawLine(raw)}, ${deviceText(raw.deviceType, raw.deviceId)}`, rawChildren(raw)));
}

export function showImportedArray(imported: ImportedArray): string {
  if (imported.disposed) return `ImportedArray (disposed) ${deviceText(imported.deviceType, imported.deviceId)}`;
  return readOr(() => {
    const root = imported.root;
    return renderTree(`ImportedArray${named(root.name)} ${rawLine(root)}, ${deviceText(imported.deviceType, imported.deviceId)}, ${imported.byteLength} bytes held`, rawChildren(root));
  });
}

/** A schema and its array side by side (an export's pair). */
function pairChildren(schema: CSchema, array: CArray): Shown[] {
  const schemas = schema.children;
  const arrays = array.children;
  const shown: Shown[] = schemas.map((child, i) => {
    const data = arrays[i];
    if (data === undefined) return { line: childLine(child.name, `${formatText(child.format)}, no array child ${i}`) };
    return { line: childLine(child.name, `${formatText(child.format)}, length ${data.length}, nulls ${data.nullCount}`), children: () => pairChildren(child, data) };
  });
  const dictionary = schema.dictionary;
  const dictionaryData = array.dictionary;
  if (dictionary !== null && dictionaryData !== null) {
    shown.push({ line: `dictionary: ${formatText(dictionary.format)}, length ${dictionaryData.length}, nulls ${dictionaryData.nullCount}`, children: () => pairChildren(dictionary, dictionaryData) });
  }
  return shown;
}

export function showExportedArray(exported: ExportedArray): string {
  const head = `ExportedArray<${exported.kind}>`;
  if (exported.released) return `${head} (released)`;
  return readOr(() => {
    const schema = exported.schemaReleased ? null : CSchema.at(exported.schema);
    if (exported.kind === "schema") {
      return schema === null ? `${head} (moved out)` : renderTree(`${head}${named(schema.name)} ${formatText(schema.format)}`, schemaChildren(schema));
    }
    if (exported.arrayReleased) return schema === null ? `${head} (moved out)` : renderTree(`${head}${named(schema.name)} ${formatText(schema.format)}, array moved out`, schemaChildren(schema));
    const device = exported.kind === "device_array" ? CDeviceArray.at(exported.array as never) : null;
    const array = device?.array ?? CArray.at(exported.array as never);
    const where = device === null ? "CPU" : deviceText(device.deviceType, device.deviceId);
    if (schema === null) return renderTree(`${head} schema moved out, ${arrayLine(array)}, ${where}`, arrayChildren(array));
    return renderTree(`${head}${named(schema.name)} ${formatText(schema.format)}, length ${array.length}, nulls ${array.nullCount}, ${where}`, pairChildren(schema, array));
  });
}

/** What the code that made an exported stream knows about it, for
 * printing: the device its arrays are on, and how to build its schema for
 * the moment of printing (a fresh struct, released right after: the
 * stream's own may have moved out to its consumer). */
export type StreamDescription = {
  device: string;
  withSchema<T>(read: (schema: CSchema) => T): T;
};

const streamDescriptions = new WeakMap<ExportedStream, StreamDescription>();

/** Lets `exported` print its device and schema (set once, by its maker). */
export function describeExportedStream(exported: ExportedStream, description: StreamDescription): void {
  streamDescriptions.set(exported, description);
}

export function showExportedStream(exported: ExportedStream): string {
  const head = `ExportedStream<${exported.kind}>`;
  if (exported.released) return `${head} (released)`;
  const state = exported.streamReleased ? "(moved out to its consumer)" : "(not yet taken by a consumer)";
  const description = streamDescriptions.get(exported);
  if (description === undefined) return `${head} ${state}`;
  return readOr(() => description.withSchema((schema) =>
    renderTree(`${head} ${description.device} ${state}, schema${named(schema.name)} ${formatText(schema.format)}`, schemaChildren(schema))));
}

export function showImportedStream(stream: ImportedStream): string {
  const head = `ImportedStream<${stream.kind}> ${stream.deviceTypeName}`;
  if (stream.released) return `${head} (released)`;
  return readOr(() => {
    const schema = CSchema.at(stream.schemaAddress as never);
    return renderTree(`${head}, schema${named(schema.name)} ${formatText(schema.format)}`, schemaChildren(schema));
  });
}

/** An async consumer (or AsyncRecordBatchStream): its queue and counts;
 * its schema arrives with `ready()`, its batches as they are read. */
export function showAsyncConsumer(consumer: AsyncStreamConsumer): string {
  return readOr(() => {
    const stats = consumer.stats;
    return `${consumer.constructor.name} queue depth ${consumer.queueDepth}: batches requested ${stats.requested}, received ${stats.received}, taken ${stats.taken}, read ${stats.read}, discarded ${stats.discarded}`;
  });
}
