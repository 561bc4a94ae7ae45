#include "importers/trace_builder.h"

#include <algorithm>
#include <cstring>

#include "tables/dtypes.h"

namespace tracecore {
namespace {

// Appends a validity or boolean byte. Passing an lvalue selects push_back(const T&), which
// inlines where the rvalue overload (through emplace_back) did not.
inline void PushFlag(Column<uint8_t>& column, bool b) {
  const uint8_t byte = b ? 1 : 0;
  column.push_back(byte);
}

// The op of an event: "name = Op(inputs)" in the timeline label (after an optional
// "[allocator ...] " prefix), else the part after the last ':' of a GPU-stream record's
// "name:Op" node name. Returns false when there is none.
bool DeriveOp(std::string_view label, bool has_label, std::string_view node_name,
              std::string_view* op) {
  if (has_label) {
    std::string_view body = label;
    if (!body.empty() && body.front() == '[') {
      // Only "[...] " where the FIRST ']' is followed by a space is a prefix.
      const size_t close = body.find(']');
      if (close != std::string_view::npos && close + 1 < body.size() && body[close + 1] == ' ') {
        body.remove_prefix(close + 2);
      }
    }
    const size_t eq = body.find(" = ");
    if (eq != std::string_view::npos) {
      std::string_view rest = body.substr(eq + 3);
      const size_t paren = rest.find('(');
      if (paren != std::string_view::npos) {
        rest = rest.substr(0, paren);
      } else {
        const char* ws = " \t\n\r\f\v";
        const size_t b = rest.find_first_not_of(ws);
        rest = b == std::string_view::npos ? std::string_view() : rest.substr(b);
        const size_t e = rest.find_last_not_of(ws);
        rest = rest.substr(0, e == std::string_view::npos ? 0 : e + 1);
      }
      *op = rest;
      return true;
    }
  }
  const size_t colon = node_name.rfind(':');
  if (colon == std::string_view::npos) return false;
  *op = node_name.substr(colon + 1);
  return true;
}

}  // namespace

TraceBuilder::TraceBuilder(TraceTables& out, bool arena) : arena_(arena), t_(out) {
  std::fill(std::begin(node_names_), std::end(node_names_), StringPool::kInvalidUtf8);
}

int32_t TraceBuilder::BeginDevice() {
  const auto index = static_cast<int32_t>(t_.devices.device.size());
  t_.devices.device_index.push_back(index);
  t_.devices.device.push_back(StringPool::kEmptyId);
  t_.devices.kind.push_back(static_cast<uint8_t>(DeviceKind::kOther));
  t_.devices.n_events.push_back(0);
  return index;
}

void TraceBuilder::EndDevice(int32_t device_index, uint32_t device_name, size_t first_event,
                             size_t first_thread_name) {
  t_.devices.device[device_index] = device_name;
  t_.devices.kind[device_index] =
      static_cast<uint8_t>(ClassifyDevice(t_.pool.Get(device_name)));
  const size_t n = t_.events.size();
  std::fill(t_.events.device.begin() + first_event, t_.events.device.begin() + n, device_name);
  t_.devices.n_events[device_index] = static_cast<int64_t>(n - first_event);

  // thread_names is a map: a key seen twice keeps its last value (at the first key's place).
  ThreadNameTable& tn = t_.thread_names;
  const size_t end = tn.size();
  if (end - first_thread_name < 2) return;
  // Entries of this block by (key, position): O(n log n), and nothing to do without duplicates.
  std::vector<size_t> order(end - first_thread_name);
  for (size_t i = 0; i < order.size(); ++i) order[i] = first_thread_name + i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return tn.thread_id[a] < tn.thread_id[b]; });
  bool duplicate = false;
  for (size_t i = 1; i < order.size() && !duplicate; ++i) {
    duplicate = tn.thread_id[order[i]] == tn.thread_id[order[i - 1]];
  }
  if (!duplicate) return;
  // For each key: its first position, and the entry holding its last value.
  std::vector<std::pair<size_t, size_t>> keep;  // (first position, last entry)
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && tn.thread_id[order[j + 1]] == tn.thread_id[order[i]]) ++j;
    keep.emplace_back(order[i], order[j]);
    i = j + 1;
  }
  std::sort(keep.begin(), keep.end());
  ThreadNameTable kept;
  for (const auto& [first, last] : keep) {
    kept.device_index.push_back(device_index);
    kept.thread_id.push_back(tn.thread_id[last]);
    kept.name.Append(std::string_view(tn.name.data.data() + tn.name.offsets[last],
                                      static_cast<size_t>(tn.name.offsets[last + 1] - tn.name.offsets[last])));
  }
  tn.device_index.resize(first_thread_name);
  tn.thread_id.resize(first_thread_name);
  tn.name.data.resize(static_cast<size_t>(tn.name.offsets[first_thread_name]));
  tn.name.offsets.resize(first_thread_name + 1);
  for (size_t i = 0; i < kept.size(); ++i) {
    AddThreadName(device_index, kept.thread_id[i],
                  std::string_view(kept.name.data.data() + kept.name.offsets[i],
                                   static_cast<size_t>(kept.name.offsets[i + 1] - kept.name.offsets[i])));
  }
}

