/**
 * The package smoke test, as a new user meets the package: compile ts/ to
 * dist/js (JS + .d.ts), pack every package that has a library here (the
 * main package and this platform's `@bun-arrow-device/<platform-id>`),
 * create an app in a temporary folder and `bun add` the tarballs offline
 * (file tarballs only; the registry is a closed port), then:
 * - run the README's quick start (examples/quick_start.ts) and a sample app
 *   that uses every entry point, with zig, python and C compilers absent
 *   from PATH;
 * - type-check the sample app against the installed .d.ts under the
 *   tsconfig that `bun init` writes, strict + noUncheckedIndexedAccess +
 *   exactOptionalPropertyTypes (with skipLibCheck off, so the package's
 *   .d.ts are checked too), NodeNext and Bundler: 0 errors each;
 * - bundle it with `bun build` and `bun build --compile`, and run both
 *   from another folder.
 * - run every CLI subcommand (info, doctor, a minimal bench, chart) through
 *   the bin link and check that each reports the package's version, and
 *   the shipped examples from node_modules;
 * - run every fenced block of the README as written (the header of that
 *   describe says which are left out and why), and resolve every relative
 *   link of the README inside the main tarball.
 * apache-arrow and its dependencies come from this checkout's
 * node_modules, packed into tarballs too.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { closeSync, copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, readdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join, resolve } from "node:path";
import { libraryFileName, platformId, platformIds, platformPackage } from "../../ts/core/ffi/platform.ts";
import { pythonShimFileName } from "../../scripts/pack.ts";
import { testRoot } from "../helpers/paths.ts";

const root = resolve(testRoot, "..");
const bun = process.execPath;
const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
const work = realpathSync(mkdtempSync(join(tmpdir(), "abd-package-")));
const tarballs = join(work, "tarballs");
const app = join(work, "app");
const quickstartOutput = '[{"id":1,"price":9.5},{"id":2,"price":3},{"id":3,"price":7.25}]';

/** Runs a command; output through a file (see typecheck.test.ts). */
function run(cmd: string[], cwd: string, env: Record<string, string | undefined> = process.env): { exitCode: number; output: string } {
  const log = join(work, `log-${Math.random().toString(36).slice(2)}.txt`);
  const fd = openSync(log, "w");
  try {
    const proc = Bun.spawnSync(cmd, { cwd, env, stdout: fd, stderr: fd });
    return { exitCode: proc.exitCode, output: readFileSync(log, "utf8").trim() };
  } finally {
    closeSync(fd);
  }
}

function mustRun(cmd: string[], cwd: string, env?: Record<string, string | undefined>): string {
  const result = run(cmd, cwd, env);
  if (result.exitCode !== 0) throw new Error(`${cmd.join(" ")} failed (${result.exitCode}):\n${result.output}`);
  return result.output;
}

/** Packs an installed package of this checkout's node_modules. */
function packInstalled(name: string): string {
  const out = mustRun(["npm", "pack", "--ignore-scripts", "--silent", "--pack-destination", tarballs, join(root, "node_modules", name)], work);
  return join(tarballs, out.split("\n").at(-1)!);
}

/** A PATH with only Bun on it: no zig, python, cc, gcc, g++. */
function bareEnv(): Record<string, string> {
  const bin = join(work, "bare-bin");
  if (!existsSync(bin)) {
    mkdirSync(bin);
    symlinkSync(bun, join(bin, "bun"));
    symlinkSync(bun, join(bin, "bunx"));
  }
  return { HOME: process.env.HOME ?? work, PATH: bin, TMPDIR: tmpdir() };
}

const made: Record<string, string> = {};

