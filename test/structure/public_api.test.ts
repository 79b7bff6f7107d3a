/**
 * The public API (what each entry point of package.json's "exports"
 * map exports) is explicitly typed and documented: see
 * test/helpers/public_api.ts for the rules. Test and demo helpers stay
 * off every entry point.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { packageApiProblems, publicApiProblems } from "../helpers/public_api.ts";
import { testRoot } from "../helpers/paths.ts";

describe("public API", () => {
  const entries = { ".": "ts/index.ts", "./raw": "ts/raw.ts", "./device": "ts/device.ts", "./diagnostics": "ts/diagnostics.ts", "./python": "ts/python.ts" };

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

  test("the device entry point has pinned host memory: allocate, register, stage", async () => {
    const device = await import("../../ts/device.ts");
    expect(typeof device.HostRegistration).toBe("function");
    expect(typeof device.DeviceRuntime.prototype.registerHost).toBe("function");
    expect(typeof device.DeviceMemory.prototype.hostView).toBe("function");
  });

  test("the everyday entry point has the one-call Table functions and the typed errors", async () => {
    const everyday = await import("../../ts/index.ts");
    for (const name of ["exportTable", "importTable", "exportArray", "exportSchema", "exportBatches", "exportStream", "exportAsyncStream", "importVector", "importRecordBatch", "readTable", "recordBatches", "AsyncRecordBatchStream", "ArrowDeviceError", "LibraryLoadError"]) {
      expect(typeof (everyday as Record<string, unknown>)[name]).toBe("function");
    }
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
