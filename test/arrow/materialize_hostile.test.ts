/**
 * { materialize: true } on default-validated trees whose nested children
 * hold out-of-range middle offsets (default validation reads only the
 * first and last offsets of each node). Materialization copies every node
 * below a list-view or run-end encoded array, so it proves every range it
 * reads, at every depth: each case gets an InvalidLayoutError naming the
 * node, never a hang, a crash or garbage values. Each case runs in its
 * own process (test/helpers/materialize_child.ts) under a time limit, so
 * a hang fails the test instead of stalling the suite.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { testRoot } from "../helpers/paths.ts";

const child = join(testRoot, "helpers", "materialize_child.ts");

type Outcome = { error: string | null; message?: string; values?: unknown; clean: { live: number; doubles: number } };

function run(name: string): Outcome {
  const proc = Bun.spawnSync([process.execPath, child, name], { timeout: 30_000, stdout: "pipe", stderr: "pipe" });
  const out = proc.stdout.toString().trim();
  if (proc.exitCode !== 0 || out === "") {
    throw new Error(`case "${name}" did not finish (exit ${proc.exitCode}, signal ${proc.signalCode}): ${proc.stderr.toString().slice(-2000)}`);
  }
  return JSON.parse(out.split("\n").at(-1)!) as Outcome;
}

const hostile: [string, string][] = [
  ["list-view > large list", `"lv" (+vl) > "inner": list 1 (offsets 1125899906842624 to 4) is out of the 4 child values`],
  ["list-view > struct > large list", `"lv" (+vl) > "s" > "inner": list 1 (offsets 1125899906842624 to 4) is out of the 4 child values`],
  ["list-view > fixed-size list > large list", `"lv" (+vl) > "fsl" > "inner": list 1 (offsets 1125899906842624 to 4) is out of the 4 child values`],
  ["list-view > list > large list", `"lv" (+vl) > "outer" > "inner": list 1 (offsets 1125899906842624 to 4) is out of the 4 child values`],
  ["list-view > sparse union > large list", `"lv" (+vl) > "u" > "inner": list 1 (offsets 1125899906842624 to 4) is out of the 4 child values`],
  ["list-view > dense union offset", `"lv" (+vl) > "u": dense union slot 1 (offset 1000) is out of child 0's 2 values`],
  ["list-view > dense union type id", `"lv" (+vl) > "u": union slot 1 has type id 9, which names no child`],
  ["list-view > map", `"lv" (+vl) > "m": list 1 (offsets 1073741824 to 2) is out of the 2 child values`],
  ["list-view > large binary", `"lv" (+vl) > "bin": value 1 (offsets 1125899906842624 to 4) is out of the 4 value bytes`],
  ["list-view > utf8 going backwards", `"lv" (+vl) > "text": value 1 (offsets 3 to 2) is out of the 2 value bytes`],
  ["run-end encoded > large list", `"runs" (+r): list 0 (offsets 0 to 1125899906842624) is out of the 4 child values`],
  ["run-end encoded > struct > large list", `"runs" (+r) > "inner": list 0 (offsets 0 to 1125899906842624) is out of the 4 child values`],
];

describe("materialization proves every nested range it reads", () => {
  for (const [name, message] of hostile) {
    test(`${name}: InvalidLayoutError naming the node`, () => {
      const outcome = run(name);
      expect(outcome.error).toBe("InvalidLayoutError");
      expect(outcome.message).toContain(message);
      expect(outcome.clean).toEqual({ live: 0, doubles: 0 });
    });
  }

  test("a well-formed list-view of lists is still copied in slot order", () => {
    const outcome = run("well-formed list-view > list");
    expect(outcome.error).toBeNull();
    expect(outcome.values).toEqual([[[8, 9]], [[7]]]);
    expect(outcome.clean).toEqual({ live: 0, doubles: 0 });
  });
});
