/**
 * Runs the fuzzer for longer than the test command does (docs/fuzzing.md):
 *
 *   bun run fuzz --cases 1000000 [--seed 1] [--from 0] [--chunk 2000] [--report out.json] [--no-arrow]
 *
 * Prints progress per chunk and the report (JSON) at the end; exits 1 on
 * any crash, hang, problem or disagreement, each with its seed and case
 * number (`bun test/fuzz/worker.ts --mode library --seed S --from I
 * --count 1 --out /dev/stdout` reruns one case).
 */
import { writeFileSync } from "node:fs";
import { runFuzz } from "../test/fuzz/driver.ts";
import { arrowShimUnavailable } from "../test/helpers/arrow_cpp.ts";

function option(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  if (at < 0) return fallback;
  const value = Number(process.argv[at + 1]);
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`--${name} needs a non-negative integer`);
  return value;
}

const reportAt = process.argv.indexOf("--report");
const arrow = !process.argv.includes("--no-arrow");
// Without the reference every compared case would count as a disagreement:
// stop before the first case instead, saying how to build it.
const missing = arrow ? arrowShimUnavailable() : null;
if (missing !== null) {
  console.error(`fuzz: ${missing} Or pass --no-arrow to run without comparing.`);
  process.exit(2);
}
const report = await runFuzz({
  seed: option("seed", 1),
  cases: option("cases", 100_000),
  from: option("from", 0),
  chunk: option("chunk", 2000),
  arrow,
  log: (line) => console.log(line),
});
const text = JSON.stringify(report, null, 2);
console.log(text);
if (reportAt >= 0) writeFileSync(process.argv[reportAt + 1], text);
process.exit(report.crashes + report.hangs + report.problems + report.disagreements === 0 ? 0 : 1);
