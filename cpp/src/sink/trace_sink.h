// The sink every importer feeds: it turns the fields of one message at a time into table rows.
//
// Importers parse a message's scalar fields into one of the *Fields structs below (a repeated
// scalar seen twice: the last value wins, as in protobuf), append repeated children as they meet
// them, and call End*() when the message closes. Nothing here allocates per record beyond the
// amortised growth of the column vectors.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <functional>
#include <string_view>
#include <type_traits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "containers/column_budget.h"
#include "io/release_behind.h"
#include "sink/capacity_planner.h"
#include "tables/trace_tables.h"

namespace tracecore {

// Zeroes a record of scalar fields with plain 16-byte stores. Value-initialising the 128 bytes
// of EventFields compiled to `rep stosq` (GCC's generic tuning, for 33 to 8192 bytes), whose
// start-up cost took about 2% of a binary parse: one per event. The zero goes through an empty
// asm so that the stores are not merged back into a memset.
template <class T>
inline void ZeroRecord(T* record) {
  static_assert(std::is_trivially_copyable_v<T>, "records are zeroed as bytes");
  char* p = reinterpret_cast<char*>(record);
  size_t i = 0;
#if defined(__SSE2__) && defined(__GNUC__)
  __m128i zero = _mm_setzero_si128();
  asm("" : "+x"(zero));
  for (; i + 16 <= sizeof(T); i += 16) _mm_storeu_si128(reinterpret_cast<__m128i*>(p + i), zero);
#endif
  if (i < sizeof(T)) std::memset(p + i, 0, sizeof(T) - i);
}

// An event's scalar fields; all zero (the protobuf defaults; node_name 0 is StringPool's "")
// when constructed.
struct EventFields {
  EventFields() { ZeroRecord(this); }

  uint32_t node_name;
  bool has_label;
  // Points into the input, or into TraceSink::label_scratch() when it had to be unescaped.
  // Zeroed bytes are {nullptr, 0}: an empty view in libstdc++ and libc++ (not a standard
  // guarantee; has_label, not label, says whether there is one).
  std::string_view label;
  int64_t all_start_micros;
  int64_t op_start_rel_micros;
  int64_t op_end_rel_micros;
  int64_t all_end_rel_micros;
  int64_t scheduled_micros;
  int64_t all_start_nanos;
  int64_t op_start_rel_nanos;
  int64_t op_end_rel_nanos;
  int64_t all_end_rel_nanos;
  int64_t scheduled_nanos;
  uint32_t thread_id;
  int64_t temp_memory_size;
  int64_t persistent_memory_size;
};
static_assert(StringPool::kEmptyId == 0, "EventFields zeroes node_name to the empty string");

// A tensor's scalar fields (an output's, or an allocation description's); all zero when
// constructed, as EventFields.
struct TensorFields {
  TensorFields() { ZeroRecord(this); }

  int32_t slot;
  int32_t dtype;
  bool unknown_rank;
  int64_t requested_bytes;
  int64_t allocated_bytes;
  uint32_t allocator;  // 0: StringPool's ""
  int64_t allocation_id;
  uint64_t ptr;
  bool has_single_reference;
};

struct AllocationFields {
  uint32_t allocator = StringPool::kEmptyId;
  int64_t total_bytes = 0;
  int64_t peak_bytes = 0;
  int64_t live_bytes = 0;
  int64_t allocator_bytes_in_use = 0;
};

struct CostNodeFields {
  uint32_t name = StringPool::kEmptyId;
  uint32_t device = StringPool::kEmptyId;
  int32_t id = 0;
  int64_t compute_cost = 0;
  int64_t compute_time = 0;
  int64_t memory_time = 0;
  int64_t temporary_memory_size = 0;
  int64_t persistent_memory_size = 0;
  bool is_final = false;
  bool inaccurate = false;
};

struct GraphNodeFields {
  uint32_t name = StringPool::kEmptyId;
  uint32_t op = StringPool::kEmptyId;
  uint32_t device = StringPool::kEmptyId;
};

class TraceSink {
 public:
  // `arena`: whether its mid-size columns share huge pages (see ColumnArena). Not for the
  // chunks of a parallel parse: the first reserves room for the whole input, which huge pages
  // would make resident at its first write, and the others' columns are freed one by one
  // during the merge (measured: two threads no faster, peak RSS 8 MB higher at 200 MB).
  explicit TraceSink(TraceTables& out, bool arena = true);

  // What the input is, once an importer knows (kUnknown until then).
  void SetKind(TraceKind kind) { t_.kind = kind; }
  TraceKind kind() const { return t_.kind; }

  // Interns a string (kInvalidUtf8 when it is not UTF-8).
  uint32_t Intern(std::string_view s) { return t_.pool.Intern(s); }