const char* TraceBuilder::EndEvent(int32_t device_index, const EventFields& f) {
  EventTable& e = t_.events;
  int64_t start, end, op_start, op_end, scheduled = 0;
  const uint32_t label = f.has_label ? LabelFor(f) : StringPool::kEmptyId;
  if (label == StringPool::kInvalidUtf8) return "timeline_label is not valid UTF-8";
  bool overflow = false;
  if (f.all_start_nanos != 0) {
    start = f.all_start_nanos;
    overflow |= __builtin_add_overflow(start, f.all_end_rel_nanos, &end);
    overflow |= __builtin_add_overflow(start, f.op_start_rel_nanos, &op_start);
    overflow |= __builtin_add_overflow(start, f.op_end_rel_nanos, &op_end);
  } else {
    int64_t rel;
    overflow |= __builtin_mul_overflow(f.all_start_micros, int64_t{1000}, &start);
    overflow |= __builtin_mul_overflow(f.all_end_rel_micros, int64_t{1000}, &rel);
    overflow |= __builtin_add_overflow(start, rel, &end);
    overflow |= __builtin_mul_overflow(f.op_start_rel_micros, int64_t{1000}, &rel);
    overflow |= __builtin_add_overflow(start, rel, &op_start);
    overflow |= __builtin_mul_overflow(f.op_end_rel_micros, int64_t{1000}, &rel);
    overflow |= __builtin_add_overflow(start, rel, &op_end);
  }
  bool has_scheduled = true;
  if (f.scheduled_nanos != 0) {
    scheduled = f.scheduled_nanos;
  } else if (f.scheduled_micros != 0) {
    overflow |= __builtin_mul_overflow(f.scheduled_micros, int64_t{1000}, &scheduled);
  } else {
    has_scheduled = false;
  }
  if (overflow) return kTimeOutOfRange;

  e.device_index.push_back(device_index);
  e.device.push_back(StringPool::kEmptyId);  // filled by EndDevice
  e.node_name.push_back(f.node_name);
  const uint32_t op = OpFor(f, label);
  const bool has_op = op != StringPool::kInvalidUtf8;
  e.op.push_back(has_op ? op : StringPool::kEmptyId);
  PushFlag(e.op_valid, has_op);
  e.timeline_label.push_back(label);
  e.start_ns.push_back(start);
  e.end_ns.push_back(end);
  e.op_start_ns.push_back(op_start);
  e.op_end_ns.push_back(op_end);
  e.scheduled_ns.push_back(scheduled);
  PushFlag(e.scheduled_valid, has_scheduled);
  e.thread_id.push_back(f.thread_id);
  e.temp_memory_size.push_back(f.temp_memory_size);
  e.persistent_memory_size.push_back(f.persistent_memory_size);
  return nullptr;
}

namespace {
// Looks `value` up through a per-node cache before interning it: a node's label and op are the
// same at every step, so most lookups are one compare instead of a hash.
uint32_t CachedIntern(StringPool& pool, std::vector<uint32_t>& cache, uint32_t node,
                      std::string_view value) {
  if (node < cache.size()) {
    const uint32_t cached = cache[node];
    if (cached != StringPool::kInvalidUtf8 && StringPool::Equal(pool.Get(cached), value)) return cached;
  } else {
    cache.resize(std::max<size_t>(node + 1, cache.size() * 2), StringPool::kInvalidUtf8);
  }
  const uint32_t id = pool.Intern(value);
  cache[node] = id;
  return id;
}
}  // namespace

uint32_t TraceBuilder::LabelFor(const EventFields& f) {
  return CachedIntern(t_.pool, label_of_node_, f.node_name, f.label);
}

