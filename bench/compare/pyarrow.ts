/**
 * pyarrow in this process: CPython embedded through libpython
 * (bun-arrow-device/python), with the pyarrow that scripts/setup.sh pins
 * and installs into .toolchain/pyarrow-<version> (scripts/toolchain.env),
 * and the libpython setup recorded (.toolchain/libpython-path) when
 * python3 has none of its own; ARROW_DEVICE_LIBPYTHON overrides it. The
 * same lookup as test/helpers/python.ts, without the other Python peers.
 *
 * `openPyarrow()` returns null and a reason when any of that is missing:
 * the benchmark then runs our side and the floors only.
 */
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { loadPython, type Python } from "../../ts/python.ts";

const root = resolve(import.meta.dir, "..", "..");

export type Pyarrow = { python: Python; version: string; pythonVersion: string; call(expression: string): string };

function pinned(name: string): string | undefined {
  const file = join(root, "scripts", "toolchain.env");
  if (!existsSync(file)) return undefined;
  const line = readFileSync(file, "utf8").split("\n").find((l) => l.startsWith(`${name}=`));
  return line?.slice(name.length + 1).trim();
}

export function openPyarrow(): { pyarrow: Pyarrow | null; reason: string } {
  const version = pinned("PYARROW_VERSION");
  const dir = join(root, ".toolchain", `pyarrow-${version}`);
  if (!version || !existsSync(dir)) return { pyarrow: null, reason: `${dir} is missing (bash scripts/setup.sh --test installs it)` };
  const recorded = join(root, ".toolchain", "libpython-path");
  const libpython = process.env.ARROW_DEVICE_LIBPYTHON ?? (existsSync(recorded) ? readFileSync(recorded, "utf8").trim() : undefined);
  try {
    const python = loadPython({ libpython, sysPath: [dir] });
    python.exec(readFileSync(join(import.meta.dir, "pyarrow_side.py"), "utf8"));
    const call = (expression: string) => {
      using result = python.eval(expression);
      return result.toString();
    };
    return { pyarrow: { python, version: call("pa.__version__"), pythonVersion: call("__import__('platform').python_version()"), call }, reason: "" };
  } catch (error) {
    return { pyarrow: null, reason: `pyarrow could not be loaded: ${(error as Error)?.message ?? String(error)}` };
  }
}
