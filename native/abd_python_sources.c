/*
 * Sources: what JS hands to Python (abd_python.c's comment says who holds
 * them). Their lifetime, and the re-exports of their owners that every
 * array and batch handed to Python is. Used by the capsules
 * (abd_python_export.c) and the streams over a Source (abd_python_streams.c).
 */
#include <stdlib.h>

#include "abd_python.h"

void source_unref(Source* source) {
  if (atomic_fetch_sub(&source->refs, 1) != 1) return;
  if (source->schema.release) source->schema.release(&source->schema);
  for (int64_t i = 0; i < source->n_owners; i++) lib_abd_owner_release(source->owners[i]);
  free(source->owners);
  if (source->stream.release) source->stream.release(&source->stream);
  free(source);
  count(C_SOURCES_LIVE, -1);
}

int reexport_owner(void* owner, int kind, struct ArrowSchema* schema, void* out) {
  if (kind == KIND_DEVICE_ARRAY) return lib_abd_owner_reexport(owner, NULL, 0, schema, (struct ArrowDeviceArray*)out);
  return lib_abd_owner_reexport_array(owner, NULL, 0, schema, (struct ArrowArray*)out);
}
