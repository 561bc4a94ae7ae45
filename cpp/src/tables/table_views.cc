#include "tables/table_views.h"

#include <stdexcept>

namespace tracecore {
namespace columns {
namespace {
template <class T>
ColumnView List(const char* n, ColumnKind kind, const ListColumn<T>& l) {
  ColumnView c{n, kind, static_cast<int64_t>(l.size())};
  c.list_offsets = l.offsets.data();
  c.values = l.values.data();
  c.values_length = static_cast<int64_t>(l.values.size());
  return c;
}
}  // namespace

ColumnView String(const char* n, const StringColumn& s) {
  ColumnView c{n, ColumnKind::kString, static_cast<int64_t>(s.size())};
  c.strings = &s;
  return c;
}
ColumnView ListInt32(const char* n, const ListColumn<int32_t>& l) { return List(n, ColumnKind::kListInt32, l); }
ColumnView ListInt64(const char* n, const ListColumn<int64_t>& l) { return List(n, ColumnKind::kListInt64, l); }
ColumnView ListString(const char* n, const ListStringColumn& l) {
  ColumnView c{n, ColumnKind::kListString, static_cast<int64_t>(l.size())};
  c.list_offsets = l.offsets.data();
  c.strings = &l.values;
  c.values_length = static_cast<int64_t>(l.values.size());
  return c;
}
}  // namespace columns

TableView MakeTableView(int64_t rows, std::vector<ColumnView> cols) {
  for (const ColumnView& c : cols) {
    if (c.length != rows) throw std::logic_error(std::string("column length mismatch: ") + c.name);
  }
  return TableView{std::move(cols), rows};
}

namespace {
using namespace columns;
template <class A>
ColumnView I32(const char* n, const std::vector<int32_t, A>& v) { return Int32(n, v); }
template <class A>
ColumnView I64(const char* n, const std::vector<int64_t, A>& v, const Column<uint8_t>* valid = nullptr) {
  return Int64(n, v, valid);
}
template <class A>
ColumnView U32(const char* n, const std::vector<uint32_t, A>& v) { return UInt32(n, v); }
template <class A>
ColumnView U64(const char* n, const std::vector<uint64_t, A>& v) { return UInt64(n, v); }
ColumnView Str(const char* n, const StringColumn& s) { return String(n, s); }
ColumnView ListStr(const char* n, const ListStringColumn& l) { return ListString(n, l); }
TableView Make(int64_t rows, std::vector<ColumnView> cols) { return MakeTableView(rows, std::move(cols)); }
}  // namespace

const std::vector<std::string>& TableNames() {
  static const std::vector<std::string> names = {
      "devices",   "events",      "tensors",      "allocations",       "alloc_records",
      "cost_graph", "graph_nodes", "thread_names", "persistent_tensors"};
  return names;
}

TableView DescribeTable(const TraceTables& t, std::string_view name) {
  if (name == "devices") {
    const DeviceTable& d = t.devices;
    return Make(static_cast<int64_t>(d.size()),
                {I32("device_index", d.device_index), Dict("device", d.device),
                 Str("kind", d.kind_name), I64("n_events", d.n_events)});
  }
  if (name == "events") {
    const EventTable& e = t.events;
    return Make(static_cast<int64_t>(e.size()),
                {I64("event_id", e.event_id), I32("device_index", e.device_index),
                 Dict("device", e.device), Dict("node_name", e.node_name),
                 Dict("op", e.op, &e.op_valid), Dict("timeline_label", e.timeline_label),
                 I64("start_ns", e.start_ns), I64("end_ns", e.end_ns),
                 I64("op_start_ns", e.op_start_ns), I64("op_end_ns", e.op_end_ns),
                 I64("scheduled_ns", e.scheduled_ns, &e.scheduled_valid),
                 U32("thread_id", e.thread_id), I64("temp_memory_size", e.temp_memory_size),
                 I64("persistent_memory_size", e.persistent_memory_size)});
  }
  if (name == "tensors") {
    const TensorTable& x = t.tensors;
    return Make(static_cast<int64_t>(x.size()),
                {I64("event_id", x.event_id), I32("output_index", x.output_index),
                 I32("slot", x.slot), Dict("dtype", x.dtype),
                 ListInt64("shape", x.shape),
                 Bool("unknown_rank", x.unknown_rank),
                 I64("num_elements", x.num_elements, &x.num_elements_valid),
                 I64("requested_bytes", x.requested_bytes),
                 I64("allocated_bytes", x.allocated_bytes), Dict("allocator", x.allocator),
                 I64("allocation_id", x.allocation_id), U64("ptr", x.ptr),
                 Bool("has_single_reference", x.has_single_reference)});
  }
  if (name == "allocations") {
    const AllocationTable& a = t.allocations;
    return Make(static_cast<int64_t>(a.size()),
                {I64("event_id", a.event_id), Dict("allocator", a.allocator),
                 I64("total_bytes", a.total_bytes), I64("peak_bytes", a.peak_bytes),
                 I64("live_bytes", a.live_bytes),
                 I64("allocator_bytes_in_use", a.allocator_bytes_in_use)});
  }
  if (name == "alloc_records") {
    const AllocRecordTable& r = t.alloc_records;
    return Make(static_cast<int64_t>(r.size()),
                {I64("event_id", r.event_id), Dict("allocator", r.allocator),
                 I64("time_ns", r.time_ns), I64("bytes", r.bytes)});
  }
  if (name == "cost_graph") {
    const CostGraphTable& c = t.cost_graph;
    return Make(static_cast<int64_t>(c.size()),
                {Dict("name", c.name), Dict("device", c.device), I32("id", c.id),
                 I64("compute_cost", c.compute_cost), I64("compute_time", c.compute_time),
                 I64("memory_time", c.memory_time),
                 I64("temporary_memory_size", c.temporary_memory_size),
                 I64("persistent_memory_size", c.persistent_memory_size),
                 Bool("is_final", c.is_final), Bool("inaccurate", c.inaccurate),
                 ListInt32("input_nodes", c.input_nodes),
                 ListInt32("control_inputs", c.control_inputs),
                 ListInt64("output_sizes", c.output_sizes)});
  }
  if (name == "graph_nodes") {
    const GraphNodeTable& g = t.graph_nodes;
    return Make(static_cast<int64_t>(g.size()),
                {I32("graph_index", g.graph_index), Dict("name", g.name), Dict("op", g.op),
                 Dict("device", g.device), ListStr("inputs", g.inputs)});
  }
  if (name == "thread_names") {
    const ThreadNameTable& n = t.thread_names;
    return Make(static_cast<int64_t>(n.size()),
                {I32("device_index", n.device_index), U32("thread_id", n.thread_id),
                 Str("name", n.name)});
  }
  if (name == "persistent_tensors") {
    const PersistentTensorTable& p = t.persistent_tensors;
    return Make(static_cast<int64_t>(p.size()),
                {I64("event_id", p.event_id), I64("allocation_id", p.allocation_id)});
  }
  throw std::out_of_range("no table named '" + std::string(name) + "'");
}

}  // namespace tracecore
