/**
 * A fuzz worker process: runs cases [from, from + count) of `seed` on this
 * library (`--mode library`) or on Arrow C++ (`--mode arrow`), or checks
 * the harness (`--mode selftest`), and appends
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
import { read } from "bun:ffi";
import { fx } from "../helpers/fixtures.ts";
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

/** `--mode selftest` checks the harness itself: case i reads one byte past
 * a guarded buffer when i % 5 == 3 (a crash) and never returns when
 * i % 5 == 4 (a hang); the others pass. */
function selfTest(i: number): string {
  if (i % 5 === 3) {
    fx.fx_set_guarded(1);
    const node = fx.fx_new(Buffer.from("i\0"), null, 2, 2, 0, 0, 2)!;
    fx.fx_set_buffer(node, 1, new Uint8Array(8), 8);
    const address = fx.fx_buffer_address(node, 1)!;
    return String(read.u8(address, 8)); // the first byte of the guard page
  }
  if (i % 5 === 4) for (;;) Bun.sleepSync(1000);
  return "ok";
}

for (const i of cases) {
  writeSync(out, `start ${i}\n`);
  const result = mode === "selftest" ? selfTest(i) : mode === "arrow" ? runArrowCase(generateCase(seed, i)) : runLibraryCase(generateCase(seed, i));
  writeSync(out, `done ${i} ${JSON.stringify(result)}\n`);
}
closeSync(out);
