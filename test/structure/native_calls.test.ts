/**
 * The C files of the CPython shim (native/) call each other one way: a
 * file calls functions defined in the files below it, and no two files
 * call each other, directly or through others. The calls are derived from
 * the sources: each file's non-static function definitions, then every
 * call in another file of a name defined there (comments and strings
 * stripped). build.zig compiles every one of the files.
 */
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const root = join(import.meta.dir, "../..");
const nativeRoot = join(root, "native");

type Sources = Map<string, string>;
type Graph = Map<string, string[]>;

/** Every .c file of native/, by name. */
function nativeSources(): Sources {
  const names = readdirSync(nativeRoot).filter((name) => name.endsWith(".c")).sort();
  return new Map(names.map((name) => [name, readFileSync(join(nativeRoot, name), "utf8")]));
}

/** `source` without comments, string literals and character literals. */
function stripped(source: string): string {
  return source
    .replace(/\/\*[\s\S]*?\*\//g, " ")
    .replace(/\/\/[^\n]*/g, " ")
    .replace(/"(?:[^"\\\n]|\\.)*"/g, '""')
    .replace(/'(?:[^'\\\n]|\\.)*'/g, "''");
}

/** The functions a file defines for the other files: top-level definitions not marked static. */
function definedFunctions(code: string): string[] {
  const names: string[] = [];
  for (const match of code.matchAll(/^(?!static\b)[A-Za-z_][\w \t*]*?\b([A-Za-z_]\w*)\s*\([^;{}]*\)\s*\{/gm)) names.push(match[1]!);
  return names;
}

/** File -> the other files whose functions it calls. */
function callGraph(sources: Sources): Graph {
  const code = new Map([...sources].map(([file, source]) => [file, stripped(source)]));
  const definer = new Map<string, string>();
  for (const [file, text] of code) for (const name of definedFunctions(text)) definer.set(name, file);
  const graph: Graph = new Map();
  for (const [file, text] of code) {
    const targets = new Set<string>();
    for (const match of text.matchAll(/\b([A-Za-z_]\w*)\s*\(/g)) {
      const target = definer.get(match[1]!);
      if (target && target !== file) targets.add(target);
    }
    graph.set(file, [...targets].sort());
  }
  return graph;
}

/** Every call cycle, as the files of one strongly connected component (Tarjan). */
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
    if (component.length > 1) found.push(component.sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return found;
}

describe("native call graph", () => {
  const sources = nativeSources();
  const graph = callGraph(sources);

  test("the derivation finds the files and the calls between them", () => {
    expect(sources.size).toBeGreaterThanOrEqual(5);
    expect(definedFunctions(stripped(sources.get("abd_python_capsules.c")!))).toContain("new_capsule");
    expect(graph.get("abd_python_export.c")).toContain("abd_python_capsules.c");
    expect(graph.get("abd_python_import.c")).toContain("abd_python_streams.c");
  });

  test("no two files call each other, directly or through others", () => {
    expect(cycles(graph)).toEqual([]);
  });

  test("build.zig compiles every file", () => {
    const build = readFileSync(join(root, "build.zig"), "utf8");
    expect([...sources.keys()].filter((file) => !build.includes(`"native/${file}"`))).toEqual([]);
  });

  test("the checks catch a call cycle, through a third file too, and ignore comments and static functions", () => {
    const planted: Sources = new Map([
      ["a.c", "int f(int x) {\n  return g(x); /* h(x) */\n}\nstatic int k(void) { return 0; }\n"],
      ["b.c", "int g(int x) {\n  return h(x);\n}\n"],
      ["c.c", 'int h(int x) {\n  return f(x) + printf("g(1)");\n}\n'],
      ["d.c", "void m(void) {\n  // f(1)\n  k();\n}\n"],
    ]);
    const plantedGraph = callGraph(planted);
    expect(plantedGraph).toEqual(
      new Map([
        ["a.c", ["b.c"]],
        ["b.c", ["c.c"]],
        ["c.c", ["a.c"]],
        ["d.c", []],
      ]),
    );
    expect(cycles(plantedGraph)).toEqual([["a.c", "b.c", "c.c"]]);
  });
});
