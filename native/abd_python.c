/*
 * libarrow_device_python: the native half of `bun-arrow-device/python`.
 *
 * It hosts CPython in the Bun process and speaks the Arrow PyCapsule
 * protocol for ts/python/. It links neither libpython nor libarrow_device:
 * both are opened at run time (`abdpy_load`) and every function it uses is
 * looked up once, all or nothing, into the tables below. So the main
 * library never depends on Python, and this shim builds without Python
 * headers (the few CPython C-API functions used are all in the stable ABI
 * and declared here by hand).
 *
 * The GIL. After `abdpy_load` no thread holds the GIL: the JS thread gave
 * it up (PyEval_SaveThread). Every entry point below that touches Python
 * takes it (PyGILState_Ensure/Release), and so do the release callbacks of
 * everything imported from Python (`wrap_*` below), which may run on any
 * thread (a GC thread, a consumer's worker). While a Python call made from
 * JS calls back into JS (a JS-produced stream's get_next), the GIL is given
 * up around that call, so other threads can take it meanwhile.
 *
 * Ownership, JS to Python (`abdpy_source_*`): a Source holds what JS handed
 * over (owner references of imported arrays, a schema, or a JS-produced
 * stream) under an atomic reference count. The Python object holds one
 * reference through a capsule named "bun_arrow_device.source"; every stream
 * made from a Source holds one more. Each protocol call makes new structs
 * (re-exports of the owners: the same buffers, zero-copy) in capsules
 * named as the spec says, whose destructors release what no consumer moved
 * and free the struct.
 *
 * Ownership, Python to JS (`abdpy_import`): the producer's structs are
 * moved out of its capsules into structs the caller owns, so the capsules
 * are left consumed (release == NULL) and their destructors only free.
 */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "arrow_device.h"

/* ------------------------------------------------------------------------ */
/* CPython, looked up at run time                                             */
/* ------------------------------------------------------------------------ */

typedef void PyObject;
typedef ssize_t Py_ssize_t;
typedef int PyGILState_STATE;
typedef void PyThreadState;
typedef PyObject* (*PyCFunction)(PyObject*, PyObject*);
typedef void (*PyCapsule_Destructor)(PyObject*);
/* C: PyMethodDef (stable ABI) */
typedef struct {
  const char* ml_name;
  PyCFunction ml_meth;
  int ml_flags;
  const char* ml_doc;
} PyMethodDef;
enum { METH_VARARGS = 1, Py_file_input = 257, Py_eval_input = 258 };

/* One list of every CPython function used: declares the table and drives
 * the lookup. */
#define PY_FUNCTIONS(X)                                                                    \
  X(int, Py_IsInitialized, (void))                                                         \
  X(void, Py_InitializeEx, (int))                                                          \
  X(PyThreadState*, PyEval_SaveThread, (void))                                            \
  X(void, PyEval_RestoreThread, (PyThreadState*))                                         \
  X(PyGILState_STATE, PyGILState_Ensure, (void))                                          \
  X(void, PyGILState_Release, (PyGILState_STATE))                                         \
  X(int, PyGILState_Check, (void))                                                         \
  X(PyObject*, PyRun_StringFlags, (const char*, int, PyObject*, PyObject*, void*))        \
  X(void, Py_IncRef, (PyObject*))                                                          \
  X(void, Py_DecRef, (PyObject*))                                                          \
  X(PyObject*, PyErr_Occurred, (void))                                                     \
  X(void, PyErr_Fetch, (PyObject**, PyObject**, PyObject**))                              \
  X(void, PyErr_NormalizeException, (PyObject**, PyObject**, PyObject**))                 \
  X(void, PyErr_Clear, (void))                                                             \
  X(void, PyErr_SetString, (PyObject*, const char*))                                      \
  X(PyObject*, PyObject_Str, (PyObject*))                                                  \
  X(const char*, PyUnicode_AsUTF8AndSize, (PyObject*, Py_ssize_t*))                       \
  X(PyObject*, PyUnicode_FromString, (const char*))                                        \
  X(PyObject*, PyObject_GetAttrString, (PyObject*, const char*))                          \
  X(int, PyObject_HasAttrString, (PyObject*, const char*))                                \
  X(PyObject*, PyObject_CallObject, (PyObject*, PyObject*))                               \
  X(PyObject*, PyTuple_New, (Py_ssize_t))                                                  \
  X(int, PyTuple_SetItem, (PyObject*, Py_ssize_t, PyObject*))                             \
  X(PyObject*, PyTuple_GetItem, (PyObject*, Py_ssize_t))                                  \
  X(Py_ssize_t, PyTuple_Size, (PyObject*))                                                 \
  X(PyObject*, PyCapsule_New, (void*, const char*, PyCapsule_Destructor))                 \
  X(void*, PyCapsule_GetPointer, (PyObject*, const char*))                                \
  X(int, PyCapsule_IsValid, (PyObject*, const char*))                                     \
  X(const char*, PyCapsule_GetName, (PyObject*))                                           \
  X(PyObject*, PyDict_New, (void))                                                         \
  X(int, PyDict_SetItemString, (PyObject*, const char*, PyObject*))                       \
  X(int, PyDict_DelItemString, (PyObject*, const char*))                                  \
  X(PyObject*, PyDict_GetItemString, (PyObject*, const char*))                            \
  X(PyObject*, PyEval_GetBuiltins, (void))                                                 \
  X(PyObject*, PyCFunction_NewEx, (PyMethodDef*, PyObject*, PyObject*))                   \
  X(long long, PyLong_AsLongLong, (PyObject*))                                             \
  X(PyObject*, PyImport_AddModule, (const char*))                                          \
  X(PyObject*, PyModule_GetDict, (PyObject*))

#define PY_DECLARE(ret, name, args) static ret(*py_##name) args;
PY_FUNCTIONS(PY_DECLARE)

/* Exception types are data symbols: `PyObject* PyExc_TypeError`. */
static PyObject** py_exc_type_error;
static PyObject** py_exc_runtime_error;
static PyObject** py_exc_value_error;

/* ------------------------------------------------------------------------ */
/* libarrow_device, looked up at run time                                     */
/* ------------------------------------------------------------------------ */

