/**
 * The Arrow integration gold files (`<repo>/../shared/gold/<dir>/*.stream`,
 * or under $ARROW_SHARED_DIR), read in place with apache-arrow.
 */
import { RecordBatch, RecordBatchReader, Schema } from "apache-arrow";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { basename, join, resolve } from "node:path";

export const sharedDir = process.env.ARROW_SHARED_DIR ?? resolve(import.meta.dir, "..", "..", "..", "shared");
export const goldDir = join(sharedDir, "gold");

/** Gold files apache-arrow 21.2 cannot read at all (types it lacks). */
export const unreadableByApacheArrow = new Set(["generated_list_view.stream", "generated_run_end_encoded.stream"]);

/** Every `.stream` gold file, as `<dir>/<file>`. */
export function goldFiles(): string[] {
  if (!existsSync(goldDir)) throw new Error(`gold files not found under ${goldDir} (set ARROW_SHARED_DIR)`);
  const files: string[] = [];
  for (const dir of readdirSync(goldDir).sort()) {
    const path = join(goldDir, dir);
    if (!statSync(path).isDirectory() || !readdirSync(path).some((f) => f.endsWith(".stream"))) continue;
    for (const file of readdirSync(path).sort()) if (file.endsWith(".stream")) files.push(`${dir}/${file}`);
  }
  return files;
}

export function readableGoldFiles(): string[] {
  return goldFiles().filter((f) => !unreadableByApacheArrow.has(basename(f)));
}

export function goldBytes(file: string): Uint8Array {
  return readFileSync(join(goldDir, file));
}

/** A reader over the file's bytes (not opened). */
export function goldReader(file: string): RecordBatchReader {
  return RecordBatchReader.from(goldBytes(file));
}

export function readGold(file: string): { schema: Schema; batches: RecordBatch[] } {
  const reader = goldReader(file);
  reader.open();
  const schema = reader.schema;
  const batches = [...reader];
  return { schema, batches };
}
