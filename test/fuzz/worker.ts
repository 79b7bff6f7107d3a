/**
 * A fuzz worker process: runs cases [from, from + count) of `seed` on this
 * library (`--mode library`) or on Arrow C++ (`--mode arrow`) and appends
 * one line per case to `--out`, written synchronously: "start <i>" before
 * the case, "done <i> <json>" after it. When the process dies, the driver
 * (driver.ts) finds the case that killed it: the last one started and not
 * done.
 *
 *   bun test/fuzz/worker.ts --mode library --seed 1 --from 0 --count 500 --out /tmp/x
 *
 * `--list FILE` (one case number a line) runs those cases instead.
 */
import { closeSync, openSync, readFileSync, writeSync } from "node:fs";
import { runArrowCase, runLibraryCase } from "./cases.ts";
import { generateCase } from "./generate.ts";

function arg(name: string): string {
  const at = process.argv.indexOf(`--${name}`);
  if (at < 0 || at + 1 >= process.argv.length) throw new Error(`worker: missing --${name}`);
  return process.argv[at + 1];
}

const mode = arg("mode");
const seed = Number(arg("seed"));
const out = openSync(arg("out"), "a");
const cases: number[] = process.argv.includes("--list")
  ? readFileSync(arg("list"), "utf8").split("\n").filter((line) => line !== "").map(Number)
  : Array.from({ length: Number(arg("count")) }, (_, k) => Number(arg("from")) + k);

for (const i of cases) {
  writeSync(out, `start ${i}\n`);
  const c = generateCase(seed, i);
  const result = mode === "arrow" ? runArrowCase(c) : runLibraryCase(c);
  writeSync(out, `done ${i} ${JSON.stringify(result)}\n`);
}
closeSync(out);
