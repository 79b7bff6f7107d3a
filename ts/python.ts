/**
 * bun-arrow-device/python: CPython in the same process, and the Arrow
 * PyCapsule protocol both ways (docs/python.md). Loaded only when imported;
 * Python itself is loaded by the first `loadPython()` / `toPython()`.
 */
export { loadPython, loadedPython, Python, PyObject, type LoadPythonOptions, type PythonVariables } from "./python/interpreter.ts";
export { fromPython, schemaFromPython, toPython, type FromPythonOptions, type PythonMethodKind, type PythonSource } from "./python/exchange.ts";
export { locatePython, libpythonEnvVar, type LocateOptions, type LocatedPython } from "./python/locate.ts";
export { shimEnvVar, shimPath, type ShimCounters } from "./python/shim.ts";
export { PythonError, PythonUnavailableError } from "./python/errors.ts";
