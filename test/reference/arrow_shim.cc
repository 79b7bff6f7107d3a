// The Arrow C++ reference shim (see arrow_shim.h for the API and its
// ownership rules). Built by scripts/build-reference-shim.sh with the system
// g++ against the libarrow of the pyarrow wheel; loaded by the Bun tests.
//
// Layout of this file: error plumbing; the gold data (Arrow C++'s own read
// of IPC bytes); checks (validate + compare); exports; held imports;
// streams; async; jobs. Internal functions return arrow::Status/Result; the
// extern "C" functions at the bottom of each section only check arguments
// and translate, inside `guarded`, so no exception crosses the C boundary.

#include "arrow_shim.h"

#include <arrow/api.h>
#include <arrow/c/abi.h>
#include <arrow/c/bridge.h>
#include <arrow/config.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/api.h>
#include <arrow/util/async_generator.h>
#include <arrow/util/future.h>
#include <arrow/util/key_value_metadata.h>
#include <arrow/util/thread_pool.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#define SHIM_API extern "C" __attribute__((visibility("default")))

namespace {

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

thread_local std::string last_error;

// Longest message kept for one check word (a Diff of big arrays is huge).
constexpr size_t kMessageBytesMax = 4000;

std::string clipped(std::string text) {
  if (text.size() > kMessageBytesMax) {
    text.resize(kMessageBytesMax);
    text += " ...";
  }
  return text;
}

int fail(int status, std::string message) {
  last_error = std::move(message);
  return status;
}

int report(const arrow::Status& status) {
  if (status.ok()) return SHIM_OK;
  return fail(SHIM_ARROW_ERROR, status.ToString());
}

// Runs `body` (returning an int status), turning any C++ exception into
// SHIM_INTERNAL: nothing may unwind through a C caller.
template <typename Body>
int guarded(Body&& body) noexcept {
  try {
    return body();
  } catch (const std::exception& e) {
    return fail(SHIM_INTERNAL, std::string("C++ exception in the Arrow shim: ") + e.what());
  } catch (...) {
    return fail(SHIM_INTERNAL, "unknown C++ exception in the Arrow shim");
  }
}

std::atomic<int64_t> live_ipc{0};
std::atomic<int64_t> live_jobs{0};

// ---------------------------------------------------------------------------
// Gold data: Arrow C++'s own read of IPC stream bytes
// ---------------------------------------------------------------------------

// Immutable once built; shared (shared_ptr) by handles, streams and jobs so
// that none of them outlives the batches it points into.
struct GoldData {
  std::shared_ptr<arrow::Schema> schema;
  std::vector<std::shared_ptr<arrow::RecordBatch>> batches;
  // Arrow C++'s ValidateFull verdict on each of its own batches.
  std::vector<arrow::Status> verdicts;
};

using Gold = std::shared_ptr<const GoldData>;

std::shared_ptr<GoldData> with_verdicts(std::shared_ptr<GoldData> data) {
  data->verdicts.clear();
  for (const auto& batch : data->batches) data->verdicts.push_back(batch->ValidateFull());
  return data;
}

arrow::Result<Gold> read_gold(const uint8_t* bytes, int64_t size) {
  // Copy: the batches are zero-copy slices of this buffer, and the caller's
  // memory (a JS ArrayBuffer) is not ours to keep.
  ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::Buffer> copy, arrow::AllocateBuffer(size));
  if (size > 0) std::memcpy(copy->mutable_data(), bytes, static_cast<size_t>(size));
  auto input = std::make_shared<arrow::io::BufferReader>(copy);
  ARROW_ASSIGN_OR_RAISE(auto reader, arrow::ipc::RecordBatchStreamReader::Open(input));
  auto data = std::make_shared<GoldData>();
  data->schema = reader->schema();
  ARROW_ASSIGN_OR_RAISE(data->batches, reader->ToRecordBatches());
  return with_verdicts(std::move(data));
}

Gold slice_gold(const GoldData& source, int64_t offset, int64_t length) {
  auto data = std::make_shared<GoldData>();
  data->schema = source.schema;
  for (const auto& batch : source.batches) {
    int64_t rows = batch->num_rows();
    int64_t start = std::min(offset, rows);
    data->batches.push_back(batch->Slice(start, std::min(length, rows - start)));
  }
  return with_verdicts(std::move(data));
}

bool has_batch(const GoldData& data, int64_t batch) {
  return batch >= 0 && batch < static_cast<int64_t>(data.batches.size());
}

}  // namespace

// A caller's handle on gold data.
struct shim_ipc {
  Gold data;
};

namespace {

// ---------------------------------------------------------------------------
// Checks: ValidateFull + Equals against the reference read
// ---------------------------------------------------------------------------

struct Verdict {
  bool flags[SHIM_CHECK_WORDS] = {false, false, false, false};
  std::string messages[SHIM_CHECK_WORDS];