beforeAll(() => {
  mkdirSync(tarballs, { recursive: true });
  mkdirSync(app, { recursive: true });
  mustRun(["bash", "scripts/build-js.sh"], root);
  const packed = mustRun([bun, "scripts/pack.ts", "--host-only", "--out", tarballs], root).split("\n").filter((line) => line.endsWith(".tgz"));
  made.main = packed.find((path) => path.endsWith(`bun-arrow-device-${version()}.tgz`))!;
  made.platform = packed.find((path) => path.includes(platformId()))!;

  // apache-arrow (the peer dependency), its dependencies and the Bun types,
  // as tarballs; @types/bun is its one-line wrapper around bun-types.
  const deps: Record<string, string> = {};
  for (const name of ["apache-arrow", "flatbuffers", "json-with-bigint", "tslib", "@types/node", "undici-types", "bun-types", "typescript"]) {
    deps[name] = `file:${packInstalled(name)}`;
  }
  const typesBun = join(work, "types-bun");
  mkdirSync(typesBun);
  writeFileSync(join(typesBun, "package.json"), JSON.stringify({ name: "@types/bun", version: "0.0.0-local", types: "index.d.ts", dependencies: { "bun-types": "*" } }));
  writeFileSync(join(typesBun, "index.d.ts"), '/// <reference types="bun-types" />\n');
  deps["@types/bun"] = `file:${join(tarballs, mustRun(["npm", "pack", "--silent", "--pack-destination", tarballs, typesBun], work).split("\n").at(-1)!)}`;

  writeFileSync(join(app, "package.json"), JSON.stringify({
    name: "smoke-app", private: true, type: "module",
    overrides: { ...deps, [platformPackage(platformId())]: `file:${made.platform}` },
  }, null, 2));
  // No registry: anything not given as a file would fail to resolve.
  writeFileSync(join(app, "bunfig.toml"), '[install]\nregistry = "http://127.0.0.1:9/"\n');
  mustRun([bun, "add", "--offline", made.main, deps["apache-arrow"]!.slice(5)], app, bareEnv());
  mustRun([bun, "add", "--offline", "--dev", deps["@types/bun"]!.slice(5), deps.typescript!.slice(5)], app, bareEnv());
  copyFileSync(join(root, "examples", "quick_start.ts"), join(app, "quick_start.ts"));
  copyFileSync(join(root, "test", "data", "package_app", "app.ts"), join(app, "app.ts"));
}, 300_000);

afterAll(() => rmSync(work, { recursive: true, force: true }));

function version(): string {
  return (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string }).version;
}

