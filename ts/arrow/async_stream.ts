/**
 * An async device stream read as apache-arrow RecordBatches: the native
 * handler of native/async_consumer.ts, each batch converted without
 * copying by the stream's converter (arrow/batch_converter.ts), as a C
 * stream's batches are: one Schema for the whole stream.
 *
 * Lifetimes. A RecordBatch's columns are views of the producer's memory;
 * each view holds its batch's native owner until it is garbage-collected,
 * so the producer's release of that batch runs once the last column using
 * it is gone, possibly long after the stream closed. Use `arrays()` (raw
 * ImportedArray handles with `dispose()`) for explicit control.
 */
import { RecordBatch } from "apache-arrow";
import { AsyncStreamConsumer, consumerOptionsArg, type AsyncArray, type AsyncConsumerOptions } from "../native/async_consumer.ts";
import { type ImportedArray } from "../native/imported.ts";
import { noteConverted } from "../native/batch_source.ts";
import { releaseConverted } from "./import.ts";
import { StreamBatchConverter } from "./batch_converter.ts";
import { convertOptionsArg, type ConvertOptions } from "./types.ts";

/** Options of `new AsyncRecordBatchStream(options)`: the consumer's and
 * the conversion's. */
export type AsyncRecordBatchStreamOptions = AsyncConsumerOptions & ConvertOptions;

/** One batch with the task's metadata (on_next_task's third argument). */
export type AsyncBatch = {
  batch: RecordBatch;
  /** The handle of the batch's memory: `array.dispose()` releases it now
   * (the batch then has no rows); otherwise the garbage collector
   * releases it once `batch` and its columns are gone. */
  array: ImportedArray;
  /** The task's metadata, decoded; null when the producer sent none. */
  metadata: Map<string, string> | null;
  /** Position in the stream, from 0. */
  index: number;
};

/**
 * A native `ArrowAsyncDeviceStreamHandler` for any C producer, read as an
 * async iterable of apache-arrow RecordBatch (the producer must send
 * struct arrays: record batches as Arrow C++ exports them).
 *
 * ```ts
 * const stream = new AsyncRecordBatchStream({ queueDepth: 4 });
 * startProducer(stream.handler);              // any C producer
 * for await (const batch of stream) { ... }    // break cancels the stream
 * ```
 */
export class AsyncRecordBatchStream extends AsyncStreamConsumer implements AsyncIterable<RecordBatch> {
  readonly #convert: ConvertOptions;

  constructor(options: AsyncRecordBatchStreamOptions = {}) {
    const fn = "AsyncRecordBatchStream";
    const { depth, validation } = consumerOptionsArg(fn, options, ["materialize"]);
    const convert = convertOptionsArg(fn, options, ["queueDepth", "validation"]);
    super({ queueDepth: depth, validation });
    this.#convert = convert;
  }

  /** The batches with their task metadata and memory handles. One
   * iteration per stream. */
  batches(): AsyncIterableIterator<AsyncBatch> {
    return this.#batches(false);
  }

  #batches(toGC: boolean): AsyncIterableIterator<AsyncBatch> {
    const arrays = this.arrays();
    const converter = new StreamBatchConverter(this.#convert);
    const toBatch = (item: AsyncArray): AsyncBatch => {
      try {
        const batch = converter.convert(item.array);
        if (toGC) item.array.releaseToGC(); // the batch's views keep the memory
        else noteConverted(item.array, batch, releaseConverted); // its dispose() empties the batch
        return { batch, array: item.array, metadata: item.metadata, index: item.index };
      } catch (error) {
        item.array.dispose();
        throw error;
      }
    };
    const iterator: AsyncIterableIterator<AsyncBatch> = {
      next: async () => {
        const next = await arrays.next();
        if (next.done) return { done: true, value: undefined };
        try {
          return { done: false, value: toBatch(next.value) };
        } catch (error) {
          await arrays.return?.(); // a batch that cannot be converted ends the stream
          throw error;
        }
      },
      return: async () => {
        await arrays.return?.();
        return { done: true, value: undefined };
      },
      [Symbol.asyncIterator]: () => iterator,
    };
    return iterator;
  }

  /** The batches, in order; their memory is the garbage collector's to
   * release. `break` cancels the stream. */
  [Symbol.asyncIterator](): AsyncIterator<RecordBatch> {
    const batches = this.#batches(true);
    return {
      next: async () => {
        const next = await batches.next();
        return next.done ? { done: true, value: undefined } : { done: false, value: next.value.batch };
      },
      return: async () => {
        await batches.return?.();
        return { done: true, value: undefined };
      },
    };
  }
}
