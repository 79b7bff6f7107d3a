/*
 * The streams this shim implements. Each is written once, against
 * ShimStream, and served behind either stream ABI by the trampolines below:
 * ArrowArrayStream and ArrowDeviceArrayStream differ only in the device
 * type word and in what get_next fills (an ArrowArray, or an
 * ArrowDeviceArray).
 *
 *   GilStream  a Python producer's stream, imported into JS: every callback
 *              holds the GIL, and what it hands out releases under it.
 *   Replay     a table handed to Python: re-exports of its batches' owners.
 *   JsStream   a JS-produced stream handed to Python: the GIL is given up
 *              while its get_next runs JS.
 *
 * Each implementation owns its ShimStream (the struct's private_data); the
 * trampolines' release frees it through `ops->release` and then marks the
 * outer struct released.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abd_python.h"

typedef struct ShimStream ShimStream;

typedef struct {
  int (*get_schema)(ShimStream* self, struct ArrowSchema* out);
  /* `out` is an array of batch_kind(self). */
  int (*get_next)(ShimStream* self, void* out);
  const char* (*get_last_error)(ShimStream* self);
  /* Releases what `self` holds and frees it. */
  void (*release)(ShimStream* self);
} ShimStreamOps;

struct ShimStream {
  const ShimStreamOps* ops;
  int kind; /* the ABI it is behind: KIND_STREAM or KIND_DEVICE_STREAM */
};

/* The kind of array get_next fills for `self`'s ABI. */
static int batch_kind(const ShimStream* self) { return self->kind == KIND_DEVICE_STREAM ? KIND_DEVICE_ARRAY : KIND_ARRAY; }

/* --- The trampolines: each ABI's callbacks, forwarding to the ops of the
 * ShimStream in the stream's private_data. --- */

static int shim_get_schema(ShimStream* self, struct ArrowSchema* out) { return self->ops->get_schema(self, out); }
static int shim_get_next(ShimStream* self, void* out) { return self->ops->get_next(self, out); }
static const char* shim_get_last_error(ShimStream* self) { return self->ops->get_last_error(self); }

static int array_get_schema(struct ArrowArrayStream* s, struct ArrowSchema* out) { return shim_get_schema(s->private_data, out); }
static int device_get_schema(struct ArrowDeviceArrayStream* s, struct ArrowSchema* out) { return shim_get_schema(s->private_data, out); }
static int array_get_next(struct ArrowArrayStream* s, struct ArrowArray* out) { return shim_get_next(s->private_data, out); }
static int device_get_next(struct ArrowDeviceArrayStream* s, struct ArrowDeviceArray* out) { return shim_get_next(s->private_data, out); }
static const char* array_get_last_error(struct ArrowArrayStream* s) { return shim_get_last_error(s->private_data); }
static const char* device_get_last_error(struct ArrowDeviceArrayStream* s) { return shim_get_last_error(s->private_data); }

static void array_release(struct ArrowArrayStream* s) {
  ShimStream* self = (ShimStream*)s->private_data;
  self->ops->release(self);
  s->release = NULL;
}

static void device_release(struct ArrowDeviceArrayStream* s) {
  ShimStream* self = (ShimStream*)s->private_data;
  self->ops->release(self);
  s->release = NULL;
}

/* Points `stream` (of self->kind) at `self`. A device stream keeps its
 * device_type: the caller's to set. */
static void install(ShimStream* self, void* stream) {
  if (self->kind == KIND_DEVICE_STREAM) {
    struct ArrowDeviceArrayStream* out = (struct ArrowDeviceArrayStream*)stream;
    *out = (struct ArrowDeviceArrayStream){.device_type = out->device_type, .get_schema = device_get_schema, .get_next = device_get_next,
                                           .get_last_error = device_get_last_error, .release = device_release, .private_data = self};
  } else {
    *(struct ArrowArrayStream*)stream = (struct ArrowArrayStream){.get_schema = array_get_schema, .get_next = array_get_next,
                                                                  .get_last_error = array_get_last_error, .release = array_release, .private_data = self};
  }
}

