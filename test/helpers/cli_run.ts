/**
 * Runs the CLI and the examples in child processes, with the device
 * runtimes pointed at the fake drivers of build/fixtures or at a missing
 * file (no driver at all).
 */
import { suffix } from "bun:ffi";
import { join, resolve } from "node:path";

export const repoRoot = resolve(import.meta.dir, "..", "..");
export const cliPath = join(repoRoot, "ts", "cli.ts");

const fixture = (name: string) => join(repoRoot, "build", "fixtures", `lib${name}.${suffix}`);
const missing = join(repoRoot, "build", "fixtures", "no-such-driver.so");

/** Which drivers the child sees: both fakes, only the fake CUDA, or none. */
export type Drivers = "fake" | "fake-cuda" | "none";

export function driverEnv(drivers: Drivers): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) if (value !== undefined && !key.startsWith("ARROW_DEVICE_")) env[key] = value;
  env.ARROW_DEVICE_CUDA_LIBRARY = drivers === "none" ? missing : fixture("fake_cuda");
  env.ARROW_DEVICE_HIP_LIBRARY = drivers === "fake" ? fixture("fake_hip") : missing;
  return env;
}

export const fakePaths = { cuda: fixture("fake_cuda"), rocm: fixture("fake_hip"), missing };

export type RunResult = { exitCode: number; stdout: string; stderr: string };

/** A child still running after this long is killed: a CLI that reads or
 * runs without bound fails its test (exit code -1 and this note on
 * stderr) instead of blocking the test runner, which spawnSync would. */
export const childLimitMs = 180_000;

/** `bun <script> ...args` in the repository root. */
export function runScript(script: string, args: string[], drivers: Drivers): RunResult {
  const child = Bun.spawnSync([process.execPath, script, ...args], {
    cwd: repoRoot, env: driverEnv(drivers), stdout: "pipe", stderr: "pipe", timeout: childLimitMs, killSignal: "SIGKILL",
  });
  const killed = child.exitCode === null ? `\n[killed by ${child.signalCode ?? "a signal"}: still running after ${childLimitMs} ms]` : "";
  return { exitCode: child.exitCode ?? -1, stdout: child.stdout.toString(), stderr: `${child.stderr.toString()}${killed}` };
}

/** `bun-arrow-device ...args`. */
export function runCli(args: string[], drivers: Drivers = "fake"): RunResult {
  return runScript(cliPath, args, drivers);
}
