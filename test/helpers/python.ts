/**
 * The embedded interpreter for test/peers/python.test.ts, with pyarrow and the
 * Python peers (Polars, DuckDB, nanoarrow) that `scripts/setup.sh --test`
 * installs into .toolchain/ at the versions pinned in scripts/toolchain.env,
 * and the Python helpers of test/helpers/python_peers.py in __main__.
 * A missing peer fails the import (never skipped).
 */
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { loadPython, type Python } from "../../ts/python.ts";

const root = resolve(import.meta.dir, "..", "..");

function pinned(name: string): string {
  const line = readFileSync(join(root, "scripts", "toolchain.env"), "utf8").split("\n").find((l) => l.startsWith(`${name}=`));
  if (!line) throw new Error(`scripts/toolchain.env pins no ${name}`);
  return line.slice(name.length + 1).trim();
}

/** pip --target folders of the peers, in sys.path order. */
export const peerDirs = [
  `pyarrow-${pinned("PYARROW_VERSION")}`,
  `polars-${pinned("POLARS_VERSION")}`,
  `duckdb-${pinned("DUCKDB_PYTHON_VERSION")}`,
  `nanoarrow-${pinned("NANOARROW_PYTHON_VERSION")}`,
].map((dir) => join(root, ".toolchain", dir));

/** The libpython setup recorded when python3 had none of its own. */
function recordedLibpython(): string | undefined {
  const file = join(root, ".toolchain", "libpython-path");
  return existsSync(file) ? readFileSync(file, "utf8").trim() : undefined;
}

let python: Python | null = null;

export function testPython(): Python {
  if (python) return python;
  for (const dir of peerDirs) if (!existsSync(dir)) throw new Error(`${dir} is missing: run bash scripts/setup.sh --test`);
  const started = loadPython({ libpython: process.env.ARROW_DEVICE_LIBPYTHON ?? recordedLibpython(), sysPath: peerDirs });
  started.exec(readFileSync(join(import.meta.dir, "python_peers.py"), "utf8"));
  started.exec("import polars as pl, duckdb");
  python = started;
  return started;
}

/** `expression`'s value as a JS value, through JSON. */
export function pyJson<T = unknown>(py: Python, expression: string, variables = {}): T {
  using text = py.eval(`__import__("json").dumps(${expression}, default=str)`, variables);
  return JSON.parse(text.toString()) as T;
}
