/**
 * The handles' protocol methods are defined with the classes, so a program
 * that loads only `bun-arrow-device/raw` (no apache-arrow) has them: run in
 * a child process that imports nothing else (test/helpers/raw_protocol_child.ts).
 * Loading the root entry first changes nothing they do: the same child,
 * with the root entry preloaded, reports the same.
 */
import { expect, test } from "bun:test";
import { join } from "node:path";
import { repoRoot } from "../helpers/cli_run.ts";

const none = { ArrowCSchema: "undefined", ArrowCArray: "undefined", ArrowCDeviceArray: "undefined", ArrowCStream: "undefined", ArrowCDeviceStream: "undefined" };

/** The child's report; `preload`: modules loaded before it. */
function childReport(preload: string[] = []): Record<string, unknown> {
  const args = preload.flatMap((path) => ["--preload", join(repoRoot, path)]);
  const child = Bun.spawnSync([process.execPath, ...args, join(repoRoot, "test/helpers/raw_protocol_child.ts")], { cwd: repoRoot, stdout: "pipe", stderr: "pipe" });
  expect(child.stderr.toString()).toBe("");
  expect(child.exitCode).toBe(0);
  return JSON.parse(child.stdout.toString().trim());
}

test("raw-only handles have their protocol methods, and capsules round-trip", () => {
  const report = childReport();
  expect(report.apacheArrowLoaded).toBe(false);
  expect(report.exportedArray).toEqual({ ...none, ArrowCDeviceArray: "function" });
  expect(report.importedArray).toEqual({ ...none, ArrowCSchema: "function", ArrowCArray: "function", ArrowCDeviceArray: "function" });
  expect(report.exportedStream).toEqual({ ...none, ArrowCStream: "function" });
  expect(report.importedStream).toEqual({ ...none, ArrowCStream: "function", ArrowCDeviceStream: "function" });
  expect(report.arrayRoundTrip).toEqual([1, 2, 3]);
  expect(report.streamRoundTrip).toEqual([4, 4]);
  // The array's own schema is honoured, any other is a typed refusal that
  // names the way to cast.
  expect(report.sameSchema).toBeNull();
  expect(report.otherSchema).toStartWith("UnsupportedError: __arrow_c_array__: requestedSchema differs from this array's schema");
  expect(report.otherSchema).toContain("ask arrowProtocol(converted) for the requested schema");
});

test("/raw behaves the same when the root entry was loaded first", () => {
  const alone = childReport();
  const afterRoot = childReport(["ts/index.ts"]);
  expect(afterRoot.apacheArrowLoaded).toBe(true);
  expect(alone.apacheArrowLoaded).toBe(false);
  expect({ ...afterRoot, apacheArrowLoaded: null }).toEqual({ ...alone, apacheArrowLoaded: null });
});