/* ------------------------------------------------------------------------ */
/* GilStream: a Python producer's stream, under the GIL                       */
/* ------------------------------------------------------------------------ */

typedef struct {
  ShimStream base;
  /* The producer's struct, moved in: `device` when base.kind is
   * KIND_DEVICE_STREAM. Released (under the GIL) with the GilStream. */
  union {
    struct ArrowArrayStream array;
    struct ArrowDeviceArrayStream device;
  } inner;
} GilStream;

/* What a producer's get_schema or get_next returned, still under the GIL:
 * the struct it filled gets the GIL release wrapper; when that is out of
 * memory, the struct is released and the call fails with ERRNO_NOMEM. */
static int wrap_result(int rc, int kind, void* out) {
  if (rc != 0 || wrap_release(kind, out) == 0) return rc;
  release_struct(kind, out);
  return ERRNO_NOMEM;
}

static int gil_get_schema(ShimStream* base, struct ArrowSchema* out) {
  GilStream* self = (GilStream*)base;
  PyGILState_STATE gil = py_PyGILState_Ensure();
  int rc = base->kind == KIND_DEVICE_STREAM ? self->inner.device.get_schema(&self->inner.device, out)
                                            : self->inner.array.get_schema(&self->inner.array, out);
  rc = wrap_result(rc, KIND_SCHEMA, out);
  py_PyGILState_Release(gil);
  return rc;
}

static int gil_get_next(ShimStream* base, void* out) {
  GilStream* self = (GilStream*)base;
  PyGILState_STATE gil = py_PyGILState_Ensure();
  int rc = base->kind == KIND_DEVICE_STREAM ? self->inner.device.get_next(&self->inner.device, (struct ArrowDeviceArray*)out)
                                            : self->inner.array.get_next(&self->inner.array, (struct ArrowArray*)out);
  rc = wrap_result(rc, batch_kind(base), out);
  py_PyGILState_Release(gil);
  return rc;
}

static const char* gil_get_last_error(ShimStream* base) {
  GilStream* self = (GilStream*)base;
  PyGILState_STATE gil = py_PyGILState_Ensure();
  const char* message = base->kind == KIND_DEVICE_STREAM ? self->inner.device.get_last_error(&self->inner.device)
                                                         : self->inner.array.get_last_error(&self->inner.array);
  py_PyGILState_Release(gil);
  return message;
}

static void gil_release(ShimStream* base) {
  GilStream* self = (GilStream*)base;
  count(C_WRAPPED_RELEASES, 1);
  PyGILState_STATE gil = py_PyGILState_Ensure();
  release_struct(base->kind, &self->inner);
  py_PyGILState_Release(gil);
  free(self);
}

static const ShimStreamOps gil_ops = {gil_get_schema, gil_get_next, gil_get_last_error, gil_release};

