/*
 * bun-arrow-device: the Arrow C Data, C Stream and C Device Data Interfaces,
 * plus the C API of libarrow_device.
 *
 * The struct definitions follow Arrow C++'s cpp/src/arrow/c/abi.h (the
 * normative layout; the async producer has no `release` member). The
 * canonical include guards are kept exactly as the spec gives them, so this
 * header coexists with any other copy of these definitions.
 *
 * Ownership rules for every Arrow struct:
 *  - A struct is released when its `release` member is NULL.
 *  - A consumer calls only the base struct's `release`, never a child's.
 *  - Moving = bitwise copy, then set the source's `release` to NULL.
 *  - Release callbacks may be invoked from any thread.
 */
#ifndef BUN_ARROW_DEVICE_H
#define BUN_ARROW_DEVICE_H

#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ----------------------------------------------------------------------- */
/* C Data Interface                                                         */
/* ----------------------------------------------------------------------- */

#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE

#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4

struct ArrowSchema {
  /* Array type description */
  const char* format;
  const char* name;
  const char* metadata;
  int64_t flags;
  int64_t n_children;
  struct ArrowSchema** children;
  struct ArrowSchema* dictionary;

  /* Release callback */
  void (*release)(struct ArrowSchema*);
  /* Opaque producer-specific data */
  void* private_data;
};

struct ArrowArray {
  /* Array data description */
  int64_t length;
  int64_t null_count; /* -1: not computed */
  int64_t offset;
  int64_t n_buffers;
  int64_t n_children;
  const void** buffers;
  struct ArrowArray** children;
  struct ArrowArray* dictionary;

  /* Release callback */
  void (*release)(struct ArrowArray*);
  /* Opaque producer-specific data */
  void* private_data;
};

#endif /* ARROW_C_DATA_INTERFACE */

/* ----------------------------------------------------------------------- */
/* C Device Data Interface                                                  */
/* ----------------------------------------------------------------------- */

#ifndef ARROW_C_DEVICE_DATA_INTERFACE
#define ARROW_C_DEVICE_DATA_INTERFACE

/* Device types equal DLPack's DLDeviceType. */
typedef int32_t ArrowDeviceType;

#define ARROW_DEVICE_CPU 1
#define ARROW_DEVICE_CUDA 2
#define ARROW_DEVICE_CUDA_HOST 3
#define ARROW_DEVICE_OPENCL 4
#define ARROW_DEVICE_VULKAN 7
#define ARROW_DEVICE_METAL 8
#define ARROW_DEVICE_VPI 9
#define ARROW_DEVICE_ROCM 10
#define ARROW_DEVICE_ROCM_HOST 11
#define ARROW_DEVICE_EXT_DEV 12
#define ARROW_DEVICE_CUDA_MANAGED 13
#define ARROW_DEVICE_ONEAPI 14
#define ARROW_DEVICE_WEBGPU 15
#define ARROW_DEVICE_HEXAGON 16

struct ArrowDeviceArray {
  /* the Allocated Array; the buffers are on the device below */
  struct ArrowArray array;
  /* -1 for CPU arrays */
  int64_t device_id;
  ArrowDeviceType device_type;
  /* pointer TO the event (CUevent*, hipEvent_t*), NULL when ready */
  void* sync_event;
  /* producers zero this; consumers must not rely on it */
  int64_t reserved[3];
};

#endif /* ARROW_C_DEVICE_DATA_INTERFACE */

/* ----------------------------------------------------------------------- */
/* C Stream Interface                                                       */
/* ----------------------------------------------------------------------- */

#ifndef ARROW_C_STREAM_INTERFACE
#define ARROW_C_STREAM_INTERFACE

struct ArrowArrayStream {
  int (*get_schema)(struct ArrowArrayStream*, struct ArrowSchema* out);
  int (*get_next)(struct ArrowArrayStream*, struct ArrowArray* out);
  /* valid after a non-zero return, until the next call on the stream */
  const char* (*get_last_error)(struct ArrowArrayStream*);
  void (*release)(struct ArrowArrayStream*);
  void* private_data;
};

#endif /* ARROW_C_STREAM_INTERFACE */

#ifndef ARROW_C_DEVICE_STREAM_INTERFACE
#define ARROW_C_DEVICE_STREAM_INTERFACE

struct ArrowDeviceArrayStream {
  /* every array of the stream has this device type; device_id may vary */
  ArrowDeviceType device_type;
  int (*get_schema)(struct ArrowDeviceArrayStream*, struct ArrowSchema* out);
  int (*get_next)(struct ArrowDeviceArrayStream*, struct ArrowDeviceArray* out);
  const char* (*get_last_error)(struct ArrowDeviceArrayStream*);
  void (*release)(struct ArrowDeviceArrayStream*);
  void* private_data;
};

#endif /* ARROW_C_DEVICE_STREAM_INTERFACE */

/* ----------------------------------------------------------------------- */
/* Async Device Stream Interface (header layout: no producer release)       */
/* ----------------------------------------------------------------------- */