  // Interns a short name that repeats record after record (allocator and device names): a
  // small direct-mapped cache answers most of them with one compare instead of a hash.
  uint32_t InternRepeated(std::string_view s) {
    const size_t slot = (s.size() * 7 + (s.empty() ? 0 : static_cast<uint8_t>(s.back()))) & 15;
    RecentName& r = recent_[slot];
    if (r.id != StringPool::kInvalidUtf8 && StringPool::Equal(t_.pool.Get(r.id), s)) return r.id;
    const uint32_t id = t_.pool.Intern(s);
    if (id != StringPool::kInvalidUtf8) r.id = id;
    return id;
  }

  // Interns a node name: the same few thousand names come back step after step, so a
  // direct-mapped cache keyed by a cheap fold of all the name's bytes answers most of them
  // with one compare instead of the pool's full hash.
  uint32_t InternNodeName(std::string_view s) {
    const size_t n = s.size();
    if (n < 8) return t_.pool.Intern(s);
    const char* d = s.data();
    // Two independent folds (even and odd words), so the dependency chain is half as long.
    uint64_t k = n, k2 = 0;
    uint64_t w, w2;
    size_t i = 0;
    for (; i + 16 < n; i += 16) {
      std::memcpy(&w, d + i, 8);
      std::memcpy(&w2, d + i + 8, 8);
      k = ((k << 7) | (k >> 57)) ^ w;
      k2 = ((k2 << 7) | (k2 >> 57)) ^ w2;
    }
    if (i + 8 < n) {
      std::memcpy(&w, d + i, 8);
      k = ((k << 7) | (k >> 57)) ^ w;
    }
    std::memcpy(&w, d + n - 8, 8);
    k ^= (k2 << 29) | (k2 >> 35);
    k = (((k << 7) | (k >> 57)) ^ w) * 0x9E3779B97F4A7C15ull;
    uint32_t& cached = node_names_[k >> (64 - kNodeNameBits)];
    if (cached != StringPool::kInvalidUtf8 && StringPool::Equal(t_.pool.Get(cached), s)) return cached;
    const uint32_t id = t_.pool.Intern(s);
    if (id != StringPool::kInvalidUtf8) cached = id;
    return id;
  }

  // Device blocks. Events are added between Begin and End; the device name may come anywhere
  // in the block, so it is filled into the block's events at the end.
  int32_t BeginDevice();
  void EndDevice(int32_t device_index, uint32_t device_name, size_t first_event,
                 size_t first_thread_name);
  size_t event_count() const { return t_.events.size(); }
  size_t thread_name_count() const { return t_.thread_names.size(); }
  void AddThreadName(int32_t device_index, uint32_t thread_id, std::string_view name) {
    t_.thread_names.device_index.push_back(device_index);
    t_.thread_names.thread_id.push_back(thread_id);
    t_.thread_names.name.Append(name);
  }

  // Events. BeginEvent returns the id children refer to; EndEvent returns nullptr or a
  // description of what is wrong with the record (e.g. a time out of int64 range).
  int64_t BeginEvent() { return next_event_id_++; }
  // A label the importer had to unescape into its own scratch: the sink keeps a copy until
  // the next call, for the EventFields that point to it.
  std::string_view KeepLabel(std::string_view label) {
    label_.assign(label.data(), label.size());
    return label_;
  }
  const char* EndEvent(int32_t device_index, const EventFields& f);
  static constexpr const char* kTimeOutOfRange = "event time out of range: nanoseconds overflow int64";

  // An event whose times, label and op the importer derived (XSpace): op_start/op_end are
  // start/end, no scheduled time, no memory sizes. `op`: kInvalidUtf8 for none; `step_id`:
  // nullptr for none.
  void AddTimedEvent(int32_t device_index, uint32_t node_name, uint32_t label, uint32_t op,
                     int64_t start_ns, int64_t end_ns, uint32_t thread_id, const int64_t* step_id);
  // A Chrome trace event: label is its name, op_start/op_end are start/end, `cat`:
  // kInvalidUtf8 for none (the cat column is filled only for Chrome traces).
  void AddChromeEvent(int32_t device_index, uint32_t node_name, uint32_t label, uint32_t op,
                      uint32_t cat, int64_t start_ns, int64_t end_ns, uint32_t thread_id);
  // Ends an XSpace line's device block: its device is the plane's name, its kind from the
  // plane and line names (ClassifyXLine).
  void EndXLine(int32_t device_index, uint32_t plane_name, uint32_t line_name, int64_t line_id,
                size_t first_event);
  // Forgets the events from row `first` on (a line handed again, see xspace_visitor.h).
  void DropEventsFrom(size_t first);

  // Tensors: dims are appended as met, then EndTensor closes the row.
  void AddDim(int64_t size) { t_.tensors.shape.values.push_back(size); }
  void EndTensor(int64_t event_id, int32_t output_index, const TensorFields& f);

