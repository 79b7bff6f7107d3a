/*
 * JS to Python: Sources (what JS hands over; abd_python.c's comment says
 * who holds them), the Python objects that carry them, the private
 * functions `_schema`, `_array` and `_stream` that the bootstrap's classes
 * call for the protocol methods, and the private namespace itself.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abd_python.h"

/* The private namespace of ts/python/bootstrap.ts (classes, helpers). */
static PyObject* private_dict;

/* ------------------------------------------------------------------------ */
/* Sources                                                                    */
/* ------------------------------------------------------------------------ */

static const char source_capsule_name[] = "bun_arrow_device.source";

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
 * the bootstrap's class `factory`. A new reference, or NULL with `err`.
 * A NULL `source` is one that ran out of memory being made (the caller
 * released what was handed over). Needs the GIL. */
static PyObject* source_object(Source* source, const char* factory, char* err, size_t capacity) {
  if (!source) {
    put(err, capacity, "out of memory making a Python source");
    return NULL;
  }
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
  if (source && owners) {
    owners[0] = owner;
    source->owners = owners;
    source->n_owners = 1;
    if (lib_abd_schema_copy(owner_schema, &source->schema) != 0) {
      snprintf(err, capacity, "copying the schema: %s", lib_abd_last_error());
      source_unref(source);
      goto done;
    }
  } else {
    lib_abd_owner_release(owner);
    free(owners);
    if (source) source_unref(source);
    source = NULL;
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
  Source* source = source_new(SOURCE_TABLE, ARROW_DEVICE_CPU);
  void** held = (void**)malloc(sizeof(void*) * (size_t)(n > 0 ? n : 1));
  if (source && held) {
    if (n > 0) memcpy(held, owners, sizeof(void*) * (size_t)n); /* owners may be NULL when n is 0 */
    source->owners = held;
    source->n_owners = n;
    source->schema = *schema;
    schema->release = NULL;
  } else {
    for (int64_t i = 0; i < n; i++) lib_abd_owner_release(owners[i]);
    if (schema->release) schema->release(schema);
    free(held);
    if (source) source_unref(source);
    source = NULL;
  }
  PyObject* object = source_object(source, "Stream", err, capacity);
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
  if (source) {
    source->stream = *stream;
    stream->release = NULL;
    int rc = source->stream.get_schema(&source->stream, &source->schema);
    if (rc != 0) {
      const char* message = source->stream.get_last_error(&source->stream);
      snprintf(err, capacity, "the stream's get_schema failed (errno %d): %s", rc, message ? message : "");
      source_unref(source);
      goto done;
    }
  } else {
    stream->release(stream);
  }
  object = source_object(source, "Stream", err, capacity);
done:
  py_PyGILState_Release(gil);
  return object;
}

/* A schema for Python (moved in, whatever happens). */
void* abdpy_source_schema(struct ArrowSchema* schema, char* err, size_t capacity) {
  PyGILState_STATE gil = py_PyGILState_Ensure();
  Source* source = source_new(SOURCE_SCHEMA, ARROW_DEVICE_CPU);
  if (source) {
    source->schema = *schema;
    schema->release = NULL;
  } else {
    schema->release(schema);
  }
  PyObject* object = source_object(source, "Schema", err, capacity);
  py_PyGILState_Release(gil);
  return object;
}

/* ------------------------------------------------------------------------ */
/* The private functions: protocol calls on a Source                          */
/* ------------------------------------------------------------------------ */

/* The Source of a private function's first argument (a handle capsule), and
 * its second argument (the device flag; 0 when absent) in `flag`. NULL
 * with a Python exception. */
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
  return new_capsule(schema, KIND_SCHEMA);
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
  int kind = device ? KIND_DEVICE_ARRAY : KIND_ARRAY;
  struct ArrowSchema* schema = (struct ArrowSchema*)calloc(1, sizeof *schema);
  void* array = calloc(1, struct_size(kind));
  if (!schema || !array) {
    free(schema);
    free(array);
    return raise_library_error("out of memory");
  }
  if (reexport_owner(source->owners[0], kind, schema, array) != 0) {
    free(schema);
    free(array);
    return raise_library_error("re-exporting the array");
  }
  /* Each capsule releases its struct when dropped, and new_capsule drops
   * the struct it could not wrap. */
  PyObject* schema_capsule = new_capsule(schema, KIND_SCHEMA);
  if (!schema_capsule) {
    drop_struct(kind, array);
    return NULL;
  }
  PyObject* array_capsule = new_capsule(array, kind);
  PyObject* pair = array_capsule ? py_PyTuple_New(2) : NULL;
  if (!pair) {
    py_Py_DecRef(schema_capsule);
    if (array_capsule) py_Py_DecRef(array_capsule);
    return NULL;
  }
  py_PyTuple_SetItem(pair, 0, schema_capsule);
  py_PyTuple_SetItem(pair, 1, array_capsule);
  return pair;
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
  int kind = device ? KIND_DEVICE_STREAM : KIND_STREAM;
  if (source->kind == SOURCE_TABLE) {
    void* stream = calloc(1, struct_size(kind));
    if (!stream || table_stream(source, kind, stream) != 0) {
      free(stream);
      return raise_library_error("out of memory");
    }
    return new_capsule(stream, kind);
  }
  struct ArrowArrayStream* stream = (struct ArrowArrayStream*)calloc(1, sizeof *stream);
  if (!stream) return raise_library_error("out of memory");
  if (js_stream(source, stream) != 0) {
    free(stream);
    if (!py_PyErr_Occurred()) return raise_library_error("out of memory");
    return NULL;
  }
  if (!device) return new_capsule(stream, KIND_STREAM);
  /* A JS stream as a CPU device stream: the library's adapter moves it in. */
  struct ArrowDeviceArrayStream* device_stream = (struct ArrowDeviceArrayStream*)calloc(1, sizeof *device_stream);
  if (!device_stream) {
    drop_struct(KIND_STREAM, stream);
    return raise_library_error("out of memory");
  }
  int rc = lib_abd_stream_to_device(stream, device_stream);
  free(stream);
  if (rc != 0) {
    free(device_stream);
    return raise_library_error("adapting the stream to a device stream");
  }
  return new_capsule(device_stream, KIND_DEVICE_STREAM);
}

/* ------------------------------------------------------------------------ */
/* The private namespace                                                      */
/* ------------------------------------------------------------------------ */

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