function tarballFiles(tarball: string): string[] {
  return mustRun(["tar", "tzf", tarball], work).split("\n").map((line) => line.replace(/^package\//, "")).sort();
}

describe("packages", () => {
  test("the main package ships compiled JS, .d.ts, the C header and docs: no .ts sources, zig/, scripts/ or build.zig", () => {
    const files = tarballFiles(made.main!);
    expect(files).toContain("dist/js/index.js");
    expect(files).toContain("dist/js/index.d.ts");
    for (const entry of ["raw", "device", "diagnostics"]) expect(files).toContain(`dist/js/${entry}.d.ts`);
    expect(files).toContain("lib/include/arrow_device.h");
    expect(files).toContain("LICENSE");
    // TypeScript sources only as the examples the README links.
    expect(files.filter((file) => /^(zig|scripts|test|ts|bench)\//.test(file) || file === "build.zig" || (file.endsWith(".ts") && !file.endsWith(".d.ts") && !file.startsWith("examples/")))).toEqual([]);
    expect(files.filter((file) => /\.(so|dylib|dll)$/.test(file))).toEqual([]);
    const manifest = JSON.parse(mustRun(["tar", "xzOf", made.main!, "package/package.json"], work)) as Record<string, Record<string, string>>;
    expect(manifest.optionalDependencies![platformPackage("linux-arm64-musl")]).toBe(version());
    expect(Object.keys(manifest.optionalDependencies!).sort()).toEqual(platformIds.map(platformPackage).sort());
    expect(manifest.devDependencies).toBeUndefined();
    expect(manifest.peerDependencies).toEqual({ "apache-arrow": ">=21.2.0 <22" });
  });

  test("this platform's package ships its library and says where it runs (os, cpu, libc)", () => {
    expect(tarballFiles(made.platform!)).toEqual(["LICENSE", "README.md", "index.d.ts", "index.js", libraryFileName(), pythonShimFileName(process.platform), "python.d.ts", "python.js", "package.json"].sort());
    const manifest = JSON.parse(mustRun(["tar", "xzOf", made.platform!, "package/package.json"], work)) as { name: string; os: string[]; cpu: string[]; libc?: string[] };
    expect(manifest.name).toBe(platformPackage(platformId()));
    expect(manifest.os).toEqual([process.platform]);
    expect(manifest.cpu).toEqual([process.arch]);
    if (process.platform === "linux") expect(manifest.libc).toEqual([platformId().endsWith("-musl") ? "musl" : "glibc"]);
  });

  test("the install holds the main package and this platform's, nothing built", () => {
    const scope = join(app, "node_modules", "@bun-arrow-device");
    expect(readdirSync(scope)).toEqual([platformId()]);
    expect(existsSync(join(app, "node_modules", "bun-arrow-device", "dist", "js", "index.js"))).toBe(true);
    expect(existsSync(join(app, "node_modules", "bun-arrow-device", "lib", platformId()))).toBe(false);
  });
});

describe("the installed package runs with no toolchain on PATH", () => {
  test("PATH holds no zig, python or C compiler", () => {
    const path = bareEnv().PATH.split(delimiter);
    for (const tool of ["zig", "python3", "python", "cc", "gcc", "g++", "clang"]) {
      expect(path.filter((dir) => existsSync(join(dir, tool)))).toEqual([]);
    }
  });

  test("the README's quick start (examples/quick_start.ts) round-trips a table", () => {
    expect(run([bun, "quick_start.ts"], app, bareEnv())).toEqual({ exitCode: 0, output: quickstartOutput });
  });

  test("the installed CLI runs through its bin link (bunx bun-arrow-device info)", () => {
    const result = run([join(app, "node_modules", ".bin", "bun-arrow-device"), "info"], app, bareEnv());
    expect(result.exitCode).toBe(0);
    expect(result.output).toContain(platformId());
    expect(result.output).toContain(join(app, "node_modules", ...platformPackage(platformId()).split("/")));
  });

  test("a sample app using every entry point loads the library from the platform package", () => {
    const result = run([bun, "app.ts"], app, bareEnv());
    expect(result.exitCode).toBe(0);
    expect(JSON.parse(result.output)).toEqual({
      rows: 3, ids: [1, 2, 3], batchRows: 3, cpu: 1, cudaReported: true, typedError: true,
      source: "package", platformId: platformId(), counters: "object",
    });
  });
});

describe("the installed CLI: every subcommand, with the package's version", () => {
  const cli = () => join(app, "node_modules", ".bin", "bun-arrow-device");
  const noGpu = () => ({ ...bareEnv(), ARROW_DEVICE_CUDA_LIBRARY: join(work, "no-such-libcuda.so"), ARROW_DEVICE_HIP_LIBRARY: join(work, "no-such-libhip.so") });

  test("--version and info (text and JSON) print the package's version", () => {
    expect(run([cli(), "--version"], app, bareEnv())).toEqual({ exitCode: 0, output: version() });
    const text = run([cli(), "info"], app, noGpu());
    expect(text.exitCode).toBe(0);
    expect(text.output).toStartWith(`bun-arrow-device ${version()}\n`);
    expect(text.output).toContain(`(version ${version()})`);
    const json = run([cli(), "info", "--json"], app, noGpu());
    expect(json.exitCode).toBe(0);
    expect((JSON.parse(json.output) as { package: string; apacheArrow: string }).package).toBe(version());
  });

  test("doctor finds the package's header and the platform package's library (exit 0)", () => {
    const result = run([cli(), "doctor"], app, bareEnv());
    const header = join(app, "node_modules", "bun-arrow-device", "lib", "include", "arrow_device.h");
    expect(result.output).toMatch(new RegExp(`: exports all \\d+ functions ${header.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} declares$`));
    expect(result.exitCode).toBe(0);
  });

  test("bench (smallest settings) and chart: the JSON's versions.package and the chart's title are the package's version", () => {
    const out = join(work, "cli-bench.json");
    const bench = run([cli(), "bench", "--json", "--quiet", "--sizes", "1", "--rows", "1000", "--repeats", "1", "--out", out], app, noGpu());
    expect(bench.exitCode).toBe(0);
    const result = JSON.parse(readFileSync(out, "utf8")) as { versions: { package: string; apacheArrow: string } };
    expect(result.versions.package).toBe(version());
    expect(result.versions.apacheArrow).toBe("21.2.0");
    const text = run([cli(), "bench", "--quiet", "--no-device", "--rows", "1000", "--repeats", "1"], app, noGpu());
    expect(text.exitCode).toBe(0);
    const svg = join(work, "cli-bench.svg");
    const chart = run([cli(), "chart", out, "--out", svg], app, bareEnv());
    expect(chart).toEqual({ exitCode: 0, output: `chart: wrote ${svg}` });
    expect(readFileSync(svg, "utf8")).toContain(`bun-arrow-device ${version()}, Bun ${Bun.version}`);
  });

  test("Node.js gets the \"runs on Bun only\" error for every name of every entry point (named imports link)", () => {
    const node = Bun.which("node");
    if (node === null) {
      console.log("no node on PATH: the Node.js message is not checked here");
      return;
    }
    // The run-time names of each entry point, from the API snapshot.
    const snapshot = readFileSync(join(root, "test", "structure", "public_api.txt"), "utf8");
    const entries = [...snapshot.matchAll(/^## (\S+) \(ts\/[\w/]+\.ts\)[\s\S]*?^run time:\n((?:  .*\n?)*)/gm)].map((m) => ({
      specifier: m[1] === "." ? "bun-arrow-device" : `bun-arrow-device/${m[1]!.slice(2)}`,
      names: m[2]!.split("\n").filter((line) => line.startsWith("  ")).map((line) => line.trim().split(":")[0]!),
    }));
    const manifest = JSON.parse(readFileSync(join(app, "node_modules", "bun-arrow-device", "package.json"), "utf8")) as { exports: Record<string, unknown> };
    expect(entries.map((e) => e.specifier).sort()).toEqual(Object.keys(manifest.exports).filter((k) => k !== "./package.json").map((k) => k === "." ? "bun-arrow-device" : `bun-arrow-device/${k.slice(2)}`).sort());
    for (const { specifier, names } of entries) {
      expect(names.length).toBeGreaterThan(5);
      const named = run([node, "--input-type=module", "-e", `import { ${names.join(", ")} } from "${specifier}"; console.log(${names[0]});`], app);
      expect({ specifier, output: named.output.split("\n").find((line) => line.startsWith("Error: ") || line.startsWith("SyntaxError")) }).toEqual({ specifier, output: "Error: bun-arrow-device runs on Bun (https://bun.sh) only: it loads its native library through bun:ffi, which Node.js does not have. Run this app with `bun`." });
      expect(named.exitCode).not.toBe(0);
      const dynamic = run([node, "--input-type=module", "-e", `import("${specifier}").catch((e) => console.log(e.message));`], app);
      expect({ specifier, output: dynamic.output }).toEqual({ specifier, output: expect.stringContaining("runs on Bun (https://bun.sh) only") });
    }
    const defaulted = run([node, "--input-type=module", "-e", 'import abd from "bun-arrow-device"; console.log(abd);'], app);
    expect(defaulted.output).toContain("Error: bun-arrow-device runs on Bun (https://bun.sh) only");
  });

  test("npm installs a package with the packed manifest's engines under Node.js without a word (npm checks engines.node and engines.npm only)", () => {
    const manifest = JSON.parse(mustRun(["tar", "xzOf", made.main!, "package/package.json"], work)) as { engines: Record<string, string> };
    expect(Object.keys(manifest.engines)).toEqual(["bun"]);
    const pkg = join(work, "engines-only");
    mkdirSync(pkg, { recursive: true });
    writeFileSync(join(pkg, "package.json"), JSON.stringify({ name: "engines-only", version: "1.0.0", engines: manifest.engines }));
    const tarball = join(pkg, mustRun(["npm", "pack", "--silent"], pkg).split("\n").at(-1)!);
    const dir = mkdtempSync(join(work, "npm-app-"));
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "npm-app", private: true }));
    for (const strict of [[], ["--engine-strict"]]) {
      const result = run(["npm", "install", "--offline", "--no-audit", "--no-fund", ...strict, tarball], dir);
      expect({ strict, exitCode: result.exitCode, engineWord: /engine/i.test(result.output) }).toEqual({ strict, exitCode: 0, engineWord: false });
    }
  }, 120_000);
});

