/**
 * Device kinds are declared once: the table in zig/device/kinds.zig
 * (docs/architecture.md, "Adding a device type"). Two checks, each proved
 * on a planted violation:
 * - every entry of the table has its driver module beside it (declaring
 *   what the table reads), a fake driver under test/fixtures/ built by
 *   build.zig, and a line in docs/devices.md;
 * - no file of ts/ or zig/ outside the allowed ones spells a device kind
 *   in code: no identifier with a vendor word in it (`device_cuda`,
 *   `DeviceType.ROCM_HOST`, `hipMalloc`), no string naming a kind
 *   (`"cuda"`), its environment variable or its library. Comments, Zig
 *   `test` blocks and prose in strings ("CUDA is not available") are not
 *   code that lists kinds.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, sep } from "node:path";

const root = join(import.meta.dir, "../..");
const tablePath = "zig/device/kinds.zig";

type Entry = { name: string; module: string; imported: string };

/** The table's entries, as written in kinds.zig. */
export function tableEntries(text: string): Entry[] {
  const body = /pub const table = \[_\]Kind\{([\s\S]*?)\n\};/.exec(text);
  if (body === null) return [];
  return [...body[1]!.matchAll(/\.name = "([^"]+)",\s*\.module = "([^"]+)",\s*\.driver = @import\("([^"]+)"\)/g)]
    .map((m) => ({ name: m[1]!, module: m[2]!, imported: m[3]! }));
}

/** What a driver module must declare for the table and the manifest. */
const driverDecls = ["ops", "label", "library_env_var", "default_library_names", "version_scale", "shared_calls"];

/** Every way an entry of `text` (kinds.zig) lacks what a kind needs. */
export function entryProblems(text: string, read: (path: string) => string | null): string[] {
  const problems: string[] = [];
  const entries = tableEntries(text);
  if (entries.length === 0) problems.push(`${tablePath}: no entries found in \`pub const table\``);
  const buildZig = read("build.zig") ?? "";
  const devicesDoc = read("docs/devices.md") ?? "";
  for (const entry of entries) {
    const what = `device kind "${entry.name}"`;
    if (entry.module !== entry.imported) problems.push(`${what}: .module is ${entry.module} but .driver imports ${entry.imported}`);
    const source = read(`zig/device/${entry.module}`);
    if (source === null) {
      problems.push(`${what}: its driver module zig/device/${entry.module} does not exist`);
      continue;
    }
    for (const decl of driverDecls) {
      if (!new RegExp(`^pub const ${decl}\\b`, "m").test(source)) problems.push(`${what}: zig/device/${entry.module} declares no \`pub const ${decl}\``);
    }
    const stem = entry.module.replace(/\.zig$/, "");
    const fake = `fake_${stem}`;
    if (read(`test/fixtures/${fake}.c`) === null) problems.push(`${what}: no fake driver test/fixtures/${fake}.c`);
    else if (!buildZig.includes(`"${fake}"`)) problems.push(`${what}: build.zig does not build the fake driver ${fake}`);
    const envVar = /^pub const library_env_var = "([^"]+)"/m.exec(source)?.[1];
    if (envVar !== undefined && !devicesDoc.includes(envVar)) problems.push(`${what}: docs/devices.md does not name ${envVar}`);
  }
  return problems;
}

function readRepo(path: string): string | null {
  const full = join(root, path);
  return existsSync(full) ? readFileSync(full, "utf8") : null;
}

/** Files that may spell kinds: the table, its driver modules (added from
 * the table), the Arrow device-type enum and its TS mirror, the TS kind
 * type checked against the table when it loads, and the bench's raw
 * baselines (one per kind, a `Record` over the kinds). */
const allowedFiles = [
  tablePath,
  "zig/core/abi.zig",
  "ts/core/abi/layout.ts",
  "ts/core/ffi/device_loader.ts",
  "ts/cli/raw_driver.ts",
];

/** Words that name a vendor in an identifier. */
const vendorWords = new Set(["cuda", "rocm", "hip", "amdhip", "amdhip64", "cu", "libcuda"]);
/** In a string: a kind's own name, or a library or variable of one. */
const stringWords = /(^|[^A-Za-z])(cuda|rocm|hip)([^A-Za-z]|$)|libcuda|libamdhip|ARROW_DEVICE_(CUDA|HIP|ROCM)/;

type Token = { kind: "code" | "string"; text: string; line: number };

/** Splits source into code and string pieces; comments are dropped. Zig
 * `test` blocks at the top level are dropped too (`zig`). */