  bool passed() const {
    return flags[SHIM_CHECK_VALID] == flags[SHIM_CHECK_REFERENCE_VALID] && flags[SHIM_CHECK_EQUAL];
  }
  void set(int word, bool ok, std::string why) {
    flags[word] = ok;
    messages[word] = ok ? std::string() : clipped(std::move(why));
  }
  void write(int32_t* out) const {
    for (int i = 0; i < SHIM_CHECK_WORDS; i++) out[i] = flags[i] ? 1 : 0;
  }
};

thread_local Verdict last_check;

arrow::EqualOptions equal_options() { return arrow::EqualOptions::Defaults().nans_equal(true); }

std::string array_difference(const arrow::Array& ours, const arrow::Array& reference) {
  if (ours.length() != reference.length()) {
    return "length " + std::to_string(ours.length()) + " != reference length " +
           std::to_string(reference.length());
  }
  if (!ours.type()->Equals(*reference.type())) {
    return "type " + ours.type()->ToString() + " != reference type " + reference.type()->ToString();
  }
  return ours.Diff(reference);
}

void judge_batch_data(const arrow::RecordBatch& ours, const arrow::RecordBatch& reference,
                      Verdict& verdict) {
  if (ours.num_columns() != reference.num_columns()) {
    verdict.set(SHIM_CHECK_EQUAL, false,
                std::to_string(ours.num_columns()) + " columns, the reference has " +
                    std::to_string(reference.num_columns()));
    return;
  }
  if (ours.num_rows() != reference.num_rows()) {
    verdict.set(SHIM_CHECK_EQUAL, false,
                std::to_string(ours.num_rows()) + " rows, the reference has " +
                    std::to_string(reference.num_rows()));
    return;
  }
  for (int c = 0; c < ours.num_columns(); c++) {
    if (!ours.column(c)->Equals(*reference.column(c), equal_options())) {
      verdict.set(SHIM_CHECK_EQUAL, false,
                  "column " + std::to_string(c) + " \"" + reference.schema()->field(c)->name() +
                      "\" differs: " + array_difference(*ours.column(c), *reference.column(c)));
      return;
    }
  }
  verdict.set(SHIM_CHECK_EQUAL, true, "");
}

Verdict judge_batch(const arrow::RecordBatch& ours, const GoldData& gold, int64_t batch) {
  Verdict verdict;
  arrow::Status valid = ours.ValidateFull();
  verdict.set(SHIM_CHECK_VALID, valid.ok(), valid.ToString());
  if (!has_batch(gold, batch)) {
    std::string why = "the reference has no batch " + std::to_string(batch);
    verdict.set(SHIM_CHECK_REFERENCE_VALID, false, why);
    verdict.set(SHIM_CHECK_EQUAL, false, why);
    verdict.set(SHIM_CHECK_SCHEMA_EQUAL, false, why);
    return verdict;
  }
  const arrow::Status& reference_valid = gold.verdicts[batch];
  verdict.set(SHIM_CHECK_REFERENCE_VALID, reference_valid.ok(), reference_valid.ToString());
  judge_batch_data(ours, *gold.batches[batch], verdict);
  bool schema_equal = ours.schema()->Equals(*gold.schema, /*check_metadata=*/true);
  verdict.set(SHIM_CHECK_SCHEMA_EQUAL, schema_equal,
              "schema differs:\n" + ours.schema()->ToString(/*show_metadata=*/true) +
                  "\nreference:\n" + gold.schema->ToString(/*show_metadata=*/true));
  return verdict;
}

// The reference for an array check: column `column` of batch i, or the
// whole batch as a struct array (field "", not nullable, schema metadata:
// what ExportRecordBatch's schema describes) for column -1.
struct ReferenceArray {
  std::shared_ptr<arrow::Array> array;
  std::shared_ptr<arrow::Field> field;
};

arrow::Result<ReferenceArray> reference_array(const GoldData& gold, int64_t batch, int32_t column) {
  if (!has_batch(gold, batch)) return arrow::Status::IndexError("the reference has no batch ", batch);
  const auto& source = gold.batches[batch];
  if (column == -1) {
    ARROW_ASSIGN_OR_RAISE(auto array, source->ToStructArray());
    auto field = arrow::field("", array->type(), /*nullable=*/false, gold.schema->metadata());
    return ReferenceArray{std::move(array), std::move(field)};
  }
  if (column < 0 || column >= source->num_columns()) {
    return arrow::Status::IndexError("the reference has no column ", column);
  }
  return ReferenceArray{source->column(column), gold.schema->field(column)};
}

Verdict judge_array(const arrow::Array& ours, const arrow::Field& ours_field, const GoldData& gold,
                    int64_t batch, int32_t column) {
  Verdict verdict;
  arrow::Status valid = ours.ValidateFull();
  verdict.set(SHIM_CHECK_VALID, valid.ok(), valid.ToString());
  auto reference = reference_array(gold, batch, column);
  if (!reference.ok()) {
    std::string why = reference.status().ToString();
    verdict.set(SHIM_CHECK_REFERENCE_VALID, false, why);
    verdict.set(SHIM_CHECK_EQUAL, false, why);
    verdict.set(SHIM_CHECK_SCHEMA_EQUAL, false, why);
    return verdict;
  }
  arrow::Status reference_valid = reference->array->ValidateFull();
  verdict.set(SHIM_CHECK_REFERENCE_VALID, reference_valid.ok(), reference_valid.ToString());
  bool equal = ours.Equals(*reference->array, equal_options());
  verdict.set(SHIM_CHECK_EQUAL, equal, equal ? "" : array_difference(ours, *reference->array));
  bool field_equal = ours_field.Equals(*reference->field, /*check_metadata=*/true);
  verdict.set(SHIM_CHECK_SCHEMA_EQUAL, field_equal,
              "field differs: " + ours_field.ToString(/*show_metadata=*/true) +
                  " vs reference " + reference->field->ToString(/*show_metadata=*/true));
  return verdict;
}

int publish(Verdict verdict, int32_t* out) {
  verdict.write(out);
  last_check = std::move(verdict);
  return SHIM_OK;
}

// An import that is either a record batch or an array with its field.
struct Imported {
  std::shared_ptr<arrow::RecordBatch> batch;
  std::shared_ptr<arrow::Array> array;
  std::shared_ptr<arrow::Field> field;
};

arrow::Result<Imported> import_device_array(struct ArrowSchema* schema, struct ArrowDeviceArray* array) {
  // ImportField keeps the name and metadata that ImportDeviceArray's own
  // schema import (ImportType) would drop. Both structs are consumed even on
  // failure, as Arrow C++'s importers do.
  auto field = arrow::ImportField(schema);
  if (!field.ok()) {
    if (array->array.release != nullptr) array->array.release(&array->array);
    return field.status();
  }
  ARROW_ASSIGN_OR_RAISE(auto imported, arrow::ImportDeviceArray(array, (*field)->type()));
  return Imported{nullptr, std::move(imported), *field};
}

Verdict judge(const Imported& imported, const GoldData& gold, int64_t batch, int32_t column) {
  if (imported.batch && column == -1) return judge_batch(*imported.batch, gold, batch);
  if (imported.batch) {
    Verdict verdict;
    verdict.set(SHIM_CHECK_VALID, false, "a held record batch is checked as a whole (column -1)");
    return verdict;
  }
  return judge_array(*imported.array, *imported.field, gold, batch, column);
}

}  // namespace

// ---------------------------------------------------------------------------
// C API: general, gold data
// ---------------------------------------------------------------------------

SHIM_API const char* shim_last_error(void) { return last_error.c_str(); }

SHIM_API const char* shim_arrow_version(void) {
  static const std::string version = arrow::GetBuildInfo().version_string;
  return version.c_str();
}

SHIM_API int64_t shim_live_ipc(void) { return live_ipc.load(); }
SHIM_API int64_t shim_live_jobs(void) { return live_jobs.load(); }