int wrap_stream(int kind, void* stream) {
  if (!is_live(kind, stream)) return 0; /* consumed: stays released, the import refuses it */
  GilStream* self = (GilStream*)malloc(sizeof *self);
  if (!self) return -1;
  self->base = (ShimStream){&gil_ops, kind};
  memcpy(&self->inner, stream, struct_size(kind));
  install(&self->base, stream);
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Replay: a table Source's batches, re-exported in order                     */
/* ------------------------------------------------------------------------ */

typedef struct {
  ShimStream base;
  Source* source; /* one reference, dropped on release */
  int64_t next;
  char error[512];
} Replay;

static int replay_get_schema(ShimStream* base, struct ArrowSchema* out) {
  Replay* replay = (Replay*)base;
  if (lib_abd_schema_copy(&replay->source->schema, out) == 0) return 0;
  snprintf(replay->error, sizeof replay->error, "copying the schema: %s", lib_abd_last_error());
  return ERRNO_NOMEM;
}

static int replay_get_next(ShimStream* base, void* out) {
  Replay* replay = (Replay*)base;
  int kind = batch_kind(base);
  memset(out, 0, struct_size(kind));
  if (replay->next >= replay->source->n_owners) return 0; /* the end: a released array */
  struct ArrowSchema schema = {0};
  if (reexport_owner(replay->source->owners[replay->next], kind, &schema, out) != 0) {
    snprintf(replay->error, sizeof replay->error, "re-exporting batch %lld: %s", (long long)replay->next, lib_abd_last_error());
    return ERRNO_IO;
  }
  schema.release(&schema); /* the stream's schema was given by get_schema */
  replay->next++;
  return 0;
}

static const char* replay_get_last_error(ShimStream* base) {
  Replay* replay = (Replay*)base;
  return replay->error[0] ? replay->error : NULL;
}

static void replay_release(ShimStream* base) {
  Replay* replay = (Replay*)base;
  source_unref(replay->source);
  free(replay);
  count(C_STREAMS_LIVE, -1);
}

static const ShimStreamOps replay_ops = {replay_get_schema, replay_get_next, replay_get_last_error, replay_release};

int table_stream(Source* source, int kind, void* out) {
  Replay* replay = (Replay*)calloc(1, sizeof *replay);
  if (!replay) return -1;
  atomic_fetch_add(&source->refs, 1);
  replay->base = (ShimStream){&replay_ops, kind};
  replay->source = source;
  count(C_STREAMS_LIVE, 1);
  install(&replay->base, out);
  if (kind == KIND_DEVICE_STREAM) ((struct ArrowDeviceArrayStream*)out)->device_type = source->device_type;
  return 0;
}

/* ------------------------------------------------------------------------ */
/* JsStream: a JS-produced stream, as handed to Python                        */
/* ------------------------------------------------------------------------ */

/* Its get_next may call JS on this thread, so the GIL is given up around it
 * (other threads may need the GIL meanwhile, e.g. to release what they
 * imported). Behind an ArrowArrayStream only: the library's adapter makes
 * the device stream. */
typedef struct {
  ShimStream base;
  struct ArrowArrayStream inner; /* moved out of the Source; released with the JsStream */
} JsStream;

static int js_get_schema(ShimStream* base, struct ArrowSchema* out) {
  JsStream* self = (JsStream*)base;
  return self->inner.get_schema(&self->inner, out);
}

static int js_get_next(ShimStream* base, void* out) {
  JsStream* self = (JsStream*)base;
  PyThreadState* saved = py_PyGILState_Check() ? py_PyEval_SaveThread() : NULL;
  int rc = self->inner.get_next(&self->inner, (struct ArrowArray*)out);
  if (saved) py_PyEval_RestoreThread(saved);
  return rc;
}

static const char* js_get_last_error(ShimStream* base) {
  JsStream* self = (JsStream*)base;
  return self->inner.get_last_error(&self->inner);
}

static void js_release(ShimStream* base) {
  JsStream* self = (JsStream*)base;
  if (self->inner.release) self->inner.release(&self->inner);
  free(self);
  count(C_STREAMS_LIVE, -1);
}

static const ShimStreamOps js_ops = {js_get_schema, js_get_next, js_get_last_error, js_release};

int js_stream(Source* source, struct ArrowArrayStream* out) {
  if (atomic_exchange(&source->stream_taken, 1)) {
    py_PyErr_SetString(*py_exc_value_error, "bun_arrow_device: this stream was already exported (a JS stream can be consumed once; pass a Table to read it again)");
    return -1;
  }
  JsStream* self = (JsStream*)malloc(sizeof *self);
  if (!self) return -1;
  self->base = (ShimStream){&js_ops, KIND_STREAM};
  self->inner = source->stream;
  source->stream.release = NULL;
  install(&self->base, out);
  count(C_STREAMS_LIVE, 1);
  return 0;
}
