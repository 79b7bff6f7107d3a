/*
 * A tiny C library for examples/c_library.ts: it takes a table in as an
 * ArrowArrayStream and hands a new table back as another ArrowArrayStream.
 *
 *   int doubler_run(struct ArrowArrayStream* input, struct ArrowArrayStream* output);
 *
 * The input's batches must have a float64 first column. doubler_run moves
 * the input stream in (it is released before returning, success or not),
 * reads every batch, and fills `output` with a stream of batches of one
 * nullable float64 column "doubled" = 2 * x (nulls stay null). The output
 * stream and each batch it yields belong to the consumer, which releases
 * them; their memory is this library's, freed by those releases.
 *
 * Built by build.zig into build/examples/libdoubler.so. Plain C11, only the
 * Arrow C structs from lib/include/arrow_device.h.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrow_device.h"

static char last_error[256];

/* Why the last doubler_run failed (empty after a success). */
const char* doubler_last_error(void) { return last_error; }

/* One output batch: the struct root, its float64 child, and their buffers,
 * in one block freed by the root's release. */
typedef struct {
  struct ArrowArray child;
  struct ArrowArray* children[1];
  const void* root_buffers[1];
  const void* child_buffers[2];
  uint8_t* validity;
  double* values;
} out_batch;

typedef struct {
  out_batch** batches;
  int64_t* lengths;
  int64_t count;
  int64_t next;
} out_stream;

static void release_child(struct ArrowArray* array) { array->release = NULL; }

static void release_batch(struct ArrowArray* array) {
  out_batch* batch = array->private_data;
  if (batch->child.release) batch->child.release(&batch->child);
  free(batch->validity);
  free(batch->values);
  free(batch);
  array->release = NULL;
}

static void release_schema(struct ArrowSchema* schema) {
  for (int64_t i = 0; i < schema->n_children; i++) {
    struct ArrowSchema* child = schema->children[i];
    if (child->release) child->release(child);
    free(child);
  }
  free(schema->children);
  schema->release = NULL;
}

static void release_child_schema(struct ArrowSchema* schema) { schema->release = NULL; }

static int get_schema(struct ArrowArrayStream* stream, struct ArrowSchema* out) {
  (void)stream;
  struct ArrowSchema* child = calloc(1, sizeof *child);
  struct ArrowSchema** children = calloc(1, sizeof *children);
  if (!child || !children) { free(child); free(children); return ENOMEM; }
  *child = (struct ArrowSchema){ .format = "g", .name = "doubled", .flags = ARROW_FLAG_NULLABLE, .release = release_child_schema };
  children[0] = child;
  *out = (struct ArrowSchema){ .format = "+s", .name = "", .n_children = 1, .children = children, .release = release_schema };
  return 0;
}

static int get_next(struct ArrowArrayStream* stream, struct ArrowArray* out) {
  out_stream* state = stream->private_data;
  if (state->next == state->count) { /* the end: a released array */
    memset(out, 0, sizeof *out);
    return 0;
  }
  int64_t i = state->next++;
  out_batch* batch = state->batches[i];
  state->batches[i] = NULL; /* handed out: the consumer's now */
  int64_t length = state->lengths[i];
  *out = (struct ArrowArray){ .length = length, .null_count = 0, .n_buffers = 1, .n_children = 1,
                              .buffers = batch->root_buffers, .children = batch->children,
                              .release = release_batch, .private_data = batch };
  return 0;
}

static const char* get_last_error(struct ArrowArrayStream* stream) { (void)stream; return NULL; }

static void release_stream(struct ArrowArrayStream* stream) {
  out_stream* state = stream->private_data;
  for (int64_t i = 0; i < state->count; i++) { /* batches never pulled */
    if (state->batches[i]) {
      struct ArrowArray unpulled = { .private_data = state->batches[i] };
      release_batch(&unpulled);
    }
  }
  free(state->batches);
  free(state->lengths);
  free(state);
  stream->release = NULL;
}

/* 2 * the first column of `in`, as a new batch. */
static out_batch* doubled(const struct ArrowArray* in) {
  const struct ArrowArray* x = in->children[0];
  int64_t n = in->length, base = in->offset + x->offset;
  const uint8_t* bits = x->null_count == 0 ? NULL : x->buffers[0];
  const double* values = x->buffers[1];
  out_batch* batch = calloc(1, sizeof *batch);
  if (!batch) return NULL;
  batch->values = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
  batch->validity = bits ? calloc((size_t)(n / 8 + 1), 1) : NULL;
  if (!batch->values || (bits && !batch->validity)) { free(batch->values); free(batch->validity); free(batch); return NULL; }
  int64_t nulls = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t j = base + i;
    int valid = !bits || (bits[j >> 3] >> (j & 7)) & 1;
    if (!valid) nulls++;
    else if (batch->validity) batch->validity[i >> 3] |= (uint8_t)(1u << (i & 7));
    batch->values[i] = valid ? 2 * values[j] : 0;
  }
  batch->child_buffers[0] = batch->validity;
  batch->child_buffers[1] = batch->values;
  batch->child = (struct ArrowArray){ .length = n, .null_count = nulls, .n_buffers = 2, .buffers = batch->child_buffers, .release = release_child };
  batch->children[0] = &batch->child;
  batch->root_buffers[0] = NULL;
  return batch;
}

static int fail(struct ArrowArrayStream* input, out_stream* state, int code, const char* message) {
  snprintf(last_error, sizeof last_error, "%s", message);
  if (input->release) input->release(input);
  struct ArrowArrayStream partial = { .private_data = state };
  release_stream(&partial);
  return code;
}

int doubler_run(struct ArrowArrayStream* input, struct ArrowArrayStream* output) {
  last_error[0] = 0;
  out_stream* state = calloc(1, sizeof *state);
  if (!state) { if (input->release) input->release(input); return ENOMEM; }
  struct ArrowSchema schema;
  int status = input->get_schema(input, &schema);
  if (status != 0) return fail(input, state, status, "get_schema failed");
  int ok = schema.n_children >= 1 && strcmp(schema.children[0]->format, "g") == 0;
  schema.release(&schema);
  if (!ok) return fail(input, state, EINVAL, "the first column must be float64 (format \"g\")");
  for (;;) {
    struct ArrowArray in;
    status = input->get_next(input, &in);
    if (status != 0) return fail(input, state, status, "get_next failed");
    if (!in.release) break; /* the end */
    out_batch** batches = realloc(state->batches, (size_t)(state->count + 1) * sizeof *batches);
    int64_t* lengths = batches ? realloc(state->lengths, (size_t)(state->count + 1) * sizeof *lengths) : NULL;
    if (batches) state->batches = batches;
    if (lengths) state->lengths = lengths;
    out_batch* batch = lengths ? doubled(&in) : NULL;
    int64_t length = in.length;
    in.release(&in); /* the input batch is done with: the output owns its own memory */
    if (!batch) return fail(input, state, ENOMEM, "out of memory");
    state->batches[state->count] = batch;
    state->lengths[state->count++] = length;
  }
  input->release(input);
  *output = (struct ArrowArrayStream){ .get_schema = get_schema, .get_next = get_next, .get_last_error = get_last_error,
                                       .release = release_stream, .private_data = state };
  return 0;
}
