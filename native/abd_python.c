/*
 * libarrow_device_python: the native half of `bun-arrow-device/python`.
 *
 * It hosts CPython in the Bun process and speaks the Arrow PyCapsule
 * protocol for ts/python/. It links neither libpython nor libarrow_device:
 * both are opened at run time (`abdpy_load`, below) and every function it
 * uses is looked up once, all or nothing, into the tables declared in
 * abd_python.h. So the main library never depends on Python, and this shim
 * builds without Python headers (the few CPython C-API functions used are
 * all in the stable ABI and declared by hand).
 *
 * This file loads the two libraries, keeps the counters and error text, and
 * runs Python code for JS; abd_python.h lists the other files and their
 * jobs.
 *
 * The GIL. After `abdpy_load` no thread holds the GIL: the JS thread gave
 * it up (PyEval_SaveThread). Every entry point that touches Python takes it
 * (PyGILState_Ensure/Release), and so do the release callbacks of
 * everything imported from Python (`wrap_release`, `wrap_stream`), which
 * may run on any thread (a GC thread, a consumer's worker). While a Python
 * call made from JS calls back into JS (a JS-produced stream's get_next),
 * the GIL is given up around that call, so other threads can take it
 * meanwhile.
 *
 * Ownership, JS to Python (`abdpy_source_*`, abd_python_export.c): a Source
 * holds what JS handed over (owner references of imported arrays, a schema,
 * or a JS-produced stream) under an atomic reference count. The Python
 * object holds one reference through a capsule named
 * "bun_arrow_device.source"; every stream made from a Source holds one
 * more. Each protocol call makes new structs (re-exports of the owners: the
 * same buffers, zero-copy) in capsules named as the spec says, whose
 * destructors release what no consumer moved and free the struct.
 *
 * Ownership, Python to JS (`abdpy_import`, abd_python_import.c): the
 * producer's structs are moved out of its capsules into structs the caller
 * owns, so the capsules are left consumed (release == NULL) and their
 * destructors only free.
 */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abd_python.h"

#define PY_DEFINE(ret, name, args) ret(*py_##name) args;
PY_FUNCTIONS(PY_DEFINE)
PyObject** py_exc_type_error;
PyObject** py_exc_runtime_error;
PyObject** py_exc_value_error;

#define ABD_DEFINE(ret, name, args) ret(*lib_##name) args;
ABD_FUNCTIONS(ABD_DEFINE)

static atomic_int loaded;

/* ------------------------------------------------------------------------ */
/* Counters                                                                   */
/* ------------------------------------------------------------------------ */

atomic_llong counters[C_COUNTERS];

/* Counter values into `out` (C_COUNTERS words); returns how many. */
int abdpy_counters(double* out, int capacity) {
  int n = capacity < C_COUNTERS ? capacity : C_COUNTERS;
  for (int i = 0; i < n; i++) out[i] = (double)atomic_load(&counters[i]);
  return n;
}

/* ------------------------------------------------------------------------ */
/* Errors                                                                     */
/* ------------------------------------------------------------------------ */

void put(char* out, size_t capacity, const char* text) {
  if (!out || capacity == 0) return;
  snprintf(out, capacity, "%s", text ? text : "");
}

void take_python_error(char* out, size_t capacity) {
  PyObject *type = NULL, *value = NULL, *traceback = NULL;
  py_PyErr_Fetch(&type, &value, &traceback);
  if (!type) {
    put(out, capacity, "unknown Python error (no exception set)");
    return;
  }
  py_PyErr_NormalizeException(&type, &value, &traceback);
  const char* type_name = "Exception";
  PyObject* name = py_PyObject_GetAttrString(type, "__name__");
  if (name) type_name = py_PyUnicode_AsUTF8AndSize(name, NULL);
  if (!type_name) type_name = "Exception";
  const char* message = "";
  PyObject* text = value ? py_PyObject_Str(value) : NULL;
  if (text) message = py_PyUnicode_AsUTF8AndSize(text, NULL);
  if (!message) message = "";
  if (out && capacity) snprintf(out, capacity, "%s: %s", type_name, message);
  py_PyErr_Clear(); /* errors of the formatting itself */
  if (text) py_Py_DecRef(text);
  if (name) py_Py_DecRef(name);
  py_Py_DecRef(type);
  if (value) py_Py_DecRef(value);
  if (traceback) py_Py_DecRef(traceback);
}

/* ------------------------------------------------------------------------ */
/* Loading                                                                    */
/* ------------------------------------------------------------------------ */

/* `name` out of `library` (called `what` in the message) into `slot`, the
 * storage of a function or data pointer; or -1 with "<what> has no <name>"
 * and `hint` in `err`. The bytes are copied because ISO C has no cast from
 * dlsym's void* to a function pointer. */
static int lookup(void* library, const char* what, const char* name, const char* hint, void* slot, char* err, size_t capacity) {
  void* symbol = dlsym(library, name);
  if (!symbol) {
    snprintf(err, capacity, "%s has no %s%s", what, name, hint);
    return -1;
  }
  memcpy(slot, &symbol, sizeof symbol);
  return 0;
}