SHIM_API void* shim_alloc(int64_t bytes) { return bytes > 0 ? std::calloc(1, static_cast<size_t>(bytes)) : nullptr; }
SHIM_API void shim_free(void* memory) { std::free(memory); }

SHIM_API void shim_release_schema(struct ArrowSchema* schema) {
  if (schema != nullptr && schema->release != nullptr) schema->release(schema);
}
SHIM_API void shim_release_array(struct ArrowArray* array) {
  if (array != nullptr && array->release != nullptr) array->release(array);
}
SHIM_API void shim_release_stream(struct ArrowArrayStream* stream) {
  if (stream != nullptr && stream->release != nullptr) stream->release(stream);
}
SHIM_API void shim_release_device_stream(struct ArrowDeviceArrayStream* stream) {
  if (stream != nullptr && stream->release != nullptr) stream->release(stream);
}

SHIM_API int shim_ipc_read(const uint8_t* bytes, int64_t size, shim_ipc** out) {
  return guarded([&]() -> int {
    if (out == nullptr || size < 0 || (bytes == nullptr && size > 0)) {
      return fail(SHIM_BAD_ARGUMENT, "shim_ipc_read: needs bytes, a size >= 0 and an out pointer");
    }
    *out = nullptr;
    auto data = read_gold(bytes, size);
    if (!data.ok()) return report(data.status());
    *out = new shim_ipc{std::move(*data)};
    live_ipc++;
    return SHIM_OK;
  });
}

SHIM_API int shim_ipc_slice(const shim_ipc* ipc, int64_t offset, int64_t length, shim_ipc** out) {
  return guarded([&]() -> int {
    if (ipc == nullptr || out == nullptr || offset < 0 || length < 0) {
      return fail(SHIM_BAD_ARGUMENT, "shim_ipc_slice: needs a handle, offset >= 0, length >= 0, an out pointer");
    }
    *out = new shim_ipc{slice_gold(*ipc->data, offset, length)};
    live_ipc++;
    return SHIM_OK;
  });
}

SHIM_API int shim_ipc_empty(const shim_ipc* ipc, shim_ipc** out) {
  return guarded([&]() -> int {
    if (ipc == nullptr || out == nullptr) return fail(SHIM_BAD_ARGUMENT, "shim_ipc_empty: null argument");
    auto empty = arrow::RecordBatch::MakeEmpty(ipc->data->schema);
    if (!empty.ok()) return report(empty.status());
    auto data = std::make_shared<GoldData>();
    data->schema = ipc->data->schema;
    data->batches.push_back(std::move(*empty));
    *out = new shim_ipc{with_verdicts(std::move(data))};
    live_ipc++;
    return SHIM_OK;
  });
}

SHIM_API void shim_ipc_free(shim_ipc* ipc) {
  if (ipc == nullptr) return;
  delete ipc;
  live_ipc--;
}

SHIM_API int64_t shim_ipc_batch_count(const shim_ipc* ipc) {
  return ipc ? static_cast<int64_t>(ipc->data->batches.size()) : -1;
}

SHIM_API int64_t shim_ipc_batch_length(const shim_ipc* ipc, int64_t batch) {
  if (ipc == nullptr || !has_batch(*ipc->data, batch)) return -1;
  return ipc->data->batches[batch]->num_rows();
}

SHIM_API int32_t shim_ipc_column_count(const shim_ipc* ipc) {
  return ipc ? ipc->data->schema->num_fields() : -1;
}

SHIM_API int shim_ipc_reference_validation(const shim_ipc* ipc, int64_t batch) {
  return guarded([&]() -> int {
    if (ipc == nullptr || !has_batch(*ipc->data, batch)) {
      return fail(SHIM_BAD_ARGUMENT, "shim_ipc_reference_validation: no such batch");
    }
    return report(ipc->data->verdicts[batch]);
  });
}

SHIM_API const char* shim_ipc_describe(const shim_ipc* ipc, int64_t batch) {
  thread_local std::string text;
  try {
    if (ipc == nullptr) {
      text = "(no handle)";
    } else if (batch < 0) {
      text = ipc->data->schema->ToString(/*show_metadata=*/true);
    } else if (!has_batch(*ipc->data, batch)) {
      text = "(no batch " + std::to_string(batch) + ")";
    } else {
      text = clipped(ipc->data->batches[batch]->ToString());
    }
  } catch (...) {
    text = "(could not describe)";
  }
  return text.c_str();
}

// ---------------------------------------------------------------------------
// C API: Arrow C++ as producer
// ---------------------------------------------------------------------------

SHIM_API int shim_ipc_export_schema(const shim_ipc* ipc, struct ArrowSchema* out) {
  return guarded([&]() -> int {
    if (ipc == nullptr || out == nullptr) return fail(SHIM_BAD_ARGUMENT, "shim_ipc_export_schema: null argument");
    return report(arrow::ExportSchema(*ipc->data->schema, out));
  });
}

SHIM_API int shim_ipc_export_batch(const shim_ipc* ipc, int64_t batch, struct ArrowSchema* out_schema,
                                   struct ArrowArray* out) {
  return guarded([&]() -> int {
    if (ipc == nullptr || out == nullptr || !has_batch(*ipc->data, batch)) {
      return fail(SHIM_BAD_ARGUMENT, "shim_ipc_export_batch: no such batch, or no out struct");
    }
    return report(arrow::ExportRecordBatch(*ipc->data->batches[batch], out, out_schema));
  });
}

SHIM_API int shim_ipc_export_device_batch(const shim_ipc* ipc, int64_t batch, struct ArrowSchema* out_schema,
                                          struct ArrowDeviceArray* out) {
  return guarded([&]() -> int {
    if (ipc == nullptr || out == nullptr || !has_batch(*ipc->data, batch)) {
      return fail(SHIM_BAD_ARGUMENT, "shim_ipc_export_device_batch: no such batch, or no out struct");
    }
    const auto& source = ipc->data->batches[batch];
    return report(arrow::ExportDeviceRecordBatch(*source, source->GetSyncEvent(), out, out_schema));
  });
}