#ifndef ARROW_C_ASYNC_STREAM_INTERFACE
#define ARROW_C_ASYNC_STREAM_INTERFACE

struct ArrowAsyncTask {
  /* called exactly once; out == NULL means "not wanted, clean up" */
  int (*extract_data)(struct ArrowAsyncTask* self, struct ArrowDeviceArray* out);
  void* private_data;
};

struct ArrowAsyncProducer {
  ArrowDeviceType device_type;
  /* n <= 0 is invalid: reported through on_error (EINVAL) */
  void (*request)(struct ArrowAsyncProducer* self, int64_t n);
  /* idempotent, thread-safe, never causes on_error */
  void (*cancel)(struct ArrowAsyncProducer* self);
  const char* additional_metadata;
  void* private_data;
};

struct ArrowAsyncDeviceStreamHandler {
  int (*on_schema)(struct ArrowAsyncDeviceStreamHandler* self,
                   struct ArrowSchema* stream_schema);
  int (*on_next_task)(struct ArrowAsyncDeviceStreamHandler* self,
                      struct ArrowAsyncTask* task, const char* metadata);
  void (*on_error)(struct ArrowAsyncDeviceStreamHandler* self, int code,
                   const char* message, const char* metadata);
  void (*release)(struct ArrowAsyncDeviceStreamHandler* self);
  struct ArrowAsyncProducer* producer;
  void* private_data;
};

#endif /* ARROW_C_ASYNC_STREAM_INTERFACE */

/* ----------------------------------------------------------------------- */
/* libarrow_device                                                          */
/* ----------------------------------------------------------------------- */

/* Status codes (zig/status.zig). On failure, abd_last_error() explains,
 * until the next failing call on the same thread. */
typedef int abd_status;
#define ABD_OK 0
#define ABD_INVALID_ARGUMENT 1
#define ABD_RELEASED 2
#define ABD_INVALID_FORMAT 3
#define ABD_INVALID_LAYOUT 4
#define ABD_UNKNOWN_DEVICE 5
#define ABD_TOO_DEEP 6
#define ABD_OUT_OF_MEMORY 7
#define ABD_OUT_OF_RANGE 8
#define ABD_UNSUPPORTED 9
#define ABD_DEVICE_UNAVAILABLE 10
#define ABD_DEVICE_ERROR 11
#define ABD_CALLBACK_ERROR 12
#define ABD_CANCELLED 13
#define ABD_WRONG_THREAD 14
#define ABD_INTERNAL 15

/* Validation levels, as nanoarrow's. */
#define ABD_VALIDATE_NONE 0
#define ABD_VALIDATE_MINIMAL 1
#define ABD_VALIDATE_DEFAULT 2
#define ABD_VALIDATE_FULL 3

/* An imported array: moved-in ArrowSchema + ArrowDeviceArray under an
 * atomic reference count. The producer's release runs once, after the last
 * reference is dropped, on the thread that drops it. */
typedef struct abd_owner abd_owner;

/* JSON layout manifest (sizes, offsets, enums). Static. */
const char* abd_layout_manifest(void);
const char* abd_last_error(void);
abd_status abd_last_status(void);
uint32_t abd_counters_read(double* out, uint32_t capacity);

void* abd_alloc_zeroed(size_t size);
void abd_free(void* memory);

/* Checks, without faulting, that address names a struct of `kind` (0
 * ArrowSchema, 1 ArrowArray, 2 ArrowDeviceArray, 3 ArrowArrayStream, 4
 * ArrowDeviceArrayStream, 5 ArrowAsyncDeviceStreamHandler) that is safe to
 * read. mode 0: it must be live (ABD_RELEASED otherwise); mode 1: a view or
 * destination (released allowed, must be writable). Reads only. */
abd_status abd_probe_struct(int kind, uintptr_t address, int mode);
/* abd_probe_struct (mode 0) of the schema and the array (array_kind 1) or
 * device array (2) one import takes, in one call; a NULL address is
 * skipped. Returns the first failure, the schema's first. array_kind |
 * 0x100: both lie in a live slot from abd_export_slot_new (read directly,
 * only their release checked). */
abd_status abd_probe_pair(uintptr_t schema, int array_kind, uintptr_t array);
/* The probe of the schema and array (array_kind 1) or device array (2)
 * one import takes from a caller's addresses, to `depth`: 0 the roots, in
 * one system call when they look live (validation "minimal", "default");
 * 1 every node of both trees (validation "full"). NULL is skipped.
 * Returns 0, or the status | 0x10000 when the array's side failed |
 * 0x20000 when a node below the roots failed (a failure of the roots has
 * neither flag: abd_probe_struct each root to learn which). */
int abd_probe_import(uintptr_t schema, int array_kind, uintptr_t array, int depth);

/* Call the struct's release if it is not released; NULL is a no-op. */
void abd_schema_release(struct ArrowSchema* schema);
void abd_array_release(struct ArrowArray* array);
void abd_device_array_release(struct ArrowDeviceArray* array);

