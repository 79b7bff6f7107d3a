/*
 * Python to JS: calling an object's Arrow PyCapsule protocol method and
 * moving what it returned out of the producer's capsules into structs the
 * caller (ts/python/exchange.ts) owns. The producer's releases, of what was
 * moved and of everything its streams hand out later, are routed through
 * wrappers that take the GIL (abd_python_releases.c), since the last user
 * of imported data may be on any thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abd_python.h"

/* ------------------------------------------------------------------------ */
/* Calling the protocol and moving out of the capsules                        */
/* ------------------------------------------------------------------------ */

static const char* const method_names[KIND_COUNT] = {
    "__arrow_c_device_array__", "__arrow_c_array__", "__arrow_c_device_stream__", "__arrow_c_stream__", "__arrow_c_schema__",
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

/* The library's probe kinds (zig/validate/probe.zig), by KIND_*. */
static const int probe_kinds[KIND_COUNT] = {
    [KIND_DEVICE_ARRAY] = 2, [KIND_ARRAY] = 1, [KIND_DEVICE_STREAM] = 4, [KIND_STREAM] = 3, [KIND_SCHEMA] = 0,
};

/* True when the struct of `kind` at `at` (from a capsule) is safe to read
 * and move (the move writes it: it must be writable); else false with the
 * probe's reason in `err`. A released one passes (probe mode 1): the
 * import reports it as released, as for any released struct. */
static int probe_capsule(int kind, const void* at, const char* method, char* err, size_t capacity) {
  if (lib_abd_probe_struct(probe_kinds[kind], at, 1) == 0) return 1;
  snprintf(err, capacity, "%s() returned a \"%s\" capsule that holds no struct: %s", method, capsule_names[kind], lib_abd_last_error());
  return 0;
}

/* The move: a bitwise copy into `to`, the source `from` marked released. */
static void move_struct(int kind, void* to, void* from) {
  memcpy(to, from, struct_size(kind));
  mark_released(kind, from);
}

/* Routes the moved struct `out` (of `kind`) through the GIL wrappers. */
static int wrap_moved(int kind, void* out) {
  if (kind == KIND_STREAM || kind == KIND_DEVICE_STREAM) return wrap_stream(kind, out);
  return wrap_release(kind, out);
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
  /* A capsule may hold any address: the library's fault-safe probe checks
   * each struct before the move reads it (a refused one is left as it is:
   * the capsule's destructor owns it). */
  if (!probe_capsule(schema_in ? KIND_SCHEMA : kind, schema_in ? schema_in : struct_in, method_names[kind], err, capacity) ||
      (schema_in && !probe_capsule(kind, struct_in, method_names[kind], err, capacity))) {
    kind = -1;
    goto done;
  }
  move_struct(kind, struct_out, struct_in);
  if (schema_in) move_struct(KIND_SCHEMA, schema_out, schema_in);
  count(C_IMPORTS, 1);
  if (wrap_moved(kind, struct_out) != 0 || (schema_in && wrap_moved(KIND_SCHEMA, schema_out) != 0)) {
    /* Out of memory: what was moved is ours to release (the wrapper, if it
     * was installed, releases through the producer's own callback). */
    release_struct(kind, struct_out);
    if (schema_in) release_struct(KIND_SCHEMA, schema_out);
    put(err, capacity, "out of memory wrapping an imported release callback");
    kind = -1;
    goto done;
  }
done:
  if (result) py_Py_DecRef(result); /* the capsules' destructors: consumed, so they only free */
  py_PyGILState_Release(gil);
  return kind;
}
