/* The Arrow C++ reference shim: a small C API over Arrow C++ (the libarrow
 * shipped in the pyarrow wheel) that the Bun tests load with bun:ffi from
 * build/fixtures/libarrow_shim.so (built by scripts/build-reference-shim.sh).
 * It exists to prove interoperability: Arrow C++ reads the gold IPC files,
 * exports them through the C (Device) Data, stream and async interfaces, and
 * imports, validates and compares whatever this project hands it.
 *
 * Conventions
 * - Every function that can fail returns an int status (SHIM_OK = 0) and
 *   records a message, read with shim_last_error() (per thread, valid until
 *   the next failing call on that thread). No C++ exception crosses this API.
 * - Structs passed in to be imported are moved (Arrow C++'s contract): the
 *   caller's ArrowSchema/ArrowArray/stream/... are left released, whether the
 *   import succeeded or not.
 * - Structs passed out are filled by Arrow C++'s exporters; the caller owns
 *   them and must call their release.
 * - Handles (shim_ipc, shim_job) and held ids are owned by the caller until
 *   freed/dropped. Threads: any function may be called from any thread;
 *   handles are immutable after creation, jobs and held ids are locked.
 *
 * Checks. A "check" imports data into Arrow C++ and judges it against
 * batch i of Arrow C++'s own read of the same IPC bytes (a shim_ipc). It
 * fills int32_t out[SHIM_CHECK_WORDS]:
 *   out[SHIM_CHECK_VALID]            1 if ValidateFull() accepted ours
 *   out[SHIM_CHECK_REFERENCE_VALID]  1 if ValidateFull() accepted Arrow C++'s
 *                                    own read (0 for three gold files whose
 *                                    values Arrow C++ 26 rejects)
 *   out[SHIM_CHECK_EQUAL]            1 if the data is Equals() (NaN == NaN)
 *   out[SHIM_CHECK_SCHEMA_EQUAL]     1 if the schema/field is equal, metadata
 *                                    included
 * and shim_check_message(word) explains each 0 ("" for a 1), until the next
 * check on this thread. A check returns non-zero only when the import itself
 * failed (or for bad arguments); a mismatch is reported through out[]. */
#ifndef ARROW_SHIM_H
#define ARROW_SHIM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ArrowSchema;
struct ArrowArray;
struct ArrowDeviceArray;
struct ArrowArrayStream;
struct ArrowDeviceArrayStream;
struct ArrowAsyncDeviceStreamHandler;

enum {
  SHIM_OK = 0,
  SHIM_BAD_ARGUMENT = 1, /* null pointer, index out of range, unknown id */
  SHIM_ARROW_ERROR = 2,  /* Arrow C++ returned a non-OK Status (message: its text) */
  SHIM_INTERNAL = 3,     /* a C++ exception was caught at the boundary */
  SHIM_NOT_DONE = 4      /* a job has not finished yet */
};

enum {
  SHIM_CHECK_VALID = 0,
  SHIM_CHECK_REFERENCE_VALID = 1,
  SHIM_CHECK_EQUAL = 2,
  SHIM_CHECK_SCHEMA_EQUAL = 3,
  SHIM_CHECK_WORDS = 4
};

/* Words of a job report / stream report (int64_t out[SHIM_REPORT_WORDS]). */
enum {
  SHIM_REPORT_BATCHES = 0,       /* batches received (or produced, for a producer job) */
  SHIM_REPORT_PASSED = 1,        /* batches whose check passed (see shim_consume_stream) */
  SHIM_REPORT_SCHEMA_EQUAL = 2,  /* 1/0: stream schema == reference schema (metadata included); -1 no reference */
  SHIM_REPORT_ENDED = 3,         /* 1 if the end of stream was seen */
  SHIM_REPORT_STATUS_CODE = 4,   /* arrow::StatusCode of the failure (0: none) */
  SHIM_REPORT_FIRST_FAILED = 5,  /* index of the first batch whose check failed, -1 if none */
  SHIM_REPORT_DEVICE_TYPE = 6,   /* device type the stream/producer declared (-1: not seen) */
  SHIM_REPORT_WITH_METADATA = 7, /* async: tasks that carried metadata */
  SHIM_REPORT_ASYNC_CODE = 8,    /* async: the errno-like code given to on_error (-1: none) */
  SHIM_REPORT_ERROR_METADATA_BYTES = 9, /* async: bytes of on_error metadata Arrow C++ kept (-1: none) */
  SHIM_REPORT_WORDS = 10
};

typedef struct shim_ipc shim_ipc;
typedef struct shim_job shim_job;

/* --- General ----------------------------------------------------------- */

