/**
 * The arrow layer's modules each hold one job (CONTRIBUTING.md "Layers"):
 * none is over 600 lines, each opens with a comment saying what it owns,
 * and none hands its private functions to its siblings through an
 * exported grab-bag object: a sibling imports what it needs from the
 * module that defines it.
 */
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { testRoot } from "../helpers/paths.ts";

const arrowRoot = join(testRoot, "..", "ts", "arrow");
const maxLines = 600;

function modulesUnder(dir: string): { path: string; source: string }[] {
  const found: { path: string; source: string }[] = [];
  for (const name of readdirSync(dir)) {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) found.push(...modulesUnder(full));
    else if (name.endsWith(".ts")) found.push({ path: relative(arrowRoot, full), source: readFileSync(full, "utf8") });
  }
  return found;
}

const modules = modulesUnder(arrowRoot);

describe("ts/arrow modules", () => {
  test("there are modules to check", () => {
    expect(modules.length).toBeGreaterThan(10);
  });

  test(`none is over ${maxLines} lines`, () => {
    const long = modules
      .map(({ path, source }) => ({ path, lines: source.split("\n").length - (source.endsWith("\n") ? 1 : 0) }))
      .filter(({ lines }) => lines > maxLines)
      .map(({ path, lines }) => `${path}: ${lines} lines`);
    expect(long).toEqual([]);
  });

  test("each opens with a comment saying what it owns", () => {
    expect(modules.filter(({ source }) => !source.startsWith("/**")).map(({ path }) => path)).toEqual([]);
  });

  test("none exports an `internal` object for its siblings", () => {
    const leaking = modules.filter(({ source }) => /^export\s+(const|let|var)\s+internal\b/m.test(source)).map(({ path }) => path);
    expect(leaking).toEqual([]);
  });
});
