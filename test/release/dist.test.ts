/**
 * The release libraries: `bash scripts/build-dist.sh` builds
 * every platform id into dist/native/, each file is checked for format,
 * CPU and exported functions, the x64 ones for instruction sets, and the
 * linux-x64-gnu / linux-arm64-gnu libraries run the smoke script under
 * qemu-user on a CPU without AVX and on an arm64 CPU
 * (scripts/qemu-smoke.sh). The tests after the first read what it built.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { checkPlatform, exportsOf, headerFunctions, platforms } from "../../scripts/native-check.ts";
import { nativeSourcesDigest } from "../../scripts/pack.ts";
import { ZIG } from "../helpers/toolchain.ts";
import { testRoot } from "../helpers/paths.ts";

const root = resolve(testRoot, "..");
const dist = join(root, "dist", "native");

function run(command: string[], env: Record<string, string> = {}): { exitCode: number; output: string } {
  const proc = Bun.spawnSync(command, { cwd: root, env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });
  return { exitCode: proc.exitCode ?? -1, output: proc.stdout.toString() + proc.stderr.toString() };
}

/** Instructions of `objdump -d` that need AVX or AVX-512: any ymm/zmm or
 * mask register, or a VEX/EVEX-encoded (v-prefixed) SIMD instruction on
 * xmm registers. */
function avxInstructions(path: string): string[] {
  const disassembly = run(["objdump", "-d", "--no-show-raw-insn", path]);
  expect(disassembly.exitCode).toBe(0);
  return disassembly.output.split("\n").filter((line) => /%[yz]mm\d|%k[0-7]\b|\tv[a-z0-9]+\s+.*%xmm\d/.test(line));
}

describe("release libraries (scripts/build-dist.sh)", () => {
  test("build-dist.sh cross-compiles every platform and its own symbol check passes", () => {
    const built = run(["bash", "scripts/build-dist.sh"]);
    if (built.exitCode !== 0) console.error(built.output);
    expect(built.exitCode).toBe(0);
    for (const platform of platforms) expect(built.output).toContain(`${platform.id}: ${platform.format} ${platform.machine},`);
    // What scripts/pack.ts matches the libraries to the sources by.
    expect(readFileSync(join(dist, "sources.sha256"), "utf8")).toBe(`${nativeSourcesDigest()}\n`);
  }, 1_800_000);

  for (const platform of platforms) {
    test(`${platform.id}: ${platform.file} is ${platform.format} for ${platform.machine} and exports exactly the header's abd_* functions`, () => {
      expect(checkPlatform(dist, platform)).toEqual([]);
    });
  }

  test("the check notices a function the header declares but the library lacks, and a wrong CPU", () => {
    const expected = [...headerFunctions(), "abd_not_exported"];
    expect(checkPlatform(dist, platforms[0]!, expected)).toEqual([`${platforms[0]!.id}: missing abd_not_exported`]);
    const arm64AsX64 = { ...platforms.find((p) => p.id === "linux-arm64-gnu")!, machine: "x64" as const };
    expect(checkPlatform(dist, arm64AsX64)).toEqual([`linux-arm64-gnu: ${join(dist, "linux-arm64-gnu", "libarrow_device.so")} is for arm64, not x64`]);
  });

  test("the exports include the functions every caller starts with", () => {
    const functions = exportsOf(join(dist, "darwin-arm64", "libarrow_device.dylib")).functions;
    expect(functions).toContain("abd_layout_manifest");
    expect(functions).toContain("abd_last_error");
  });

  test("the x64 libraries (release and development build) have no AVX-512, AVX or AVX2 instructions", () => {
    const files = [join(dist, "linux-x64-gnu", "libarrow_device.so"), join(dist, "linux-x64-musl", "libarrow_device.so"), join(root, "lib", "linux-x64-gnu", "libarrow_device.so")];
    for (const file of files) expect({ file, avx: avxInstructions(file).slice(0, 5) }).toEqual({ file, avx: [] });
  });

  test("the release libraries are stripped (no .symtab or debug sections)", () => {
    for (const id of ["linux-x64-gnu", "linux-arm64-musl"]) {
      const sections = run(["objdump", "-h", join(dist, id, "libarrow_device.so")]);
      expect(sections.exitCode).toBe(0);
      expect(sections.output).not.toContain(".debug_info");
      const symbols = run(["objdump", "-t", join(dist, id, "libarrow_device.so")]);
      expect(symbols.output).toContain("no symbols");
    }
  });

  test("the macOS libraries say why CUDA and ROCm are not available there; the Linux ones try the drivers", () => {
    const text = (id: string, file: string) => new TextDecoder("latin1").decode(readFileSync(join(dist, id, file)));
    for (const id of ["darwin-x64", "darwin-arm64"]) {
      const dylib = text(id, "libarrow_device.dylib");
      expect(dylib).toContain("CUDA is not available on macOS: NVIDIA's CUDA driver does not exist there");
      expect(dylib).toContain("ROCm is not available on macOS: AMD's HIP runtime does not exist there");
    }
    const so = text("linux-arm64-musl", "libarrow_device.so");
    expect(so).not.toContain("is not available on macOS");
    expect(so).toContain("libcuda.so.1");
  });

  test("win32-x64: the build stops with an error naming the platform and why", () => {
    const built = run([ZIG, "build", "--prefix", join(root, "dist", ".win32-attempt"), "-Dtarget=x86_64-windows-gnu", "-Dfixtures=false"]);
    expect(built.exitCode).not.toBe(0);
    expect(built.output).toContain("win32-x64 is not supported yet: libarrow_device uses POSIX threads, dlopen and clock_gettime");
  }, 300_000);

  test("linux-x64-gnu runs the smoke script under qemu-x86_64 -cpu Nehalem (no AVX) with Bun's baseline binary", () => {
    const smoke = run(["bash", "scripts/qemu-smoke.sh", "x64"]);
    if (smoke.exitCode !== 0) console.error(smoke.output);
    expect(smoke.output).toContain("-cpu Nehalem");
    expect(smoke.output).toContain(`smoke ok: x64 ${join(dist, "linux-x64-gnu", "libarrow_device.so")}: 4 rows, values and buffer addresses as sent`);
    expect(smoke.exitCode).toBe(0);
  }, 600_000);

  test("linux-arm64-gnu runs the smoke script under qemu-aarch64 with Bun's arm64 binary", () => {
    const smoke = run(["bash", "scripts/qemu-smoke.sh", "arm64"]);
    if (smoke.exitCode !== 0) console.error(smoke.output);
    expect(smoke.output).toContain(`smoke ok: arm64 ${join(dist, "linux-arm64-gnu", "libarrow_device.so")}: 4 rows, values and buffer addresses as sent`);
    expect(smoke.exitCode).toBe(0);
  }, 600_000);
});
