/**
 * The public API (what each entry point of package.json's "exports"
 * map exports) is an allowlist: public_api.txt holds every name of every
 * entry point with its signatures (from the type checker) and its run-time
 * kind and arity, so that any change to the surface is a visible diff.
 * Every export is explicitly typed and documented (see
 * test/helpers/public_api.ts for the rules); test and demo helpers stay
 * off every entry point.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { apiSnapshot, packageApiProblems, publicApiProblems } from "../helpers/public_api.ts";
import { testRoot } from "../helpers/paths.ts";

/** The snapshot text of `entries` (subpath -> source file): per entry
 * point, its names with their signatures, then each value's run-time
 * `typeof` and, for functions and classes, its `length`. */
async function surfaceText(entries: Record<string, string>): Promise<string> {
  const signatures = apiSnapshot(Object.values(entries));
  const out = [
    "# The public API of each entry point: signatures from the type checker,",
    "# then each value's run-time kind. Checked by public_api.test.ts;",
    "# UPDATE_API_SNAPSHOT=1 rewrites it after a deliberate change.",
  ];
  for (const [subpath, source] of Object.entries(entries)) {
    const module = (await import(resolve(testRoot, "..", source))) as Record<string, unknown>;
    const values = Object.keys(module).sort();
    const lines = signatures[source]!;
    const names = lines.filter((line) => !line.startsWith("  ")).map((line) => /^(?:class|function|const|type) (\w+)/.exec(line)?.[1]);
    const count = new Set(names).size;
    // A value the checker sees but the module lacks (or the reverse)
    // shows as a line of its own.
    const declared = new Set(lines.map((line) => /^(?:class|function|const) (\w+)/.exec(line)?.[1]).filter((name) => name !== undefined));
    const mismatched = [...new Set([...declared, ...values])].filter((name) => declared.has(name) !== values.includes(name)).sort();
    out.push("", `## ${subpath} (${source}): ${count} names (${values.length} values, ${count - values.length} types)`, ...lines, "", "run time:");
    for (const name of mismatched) out.push(`  ${name}: ${declared.has(name) ? "declared but not exported at run time" : "exported at run time but not declared"}`);
    for (const name of values) {
      const value = module[name];
      out.push(`  ${name}: ${typeof value}${typeof value === "function" ? `, length ${(value as (...args: unknown[]) => unknown).length}` : ""}`);
    }
  }
  return `${out.join("\n")}\n`;
}

describe("public API", () => {
  const entries = { ".": "ts/index.ts", "./raw": "ts/raw.ts", "./device": "ts/device.ts", "./diagnostics": "ts/diagnostics.ts", "./python": "ts/python.ts", "./adbc": "ts/adbc.ts" };

  test("package.json's exports map has exactly these entry points, each with types, bun and import conditions", () => {
    const exportsMap = (JSON.parse(readFileSync(resolve(testRoot, "..", "package.json"), "utf8")) as { exports: Record<string, Record<string, string>> }).exports;
    expect(Object.keys(exportsMap).filter((key) => key !== "./package.json").sort()).toEqual(Object.keys(entries).sort());
    for (const [subpath, source] of Object.entries(entries)) {
      const js = source.replace(/^ts\//, "./dist/js/").replace(/\.ts$/, ".js");
      // "node" (after "bun", which Bun matches first): a module that says this package needs Bun.
      expect(exportsMap[subpath]).toEqual({ types: js.replace(/\.js$/, ".d.ts"), bun: js, node: "./dist/js/node.js", import: js, default: js });
      expect(Object.keys(exportsMap[subpath]!)).toEqual(["types", "bun", "node", "import", "default"]);
    }
  });

  test("every export of every entry point is documented, with explicit types, and the types it mentions are exported", () => {
    const problems = packageApiProblems(Object.values(entries));
    expect(Object.keys(problems).sort()).toEqual(Object.values(entries).sort());
    for (const entry of Object.values(entries)) expect({ entry, problems: problems[entry] }).toEqual({ entry, problems: [] });
  }, 120_000);

  test("test and demo helpers are on no entry point", async () => {
    const helpers = ["consumeNatively", "fnv1a32", "schemaPlan", "structLayouts", "typeSignature", "layoutProblems"];
    for (const entry of Object.values(entries)) {
      const exported = Object.keys(await import(resolve(testRoot, "..", entry)));
      expect(exported.filter((name) => helpers.includes(name))).toEqual([]);
    }
  });

  test("no entry point reaches a function that adopts a raw native owner address", async () => {
    // A wrong address there would be dereferenced natively: only the
    // library's own modules may adopt the owners its native calls return.
    const adopters = ["adoptImportOwner", "adoptImportSnapshot", "adoptOwner", "adoptSnapshot"];
    for (const entry of Object.values(entries)) {
      const module = (await import(resolve(testRoot, "..", entry))) as Record<string, unknown>;
      expect({ entry, exported: Object.keys(module).filter((name) => adopters.includes(name)) }).toEqual({ entry, exported: [] });
      for (const [name, value] of Object.entries(module)) {
        if (typeof value !== "function") continue;
        const statics = Object.getOwnPropertyNames(value).filter((key) => adopters.includes(key));
        expect({ entry, name, statics }).toEqual({ entry, name, statics: [] });
      }
    }
    // The library itself still adopts what its pulls return.
    const { adoptImportOwner } = await import("../../ts/native/imported.ts");
    expect(typeof adoptImportOwner).toBe("function");
  });

  test("each entry point's names and signatures are the committed snapshot (public_api.txt)", async () => {
    // A deliberate change: UPDATE_API_SNAPSHOT=1 rewrites the file; the
    // diff is the change to review.
    const text = await surfaceText(entries);
    const file = resolve(testRoot, "structure", "public_api.txt");
    if (process.env.UPDATE_API_SNAPSHOT === "1") writeFileSync(file, text);
    expect(text.split("\n")).toEqual(readFileSync(file, "utf8").split("\n"));
  }, 120_000);

  test("the root entry point holds at most 45 names, values and types together", () => {
    const text = readFileSync(resolve(testRoot, "structure", "public_api.txt"), "utf8");
    const count = Number(/^## \. \(ts\/index\.ts\): (\d+) names/m.exec(text)?.[1]);
    expect(count).toBeGreaterThan(0);
    expect(count).toBeLessThanOrEqual(45);
  });

  test("the checker reports each kind of problem, and only those", () => {
    const problems = publicApiProblems("test/helpers/public_api_sample.ts", resolve(testRoot, "helpers"));
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
