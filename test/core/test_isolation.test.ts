// Leak checks count only what their own test made (test/helpers/leaks.ts,
// preloaded baseline): a test that leaks fails, and the tests after it, in
// its file and in the next file, still pass. Run in a child `bun test` on
// planted files, so that the planted leak stays out of this process.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const root = resolve(import.meta.dir, "..", "..");
const work = mkdtempSync(join(tmpdir(), "isolation-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const check = (countersFrom: string) => `
import { afterEach, expect, test } from "bun:test";
import { tableFromArrays } from "${Bun.resolveSync("apache-arrow", root)}";
import { exportArray } from "${root}/ts/index.ts";
import { nonZeroCounters } from "${countersFrom}";
import { disposeProduced, produceArray, producerClean } from "${root}/test/helpers/producer.ts";
afterEach(() => {
  expect(nonZeroCounters()).toEqual({});
  expect(producerClean()).toEqual({ live: 0, doubles: 0 });
});
const batch = () => tableFromArrays({ id: Int32Array.of(1, 2, 3) }).batches[0];
const produced = () => produceArray({ format: "i", length: 3, buffers: [null, Int32Array.of(1, 2, 3)] });
`;

/** A file whose first test leaks an export and a producer's struct, and
 * whose second test leaks nothing. */
const leaking = `${check(`${root}/test/helpers/leaks.ts`)}
const kept: unknown[] = [];
test("leaks", () => {
  kept.push(exportArray(batch()), produced());
});
test("after the leak, in the same file", () => {
  using out = exportArray(batch());
  expect(out.arrayReleased).toBe(false);
});
`;

/** The next file: exports and releases, with the same checks. */
const clean = (countersFrom: string) => `${check(countersFrom)}
test("the next file", () => {
  using out = exportArray(batch());
  disposeProduced(produced());
  expect(out.arrayReleased).toBe(false);
});
`;

type Run = { pass: number; fail: number; output: string };

function bunTest(files: string[]): Run {
  const child = Bun.spawnSync([process.execPath, "test", "--preload", join(root, "test/helpers/isolation.ts"), ...files], { cwd: work, stdout: "pipe", stderr: "pipe" });
  const output = `${child.stdout.toString()}${child.stderr.toString()}`;
  const count = (word: string) => Number(output.match(new RegExp(`^ *(\\d+) ${word}$`, "m"))?.[1] ?? -1);
  return { pass: count("pass"), fail: count("fail"), output };
}

describe("a leak fails its own test only", () => {
  test("the leaking test fails; the next test of its file and the next file pass", () => {
    writeFileSync(join(work, "a_leaks.test.ts"), leaking);
    writeFileSync(join(work, "b_clean.test.ts"), clean(`${root}/test/helpers/leaks.ts`));
    const run = bunTest(["./a_leaks.test.ts", "./b_clean.test.ts"]);
    expect({ pass: run.pass, fail: run.fail }, run.output).toEqual({ pass: 2, fail: 1 });
    expect(run.output).toContain("(fail) leaks");
    expect(run.output).toContain("(pass) after the leak, in the same file");
    expect(run.output).toContain("(pass) the next file");
  });

  test("the plant is seen: a check of the whole process's counters fails in the next file", () => {
    writeFileSync(join(work, "a_leaks.test.ts"), leaking);
    writeFileSync(join(work, "b_process.test.ts"), clean(`${root}/ts/diagnostics.ts`));
    const run = bunTest(["./a_leaks.test.ts", "./b_process.test.ts"]);
    expect(run.output).toContain("(fail) the next file");
  });
});