#define ABD_FUNCTIONS(X)                                                                              \
  X(int, abd_owner_reexport, (void*, const double*, uint32_t, struct ArrowSchema*, struct ArrowDeviceArray*)) \
  X(int, abd_owner_reexport_array, (void*, const double*, uint32_t, struct ArrowSchema*, struct ArrowArray*)) \
  X(void, abd_owner_release, (void*))                                                                \
  X(int, abd_schema_copy, (const struct ArrowSchema*, struct ArrowSchema*))                          \
  X(int, abd_stream_to_device, (struct ArrowArrayStream*, struct ArrowDeviceArrayStream*))           \
  X(const char*, abd_last_error, (void))

#define ABD_DECLARE(ret, name, args) static ret(*lib_##name) args;
ABD_FUNCTIONS(ABD_DECLARE)

static atomic_int loaded;
/* The private namespace of ts/python/bootstrap.ts (classes, helpers). */
static PyObject* private_dict;

/* ------------------------------------------------------------------------ */
/* Counters (read by tests through abdpy_counters)                            */
/* ------------------------------------------------------------------------ */

enum {
  C_CAPSULES_MADE,         /* schema/array/stream capsules this shim created */
  C_CAPSULES_FREED,        /* ...whose destructor ran */
  C_CAPSULES_RELEASED,     /* ...whose destructor found data nobody moved and released it */
  C_SOURCES_LIVE,          /* Sources not yet freed */
  C_IMPORTS,               /* structs moved out of a producer's capsules */
  C_WRAPPED_RELEASES,      /* producer releases run through a GIL wrapper */
  C_STREAMS_LIVE,          /* streams over Sources not yet released */
  C_COUNTERS
};
static atomic_llong counters[C_COUNTERS];

static void count(int which, long long by) { atomic_fetch_add(&counters[which], by); }

/* Counter values into `out` (C_COUNTERS words); returns how many. */
int abdpy_counters(double* out, int capacity) {
  int n = capacity < C_COUNTERS ? capacity : C_COUNTERS;
  for (int i = 0; i < n; i++) out[i] = (double)atomic_load(&counters[i]);
  return n;
}

/* ------------------------------------------------------------------------ */
/* Errors                                                                     */
/* ------------------------------------------------------------------------ */

static void put(char* out, size_t capacity, const char* text) {
  if (!out || capacity == 0) return;
  snprintf(out, capacity, "%s", text ? text : "");
}

/* The pending Python exception as "TypeName: message" into `out`; clears
 * it. Needs the GIL. */