/* Export builders: see zig/export_schema.zig and zig/export_array.zig for
 * the plan formats. `out` is the caller's; everything else belongs to the
 * returned tree and is freed by its release. */
abd_status abd_schema_build(const uint8_t* plan, size_t plan_bytes, struct ArrowSchema* out);
abd_status abd_array_build(const double* plan, size_t plan_words, double keepalive_id,
                           struct ArrowArray* out);
abd_status abd_device_array_build(const double* plan, size_t plan_words, double keepalive_id,
                                  int32_t device_type, int64_t device_id, void* sync_event,
                                  struct ArrowDeviceArray* out);
/* One-call export (zig/export_batch.zig). A schema template is a checked
 * schema plan, the caller's until template_free; template_build builds an
 * independent tree from it. slot_new returns a new slot (struct ArrowSchema
 * at 0, then struct ArrowArray (kind 1) or ArrowDeviceArray (kind 2) at 72;
 * kind 0: schema only) or NULL (see abd_last_status); slot_free releases
 * what was not moved out, frees the slot and returns the keepalive id that
 * finished during the call (not queued then), or 0. queued_address points
 * at the number of queued keepalive ids. */
typedef struct abd_schema_template abd_schema_template;
abd_schema_template* abd_schema_template_new(const uint8_t* plan, size_t plan_bytes);
void abd_schema_template_free(abd_schema_template* template_);
abd_status abd_schema_template_build(abd_schema_template* template_, struct ArrowSchema* out);
void* abd_export_slot_new(abd_schema_template* template_, const double* plan, size_t plan_words,
                          double keepalive_id, int32_t kind);
double abd_export_slot_free(void* slot, int32_t kind);
/* An array image is a checked array plan built once (zig/export_array.zig
 * `Image`), the caller's until image_free; slot_from_image is slot_new with
 * the array tree copied from it (the same buffer addresses; the caller
 * keeps them alive under keepalive_id). images_live counts images not yet
 * freed. */
typedef struct abd_array_image abd_array_image;
abd_array_image* abd_array_image_new(const double* plan, size_t plan_words);
void abd_array_image_free(abd_array_image* image);
double abd_array_images_live(void);
void* abd_export_slot_from_image(abd_schema_template* template_, abd_array_image* image,
                                 double keepalive_id, int32_t kind);
const uint32_t* abd_keepalive_queued_address(void);
void abd_set_release_notifier(void (*notifier)(void));
/* Opens the calling JS thread's context (every JS thread, each Worker too,
 * calls it once before registering callbacks; is_main: the process's main
 * JS thread). Returns its number, 0 when none is left. Notifiers, queues
 * and keepalive ids are per context. */
uint32_t abd_js_context_open(bool is_main);
uint32_t abd_take_released(double* out, uint32_t capacity);
/* At most one notifier call is pending: its JS side calls wake_done when it
 * runs, before draining. wakes_posted counts the calls made. */
void abd_release_wake_done(void);
double abd_release_wakes_posted(void);
/* The export built under `keepalive_id` holds one reference on each of the
 * `n` import owners (addresses as doubles) until its release; drop_owners
 * undoes a hold whose export was never built. */
abd_status abd_export_hold_owners(double keepalive_id, const double* owners, uint32_t n);
void abd_export_drop_owners(double keepalive_id);

/* Import: moves `schema` and `array` in (they are left released, success or
 * not). On success *out holds one reference, the caller's. */
abd_status abd_import_device_array(struct ArrowSchema* schema, struct ArrowDeviceArray* array,
                                   int level, abd_owner** out);
abd_status abd_import_array(struct ArrowSchema* schema, struct ArrowArray* array, int level,
                            abd_owner** out);
void abd_owner_retain(abd_owner* owner, uint32_t n);
void abd_owner_release(abd_owner* owner);
/* Runs an import's release that was deferred to the JS thread that made it
 * (its producer's release callbacks are JS code); called from that thread. */
void abd_owner_release_deferred(abd_owner* owner);
void abd_owner_retain_views(abd_owner* owner, uint32_t n);
void abd_owner_release_views(abd_owner* owner, uint32_t n); /* views never made */
void abd_owner_info(abd_owner* owner, double* out /* 11 words */);
/* The info words, node table and buffer table of `owner` into `out`, and
 * the handle's reference: adopt 0 takes one for an anchor view, 1 adopts
 * the caller's for it, 2 adopts the caller's as a plain reference. Returns
 * the words needed; nothing is written or taken when they do not fit. */
uint32_t abd_owner_snapshot(abd_owner* owner, double* out, uint32_t capacity, uint32_t adopt);
const void* abd_view_deallocator(void);
/* A handle's anchor: 8 bytes holding the reference an abd_owner_snapshot
 * (adopt 0 or 1) paid for; NULL when out of memory (the reference stays
 * the caller's). Wrap it with abd_anchor_deallocator (context: the anchor),
 * which ends the reference unless abd_anchor_disarm ended it first, and
 * frees the anchor. */
