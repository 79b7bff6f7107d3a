/**
 * Where the ADBC driver libraries of the tests are: DuckDB's in the
 * devDependency @duckdb/node-bindings-<platform>, the others extracted from
 * their PyPI wheels by `scripts/setup.sh --test` into
 * .toolchain/adbc-drivers-<ADBC_DRIVERS_VERSION>/ (ADBC_DRIVER_DIR overrides).
 * Also what the ADBC test files share: the per-test settle step, and
 * catching a failure with the AdbcErrors it released.
 */
import { expect } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { native } from "../../ts/core/ffi/library.ts";
import { collectUntil } from "./gc.ts";
import { nonZeroCounters } from "./leaks.ts";

const root = resolve(import.meta.dir, "..", "..");

export const libduckdb = join(root, "node_modules/@duckdb", `node-bindings-${process.platform}-${process.arch}`, "libduckdb.so");

function driversVersion(): string {
  const env = readFileSync(join(root, "scripts/toolchain.env"), "utf8");
  return /^ADBC_DRIVERS_VERSION=(\S+)/m.exec(env)![1]!;
}

/** The path of `libadbc_driver_<name>.so`; throws with the setup command when missing. */
export function adbcDriver(name: "sqlite" | "postgresql" | "flightsql"): string {
  const dir = process.env.ADBC_DRIVER_DIR ?? join(root, ".toolchain", `adbc-drivers-${driversVersion()}`);
  const path = join(dir, `libadbc_driver_${name}.so`);
  if (!existsSync(path)) throw new Error(`${path} is missing: run bash scripts/setup.sh --test`);
  return path;
}

/** For afterEach: waits (bounded GC rounds) for every count to settle, and names what is left. */
export async function expectAdbcSettled(): Promise<void> {
  const settled = await collectUntil(() => Object.keys(nonZeroCounters()).length === 0, 200);
  expect(settled ? {} : nonZeroCounters()).toEqual({});
}

/** Runs `body` and returns the error it threw, with the AdbcErrors released meanwhile. */
export function adbcFailure(body: () => unknown): { error: unknown; released: number } {
  const before = native.abd_adbc_errors_released();
  try {
    body();
  } catch (error) {
    return { error, released: native.abd_adbc_errors_released() - before };
  }
  throw new Error("expected a failure");
}