static void take_python_error(char* out, size_t capacity) {
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

static int lookup_all(void* python, void* library, char* err, size_t capacity) {
  void* symbol;
#define PY_LOOKUP(ret, name, args)                                                                  \
  symbol = dlsym(python, #name);                                                                    \
  if (!symbol) {                                                                                    \
    snprintf(err, capacity, "libpython has no %s (a CPython 3.10 or newer is needed)", #name);      \
    return -1;                                                                                      \
  }                                                                                                 \
  memcpy(&py_##name, &symbol, sizeof symbol);
  PY_FUNCTIONS(PY_LOOKUP)
#define EXC_LOOKUP(var, name)                                         \
  var = (PyObject**)dlsym(python, name);                              \
  if (!var) {                                                         \
    snprintf(err, capacity, "libpython has no %s", name);             \
    return -1;                                                        \
  }
  EXC_LOOKUP(py_exc_type_error, "PyExc_TypeError")
  EXC_LOOKUP(py_exc_runtime_error, "PyExc_RuntimeError")
  EXC_LOOKUP(py_exc_value_error, "PyExc_ValueError")
#define ABD_LOOKUP(ret, name, args)                                                                 \
  symbol = dlsym(library, #name);                                                                   \
  if (!symbol) {                                                                                    \
    snprintf(err, capacity, "libarrow_device has no %s (out of date? rebuild it)", #name);          \
    return -1;                                                                                      \
  }                                                                                                 \
  memcpy(&lib_##name, &symbol, sizeof symbol);
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

/* str(object) into `out` (UTF-8, cut to fit). 0, or -1 with `out` holding
 * the exception. */
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

/* ------------------------------------------------------------------------ */
/* Python to JS: producers' releases under the GIL                            */
/* ------------------------------------------------------------------------ */


/* A producer's release, put back and run under the GIL: what the spec's
 * consumer does, on whatever thread the last user of the data is on. */
typedef struct {
  void (*release)(struct ArrowSchema*);
  void* private_data;
} SavedSchemaRelease;

typedef struct {
  void (*release)(struct ArrowArray*);
  void* private_data;
} SavedArrayRelease;

static void gil_schema_release(struct ArrowSchema* schema) {
  SavedSchemaRelease* saved = (SavedSchemaRelease*)schema->private_data;
  schema->release = saved->release;
  schema->private_data = saved->private_data;
  free(saved);
  count(C_WRAPPED_RELEASES, 1);
  PyGILState_STATE gil = py_PyGILState_Ensure();
  schema->release(schema);
  py_PyGILState_Release(gil);
}

static void gil_array_release(struct ArrowArray* array) {
  SavedArrayRelease* saved = (SavedArrayRelease*)array->private_data;
  array->release = saved->release;
  array->private_data = saved->private_data;
  free(saved);
  count(C_WRAPPED_RELEASES, 1);
  PyGILState_STATE gil = py_PyGILState_Ensure();
  array->release(array);
  py_PyGILState_Release(gil);
}

/* Routes a live struct's release through the GIL wrapper. -1 (struct
 * untouched) when out of memory. Only the base struct: its release owns
 * the children, as the spec says. */
static int wrap_schema(struct ArrowSchema* schema) {
  if (!schema->release) return 0;
  SavedSchemaRelease* saved = (SavedSchemaRelease*)malloc(sizeof *saved);
  if (!saved) return -1;
  saved->release = schema->release;
  saved->private_data = schema->private_data;
  schema->release = gil_schema_release;
  schema->private_data = saved;
  return 0;
}

static int wrap_array(struct ArrowArray* array) {
  if (!array->release) return 0;
  SavedArrayRelease* saved = (SavedArrayRelease*)malloc(sizeof *saved);
  if (!saved) return -1;
  saved->release = array->release;
  saved->private_data = array->private_data;
  array->release = gil_array_release;
  array->private_data = saved;
  return 0;
}

/* A Python producer's stream behind one whose every callback holds the
 * GIL, and whose schemas and arrays release under it too. */
typedef struct {
  struct ArrowArrayStream inner;
} GilArrayStream;

typedef struct {
  struct ArrowDeviceArrayStream inner;
} GilDeviceStream;

enum { ERRNO_NOMEM = 12 };

static int gil_stream_get_schema(struct ArrowArrayStream* stream, struct ArrowSchema* out) {
  GilArrayStream* self = (GilArrayStream*)stream->private_data;
  PyGILState_STATE gil = py_PyGILState_Ensure();
  int rc = self->inner.get_schema(&self->inner, out);
  if (rc == 0 && wrap_schema(out) != 0) {
    out->release(out);
    rc = ERRNO_NOMEM;
  }
  py_PyGILState_Release(gil);
  return rc;
}

static int gil_stream_get_next(struct ArrowArrayStream* stream, struct ArrowArray* out) {
  GilArrayStream* self = (GilArrayStream*)stream->private_data;
  PyGILState_STATE gil = py_PyGILState_Ensure();
  int rc = self->inner.get_next(&self->inner, out);
  if (rc == 0 && wrap_array(out) != 0) {
    out->release(out);
    rc = ERRNO_NOMEM;
  }
  py_PyGILState_Release(gil);
  return rc;
}

static const char* gil_stream_get_last_error(struct ArrowArrayStream* stream) {
  GilArrayStream* self = (GilArrayStream*)stream->private_data;
  PyGILState_STATE gil = py_PyGILState_Ensure();
  const char* message = self->inner.get_last_error(&self->inner);
  py_PyGILState_Release(gil);
  return message;
}

static void gil_stream_release(struct ArrowArrayStream* stream) {
  GilArrayStream* self = (GilArrayStream*)stream->private_data;
  count(C_WRAPPED_RELEASES, 1);
  PyGILState_STATE gil = py_PyGILState_Ensure();
  if (self->inner.release) self->inner.release(&self->inner);
  py_PyGILState_Release(gil);
  free(self);
  stream->release = NULL;
}

static int gil_device_get_schema(struct ArrowDeviceArrayStream* stream, struct ArrowSchema* out) {
  GilDeviceStream* self = (GilDeviceStream*)stream->private_data;
  PyGILState_STATE gil = py_PyGILState_Ensure();
  int rc = self->inner.get_schema(&self->inner, out);
  if (rc == 0 && wrap_schema(out) != 0) {
    out->release(out);
    rc = ERRNO_NOMEM;
  }
  py_PyGILState_Release(gil);
  return rc;
}

static int gil_device_get_next(struct ArrowDeviceArrayStream* stream, struct ArrowDeviceArray* out) {
  GilDeviceStream* self = (GilDeviceStream*)stream->private_data;
  PyGILState_STATE gil = py_PyGILState_Ensure();
  int rc = self->inner.get_next(&self->inner, out);
  if (rc == 0 && wrap_array(&out->array) != 0) {
    out->array.release(&out->array);
    rc = ERRNO_NOMEM;
  }
  py_PyGILState_Release(gil);
  return rc;
}

static const char* gil_device_get_last_error(struct ArrowDeviceArrayStream* stream) {
  GilDeviceStream* self = (GilDeviceStream*)stream->private_data;
  PyGILState_STATE gil = py_PyGILState_Ensure();
  const char* message = self->inner.get_last_error(&self->inner);
  py_PyGILState_Release(gil);
  return message;
}

static void gil_device_release(struct ArrowDeviceArrayStream* stream) {
  GilDeviceStream* self = (GilDeviceStream*)stream->private_data;
  count(C_WRAPPED_RELEASES, 1);
  PyGILState_STATE gil = py_PyGILState_Ensure();
  if (self->inner.release) self->inner.release(&self->inner);
  py_PyGILState_Release(gil);
  free(self);
  stream->release = NULL;
}

/* ------------------------------------------------------------------------ */
/* Python to JS: calling the protocol and moving out of the capsules          */
/* ------------------------------------------------------------------------ */

/* Kinds, by the protocol method that produces them. */
enum {
  KIND_DEVICE_ARRAY = 0,
  KIND_ARRAY = 1,
  KIND_DEVICE_STREAM = 2,
  KIND_STREAM = 3,
  KIND_SCHEMA = 4,
  KIND_COUNT = 5,
  /* abdpy_import's choices: the first method the object has, in order */
  PREFER_ARRAY = -1,
  PREFER_STREAM = -2,
};
static const char* const method_names[KIND_COUNT] = {
    "__arrow_c_device_array__", "__arrow_c_array__", "__arrow_c_device_stream__", "__arrow_c_stream__", "__arrow_c_schema__",
};
static const char* const capsule_names[KIND_COUNT] = {
    "arrow_device_array", "arrow_array", "arrow_device_array_stream", "arrow_array_stream", "arrow_schema",
};
static const int prefer_array[KIND_COUNT] = {KIND_DEVICE_ARRAY, KIND_ARRAY, KIND_DEVICE_STREAM, KIND_STREAM, KIND_SCHEMA};
static const int prefer_stream[KIND_COUNT] = {KIND_DEVICE_STREAM, KIND_STREAM, KIND_DEVICE_ARRAY, KIND_ARRAY, KIND_SCHEMA};

/* type(object).__qualname__ into `out`. */
static void type_name_of(PyObject* object, char* out, size_t capacity) {
  put(out, capacity, "?");
  PyObject* type = py_PyObject_GetAttrString(object, "__class__");
  PyObject* name = type ? py_PyObject_GetAttrString(type, "__qualname__") : NULL;
  const char* text = name ? py_PyUnicode_AsUTF8AndSize(name, NULL) : NULL;
  if (text) put(out, capacity, text);
  py_PyErr_Clear();
  if (name) py_Py_DecRef(name);
  if (type) py_Py_DecRef(type);
}

static int choose_kind(PyObject* object, int wanted) {
  if (wanted >= 0) return py_PyObject_HasAttrString(object, method_names[wanted]) ? wanted : -1;
  const int* order = wanted == PREFER_STREAM ? prefer_stream : prefer_array;
  for (int i = 0; i < KIND_COUNT; i++) {
    if (py_PyObject_HasAttrString(object, method_names[order[i]])) return order[i];
  }
  return -1;
}

/* The capsule `name` out of `capsule`, or NULL with a message in `err`. */
static void* capsule_pointer(PyObject* capsule, const char* name, const char* method, char* err, size_t capacity) {
  if (!py_PyCapsule_IsValid(capsule, name)) {
    const char* got = NULL;
    char type[128];
    type_name_of(capsule, type, sizeof type);
    if (py_PyCapsule_IsValid(capsule, py_PyCapsule_GetName(capsule))) got = py_PyCapsule_GetName(capsule);
    py_PyErr_Clear();
    snprintf(err, capacity, "%s returned a %s%s%s%s where a PyCapsule named \"%s\" was expected", method, type,
             got ? " named \"" : "", got ? got : "", got ? "\"" : "", name);
    return NULL;
  }
  return py_PyCapsule_GetPointer(capsule, name);
}

static size_t struct_size(int kind) {
  switch (kind) {
    case KIND_DEVICE_ARRAY: return sizeof(struct ArrowDeviceArray);
    case KIND_ARRAY: return sizeof(struct ArrowArray);
    case KIND_DEVICE_STREAM: return sizeof(struct ArrowDeviceArrayStream);
    case KIND_STREAM: return sizeof(struct ArrowArrayStream);
    default: return sizeof(struct ArrowSchema);
  }
}

/* Marks a moved-from struct released (its capsule is then consumed). */
static void mark_released(int kind, void* source) {
  switch (kind) {
    case KIND_DEVICE_ARRAY: ((struct ArrowDeviceArray*)source)->array.release = NULL; break;
    case KIND_ARRAY: ((struct ArrowArray*)source)->release = NULL; break;
    case KIND_DEVICE_STREAM: ((struct ArrowDeviceArrayStream*)source)->release = NULL; break;
    case KIND_STREAM: ((struct ArrowArrayStream*)source)->release = NULL; break;
    default: ((struct ArrowSchema*)source)->release = NULL; break;
  }
}

/* Routes the moved struct `out` (of `kind`) through the GIL wrappers. */
static int wrap_moved(int kind, void* out) {
  switch (kind) {
    case KIND_DEVICE_ARRAY: return wrap_array(&((struct ArrowDeviceArray*)out)->array);
    case KIND_ARRAY: return wrap_array((struct ArrowArray*)out);
    case KIND_SCHEMA: return wrap_schema((struct ArrowSchema*)out);
    case KIND_STREAM: {
      struct ArrowArrayStream* stream = (struct ArrowArrayStream*)out;
      if (!stream->release) return 0; /* consumed: stays released, the import refuses it */
      GilArrayStream* self = (GilArrayStream*)malloc(sizeof *self);
      if (!self) return -1;
      self->inner = *stream;
      stream->get_schema = gil_stream_get_schema;
      stream->get_next = gil_stream_get_next;
      stream->get_last_error = gil_stream_get_last_error;
      stream->release = gil_stream_release;
      stream->private_data = self;
      return 0;
    }
    default: {
      struct ArrowDeviceArrayStream* stream = (struct ArrowDeviceArrayStream*)out;
      if (!stream->release) return 0; /* consumed: stays released, the import refuses it */
      GilDeviceStream* self = (GilDeviceStream*)malloc(sizeof *self);
      if (!self) return -1;
      self->inner = *stream;
      stream->get_schema = gil_device_get_schema;
      stream->get_next = gil_device_get_next;
      stream->get_last_error = gil_device_get_last_error;
      stream->release = gil_device_release;
      stream->private_data = self;
      return 0;
    }
  }
}

/*
 * Calls `object`'s protocol method for `wanted` (a KIND_*, or PREFER_ARRAY /
 * PREFER_STREAM: the first the object has, device methods first) with no
 * arguments, and moves what it returned out of its capsules: the schema
 * into `schema_out` (arrays), the array or stream (or schema, for
 * KIND_SCHEMA) into `struct_out`. Both are the caller's, zeroed, large
 * enough for the kind. The capsules are left consumed; the moved structs'
 * releases run under the GIL. Returns the kind, or -1 with `err` (then
 * nothing was moved: the capsules' destructors release the data).
 */
int abdpy_import(void* object, int wanted, void* schema_out, void* struct_out, char* err, size_t capacity) {
  PyGILState_STATE gil = py_PyGILState_Ensure();
  int kind = choose_kind(object, wanted);
  PyObject* result = NULL;
  if (kind < 0) {
    char type[128];
    type_name_of(object, type, sizeof type);
    if (wanted >= 0) snprintf(err, capacity, "a Python %s has no %s method", type, method_names[wanted]);
    else snprintf(err, capacity, "a Python %s implements no Arrow PyCapsule method (__arrow_c_device_array__, __arrow_c_array__, __arrow_c_device_stream__, __arrow_c_stream__, __arrow_c_schema__)", type);
    goto done;
  }
  PyObject* method = py_PyObject_GetAttrString(object, method_names[kind]);
  if (method) {
    result = py_PyObject_CallObject(method, NULL);
    py_Py_DecRef(method);
  }
  if (!result) {
    char message[1024];
    take_python_error(message, sizeof message);
    snprintf(err, capacity, "%s() raised %s", method_names[kind], message);
    kind = -1;
    goto done;
  }
  void* schema_in = NULL;
  void* struct_in = NULL;
  if (kind == KIND_DEVICE_ARRAY || kind == KIND_ARRAY) {
    if (py_PyTuple_Size(result) != 2) {
      py_PyErr_Clear();
      snprintf(err, capacity, "%s() returned something other than a (schema, array) pair of capsules", method_names[kind]);
      kind = -1;
      goto done;
    }
    schema_in = capsule_pointer(py_PyTuple_GetItem(result, 0), "arrow_schema", method_names[kind], err, capacity);
    struct_in = schema_in ? capsule_pointer(py_PyTuple_GetItem(result, 1), capsule_names[kind], method_names[kind], err, capacity) : NULL;
  } else {
    struct_in = capsule_pointer(result, capsule_names[kind], method_names[kind], err, capacity);
  }
  if (!struct_in || ((kind == KIND_DEVICE_ARRAY || kind == KIND_ARRAY) && !schema_in)) {
    kind = -1;
    goto done;
  }
  /* The move: a bitwise copy, the source marked released. */
  memcpy(struct_out, struct_in, struct_size(kind));
  mark_released(kind, struct_in);
  if (schema_in) {
    memcpy(schema_out, schema_in, sizeof(struct ArrowSchema));
    mark_released(KIND_SCHEMA, schema_in);
  }
  count(C_IMPORTS, 1);
  if (wrap_moved(kind, struct_out) != 0 || (schema_in && wrap_moved(KIND_SCHEMA, schema_out) != 0)) {
    /* Out of memory: what was moved is ours to release (the wrapper, if it
     * was installed, releases through the producer's own callback). */
    if (kind == KIND_DEVICE_ARRAY || kind == KIND_ARRAY) {
      struct ArrowArray* array = kind == KIND_ARRAY ? (struct ArrowArray*)struct_out : &((struct ArrowDeviceArray*)struct_out)->array;
      if (array->release) array->release(array);
      struct ArrowSchema* schema = (struct ArrowSchema*)schema_out;
      if (schema->release) schema->release(schema);
    } else if (kind == KIND_STREAM) {
      struct ArrowArrayStream* stream = (struct ArrowArrayStream*)struct_out;
      if (stream->release) stream->release(stream);
    } else if (kind == KIND_DEVICE_STREAM) {
      struct ArrowDeviceArrayStream* stream = (struct ArrowDeviceArrayStream*)struct_out;
      if (stream->release) stream->release(stream);
    } else {
      struct ArrowSchema* schema = (struct ArrowSchema*)struct_out;
      if (schema->release) schema->release(schema);
    }
    put(err, capacity, "out of memory wrapping an imported release callback");
    kind = -1;
    goto done;
  }
done:
  if (result) py_Py_DecRef(result); /* the capsules' destructors: consumed, so they only free */
  py_PyGILState_Release(gil);
  return kind;
}

/* ------------------------------------------------------------------------ */
/* JS to Python: Sources and the capsules made from them                      */
/* ------------------------------------------------------------------------ */

enum { SOURCE_ARRAY, SOURCE_TABLE, SOURCE_STREAM, SOURCE_SCHEMA };
static const char source_capsule_name[] = "bun_arrow_device.source";

/* What JS handed to Python; see the file comment for who holds it. */
typedef struct {
  atomic_int refs;
  int kind;
  int32_t device_type;
  /* Every kind: the schema, owned (a copy for arrays and tables). */
  struct ArrowSchema schema;
  /* SOURCE_ARRAY (1) and SOURCE_TABLE (n): one owner reference each. */
  int64_t n_owners;
  void** owners;
  /* SOURCE_STREAM: the JS-produced stream, until a consumer takes it. */
  struct ArrowArrayStream stream;
  atomic_int stream_taken;
} Source;

static void source_unref(Source* source) {
  if (atomic_fetch_sub(&source->refs, 1) != 1) return;
  if (source->schema.release) source->schema.release(&source->schema);
  for (int64_t i = 0; i < source->n_owners; i++) lib_abd_owner_release(source->owners[i]);
  free(source->owners);
  if (source->stream.release) source->stream.release(&source->stream);
  free(source);
  count(C_SOURCES_LIVE, -1);
}

static void source_capsule_destructor(PyObject* capsule) {
  Source* source = (Source*)py_PyCapsule_GetPointer(capsule, source_capsule_name);
  if (source) source_unref(source);
}

static Source* source_new(int kind, int32_t device_type) {
  Source* source = (Source*)calloc(1, sizeof *source);
  if (!source) return NULL;
  atomic_init(&source->refs, 1);
  source->kind = kind;
  source->device_type = device_type;
  count(C_SOURCES_LIVE, 1);
  return source;
}

/* Wraps `source` (its reference moves into the capsule) in an instance of
 * the bootstrap's class `factory`. A new reference, or NULL with `err`. */
static PyObject* source_object(Source* source, const char* factory, char* err, size_t capacity) {
  PyObject* capsule = py_PyCapsule_New(source, source_capsule_name, source_capsule_destructor);
  if (!capsule) {
    source_unref(source);
    take_python_error(err, capacity);
    return NULL;
  }
  PyObject* cls = private_dict ? py_PyDict_GetItemString(private_dict, factory) : NULL;
  PyObject* object = NULL;
  PyObject* args = cls ? py_PyTuple_New(1) : NULL;
  if (args) {
    py_PyTuple_SetItem(args, 0, capsule); /* steals */
    capsule = NULL;
    object = py_PyObject_CallObject(cls, args);
    py_Py_DecRef(args);
  }
  if (capsule) py_Py_DecRef(capsule);
  if (!object) {
    if (!cls) snprintf(err, capacity, "the Python bootstrap defines no %s", factory);
    else take_python_error(err, capacity);
  }
  return object;
}

static void copy_library_error(char* err, size_t capacity, const char* what) {
  snprintf(err, capacity, "%s: %s", what, lib_abd_last_error());
}

/*
 * An imported array for Python: `owner` (one reference, which this takes
 * whatever happens) and its schema, copied. CPU data gets the class with
 * the CPU and device methods ("Array"); other devices only the device
 * methods ("DeviceArray"), as the spec asks.
 */
void* abdpy_source_array(void* owner, const struct ArrowSchema* owner_schema, int32_t device_type, char* err, size_t capacity) {
  PyGILState_STATE gil = py_PyGILState_Ensure();
  PyObject* object = NULL;
  Source* source = source_new(SOURCE_ARRAY, device_type);
  void** owners = (void**)malloc(sizeof(void*));
  if (!source || !owners) {
    lib_abd_owner_release(owner);
    free(owners);
    if (source) source_unref(source);
    put(err, capacity, "out of memory making a Python source");
    goto done;
  }
  owners[0] = owner;
  source->owners = owners;
  source->n_owners = 1;
  if (lib_abd_schema_copy(owner_schema, &source->schema) != 0) {
    copy_library_error(err, capacity, "copying the schema");
    source_unref(source);
    goto done;
  }
  object = source_object(source, device_type == ARROW_DEVICE_CPU ? "Array" : "DeviceArray", err, capacity);
done:
  py_PyGILState_Release(gil);
  return object;
}

/*
 * A table for Python: `schema` (moved in) and `n` owners of its batches
 * (one reference each, taken whatever happens). Every __arrow_c_stream__
 * call makes a new stream over them, natively: any thread, no JS.
 */
void* abdpy_source_table(struct ArrowSchema* schema, void** owners, int64_t n, char* err, size_t capacity) {
  PyGILState_STATE gil = py_PyGILState_Ensure();
  PyObject* object = NULL;
  Source* source = source_new(SOURCE_TABLE, ARROW_DEVICE_CPU);
  void** held = (void**)malloc(sizeof(void*) * (size_t)(n > 0 ? n : 1));
  if (!source || !held) {
    for (int64_t i = 0; i < n; i++) lib_abd_owner_release(owners[i]);
    if (schema->release) schema->release(schema);
    free(held);
    if (source) source_unref(source);
    put(err, capacity, "out of memory making a Python source");
    goto done;
  }
  memcpy(held, owners, sizeof(void*) * (size_t)n);
  source->owners = held;
  source->n_owners = n;
  source->schema = *schema;
  schema->release = NULL;
  object = source_object(source, "Stream", err, capacity);
done:
  py_PyGILState_Release(gil);
  return object;
}

/*
 * A JS-produced stream for Python (moved in, whatever happens): one
 * consumer may take it. Its schema is read now (natively: a JS-produced
 * stream answers get_schema without JS) for __arrow_c_schema__.
 */
void* abdpy_source_stream(struct ArrowArrayStream* stream, char* err, size_t capacity) {
  PyGILState_STATE gil = py_PyGILState_Ensure();
  PyObject* object = NULL;
  Source* source = source_new(SOURCE_STREAM, ARROW_DEVICE_CPU);
  if (!source) {
    stream->release(stream);
    put(err, capacity, "out of memory making a Python source");
    goto done;
  }
  source->stream = *stream;
  stream->release = NULL;
  int rc = source->stream.get_schema(&source->stream, &source->schema);
  if (rc != 0) {
    const char* message = source->stream.get_last_error(&source->stream);
    snprintf(err, capacity, "the stream's get_schema failed (errno %d): %s", rc, message ? message : "");
    source_unref(source);
    goto done;
  }
  object = source_object(source, "Stream", err, capacity);
done:
  py_PyGILState_Release(gil);
  return object;
}

/* A schema for Python (moved in, whatever happens). */
void* abdpy_source_schema(struct ArrowSchema* schema, char* err, size_t capacity) {
  PyGILState_STATE gil = py_PyGILState_Ensure();
  PyObject* object = NULL;
  Source* source = source_new(SOURCE_SCHEMA, ARROW_DEVICE_CPU);
  if (!source) {
    schema->release(schema);
    put(err, capacity, "out of memory making a Python source");
    goto done;
  }
  source->schema = *schema;
  schema->release = NULL;
  object = source_object(source, "Schema", err, capacity);
done:
  py_PyGILState_Release(gil);
  return object;
}

/* --- Capsules: named as the spec says; the destructor releases what no
 * consumer moved, then frees the struct. Run by Python, GIL held. --- */

static void schema_capsule_destructor(PyObject* capsule) {
  struct ArrowSchema* schema = (struct ArrowSchema*)py_PyCapsule_GetPointer(capsule, "arrow_schema");
  count(C_CAPSULES_FREED, 1);
  if (schema && schema->release) {
    count(C_CAPSULES_RELEASED, 1);
    schema->release(schema);
  }
  free(schema);
}

static void array_capsule_destructor(PyObject* capsule) {
  struct ArrowArray* array = (struct ArrowArray*)py_PyCapsule_GetPointer(capsule, "arrow_array");
  count(C_CAPSULES_FREED, 1);
  if (array && array->release) {
    count(C_CAPSULES_RELEASED, 1);
    array->release(array);
  }
  free(array);
}

static void device_array_capsule_destructor(PyObject* capsule) {
  struct ArrowDeviceArray* array = (struct ArrowDeviceArray*)py_PyCapsule_GetPointer(capsule, "arrow_device_array");
  count(C_CAPSULES_FREED, 1);
  if (array && array->array.release) {
    count(C_CAPSULES_RELEASED, 1);
    array->array.release(&array->array);
  }
  free(array);
}

static void stream_capsule_destructor(PyObject* capsule) {
  struct ArrowArrayStream* stream = (struct ArrowArrayStream*)py_PyCapsule_GetPointer(capsule, "arrow_array_stream");
  count(C_CAPSULES_FREED, 1);
  if (stream && stream->release) {
    count(C_CAPSULES_RELEASED, 1);
    stream->release(stream);
  }
  free(stream);
}

static void device_stream_capsule_destructor(PyObject* capsule) {
  struct ArrowDeviceArrayStream* stream = (struct ArrowDeviceArrayStream*)py_PyCapsule_GetPointer(capsule, "arrow_device_array_stream");
  count(C_CAPSULES_FREED, 1);
  if (stream && stream->release) {
    count(C_CAPSULES_RELEASED, 1);
    stream->release(stream);
  }
  free(stream);
}

/* A capsule over `pointer` (malloc'd, filled), or NULL with a Python
 * exception set after releasing it through `destructor`'s logic. */
static PyObject* new_capsule(void* pointer, const char* name, PyCapsule_Destructor destructor) {
  PyObject* capsule = py_PyCapsule_New(pointer, name, destructor);
  if (!capsule) return NULL;
  count(C_CAPSULES_MADE, 1);
  return capsule;
}

static Source* source_from_args(PyObject* args, int* flag) {
  PyObject* handle = py_PyTuple_GetItem(args, 0);
  if (!handle) return NULL;
  Source* source = (Source*)py_PyCapsule_GetPointer(handle, source_capsule_name);
  if (!source) return NULL;
  *flag = 0;
  if (py_PyTuple_Size(args) > 1) {
    long long value = py_PyLong_AsLongLong(py_PyTuple_GetItem(args, 1));
    if (value == -1 && py_PyErr_Occurred()) return NULL;
    *flag = (int)value;
  }
  return source;
}

static PyObject* raise_library_error(const char* what) {
  char message[1024];
  snprintf(message, sizeof message, "bun_arrow_device: %s: %s", what, lib_abd_last_error());
  py_PyErr_SetString(*py_exc_runtime_error, message);
  return NULL;
}

/* _schema(handle) -> "arrow_schema" capsule (a copy). */
static PyObject* py_schema(PyObject* self, PyObject* args) {
  (void)self;
  int unused;
  Source* source = source_from_args(args, &unused);
  if (!source) return NULL;
  struct ArrowSchema* schema = (struct ArrowSchema*)calloc(1, sizeof *schema);
  if (!schema) return raise_library_error("out of memory");
  if (lib_abd_schema_copy(&source->schema, schema) != 0) {
    free(schema);
    return raise_library_error("copying the schema");
  }
  PyObject* capsule = new_capsule(schema, "arrow_schema", schema_capsule_destructor);
  if (!capsule) {
    schema->release(schema);
    free(schema);
  }
  return capsule;
}

/* _array(handle, device) -> ("arrow_schema", "arrow_array" or
 * "arrow_device_array") capsules: a new re-export of the owner. */
static PyObject* py_array(PyObject* self, PyObject* args) {
  (void)self;
  int device = 0;
  Source* source = source_from_args(args, &device);
  if (!source) return NULL;
  if (source->kind != SOURCE_ARRAY) {
    py_PyErr_SetString(*py_exc_type_error, "bun_arrow_device: this object is not an array");
    return NULL;
  }
  struct ArrowSchema* schema = (struct ArrowSchema*)calloc(1, sizeof *schema);
  void* array = calloc(1, device ? sizeof(struct ArrowDeviceArray) : sizeof(struct ArrowArray));
  if (!schema || !array) {
    free(schema);
    free(array);
    return raise_library_error("out of memory");
  }
  int rc = device ? lib_abd_owner_reexport(source->owners[0], NULL, 0, schema, (struct ArrowDeviceArray*)array)
                  : lib_abd_owner_reexport_array(source->owners[0], NULL, 0, schema, (struct ArrowArray*)array);
  if (rc != 0) {
    free(schema);
    free(array);
    return raise_library_error("re-exporting the array");
  }
  PyObject* schema_capsule = new_capsule(schema, "arrow_schema", schema_capsule_destructor);
  PyObject* array_capsule = NULL;
  if (schema_capsule) {
    array_capsule = device ? new_capsule(array, "arrow_device_array", device_array_capsule_destructor)
                           : new_capsule(array, "arrow_array", array_capsule_destructor);
  }
  PyObject* pair = array_capsule ? py_PyTuple_New(2) : NULL;
  if (!pair) {
    /* The capsules that exist release their struct when dropped. */
    if (schema_capsule) py_Py_DecRef(schema_capsule);
    else {
      schema->release(schema);
      free(schema);
    }
    if (array_capsule) py_Py_DecRef(array_capsule);
    else {
      struct ArrowArray* base = (struct ArrowArray*)array; /* the device array's first member */
      base->release(base);
      free(array);
    }
    return NULL;
  }
  py_PyTuple_SetItem(pair, 0, schema_capsule);
  py_PyTuple_SetItem(pair, 1, array_capsule);
  return pair;
}

/* --- Streams over a table Source: re-exports of its owners, in order. --- */

typedef struct {
  Source* source;
  int64_t next;
  char error[512];
} Replay;

static Replay* replay_new(Source* source) {
  Replay* replay = (Replay*)calloc(1, sizeof *replay);
  if (!replay) return NULL;
  atomic_fetch_add(&source->refs, 1);
  replay->source = source;
  count(C_STREAMS_LIVE, 1);
  return replay;
}

static void replay_free(Replay* replay) {
  source_unref(replay->source);
  free(replay);
  count(C_STREAMS_LIVE, -1);
}

static int replay_schema(Replay* replay, struct ArrowSchema* out) {
  if (lib_abd_schema_copy(&replay->source->schema, out) == 0) return 0;
  snprintf(replay->error, sizeof replay->error, "copying the schema: %s", lib_abd_last_error());
  return ERRNO_NOMEM;
}

enum { ERRNO_IO = 5 };

static int replay_array_get_schema(struct ArrowArrayStream* stream, struct ArrowSchema* out) {
  return replay_schema((Replay*)stream->private_data, out);
}

static int replay_array_get_next(struct ArrowArrayStream* stream, struct ArrowArray* out) {
  Replay* replay = (Replay*)stream->private_data;
  memset(out, 0, sizeof *out);
  if (replay->next >= replay->source->n_owners) return 0; /* the end: a released array */
  struct ArrowSchema schema = {0};
  if (lib_abd_owner_reexport_array(replay->source->owners[replay->next], NULL, 0, &schema, out) != 0) {
    snprintf(replay->error, sizeof replay->error, "re-exporting batch %lld: %s", (long long)replay->next, lib_abd_last_error());
    return ERRNO_IO;
  }
  schema.release(&schema); /* the stream's schema was given by get_schema */
  replay->next++;
  return 0;
}

static const char* replay_array_get_last_error(struct ArrowArrayStream* stream) {
  Replay* replay = (Replay*)stream->private_data;
  return replay->error[0] ? replay->error : NULL;
}

static void replay_array_release(struct ArrowArrayStream* stream) {
  replay_free((Replay*)stream->private_data);
  stream->release = NULL;
}

static int replay_device_get_schema(struct ArrowDeviceArrayStream* stream, struct ArrowSchema* out) {
  return replay_schema((Replay*)stream->private_data, out);
}

static int replay_device_get_next(struct ArrowDeviceArrayStream* stream, struct ArrowDeviceArray* out) {
  Replay* replay = (Replay*)stream->private_data;
  memset(out, 0, sizeof *out);
  if (replay->next >= replay->source->n_owners) return 0;
  struct ArrowSchema schema = {0};
  if (lib_abd_owner_reexport(replay->source->owners[replay->next], NULL, 0, &schema, out) != 0) {
    snprintf(replay->error, sizeof replay->error, "re-exporting batch %lld: %s", (long long)replay->next, lib_abd_last_error());
    return ERRNO_IO;
  }
  schema.release(&schema);
  replay->next++;
  return 0;
}

static const char* replay_device_get_last_error(struct ArrowDeviceArrayStream* stream) {
  Replay* replay = (Replay*)stream->private_data;
  return replay->error[0] ? replay->error : NULL;
}

static void replay_device_release(struct ArrowDeviceArrayStream* stream) {
  replay_free((Replay*)stream->private_data);
  stream->release = NULL;
}

/* --- A JS-produced stream, as handed to Python: its get_next may call JS
 * on this thread, so the GIL is given up around it (other threads may
 * need the GIL meanwhile, e.g. to release what they imported). --- */

typedef struct {
  struct ArrowArrayStream inner;
} JsStream;

static int js_stream_get_schema(struct ArrowArrayStream* stream, struct ArrowSchema* out) {
  JsStream* self = (JsStream*)stream->private_data;
  return self->inner.get_schema(&self->inner, out);
}

static int js_stream_get_next(struct ArrowArrayStream* stream, struct ArrowArray* out) {
  JsStream* self = (JsStream*)stream->private_data;
  PyThreadState* saved = py_PyGILState_Check() ? py_PyEval_SaveThread() : NULL;
  int rc = self->inner.get_next(&self->inner, out);
  if (saved) py_PyEval_RestoreThread(saved);
  return rc;
}

static const char* js_stream_get_last_error(struct ArrowArrayStream* stream) {
  JsStream* self = (JsStream*)stream->private_data;
  return self->inner.get_last_error(&self->inner);
}

static void js_stream_release(struct ArrowArrayStream* stream) {
  JsStream* self = (JsStream*)stream->private_data;
  if (self->inner.release) self->inner.release(&self->inner);
  free(self);
  stream->release = NULL;
  count(C_STREAMS_LIVE, -1);
}

/* Fills `out` with a new stream of `source`, or -1 with a Python exception. */
static int source_stream(Source* source, struct ArrowArrayStream* out) {
  if (source->kind == SOURCE_TABLE) {
    Replay* replay = replay_new(source);
    if (!replay) return -1;
    out->get_schema = replay_array_get_schema;
    out->get_next = replay_array_get_next;
    out->get_last_error = replay_array_get_last_error;
    out->release = replay_array_release;
    out->private_data = replay;
    return 0;
  }
  if (atomic_exchange(&source->stream_taken, 1)) {
    py_PyErr_SetString(*py_exc_value_error, "bun_arrow_device: this stream was already exported (a JS stream can be consumed once; pass a Table to read it again)");
    return -1;
  }
  JsStream* self = (JsStream*)malloc(sizeof *self);
  if (!self) return -1;
  self->inner = source->stream;
  source->stream.release = NULL;
  out->get_schema = js_stream_get_schema;
  out->get_next = js_stream_get_next;
  out->get_last_error = js_stream_get_last_error;
  out->release = js_stream_release;
  out->private_data = self;
  count(C_STREAMS_LIVE, 1);
  return 0;
}

/* _stream(handle, device) -> "arrow_array_stream" or
 * "arrow_device_array_stream" capsule. */
static PyObject* py_stream(PyObject* self, PyObject* args) {
  (void)self;
  int device = 0;
  Source* source = source_from_args(args, &device);
  if (!source) return NULL;
  if (source->kind != SOURCE_TABLE && source->kind != SOURCE_STREAM) {
    py_PyErr_SetString(*py_exc_type_error, "bun_arrow_device: this object is not a stream");
    return NULL;
  }
  if (device && source->kind == SOURCE_TABLE) {
    struct ArrowDeviceArrayStream* stream = (struct ArrowDeviceArrayStream*)calloc(1, sizeof *stream);
    Replay* replay = stream ? replay_new(source) : NULL;
    if (!replay) {
      free(stream);
      return raise_library_error("out of memory");
    }
    stream->device_type = source->device_type;
    stream->get_schema = replay_device_get_schema;
    stream->get_next = replay_device_get_next;
    stream->get_last_error = replay_device_get_last_error;
    stream->release = replay_device_release;
    stream->private_data = replay;
    PyObject* capsule = new_capsule(stream, "arrow_device_array_stream", device_stream_capsule_destructor);
    if (!capsule) {
      stream->release(stream);
      free(stream);
    }
    return capsule;
  }
  struct ArrowArrayStream* stream = (struct ArrowArrayStream*)calloc(1, sizeof *stream);
  if (!stream) return raise_library_error("out of memory");
  if (source_stream(source, stream) != 0) {
    free(stream);
    if (!py_PyErr_Occurred()) return raise_library_error("out of memory");
    return NULL;
  }
  if (!device) {
    PyObject* capsule = new_capsule(stream, "arrow_array_stream", stream_capsule_destructor);
    if (!capsule) {
      stream->release(stream);
      free(stream);
    }
    return capsule;
  }
  /* A JS stream as a CPU device stream: the library's adapter moves it in. */
  struct ArrowDeviceArrayStream* device_stream = (struct ArrowDeviceArrayStream*)calloc(1, sizeof *device_stream);
  if (!device_stream) {
    stream->release(stream);
    free(stream);
    return raise_library_error("out of memory");
  }
  int rc = lib_abd_stream_to_device(stream, device_stream);
  free(stream);
  if (rc != 0) {
    free(device_stream);
    return raise_library_error("adapting the stream to a device stream");
  }
  PyObject* capsule = new_capsule(device_stream, "arrow_device_array_stream", device_stream_capsule_destructor);
  if (!capsule) {
    device_stream->release(device_stream);
    free(device_stream);
  }
  return capsule;
}

static PyMethodDef private_functions[] = {
    {"_schema", py_schema, METH_VARARGS, "_schema(handle): an arrow_schema capsule"},
    {"_array", py_array, METH_VARARGS, "_array(handle, device): (arrow_schema, arrow_array | arrow_device_array) capsules"},
    {"_stream", py_stream, METH_VARARGS, "_stream(handle, device): an arrow_array_stream | arrow_device_array_stream capsule"},
};

/*
 * Makes the private namespace: builtins, the functions above, then `code`
 * (ts/python/bootstrap.ts: the classes Python sees) run in it. 0, or -1
 * with the exception in `err`. Called once, after abdpy_load.
 */
int abdpy_bootstrap(const char* code, char* err, size_t capacity) {
  PyGILState_STATE gil = py_PyGILState_Ensure();
  int rc = -1;
  if (private_dict) {
    rc = 0;
    goto done;
  }
  PyObject* dict = py_PyDict_New();
  if (!dict) goto failed;
  if (py_PyDict_SetItemString(dict, "__builtins__", py_PyEval_GetBuiltins()) != 0) goto failed;
  for (size_t i = 0; i < sizeof private_functions / sizeof private_functions[0]; i++) {
    PyObject* function = py_PyCFunction_NewEx(&private_functions[i], NULL, NULL);
    if (!function) goto failed;
    int set = py_PyDict_SetItemString(dict, private_functions[i].ml_name, function);
    py_Py_DecRef(function);
    if (set != 0) goto failed;
  }
  PyObject* result = py_PyRun_StringFlags(code, Py_file_input, dict, dict, NULL);
  if (!result) goto failed;
  py_Py_DecRef(result);
  private_dict = dict;
  rc = 0;
  goto done;
failed:
  take_python_error(err, capacity);
  if (dict) py_Py_DecRef(dict);
done:
  py_PyGILState_Release(gil);
  return rc;
}