/* The message of the last failing call on this thread ("" if none). */
const char* shim_last_error(void);
/* The libarrow version the shim runs against, e.g. "26.0.1". */
const char* shim_arrow_version(void);
/* Live handles, for leak checks: shim_ipc handles, held ids, jobs. */
int64_t shim_live_ipc(void);
int64_t shim_held_count(void);
int64_t shim_live_jobs(void);

/* Zeroed native memory for C structs (slots Arrow C++ exports into), and
 * its release. */
void* shim_alloc(int64_t bytes);
void shim_free(void* memory);
/* Calls the struct's release if it is not released yet (release != NULL).
 * For an ArrowDeviceArray pass its `array` member (offset 0). */
void shim_release_schema(struct ArrowSchema* schema);
void shim_release_array(struct ArrowArray* array);
void shim_release_stream(struct ArrowArrayStream* stream);
void shim_release_device_stream(struct ArrowDeviceArrayStream* stream);

/* --- Arrow C++'s own read of IPC stream bytes ---------------------------- */

/* Reads a whole IPC stream (copied: the caller's bytes are not kept) and
 * runs ValidateFull on every batch (the reference verdict). *out is a new
 * handle owned by the caller. */
int shim_ipc_read(const uint8_t* bytes, int64_t size, shim_ipc** out);
/* A new handle whose batch i is batch i of `ipc` sliced at
 * [offset, offset + length) (clamped to each batch); reference verdicts are
 * recomputed. The two handles are independent. */
int shim_ipc_slice(const shim_ipc* ipc, int64_t offset, int64_t length, shim_ipc** out);
/* A new handle with the same schema and one empty batch
 * (RecordBatch::MakeEmpty): the reference for a reader that yields an empty
 * batch where the stream has none (apache-arrow does, for streams without
 * batches). */
int shim_ipc_empty(const shim_ipc* ipc, shim_ipc** out);
void shim_ipc_free(shim_ipc* ipc);
int64_t shim_ipc_batch_count(const shim_ipc* ipc);
/* Rows of batch i, -1 if out of range. */
int64_t shim_ipc_batch_length(const shim_ipc* ipc, int64_t batch);
int32_t shim_ipc_column_count(const shim_ipc* ipc);
/* Arrow C++'s ValidateFull of its own batch i: SHIM_OK, or SHIM_ARROW_ERROR
 * with the reason in shim_last_error(). */
int shim_ipc_reference_validation(const shim_ipc* ipc, int64_t batch);
/* Batch i (or the schema) as text, for failure messages; valid until the
 * next call of this function on this thread. */
const char* shim_ipc_describe(const shim_ipc* ipc, int64_t batch);

/* --- Arrow C++ as producer: ExportSchema / ExportRecordBatch /
 *     ExportDeviceRecordBatch into caller-provided structs ------------------ */

int shim_ipc_export_schema(const shim_ipc* ipc, struct ArrowSchema* out);
/* out_schema may be NULL. */
int shim_ipc_export_batch(const shim_ipc* ipc, int64_t batch, struct ArrowSchema* out_schema,
                          struct ArrowArray* out);
int shim_ipc_export_device_batch(const shim_ipc* ipc, int64_t batch, struct ArrowSchema* out_schema,
                                 struct ArrowDeviceArray* out);
/* Column `column` of batch i (ExportDeviceArray; the schema via ExportField,
 * so it keeps its name and metadata). */
int shim_ipc_export_device_column(const shim_ipc* ipc, int64_t batch, int32_t column,
                                  struct ArrowSchema* out_schema, struct ArrowDeviceArray* out);

/* Describes a C ArrowArray tree in place (no Arrow C++ involved; nothing is
 * moved or released): per node in preorder (node, its children in order,
 * then its dictionary), the words length, null_count, offset, n_buffers,
 * n_children, has_dictionary (0/1), then n_buffers buffer addresses.
 * *out_words is the number of words the tree needs; fails with
 * SHIM_BAD_ARGUMENT (writing nothing past capacity) when that exceeds
 * `capacity`. */
int shim_c_array_layout(const struct ArrowArray* array, double* out, int64_t capacity,
                        int64_t* out_words);

/* --- Arrow C++ as consumer: import, ValidateFull, Equals ----------------- */

/* ImportDeviceRecordBatch(array, schema), then checks it against batch i of
 * `reference` (see "Checks" above). Moves schema and array in. */
int shim_check_device_batch(const shim_ipc* reference, int64_t batch, struct ArrowSchema* schema,
                            struct ArrowDeviceArray* array, int32_t* out);
/* The same through ImportRecordBatch (a plain ArrowArray). */
int shim_check_batch(const shim_ipc* reference, int64_t batch, struct ArrowSchema* schema,
                     struct ArrowArray* array, int32_t* out);
