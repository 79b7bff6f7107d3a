/**
 * The gold files of test/data/gold (Arrow integration IPC streams written
 * by Arrow C++, from apache/arrow-testing under the Apache license:
 * test/data/gold/LICENSE.txt), read in place. They live in the repository
 * so that a fresh clone's tests need nothing beside it.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { join, resolve } from "node:path";

const repoRoot = resolve(import.meta.dir, "..", "..");

/** test/data/gold, or an Error saying it is missing. */
export function goldDir(): string {
  const dir = join(repoRoot, "test", "data", "gold");
  if (!existsSync(dir)) throw new Error(`the gold files are missing: no ${dir} (they are part of the repository)`);
  return dir;
}

export type GoldFile = {
  /** "1.0.0-littleendian" or "cpp-21.0.0". */
  folder: string;
  /** e.g. "generated_primitive". */
  name: string;
  /** `${folder}/${name}`, for test titles. */
  label: string;
  /** Absolute path of the .stream file. */
  path: string;
  /** The same path (the name the JSON-reading tests use). */
  stream: string;
  /** Absolute path of the case's integration JSON (.json.gz). */
  json: string;
};

/** The gold folders, each expected to hold .stream files. */
export const goldFolders = ["1.0.0-littleendian", "cpp-21.0.0"] as const;

/** Every .stream file of both gold folders, sorted. */
export function goldFiles(): GoldFile[] {
  const root = goldDir();
  const files: GoldFile[] = [];
  for (const folder of goldFolders) {
    for (const entry of readdirSync(join(root, folder)).sort()) {
      if (!entry.endsWith(".stream")) continue;
      const name = entry.slice(0, -".stream".length);
      const path = join(root, folder, entry);
      files.push({ folder, name, label: `${folder}/${name}`, path, stream: path, json: join(root, folder, `${name}.json.gz`) });
    }
  }
  return files;
}

/** apache-arrow 21.2 cannot read these types from IPC (nor represent them). */
export const unreadableByApacheArrow = new Set(["cpp-21.0.0/generated_list_view", "cpp-21.0.0/generated_run_end_encoded"]);

/** Gold files whose values Arrow C++'s ValidateFull rejects (shared/README.md of the reference material):
 * decimal precision overflow, date64 values that are not whole days. */
export const rejectedByArrowCppValidation = new Set([
  "1.0.0-littleendian/generated_decimal",
  "1.0.0-littleendian/generated_decimal256",
  "1.0.0-littleendian/generated_datetime",
]);

/** The IPC stream bytes of a case. */
export function readStream(gold: GoldFile): Uint8Array {
  return new Uint8Array(readFileSync(gold.stream));
}

/** The integration JSON of a case (schema + batches of columns). */
export function readJson(gold: GoldFile): GoldJson {
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