namespace {

// Exports an array and its field (name and metadata kept) as a device array.
arrow::Status export_device_field(const arrow::Array& array, const arrow::Field& field,
                                  struct ArrowSchema* out_schema, struct ArrowDeviceArray* out) {
  if (out_schema != nullptr) RETURN_NOT_OK(arrow::ExportField(field, out_schema));
  arrow::Status status = arrow::ExportDeviceArray(array, nullptr, out);
  if (!status.ok() && out_schema != nullptr && out_schema->release != nullptr) {
    out_schema->release(out_schema);
  }
  return status;
}

}  // namespace

SHIM_API int shim_ipc_export_device_column(const shim_ipc* ipc, int64_t batch, int32_t column,
                                           struct ArrowSchema* out_schema, struct ArrowDeviceArray* out) {
  return guarded([&]() -> int {
    if (ipc == nullptr || out == nullptr) return fail(SHIM_BAD_ARGUMENT, "shim_ipc_export_device_column: null argument");
    auto reference = reference_array(*ipc->data, batch, column);
    if (!reference.ok()) return fail(SHIM_BAD_ARGUMENT, reference.status().ToString());
    return report(export_device_field(*reference->array, *reference->field, out_schema, out));
  });
}

namespace {

// Appends one node and its subtree (children, then dictionary) in preorder.
// Returns false when the tree nests absurdly deep (a cycle or garbage).
bool layout_node(const struct ArrowArray* node, std::vector<double>& words, int depth) {
  if (node == nullptr || depth > 64) return false;
  words.push_back(static_cast<double>(node->length));
  words.push_back(static_cast<double>(node->null_count));
  words.push_back(static_cast<double>(node->offset));
  words.push_back(static_cast<double>(node->n_buffers));
  words.push_back(static_cast<double>(node->n_children));
  words.push_back(node->dictionary != nullptr ? 1.0 : 0.0);
  for (int64_t b = 0; b < node->n_buffers; b++) {
    words.push_back(static_cast<double>(reinterpret_cast<uintptr_t>(node->buffers[b])));
  }
  for (int64_t c = 0; c < node->n_children; c++) {
    if (!layout_node(node->children[c], words, depth + 1)) return false;
  }
  if (node->dictionary != nullptr && !layout_node(node->dictionary, words, depth + 1)) return false;
  return true;
}

}  // namespace

SHIM_API int shim_c_array_layout(const struct ArrowArray* array, double* out, int64_t capacity,
                                 int64_t* out_words) {
  return guarded([&]() -> int {
    if (array == nullptr || out_words == nullptr || (out == nullptr && capacity > 0)) {
      return fail(SHIM_BAD_ARGUMENT, "shim_c_array_layout: null argument");
    }
    if (array->release == nullptr) return fail(SHIM_BAD_ARGUMENT, "shim_c_array_layout: the array is released");
    std::vector<double> words;
    if (!layout_node(array, words, 0)) return fail(SHIM_BAD_ARGUMENT, "shim_c_array_layout: malformed tree");
    *out_words = static_cast<int64_t>(words.size());
    if (*out_words > capacity) {
      return fail(SHIM_BAD_ARGUMENT, "shim_c_array_layout: needs " + std::to_string(words.size()) +
                                         " words, capacity is " + std::to_string(capacity));
    }
    std::copy(words.begin(), words.end(), out);
    return SHIM_OK;
  });
}

// ---------------------------------------------------------------------------
// C API: Arrow C++ as consumer (checks)
// ---------------------------------------------------------------------------

SHIM_API int shim_check_device_batch(const shim_ipc* reference, int64_t batch, struct ArrowSchema* schema,
                                     struct ArrowDeviceArray* array, int32_t* out) {
  return guarded([&]() -> int {
    if (reference == nullptr || schema == nullptr || array == nullptr || out == nullptr) {
      return fail(SHIM_BAD_ARGUMENT, "shim_check_device_batch: null argument");
    }
    auto imported = arrow::ImportDeviceRecordBatch(array, schema);
    if (!imported.ok()) return report(imported.status());
    return publish(judge_batch(**imported, *reference->data, batch), out);
  });
}

SHIM_API int shim_check_batch(const shim_ipc* reference, int64_t batch, struct ArrowSchema* schema,
                              struct ArrowArray* array, int32_t* out) {
  return guarded([&]() -> int {
    if (reference == nullptr || schema == nullptr || array == nullptr || out == nullptr) {
      return fail(SHIM_BAD_ARGUMENT, "shim_check_batch: null argument");
    }
    auto imported = arrow::ImportRecordBatch(array, schema);
    if (!imported.ok()) return report(imported.status());
    return publish(judge_batch(**imported, *reference->data, batch), out);
  });
}

SHIM_API int shim_check_device_array(const shim_ipc* reference, int64_t batch, int32_t column,
                                     struct ArrowSchema* schema, struct ArrowDeviceArray* array, int32_t* out) {
  return guarded([&]() -> int {
    if (reference == nullptr || schema == nullptr || array == nullptr || out == nullptr) {
      return fail(SHIM_BAD_ARGUMENT, "shim_check_device_array: null argument");
    }
    auto imported = import_device_array(schema, array);
    if (!imported.ok()) return report(imported.status());
    return publish(judge(*imported, *reference->data, batch, column), out);
  });
}

SHIM_API const char* shim_check_message(int32_t which) {
  if (which < 0 || which >= SHIM_CHECK_WORDS) return "";
  return last_check.messages[which].c_str();
}

SHIM_API void shim_check_flags(int32_t* out) {
  if (out != nullptr) last_check.write(out);
}

// ---------------------------------------------------------------------------
// Held imports
// ---------------------------------------------------------------------------

namespace {

std::mutex held_mutex;
std::map<int64_t, Imported> held;  // guarded by held_mutex
int64_t next_held_id = 1;          // guarded by held_mutex

int64_t hold(Imported imported) {
  std::lock_guard<std::mutex> lock(held_mutex);
  int64_t id = next_held_id++;
  held.emplace(id, std::move(imported));
  return id;
}

// A copy of the held import (shared_ptrs), or nullopt for an unknown id.
std::optional<Imported> find_held(int64_t id) {
  std::lock_guard<std::mutex> lock(held_mutex);
  auto it = held.find(id);
  if (it == held.end()) return std::nullopt;
  return it->second;
}

int unknown_id(const char* function, int64_t id) {
  return fail(SHIM_BAD_ARGUMENT, std::string(function) + ": no held import with id " + std::to_string(id));
}

}  // namespace

