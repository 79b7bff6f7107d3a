/**
 * ts/ is a stack of layers (CONTRIBUTING.md "Layers"): a module imports
 * only from its own layer or the layers below it, apache-arrow is imported
 * by the arrow layer alone, and the entry files at ts/ root only re-export.
 * No modules import each other, directly or through others, inside a
 * layer or across layers: what two sides share moves into a module below
 * both. This sees every form of import (test/helpers/ts_imports.ts):
 * static, type-only, `import("x")`, `require("x")` and
 * `import.meta.require("x")`; it refuses an import of a computed name
 * (no reader can tell what it loads) and an import of the package itself
 * ("bun-arrow-device", "bun-arrow-device/...") from inside ts/.
 */
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { testRoot } from "../helpers/paths.ts";
import { importsOf, type FoundImport } from "../helpers/ts_imports.ts";

const tsRoot = join(testRoot, "..", "ts");

/** The layers, lowest first. */
const layers = ["core", "native", "device", "arrow", "adbc", "python", "cli"] as const;
/** The one layer that converts to and from apache-arrow objects. */
const arrowLayer = "arrow";
/** Entry files that work without apache-arrow installed: nothing they
 * load, however indirectly, is in the arrow layer. */
const arrowFree = ["raw.ts", "diagnostics.ts"];
/** Entry files that only re-export (package.json "exports"); ts/cli.ts
 * (the command's entry) and ts/node.ts (Node's refusal) run code. */
const reexportOnly = ["index.ts", "raw.ts", "device.ts", "diagnostics.ts", "python.ts", "adbc.ts"];
/** Packages a module may import besides its own relative paths: Bun's and
 * Node's built-ins, apache-arrow (the arrow layer), and the per-platform
 * packages of the native library. */
const packagePrefixes = ["bun:", "node:", "apache-arrow", "@bun-arrow-device/"];
/** This package's own name: ts/ imports its modules by relative path. */
const selfName = "bun-arrow-device";

export type Module = { path: string; source: string };

function modulesUnder(dir: string): Module[] {
  const found: Module[] = [];
  for (const name of readdirSync(dir)) {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) found.push(...modulesUnder(full));
    else if (name.endsWith(".ts")) found.push({ path: relative(tsRoot, full), source: readFileSync(full, "utf8") });
  }
  return found;
}

/** The layer of a path relative to ts/: its first folder, or "entry". */
function layerOf(path: string): string {
  const slash = path.indexOf("/");
  return slash < 0 ? "entry" : path.slice(0, slash);
}

function rank(layer: string): number {
  return layer === "entry" ? layers.length : layers.indexOf(layer as (typeof layers)[number]);
}

/** The module a relative `specifier` of `from` names, among `paths`
 * (with or without its .ts); null when none. */
function resolve(from: string, specifier: string, paths: Set<string>): string | null {
  const target = normalize(join(dirname(from), specifier));
  for (const candidate of [target, `${target}.ts`, join(target, "index.ts")]) if (paths.has(candidate)) return candidate;
  return null;
}

function describeImport(found: FoundImport): string {
  const kind = found.form === "static" ? (found.typeOnly ? "a type-only import" : "an import") : found.form === "dynamic" ? "import()" : "require()";
  return found.specifier === null ? `${kind} of a computed name` : `${kind} of ${found.specifier}`;
}

/** Module -> the modules it imports in a way that stays at run time
 * (everything but `import type` / `export type`), for the cycle rule. */
function runtimeGraph(modules: Module[]): Map<string, string[]> {
  const paths = new Set(modules.map((m) => m.path));
  const graph = new Map<string, string[]>();
  for (const { path, source } of modules) {
    const targets = new Set<string>();
    for (const found of importsOf(source)) {
      if (found.typeOnly || found.specifier === null || !found.specifier.startsWith(".")) continue;
      const target = resolve(path, found.specifier, paths);
      if (target !== null) targets.add(target);
    }
    graph.set(path, [...targets].sort());
  }
  return graph;
}

/** One line per cycle of `graph` ("a -> b -> a"): per group of modules
 * that reach each other, the shortest loop through its first module. */