uint32_t TraceBuilder::OpFor(const EventFields& f, uint32_t label) {
  // The op depends on the node name and the label only (an empty label derives like none).
  const uint32_t node = f.node_name;
  if (node < op_of_node_.size()) {
    if (op_of_node_[node].label == label) return op_of_node_[node].op;
  } else {
    op_of_node_.resize(std::max<size_t>(node + 1, op_of_node_.size() * 2));
  }
  std::string_view op;
  const uint32_t id = DeriveOp(f.label, f.has_label, t_.pool.Get(node), &op) ? t_.pool.Intern(op)
                                                                              : StringPool::kInvalidUtf8;
  op_of_node_[node] = OpOfNode{label, id};
  return id;
}

namespace {
// Typical dumps: ~700 text bytes (~260 binary bytes) per event (on the generous side).
size_t TypicalBytesPerEvent(bool text) { return text ? 600 : 220; }
}  // namespace

TraceBuilder::Rows TraceBuilder::TypicalRows(size_t bytes, bool text) {
  // Per event, typically: half a tensor with two dims, a quarter of an allocator usage and one
  // allocation record (on the generous side).
  const size_t events = bytes / TypicalBytesPerEvent(text) + 16;
  const size_t tensors = events / 2 + 16;
  return {events, tensors, tensors * 2, events / 4 + 16, events + 16};
}

void TraceBuilder::ReserveRows(const Rows& n) {
  // Reserving also places the larger columns on huge pages (see ColumnAllocator).
  auto reserve = [](size_t rows, auto&... columns) { (columns.reserve(rows), ...); };
  EventTable& e = t_.events;
  reserve(n.events, e.event_id, e.device_index, e.device, e.node_name, e.op, e.op_valid,
          e.timeline_label, e.start_ns, e.end_ns, e.op_start_ns, e.op_end_ns, e.scheduled_ns,
          e.scheduled_valid, e.thread_id, e.temp_memory_size, e.persistent_memory_size);
  TensorTable& x = t_.tensors;
  reserve(n.tensors, x.event_id, x.output_index, x.slot, x.dtype, x.unknown_rank, x.num_elements,
          x.num_elements_valid, x.requested_bytes, x.allocated_bytes, x.allocator,
          x.allocation_id, x.ptr, x.has_single_reference);
  reserve(n.tensors + 1, x.shape.offsets);
  reserve(n.dims, x.shape.values);
  AllocationTable& a = t_.allocations;
  reserve(n.allocations, a.event_id, a.allocator, a.total_bytes, a.peak_bytes, a.live_bytes,
          a.allocator_bytes_in_use);
  AllocRecordTable& r = t_.alloc_records;
  reserve(n.records, r.event_id, r.allocator, r.time_ns, r.bytes);
}

namespace {
// Inputs of kCalibrateMinStretches stretches or more have their room measured (see Reserve).
// A stretch is what typically holds kCalibrateEvents events: a few steps of a training loop,
// enough for a stable rate, while the first stretch's columns stay small heap blocks (abandoned
// at the first measure, arena blocks would waste fresh pages). The measure is repeated each
// time the parse has gone kCalibrateGrowth times further.
constexpr size_t kCalibrateEvents = 10000;
constexpr size_t kCalibrateMinStretches = 8;
constexpr size_t kCalibrateGrowth = 4;
// Room is the measured rate times this much: steps and device blocks differ a little.
constexpr double kCalibrateMargin = 1.05;
// Fewer events than this in the first stretch measure nothing: the typical rates are used.
constexpr size_t kCalibrateMinEvents = 256;
// Measured room is address space until written, but the input drives it: all tables together
// get at most kMaxRoomPerByte bytes of it per input byte (the densest dumps, binary events of
// 40 bytes with two allocation records each, need 4), counted at about these many bytes per
// row of each table's reserved columns.
constexpr double kMaxRoomPerByte = 8;
constexpr double kRowBytes[] = {98, 77, 8, 44, 28};  // events, tensors, dims, allocations, records
}  // namespace

void TraceBuilder::Reserve(const char* begin, size_t bytes, bool text) {
  input_begin_ = begin;
  input_bytes_ = bytes;
  text_ = text;
  const size_t stretch = kCalibrateEvents * TypicalBytesPerEvent(text);
  const bool measure = bytes / kCalibrateMinStretches >= stretch;
  room_for_stretch_ = measure && arena_.enabled();
  ReserveRows(TypicalRows(room_for_stretch_ ? stretch + stretch / 4 : bytes, text));
  if (measure) calibrate_at_ = reinterpret_cast<uintptr_t>(begin) + stretch;
}

