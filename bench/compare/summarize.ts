/**
 * The target rows of several `bench/compare.ts --json` files side by side,
 * as the markdown table bench/RESULTS.md records (one column per run, then
 * whether the row held in every run):
 *
 *   for i in 1 2 3; do bun bench/compare.ts --json /tmp/run$i.json; done
 *   bun bench/compare/summarize.ts /tmp/run1.json /tmp/run2.json /tmp/run3.json
 */
import { readFileSync } from "node:fs";

type TargetRow = { group: string; measure: string; value: number; target: string; holds: boolean | null };
type Run = { meta: Record<string, unknown>; targets: TargetRow[] };

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error("usage: bun bench/compare/summarize.ts run1.json [run2.json ...]");
  process.exit(2);
}
const runs = files.map((file) => JSON.parse(readFileSync(file, "utf8")) as Run);

const verdict = (holds: boolean | null) => (holds === null ? "n/a" : holds ? "holds" : "fails");
const cell = (row: TargetRow | undefined) => (row === undefined ? "-" : `${row.value.toFixed(2)}x ${verdict(row.holds)}`);

const lines = [
  `| target | measure | limit | ${runs.map((_, i) => `run ${i + 1}`).join(" | ")} | every run |`,
  `|---|---|---|${runs.map(() => "---:").join("|")}|---|`,
];
runs[0].targets.forEach((first, i) => {
  const rows = runs.map((run) => run.targets[i]);
  const all = rows.every((row) => row?.holds === true) ? "**HOLDS**" : rows.some((row) => row?.holds === true) ? "varies" : "FAILS";
  lines.push(`| ${first.group} | ${first.measure} | ${first.target} | ${rows.map(cell).join(" | ")} | ${all} |`);
});
console.log(lines.join("\n"));
