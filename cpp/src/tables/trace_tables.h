// The parsed trace: every table's columns, and the one string pool their names index.
//
// Dictionary-encoded columns hold StringPool ids (uint32). Nullable columns keep a byte per row
// in a `*_valid` vector (1 = present). Once a parse finishes the
// tables are immutable and shared (std::shared_ptr<const TraceTables>) by every export and query.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "containers/columns.h"
#include "containers/string_pool.h"

namespace tracecore {

enum class DeviceKind : uint8_t { kExecutor = 0, kStream, kStreamAll, kMemcpy, kOther };
const char* DeviceKindName(DeviceKind kind);
DeviceKind ClassifyDevice(std::string_view device);

struct DeviceTable {
  Column<int32_t> device_index;
  Column<uint32_t> device;
  Column<uint8_t> kind;  // DeviceKind
  StringColumn kind_name;     // DeviceKindName(kind), filled by TraceBuilder::Finish
  Column<int64_t> n_events;
  size_t size() const { return device.size(); }
};

struct EventTable {
  Column<int64_t> event_id;
  Column<int32_t> device_index;
  Column<uint32_t> device;
  Column<uint32_t> node_name;
  Column<uint32_t> op;
  Column<uint8_t> op_valid;
  Column<uint32_t> timeline_label;  // interned: a graph's labels repeat every step
  Column<int64_t> start_ns;
  Column<int64_t> end_ns;
  Column<int64_t> op_start_ns;
  Column<int64_t> op_end_ns;
  Column<int64_t> scheduled_ns;
  Column<uint8_t> scheduled_valid;
  Column<uint32_t> thread_id;
  Column<int64_t> temp_memory_size;
  Column<int64_t> persistent_memory_size;
  size_t size() const { return node_name.size(); }
};

struct TensorTable {
  Column<int64_t> event_id;
  Column<int32_t> output_index;
  Column<int32_t> slot;
  Column<uint32_t> dtype;
  ListColumn<int64_t> shape;
  Column<uint8_t> unknown_rank;
  Column<int64_t> num_elements;
  Column<uint8_t> num_elements_valid;
  Column<int64_t> requested_bytes;
  Column<int64_t> allocated_bytes;
  Column<uint32_t> allocator;
  Column<int64_t> allocation_id;
  Column<uint64_t> ptr;
  Column<uint8_t> has_single_reference;
  size_t size() const { return event_id.size(); }
};

struct AllocationTable {
  Column<int64_t> event_id;
  Column<uint32_t> allocator;
  Column<int64_t> total_bytes;
  Column<int64_t> peak_bytes;
  Column<int64_t> live_bytes;
  Column<int64_t> allocator_bytes_in_use;
  size_t size() const { return event_id.size(); }
};

struct AllocRecordTable {
  Column<int64_t> event_id;
  Column<uint32_t> allocator;
  Column<int64_t> time_ns;
  Column<int64_t> bytes;
  size_t size() const { return event_id.size(); }
};

struct CostGraphTable {
  Column<uint32_t> name;
  Column<uint32_t> device;
  Column<int32_t> id;
  Column<int64_t> compute_cost;
  Column<int64_t> compute_time;
  Column<int64_t> memory_time;
  Column<int64_t> temporary_memory_size;
  Column<int64_t> persistent_memory_size;
  Column<uint8_t> is_final;
  Column<uint8_t> inaccurate;
  ListColumn<int32_t> input_nodes;
  ListColumn<int32_t> control_inputs;
  ListColumn<int64_t> output_sizes;
  size_t size() const { return name.size(); }
};

struct GraphNodeTable {
  Column<int32_t> graph_index;
  Column<uint32_t> name;
  Column<uint32_t> op;
  Column<uint32_t> device;
  ListStringColumn inputs;
  size_t size() const { return name.size(); }
};

struct ThreadNameTable {
  Column<int32_t> device_index;
  Column<uint32_t> thread_id;
  StringColumn name;
  size_t size() const { return device_index.size(); }
};

struct PersistentTensorTable {
  Column<int64_t> event_id;
  Column<int64_t> allocation_id;
  size_t size() const { return event_id.size(); }
};

// Where a GraphDef sits in a RunMetadata, in the order protobuf presents them: every top-level
// partition_graphs first (fg == 0), then per function_graphs message (fg = its position in the
// input) its partition_graphs, pre_optimization_graph, post_optimization_graph (slot 0, 1, 2).
// `pos` orders repeated partition graphs; it is 0 for the singular pre/post graphs, so that
// one of them seen twice is one GraphDef (protobuf merges repeated singular message fields).
struct GraphKey {
  uintptr_t fg = 0;
  uint8_t slot = 0;
  uintptr_t pos = 0;
  bool operator<(const GraphKey& o) const {
    if (fg != o.fg) return fg < o.fg;
    if (slot != o.slot) return slot < o.slot;
    return pos < o.pos;
  }
  bool operator==(const GraphKey& o) const { return fg == o.fg && slot == o.slot && pos == o.pos; }
};

struct TraceTables {
  StringPool pool;
  DeviceTable devices;
  EventTable events;
  TensorTable tensors;
  AllocationTable allocations;
  AllocRecordTable alloc_records;
  CostGraphTable cost_graph;
  GraphNodeTable graph_nodes;
  ThreadNameTable thread_names;
  PersistentTensorTable persistent_tensors;

  std::string kind;    // "StepStats" | "RunMetadata"
  std::string format;  // "text" | "binary"
  uint64_t input_bytes = 0;
  uint64_t unknown_fields = 0;
  int32_t graph_count = 0;  // GraphDefs seen (graph_index values), including empty ones
  std::vector<GraphKey> graph_keys;  // per provisional graph_index, until TraceBuilder::Finish
  int threads_used = 1;
};

}  // namespace tracecore
