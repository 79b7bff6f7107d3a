/**
 * The stream batch converter: the batches of one imported stream as
 * RecordBatches, with the stream's one Schema and batch plan, pulled
 * without a handle where the plan fits (arrow/stream_import.ts reads
 * streams through it).
 */
import { Table, type RecordBatch, type Schema } from "apache-arrow";
import { type ImportedArray } from "../native/imported.ts";
import { type ImportedStream } from "../native/imported_stream.ts";
import { adoptImportSnapshot, pullInto, pullTransient, pulledBatch, releasePulled, type PulledBatch } from "../native/batch_source.ts";
import { type ReadProbe } from "./lazy_data.ts";
import { BatchPlan } from "./batch_plan.ts";
import { batchWith } from "./record_batch.ts";
import { convertAndEnd, schemaOf, typedConversion, type ConvertOptions } from "./types.ts";

/** `converter.convert(imported)`, as `convertAndEnd` calls it. */
function convertOne(imported: ImportedArray, converter: StreamBatchConverter): RecordBatch {
  return converter.convert(imported);
}

/**
 * The batches of one imported stream as RecordBatches. Every batch of a
 * stream carries the stream's one ArrowSchema (zig/stream/import.zig
 * shares it with each batch's owner), so the apache-arrow Schema and its
 * types are built once, from the first batch, and every later batch is
 * built with them: no schema strings read, no types made per batch, and
 * every batch of the stream has the same Schema object (dictionary types
 * included), as apache-arrow's Table wants.
 */
export class StreamBatchConverter {
  #schema: Schema | null = null;
  /** The stream's batch plan (undefined: not tried yet; null: its schema
   * has a node the plan does not build, so every batch takes batchWith). */
  #plan: BatchPlan | null | undefined = undefined;
  /** `next`'s pull: its snapshot array is reused batch after batch. */
  #pulled: PulledBatch | null = null;
  #builtWithoutHandle = 0;
  /** How `next` builds the batches it pulls (see `#lazyNext`). */
  #eager = false;
  /** Whether the last batch `next` built lazily was read, until the next
   * pull looks (the flag only: it keeps no batch alive). */
  #probe: ReadProbe | null = null;

  constructor(readonly options: ConvertOptions) {}

  /** Batch `imported` (pulled from this converter's stream). */
  convert(imported: ImportedArray): RecordBatch {
    const schema = this.#schema ??= typedConversion(imported.root, () => schemaOf(imported.root, this.options));
    if (this.#plan === undefined) this.#plan = BatchPlan.of(imported, schema);
    return this.#plan?.build(imported) ?? batchWith(imported, schema, this.options);
  }

  /** `convert`, then the end of `imported` (a transient handle): its
   * memory then belongs to the GC, or, if conversion throws, is released
   * now. */
  convertAndEnd(imported: ImportedArray): RecordBatch {
    return convertAndEnd(imported, convertOne, this);
  }

  /**
   * The next batch of `stream` (this converter's, host memory) as a
   * RecordBatch; null at the end. A batch the plan fits is built straight
   * from its snapshot, with no ImportedArray: its views hold the batch's
   * memory, and the pull's own reference ends here, whatever happens. The
   * first batch, and any the plan does not fit, go through a transient
   * handle (`convertAndEnd`), which also reports their errors; so does
   * every batch of a stream that has no plan.
   */
  next(stream: ImportedStream): RecordBatch | null {
    // A schema the plan does not build: every batch through a handle,
    // pulled into words of its own (no reused array to copy from).
    if (this.#plan === null) {
      const imported = pullTransient(stream);
      return imported === null ? null : this.convertAndEnd(imported);
    }
    const pulled = this.#pulled ??= pulledBatch();
    if (!pullInto(stream, pulled)) return null;
    if (pulled.imported !== null) return this.convertAndEnd(pulled.imported);
    const owner = pulled.owner;
    if (this.#plan) {
      let batch: RecordBatch | null;
      try {
        const probe: ReadProbe | null = this.#lazyNext() ? { read: false } : null;
        batch = this.#plan.buildPulled(owner, pulled.words, probe);
        if (probe !== null && batch !== null) this.#probe = probe;
      } catch (error) {
        releasePulled(owner);
        throw error;
      }
      if (batch !== null) {
        releasePulled(owner);
        this.#builtWithoutHandle++;
        return batch;
      }
    }
    // The handle keeps its words: a copy, as `pulled`'s are reused.
    return this.convertAndEnd(adoptImportSnapshot(owner, pulled.words.slice()));
  }

  /**
   * Whether `next` builds its next batch lazily. A consumer that reads
   * each batch before pulling the next (most loops over a stream) would
   * only pay for the deferral (one more native call and a few objects per
   * batch): once a lazy batch was read by the next pull, the rest of the
   * stream is built eagerly. (Probing again now and then cost more than
   * it saved: each lazy batch among eager ones costs the JIT-compiled
   * readers a deoptimization, ~1,000 instructions per batch at one probe
   * in 16, counted.) A consumer that reads batches later, or never, keeps
   * them lazy.
   */
  #lazyNext(): boolean {
    const probe = this.#probe;
    if (probe !== null) {
      this.#eager = probe.read;
      this.#probe = null;
    }
    return !this.#eager;
  }

  /** How many of `next`'s batches were built straight from their
   * snapshot, without a handle. */
  get builtWithoutHandle(): number {
    return this.#builtWithoutHandle;
  }

  /** One Table of batches pulled from this converter's stream. */
  table(list: ImportedArray[]): Table {
    const batches = list.map((imported) => this.convert(imported));
    return new Table(batches[0].schema, batches);
  }
}