export function cycles(graph: Map<string, string[]>): string[] {
  const order = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const groups: string[][] = [];
  const visit = (node: string) => {
    order.set(node, order.size);
    low.set(node, order.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!order.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, order.get(next)!));
      }
    }
    if (low.get(node) !== order.get(node)) return;
    const group: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      group.push(member);
    } while (member !== node);
    if (group.length > 1 || (graph.get(node) ?? []).includes(node)) groups.push(group.sort());
  };
  for (const node of [...graph.keys()].sort()) if (!order.has(node)) visit(node);
  return groups.sort((a, b) => a[0]!.localeCompare(b[0]!)).map((group) => {
    // Breadth-first from the group's first module back to itself.
    const members = new Set(group);
    const start = group[0]!;
    const cameFrom = new Map<string, string>();
    const queue = [start];
    let last: string | null = null;
    while (queue.length > 0 && last === null) {
      const node = queue.shift()!;
      for (const next of graph.get(node) ?? []) {
        if (!members.has(next)) continue;
        if (next === start) { last = node; break; }
        if (!cameFrom.has(next)) { cameFrom.set(next, node); queue.push(next); }
      }
    }
    const loop = [start];
    for (let node = last!; node !== start; node = cameFrom.get(node)!) loop.splice(1, 0, node);
    const others = group.length > loop.length ? ` (${group.length} modules reach each other: ${group.join(", ")})` : "";
    return `cycle: ${[...loop, start].join(" -> ")}${others}`;
  });
}

/** Every broken rule among `modules`, one line each. */
export function layerProblems(modules: Module[]): string[] {
  const problems: string[] = [];
  const paths = new Set(modules.map((m) => m.path));
  for (const { path, source } of modules) {
    const from = layerOf(path);
    if (rank(from) < 0) problems.push(`${path}: folder ${from} is not a layer (${layers.join(", ")})`);
    for (const found of importsOf(source)) {
      const where = `${path}:${found.line}`;
      const specifier = found.specifier;
      if (specifier === null) { problems.push(`${where}: ${describeImport(found)}; name the module literally`); continue; }
      if (specifier === selfName || specifier.startsWith(`${selfName}/`)) {
        problems.push(`${where}: ${describeImport(found)}, the package itself; import the module by its relative path`);
        continue;
      }
      if (specifier === "apache-arrow" || specifier.startsWith("apache-arrow/")) {
        if (from !== arrowLayer) problems.push(`${where}: ${describeImport(found)} outside ts/${arrowLayer}/`);
        continue;
      }
      if (!specifier.startsWith(".")) {
        if (!packagePrefixes.some((prefix) => specifier.startsWith(prefix))) problems.push(`${where}: ${describeImport(found)}, a package this project does not use (${packagePrefixes.join(", ")})`);
        continue;
      }
      const named = normalize(join(dirname(path), specifier));
      if (named.startsWith("..")) { problems.push(`${where}: ${describeImport(found)}, outside ts/`); continue; }
      const target = resolve(path, specifier, paths);
      if (target === null) { problems.push(`${where}: ${describeImport(found)}, which is no module under ts/`); continue; }
      const to = layerOf(target);
      if (from === "entry" && to === "entry") problems.push(`${where}: entry imports entry ${target}`);
      else if (rank(to) > rank(from)) problems.push(`${where}: ${from} imports ${target} from the higher layer ${to}`);
    }
    if (from === "entry" && reexportOnly.includes(path)) {
      const code = source.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
      for (const statement of code.split(";").map((s) => s.trim()).filter((s) => s !== "")) {
        if (!/^export\s+(type\s+)?(\*|\{[\s\S]*\})\s+from\s+["'][^"']+["']$/.test(statement)) {
          problems.push(`${path}: an entry file only re-exports; found: ${statement.split("\n")[0]}`);
        }
      }
    }
  }
  problems.push(...cycles(runtimeGraph(modules)));
  return problems;
}

/** The modules `entry` loads, itself included, following relative imports
 * of every form (type-only ones too: the arrow-free rule is stricter than
 * what runs). */
function loadedBy(entry: string, modules: Module[]): Set<string> {
  const byPath = new Map(modules.map((m) => [m.path, m]));
  const paths = new Set(byPath.keys());
  const seen = new Set<string>();
  const pending = [entry];
  while (pending.length > 0) {
    const path = pending.pop()!;
    const module = byPath.get(path);
    if (seen.has(path) || module === undefined) continue;
    seen.add(path);
    for (const found of importsOf(module.source)) {
      if (found.specifier?.startsWith(".")) pending.push(resolve(path, found.specifier, paths) ?? "");
    }
  }
  return seen;
}

