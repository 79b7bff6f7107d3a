/**
 * The Arrow integration gold files (../shared/gold, see ../shared/README.md),
 * read in place. The shared folder sits beside the checkout; set
 * ARROW_SHARED_DIR to use another. Missing files fail the tests that need
 * them, loudly: nothing is skipped.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { gunzipSync } from "node:zlib";

export function sharedDir(): string {
  return process.env.ARROW_SHARED_DIR || resolve(import.meta.dir, "..", "..", "..", "shared");
}

export const goldFolders = ["1.0.0-littleendian", "cpp-21.0.0"] as const;

export type GoldCase = { folder: string; name: string; stream: string; json: string };

/** Every gold case of both folders, by name. Throws if a folder is missing. */
export function goldCases(): GoldCase[] {
  const cases: GoldCase[] = [];
  for (const folder of goldFolders) {
    const dir = join(sharedDir(), "gold", folder);
    if (!existsSync(dir)) throw new Error(`gold files not found at ${dir}: set ARROW_SHARED_DIR to the shared/ folder`);
    for (const file of readdirSync(dir).sort()) {
      if (!file.endsWith(".stream")) continue;
      const name = file.slice(0, -".stream".length);
      cases.push({ folder, name, stream: join(dir, file), json: join(dir, `${name}.json.gz`) });
    }
  }
  return cases;
}

export function readStream(gold: GoldCase): Uint8Array {
  return new Uint8Array(readFileSync(gold.stream));
}

/** The integration JSON of a case (schema + batches of columns). */
export function readJson(gold: GoldCase): GoldJson {
  return JSON.parse(gunzipSync(readFileSync(gold.json)).toString("utf8")) as GoldJson;
}

export type JsonField = { name: string; type: { name: string; [key: string]: unknown }; nullable: boolean; children: JsonField[] };
export type JsonColumn = {
  name: string;
  count: number;
  VALIDITY?: number[];
  DATA?: unknown[];
  OFFSET?: (number | string)[];
  SIZE?: (number | string)[];
  children?: JsonColumn[];
};
export type GoldJson = { schema: { fields: JsonField[] }; batches: { count: number; columns: JsonColumn[] }[] };