typedef struct abd_anchor abd_anchor;
abd_anchor* abd_anchor_new(abd_owner* owner);
/* Arms a disarmed anchor again with a reference to `owner` paid for as
 * for abd_anchor_new; false, changing nothing, while it is armed. */
bool abd_anchor_arm(abd_anchor* anchor, abd_owner* owner);
/* Ends the anchor's reference now (unless its deallocator did). Returns
 * the keepalive id of the calling JS thread's export whose tree finished
 * during the call (not queued for abd_take_released), or 0. */
double abd_anchor_disarm(abd_anchor* anchor);
const void* abd_anchor_deallocator(void);

/* The built-in consumer: moves in, validates, checksums, releases. Report:
 * count, then (address, size, FNV-1a 32) per buffer. */
abd_status abd_consume_device_array(struct ArrowSchema* schema, struct ArrowDeviceArray* array,
                                    int level, double* report, uint32_t capacity);

/* Re-export and relays (zig/reexport.zig).
 *
 * A request is 8 doubles holding exact integers (NULL / 0 words: the whole
 * array): flags (ABD_REEXPORT_*), node (0: the root), base offset and
 * length (with ABD_REEXPORT_BASE: a window of the node, as C offset and
 * length), child (with ABD_REEXPORT_CHILD), slice offset and length (with
 * ABD_REEXPORT_SLICE: rows relative to the selection), shape
 * (ABD_SHAPE_*). Applied in the order base, column, child, dictionary,
 * slice, table. A struct's or sparse union's child is taken under the
 * parent's window, as Arrow C++'s field(i); other children whole. */
#define ABD_REEXPORT_REQUEST_WORDS 8
#define ABD_REEXPORT_BASE 1
#define ABD_REEXPORT_CHILD 2
#define ABD_REEXPORT_DICTIONARY 4
#define ABD_REEXPORT_SLICE 8
#define ABD_SHAPE_AS_IS 0
#define ABD_SHAPE_COLUMN 1 /* a one-column struct handed over as its column */
#define ABD_SHAPE_TABLE 2  /* the selection wrapped as a one-column struct */

/* Resolves a request into 4 doubles: node, C offset, length, null count
 * (-1: unknown, device memory). The caller holds a reference to `owner`. */
abd_status abd_owner_select(abd_owner* owner, const double* request, uint32_t request_words,
                            double* out_window);
/* Writes a new schema + device array for the request into the outs, which
 * the caller (consumer) owns and releases, from any thread, in any order
 * with other re-exports; the owner's producer release runs after the last
 * one. Keeps device_type, device_id and sync_event; zeroes reserved.
 * Schemas are copies. On failure the outs are untouched. */
abd_status abd_owner_reexport(abd_owner* owner, const double* request, uint32_t request_words,
                              struct ArrowSchema* schema_out, struct ArrowDeviceArray* array_out);
/* The same as a plain ArrowArray; ABD_UNSUPPORTED when the host cannot read
 * the memory. */
abd_status abd_owner_reexport_array(abd_owner* owner, const double* request,
                                    uint32_t request_words, struct ArrowSchema* schema_out,
                                    struct ArrowArray* array_out);
/* Moves the inputs in (validated at `level`, device memory never read) and
 * out again; the outputs' release runs the producer's. The inputs are
 * moved (left released) whether or not this succeeds. */
abd_status abd_relay_device_array(struct ArrowSchema* schema, struct ArrowDeviceArray* array,
                                  int level, struct ArrowSchema* schema_out,
                                  struct ArrowDeviceArray* array_out);
abd_status abd_relay_array(struct ArrowSchema* schema, struct ArrowArray* array, int level,
                           struct ArrowSchema* schema_out, struct ArrowArray* array_out);
/* ----------------------------------------------------------------------- */
/* Device runtimes: CUDA (libcuda.so.1) and ROCm (libamdhip64.so), loaded   */
/* at run time (zig/device/). A runtime is named by an Arrow device type:    */
/* CUDA, CUDA_HOST, CUDA_MANAGED mean CUDA; ROCM, ROCM_HOST mean ROCm.       */
/* "Not available" is ABD_DEVICE_UNAVAILABLE with abd_last_error() saying    */
/* why and what was tried. Streams are raw CUstream / hipStream_t handles    */
/* (NULL: the default stream); events are passed as CUevent* / hipEvent_t*, */
/* exactly what sync_event holds. Every call may come from any thread.       */
/* ----------------------------------------------------------------------- */

/* Memory kinds, copy directions, pointer kinds (zig/device/runtime.zig). */
#define ABD_MEMORY_DEVICE 0
#define ABD_MEMORY_PINNED 1
#define ABD_MEMORY_MANAGED 2
#define ABD_COPY_HOST_TO_DEVICE 0
#define ABD_COPY_DEVICE_TO_HOST 1
#define ABD_COPY_DEVICE_TO_DEVICE 2
#define ABD_POINTER_HOST 0
#define ABD_POINTER_DEVICE 1
#define ABD_POINTER_PINNED 2
#define ABD_POINTER_MANAGED 3

