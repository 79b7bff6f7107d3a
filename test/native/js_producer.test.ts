// A producer written in JS (release callbacks are bun:ffi JSCallbacks, not
// threadsafe) whose imports are collected instead of disposed: the library
// runs those releases on the importing JS thread, from its event loop,
// never on the collector's thread or inside a collection (zig/import/owner.zig).
// Run in a child process, so that a crash fails this test.
import { expect, test } from "bun:test";
import { join } from "node:path";
import { repoRoot } from "../helpers/cli_run.ts";

test("a JS producer's imports collected without dispose() release every struct once, on the JS thread", () => {
  const child = Bun.spawnSync([process.execPath, join(repoRoot, "test/fixtures/js_producer/gc_release.ts"), "60"], { cwd: repoRoot, stdout: "pipe", stderr: "pipe" });
  expect(child.stderr.toString()).not.toContain("Segmentation fault");
  expect(child.exitCode).toBe(0);
  // 60 imports: one schema and one array release each.
  expect(child.stdout.toString()).toBe(`{"releases":120}\n`);
}, 60_000);