  // Allocator usage: records are appended as met; EndAllocation fills their allocator.
  size_t alloc_record_count() const { return t_.alloc_records.size(); }
  void AddAllocRecord(int64_t event_id, int64_t alloc_micros, int64_t bytes, bool* overflow) {
    int64_t ns;
    if (__builtin_mul_overflow(alloc_micros, int64_t{1000}, &ns)) *overflow = true;
    t_.alloc_records.event_id.push_back(event_id);
    t_.alloc_records.allocator.push_back(StringPool::kEmptyId);
    t_.alloc_records.time_ns.push_back(ns);
    t_.alloc_records.bytes.push_back(bytes);
  }
  void EndAllocation(int64_t event_id, const AllocationFields& f, size_t first_record);

  void AddPersistentTensor(int64_t event_id, int64_t allocation_id) {
    t_.persistent_tensors.event_id.push_back(event_id);
    t_.persistent_tensors.allocation_id.push_back(allocation_id);
  }

  // Cost graph nodes: list values are appended as met, then EndCostNode closes the row.
  void AddCostInput(int32_t preceding_node) { t_.cost_graph.input_nodes.values.push_back(preceding_node); }
  void AddCostControlInput(int32_t id) { t_.cost_graph.control_inputs.values.push_back(id); }
  void AddCostOutputSize(int64_t size) { t_.cost_graph.output_sizes.values.push_back(size); }
  void EndCostNode(const CostNodeFields& f);

  // Graph nodes: inputs are appended as met.
  void AddGraphInput(std::string_view input) { t_.graph_nodes.inputs.values.Append(input); }
  // `key` positions are addresses in the (one) input mapping, comparable across chunks.
  int32_t BeginGraph(const GraphKey& key) {
    t_.graph_keys.push_back(key);
    return t_.graph_count++;
  }
  void EndGraphNode(int32_t graph_index, const GraphNodeFields& f);

  void CountUnknownField() { ++t_.unknown_fields; }
  uint64_t unknown_field_count() const { return t_.unknown_fields; }
  void SetUnknownFieldCount(uint64_t n) { t_.unknown_fields = n; }

  // Input pages before `pos` are no longer needed: every 8 MB they are handed to `release`
  // (see ReleaseBehind), so a multi-GB mapped dump does not stay resident.
  // Also where the parse starts, for a ColumnBudget refusal before the first record ends.
  void SetReleaser(const char* begin, ReleaseBehind::Release release) {
    releaser_ = ReleaseBehind(begin, std::move(release), kReleaseStep);
    position_.at = begin;
  }
  // The parse has passed `pos` (a record's end): a ColumnBudget refusal names it.
  void Consumed(const char* pos) {
    position_.at = pos;
    planner_.Passed(pos);
    releaser_.Passed(pos);
  }

  // Reserves column capacity for `bytes` of input starting at `begin` (see CapacityPlanner).
  // `event_details`: whether events rows come from EndEvent (StepStats), which fills the events
  // columns EmptyFills names; AddTimedEvent and AddChromeEvent leave them empty.
  void Reserve(const char* begin, size_t bytes, bool text, bool event_details = true) {
    position_.text = text;
    if (!event_details) planner_.OmitEmptyFillColumns();
    planner_.Reserve(begin, bytes, text);
  }

  // Derives the per-table columns that need the whole trace (event ids, device counts).
  void Finish();

 private:
  // Appends an events row of an XSpace or Chrome trace but its step_id and cat (`op`:
  // kInvalidUtf8 for none), leaving the columns EmptyFills<EventTable> names empty.
  void PushEventRow(int32_t device_index, uint32_t node_name, uint32_t op, uint32_t label,
                    int64_t start, int64_t end, uint32_t thread_id);
  uint32_t DtypeId(int32_t dtype);
  uint32_t OpFor(const EventFields& f, uint32_t label);
  uint32_t LabelFor(const EventFields& f);
  // While the builder lives, mid-size columns allocated on its thread share huge pages.
  ColumnArena arena_;
  // Where the parse is, for a ColumnBudget refusal on this thread while the builder lives.
  ParsePosition position_;
  ParsePosition::Use position_use_{&position_};
  TraceTables& t_;
  std::string label_;
  int64_t next_event_id_ = 0;
  uint32_t dtype_ids_[256] = {};
  static constexpr ptrdiff_t kReleaseStep = ptrdiff_t{8} << 20;
  ReleaseBehind releaser_;
  CapacityPlanner planner_;
  struct RecentName {
    uint32_t id = StringPool::kInvalidUtf8;
  };
  RecentName recent_[16];
  static constexpr int kNodeNameBits = 12;
  uint32_t node_names_[size_t{1} << kNodeNameBits];  // InternNodeName's cache: id or kInvalidUtf8
  // node_name id -> the label id its op was last derived with, and that op (cache: the op is
  // a function of the node name and the label).
  struct OpOfNode {
    uint32_t label = StringPool::kInvalidUtf8;  // none yet
    uint32_t op = StringPool::kInvalidUtf8;
  };
  std::vector<OpOfNode> op_of_node_;
  std::vector<uint32_t> label_of_node_;  // node_name id -> last label id seen with it (cache)
};

}  // namespace tracecore