/* Loads the runtime from `library_path` (NULL or "": $ARROW_DEVICE_CUDA_LIBRARY
 * / $ARROW_DEVICE_HIP_LIBRARY, else the vendors' sonames). A failed load is
 * retried by the next call; a successful one lasts for the process. */
abd_status abd_device_runtime_load(int32_t device_type, const char* library_path);
/* out: device count, driver/runtime version. path_out (may be NULL): the
 * library loaded. */
abd_status abd_device_runtime_info(int32_t device_type, double* out, char* path_out, uint32_t path_capacity);
/* name_out: the device's name; out[0]: total memory in bytes. */
abd_status abd_device_get_info(int32_t device_type, int32_t ordinal, char* name_out, uint32_t name_capacity, double* out);
/* out[0]: the address of `size` new bytes of `memory`; free with
 * abd_device_free and the same kind. */
abd_status abd_device_alloc(int32_t device_type, int32_t device_id, int memory, size_t size, double* out);
abd_status abd_device_free(int32_t device_type, int32_t device_id, int memory, void* address);
/* is_async != 0: enqueued on `stream`; both sides must stay valid and
 * unchanged until the stream (or an event recorded after) completes. */
abd_status abd_device_copy(int32_t device_type, int32_t device_id, int direction, void* dst, const void* src,
                           size_t size, void* stream, int is_async);
abd_status abd_device_stream_create(int32_t device_type, int32_t device_id, double* out);
abd_status abd_device_stream_destroy(int32_t device_type, int32_t device_id, void* stream);
abd_status abd_device_stream_synchronize(int32_t device_type, int32_t device_id, void* stream);
abd_status abd_device_stream_wait_event(int32_t device_type, int32_t device_id, void* stream, void* event);
/* out[0]: a box whose address is a CUevent* / hipEvent_t* (fit for
 * sync_event); the caller owns it: abd_device_event_destroy. */
abd_status abd_device_event_create(int32_t device_type, int32_t device_id, double* out);
abd_status abd_device_event_destroy(void* event_box);
abd_status abd_device_event_record(int32_t device_type, int32_t device_id, void* event, void* stream);
abd_status abd_device_event_synchronize(int32_t device_type, int32_t device_id, void* event);
/* out[0]: 1 if the event fired, else 0. */
abd_status abd_device_event_query(int32_t device_type, int32_t device_id, void* event, double* out);
/* out: pointer kind, Arrow device type of such memory, device ordinal. */
abd_status abd_device_pointer_query(int32_t device_type, const void* address, double* out);

/* Moves the host array in (left released, success or not), copies every
 * buffer to `device_type` memory of `device_id` on `stream`, and exports
 * the copy into the caller's out structs; its sync_event is recorded after
 * the copies; its release frees the device memory and the event. The
 * source is released once the copies out of it are done. */
abd_status abd_device_array_to_device(struct ArrowSchema* schema, struct ArrowDeviceArray* array,
                                      int32_t device_type, int32_t device_id, void* stream,
                                      struct ArrowSchema* out_schema, struct ArrowDeviceArray* out_array);
/* The owner's data as a CPU array in the caller's out structs: device
 * memory copied (waiting on sync_event, sizes read back in one batch),
 * host-visible memory viewed in place. Blocks until done. */
abd_status abd_owner_to_host(abd_owner* owner, void* stream, struct ArrowSchema* out_schema,
                             struct ArrowDeviceArray* out_array);
/* Page-locks host memory the caller owns (cuMemHostRegister_v2 /
 * hipHostRegister); unregister it once, before freeing it. */
abd_status abd_device_host_register(int32_t device_type, int32_t device_id, void* address, size_t size);
abd_status abd_device_host_unregister(int32_t device_type, int32_t device_id, void* address);
/* The pinned staging pool toDevice/toHost use for ordinary host memory:
 * out[0] blocks allocated, out[1] idle blocks freed (when trim != 0),
 * out[2] the block size in bytes. */
abd_status abd_device_staging(int32_t device_type, int trim, double* out);
/* Minimal validation that reads no buffer (for wrapped device memory). */
abd_status abd_device_array_check(struct ArrowSchema* schema, struct ArrowDeviceArray* array);
/* Moving structs the caller holds: bitwise copy to `dst`, then
 * `src->release = NULL`. `dst` must be released (or zeroed); on failure
 * nothing changes. The *_move_child forms move child `index` out of a live
 * parent, which the caller must then release (its release skips the moved
 * child). Any thread. */
abd_status abd_schema_move(struct ArrowSchema* src, struct ArrowSchema* dst);
abd_status abd_array_move(struct ArrowArray* src, struct ArrowArray* dst);
abd_status abd_device_array_move(struct ArrowDeviceArray* src, struct ArrowDeviceArray* dst);
abd_status abd_schema_move_child(struct ArrowSchema* parent, int64_t index, struct ArrowSchema* dst);
abd_status abd_array_move_child(struct ArrowArray* parent, int64_t index, struct ArrowArray* dst);