SHIM_API int shim_hold_device_batch(struct ArrowSchema* schema, struct ArrowDeviceArray* array,
                                    int64_t* out_id) {
  return guarded([&]() -> int {
    if (schema == nullptr || array == nullptr || out_id == nullptr) {
      return fail(SHIM_BAD_ARGUMENT, "shim_hold_device_batch: null argument");
    }
    auto imported = arrow::ImportDeviceRecordBatch(array, schema);
    if (!imported.ok()) return report(imported.status());
    *out_id = hold(Imported{std::move(*imported), nullptr, nullptr});
    return SHIM_OK;
  });
}

SHIM_API int shim_hold_device_array(struct ArrowSchema* schema, struct ArrowDeviceArray* array,
                                    int64_t* out_id) {
  return guarded([&]() -> int {
    if (schema == nullptr || array == nullptr || out_id == nullptr) {
      return fail(SHIM_BAD_ARGUMENT, "shim_hold_device_array: null argument");
    }
    auto imported = import_device_array(schema, array);
    if (!imported.ok()) return report(imported.status());
    *out_id = hold(std::move(*imported));
    return SHIM_OK;
  });
}

SHIM_API int shim_held_validate(int64_t id) {
  return guarded([&]() -> int {
    auto imported = find_held(id);
    if (!imported) return unknown_id("shim_held_validate", id);
    return report(imported->batch ? imported->batch->ValidateFull() : imported->array->ValidateFull());
  });
}

SHIM_API int shim_held_validate_quick(int64_t id) {
  return guarded([&]() -> int {
    auto imported = find_held(id);
    if (!imported) return unknown_id("shim_held_validate_quick", id);
    return report(imported->batch ? imported->batch->Validate() : imported->array->Validate());
  });
}

SHIM_API int shim_held_check(int64_t id, const shim_ipc* reference, int64_t batch, int32_t column,
                             int32_t* out) {
  return guarded([&]() -> int {
    if (reference == nullptr || out == nullptr) return fail(SHIM_BAD_ARGUMENT, "shim_held_check: null argument");
    auto imported = find_held(id);
    if (!imported) return unknown_id("shim_held_check", id);
    return publish(judge(*imported, *reference->data, batch, column), out);
  });
}

SHIM_API int shim_held_export_device(int64_t id, struct ArrowSchema* out_schema, struct ArrowDeviceArray* out) {
  return guarded([&]() -> int {
    if (out == nullptr) return fail(SHIM_BAD_ARGUMENT, "shim_held_export_device: null argument");
    auto imported = find_held(id);
    if (!imported) return unknown_id("shim_held_export_device", id);
    if (imported->batch) {
      return report(arrow::ExportDeviceRecordBatch(*imported->batch, imported->batch->GetSyncEvent(), out,
                                                   out_schema));
    }
    return report(export_device_field(*imported->array, *imported->field, out_schema, out));
  });
}

SHIM_API int shim_held_drop(int64_t id) {
  return guarded([&]() -> int {
    std::optional<Imported> dropped;
    {
      std::lock_guard<std::mutex> lock(held_mutex);
      auto it = held.find(id);
      if (it == held.end()) return unknown_id("shim_held_drop", id);
      dropped = std::move(it->second);
      held.erase(it);
    }
    // Destroyed here, outside the lock: this may run the producer's release.
    dropped.reset();
    return SHIM_OK;
  });
}

SHIM_API int64_t shim_held_count(void) {
  std::lock_guard<std::mutex> lock(held_mutex);
  return static_cast<int64_t>(held.size());
}

// ---------------------------------------------------------------------------
// Streams
// ---------------------------------------------------------------------------

namespace {

// The gold batches as a source: the first `limit` batches, then the end or
// (with a failure text) an IOError on every later pull.
class GoldSource {
 public:
  GoldSource(Gold data, int64_t batch_count, const char* fail_message) : data_(std::move(data)) {
    int64_t available = static_cast<int64_t>(data_->batches.size());
    limit_ = batch_count < 0 ? available : std::min(batch_count, available);
    if (fail_message != nullptr) failure_ = std::string(fail_message);
  }

  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Next() {
    if (next_ < limit_) return data_->batches[next_++];
    if (failure_) return arrow::Status::IOError(*failure_);
    return std::shared_ptr<arrow::RecordBatch>();
  }

  const std::shared_ptr<arrow::Schema>& schema() const { return data_->schema; }
  int64_t handed_out() const { return next_; }

 private:
  Gold data_;
  int64_t limit_ = 0;
  int64_t next_ = 0;
  std::optional<std::string> failure_;
};

class GoldReader : public arrow::RecordBatchReader {
 public:
  explicit GoldReader(GoldSource source) : source_(std::move(source)) {}
  std::shared_ptr<arrow::Schema> schema() const override { return source_.schema(); }
  arrow::Status ReadNext(std::shared_ptr<arrow::RecordBatch>* batch) override {
    ARROW_ASSIGN_OR_RAISE(*batch, source_.Next());
    return arrow::Status::OK();
  }

 private:
  GoldSource source_;
};

// What a consumer saw: counts, the failure, and the first failing check.
struct Report {
  int64_t words[SHIM_REPORT_WORDS] = {0, 0, -1, 0, 0, -1, -1, 0, -1, -1};
  int status = SHIM_OK;
  std::string message;
  Verdict first_failure;

  // Records batch number `index`, checked against `reference` (if any).
  void add_batch(const arrow::RecordBatch& batch, const GoldData* reference) {
    int64_t index = words[SHIM_REPORT_BATCHES]++;
    Verdict verdict;
    if (reference != nullptr) {
      verdict = judge_batch(batch, *reference, index);
    } else {
      arrow::Status valid = batch.ValidateFull();
      verdict.set(SHIM_CHECK_VALID, valid.ok(), valid.ToString());
      verdict.set(SHIM_CHECK_REFERENCE_VALID, true, "");
      verdict.set(SHIM_CHECK_EQUAL, true, "");
      verdict.set(SHIM_CHECK_SCHEMA_EQUAL, true, "");
    }
    bool passed = verdict.passed() && (reference == nullptr || has_batch(*reference, index));
    if (passed) {
      words[SHIM_REPORT_PASSED]++;
    } else if (words[SHIM_REPORT_FIRST_FAILED] < 0) {
      words[SHIM_REPORT_FIRST_FAILED] = index;
      first_failure = std::move(verdict);
    }
  }

