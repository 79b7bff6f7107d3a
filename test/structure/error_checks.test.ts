/**
 * Tests check errors as users do: by `error.code`, or by a class an entry
 * point exports. A check against an error class users cannot import
 * (`instanceof X`, `toBeInstanceOf(X)`, `toThrow(X)`, also through an
 * import alias) fails here, naming the file and line. The error classes
 * are read from ts/ (every class that extends Error, directly or through
 * another), and the exported ones from the entry points of package.json's
 * "exports" map, loaded as a user loads them.
 */
import { describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { testRoot } from "../helpers/paths.ts";

const repoRoot = resolve(testRoot, "..");

/** Every .ts file under `dir`, recursively. */
function tsFiles(dir: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== "node_modules") files.push(...tsFiles(path));
    } else if (entry.name.endsWith(".ts")) {
      files.push(path);
    }
  }
  return files;
}

/** Every class declared in ts/ that extends Error, directly or through
 * another class declared there. */
function libraryErrorClasses(): Set<string> {
  const parents = new Map<string, string>();
  for (const file of tsFiles(join(repoRoot, "ts"))) {
    for (const match of readFileSync(file, "utf8").matchAll(/\bclass\s+(\w+)\s+extends\s+(\w+)/g)) parents.set(match[1]!, match[2]!);
  }
  const isError = (name: string, seen = new Set<string>()): boolean => {
    if (name === "Error") return true;
    const parent = parents.get(name);
    if (parent === undefined || seen.has(name)) return false;
    seen.add(name);
    return isError(parent, seen);
  };
  return new Set([...parents.keys()].filter((name) => isError(name)));
}

/** Every name the entry points export at run time: each subpath of
 * package.json's "exports" map, its "bun" file read from its ts/ source. */
async function exportedNames(): Promise<Set<string>> {
  const exportsMap = (JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { exports: Record<string, string | Record<string, string>> }).exports;
  const names = new Set<string>();
  for (const [subpath, target] of Object.entries(exportsMap)) {
    if (typeof target === "string") continue; // ./package.json
    const source = target.bun!.replace(/^\.\/dist\/js\//, "ts/").replace(/\.js$/, ".ts");
    const module = (await import(join(repoRoot, source))) as Record<string, unknown>;
    if (Object.keys(module).length === 0) throw new Error(`${subpath} (${source}) exports nothing`);
    for (const name of Object.keys(module)) names.add(name);
  }
  return names;
}

/** The checks of `text` against a class in `hidden`: "line: the check".
 * An import alias of a hidden class counts as the class. */
function hiddenErrorChecks(text: string, hidden: Set<string>): string[] {
  const names = new Map<string, string>([...hidden].map((name) => [name, name]));
  for (const list of text.matchAll(/import\s+(?:type\s+)?\{([^}]*)\}/g)) {
    for (const alias of list[1]!.matchAll(/\b(\w+)\s+as\s+(\w+)/g)) {
      if (hidden.has(alias[1]!)) names.set(alias[2]!, alias[1]!);
    }
  }
  const found: string[] = [];
  text.split("\n").forEach((line, i) => {
    for (const match of line.matchAll(/\binstanceof\s+(\w+)|\b(?:toBeInstanceOf|toThrow|toThrowError)\(\s*(\w+)\s*\)/g)) {
      const name = match[1] ?? match[2]!;
      const cls = names.get(name);
      if (cls !== undefined) found.push(`${i + 1}: ${match[0]}${cls === name ? "" : ` (${cls})`}`);
    }
  });
  return found;
}

/** The hidden-class checks of every .ts file under `dir`, by file. */
function checksUnder(dir: string, hidden: Set<string>): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const file of tsFiles(dir)) {
    const found = hiddenErrorChecks(readFileSync(file, "utf8"), hidden);
    if (found.length > 0) out[relative(dir, file)] = found;
  }
  return out;
}

const classes = libraryErrorClasses();
const exported = await exportedNames();
const hidden = new Set([...classes].filter((name) => !exported.has(name)));

describe("tests check errors as users do", () => {
  test("the error classes and the exported ones are found where they are declared", () => {
    // The base class and the ones with fields of their own are exported;
    // the rest are caught by code.
    expect(exported.has("ArrowDeviceError")).toBe(true);
    expect(exported.has("StreamError")).toBe(true);
    expect(classes.has("ArrowDeviceError")).toBe(true);
    expect(classes.has("StreamError")).toBe(true);
    expect(hidden.size).toBeGreaterThan(5);
    expect([...hidden].every((name) => classes.has(name) && !exported.has(name))).toBe(true);
  });

  test("no test checks an error class that no entry point exports", () => {
    expect(checksUnder(testRoot, hidden)).toEqual({});
  });

  test("a planted check of each form is found, with its line; the exported classes and error.code are not", () => {
    const name = [...hidden].sort()[0]!;
    const planted = [
      `import { ${name} as Renamed } from "../../ts/core/errors.ts";`,
      `if (error instanceof ${name}) throw error;`,
      `expect(error).toBeInstanceOf(${name});`,
      `expect(() => f()).toThrow(${name});`,
      `await expect(p).rejects.toThrowError(${name});`,
      `expect(error instanceof Renamed).toBe(true);`,
      // Allowed: an exported class, the code, a message.
      "expect(error).toBeInstanceOf(StreamError);",
      'expect(error).toMatchObject({ code: "released" });',
      'expect(() => f()).toThrow("message");',
    ].join("\n");
    expect(hiddenErrorChecks(planted, hidden)).toEqual([
      `2: instanceof ${name}`,
      `3: toBeInstanceOf(${name})`,
      `4: toThrow(${name})`,
      `5: toThrowError(${name})`,
      `6: instanceof Renamed (${name})`,
    ]);
    // And through the scan of a folder, as the test above scans test/.
    const dir = mkdtempSync(join(tmpdir(), "error-checks-"));
    try {
      writeFileSync(join(dir, "planted.test.ts"), planted);
      writeFileSync(join(dir, "clean.test.ts"), 'expect(error).toMatchObject({ code: "released" });\n');
      expect(Object.keys(checksUnder(dir, hidden))).toEqual(["planted.test.ts"]);
      expect(checksUnder(dir, hidden)["planted.test.ts"]!.length).toBe(5);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
