/**
 * The declarations the package ships (tsconfig.build.json, as
 * scripts/build-js.sh builds dist/js) carry nothing internal: no
 * `@internal` text, and none of the members the converters once reached
 * on the public handle classes (they use ts/native/batch_source.ts).
 * Built into a temporary folder, declarations only.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { testRoot } from "../helpers/paths.ts";

const root = resolve(testRoot, "..");
const tsc = join(root, "node_modules", "typescript", "bin", "tsc");

/** Members that must not appear on any declared class. */
const formerMembers = [
  "nodeWord", "bufferWord", "nodeSchema", "schemaKey", "schemaMatches", "tables", "prefetchBuffers", "prefetchedViews",
  "nextTransient", "nextPulled", "_copyPullsToHost", "_settlePull", "memberOf",
];

let dir = "";
let declarations: { path: string; text: string }[] = [];

function walk(folder: string): string[] {
  return readdirSync(folder).flatMap((name) => {
    const full = join(folder, name);
    return statSync(full).isDirectory() ? walk(full) : name.endsWith(".d.ts") ? [full] : [];
  });
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "declarations-"));
  const out = join(dir, "js");
  // Output through a file, not a pipe (see typecheck.test.ts).
  const fd = openSync(join(dir, "tsc.txt"), "w");
  try {
    const result = Bun.spawnSync([process.execPath, tsc, "-p", "tsconfig.build.json", "--emitDeclarationOnly", "--outDir", out, "--pretty", "false"], { cwd: root, stdout: fd, stderr: fd });
    if (result.exitCode !== 0) throw new Error(`tsc -p tsconfig.build.json failed:\n${readFileSync(join(dir, "tsc.txt"), "utf8")}`);
  } finally {
    closeSync(fd);
  }
  declarations = walk(out).map((path) => ({ path: relative(out, path), text: readFileSync(path, "utf8") }));
}, 120_000);

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("shipped declarations", () => {
  test("cover the entry points", () => {
    const paths = declarations.map((d) => d.path);
    for (const entry of ["index.d.ts", "raw.d.ts", "device.d.ts", "diagnostics.d.ts", "python.d.ts"]) expect(paths).toContain(entry);
    expect(paths).toContain("native/imported_array.d.ts");
  });

  test("no declaration says @internal", () => {
    expect(declarations.filter((d) => d.text.includes("@internal")).map((d) => d.path)).toEqual([]);
  });

  test("no class declares a member the converters once reached", () => {
    const member = new RegExp(`^\\s+(?:static\\s+)?(?:readonly\\s+)?(${formerMembers.join("|")})\\s*[(<:?]`, "m");
    const found = declarations.flatMap((d) => {
      const match = member.exec(d.text);
      return match ? [`${d.path}: ${match[1]}`] : [];
    });
    expect(found).toEqual([]);
  });
});