export function tokens(source: string, zig: boolean): Token[] {
  const out: Token[] = [];
  let line = 1;
  let code = "";
  let codeLine = 1;
  let depth = 0;
  let skipFrom = -1; // brace depth at which a dropped test block started
  const flush = () => {
    if (code.length > 0 && skipFrom < 0) out.push({ kind: "code", text: code, line: codeLine });
    code = "";
  };
  let i = 0;
  while (i < source.length) {
    const c = source[i]!;
    const next = source[i + 1];
    if (c === "\n") {
      if (code.length === 0) codeLine = line;
      code += c;
      line++;
      i++;
      continue;
    }
    if (c === "/" && next === "/") {
      while (i < source.length && source[i] !== "\n") i++;
      continue;
    }
    if (!zig && c === "/" && next === "*") {
      const end = source.indexOf("*/", i + 2);
      const stop = end < 0 ? source.length : end + 2;
      for (let k = i; k < stop; k++) if (source[k] === "\n") line++;
      i = stop;
      continue;
    }
    if (zig && c === "\\" && next === "\\") {
      const end = source.indexOf("\n", i);
      const stop = end < 0 ? source.length : end;
      flush();
      if (skipFrom < 0) out.push({ kind: "string", text: source.slice(i + 2, stop), line });
      i = stop;
      codeLine = line;
      continue;
    }
    if (c === "\"" || c === "'" || (!zig && c === "`")) {
      let k = i + 1;
      while (k < source.length && source[k] !== c) {
        if (source[k] === "\\") k++;
        if (source[k] === "\n") line++;
        k++;
      }
      flush();
      if (skipFrom < 0) out.push({ kind: "string", text: source.slice(i + 1, k), line });
      i = k + 1;
      codeLine = line;
      continue;
    }
    if (zig && depth === 0 && skipFrom < 0 && /^test\s*["{]/.test(source.slice(i, i + 8)) && (i === 0 || source[i - 1] === "\n")) {
      flush();
      skipFrom = 0;
    }
    if (c === "{") depth++;
    if (c === "}") {
      depth--;
      if (skipFrom >= 0 && depth === skipFrom) {
        skipFrom = -1;
        code = "";
        i++;
        codeLine = line;
        continue;
      }
    }
    if (code.length === 0) codeLine = line;
    code += c;
    i++;
  }
  flush();
  return out;
}

/** The words of an identifier: snake_case and camelCase split, lower-cased. */
function identifierWords(identifier: string): string[] {
  return identifier.split(/_+/).flatMap((part) => part.split(/(?<=[a-z0-9])(?=[A-Z])/)).map((w) => w.toLowerCase()).filter((w) => w.length > 0);
}

/** "path:line: what" for every kind spelled in `source`. */
export function spellingProblems(path: string, source: string): string[] {
  const zig = path.endsWith(".zig");
  const problems: string[] = [];
  for (const token of tokens(source, zig)) {
    if (token.kind === "string") {
      const hit = stringWords.exec(token.text);
      if (hit !== null) problems.push(`${path}:${token.line}: the string ${JSON.stringify(token.text.slice(0, 60))} names a device kind (${hit[0].replace(/[^A-Za-z0-9_]/g, "")})`);
      continue;
    }
    let line = token.line;
    for (const piece of token.text.split("\n")) {
      for (const m of piece.matchAll(/[A-Za-z_][A-Za-z0-9_]*/g)) {
        if (identifierWords(m[0]).some((w) => vendorWords.has(w))) problems.push(`${path}:${line}: the identifier ${m[0]} names a device kind`);
      }
      line++;
    }
  }
  return problems;
}

/** The files the "Adding a device type" section of docs/architecture.md
 * must list: what `entryProblems` checks, and the allowed files that
 * change with a kind. */
const documentedFiles = [tablePath, "zig/device/<driver>.zig", "test/fixtures/fake_<driver>.c", "build.zig", "ts/core/ffi/device_loader.ts", "ts/cli/raw_driver.ts", "docs/devices.md", "README.md"];

/** Files `documentedFiles` expects that the section of `page` does not name. */
export function undocumentedFiles(page: string): string[] {
  const section = /\n## Adding a device type\n([\s\S]*?)(?=\n## |$)/.exec(page)?.[1];
  if (section === undefined) return ["the section \"Adding a device type\""];
  return documentedFiles.filter((file) => !section.includes(`\`${file}\``));
}

function sourceFiles(dir: string, ext: string): string[] {
  return (readdirSync(join(root, dir), { recursive: true }) as string[])
    .filter((name) => name.endsWith(ext))
    .map((name) => `${dir}/${name.split(sep).join("/")}`)
    .sort();
}

describe("device kinds are declared once", () => {
  const table = readRepo(tablePath)!;
  const entries = tableEntries(table);

  test("the table has entries, each with its driver module, fake driver and docs", () => {
    expect(entries.length).toBeGreaterThan(0);
    expect(entryProblems(table, readRepo)).toEqual([]);
  });

  test("a planted entry without a driver module is caught", () => {
    const planted = table.replace("pub const table = [_]Kind{\n", `pub const table = [_]Kind{\n    .{ .name = "metal", .module = "metal.zig", .driver = @import("metal.zig"), .device_type = abi.device_metal, .host_type = abi.device_metal, .managed_type = null },\n`);
    expect(tableEntries(planted).map((e) => e.name)).toEqual(["metal", ...entries.map((e) => e.name)]);
    expect(entryProblems(planted, readRepo)).toEqual([`device kind "metal": its driver module zig/device/metal.zig does not exist`]);
    // A driver module that exists but misses a declaration, with no fake.
    const withModule = (path: string) => path === "zig/device/metal.zig" ? "pub const ops = 1;\npub const label = \"Metal\";\n" : readRepo(path);
    expect(entryProblems(planted, withModule)).toEqual([
      `device kind "metal": zig/device/metal.zig declares no \`pub const library_env_var\``,
      `device kind "metal": zig/device/metal.zig declares no \`pub const default_library_names\``,
      `device kind "metal": zig/device/metal.zig declares no \`pub const version_scale\``,
      `device kind "metal": zig/device/metal.zig declares no \`pub const shared_calls\``,
      `device kind "metal": no fake driver test/fixtures/fake_metal.c`,
    ]);
  });

  test("docs/architecture.md lists every file a kind touches, and a missing one is caught", () => {
    const page = readRepo("docs/architecture.md")!;
    expect(undocumentedFiles(page)).toEqual([]);
    expect(undocumentedFiles(page.replace("`ts/cli/raw_driver.ts`", "the bench"))).toEqual(["ts/cli/raw_driver.ts"]);
    expect(undocumentedFiles(page.replace("## Adding a device type", "## Devices"))).toEqual(["the section \"Adding a device type\""]);
  });

  test("no file outside the table and its driver modules spells a device kind", () => {
    const allowed = new Set([...allowedFiles, ...entries.map((e) => `zig/device/${e.module}`)]);
    const files = [...sourceFiles("ts", ".ts"), ...sourceFiles("zig", ".zig")].filter((f) => !allowed.has(f));
    expect(files.length).toBeGreaterThan(100);
    expect(files.flatMap((f) => spellingProblems(f, readRepo(f)!))).toEqual([]);
  });

  test("a planted spelling is caught in each form, and comments, prose and Zig tests are not", () => {
    const ts = [
      "// a comment about cuda and DeviceType.CUDA is fine",
      "/* so is ROCm here */",
      "const message = \"CUDA is not available\";",
      "if (kind === \"cuda\") run();",
      "const t = DeviceType.ROCM_HOST;",
      "const v = process.env.ARROW_DEVICE_HIP_LIBRARY;",
      "const lib = 'libcuda.so.1';",
      "openCuda(path);",
    ].join("\n");
    expect(spellingProblems("ts/x.ts", ts)).toEqual([
      `ts/x.ts:4: the string "cuda" names a device kind (cuda)`,
      "ts/x.ts:5: the identifier ROCM_HOST names a device kind",
      "ts/x.ts:6: the identifier ARROW_DEVICE_HIP_LIBRARY names a device kind",
      `ts/x.ts:7: the string "libcuda.so.1" names a device kind (libcuda)`,
      "ts/x.ts:8: the identifier openCuda names a device kind",
    ]);
    const zig = [
      "//! CUDA and ROCm in a doc comment",
      "const a = abi.device_cuda;",
      "const b = \"{s} is on {s}\";",
      "test \"uses a sample type\" {",
      "    const c = abi.device_rocm;",
      "    if (x) { _ = c; }",
      "}",
      "fn f() void { _ = hipMalloc; }",
    ].join("\n");
    expect(spellingProblems("zig/x.zig", zig)).toEqual([
      "zig/x.zig:2: the identifier device_cuda names a device kind",
      "zig/x.zig:8: the identifier hipMalloc names a device kind",
    ]);
  });
});
