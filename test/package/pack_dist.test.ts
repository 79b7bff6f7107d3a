/**
 * scripts/pack.ts packs a release library only if it is the build of the
 * current native sources, decided by content (the digest build-dist.sh
 * records), never by file times; otherwise it stops before writing
 * anything and names each platform's problem.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { digestFile, distProblem, nativeSourcesDigest } from "../../scripts/pack.ts";
import { libraryFileName, platformIds, platformPackage } from "../../ts/core/ffi/platform.ts";
import { platformFields } from "../../scripts/pack.ts";
import { repoRoot } from "../helpers/cli_run.ts";

const work = mkdtempSync(join(tmpdir(), "abd-pack-dist-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** A dist folder with a (fake) library for each of `ids`, recording `digest`. */
function dist(name: string, ids: readonly string[], digest: string | null): string {
  const dir = join(work, name);
  for (const id of ids) {
    mkdirSync(join(dir, id), { recursive: true });
    const file = join(dir, id, libraryFileName(platformFields(id).os));
    writeFileSync(file, "library");
    // Older than every source: times must not matter.
    utimesSync(file, new Date("2001-01-01"), new Date("2001-01-01"));
  }
  mkdirSync(dir, { recursive: true });
  if (digest !== null) writeFileSync(join(dir, digestFile), `${digest}\n`);
  return dir;
}

test("the digest is of the sources' content: stable across calls, 64 hex digits", () => {
  const digest = nativeSourcesDigest();
  expect(digest).toMatch(/^[0-9a-f]{64}$/);
  expect(nativeSourcesDigest()).toBe(digest);
});

test("a library built from these sources is packed however old its file is; another digest or none is refused", () => {
  const digest = nativeSourcesDigest();
  const fresh = dist("fresh", platformIds, digest);
  for (const id of platformIds) expect(distProblem(fresh, id, digest)).toBeNull();
  const stale = dist("stale", platformIds, "0".repeat(64));
  expect(distProblem(stale, "linux-x64-gnu", digest)).toContain("was built from other native sources (recorded 000000000000");
  const unrecorded = dist("unrecorded", platformIds, null);
  expect(distProblem(unrecorded, "linux-x64-gnu", digest)).toContain(`${digestFile} is missing`);
  const empty = dist("empty", [], digest);
  expect(distProblem(empty, "darwin-arm64", digest)).toBe(`no ${join(empty, "darwin-arm64", "libarrow_device.dylib")} (run bash scripts/build-dist.sh)`);
});

test("a full pack with any library missing or stale stops with exit 1, naming each platform, and writes no tarball", () => {
  const mixed = dist("mixed", ["linux-x64-gnu"], "f".repeat(64));
  const out = join(work, "out");
  const proc = Bun.spawnSync([process.execPath, "scripts/pack.ts", "--out", out, "--dist", mixed], { cwd: repoRoot, stdout: "pipe", stderr: "pipe" });
  expect(proc.exitCode).toBe(1);
  expect(proc.stdout.toString()).toBe("");
  const lines = proc.stderr.toString().trim().split("\n");
  expect(lines.map((line) => line.split(":")[1]!.trim()).sort()).toEqual(platformIds.map(platformPackage).sort());
  expect(lines.find((line) => line.includes("linux-x64-gnu"))).toContain("was built from other native sources");
  expect(lines.find((line) => line.includes("darwin-x64"))).toContain("no ");
  expect(existsSync(out)).toBe(false);
});