/* ImportField + ImportDeviceArray (any type, any offset), checked against
 * column `column` of batch i, or, for column -1, against batch i as a struct
 * array (field "" not nullable, carrying the schema metadata). Use this for
 * record batches with a non-zero offset, which ImportDeviceRecordBatch
 * refuses ("ArrowArray struct has non-zero offset"). */
int shim_check_device_array(const shim_ipc* reference, int64_t batch, int32_t column,
                            struct ArrowSchema* schema, struct ArrowDeviceArray* array, int32_t* out);
/* Why word `which` of the last check on this thread was 0 ("" if it was 1). */
const char* shim_check_message(int32_t which);
/* The words of the last check on this thread (also the first failing check
 * of a stream report, after shim_consume_* / shim_job_result). */
void shim_check_flags(int32_t* out);

/* --- Held imports: Arrow C++ holds what it imported ---------------------- */

/* ImportDeviceRecordBatch; *out_id names the held batch. Moves both in. */
int shim_hold_device_batch(struct ArrowSchema* schema, struct ArrowDeviceArray* array, int64_t* out_id);
/* ImportField + ImportDeviceArray (any type). Moves both in. */
int shim_hold_device_array(struct ArrowSchema* schema, struct ArrowDeviceArray* array, int64_t* out_id);
/* ValidateFull of a held import: SHIM_OK or SHIM_ARROW_ERROR + message. */
int shim_held_validate(int64_t id);
/* Validate (the O(1)-per-node checks, no value read) of a held import. */
int shim_held_validate_quick(int64_t id);
/* Checks a held import against `reference` like the check functions: a held
 * batch against batch i (column must be -1); a held array against column
 * `column` of batch i, or batch i as a struct array for -1. */
int shim_held_check(int64_t id, const shim_ipc* reference, int64_t batch, int32_t column, int32_t* out);
/* Arrow C++ exports what it holds again (ExportDeviceRecordBatch /
 * ExportDeviceArray + ExportField): a relay through Arrow C++. */
int shim_held_export_device(int64_t id, struct ArrowSchema* out_schema, struct ArrowDeviceArray* out);
/* Drops a held import: Arrow C++ lets go of it, which releases the moved-in
 * structs once nothing else of Arrow C++'s refers to them (at once, unless a
 * re-export from shim_held_export_device still lives). Any order.
 * SHIM_BAD_ARGUMENT for an unknown (or already dropped) id. */
int shim_held_drop(int64_t id);

/* --- Streams -------------------------------------------------------------- */

/* Exports the batches of `ipc` as a stream through ExportRecordBatchReader /
 * ExportDeviceRecordBatchReader into *out (the caller owns the stream).
 * It yields the first `batch_count` batches (-1: all), then ends; or, when
 * `fail_message` is not NULL, every later get_next fails with an IOError
 * carrying that text (Arrow C++ returns EIO and get_last_error gives
 * "IOError: <text>"). batch_count 0 and no failure: an empty stream. */
int shim_ipc_export_stream(const shim_ipc* ipc, int64_t batch_count, const char* fail_message,
                           struct ArrowArrayStream* out);
int shim_ipc_export_device_stream(const shim_ipc* ipc, int64_t batch_count, const char* fail_message,
                                  struct ArrowDeviceArrayStream* out);

/* Imports a stream (ImportRecordBatchReader / ImportDeviceRecordBatchReader;
 * the stream is moved in) and reads it on the calling thread: up to
 * `max_batches` batches (-1: to the end), then releases it (early close when
 * it stopped before the end). Each batch i is validated and compared with
 * batch i of `reference` (NULL: only validated); it passes when its
 * ValidateFull verdict equals the reference's, its data is equal and the
 * reference has a batch i. Fills out[SHIM_REPORT_WORDS]; the first failing
 * batch's messages go to shim_check_message. Returns SHIM_OK when the
 * stream ended or was closed early, SHIM_ARROW_ERROR when the producer
 * failed: shim_last_error() is then the producer's get_last_error text,
 * intact (Arrow C++'s Status message) and out[SHIM_REPORT_STATUS_CODE] the
 * StatusCode Arrow C++ mapped its errno to. */
int shim_consume_stream(struct ArrowArrayStream* stream, const shim_ipc* reference, int64_t max_batches,
                        int64_t* out);
int shim_consume_device_stream(struct ArrowDeviceArrayStream* stream, const shim_ipc* reference,
                               int64_t max_batches, int64_t* out);
/* The same on a new shim thread (a consumer pulling from another thread):
 * the stream is moved into the job before this returns; get_schema and
 * get_next run on the job's thread. Poll shim_job_done, then
 * shim_job_result. */
int shim_consume_stream_start(struct ArrowArrayStream* stream, const shim_ipc* reference,
                              int64_t max_batches, shim_job** out);
