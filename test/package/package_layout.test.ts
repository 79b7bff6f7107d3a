/**
 * The package layout, without packing (fast): the committed
 * npm/<platform-id>/ files are what scripts/pack.ts generates, one per
 * platform id of the contract, with the os/cpu/libc fields package
 * managers select by; the main package's publish manifest lists each as
 * an optional dependency and ships no build inputs.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { mainManifest, platformFields, platformPackageFiles } from "../../scripts/pack.ts";
import { platformIds, platformPackage, unsupportedPlatform } from "../../ts/core/ffi/platform.ts";
import { testRoot } from "../helpers/paths.ts";

const root = resolve(testRoot, "..");
const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string; files: string[] };

describe("platform packages", () => {
  test("npm/ holds exactly the contract's platform ids", () => {
    expect(readdirSync(join(root, "npm")).sort()).toEqual([...platformIds].sort());
    expect([...platformIds].sort()).toEqual(["darwin-arm64", "darwin-x64", "linux-arm64-gnu", "linux-arm64-musl", "linux-x64-gnu", "linux-x64-musl"]);
  });

  test("the README's platform table says yes for CPU exactly where a package is published; win32-x64 says not yet", () => {
    const readme = readFileSync(join(root, "README.md"), "utf8");
    const rows = [...readme.matchAll(/^\| `([\w-]+)` \| ([^|]+) \|/gm)].map((m) => [m[1]!, m[2]!.trim()] as const);
    expect(rows.filter(([, cpu]) => cpu === "yes").map(([id]) => id).sort()).toEqual([...platformIds].sort());
    expect(Object.fromEntries(rows)["win32-x64"]).toBe("not yet");
  });

  test("the loader's error on a platform with no package says why and lists the published ones", () => {
    expect(unsupportedPlatform("linux-x64-gnu")).toBeUndefined();
    expect(unsupportedPlatform("win32-x64")).toBe(`bun-arrow-device has no prebuilt library for win32-x64: Windows is not supported yet (the library's platform code is POSIX threads, dlopen and clock_gettime). Prebuilt: ${platformIds.join(", ")}`);
    expect(unsupportedPlatform("freebsd-x64")).toStartWith("bun-arrow-device has no prebuilt library for freebsd-x64: no package is published for it.");
  });

  for (const id of platformIds) {
    test(`npm/${id} is what scripts/pack.ts generates`, () => {
      for (const [name, text] of Object.entries(platformPackageFiles(id, manifest.version))) {
        expect({ name, text: readFileSync(join(root, "npm", id, name), "utf8") }).toEqual({ name, text });
      }
    });
  }

  test("os, cpu and libc fields follow the platform id", () => {
    expect(platformFields("linux-x64-gnu")).toEqual({ os: "linux", cpu: "x64", libc: "glibc" });
    expect(platformFields("linux-arm64-musl")).toEqual({ os: "linux", cpu: "arm64", libc: "musl" });
    expect(platformFields("darwin-arm64")).toEqual({ os: "darwin", cpu: "arm64" });
    const mac = JSON.parse(platformPackageFiles("darwin-arm64", "1.2.3")["package.json"]!) as { files: string[]; libc?: string[] };
    expect(mac.files).toContain("libarrow_device.dylib");
    expect(mac.libc).toBeUndefined();
  });
});

describe("license, engines and repository", () => {
  const published = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { license: string; engines?: Record<string, string>; repository?: { url?: string } };

  test("LICENSE is the Apache License 2.0 package.json names, shipped by the main package and every platform package", () => {
    const text = readFileSync(join(root, "LICENSE"), "utf8");
    expect(published.license).toBe("Apache-2.0");
    expect(text).toContain("Apache License\n                           Version 2.0, January 2004");
    expect(text).toContain("END OF TERMS AND CONDITIONS");
    expect(manifest.files).toContain("LICENSE");
    for (const id of platformIds) {
      expect((JSON.parse(platformPackageFiles(id, manifest.version)["package.json"]!) as { files: string[] }).files).toContain("LICENSE");
    }
  });

  test("engines names Bun; repository names the source; both are in every platform package", () => {
    expect(Object.keys(published.engines ?? {})).toEqual(["bun"]);
    expect(Bun.semver.satisfies(Bun.version, published.engines!.bun!)).toBe(true);
    expect(published.repository?.url).toStartWith("git+https://");
    const platform = JSON.parse(platformPackageFiles("linux-x64-gnu", manifest.version)["package.json"]!) as typeof published;
    expect(platform.engines).toEqual(published.engines);
    expect(platform.repository).toEqual(published.repository);
  });
});

describe("the main package", () => {
  test("its publish manifest picks a platform package through optionalDependencies, pinned to its version", () => {
    const published = mainManifest() as { optionalDependencies: Record<string, string>; devDependencies?: unknown; scripts?: unknown };
    expect(published.optionalDependencies).toEqual(Object.fromEntries(platformIds.map((id) => [platformPackage(id), manifest.version])));
    expect(published.devDependencies).toBeUndefined();
    expect(published.scripts).toBeUndefined();
  });

  test('"files" ships what users need and no build inputs (zig/, scripts/, build.zig, ts/)', () => {
    expect(manifest.files).toContain("dist/js");
    expect(manifest.files).toContain("lib/include");
    for (const input of ["zig", "scripts", "build.zig", "ts", "lib", "test", "bench"]) expect(manifest.files).not.toContain(input);
  });
});

describe("the shipped docs", () => {
  const docs = readdirSync(join(root, "docs")).filter((file) => file.endsWith(".md"));
  const shipped = (path: string): boolean => manifest.files.some((entry) => path === entry || path.startsWith(`${entry}/`));

  test("every relative link of docs/ points to a file the package ships", () => {
    const broken: string[] = [];
    for (const doc of docs) {
      const text = readFileSync(join(root, "docs", doc), "utf8");
      for (const [, link] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(link!) || link!.startsWith("#")) continue;
        const target = relative(root, resolve(root, "docs", link!.split("#")[0]!));
        if (!shipped(target) || !existsSync(join(root, target))) broken.push(`docs/${doc}: ${link}`);
      }
    }
    expect(broken).toEqual([]);
  });

  test("the README's table of supported types names every format family of the C Data Interface", () => {
    const readme = readFileSync(join(root, "README.md"), "utf8");
    const section = readme.slice(readme.indexOf("### Supported types"), readme.indexOf("###", readme.indexOf("### Supported types") + 4));
    const formats = [...section.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
    const families = ["n", "b", "c", "C", "s", "S", "i", "I", "l", "L", "e", "f", "g", "d:p,s[,bits]", "tdD", "tdm", "tt?", "ts?:tz", "tD?", "tiM", "tiD", "tin",
      "u", "z", "U", "Z", "w:n", "vu", "vz", "+l", "+L", "+w:n", "+s", "+m", "+ud:ids", "+us:ids", "+vl", "+vL", "+r"];
    expect(families.filter((format) => !formats.includes(format))).toEqual([]);
    expect(section).toContain("| extension types |");
    expect(section).toContain("dictionary-encoded");
  });

  test("docs/cli.md names the bin package.json declares", () => {
    const bin = (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { bin: Record<string, string> }).bin["bun-arrow-device"]!;
    expect(readFileSync(join(root, "docs", "cli.md"), "utf8")).toContain(`The package's \`bin\` is \`${bin.replace(/^\.\//, "")}\``);
  });

  test("no doc states a count of the C header's functions other than the header's", () => {
    const count = new Set(readFileSync(join(root, "lib", "include", "arrow_device.h"), "utf8").match(/\babd_\w+(?=\()/g)).size;
    for (const doc of docs) {
      const stated = [...readFileSync(join(root, "docs", doc), "utf8").matchAll(/(\d+)\s+(?:today|functions)\b/g)].map((m) => Number(m[1]));
      expect({ doc, wrong: stated.filter((n) => n !== count && n > 50) }).toEqual({ doc, wrong: [] });
    }
  });
});