describe("the shipped examples run from node_modules/bun-arrow-device/examples", () => {
  const examples = () => join(app, "node_modules", "bun-arrow-device", "examples");

  test("c_library.ts crosses into the shipped doubler.c, built with this machine's C compiler", () => {
    const cc = Bun.which("cc");
    if (cc === null) {
      console.log("no cc on PATH: c_library.ts from the package is not run here");
      return;
    }
    const library = join(work, `libdoubler-example.${process.platform === "darwin" ? "dylib" : "so"}`);
    mustRun([cc, "-std=c11", "-O2", "-shared", "-fPIC", "-I", join(app, "node_modules", "bun-arrow-device", "lib", "include"), join(examples(), "c", "doubler.c"), "-o", library], app);
    const result = run([bun, join(examples(), "c_library.ts"), library], app, bareEnv());
    expect(result.exitCode).toBe(0);
    expect(result.output).toContain("doubled = [3,null,6,8.5,20,40]");
  });

  test("scripted_bench.ts runs the installed CLI and charts its JSON", () => {
    const dir = mkdtempSync(join(work, "example-bench-"));
    const env = { ...bareEnv(), ARROW_DEVICE_CUDA_LIBRARY: join(work, "no-such-libcuda.so"), ARROW_DEVICE_HIP_LIBRARY: join(work, "no-such-libhip.so") };
    const result = run([bun, join(examples(), "scripted_bench.ts"), dir], app, env);
    expect(result.exitCode).toBe(0);
    expect(result.output).toContain("real GPU figures: no");
    expect(readFileSync(join(dir, "bench.svg"), "utf8")).toContain(`bun-arrow-device ${version()}`);
  }, 120_000);

  test("scripted_bench.ts copied into the app runs the installed CLI, into an output folder it makes", () => {
    copyFileSync(join(examples(), "scripted_bench.ts"), join(app, "scripted_bench.ts"));
    const dir = join(work, "copied-bench", "not-yet");
    const env = { ...bareEnv(), ARROW_DEVICE_CUDA_LIBRARY: join(work, "no-such-libcuda.so"), ARROW_DEVICE_HIP_LIBRARY: join(work, "no-such-libhip.so") };
    const result = run([bun, "scripted_bench.ts", dir], app, env);
    expect(result.exitCode).toBe(0);
    expect(readFileSync(join(dir, "bench.svg"), "utf8")).toContain(`bun-arrow-device ${version()}`);
  }, 120_000);

  test("c_library.ts with no argument: one line saying what to build, then it finds ./libdoubler.so", () => {
    const dir = mkdtempSync(join(work, "c-example-"));
    const missing = run([bun, join(examples(), "c_library.ts")], dir, bareEnv());
    expect(missing.exitCode).toBe(2);
    expect(missing.output.split("\n")).toHaveLength(1);
    expect(missing.output).toStartWith(`c_library.ts needs libdoubler.${process.platform === "darwin" ? "dylib" : "so"}, built from the package's examples/c/doubler.c: cc -std=c11`);
    const cc = Bun.which("cc");
    if (cc === null) {
      console.log("no cc on PATH: c_library.ts with a built ./libdoubler is not run here");
      return;
    }
    mustRun([cc, "-std=c11", "-O2", "-shared", "-fPIC", "-I", join(app, "node_modules", "bun-arrow-device", "lib", "include"), join(examples(), "c", "doubler.c"), "-o", join(app, `libdoubler.${process.platform === "darwin" ? "dylib" : "so"}`)], app);
    const built = run([bun, join(examples(), "c_library.ts")], app, bareEnv());
    expect(built.exitCode).toBe(0);
    expect(built.output).toContain("doubled = [3,null,6,8.5,20,40]");
  });

  test("duckdb.ts: one line naming the package to add, and it runs with the app's DuckDB library", () => {
    const missing = run([bun, join(examples(), "duckdb.ts")], app, bareEnv());
    expect(missing.exitCode).toBe(2);
    expect(missing.output.split("\n")).toHaveLength(1);
    expect(missing.output).toStartWith(`duckdb.ts needs DuckDB's C library: bun add @duckdb/node-bindings-${process.platform}-${process.arch} in this app`);
    // The app's own copy of the library, where bun add would put it.
    const library = join(root, "node_modules", "@duckdb", `node-bindings-${process.platform}-${process.arch}`, "libduckdb.so");
    if (!existsSync(library)) {
      console.log("no libduckdb in this checkout's node_modules: duckdb.ts is not run here");
      return;
    }
    const installed = join(app, "node_modules", "@duckdb", `node-bindings-${process.platform}-${process.arch}`);
    mkdirSync(installed, { recursive: true });
    symlinkSync(library, join(installed, "libduckdb.so"));
    try {
      const result = run([bun, join(examples(), "duckdb.ts")], app, bareEnv());
      expect(result.exitCode).toBe(0);
      expect(result.output).toContain("result read in place from DuckDB's memory: true");
    } finally {
      rmSync(installed, { recursive: true, force: true });
    }
  }, 120_000);
});

