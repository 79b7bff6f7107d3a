/**
 * The public API (what ts/index.ts exports) is explicitly typed and
 * documented: see test/helpers/public_api.ts for the rules.
 */
import { describe, expect, test } from "bun:test";
import { resolve } from "node:path";
import { publicApiProblems } from "./helpers/public_api.ts";

describe("public API", () => {
  test("every export of ts/index.ts is documented, with explicit types and exported option types", () => {
    expect(publicApiProblems("ts/index.ts")).toEqual([]);
  }, 60_000);

  test("the checker reports each kind of problem, and only those", () => {
    const problems = publicApiProblems("test/helpers/public_api_sample.ts", resolve(import.meta.dir, "helpers"));
    const at = (line: number) => `test/helpers/public_api_sample.ts:${line}`;
    expect(problems.sort()).toEqual([
      `${at(6)} HiddenOptions: used by the public hiddenOptions but not exported from test/helpers/public_api_sample.ts`,
      `${at(8)} undocumented: no doc comment`,
      `${at(13)} inferred: no explicit return type`,
      `${at(18)} inlineOptions: parameter options has an inline object type; name it and export it`,
      `${at(29)} Sample.undocumentedGetter: no doc comment`,
    ].sort());
  }, 60_000);
});
