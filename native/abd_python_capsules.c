/*
 * The five struct kinds the PyCapsule protocol carries (device array,
 * array, device stream, stream, schema), handled by kind in one place: their
 * sizes, whether one is live, its release, and the capsules this shim makes
 * for them. Every other file reaches a struct's release through these, so
 * the ABI differences between the kinds live here only.
 */
#include <stdlib.h>

#include "abd_python.h"

const char* const capsule_names[KIND_COUNT] = {
    "arrow_device_array", "arrow_array", "arrow_device_array_stream", "arrow_array_stream", "arrow_schema",
};

size_t struct_size(int kind) {
  switch (kind) {
    case KIND_DEVICE_ARRAY: return sizeof(struct ArrowDeviceArray);
    case KIND_ARRAY: return sizeof(struct ArrowArray);
    case KIND_DEVICE_STREAM: return sizeof(struct ArrowDeviceArrayStream);
    case KIND_STREAM: return sizeof(struct ArrowArrayStream);
    default: return sizeof(struct ArrowSchema);
  }
}

int is_live(int kind, const void* s) {
  switch (kind) {
    case KIND_DEVICE_ARRAY: return ((const struct ArrowDeviceArray*)s)->array.release != NULL;
    case KIND_ARRAY: return ((const struct ArrowArray*)s)->release != NULL;
    case KIND_DEVICE_STREAM: return ((const struct ArrowDeviceArrayStream*)s)->release != NULL;
    case KIND_STREAM: return ((const struct ArrowArrayStream*)s)->release != NULL;
    default: return ((const struct ArrowSchema*)s)->release != NULL;
  }
}

void release_struct(int kind, void* s) {
  if (!is_live(kind, s)) return;
  if (kind == KIND_DEVICE_ARRAY || kind == KIND_ARRAY) {
    struct ArrowArray* array = base_array(kind, s);
    array->release(array);
  } else if (kind == KIND_DEVICE_STREAM) {
    struct ArrowDeviceArrayStream* stream = (struct ArrowDeviceArrayStream*)s;
    stream->release(stream);
  } else if (kind == KIND_STREAM) {
    struct ArrowArrayStream* stream = (struct ArrowArrayStream*)s;
    stream->release(stream);
  } else {
    struct ArrowSchema* schema = (struct ArrowSchema*)s;
    schema->release(schema);
  }
}

void mark_released(int kind, void* s) {
  switch (kind) {
    case KIND_DEVICE_ARRAY: ((struct ArrowDeviceArray*)s)->array.release = NULL; break;
    case KIND_ARRAY: ((struct ArrowArray*)s)->release = NULL; break;
    case KIND_DEVICE_STREAM: ((struct ArrowDeviceArrayStream*)s)->release = NULL; break;
    case KIND_STREAM: ((struct ArrowArrayStream*)s)->release = NULL; break;
    default: ((struct ArrowSchema*)s)->release = NULL; break;
  }
}

void drop_struct(int kind, void* s) {
  release_struct(kind, s);
  free(s);
}

/* The destructor of every capsule this shim makes, run by Python with the
 * GIL held: the struct is the capsule's, so it releases what no consumer
 * moved out, then frees the struct. */
static void free_capsule(PyObject* capsule, int kind) {
  void* s = py_PyCapsule_GetPointer(capsule, capsule_names[kind]);
  count(C_CAPSULES_FREED, 1);
  if (s && is_live(kind, s)) {
    count(C_CAPSULES_RELEASED, 1);
    release_struct(kind, s);
  }
  free(s);
}

/* PyCapsule_Destructor takes only the capsule: one entry per kind. */
static void free_device_array_capsule(PyObject* capsule) { free_capsule(capsule, KIND_DEVICE_ARRAY); }
static void free_array_capsule(PyObject* capsule) { free_capsule(capsule, KIND_ARRAY); }
static void free_device_stream_capsule(PyObject* capsule) { free_capsule(capsule, KIND_DEVICE_STREAM); }
static void free_stream_capsule(PyObject* capsule) { free_capsule(capsule, KIND_STREAM); }
static void free_schema_capsule(PyObject* capsule) { free_capsule(capsule, KIND_SCHEMA); }

static const PyCapsule_Destructor capsule_destructors[KIND_COUNT] = {
    free_device_array_capsule, free_array_capsule, free_device_stream_capsule, free_stream_capsule, free_schema_capsule,
};

PyObject* new_capsule(void* s, int kind) {
  PyObject* capsule = py_PyCapsule_New(s, capsule_names[kind], capsule_destructors[kind]);
  if (!capsule) {
    drop_struct(kind, s);
    return NULL;
  }
  count(C_CAPSULES_MADE, 1);
  return capsule;
}
