/**
 * The gold files' IPC streams (helpers/shared_gold.ts finds them) read with
 * apache-arrow, as RecordBatches, for the async stream round trips.
 */
import { RecordBatch, RecordBatchReader, Schema } from "apache-arrow";
import { basename, relative } from "node:path";
import { goldFiles as goldCases, readStream, goldDir } from "./shared_gold.ts";

/** Gold files apache-arrow 21.2 cannot read at all (types it lacks). */
export const unreadableByApacheArrow = new Set(["generated_list_view.stream", "generated_run_end_encoded.stream"]);

/** Every `.stream` gold file, as `<folder>/<file>`. */
export function goldFiles(): string[] {
  return goldCases().map((gold) => `${gold.folder}/${basename(gold.stream)}`);
}

export function readableGoldFiles(): string[] {
  return goldFiles().filter((f) => !unreadableByApacheArrow.has(basename(f)));
}

function caseOf(file: string) {
  const found = goldCases().find((gold) => `${gold.folder}/${basename(gold.stream)}` === file);
  if (!found) throw new Error(`no gold file ${file} under ${relative(process.cwd(), goldDir())}`);
  return found;
}

/** A reader over the file's bytes (not opened). */
export function goldReader(file: string): RecordBatchReader {
  return RecordBatchReader.from(readStream(caseOf(file)));
}

export function readGold(file: string): { schema: Schema; batches: RecordBatch[] } {
  const reader = goldReader(file);
  reader.open();
  const schema = reader.schema;
  const batches = [...reader];
  return { schema, batches };
}