void TraceBuilder::Calibrate(const char* pos) {
  const auto consumed = static_cast<size_t>(pos - input_begin_);
  const bool set_room = room_for_stretch_;  // else only more room, where the rate calls for it
  room_for_stretch_ = false;
  calibrate_at_ = consumed < input_bytes_ / kCalibrateGrowth
                      ? reinterpret_cast<uintptr_t>(input_begin_) + consumed * kCalibrateGrowth
                      : UINTPTR_MAX;
  if (set_room && t_.events.size() < kCalibrateMinEvents) {
    ReserveRows(TypicalRows(input_bytes_, text_));
    return;
  }
  const TensorTable& x = t_.tensors;
  const size_t rows[] = {t_.events.size(), x.size(), x.shape.values.size(), t_.allocations.size(),
                         t_.alloc_records.size()};
  const size_t capacity[] = {t_.events.event_id.capacity(), x.event_id.capacity(),
                             x.shape.values.capacity(), t_.allocations.event_id.capacity(),
                             t_.alloc_records.event_id.capacity()};
  const double scale = static_cast<double>(input_bytes_) / static_cast<double>(consumed);
  double room[5];
  double grown = 0, kept = 0;  // bytes of the room asked for, and of the room tables keep
  for (int k = 0; k < 5; ++k) {
    const double projected = static_cast<double>(rows[k]) * scale;
    room[k] = set_room || projected > static_cast<double>(capacity[k]) ? projected * kCalibrateMargin + 64 : 0;
    grown += room[k] * kRowBytes[k];
    kept += room[k] == 0 ? static_cast<double>(capacity[k]) * kRowBytes[k] : 0;
  }
  const double limit = static_cast<double>(input_bytes_) * kMaxRoomPerByte;
  const double shrink = grown > 0 && kept + grown > limit ? std::max(limit - kept, 0.0) / grown : 1.0;
  const auto n = [&](int k) { return static_cast<size_t>(room[k] * shrink); };
  ReserveRows({n(0), n(1), n(2), n(3), n(4)});
}

uint32_t TraceBuilder::DtypeId(int32_t dtype) {
  if (dtype >= 0 && dtype < 256) {
    uint32_t& cached = dtype_ids_[dtype];
    if (cached == 0) cached = t_.pool.Intern(DataTypeName(dtype));
    return cached;
  }
  return t_.pool.Intern(DataTypeName(dtype));
}

void TraceBuilder::EndTensor(int64_t event_id, int32_t output_index, const TensorFields& f) {
  TensorTable& t = t_.tensors;
  const size_t first_dim = t.shape.open_row_start();
  // null when the rank is unknown or any dim is negative (unknown); else 0 when any dim is 0;
  // else the product, null when it does not fit in int64.
  bool known = !f.unknown_rank;
  bool zero = false, overflow = false;
  int64_t elements = 1;
  for (size_t i = first_dim; i < t.shape.values.size() && known; ++i) {
    const int64_t d = t.shape.values[i];
    if (d < 0) {
      known = false;
    } else if (d == 0) {
      zero = true;
    } else if (!overflow && __builtin_mul_overflow(elements, d, &elements)) {
      overflow = true;
    }
  }
  if (known && zero) {
    elements = 0;
  } else if (overflow) {
    known = false;
  }
  t.shape.CloseRow();
  t.event_id.push_back(event_id);
  t.output_index.push_back(output_index);
  t.slot.push_back(f.slot);
  t.dtype.push_back(DtypeId(f.dtype));
  PushFlag(t.unknown_rank, f.unknown_rank);
  t.num_elements.push_back(known ? elements : 0);
  PushFlag(t.num_elements_valid, known);
  t.requested_bytes.push_back(f.requested_bytes);
  t.allocated_bytes.push_back(f.allocated_bytes);
  t.allocator.push_back(f.allocator);
  t.allocation_id.push_back(f.allocation_id);
  t.ptr.push_back(f.ptr);
  PushFlag(t.has_single_reference, f.has_single_reference);
}

