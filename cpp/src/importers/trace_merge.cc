#include "importers/trace_merge.h"

#include <algorithm>
#include <stdexcept>

namespace tracecore {
namespace {

template <class T>
void Append(std::vector<T>& dst, const std::vector<T>& src) {
  dst.insert(dst.end(), src.begin(), src.end());
}

template <class T>
void AppendShifted(std::vector<T>& dst, const std::vector<T>& src, T shift) {
  const size_t base = dst.size();
  dst.resize(base + src.size());
  for (size_t i = 0; i < src.size(); ++i) dst[base + i] = src[i] + shift;
}

void AppendIds(std::vector<uint32_t>& dst, const std::vector<uint32_t>& src,
               const std::vector<uint32_t>& remap) {
  const size_t base = dst.size();
  dst.resize(base + src.size());
  for (size_t i = 0; i < src.size(); ++i) dst[base + i] = remap[src[i]];
}

void AppendOffsets(std::vector<int32_t>& dst, const std::vector<int32_t>& src) {
  // Both start with a 0 entry; src's are shifted by dst's last offset.
  const int64_t shift = dst.back();
  if (shift + src.back() > 0x7FFFFFFF) throw std::length_error("column exceeds 2^31 values");
  const size_t base = dst.size();
  dst.resize(base + src.size() - 1);
  for (size_t i = 1; i < src.size(); ++i) dst[base + i - 1] = static_cast<int32_t>(src[i] + shift);
}

void AppendStrings(StringColumn& dst, const StringColumn& src) {
  AppendOffsets(dst.offsets, src.offsets);
  Append(dst.data, src.data);
}

template <class T>
void AppendList(ListColumn<T>& dst, const ListColumn<T>& src) {
  AppendOffsets(dst.offsets, src.offsets);
  Append(dst.values, src.values);
}

}  // namespace

void MergeTables(std::vector<std::unique_ptr<TraceTables>>& parts, TraceTables* out) {
  // The first part becomes the output as it is (its ids already are the sequential ones); the
  // others are appended and freed one by one, so the peak is one part above the result.
  const std::string format = out->format;
  const uint64_t input_bytes = out->input_bytes;
  *out = std::move(*parts.front());
  out->format = format;
  out->input_bytes = input_bytes;
  parts.front().reset();
  int64_t event_base = static_cast<int64_t>(out->events.size());
  int32_t device_base = static_cast<int32_t>(out->devices.size());
  int32_t graph_base = out->graph_count;
  for (size_t k = 1; k < parts.size(); ++k) {
    auto& part_ptr = parts[k];
    const TraceTables& p = *part_ptr;
    std::vector<uint32_t> remap(p.pool.size());
    for (uint32_t id = 0; id < p.pool.size(); ++id) remap[id] = out->pool.Intern(p.pool.Get(id));

    const DeviceTable& d = p.devices;
    AppendShifted(out->devices.device_index, d.device_index, device_base);
    AppendIds(out->devices.device, d.device, remap);
    Append(out->devices.kind, d.kind);
    Append(out->devices.n_events, d.n_events);

    const EventTable& e = p.events;
    EventTable& oe = out->events;
    AppendShifted(oe.device_index, e.device_index, device_base);
    AppendIds(oe.device, e.device, remap);
    AppendIds(oe.node_name, e.node_name, remap);
    AppendIds(oe.op, e.op, remap);
    Append(oe.op_valid, e.op_valid);
    AppendIds(oe.timeline_label, e.timeline_label, remap);
    Append(oe.start_ns, e.start_ns);
    Append(oe.end_ns, e.end_ns);
    Append(oe.op_start_ns, e.op_start_ns);
    Append(oe.op_end_ns, e.op_end_ns);
    Append(oe.scheduled_ns, e.scheduled_ns);
    Append(oe.scheduled_valid, e.scheduled_valid);
    Append(oe.thread_id, e.thread_id);
    Append(oe.temp_memory_size, e.temp_memory_size);
    Append(oe.persistent_memory_size, e.persistent_memory_size);

    const TensorTable& x = p.tensors;
    TensorTable& ox = out->tensors;
    AppendShifted(ox.event_id, x.event_id, event_base);
    Append(ox.output_index, x.output_index);
    Append(ox.slot, x.slot);
    AppendIds(ox.dtype, x.dtype, remap);
    AppendList(ox.shape, x.shape);
    Append(ox.unknown_rank, x.unknown_rank);
    Append(ox.num_elements, x.num_elements);
    Append(ox.num_elements_valid, x.num_elements_valid);
    Append(ox.requested_bytes, x.requested_bytes);
    Append(ox.allocated_bytes, x.allocated_bytes);
    AppendIds(ox.allocator, x.allocator, remap);
    Append(ox.allocation_id, x.allocation_id);
    Append(ox.ptr, x.ptr);
    Append(ox.has_single_reference, x.has_single_reference);

    const AllocationTable& a = p.allocations;
    AllocationTable& oa = out->allocations;
    AppendShifted(oa.event_id, a.event_id, event_base);
    AppendIds(oa.allocator, a.allocator, remap);
    Append(oa.total_bytes, a.total_bytes);
    Append(oa.peak_bytes, a.peak_bytes);
    Append(oa.live_bytes, a.live_bytes);
    Append(oa.allocator_bytes_in_use, a.allocator_bytes_in_use);

    const AllocRecordTable& r = p.alloc_records;
    AllocRecordTable& orr = out->alloc_records;
    AppendShifted(orr.event_id, r.event_id, event_base);
    AppendIds(orr.allocator, r.allocator, remap);
    Append(orr.time_ns, r.time_ns);
    Append(orr.bytes, r.bytes);

    const CostGraphTable& c = p.cost_graph;
    CostGraphTable& oc = out->cost_graph;
    AppendIds(oc.name, c.name, remap);
    AppendIds(oc.device, c.device, remap);
    Append(oc.id, c.id);
    Append(oc.compute_cost, c.compute_cost);
    Append(oc.compute_time, c.compute_time);
    Append(oc.memory_time, c.memory_time);
    Append(oc.temporary_memory_size, c.temporary_memory_size);
    Append(oc.persistent_memory_size, c.persistent_memory_size);
    Append(oc.is_final, c.is_final);
    Append(oc.inaccurate, c.inaccurate);
    AppendList(oc.input_nodes, c.input_nodes);
    AppendList(oc.control_inputs, c.control_inputs);
    AppendList(oc.output_sizes, c.output_sizes);

    const GraphNodeTable& g = p.graph_nodes;
    GraphNodeTable& og = out->graph_nodes;
    AppendShifted(og.graph_index, g.graph_index, graph_base);
    AppendIds(og.name, g.name, remap);
    AppendIds(og.op, g.op, remap);
    AppendIds(og.device, g.device, remap);
    AppendOffsets(og.inputs.offsets, g.inputs.offsets);
    AppendStrings(og.inputs.values, g.inputs.values);

    const ThreadNameTable& tn = p.thread_names;
    AppendShifted(out->thread_names.device_index, tn.device_index, device_base);
    Append(out->thread_names.thread_id, tn.thread_id);
    AppendStrings(out->thread_names.name, tn.name);

    AppendShifted(out->persistent_tensors.event_id, p.persistent_tensors.event_id, event_base);
    Append(out->persistent_tensors.allocation_id, p.persistent_tensors.allocation_id);

    out->unknown_fields += p.unknown_fields;
    event_base += static_cast<int64_t>(e.size());
    device_base += static_cast<int32_t>(d.size());
    out->graph_keys.insert(out->graph_keys.end(), p.graph_keys.begin(), p.graph_keys.end());
    graph_base += p.graph_count;
    out->graph_count += p.graph_count;
    if (out->kind.empty()) out->kind = p.kind;
    part_ptr.reset();  // free the chunk as soon as it is merged
  }
}

}  // namespace tracecore