/* Copies flags, format, name and metadata of every node of `owner` into
 * `out` (layout: zig/schema_info.zig) if `capacity` suffices; returns the
 * bytes needed either way. */
size_t abd_owner_schema_info(abd_owner* owner, uint8_t* out, size_t capacity);

/* An exact key of the schema tree of `owner` (layout: zig/schema_key.zig)
 * as int32 words into `out` if `capacity` suffices; returns the words
 * needed, or 0 when a node is dictionary-encoded. */
uint32_t abd_owner_schema_key(abd_owner* owner, int32_t* out, uint32_t capacity);

/* 1 when `key` (`words` words from abd_owner_schema_key) is the key of the
 * schema tree of `owner`, 0 when not, -1 when the tree has no key. */
int32_t abd_owner_schema_matches(abd_owner* owner, const int32_t* key, uint32_t words);

/* Size of an ArrowSchema.metadata blob within sane limits (0 for NULL), or
 * -1 when its length fields are out of bounds (see abd_last_error). */
double abd_metadata_length(const char* metadata);

/* ----------------------------------------------------------------------- */
/* Streams (zig/stream_export.zig, stream_import.zig, stream_convert.zig)   */
/* ----------------------------------------------------------------------- */

/* The errno a stream callback returns for an abd_status. */
int abd_status_errno(abd_status status);

/* Work queued for the JS thread (js_queue.zig): entries of 3 doubles (tag,
 * key, address). Tags: 1 get_next waiting on a JS-produced stream, 2 a
 * background pull of an imported stream finished. JS thread only. */
void abd_js_queue_set_notifier(void (*notifier)(void));
uint32_t abd_js_queue_take(double* out, uint32_t capacity);
/* Entries in the JS work queue plus released exports not yet drained
 * (lock-free; for JS's polling loop). */
uint32_t abd_js_work_pending(void);
/* JS polls both queues (no wake-ups needed) / stopped polling. */
void abd_js_queue_polling(bool on);
/* How long threads waiting across the JS hand-off spin before sleeping.
 * Any double: NaN and negatives give 0, more than 1 s gives 1 s. */
void abd_set_spin_ns(double nanoseconds);
/* JS enters (true) / leaves (false) a synchronous native call that may wait
 * for consumers of JS-produced streams: meanwhile get_next from another
 * thread fails at once with EDEADLK instead of deadlocking. Returns the
 * number of get_next calls refused so far. JS thread only. */
double abd_js_blocking(bool enter);

/* JS-produced streams. `kind` 0: ArrowArrayStream, 1: ArrowDeviceArrayStream.
 * get_schema, get_last_error and release may be called on any thread;
 * get_next too: on the JS thread it is answered synchronously (sync sources;
 * EDEADLK for async ones), on another thread it blocks until JS answers.
 * Everything below is called by the TS layer, on the JS thread. */
typedef struct abd_stream_producer abd_stream_producer;
void abd_stream_export_set_producer(void (*produce)(double js_key, abd_stream_producer* producer));
abd_status abd_stream_export_create(int kind, int32_t device_type, const uint8_t* schema_plan,
                                    size_t plan_bytes, bool source_is_async, double js_key,
                                    void* out_stream);
abd_status abd_stream_export_deliver(abd_stream_producer* producer, const double* plan,
                                     size_t plan_words, double keepalive_id, int64_t device_id);
abd_status abd_stream_export_end(abd_stream_producer* producer);
abd_status abd_stream_export_fail(abd_stream_producer* producer, int errno_code,
                                  const char* message, size_t message_bytes);
/* As abd_stream_export_create, the schema read (and copied) from `schema`. */
abd_status abd_stream_export_create_from_schema(int kind, int32_t device_type,
                                                const struct ArrowSchema* schema,
                                                bool source_is_async, double js_key,
                                                void* out_stream);
/* Answers get_next by moving `array` (an array made elsewhere, e.g. device
 * memory: device_id and sync_event kept) into the consumer's `out`. Its
 * device_type must be the stream's (CPU for an ArrowArrayStream) and
 * `schema` (optional) must match the stream's formats, child names and
 * dictionaries. On failure the stream fails for good and `array` is left
 * as it was, for its holder to release. */
abd_status abd_stream_export_deliver_array(abd_stream_producer* producer,
                                           const struct ArrowSchema* schema,
                                           struct ArrowDeviceArray* array);

/* Call the stream's release if it is not released; NULL is a no-op. */
void abd_array_stream_release(struct ArrowArrayStream* stream);
void abd_device_array_stream_release(struct ArrowDeviceArrayStream* stream);

/* Imported streams: the producer's stream is moved in (left released,
 * success or not). Batches become owners (one reference, the caller's);
 * owner 0 means the end. Outputs are doubles (addresses fit in 53 bits). */
