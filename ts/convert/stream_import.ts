/**
 * Imported streams -> apache-arrow RecordBatch iterators and Tables,
 * zero-copy (lifetime/imported_stream.ts pulls, convert/import.ts converts).
 *
 * Lifetimes. Each RecordBatch is a view of its producer's memory and lives
 * as long as JS uses it: the producer's release for that batch runs once
 * its last buffer view is garbage-collected (for an explicit end, iterate
 * the ImportedStream itself, convert with `toRecordBatch`, and `dispose()`
 * each ImportedArray). The stream is released exactly once, when the loop
 * ends, breaks or throws (or by `stream.release()`).
 *
 * Threads. `recordBatches` / `readTable` call get_next on the JS thread;
 * `recordBatchesAsync` / `readTableAsync` call it on the stream's worker
 * thread, leaving the JS thread free meanwhile.
 */
import { Table, type RecordBatch, type Schema } from "apache-arrow";
import { type ImportedArray } from "../lifetime/imported.ts";
import { type ImportedStream } from "../lifetime/imported_stream.ts";
import { toRecordBatch, toSchema, toTable } from "./import.ts";
import { type ConvertOptions } from "./types.ts";

/** Converts one pulled batch; its memory then belongs to the GC. */
function convert(imported: ImportedArray, options: ConvertOptions): RecordBatch {
  try {
    const batch = toRecordBatch(imported, options);
    imported.releaseToGC();
    return batch;
  } catch (error) {
    imported.dispose();
    throw error;
  }
}

/** Every remaining batch of `stream` as an apache-arrow RecordBatch,
 * pulled on the JS thread. */
export function* recordBatches(stream: ImportedStream, options: ConvertOptions = {}): Generator<RecordBatch, void, undefined> {
  for (const imported of stream) yield convert(imported, options);
}

/** Every remaining batch of `stream`, pulled on the stream's worker
 * thread (`for await`). */
export async function* recordBatchesAsync(stream: ImportedStream, options: ConvertOptions = {}): AsyncGenerator<RecordBatch, void, undefined> {
  for await (const imported of stream) yield convert(imported, options);
}

/** The stream's schema as an apache-arrow Schema (read from a zero-length
 * batch; the stream's position is unchanged). */
export function streamSchema(stream: ImportedStream, options: ConvertOptions = {}): Schema {
  const empty = stream.emptyBatch();
  try {
    return toSchema(empty.root, options);
  } finally {
    empty.dispose();
  }
}

/** One Table of the pulled batches (their dictionaries share the first
 * batch's types, as apache-arrow's Table requires), or an empty Table
 * with the stream's schema. Owns `pulled`: on error it disposes them. */
function tableOf(pulled: ImportedArray[], schema: Schema | null, options: ConvertOptions): Table {
  if (pulled.length === 0) return new Table(schema!);
  try {
    const table = toTable(pulled, options);
    for (const imported of pulled) imported.releaseToGC();
    return table;
  } catch (error) {
    for (const imported of pulled) imported.dispose();
    throw error;
  }
}

/** Reads the whole stream into one Table (its schema is the first batch's,
 * or the stream's when it has none) and releases the stream. */
export function readTable(stream: ImportedStream, options: ConvertOptions = {}): Table {
  const pulled: ImportedArray[] = [];
  let schema: Schema | null = null;
  try {
    for (;;) {
      const imported = stream.next();
      if (!imported) break;
      pulled.push(imported);
    }
    // Only needed when no batch came; read while the stream is open.
    if (pulled.length === 0) schema = streamSchema(stream, options);
  } catch (error) {
    for (const imported of pulled) imported.dispose();
    throw error;
  } finally {
    stream.release();
  }
  return tableOf(pulled, schema, options);
}

/** Like `readTable`, pulling on the stream's worker thread. */
export async function readTableAsync(stream: ImportedStream, options: ConvertOptions = {}): Promise<Table> {
  const pulled: ImportedArray[] = [];
  let schema: Schema | null = null;
  try {
    for (;;) {
      const imported = await stream.nextAsync();
      if (!imported) break;
      pulled.push(imported);
    }
    if (pulled.length === 0) schema = streamSchema(stream, options);
  } catch (error) {
    for (const imported of pulled) imported.dispose();
    throw error;
  } finally {
    stream.release();
  }
  return tableOf(pulled, schema, options);
}
