/**
 * The gold files of ../shared/gold (Arrow integration IPC streams written
 * by Arrow C++), read in place. shared/ sits beside the checkout; set
 * ARROW_SHARED_DIR to use another one. In a git worktree (whose parent
 * folder has no shared/), the main checkout's sibling shared/ is used.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { dirname, join, resolve } from "node:path";

export const sharedDirEnvVar = "ARROW_SHARED_DIR";

const repoRoot = resolve(import.meta.dir, "..", "..");

/** The main checkout of a git worktree (`.git` is a file there). */
function mainCheckoutOfWorktree(): string | null {
  const dotGit = join(repoRoot, ".git");
  try {
    const text = readFileSync(dotGit, "utf8");
    const match = /^gitdir:\s*(.+)$/m.exec(text);
    if (!match) return null;
    // <main>/.git/worktrees/<name>
    return dirname(dirname(dirname(resolve(repoRoot, match[1].trim()))));
  } catch {
    return null; // .git is a folder (a plain checkout) or absent
  }
}

/** The folders tried, in order. */
export function sharedDirCandidates(): string[] {
  const candidates: string[] = [];
  const fromEnv = process.env[sharedDirEnvVar];
  if (fromEnv) return [resolve(fromEnv)];
  candidates.push(resolve(repoRoot, "..", "shared"));
  const main = mainCheckoutOfWorktree();
  if (main) candidates.push(resolve(main, "..", "shared"));
  return candidates;
}

/** shared/, or an Error saying where it was looked for. */
export function sharedDir(): string {
  const candidates = sharedDirCandidates();
  const found = candidates.find((dir) => existsSync(join(dir, "gold")));
  if (!found) {
    throw new Error(`no shared/gold folder found (looked in ${candidates.join(", ")}); set ${sharedDirEnvVar} to the shared/ folder`);
  }
  return found;
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
  const root = join(sharedDir(), "gold");
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

/** Gold files whose values Arrow C++'s ValidateFull rejects (shared/README.md):
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