describe("ts/ layers", () => {
  const modules = modulesUnder(tsRoot);

  test("every import points to the same layer or one below, and apache-arrow stays in ts/arrow/", () => {
    expect(modules.length).toBeGreaterThan(50);
    expect(layerProblems(modules)).toEqual([]);
  });

  test.each(arrowFree)("%s loads nothing from the arrow layer, so it works without apache-arrow", (entry) => {
    const loaded = [...loadedBy(entry, modules)];
    expect(loaded.length).toBeGreaterThan(1);
    expect(loaded.filter((path) => layerOf(path) === arrowLayer)).toEqual([]);
  });

  test("every layer folder has modules, and ts/ root holds only entry files", () => {
    const folders = new Set(modules.map((m) => layerOf(m.path)));
    expect([...folders].sort()).toEqual([...layers, "entry"].sort());
    const entries = modules.filter((m) => layerOf(m.path) === "entry").map((m) => m.path).sort();
    expect(entries).toEqual([...reexportOnly, "cli.ts", "node.ts"].sort());
  });

  /** Stub modules the planted imports name, so that each planted set
   * breaks one rule and resolves otherwise. */
  const stubs: Module[] = ["core/errors.ts", "core/ffi/library.ts", "native/imported_array.ts", "arrow/export.ts", "index.ts", "cli/main.ts"]
    .map((path) => ({ path, source: path === "index.ts" ? 'export { x } from "./core/errors.ts";' : "export const x = 1;" }));
  const problemsOf = (planted: Module[]) => layerProblems([...stubs, ...planted]);

  test("the checker catches an upward import, a sideways entry import, apache-arrow elsewhere and code in an entry", () => {
    const planted: Module[] = [
      { path: "core/args.ts", source: 'import { ImportedArray } from "../native/imported_array.ts";' },
      { path: "native/owner.ts", source: 'import type { Table } from "apache-arrow";' },
      { path: "raw.ts", source: 'export { x } from "./index.ts";\nconsole.log(1);' },
      { path: "arrow/table.ts", source: '// import { main } from "../cli/main.ts";\nconst s = "import(\'../cli/main.ts\')";\nimport { Table } from "apache-arrow";\nimport { check } from "../core/ffi/library.ts";' },
    ];
    expect(problemsOf(planted)).toEqual([
      "core/args.ts:1: core imports native/imported_array.ts from the higher layer native",
      "native/owner.ts:1: a type-only import of apache-arrow outside ts/arrow/",
      "raw.ts:1: entry imports entry index.ts",
      "raw.ts: an entry file only re-exports; found: console.log(1)",
    ]);
  });

  // One planted module per import form, each importing up a layer (or a
  // name no reader can check): every one must be a problem of its own.
  const forms: [string, string, string][] = [
    ["a static import", 'import { x } from "../arrow/export.ts";', "device/a.ts:1: device imports arrow/export.ts from the higher layer arrow"],
    ["a re-export", 'export { x } from "../arrow/export.ts";', "device/a.ts:1: device imports arrow/export.ts from the higher layer arrow"],
    ["a type-only import", 'import type { X } from "../arrow/export.ts";', "device/a.ts:1: device imports arrow/export.ts from the higher layer arrow"],
    ["a side-effect import", 'import "../arrow/export.ts";', "device/a.ts:1: device imports arrow/export.ts from the higher layer arrow"],
    ["import() of a literal", 'const m = await import("../arrow/export.ts");', "device/a.ts:1: device imports arrow/export.ts from the higher layer arrow"],
    ["import() in a type", 'let m: typeof import("../arrow/export.ts");', "device/a.ts:1: device imports arrow/export.ts from the higher layer arrow"],
    ["require() of a literal", 'const m = require("../arrow/export.ts");', "device/a.ts:1: device imports arrow/export.ts from the higher layer arrow"],
    ["import.meta.require() of a literal", 'const m = import.meta.require("../arrow/export.ts");', "device/a.ts:1: device imports arrow/export.ts from the higher layer arrow"],
    ["import() of a computed name", 'const name = "../arrow/export.ts";\nconst m = await import(name);', "device/a.ts:2: import() of a computed name; name the module literally"],
    ["import() of a template with a substitution", 'const m = await import(`../${"arrow"}/export.ts`);', "device/a.ts:1: import() of a computed name; name the module literally"],
    ["require() of a computed name", 'const m = require("../arrow/" + "export.ts");', "device/a.ts:1: require() of a computed name; name the module literally"],
    ["import.meta.require() of a computed name", 'const m = import.meta.require(process.env.X!);', "device/a.ts:1: require() of a computed name; name the module literally"],
    ["a self-import of the package", 'import { importVector } from "bun-arrow-device";', "device/a.ts:1: an import of bun-arrow-device, the package itself; import the module by its relative path"],
    ["a self-import of an entry of the package", 'const raw = await import("bun-arrow-device/raw");', "device/a.ts:1: import() of bun-arrow-device/raw, the package itself; import the module by its relative path"],
    ["an unknown package", 'import { z } from "zod";', "device/a.ts:1: an import of zod, a package this project does not use (bun:, node:, apache-arrow, @bun-arrow-device/)"],
    ["a path outside ts/", 'import { x } from "../../test/helpers/gc.ts";', "device/a.ts:1: an import of ../../test/helpers/gc.ts, outside ts/"],
    ["a path to no module", 'import { x } from "./missing.ts";', "device/a.ts:1: an import of ./missing.ts, which is no module under ts/"],
  ];
  test.each(forms)("the checker catches %s", (_, source, problem) => {
    expect(problemsOf([{ path: "device/a.ts", source }])).toEqual([problem]);
  });

  test("the checker ignores imports in comments and strings, and methods named import or require", () => {
    const source = [
      '/* import { x } from "../arrow/export.ts"; */',
      '// const m = require("../arrow/export.ts");',
      'const text = "import(\'../arrow/export.ts\')";',
      "const template = `require(\"../arrow/export.ts\")`;",
      "const pattern = /import\\(\"x\"\\)/;",
      "class Python { import(name: string): void {} require(name: string): void {} }",
      "new Python().import(text); new Python().require(text);",
      'import { x } from "../core/errors.ts";',
    ].join("\n");
    expect(problemsOf([{ path: "device/a.ts", source }])).toEqual([]);
  });

  test("the checker catches a cycle inside a layer, through every run-time import form, and names its files", () => {
    const planted: Module[] = [
      { path: "native/a.ts", source: 'import { b } from "./b.ts";\nexport const a = 1;' },
      { path: "native/b.ts", source: 'export const b = await import("./c.ts");' },
      { path: "native/c.ts", source: 'const { a } = require("./a.ts");\nimport type { Z } from "./z.ts";' },
      { path: "native/z.ts", source: 'import type { A } from "./a.ts";\nexport type Z = 1;' },
    ];
    expect(problemsOf(planted)).toEqual(["cycle: native/a.ts -> native/b.ts -> native/c.ts -> native/a.ts"]);
    // Type-only imports are erased when compiled (verbatimModuleSyntax keeps
    // every other import): a loop through them alone is no cycle.
    expect(problemsOf(planted.map((m) => ({ ...m, source: m.source.replace("require(", "(").replace("./a.ts\");", "./a.ts\") as never;") })))).toEqual([]);
  });

  test("the checker catches a cycle between layers as well as its upward import", () => {
    const planted: Module[] = [
      { path: "native/a.ts", source: 'import { b } from "../device/b.ts";' },
      { path: "device/b.ts", source: 'import { a } from "../native/a.ts";' },
    ];
    expect(problemsOf(planted)).toEqual([
      "native/a.ts:1: native imports device/b.ts from the higher layer device",
      "cycle: device/b.ts -> native/a.ts -> device/b.ts",
    ]);
  });

  test("the cycle report names every module of a knot beyond its shortest loop", () => {
    const graph = new Map([["a", ["b", "c"]], ["b", ["a"]], ["c", ["b"]]]);
    expect(cycles(graph)).toEqual(["cycle: a -> b -> a (3 modules reach each other: a, b, c)"]);
  });
});

describe("test/ areas", () => {
  const areas = ["core", "native", "device", "arrow", "peers", "package", "structure", "release"];

  test("every test file sits in an area folder, so the fast tier (all but release/) and release/ cover them all", () => {
    const misplaced = [...new Bun.Glob("**/*.test.ts").scanSync(testRoot)].filter((path) => !areas.includes(path.split("/")[0]!) || path.split("/").length !== 2);
    expect(misplaced).toEqual([]);
  });
});
