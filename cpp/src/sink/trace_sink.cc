#include "sink/trace_sink.h"

#include <stdexcept>
#include <string>

#include "sink/trace_semantics.h"

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

}  // namespace

TraceSink::TraceSink(TraceTables& out, bool arena)
    : arena_(arena), t_(out), planner_(out, arena_.enabled()) {
  std::fill(std::begin(node_names_), std::end(node_names_), StringPool::kInvalidUtf8);
}

int32_t TraceSink::BeginDevice() {
  const auto index = static_cast<int32_t>(t_.devices.device.size());
  t_.devices.device_index.push_back(index);
  t_.devices.device.push_back(StringPool::kEmptyId);
  t_.devices.line.push_back(StringPool::kEmptyId);
  PushFlag(t_.devices.line_valid, false);
  t_.devices.line_id.push_back(0);
  PushFlag(t_.devices.line_id_valid, false);
  t_.devices.kind_code.push_back(static_cast<uint8_t>(DeviceKind::kOther));
  t_.devices.n_events.push_back(0);
  return index;
}

void TraceSink::EndDevice(int32_t device_index, uint32_t device_name, size_t first_event,
                             size_t first_thread_name) {
  t_.devices.device[device_index] = device_name;
  t_.devices.kind_code[device_index] =
      static_cast<uint8_t>(ClassifyDevice(t_.pool.Get(device_name)));
  const size_t n = t_.events.size();
  std::fill(t_.events.device.begin() + first_event, t_.events.device.begin() + n, device_name);
  t_.devices.n_events[device_index] = static_cast<int64_t>(n - first_event);

  // thread_names is a map: a key seen twice keeps its last value (at the first key's place).
  KeepLastThreadNames(t_.thread_names, device_index, first_thread_name);
}

// One events row of a format whose events have no op times of their own, scheduling time or
// memory sizes (XSpace's AddTimedEvent, AddChromeEvent): those columns stay empty, and the
// export gives them start_ns and end_ns, nulls and zeros without storing them (EmptyFills in
// trace_tables.h): 41 of an XSpace event's 99 bytes of columns.
__attribute__((always_inline)) inline void TraceSink::PushEventRow(int32_t device_index, uint32_t node_name, uint32_t op,
                             uint32_t label, int64_t start, int64_t end, uint32_t thread_id) {
  EventTable& e = t_.events;
  e.device_index.push_back(device_index);
  e.device.push_back(StringPool::kEmptyId);  // filled by EndDevice
  e.node_name.push_back(node_name);
  const bool has_op = op != StringPool::kInvalidUtf8;
  e.op.push_back(has_op ? op : StringPool::kEmptyId);
  PushFlag(e.op_valid, has_op);
  e.timeline_label.push_back(label);
  e.start_ns.push_back(start);
  e.end_ns.push_back(end);
  e.thread_id.push_back(thread_id);
}

// The StepStats parsers' per-record path: writes every events column itself (on the 20 MB binary
// dump a shared row helper cost 0.56 M more instructions, +1.3%, callgrind).
const char* TraceSink::EndEvent(int32_t device_index, const EventFields& f) {
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
  PushFlag(e.scheduled_ns_valid, has_scheduled);
  e.thread_id.push_back(f.thread_id);
  e.temp_memory_size.push_back(f.temp_memory_size);
  e.persistent_memory_size.push_back(f.persistent_memory_size);
  return nullptr;
}

void TraceSink::AddTimedEvent(int32_t device_index, uint32_t node_name, uint32_t label,
                              uint32_t op, int64_t start_ns, int64_t end_ns, uint32_t thread_id,
                              const int64_t* step_id) {
  PushEventRow(device_index, node_name, op, label, start_ns, end_ns, thread_id);
  EventTable& e = t_.events;
  e.step_id.push_back(step_id != nullptr ? *step_id : 0);
  PushFlag(e.step_id_valid, step_id != nullptr);
}

void TraceSink::AddChromeEvent(int32_t device_index, uint32_t node_name, uint32_t label,
                               uint32_t op, uint32_t cat, int64_t start_ns, int64_t end_ns,
                               uint32_t thread_id) {
  PushEventRow(device_index, node_name, op, label, start_ns, end_ns, thread_id);
  EventTable& e = t_.events;
  const bool has_cat = cat != StringPool::kInvalidUtf8;
  e.cat.push_back(has_cat ? cat : StringPool::kEmptyId);
  PushFlag(e.cat_valid, has_cat);
}

void TraceSink::EndXLine(int32_t device_index, uint32_t plane_name, uint32_t line_name,
                         int64_t line_id, size_t first_event) {
  EndDevice(device_index, plane_name, first_event, t_.thread_names.size());
  DeviceTable& d = t_.devices;
  d.line[device_index] = line_name;
  d.line_valid[device_index] = 1;
  d.line_id[device_index] = line_id;
  d.line_id_valid[device_index] = 1;
  d.kind_code[device_index] =
      static_cast<uint8_t>(ClassifyXLine(t_.pool.Get(plane_name), t_.pool.Get(line_name)));
}

void TraceSink::DropEventsFrom(size_t first) {
  // Every events column is a Column<T> (no strings or lists); Derived ones are still empty.
  t_.events.ForEachColumn([first](const ColumnDef&, auto& column, Column<uint8_t>* valid) {
    if (column.size() > first) column.resize(first);
    if (valid != nullptr && valid->size() > first) valid->resize(first);
  });
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

uint32_t TraceSink::LabelFor(const EventFields& f) {
  return CachedIntern(t_.pool, label_of_node_, f.node_name, f.label);
}

uint32_t TraceSink::OpFor(const EventFields& f, uint32_t label) {
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

uint32_t TraceSink::DtypeId(int32_t dtype) {
  if (dtype >= 0 && dtype < 256) {
    uint32_t& cached = dtype_ids_[dtype];
    if (cached == 0) cached = t_.pool.Intern(DataTypeName(dtype));
    return cached;
  }
  return t_.pool.Intern(DataTypeName(dtype));
}

void TraceSink::EndTensor(int64_t event_id, int32_t output_index, const TensorFields& f) {
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

// Inlined (link-time) into the parsers: out of line it cost 0.19 M instructions (+0.4%) on the
// 20 MB binary dump (callgrind).
__attribute__((always_inline)) void TraceSink::EndAllocation(int64_t event_id, const AllocationFields& f,
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

void TraceSink::EndCostNode(const CostNodeFields& f) {
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

void TraceSink::EndGraphNode(int32_t graph_index, const GraphNodeFields& f) {
  GraphNodeTable& g = t_.graph_nodes;
  g.graph_index.push_back(graph_index);
  g.name.push_back(f.name);
  g.op.push_back(f.op);
  g.device.push_back(f.device);
  g.inputs.CloseRow();
}

void TraceSink::Finish() {
  // A column EmptyFills names is either left empty by the importer or filled on every row: a
  // table whose rows came from both EndEvent and AddTimedEvent/AddChromeEvent would be neither.
  const size_t rows = t_.events.size();
  t_.events.ForEachColumn([rows](const ColumnDef& def, const auto& column, const Column<uint8_t>*) {
    if (EmptyFillOf<EventTable>(def.name).fill == EmptyFill::kNone) return;
    if (column.size() != 0 && column.size() != rows) {
      throw std::logic_error(std::string("events.") + def.name + " is neither empty nor full");
    }
  });
  FinishDerivedColumns(t_);
}

}  // namespace tracecore
