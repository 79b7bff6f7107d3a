/**
 * scripts/sanitize.sh is not part of the test command (it takes about a
 * minute and needs gcc's ASan runtime), so its build steps run here with
 * --check: the script's copy of the repository must hold everything
 * build.zig reads, and the sanitized C fixtures must compile. The Zig
 * build shares the repository's cache, so a run after the first rebuilds
 * little.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { repoRoot } from "../helpers/cli_run.ts";

const hasGcc = Bun.spawnSync(["sh", "-c", "command -v gcc"]).exitCode === 0;

describe("scripts/sanitize.sh", () => {
  test.if(hasGcc)("--check: the Debug build and the sanitized fixtures build in the script's copy", () => {
    const run = Bun.spawnSync(["bash", join(repoRoot, "scripts", "sanitize.sh"), "--check"], { cwd: repoRoot, stdout: "pipe", stderr: "pipe" });
    const output = `${run.stdout.toString()}${run.stderr.toString()}`;
    expect({ exitCode: run.exitCode, output }).toEqual({ exitCode: 0, output: expect.stringContaining("sanitize: builds passed in ") });
    expect(output).toContain("== Debug build of the library and fixtures\n");
    expect(output).toContain("== C fixtures with gcc -fsanitize=address,undefined\n");
    expect(output).not.toContain("== Tests under the sanitizers");
  }, 600_000);

  test("an unknown argument is refused with the usage", () => {
    const run = Bun.spawnSync(["bash", join(repoRoot, "scripts", "sanitize.sh"), "--frob"], { cwd: repoRoot, stdout: "pipe", stderr: "pipe" });
    expect(run.exitCode).toBe(2);
    expect(run.stdout.toString()).toBe("sanitize: unknown argument --frob (usage: scripts/sanitize.sh [--check])\n");
  });
});
