/*
 * Producers' releases under the GIL: a schema's or array's release, swapped
 * for a wrapper that takes the GIL and runs it, since the last user of data
 * imported from Python may be on any thread. Used by the import
 * (abd_python_import.c) and by the streams that hand out a producer's
 * batches (abd_python_streams.c).
 */
#include <stdlib.h>

#include "abd_python.h"

/* A producer's release and private_data, kept while the GIL wrapper stands
 * in for them; the wrapper's private_data points at it. Schemas and arrays
 * (a device array by its base array). */
typedef struct {
  union {
    void (*schema)(struct ArrowSchema*);
    void (*array)(struct ArrowArray*);
  } release;
  void* private_data;
} SavedRelease;

/* Puts `with` in place of the (release, private_data) pair of `s`, a
 * schema (KIND_SCHEMA) or an array of `kind`; returns the pair it held. */
static SavedRelease swap_release(int kind, void* s, SavedRelease with) {
  SavedRelease held;
  if (kind == KIND_SCHEMA) {
    struct ArrowSchema* schema = (struct ArrowSchema*)s;
    held = (SavedRelease){{.schema = schema->release}, schema->private_data};
    schema->release = with.release.schema;
    schema->private_data = with.private_data;
  } else {
    struct ArrowArray* array = base_array(kind, s);
    held = (SavedRelease){{.array = array->release}, array->private_data};
    array->release = with.release.array;
    array->private_data = with.private_data;
  }
  return held;
}

/* The producer's release, put back and run under the GIL: what the spec's
 * consumer does, on whatever thread the last user of the data is on. */
static void release_under_gil(int kind, void* s, SavedRelease* saved) {
  swap_release(kind, s, *saved);
  free(saved);
  count(C_WRAPPED_RELEASES, 1);
  PyGILState_STATE gil = py_PyGILState_Ensure();
  release_struct(kind, s);
  py_PyGILState_Release(gil);
}

static void gil_schema_release(struct ArrowSchema* schema) { release_under_gil(KIND_SCHEMA, schema, (SavedRelease*)schema->private_data); }
static void gil_array_release(struct ArrowArray* array) { release_under_gil(KIND_ARRAY, array, (SavedRelease*)array->private_data); }

int wrap_release(int kind, void* s) {
  if (!is_live(kind, s)) return 0;
  SavedRelease* saved = (SavedRelease*)malloc(sizeof *saved);
  if (!saved) return -1;
  SavedRelease wrapper = {.private_data = saved};
  if (kind == KIND_SCHEMA) wrapper.release.schema = gil_schema_release;
  else wrapper.release.array = gil_array_release;
  *saved = swap_release(kind, s, wrapper);
  return 0;
}
