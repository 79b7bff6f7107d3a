/**
 * zig/ is in layer folders (CONTRIBUTING.md, "Zig layers"):
 *   core <- validate <- export <- import <- stream <- async <- device <- adbc <- zig/*.zig
 * A file imports files of its own folder or of a folder to its left, never
 * of one to its right; the files at zig/ itself (c_api.zig and the
 * c_api_*.zig files it pulls in, the only files that export C symbols,
 * manifest.zig and the build root root.zig) may import any folder. No two files import each other, directly or through
 * others. This walks every `@import("....zig")` under zig/ and checks both.
 * Each file holds one job a reader can hold: none is over 600 lines (test
 * files too), and each opens with a `//!` comment saying what it owns.
 */
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize, relative, sep } from "node:path";

const zigRoot = join(import.meta.dir, "../../zig");

/** The layer folders, lowest first. Files at zig/ itself sit above them all. */
const layers = ["core", "validate", "export", "import", "stream", "async", "device", "adbc"];
const top = layers.length;

type Graph = Map<string, string[]>;

/** The most lines a .zig file may have. */
const maxLines = 600;

/** Every .zig file under zig/, as a path relative to zig/ with "/" separators. */
function zigFiles(): string[] {
  const names = readdirSync(zigRoot, { recursive: true }) as string[];
  return names.filter((name) => name.endsWith(".zig")).map((name) => name.split(sep).join("/")).sort();
}

/** File -> the files it imports (relative to zig/; "../x" when outside it). */
function importGraph(): Graph {
  const graph: Graph = new Map();
  for (const file of zigFiles()) {
    const source = readFileSync(join(zigRoot, file), "utf8");
    const targets = new Set<string>();
    for (const match of source.matchAll(/@import\("([^"]+\.zig)"\)/g)) {
      targets.add(normalize(join(dirname(file), match[1]!)).split(sep).join("/"));
    }
    graph.set(file, [...targets].sort());
  }
  return graph;
}

/** A source's line count (a final newline ends the last line, it adds none). */
function lineCount(source: string): number {
  return source.split("\n").length - (source.endsWith("\n") ? 1 : 0);
}

/** "path: N lines" for every file over `maxLines`, and "path: ..." for one that does not open with `//!`. */
function shapeProblems(files: { path: string; source: string }[]): string[] {
  const problems: string[] = [];
  for (const { path, source } of files) {
    const lines = lineCount(source);
    if (lines > maxLines) problems.push(`${path}: ${lines} lines, over ${maxLines}`);
    if (!source.startsWith("//!")) problems.push(`${path}: does not open with a //! comment saying what it owns`);
  }
  return problems;
}

/** A file's layer rank: its folder's index, `top` for zig/ itself, -1 for a folder that is not a layer. */
function rank(file: string): number {
  const parts = file.split("/");
  if (parts.length === 1) return top;
  return parts.length === 2 ? layers.indexOf(parts[0]!) : -1;
}

/** "a -> b" for every import that leaves the layer order. */
function layerViolations(graph: Graph): string[] {
  const problems: string[] = [];
  for (const [file, targets] of graph) {
    if (rank(file) < 0) problems.push(`${file} is not in a layer folder (${layers.join(", ")}) or at zig/ itself`);
    for (const target of targets) {
      if (!graph.has(target)) problems.push(`${file} -> ${target}: not a file under zig/`);
      else if (rank(target) > rank(file)) problems.push(`${file} -> ${target}: imports a higher layer`);
    }
  }
  return problems;
}

/** Every import cycle, as the files of one strongly connected component (Tarjan). */
function cycles(graph: Graph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let next = 0;
  const visit = (file: string): void => {
    index.set(file, next);
    low.set(file, next);
    next++;
    stack.push(file);
    onStack.add(file);
    for (const target of graph.get(file) ?? []) {
      if (!graph.has(target)) continue;
      if (!index.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file)!, low.get(target)!));
      } else if (onStack.has(target)) {
        low.set(file, Math.min(low.get(file)!, index.get(target)!));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== file);
    if (component.length > 1 || graph.get(file)!.includes(file)) found.push(component.sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return found;
}

describe("zig layers", () => {
  const graph = importGraph();

  test("the walk finds the sources of every layer", () => {
    const apiImports = new Set([...graph].filter(([file]) => file.startsWith("c_api")).flatMap(([, targets]) => targets));
    expect(apiImports.size).toBeGreaterThan(10);
    for (const layer of layers) expect([...graph.keys()].some((file) => file.startsWith(`${layer}/`))).toBe(true);
  });

  test("no file imports a file of a higher layer", () => {
    expect(layerViolations(graph)).toEqual([]);
  });

  test("no import cycle between files", () => {
    expect(cycles(graph)).toEqual([]);
  });

  test(`no file is over ${maxLines} lines, and each opens with a //! comment`, () => {
    const files = zigFiles().map((path) => ({ path, source: readFileSync(join(zigRoot, path), "utf8") }));
    expect(files.length).toBe(graph.size);
    expect(shapeProblems(files)).toEqual([]);
  });

  test("the shape check catches an oversize file and a missing opening comment", () => {
    const body = (n: number) => "//! Owns one thing.\n" + "const x = 1;\n".repeat(n - 1);
    expect(lineCount(body(maxLines))).toBe(maxLines);
    const planted = [
      { path: "core/fits.zig", source: body(maxLines) },
      { path: "core/long.zig", source: body(maxLines + 1) },
      { path: "core/bare.zig", source: "const x = 1;\n" },
    ];
    expect(shapeProblems(planted)).toEqual([
      `core/long.zig: ${maxLines + 1} lines, over ${maxLines}`,
      "core/bare.zig: does not open with a //! comment saying what it owns",
    ]);
  });

  test("the checks catch an upward import and a cycle", () => {
    const broken: Graph = new Map([
      ["core/abi.zig", ["export/array.zig"]],
      ["export/array.zig", ["core/abi.zig"]],
      ["device/cuda.zig", ["device/runtime.zig"]],
      ["device/runtime.zig", ["device/cuda.zig"]],
      ["misc/x.zig", []],
    ]);
    expect(layerViolations(broken)).toEqual([
      "core/abi.zig -> export/array.zig: imports a higher layer",
      "misc/x.zig is not in a layer folder (core, validate, export, import, stream, async, device, adbc) or at zig/ itself",
    ]);
    expect(cycles(broken)).toEqual([
      ["core/abi.zig", "export/array.zig"],
      ["device/cuda.zig", "device/runtime.zig"],
    ]);
  });
});
