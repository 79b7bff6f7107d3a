/**
 * The stream batch converter: the one conversion of a stream's pulled
 * batches to RecordBatches, with the stream's one Schema and batch plan.
 * Every batch of a read (arrow/stream_import.ts: sync or async, host
 * copies included) and of an async device stream (arrow/async_stream.ts)
 * goes through it.
 */
import { Table, type RecordBatch, type Schema } from "apache-arrow";
import { type ImportedArray } from "../native/imported.ts";
import { adoptImportSnapshot, releasePulled, type PulledBatch } from "../native/batch_source.ts";
import { type ReadProbe } from "./lazy_data.ts";
import { BatchPlan } from "./batch_plan.ts";
import { batchWith } from "./record_batch.ts";
import { cachedSchemaOf } from "./schema_cache.ts";
import { convertAndEnd, schemaOf, typedConversion, type ConvertOptions } from "./types.ts";

/** `converter.convert(imported)`, as `convertAndEnd` calls it. */
function convertOne(imported: ImportedArray, converter: StreamBatchConverter): RecordBatch {
  return converter.convert(imported);
}

/**
 * The batches of one stream as RecordBatches. Every batch of a stream
 * carries the stream's one ArrowSchema (zig/stream/import.zig and
 * zig/async/consumer.zig share it with each batch's owner), so the
 * apache-arrow Schema and its types are built once, from the first batch,
 * and every later batch is built with them: no schema strings read, no
 * types made per batch, and every batch of the stream has the same Schema
 * object (dictionary types included), as apache-arrow's Table wants.
 *
 * One route per batch (`batch`): a batch pulled as a snapshot (owner and
 * words, no handle) that the plan fits is built straight from it;
 * anything else (the first batch, a batch the plan does not fit, a batch
 * pulled as a handle) goes through its handle (`convert`): the plan where
 * it fits, else the Data builder, which also reports the batch's errors.
 */
export class StreamBatchConverter {
  #schema: Schema | null = null;
  /** The stream's batch plan (undefined: not tried yet; null: its schema
   * has a node the plan does not build, so every batch takes batchWith). */
  #plan: BatchPlan | null | undefined = undefined;
  #builtWithoutHandle = 0;
  /** How `batch` builds the snapshots it is given (see `#lazyNext`). */
  #eager = false;
  /** Whether the last batch built lazily was read, until the next batch
   * looks (the flag only: it keeps no batch alive). */
  #probe: ReadProbe | null = null;

  constructor(readonly options: ConvertOptions) {}

  /** Whether a snapshot pull can be built without a handle: false once
   * the stream's schema is known not to fit the plan (its batches are
   * then better pulled as handles, with words of their own, than copied
   * out of a snapshot). */
  get takesSnapshots(): boolean {
    return this.#plan !== null;
  }

  /**
   * The RecordBatch of one pulled batch (batch_source.ts `pullInto`): a
   * snapshot, or a handle (`pulled.imported`, which this takes out of
   * `pulled`). The pull's reference ends here, whatever happens: the
   * batch's memory then belongs to the GC (its views hold it), or, if
   * conversion throws, is released now.
   */
  batch(pulled: PulledBatch): RecordBatch {
    const imported = pulled.imported;
    if (imported !== null) {
      pulled.imported = null;
      return this.convertAndEnd(imported);
    }
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

  /** The RecordBatch of `imported` (a batch of this converter's stream),
   * which stays the caller's. */
  convert(imported: ImportedArray): RecordBatch {
    if (this.#schema === null) this.#adoptSchemaOf(imported);
    return this.#plan?.build(imported) ?? batchWith(imported, this.#schema!, this.options);
  }

  /**
   * Takes the stream's Schema and plan from its first batch: from the
   * schema cache (arrow/schema_cache.ts), so that streams of one schema
   * (a query run again, a producer's stream per request) share one Schema
   * and one plan, as one-off imports of it do, and only the first stream
   * builds them. A windowed batch (none a stream pulls) builds its own.
   */
  #adoptSchemaOf(imported: ImportedArray): void {
    if (imported.window !== null) {
      this.#schema = typedConversion(imported.root, () => schemaOf(imported.root, this.options));
      this.#plan = null;
      return;
    }
    const entry = cachedSchemaOf(imported, this.options);
    if (entry.plan === undefined) entry.plan = BatchPlan.of(imported, entry.schema);
    this.#schema = entry.schema;
    this.#plan = entry.plan;
  }

  /** `convert`, then the end of `imported` (a handle nothing else holds):
   * its memory then belongs to the GC, or, if conversion throws, is
   * released now. */
  convertAndEnd(imported: ImportedArray): RecordBatch {
    return convertAndEnd(imported, convertOne, this);
  }

  /**
   * Whether `batch` builds its next snapshot lazily. A consumer that reads
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

  /** How many batches were built straight from their snapshot, without a
   * handle. */
  get builtWithoutHandle(): number {
    return this.#builtWithoutHandle;
  }

  /** One Table of batches pulled from this converter's stream, whose
   * handles stay the caller's. */
  table(list: ImportedArray[]): Table {
    const batches = list.map((imported) => this.convert(imported));
    return new Table(batches[0].schema, batches);
  }
}
