/*
 * The internal interface between the files of libarrow_device_python (the
 * native half of `bun-arrow-device/python`; abd_python.c has the overview).
 * Not installed: only the `abdpy_*` functions are exported, and everything
 * declared here is hidden.
 *
 *   abd_python.c           loading CPython and libarrow_device, counters,
 *                          errors, running Python code for JS
 *   abd_python_capsules.c  the five struct kinds: sizes, liveness, release,
 *                          and the capsules that carry them
 *   abd_python_releases.c  producers' releases, run under the GIL
 *   abd_python_sources.c   Sources (what JS hands to Python): their lifetime
 *                          and the re-exports of their owners
 *   abd_python_streams.c   the streams this shim implements, behind either
 *                          stream ABI
 *   abd_python_import.c    Python to JS: calling the protocol, moving out of
 *                          the producer's capsules
 *   abd_python_export.c    JS to Python: the capsules made from Sources,
 *                          and the private namespace
 *
 * Each file calls only files listed above it (test/structure/
 * native_calls.test.ts checks that no two call each other, directly or
 * through others).
 */
#ifndef ABD_PYTHON_H
#define ABD_PYTHON_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "arrow_device.h"

#pragma GCC visibility push(hidden)

/* ------------------------------------------------------------------------ */
/* CPython, looked up at run time (abd_python.c)                              */
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

#define PY_DECLARE(ret, name, args) extern ret(*py_##name) args;
PY_FUNCTIONS(PY_DECLARE)

/* Exception types are data symbols: `PyObject* PyExc_TypeError`. */
extern PyObject** py_exc_type_error;
extern PyObject** py_exc_runtime_error;
extern PyObject** py_exc_value_error;

/* ------------------------------------------------------------------------ */
/* libarrow_device, looked up at run time (abd_python.c)                      */
/* ------------------------------------------------------------------------ */

#define ABD_FUNCTIONS(X)                                                                              \
  X(int, abd_owner_reexport, (void*, const double*, uint32_t, struct ArrowSchema*, struct ArrowDeviceArray*)) \
  X(int, abd_owner_reexport_array, (void*, const double*, uint32_t, struct ArrowSchema*, struct ArrowArray*)) \
  X(void, abd_owner_release, (void*))                                                                \
  X(int, abd_schema_copy, (const struct ArrowSchema*, struct ArrowSchema*))                          \
  X(int, abd_stream_to_device, (struct ArrowArrayStream*, struct ArrowDeviceArrayStream*))           \
  X(int, abd_probe_struct, (int, const void*, int))                                                 \
  X(const char*, abd_last_error, (void))

#define ABD_DECLARE(ret, name, args) extern ret(*lib_##name) args;
ABD_FUNCTIONS(ABD_DECLARE)

/* ------------------------------------------------------------------------ */
/* Counters (read by tests through abdpy_counters) and errors (abd_python.c)  */
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
extern atomic_llong counters[C_COUNTERS];

static inline void count(int which, long long by) { atomic_fetch_add(&counters[which], by); }

/* The errno values stream callbacks return. */
enum { ERRNO_IO = 5, ERRNO_NOMEM = 12 };

/* `text` into `out` (cut to fit; nothing when `out` is NULL or empty). */
void put(char* out, size_t capacity, const char* text);

/* The pending Python exception as "TypeName: message" into `out`; clears
 * it. Needs the GIL. */
void take_python_error(char* out, size_t capacity);

/* ------------------------------------------------------------------------ */
/* The struct kinds (abd_python_capsules.c)                                   */
/* ------------------------------------------------------------------------ */

/* Kinds, by the protocol method that produces them; ts/python/exchange.ts
 * uses the same numbers. */
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

/* The capsule name the spec gives each kind. */
extern const char* const capsule_names[KIND_COUNT];

size_t struct_size(int kind);

/* An array of `kind` as its base ArrowArray: an ArrowDeviceArray's first
 * member, which owns the release. */
static inline struct ArrowArray* base_array(int kind, void* array) {
  return kind == KIND_DEVICE_ARRAY ? &((struct ArrowDeviceArray*)array)->array : (struct ArrowArray*)array;
}

/* Whether a struct of `kind` is live (its release is set). */
int is_live(int kind, const void* s);

/* Runs a live struct's release; a released one is left alone. */
void release_struct(int kind, void* s);

/* Marks a moved-from struct released (its capsule is then consumed). */
void mark_released(int kind, void* s);

/* release_struct, then frees the struct itself (malloc'd by this shim). */
void drop_struct(int kind, void* s);

/* A capsule named as the spec says for `kind` over `s` (malloc'd,
 * filled), whose destructor releases what no consumer moved and frees it.
 * NULL with a Python exception after dropping `s` when Python cannot make
 * one. */
PyObject* new_capsule(void* s, int kind);

/* ------------------------------------------------------------------------ */
/* Python to JS: producers' releases under the GIL (abd_python_releases.c)   */
/* ------------------------------------------------------------------------ */

/* Routes a live schema's or array's release (KIND_SCHEMA, KIND_ARRAY or
 * KIND_DEVICE_ARRAY) through a wrapper that runs it under the GIL. -1
 * (struct untouched) when out of memory. Only the base struct: its release
 * owns the children, as the spec says. */
int wrap_release(int kind, void* s);

/* ------------------------------------------------------------------------ */
/* JS to Python: Sources (abd_python_sources.c)                               */
/* ------------------------------------------------------------------------ */

enum { SOURCE_ARRAY, SOURCE_TABLE, SOURCE_STREAM, SOURCE_SCHEMA };

/* What JS handed to Python; see abd_python.c's comment for who holds it. */
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

/* Drops one reference; the last frees the Source and what it holds. */
void source_unref(Source* source);

/* A new re-export of `owner` (the same buffers) into `schema` and `out`, an
 * array of `kind` (KIND_ARRAY or KIND_DEVICE_ARRAY). 0, or the library's
 * error code (abd_last_error says why). */
int reexport_owner(void* owner, int kind, struct ArrowSchema* schema, void* out);

/* ------------------------------------------------------------------------ */
/* Streams (abd_python_streams.c)                                             */
/* ------------------------------------------------------------------------ */

/* A new stream of `kind` (KIND_STREAM or KIND_DEVICE_STREAM) into `out`
 * over the batches of the table `source`: re-exports of its owners, in
 * order, made natively (any thread, no JS). It holds a reference on the
 * Source. -1 when out of memory. */
int table_stream(Source* source, int kind, void* out);

/* Moves the JS-produced stream of `source` into `out`, behind a stream that
 * gives up the GIL while JS runs. A JS stream can be consumed once: -1 with
 * a Python ValueError when it was taken already, or -1 with no exception
 * when out of memory. */
int js_stream(Source* source, struct ArrowArrayStream* out);

/* Python to JS: puts a producer's live stream of `kind` behind one whose
 * every callback holds the GIL, and whose schemas and arrays release under
 * it too. A released stream stays released. -1 (stream untouched) when out
 * of memory. */
int wrap_stream(int kind, void* stream);

#pragma GCC visibility pop

#endif /* ABD_PYTHON_H */