/** Puts this checkout's DuckDB npm package (its package.json, and its
 * library linked) into `app`'s node_modules, as `bun add` would. */
function installDuckdbInto(app: string): { remove(): void } {
  const name = `node-bindings-${process.platform}-${process.arch}`;
  const source = join(root, "node_modules", "@duckdb", name);
  if (!existsSync(join(source, "libduckdb.so"))) throw new Error(`no ${source}/libduckdb.so: bash scripts/setup.sh installs it`);
  const installed = join(app, "node_modules", "@duckdb", name);
  mkdirSync(installed, { recursive: true });
  writeFileSync(join(installed, "package.json"), readFileSync(join(source, "package.json")));
  symlinkSync(join(source, "libduckdb.so"), join(installed, "libduckdb.so"));
  return { remove: () => rmSync(installed, { recursive: true, force: true }) };
}

describe("the README, as written, in the installed app", () => {
  const readme = readFileSync(join(root, "README.md"), "utf8");

  test("every relative link of the README resolves to a file of the main package's tarball", () => {
    const files = new Set(tarballFiles(made.main!));
    const links = [...readme.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((link) => !/^[a-z]+:/.test(link) && !link.startsWith("#"));
    expect(links.length).toBeGreaterThan(15);
    expect(links.map((link) => link.split("#")[0]!).filter((link) => !files.has(link))).toEqual([]);
  });

  // Every fenced block, in order: sh blocks run with bash in the app
  // folder (the C compiler of this machine on PATH, for the C recipe),
  // ts blocks as a file of the app. Both are picked up as they are added;
  // a block whose line ends with `// <output>` after console.log(...)
  // must print that. Left out, with the reason printed: the install line
  // (the app installed the packed tarballs offline) and the repository's
  // own commands. A block that imports bun-arrow-device/python runs where
  // .toolchain holds pyarrow (scripts/setup.sh --test), through PYTHONPATH.
  const blocks = [...readme.matchAll(/^```(\w+)\n([\s\S]*?)^```/gm)].map((m) => ({
    lang: m[1]!, code: m[2]!, line: readme.slice(0, m.index).split("\n").length,
  }));
  const pyarrow = readdirSync(join(root, ".toolchain")).filter((dir) => dir.startsWith("pyarrow-")).map((dir) => join(root, ".toolchain", dir));
  const fakeCuda = join(root, "build", "fixtures", "libfake_cuda.so");

  function notRun(code: string): string | undefined {
    if (/^bun add bun-arrow-device/m.test(code)) return "installs from the registry: this app installed the packed tarballs offline instead";
    if (/scripts\//.test(code)) return "the repository's own commands, not an app's";
    return undefined;
  }

  test("the README has sh and ts blocks, and every ts block imports the package by name", () => {
    expect(blocks.filter((b) => b.lang === "ts").length).toBeGreaterThanOrEqual(4);
    for (const b of blocks.filter((b) => b.lang === "ts")) {
      expect({ line: b.line, byName: /from "bun-arrow-device(\/\w+)?"/.test(b.code), relative: /from "\.\.?\//.test(b.code) }).toEqual({ line: b.line, byName: true, relative: false });
    }
  });

  blocks.forEach((block, index) => {
    test(`block ${index + 1} (${block.lang}, README.md line ${block.line}) runs as written`, () => {
      const reason = notRun(block.code);
      if (reason !== undefined || (block.lang !== "ts" && block.lang !== "sh")) {
        console.log(`README.md line ${block.line} (${block.lang}) not run: ${reason ?? `a ${block.lang} block`}`);
        return;
      }
      const env: Record<string, string | undefined> = { ...bareEnv(), PATH: `${bareEnv().PATH}${delimiter}${process.env.PATH}` };
      if (block.lang === "sh") {
        const result = run(["bash", "-euo", "pipefail", "-c", block.code], app, env);
        if (result.exitCode !== 0) console.error(result.output);
        expect(result.exitCode).toBe(0);
        return;
      }
      if (block.code.includes('"bun-arrow-device/python"')) {
        if (pyarrow.length === 0) {
          console.log(`README.md line ${block.line} not run: no pyarrow in .toolchain (bash scripts/setup.sh --test installs it)`);
          return;
        }
        env.PYTHONPATH = pyarrow.join(delimiter);
      }
      const file = join(app, `readme-${block.line}.ts`);
      writeFileSync(file, block.code);
      const expected = [...block.code.matchAll(/console\.log\(.*\);\s*\/\/ (.+)$/gm)].map((m) => m[1]!);
      const runs: Record<string, string | undefined>[] = [env];
      // A device block runs without a driver and under the fake CUDA driver.
      if (block.code.includes('"bun-arrow-device/device"') && existsSync(fakeCuda)) runs.push({ ...env, ARROW_DEVICE_CUDA_LIBRARY: fakeCuda });
      // The database recipe needs DuckDB's npm package in the app, as its
      // text says: this checkout's copy, where bun add would put it.
      const duckdb = block.code.includes("@duckdb/node-bindings") ? installDuckdbInto(app) : null;
      try {
        for (const e of runs) {
          const result = run([bun, file], app, e);
          if (result.exitCode !== 0) console.error(result.output);
          expect(result.exitCode).toBe(0);
          for (const text of expected) expect(result.output).toContain(text);
        }
      } finally {
        duckdb?.remove();
      }
    }, 120_000);
  });
});

describe("type check of an app against the installed .d.ts", () => {
  /** The tsconfig `bun init` writes, taken from a real `bun init` run
   * offline (it cannot install @types/bun there; the tsconfig is written). */
  function bunInitConfig(): string {
    const dir = join(work, "bun-init");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "bunfig.toml"), '[install]\nregistry = "http://127.0.0.1:9/"\n');
    run([bun, "init", "-y"], dir, bareEnv());
    const path = join(dir, "tsconfig.json");
    if (!existsSync(path)) throw new Error("bun init wrote no tsconfig.json");
    return readFileSync(path, "utf8");
  }

  const variants: Record<string, () => string> = {
    "bun init": bunInitConfig,
    "strict + noUncheckedIndexedAccess + exactOptionalPropertyTypes": () => JSON.stringify({
      compilerOptions: {
        target: "ESNext", module: "Preserve", moduleResolution: "bundler", lib: ["ESNext"], types: ["bun"], noEmit: true,
        strict: true, noUncheckedIndexedAccess: true, exactOptionalPropertyTypes: true, skipLibCheck: false,
      },
    }),
    NodeNext: () => JSON.stringify({
      compilerOptions: { target: "ESNext", module: "NodeNext", moduleResolution: "NodeNext", lib: ["ESNext"], types: ["bun"], noEmit: true, strict: true, skipLibCheck: true },
    }),
    Bundler: () => JSON.stringify({
      compilerOptions: { target: "ESNext", module: "ESNext", moduleResolution: "Bundler", lib: ["ESNext"], types: ["bun"], noEmit: true, strict: true, skipLibCheck: true },
    }),
  };

  for (const [name, config] of Object.entries(variants)) {
    test(`${name}: 0 errors`, () => {
      const dir = join(app, `tsc-${name.replace(/\W+/g, "-")}`);
      mkdirSync(dir, { recursive: true });
      copyFileSync(join(app, "app.ts"), join(dir, "app.ts"));
      copyFileSync(join(app, "quick_start.ts"), join(dir, "quick_start.ts"));
      writeFileSync(join(dir, "tsconfig.json"), config());
      // The app's own TypeScript (installed from the tarball), run by Bun.
      const result = run([bun, join(app, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.json", "--pretty", "false", "--listFiles"], dir);
      const lines = result.output.split("\n");
      expect(lines.filter((line) => line.includes("error TS"))).toEqual([]);
      expect(result.exitCode).toBe(0);
      // The package's declarations are what the app compiles against.
      for (const entry of ["index", "raw", "device", "diagnostics"]) {
        expect(lines).toContain(join(app, "node_modules", "bun-arrow-device", "dist", "js", `${entry}.d.ts`));
      }
      expect(lines.filter((line) => line.includes("/bun-arrow-device/") && !line.endsWith(".d.ts"))).toEqual([]);
    }, 120_000);
  }
});

describe("bundlers", () => {
  test("bun build: the bundle carries the library as an asset and runs from another folder", () => {
    const out = join(work, "bundle");
    mustRun([bun, "build", "--target", "bun", "quick_start.ts", "--outdir", out], app, bareEnv());
    expect(readdirSync(out).some((file) => file.startsWith("libarrow_device") || file.startsWith("arrow_device"))).toBe(true);
    const elsewhere = mkdtempSync(join(work, "run-"));
    expect(run([bun, join(out, "quick_start.js")], elsewhere, bareEnv())).toEqual({ exitCode: 0, output: quickstartOutput });
  }, 120_000);

  test("the bun build commands of docs/packaging.md: --outdir and --compile --outfile work; --outfile alone stops as the docs say", () => {
    const docs = readFileSync(join(root, "docs", "packaging.md"), "utf8");
    expect(docs).toContain("**`bun build --target bun app.ts --outdir out`**");
    expect(docs).toContain("**`bun build --compile app.ts --outfile app`**");
    const dir = mkdtempSync(join(work, "docs-build-"));
    mustRun([bun, "build", "--target", "bun", "quick_start.ts", "--outdir", join(dir, "out")], app, bareEnv());
    mustRun([bun, "build", "--compile", "quick_start.ts", "--outfile", join(dir, "app")], app, bareEnv());
    expect(run([join(dir, "app")], dir, bareEnv())).toEqual({ exitCode: 0, output: quickstartOutput });
    const single = run([bun, "build", "--target", "bun", "quick_start.ts", "--outfile", join(dir, "one.js")], app, bareEnv());
    expect(single.exitCode).not.toBe(0);
    const message = single.output.split("\n").find((line) => line.startsWith("error: "))!.slice("error: ".length).trim();
    expect(message).toBe("cannot write multiple output files without an output directory");
    expect(docs.replace(/\s+/g, " ")).toContain(`"${message}"`);
  }, 120_000);

  test("bun build --compile: the executable embeds the library and runs from another folder, without node_modules", () => {
    const binary = join(work, "compiled", "quickstart");
    mustRun([bun, "build", "--compile", "quick_start.ts", "--outfile", binary], app, bareEnv());
    const elsewhere = mkdtempSync(join(work, "run-"));
    const moved = join(elsewhere, "quickstart");
    cpSync(binary, moved);
    rmSync(join(work, "compiled"), { recursive: true, force: true });
    expect(run([moved], elsewhere, bareEnv())).toEqual({ exitCode: 0, output: quickstartOutput });
  }, 120_000);

  test("bun build --compile of an app that uses bun-arrow-device/python embeds the shim and runs Python from another folder", () => {
    const pyarrow = readdirSync(join(root, ".toolchain")).filter((dir) => dir.startsWith("pyarrow-")).map((dir) => join(root, ".toolchain", dir));
    // The README's Python recipe.
    writeFileSync(join(app, "python_app.ts"), [
      'import { tableFromArrays } from "apache-arrow";',
      'import { importTable } from "bun-arrow-device";',
      'import { type ImportedStream } from "bun-arrow-device/raw";',
      'import { fromPython, loadPython, toPython } from "bun-arrow-device/python";',
      "const py = loadPython();",
      'py.exec("import pyarrow as pa, pyarrow.compute as pc");',
      "using t = toPython(tableFromArrays({ x: Float64Array.of(1.5, 2.5) }));",
      `using doubled = py.eval("pa.table({'y': pc.multiply(pa.table(t)['x'], 2)})", { t });`,
      "console.log(JSON.stringify(importTable(fromPython(doubled) as ImportedStream).toArray()));",
    ].join("\n"));
    const binary = join(work, "compiled-python", "pyapp");
    mustRun([bun, "build", "--compile", "python_app.ts", "--outfile", binary], app, bareEnv());
    const elsewhere = mkdtempSync(join(work, "run-python-"));
    const moved = join(elsewhere, "pyapp");
    cpSync(binary, moved);
    rmSync(join(work, "compiled-python"), { recursive: true, force: true });
    // Without a Python the error is about Python, never about the shim.
    const none = run([moved], elsewhere, { ...bareEnv(), ARROW_DEVICE_LIBPYTHON: join(work, "no-such-libpython.so") });
    expect(none.exitCode).not.toBe(0);
    expect(none.output).not.toContain("shim");
    if (pyarrow.length === 0) {
      console.log("no pyarrow in .toolchain (bash scripts/setup.sh --test installs it): the compiled Python app is not run here");
      return;
    }
    const result = run([moved], elsewhere, { ...bareEnv(), PATH: `${bareEnv().PATH}${delimiter}${process.env.PATH}`, PYTHONPATH: pyarrow.join(delimiter) });
    expect(result).toEqual({ exitCode: 0, output: '[{"y":3},{"y":5}]' });
  }, 180_000);
});