static int lookup_all(void* python, void* library, char* err, size_t capacity) {
#define PY_LOOKUP(ret, name, args) \
  if (lookup(python, "libpython", #name, " (a CPython 3.10 or newer is needed)", &py_##name, err, capacity) != 0) return -1;
  PY_FUNCTIONS(PY_LOOKUP)
  if (lookup(python, "libpython", "PyExc_TypeError", "", &py_exc_type_error, err, capacity) != 0) return -1;
  if (lookup(python, "libpython", "PyExc_RuntimeError", "", &py_exc_runtime_error, err, capacity) != 0) return -1;
  if (lookup(python, "libpython", "PyExc_ValueError", "", &py_exc_value_error, err, capacity) != 0) return -1;
#define ABD_LOOKUP(ret, name, args) \
  if (lookup(library, "libarrow_device", #name, " (out of date? rebuild it)", &lib_##name, err, capacity) != 0) return -1;
  ABD_FUNCTIONS(ABD_LOOKUP)
  return 0;
}

/*
 * Opens `libpython` (RTLD_GLOBAL, so extension modules such as pyarrow's
 * resolve the interpreter's symbols) and `libarrow_device`, looks up every
 * function, starts the interpreter unless it is running already, and gives
 * up the GIL. Returns 0, or -1 with a message in `err`. Idempotent; the
 * libraries are never closed (release callbacks may run until exit).
 */
int abdpy_load(const char* libpython, const char* libarrow_device, char* err, size_t capacity) {
  if (atomic_load(&loaded)) return 0;
  void* python = dlopen(libpython, RTLD_NOW | RTLD_GLOBAL);
  if (!python) {
    put(err, capacity, dlerror());
    return -1;
  }
  void* library = dlopen(libarrow_device, RTLD_NOW);
  if (!library) {
    put(err, capacity, dlerror());
    return -1;
  }
  if (lookup_all(python, library, err, capacity) != 0) return -1;
  if (!py_Py_IsInitialized()) {
    py_Py_InitializeEx(0); /* no signal handlers: Bun keeps its own */
    py_PyEval_SaveThread();
  }
  atomic_store(&loaded, 1);
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Running Python code (from JS)                                              */
/* ------------------------------------------------------------------------ */

/* `code` run in `globals` (`eval`: an expression, its value returned; else
 * statements, None returned). A new reference, or NULL with the exception
 * in `err`. */
void* abdpy_run(const char* code, int eval, void* globals, char* err, size_t capacity) {
  PyGILState_STATE gil = py_PyGILState_Ensure();
  PyObject* result = py_PyRun_StringFlags(code, eval ? Py_eval_input : Py_file_input, globals, globals, NULL);
  if (!result) take_python_error(err, capacity);
  py_PyGILState_Release(gil);
  return result;
}

/* `callable(*args)`: args is an array of `n` object pointers (borrowed).
 * A new reference, or NULL with the exception in `err`. */
void* abdpy_call(void* callable, void** args, int n, char* err, size_t capacity) {
  PyGILState_STATE gil = py_PyGILState_Ensure();
  PyObject* result = NULL;
  PyObject* tuple = py_PyTuple_New(n);
  if (tuple) {
    for (int i = 0; i < n; i++) {
      py_Py_IncRef(args[i]);
      py_PyTuple_SetItem(tuple, i, args[i]); /* steals */
    }
    result = py_PyObject_CallObject(callable, tuple);
    py_Py_DecRef(tuple);
  }
  if (!result) take_python_error(err, capacity);
  py_PyGILState_Release(gil);
  return result;
}

/* __main__'s namespace (a new reference). */
void* abdpy_main_dict(void) {
  PyGILState_STATE gil = py_PyGILState_Ensure();
  PyObject* dict = py_PyModule_GetDict(py_PyImport_AddModule("__main__"));
  if (dict) py_Py_IncRef(dict);
  py_PyGILState_Release(gil);
  return dict;
}

/* A new namespace with builtins (a new reference). */
void* abdpy_new_dict(void) {
  PyGILState_STATE gil = py_PyGILState_Ensure();
  PyObject* dict = py_PyDict_New();
  if (dict) py_PyDict_SetItemString(dict, "__builtins__", py_PyEval_GetBuiltins());
  py_PyGILState_Release(gil);
  return dict;
}

/* dict[key] = value (NULL value: delete the key). 0 or -1 with `err`. */
int abdpy_dict_set(void* dict, const char* key, void* value, char* err, size_t capacity) {
  PyGILState_STATE gil = py_PyGILState_Ensure();
  int rc = value ? py_PyDict_SetItemString(dict, key, value) : py_PyDict_DelItemString(dict, key);
  if (rc != 0) take_python_error(err, capacity);
  py_PyGILState_Release(gil);
  return rc;
}

/* dict[key] as a new reference, or NULL when absent. */
void* abdpy_dict_get(void* dict, const char* key) {
  PyGILState_STATE gil = py_PyGILState_Ensure();
  PyObject* value = py_PyDict_GetItemString(dict, key);
  if (value) py_Py_IncRef(value);
  py_PyGILState_Release(gil);
  return value;
}

void abdpy_decref(void* object) {
  if (!object) return;
  PyGILState_STATE gil = py_PyGILState_Ensure();
  py_Py_DecRef(object);
  py_PyGILState_Release(gil);
}

/* str(object) as UTF-8: its byte length, with the bytes in `out` when
 * they fit in `capacity` (no NUL added: the text may hold NULs); when
 * they do not, nothing is written and the caller asks again with room
 * for the length returned. -1 with the Python error in `out`. */
int64_t abdpy_str(void* object, char* out, size_t capacity) {
  PyGILState_STATE gil = py_PyGILState_Ensure();
  int64_t rc = -1;
  PyObject* text = py_PyObject_Str(object);
  if (text) {
    Py_ssize_t size = 0;
    const char* utf8 = py_PyUnicode_AsUTF8AndSize(text, &size);
    if (utf8) {
      if ((size_t)size <= capacity) memcpy(out, utf8, (size_t)size);
      rc = (int64_t)size;
    }
    py_Py_DecRef(text);
  }
  if (rc < 0) take_python_error(out, capacity);
  py_PyGILState_Release(gil);
  return rc;
}
