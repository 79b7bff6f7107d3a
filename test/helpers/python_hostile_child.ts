/**
 * Child process of test/peers/python_hostile.test.ts: one case per run
 * (argv[2]), which either prints one JSON line (the error's class and
 * message, or what came back) or takes the process down; the parent runs
 * each case apart so that a crash fails that case and names it.
 */
import { writeSync } from "node:fs";
import { Schema, Field, Int32, Table } from "apache-arrow";
import { fromPython, toPython } from "../../ts/python.ts";
import { pyJson, testPython } from "./python.ts";

const py = testPython();

/** A Python object whose `method` returns a capsule named `name` holding `address`. */
function capsuleHolder(method: string, name: string, address: number): void {
  py.exec(`
import ctypes
_new = ctypes.pythonapi.PyCapsule_New
_new.restype = ctypes.py_object
_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
class Hostile:
    def ${method}(self, requested_schema=None):
        return _new(${address}, b"${name}", None)
hostile = Hostile()
`);
}

const cases: Record<string, () => unknown> = {
  "stream capsule holding 4096": () => {
    capsuleHolder("__arrow_c_stream__", "arrow_array_stream", 4096);
    using o = py.eval("hostile");
    return fromPython(o);
  },
  "device stream capsule holding 8": () => {
    capsuleHolder("__arrow_c_device_stream__", "arrow_device_array_stream", 8);
    using o = py.eval("hostile");
    return fromPython(o);
  },
  "a Table of 0 batches": () => {
    const table = new Table(new Schema([new Field("x", new Int32(), true)]));
    using o = toPython(table);
    return pyJson(py, "[str(pa.table(o).schema), pa.table(o).num_rows]", { o });
  },
};

const name = process.argv[2];
const run = cases[name];
if (!run) throw new Error(`no case ${name}; cases: ${Object.keys(cases).join(", ")}`);
let line: Record<string, unknown>;
try {
  const result = run();
  line = { outcome: "returned", result: (result as { dispose?: () => void } | null)?.dispose ? "an import" : result };
  (result as { dispose?: () => void } | null)?.dispose?.();
} catch (error) {
  line = { outcome: "threw", error: (error as Error)?.name, message: String((error as Error)?.message) };
}
writeSync(1, `${JSON.stringify(line)}\n`);
process.exit(0);