  void add_schema(const arrow::Schema& schema, const GoldData* reference) {
    if (reference == nullptr) return;
    words[SHIM_REPORT_SCHEMA_EQUAL] = schema.Equals(*reference->schema, /*check_metadata=*/true) ? 1 : 0;
  }

  // A failure that came from the producer: its message is kept intact.
  void add_failure(const arrow::Status& status) {
    this->status = SHIM_ARROW_ERROR;
    message = status.message();
    words[SHIM_REPORT_STATUS_CODE] = static_cast<int64_t>(status.code());
    auto detail = status.detail();
    if (detail && std::strcmp(detail->type_id(), "AsyncErrorDetail") == 0) {
      const auto& async = static_cast<const arrow::AsyncErrorDetail&>(*detail);
      words[SHIM_REPORT_ASYNC_CODE] = async.code();
      words[SHIM_REPORT_ERROR_METADATA_BYTES] = static_cast<int64_t>(async.ErrorMetadataString().size());
    }
  }

  int publish(int64_t* out) const {
    if (out != nullptr) std::copy(std::begin(words), std::end(words), out);
    last_check = first_failure;
    if (status != SHIM_OK) last_error = message;
    return status;
  }
};

// Reads an imported reader: up to max_batches (-1: to the end), then closes
// it (which releases the C stream).
Report read_stream(arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> opened, const GoldData* reference,
                   int64_t max_batches) {
  Report report;
  if (!opened.ok()) {
    report.add_failure(opened.status());
    return report;
  }
  auto reader = std::move(*opened);
  report.words[SHIM_REPORT_DEVICE_TYPE] = static_cast<int64_t>(reader->device_type());
  report.add_schema(*reader->schema(), reference);
  while (max_batches < 0 || report.words[SHIM_REPORT_BATCHES] < max_batches) {
    std::shared_ptr<arrow::RecordBatch> batch;
    arrow::Status status = reader->ReadNext(&batch);
    if (!status.ok()) {
      report.add_failure(status);
      break;
    }
    if (batch == nullptr) {
      report.words[SHIM_REPORT_ENDED] = 1;
      break;
    }
    report.add_batch(*batch, reference);
  }
  arrow::Status closed = reader->Close();
  if (!closed.ok() && report.status == SHIM_OK) report.add_failure(closed);
  return report;
}

const GoldData* data_of(const shim_ipc* ipc) { return ipc ? ipc->data.get() : nullptr; }

}  // namespace

SHIM_API int shim_ipc_export_stream(const shim_ipc* ipc, int64_t batch_count, const char* fail_message,
                                    struct ArrowArrayStream* out) {
  return guarded([&]() -> int {
    if (ipc == nullptr || out == nullptr) return fail(SHIM_BAD_ARGUMENT, "shim_ipc_export_stream: null argument");
    auto reader = std::make_shared<GoldReader>(GoldSource(ipc->data, batch_count, fail_message));
    return report(arrow::ExportRecordBatchReader(std::move(reader), out));
  });
}

SHIM_API int shim_ipc_export_device_stream(const shim_ipc* ipc, int64_t batch_count, const char* fail_message,
                                           struct ArrowDeviceArrayStream* out) {
  return guarded([&]() -> int {
    if (ipc == nullptr || out == nullptr) {
      return fail(SHIM_BAD_ARGUMENT, "shim_ipc_export_device_stream: null argument");
    }
    auto reader = std::make_shared<GoldReader>(GoldSource(ipc->data, batch_count, fail_message));
    return report(arrow::ExportDeviceRecordBatchReader(std::move(reader), out));
  });
}

SHIM_API int shim_consume_stream(struct ArrowArrayStream* stream, const shim_ipc* reference,
                                 int64_t max_batches, int64_t* out) {
  return guarded([&]() -> int {
    if (stream == nullptr || out == nullptr) return fail(SHIM_BAD_ARGUMENT, "shim_consume_stream: null argument");
    return read_stream(arrow::ImportRecordBatchReader(stream), data_of(reference), max_batches).publish(out);
  });
}

SHIM_API int shim_consume_device_stream(struct ArrowDeviceArrayStream* stream, const shim_ipc* reference,
                                        int64_t max_batches, int64_t* out) {
  return guarded([&]() -> int {
    if (stream == nullptr || out == nullptr) {
      return fail(SHIM_BAD_ARGUMENT, "shim_consume_device_stream: null argument");
    }
    return read_stream(arrow::ImportDeviceRecordBatchReader(stream), data_of(reference), max_batches).publish(out);
  });
}

// ---------------------------------------------------------------------------
// Jobs: work on a shim thread, polled by the caller
// ---------------------------------------------------------------------------

struct shim_job {
  std::thread thread;
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;       // guarded by mutex
  bool abandoned = false;  // guarded by mutex: freed by the caller before done
  Report report;           // written by the job thread before done; read after
  // Keeps what the work needs alive for as long as the thread runs.
  Gold reference;
  std::shared_ptr<arrow::internal::ThreadPool> pool;
};

namespace {

// Runs `work` (returning a Report) on the job's thread. When the work ends,
// the job is marked done, or freed if its caller abandoned it.
template <typename Work>
shim_job* start_job(shim_job* job, Work work) {
  live_jobs++;
  job->thread = std::thread([job, work = std::move(work)]() mutable {
    Report result;
    try {
      result = work();
    } catch (const std::exception& e) {
      result.status = SHIM_INTERNAL;
      result.message = std::string("C++ exception in a shim job: ") + e.what();
    } catch (...) {
      result.status = SHIM_INTERNAL;
      result.message = "unknown C++ exception in a shim job";
    }
    bool abandoned;
    {
      std::lock_guard<std::mutex> lock(job->mutex);
      job->report = std::move(result);
      job->done = true;
      abandoned = job->abandoned;
    }
    job->finished.notify_all();
    if (abandoned) {
      job->thread.detach();
      delete job;
      live_jobs--;
    }
  });
  return job;
}

}  // namespace

SHIM_API int shim_job_done(shim_job* job) {
  if (job == nullptr) return 0;
  std::lock_guard<std::mutex> lock(job->mutex);
  return job->done ? 1 : 0;
}

SHIM_API int shim_job_wait(shim_job* job, int32_t timeout_ms) {
  if (job == nullptr) return 0;
  std::unique_lock<std::mutex> lock(job->mutex);
  return job->finished.wait_for(lock, std::chrono::milliseconds(std::max(timeout_ms, 0)), [job] { return job->done; })
             ? 1
             : 0;
}

