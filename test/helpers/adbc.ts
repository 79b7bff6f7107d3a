/**
 * Where the ADBC driver libraries of the tests are: DuckDB's in the
 * devDependency @duckdb/node-bindings-<platform>, the others extracted from
 * their PyPI wheels by `scripts/setup.sh --test` into
 * .toolchain/adbc-drivers-<ADBC_DRIVERS_VERSION>/ (ADBC_DRIVER_DIR overrides).
 */
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";

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