int shim_consume_device_stream_start(struct ArrowDeviceArrayStream* stream, const shim_ipc* reference,
                                     int64_t max_batches, shim_job** out);

/* --- Async device streams ------------------------------------------------- */

/* Arrow C++ as consumer: CreateAsyncDeviceStreamHandler fills *handler
 * (caller memory, which must stay valid until the producer calls its
 * release) with `queue_size` batches of initial demand. Hand it to a
 * producer. A job thread waits for the schema, then pulls every batch Arrow
 * C++'s generator yields and checks it against `reference` (NULL: only
 * validated), as shim_consume_stream does. Arrow C++ never calls cancel; it
 * waits for on_next_task(NULL) or on_error, so a producer that just releases
 * the handler leaves the job unfinished. Errors from on_error arrive as
 * SHIM_ARROW_ERROR with the producer's message intact,
 * out[SHIM_REPORT_ASYNC_CODE] = its code. */
int shim_async_consume_start(struct ArrowAsyncDeviceStreamHandler* handler, const shim_ipc* reference,
                             int64_t queue_size, shim_job** out);
/* Arrow C++ as producer: ExportAsyncRecordBatchReader drives the caller's
 * handler from the batches of `ipc` (batch_count and fail_message as for
 * shim_ipc_export_stream), on a job thread: on_schema, then on_next_task as
 * the consumer requests, then on_next_task(NULL) or on_error, then release.
 * The job's result is the Future's Status; out[SHIM_REPORT_BATCHES] counts
 * the batches its generator handed out. */
int shim_async_produce_start(const shim_ipc* ipc, int64_t batch_count, const char* fail_message,
                             struct ArrowAsyncDeviceStreamHandler* handler, shim_job** out);

/* Probes how Arrow C++'s producer (ExportAsyncRecordBatchReader) treats a
 * consumer, with a scripted handler inside the shim, and reports what it
 * saw (for the spec deviations listed in ABI-NOTES.md). Blocks the caller
 * until the producer released the handler (at most timeout_ms; on timeout
 * SHIM_INTERNAL, and the handler is leaked rather than freed under the
 * producer). Scenarios: */
enum {
  SHIM_PROBE_NORMAL = 0,            /* request(1) per batch */
  SHIM_PROBE_SCHEMA_FAILS = 1,      /* on_schema returns EIO */
  SHIM_PROBE_TASK_FAILS = 2,        /* on_next_task returns EIO on the first task, without
                                       calling extract_data: Arrow C++ 26 frees a refused task
                                       itself, so a consumer that also calls
                                       extract_data(task, NULL) as the spec asks double-frees */
  SHIM_PROBE_CANCEL = 3,            /* cancel() inside the first on_next_task */
  SHIM_PROBE_REQUEST_ZERO = 4       /* request(0) then request(-1) in on_schema */
};
/* out[SHIM_PROBE_WORDS]: */
enum {
  SHIM_PROBE_SCHEMAS = 0,          /* on_schema calls */
  SHIM_PROBE_TASKS = 1,            /* on_next_task calls with a task */
  SHIM_PROBE_ENDS = 2,             /* on_next_task calls with NULL */
  SHIM_PROBE_ERRORS = 3,           /* on_error calls */
  SHIM_PROBE_ERROR_CODE = 4,       /* the last on_error code (-1: none) */
  SHIM_PROBE_RELEASES = 5,         /* release calls */
  SHIM_PROBE_EXTRACT_FAILURES = 6, /* extract_data calls that returned non-zero */
  SHIM_PROBE_FUTURE_CODE = 7,      /* arrow::StatusCode the producer's Future ended with */
  SHIM_PROBE_WORDS = 8
};
/* The last on_error message goes to shim_last_error() (also on success). */
int shim_probe_async_producer(const shim_ipc* ipc, int32_t scenario, int32_t timeout_ms, int64_t* out);

/* --- Jobs ------------------------------------------------------------------ */

/* 1 once the job's thread has finished, else 0. */
int shim_job_done(shim_job* job);
/* Waits up to timeout_ms for the job: 1 if done, 0 if not (bounded; prefer
 * polling shim_job_done from the JS thread, which a producer may need). */
int shim_job_wait(shim_job* job, int32_t timeout_ms);
/* The job's outcome: SHIM_NOT_DONE while it runs; otherwise its status,
 * with its message in shim_last_error(), out[SHIM_REPORT_WORDS] filled and
 * the first failing check's messages in shim_check_message. */
int shim_job_result(shim_job* job, int64_t* out);
/* Frees a job. A finished job is joined and freed at once; an unfinished
 * one is abandoned (never blocks): its thread frees it if it ever ends. */
void shim_job_free(shim_job* job);

#ifdef __cplusplus
}
#endif

#endif /* ARROW_SHIM_H */