SHIM_API int shim_job_result(shim_job* job, int64_t* out) {
  return guarded([&]() -> int {
    if (job == nullptr) return fail(SHIM_BAD_ARGUMENT, "shim_job_result: null job");
    std::lock_guard<std::mutex> lock(job->mutex);
    if (!job->done) return fail(SHIM_NOT_DONE, "shim_job_result: the job has not finished");
    return job->report.publish(out);
  });
}

SHIM_API void shim_job_free(shim_job* job) {
  if (job == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(job->mutex);
    if (!job->done) {
      job->abandoned = true;  // its thread frees it when (if) it ends
      return;
    }
  }
  if (job->thread.joinable()) job->thread.join();
  delete job;
  live_jobs--;
}

SHIM_API int shim_consume_stream_start(struct ArrowArrayStream* stream, const shim_ipc* reference,
                                       int64_t max_batches, shim_job** out) {
  return guarded([&]() -> int {
    if (stream == nullptr || out == nullptr) return fail(SHIM_BAD_ARGUMENT, "shim_consume_stream_start: null argument");
    if (stream->release == nullptr) return fail(SHIM_BAD_ARGUMENT, "shim_consume_stream_start: the stream is released");
    // Move the stream into the job now (the caller's struct is released).
    auto moved = std::make_shared<struct ArrowArrayStream>(*stream);
    stream->release = nullptr;
    auto* job = new shim_job();
    job->reference = reference ? reference->data : nullptr;
    *out = start_job(job, [moved, job, max_batches]() {
      return read_stream(arrow::ImportRecordBatchReader(moved.get()), job->reference.get(), max_batches);
    });
    return SHIM_OK;
  });
}

SHIM_API int shim_consume_device_stream_start(struct ArrowDeviceArrayStream* stream, const shim_ipc* reference,
                                              int64_t max_batches, shim_job** out) {
  return guarded([&]() -> int {
    if (stream == nullptr || out == nullptr) {
      return fail(SHIM_BAD_ARGUMENT, "shim_consume_device_stream_start: null argument");
    }
    if (stream->release == nullptr) {
      return fail(SHIM_BAD_ARGUMENT, "shim_consume_device_stream_start: the stream is released");
    }
    auto moved = std::make_shared<struct ArrowDeviceArrayStream>(*stream);
    stream->release = nullptr;
    auto* job = new shim_job();
    job->reference = reference ? reference->data : nullptr;
    *out = start_job(job, [moved, job, max_batches]() {
      return read_stream(arrow::ImportDeviceRecordBatchReader(moved.get()), job->reference.get(), max_batches);
    });
    return SHIM_OK;
  });
}

// ---------------------------------------------------------------------------
// Async device streams
// ---------------------------------------------------------------------------

SHIM_API int shim_async_consume_start(struct ArrowAsyncDeviceStreamHandler* handler, const shim_ipc* reference,
                                      int64_t queue_size, shim_job** out) {
  return guarded([&]() -> int {
    if (handler == nullptr || out == nullptr || queue_size < 0) {
      return fail(SHIM_BAD_ARGUMENT, "shim_async_consume_start: needs a handler, queue_size >= 0, an out pointer");
    }
    // Arrow C++'s generator blocks an executor thread while it waits for the
    // producer; a private one-thread pool keeps that off Arrow's global pool.
    auto pool = arrow::internal::ThreadPool::Make(1);
    if (!pool.ok()) return report(pool.status());
    auto* job = new shim_job();
    job->reference = reference ? reference->data : nullptr;
    job->pool = *pool;
    // Fills *handler now, on the caller's thread.
    auto schema_future =
        arrow::CreateAsyncDeviceStreamHandler(handler, job->pool.get(), static_cast<uint64_t>(queue_size));
    *out = start_job(job, [job, schema_future]() {
      Report report;
      const auto& started = schema_future.result();  // waits for on_schema or on_error
      if (!started.ok()) {
        report.add_failure(started.status());
        return report;
      }
      arrow::AsyncRecordBatchGenerator stream = *started;
      report.words[SHIM_REPORT_DEVICE_TYPE] = static_cast<int64_t>(stream.device_type);
      report.add_schema(*stream.schema, job->reference.get());
      while (true) {
        auto pending = stream.generator();
        auto item = pending.result();  // a copy: `pending` owns the storage
        if (!item.ok()) {
          report.add_failure(item.status());
          break;
        }
        if (arrow::IsIterationEnd(*item)) {
          report.words[SHIM_REPORT_ENDED] = 1;
          break;
        }
        if (item->custom_metadata != nullptr) report.words[SHIM_REPORT_WITH_METADATA]++;
        report.add_batch(*item->batch, job->reference.get());
      }
      return report;
    });
    return SHIM_OK;
  });
}

SHIM_API int shim_async_produce_start(const shim_ipc* ipc, int64_t batch_count, const char* fail_message,
                                      struct ArrowAsyncDeviceStreamHandler* handler, shim_job** out) {
  return guarded([&]() -> int {
    if (ipc == nullptr || handler == nullptr || out == nullptr) {
      return fail(SHIM_BAD_ARGUMENT, "shim_async_produce_start: null argument");
    }
    auto source = std::make_shared<GoldSource>(ipc->data, batch_count, fail_message);
    auto* job = new shim_job();
    job->reference = ipc->data;
    // Everything runs on the job's thread: Arrow C++'s producer calls
    // on_schema inside ExportAsyncRecordBatchReader and then blocks its
    // visiting thread until the consumer requests batches.
    *out = start_job(job, [source, handler]() {
      Report report;
      arrow::AsyncGenerator<std::shared_ptr<arrow::RecordBatch>> generator = [source]() {
        return arrow::Future<std::shared_ptr<arrow::RecordBatch>>::MakeFinished(source->Next());
      };
      report.words[SHIM_REPORT_DEVICE_TYPE] = static_cast<int64_t>(arrow::DeviceAllocationType::kCPU);
      arrow::Status status =
          arrow::ExportAsyncRecordBatchReader(source->schema(), generator, arrow::DeviceAllocationType::kCPU, handler)
              .status();
      report.words[SHIM_REPORT_BATCHES] = source->handed_out();
      if (status.ok()) {
        report.words[SHIM_REPORT_ENDED] = 1;
      } else {
        report.add_failure(status);
      }
      return report;
    });
    return SHIM_OK;
  });
}