void TraceBuilder::EndAllocation(int64_t event_id, const AllocationFields& f,
                                 size_t first_record) {
  AllocationTable& a = t_.allocations;
  a.event_id.push_back(event_id);
  a.allocator.push_back(f.allocator);
  a.total_bytes.push_back(f.total_bytes);
  a.peak_bytes.push_back(f.peak_bytes);
  a.live_bytes.push_back(f.live_bytes);
  a.allocator_bytes_in_use.push_back(f.allocator_bytes_in_use);
  auto& alloc = t_.alloc_records.allocator;
  std::fill(alloc.begin() + first_record, alloc.end(), f.allocator);
}

void TraceBuilder::EndCostNode(const CostNodeFields& f) {
  CostGraphTable& c = t_.cost_graph;
  c.name.push_back(f.name);
  c.device.push_back(f.device);
  c.id.push_back(f.id);
  c.compute_cost.push_back(f.compute_cost);
  c.compute_time.push_back(f.compute_time);
  c.memory_time.push_back(f.memory_time);
  c.temporary_memory_size.push_back(f.temporary_memory_size);
  c.persistent_memory_size.push_back(f.persistent_memory_size);
  PushFlag(c.is_final, f.is_final);
  PushFlag(c.inaccurate, f.inaccurate);
  c.input_nodes.CloseRow();
  c.control_inputs.CloseRow();
  c.output_sizes.CloseRow();
}

void TraceBuilder::EndGraphNode(int32_t graph_index, const GraphNodeFields& f) {
  GraphNodeTable& g = t_.graph_nodes;
  g.graph_index.push_back(graph_index);
  g.name.push_back(f.name);
  g.op.push_back(f.op);
  g.device.push_back(f.device);
  g.inputs.CloseRow();
}

namespace {

// Renumbers graph_index in protobuf's order (see GraphKey), merging GraphDefs with equal keys,
// and reorders graph_nodes rows by the new index (stable: file order within one GraphDef).
// Canonical input (keys already strictly increasing) is left untouched.
void NormalizeGraphs(TraceTables& t) {
  const std::vector<GraphKey>& keys = t.graph_keys;
  bool canonical = true;
  for (size_t i = 1; i < keys.size() && canonical; ++i) canonical = keys[i - 1] < keys[i];
  if (canonical) {
    t.graph_keys.clear();
    return;
  }
  std::vector<int32_t> order(keys.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return keys[a] < keys[b]; });
  std::vector<int32_t> renumber(keys.size());
  int32_t next = -1;
  for (size_t r = 0; r < order.size(); ++r) {
    if (r == 0 || !(keys[order[r - 1]] == keys[order[r]])) ++next;
    renumber[order[r]] = next;
  }
  GraphNodeTable& g = t.graph_nodes;
  const size_t n = g.size();
  std::vector<int32_t> rows(n);
  for (size_t i = 0; i < n; ++i) {
    g.graph_index[i] = renumber[g.graph_index[i]];
    rows[i] = static_cast<int32_t>(i);
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [&](int32_t a, int32_t b) { return g.graph_index[a] < g.graph_index[b]; });
  GraphNodeTable out;
  out.graph_index.reserve(n);
  out.name.reserve(n);
  out.op.reserve(n);
  out.device.reserve(n);
  for (int32_t r : rows) {
    out.graph_index.push_back(g.graph_index[r]);
    out.name.push_back(g.name[r]);
    out.op.push_back(g.op[r]);
    out.device.push_back(g.device[r]);
    for (int32_t k = g.inputs.offsets[r]; k < g.inputs.offsets[r + 1]; ++k) {
      const int32_t b = g.inputs.values.offsets[k];
      const int32_t e = g.inputs.values.offsets[k + 1];
      out.inputs.values.Append(std::string_view(g.inputs.values.data.data() + b,
                                                static_cast<size_t>(e - b)));
    }
    out.inputs.CloseRow();
  }
  g = std::move(out);
  t.graph_count = next + 1;
  t.graph_keys.clear();
}

}  // namespace

void TraceBuilder::Finish() {
  NormalizeGraphs(t_);
  EventTable& e = t_.events;
  e.event_id.clear();  // appended, not resized: no zeroing pass over fresh pages first
  e.event_id.reserve(e.size());
  for (size_t i = 0; i < e.size(); ++i) e.event_id.push_back(static_cast<int64_t>(i));
  DeviceTable& d = t_.devices;
  d.kind_name = StringColumn();
  for (uint8_t kind : d.kind) d.kind_name.Append(DeviceKindName(static_cast<DeviceKind>(kind)));
}

}  // namespace tracecore