typedef struct abd_imported_stream abd_imported_stream;
abd_status abd_stream_import(int kind, void* stream, abd_imported_stream** out);
void abd_stream_import_info(abd_imported_stream* stream, double* out /* serial, kind, device_type */);
abd_status abd_stream_import_schema(abd_imported_stream* stream, double* out_schema_address);
abd_status abd_stream_import_next(abd_imported_stream* stream, int level, double* out_owner);
/* A zero-length batch shaped like the stream's schema (position unchanged). */
abd_status abd_stream_import_empty_batch(abd_imported_stream* stream, int level, double* out_owner);
abd_status abd_stream_import_pull(abd_imported_stream* stream, int level);
abd_status abd_stream_import_take_pull(abd_imported_stream* stream, double* out_owner);
/* 0 idle, 1 queued, 2 running, 3 ready (take it with abd_stream_import_take_pull). */
int abd_stream_import_pull_state(abd_imported_stream* stream);
/* The caller will wait: the pull's end is posted to the JS work queue from
 * now on (tag 2). Returns the pull state. */
int abd_stream_import_wait(abd_imported_stream* stream);
/* From now on, each batch the worker pulls is copied to host memory there
 * (as abd_owner_to_host does) and its device batch released once copied. */
void abd_stream_import_copy_pulls_to_host(abd_imported_stream* stream);
const char* abd_stream_import_producer_error(abd_imported_stream* stream, int* out_errno);
void abd_stream_import_release(abd_imported_stream* stream);
abd_status abd_stream_import_move(abd_imported_stream* stream, void* out_stream);

/* Adapters: move `source` in, fill `out`. */
abd_status abd_stream_to_device(struct ArrowArrayStream* source, struct ArrowDeviceArrayStream* out);
abd_status abd_stream_from_device(struct ArrowDeviceArrayStream* source, struct ArrowArrayStream* out);
/* Async device streams (zig/async_consumer.zig, zig/async_producer.zig).   */
/* These are the library's own entry points, called from its JS thread; a  */
/* C peer only ever sees the ArrowAsync* structs above. In both roles, the  */
/* peer's calls (handler callbacks / request, cancel, extract_data) may     */
/* come from any thread.                                                    */
/* ----------------------------------------------------------------------- */

typedef struct abd_async_consumer abd_async_consumer;
typedef struct abd_async_producer abd_async_producer;

/* The callback that wakes JS for the object whose token it receives. */
void abd_js_wake_set_notifier(void (*notifier)(uint32_t token));

/* Deep copy of a schema tree; the copy owns all its memory. */
abd_status abd_schema_copy(const struct ArrowSchema* source, struct ArrowSchema* out);

/* This library as consumer: a handler to give to any producer. */
abd_status abd_async_consumer_create(uint32_t token, abd_async_consumer** out);
struct ArrowAsyncDeviceStreamHandler* abd_async_consumer_handler(abd_async_consumer* consumer);
void abd_async_consumer_poll(abd_async_consumer* consumer, double* out /* 17 words */, int arm);
int abd_async_consumer_request(abd_async_consumer* consumer, uint32_t n);
abd_status abd_async_consumer_take(abd_async_consumer* consumer, struct ArrowSchema* schema,
                                   struct ArrowDeviceArray* array, double* words /* 17, or NULL */);
/* Takes every queued task (up to `capacity`) in one call, each extracted
 * and imported into an owner validated at `level`: out[0] = count, then
 * per task the owner (the caller's reference) and its metadata size (-1:
 * none). `arm` first clears the pending wake; `words` (17) gets the state.
 * Returns the first failure after the tasks taken before it. */
abd_status abd_async_consumer_take_many(abd_async_consumer* consumer, int level, double* out,
                                        uint32_t capacity, int arm, double* words);
/* News the producer sent so far (lock-free), and a wait of up to
 * `window_ns` for more, yielding the CPU meanwhile (1: news came). */
uint32_t abd_async_consumer_news(abd_async_consumer* consumer);
int abd_async_consumer_await_news(abd_async_consumer* consumer, uint32_t seen, double window_ns);
void abd_async_consumer_string(abd_async_consumer* consumer, uint32_t id, double* out /* 2 words */);
void abd_async_consumer_cancel(abd_async_consumer* consumer);
void abd_async_consumer_close(abd_async_consumer* consumer, int handed_out);

/* This library as producer: drives a consumer's handler. */
abd_status abd_async_producer_create(struct ArrowAsyncDeviceStreamHandler* handler,
                                     int32_t device_type, const uint8_t* metadata,
                                     size_t metadata_len, uint32_t token,
                                     abd_async_producer** out);
void abd_async_producer_poll(abd_async_producer* producer, double* out /* 7 words */, int arm);
/* The same 7 words (but the wake count, left 0), kept current under the
 * producer's lock by every request, cancel and send: JS reads its credits
 * and a cancel there without a call between sends. Valid until
 * abd_async_producer_release. */
const double* abd_async_producer_published(abd_async_producer* producer);
/* News (requests, cancel) the consumer sent so far (lock-free), and a wait
 * of up to `window_ns` for more, yielding the CPU meanwhile (1: news came). */