// ---------------------------------------------------------------------------
// Probing Arrow C++'s async producer with a scripted handler
// ---------------------------------------------------------------------------

namespace {

// A handler whose callbacks follow one SHIM_PROBE_* script and count what
// the producer does. Heap-allocated; freed by the prober once the producer
// called release (leaked if it never does).
struct ProbeHandler {
  struct ArrowAsyncDeviceStreamHandler handler {};
  int scenario = SHIM_PROBE_NORMAL;
  std::mutex mutex;
  std::condition_variable released;
  int64_t words[SHIM_PROBE_WORDS] = {0, 0, 0, 0, -1, 0, 0, 0};  // guarded by mutex
  std::string error_message;                                    // guarded by mutex

  static ProbeHandler& of(struct ArrowAsyncDeviceStreamHandler* self) {
    return *static_cast<ProbeHandler*>(self->private_data);
  }
  void count(int word) {
    std::lock_guard<std::mutex> lock(mutex);
    words[word]++;
  }

  static int on_schema(struct ArrowAsyncDeviceStreamHandler* self, struct ArrowSchema* schema) {
    ProbeHandler& probe = of(self);
    probe.count(SHIM_PROBE_SCHEMAS);
    if (schema != nullptr && schema->release != nullptr) schema->release(schema);  // ours now
    struct ArrowAsyncProducer* producer = self->producer;
    switch (probe.scenario) {
      case SHIM_PROBE_SCHEMA_FAILS:
        return EIO;
      case SHIM_PROBE_REQUEST_ZERO:
        producer->request(producer, 0);
        producer->request(producer, -1);
        return 0;
      default:
        producer->request(producer, 1);
        return 0;
    }
  }

  static int on_next_task(struct ArrowAsyncDeviceStreamHandler* self, struct ArrowAsyncTask* task,
                          const char* /*metadata*/) {
    ProbeHandler& probe = of(self);
    if (task == nullptr) {
      probe.count(SHIM_PROBE_ENDS);
      return 0;
    }
    probe.count(SHIM_PROBE_TASKS);
    if (probe.scenario == SHIM_PROBE_TASK_FAILS) {
      // The spec asks a consumer to call extract_data(task, NULL) on a task
      // it does not want; Arrow C++ 26's producer instead frees the task
      // itself when on_next_task returns non-zero, so doing both is a
      // double free (it crashes). Against Arrow C++: return without it.
      return EIO;
    }
    struct ArrowDeviceArray data;
    std::memset(&data, 0, sizeof data);
    if (task->extract_data(task, &data) != 0) {
      probe.count(SHIM_PROBE_EXTRACT_FAILURES);
    } else if (data.array.release != nullptr) {
      data.array.release(&data.array);
    }
    struct ArrowAsyncProducer* producer = self->producer;
    if (probe.scenario == SHIM_PROBE_CANCEL) {
      producer->cancel(producer);
    } else if (probe.scenario != SHIM_PROBE_REQUEST_ZERO) {
      producer->request(producer, 1);
    }
    return 0;
  }

  static void on_error(struct ArrowAsyncDeviceStreamHandler* self, int code, const char* message,
                       const char* /*metadata*/) {
    ProbeHandler& probe = of(self);
    std::lock_guard<std::mutex> lock(probe.mutex);
    probe.words[SHIM_PROBE_ERRORS]++;
    probe.words[SHIM_PROBE_ERROR_CODE] = code;
    probe.error_message = message ? message : "";
  }

  static void release(struct ArrowAsyncDeviceStreamHandler* self) {
    ProbeHandler& probe = of(self);
    {
      std::lock_guard<std::mutex> lock(probe.mutex);
      probe.words[SHIM_PROBE_RELEASES]++;
    }
    probe.released.notify_all();
  }
};

}  // namespace

SHIM_API int shim_probe_async_producer(const shim_ipc* ipc, int32_t scenario, int32_t timeout_ms, int64_t* out) {
  return guarded([&]() -> int {
    if (ipc == nullptr || out == nullptr || scenario < SHIM_PROBE_NORMAL || scenario > SHIM_PROBE_REQUEST_ZERO) {
      return fail(SHIM_BAD_ARGUMENT, "shim_probe_async_producer: needs a handle, a known scenario and out");
    }
    auto* probe = new ProbeHandler();
    probe->scenario = scenario;
    probe->handler.on_schema = ProbeHandler::on_schema;
    probe->handler.on_next_task = ProbeHandler::on_next_task;
    probe->handler.on_error = ProbeHandler::on_error;
    probe->handler.release = ProbeHandler::release;
    probe->handler.private_data = probe;
    // The producer blocks its visiting thread until requests arrive: run it
    // on its own thread, and wait here (bounded) for the handler's release.
    auto source = std::make_shared<GoldSource>(ipc->data, -1, nullptr);
    auto finished = std::make_shared<std::atomic<int64_t>>(-1);
    std::thread producer([probe, source, finished]() {
      arrow::AsyncGenerator<std::shared_ptr<arrow::RecordBatch>> generator = [source]() {
        return arrow::Future<std::shared_ptr<arrow::RecordBatch>>::MakeFinished(source->Next());
      };
      arrow::Status status =
          arrow::ExportAsyncRecordBatchReader(source->schema(), generator, arrow::DeviceAllocationType::kCPU,
                                              &probe->handler)
              .status();
      finished->store(static_cast<int64_t>(status.code()));
    });
    bool released;
    {
      std::unique_lock<std::mutex> lock(probe->mutex);
      released = probe->released.wait_for(lock, std::chrono::milliseconds(std::max(timeout_ms, 0)),
                                          [probe] { return probe->words[SHIM_PROBE_RELEASES] > 0; });
    }
    if (!released) {
      producer.detach();  // the producer may still call the handler: leak both
      return fail(SHIM_INTERNAL, "shim_probe_async_producer: the producer did not release the handler in time");
    }
    producer.join();  // release is its last call; the Future settles right after
    {
      std::lock_guard<std::mutex> lock(probe->mutex);
      probe->words[SHIM_PROBE_FUTURE_CODE] = finished->load();
      std::copy(std::begin(probe->words), std::end(probe->words), out);
      last_error = probe->error_message;
    }
    delete probe;
    return SHIM_OK;
  });
}
