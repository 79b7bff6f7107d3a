/**
 * ts/ is a stack of layers (CONTRIBUTING.md "Layers"): a module imports
 * only from its own layer or the layers below it, apache-arrow is imported
 * by the arrow layer alone, and the entry files at ts/ root only re-export.
 * This walks every import of every module in ts/, static and dynamic,
 * types included.
 */
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { testRoot } from "../helpers/paths.ts";

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

type Module = { path: string; source: string };

function modulesUnder(dir: string): Module[] {
  const found: Module[] = [];
  for (const name of readdirSync(dir)) {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) found.push(...modulesUnder(full));
    else if (name.endsWith(".ts")) found.push({ path: relative(tsRoot, full), source: readFileSync(full, "utf8") });
  }
  return found;
}

/** Every module specifier `source` imports or re-exports, comments left out. */
function specifiers(source: string): string[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
  const found: string[] = [];
  for (const match of code.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)(["'])([^"']+)\1/gm)) found.push(match[2]);
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

/** Every broken rule among `modules`, one line each. */
export function layerProblems(modules: Module[]): string[] {
  const problems: string[] = [];
  for (const { path, source } of modules) {
    const from = layerOf(path);
    if (rank(from) < 0) problems.push(`${path}: folder ${from} is not a layer (${layers.join(", ")})`);
    for (const specifier of specifiers(source)) {
      if (specifier === "apache-arrow" || specifier.startsWith("apache-arrow/")) {
        if (from !== arrowLayer) problems.push(`${path}: imports apache-arrow outside ts/${arrowLayer}/`);
        continue;
      }
      if (!specifier.startsWith(".")) continue;
      const target = normalize(join(dirname(path), specifier));
      if (target.startsWith("..")) { problems.push(`${path}: imports ${specifier}, outside ts/`); continue; }
      const to = layerOf(target);
      if (from === "entry" && to === "entry") problems.push(`${path}: entry imports entry ${target}`);
      else if (rank(to) > rank(from)) problems.push(`${path}: ${from} imports ${target} from the higher layer ${to}`);
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
  return problems;
}

/** The modules `entry` loads, itself included, following relative imports. */
function loadedBy(entry: string, modules: Module[]): Set<string> {
  const byPath = new Map(modules.map((m) => [m.path, m]));
  const seen = new Set<string>();
  const pending = [entry];
  while (pending.length > 0) {
    const path = pending.pop()!;
    const module = byPath.get(path);
    if (seen.has(path) || module === undefined) continue;
    seen.add(path);
    for (const specifier of specifiers(module.source)) {
      if (specifier.startsWith(".")) pending.push(normalize(join(dirname(path), specifier)));
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

  test("the checker catches an upward import, a sideways entry import, apache-arrow elsewhere and code in an entry", () => {
    const planted: Module[] = [
      { path: "core/errors.ts", source: 'import { ImportedArray } from "../native/imported_array.ts";' },
      { path: "native/owner.ts", source: 'import type { Table } from "apache-arrow";' },
      { path: "device/runtime.ts", source: 'const m = await import("../arrow/export.ts");' },
      { path: "raw.ts", source: 'export { x } from "./index.ts";\nconsole.log(1);' },
      { path: "arrow/table.ts", source: '// import { main } from "../cli/main.ts";\nimport { Table } from "apache-arrow";\nimport { check } from "../core/ffi/library.ts";' },
    ];
    expect(layerProblems(planted)).toEqual([
      "core/errors.ts: core imports native/imported_array.ts from the higher layer native",
      "native/owner.ts: imports apache-arrow outside ts/arrow/",
      "device/runtime.ts: device imports arrow/export.ts from the higher layer arrow",
      "raw.ts: entry imports entry index.ts",
      "raw.ts: an entry file only re-exports; found: console.log(1)",
    ]);
  });
});

describe("test/ areas", () => {
  const areas = ["core", "native", "device", "arrow", "peers", "package", "structure", "release"];

  test("every test file sits in an area folder, so the fast tier (all but release/) and release/ cover them all", () => {
    const misplaced = [...new Bun.Glob("**/*.test.ts").scanSync(testRoot)].filter((path) => !areas.includes(path.split("/")[0]!) || path.split("/").length !== 2);
    expect(misplaced).toEqual([]);
  });
});