uint32_t abd_async_producer_news(abd_async_producer* producer);
int abd_async_producer_await_news(abd_async_producer* producer, uint32_t seen, double window_ns);
int abd_async_producer_send_schema(abd_async_producer* producer, struct ArrowSchema* schema);
abd_status abd_async_producer_send_plan(abd_async_producer* producer, const double* plan,
                                        size_t plan_words, double keepalive_id,
                                        const char* metadata, int* rc);
abd_status abd_async_producer_send_array(abd_async_producer* producer,
                                         struct ArrowDeviceArray* array, const char* metadata,
                                         int* rc);
int abd_async_producer_send_end(abd_async_producer* producer);
void abd_async_producer_send_error(abd_async_producer* producer, int code, const char* message,
                                   const char* metadata);
void abd_async_producer_release(abd_async_producer* producer);

/* abd_stream_import_next, then abd_owner_snapshot(owner, out, capacity, 2) of
 * the new batch, in one call: head[0] = owner (0 at the end), head[1] = the
 * words its snapshot needs (nothing written to out when over capacity). */
abd_status abd_stream_import_next_snapshot(abd_imported_stream* stream, int level, double* out,
                                           uint32_t capacity, double* head);

/* ADBC (zig/adbc/): the struct types are arrow-adbc's adbc.h (1.1.0); here
 * they are opaque. A driver is loaded once per database and unloaded after
 * its last object; each object is a zeroed AdbcDatabase / AdbcConnection /
 * AdbcStatement at offset 0 followed by its guard (one call at a time). */
typedef struct abd_adbc_driver abd_adbc_driver;
typedef struct abd_adbc_object abd_adbc_object;
typedef struct abd_adbc_job abd_adbc_job;
/* dlopen(path), entrypoint (NULL: AdbcDriverInit) at 1.1.0 else 1.0.0, the
 * function table checked; *out owns it (its AdbcDriver table at offset 0). */
abd_status abd_adbc_driver_load(const char* path, const char* entrypoint, abd_adbc_driver** out);
int abd_adbc_driver_version(const abd_adbc_driver* driver);
void abd_adbc_driver_unload(abd_adbc_driver* driver);
abd_adbc_object* abd_adbc_object_new(void);
void abd_adbc_object_free(abd_adbc_object* object);
/* Enters the guard (NULL: none), calls function(words...) with n (1..9)
 * integer arguments given as doubles, leaves it. Returns the
 * AdbcStatusCode, or -1 (abd_last_error) when refused or misused. */
int abd_adbc_call(abd_adbc_object* guard, const void* function, const double* words, uint32_t n);
int abd_adbc_call_double(abd_adbc_object* guard, const void* function, void* handle, const char* key,
                         double value, void* error);
/* The call on a thread of its own; the JS thread's queue gets
 * (adbc_call_done, key, job) and abd_adbc_job_finish returns its status. */
abd_adbc_job* abd_adbc_call_async(abd_adbc_object* guard, const void* function, const double* words,
                                  uint32_t n, double key);
int abd_adbc_job_finish(abd_adbc_job* job);
/* An AdbcError of a call into driver: reset it, or read it into a malloc'd
 * blob (free with abd_free), releasing it exactly once. */
void abd_adbc_error_reset(const abd_adbc_driver* driver, void* error);
uint8_t* abd_adbc_error_take(const abd_adbc_driver* driver, void* error, double* size_out);
double abd_adbc_errors_released(void);
/* Result streams whose failing get_next keeps the driver's AdbcError
 * (ErrorFromArrayStream): wrap the stream in place (NULL: the driver
 * offers none), take the latest failure (out: blob size, AdbcStatusCode,
 * get_next's errno; free the blob with abd_free), drop the slot. */
typedef struct abd_adbc_result_slot abd_adbc_result_slot;
abd_adbc_result_slot* abd_adbc_result_stream(const abd_adbc_driver* driver, struct ArrowArrayStream* stream);
uint8_t* abd_adbc_result_error(abd_adbc_result_slot* slot, double* out);
void abd_adbc_result_slot_release(abd_adbc_result_slot* slot);
/* A connection other JS threads may borrow until its owner retires it;
 * a borrow by address (out[0]: the driver), refused when the address names
 * no shared connection. Cancel without entering the connection's guard. */
abd_status abd_adbc_object_share(abd_adbc_object* object, abd_adbc_driver* driver);
abd_status abd_adbc_object_borrow(double address, double* out);
abd_status abd_adbc_object_retire(abd_adbc_object* object);
int abd_adbc_call_cancel(abd_adbc_object* object, const void* function, const double* words, uint32_t n);
double abd_adbc_object_refused(const abd_adbc_object* object);
/* Moves schema into a new stream with that schema and no batches. */
abd_status abd_adbc_schema_stream(struct ArrowSchema* schema, struct ArrowArrayStream* out);
/* Calls an AdbcPartitions' release once. */
void abd_adbc_partitions_release(void* partitions);

#ifdef __cplusplus
}
#endif

#endif /* BUN_ARROW_DEVICE_H */
