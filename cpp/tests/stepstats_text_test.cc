// The StepStats / RunMetadata importer on protobuf text format (importers/stepstats/text): a
// small StepStats and a small RunMetadata in, every row of every table out; errors with the
// line and column of the offending byte.
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "trace_fixture.h"
#include "unit_test.h"

using tracecore::Encoding;
using tracecore::TraceFormatError;
using tracecore::TraceKind;
using tracecore::TraceTables;
using tracecore::unit::Lists;
using tracecore::unit::Names;
using tracecore::unit::ReadText;
using tracecore::unit::Strings;

namespace {

const char* const kGpu = "/job:localhost/replica:0/task:0/device:GPU:0";
const char* const kStream = "/device:GPU:0/stream:12";

// Two device blocks. The first names its device after its events (the sink fills the name
// into them at the block's end); its first event has an output and allocator usage.
const char* const kStepStats = R"pb(dev_stats {
  node_stats {
    node_name: "MatMul"
    all_start_micros: 100
    op_start_rel_micros: 2
    op_end_rel_micros: 8
    all_end_rel_micros: 10
    scheduled_micros: 99
    thread_id: 7
    timeline_label: "MatMul = MatMul(a, b)"
    output {
      slot: 1
      tensor_description {
        dtype: DT_FLOAT
        shape { dim { size: 2 } dim { size: 3 } }
        allocation_description {
          requested_bytes: 24
          allocated_bytes: 32
          allocator_name: "GPU_0_bfc"
          allocation_id: 5
          ptr: 4096
          has_single_reference: true
        }
      }
    }
    memory {
      allocator_name: "GPU_0_bfc"
      total_bytes: 32 peak_bytes: 64
      live_bytes: 32 allocator_bytes_in_use: 1000
      allocation_records { alloc_micros: 101 alloc_bytes: 32 }
      allocation_records { alloc_micros: 109 alloc_bytes: -32 }
    }
  }
  node_stats {
    node_name: "add"
    all_start_micros: 112
    all_end_rel_micros: 3
    thread_id: 7
  }
  device: "/job:localhost/replica:0/task:0/device:GPU:0"
  thread_names { key: 7 value: "compute" }
}
dev_stats {
  device: "/device:GPU:0/stream:12"
  node_stats {
    node_name: "MatMul:MatMul"
    all_start_nanos: 102500
    all_end_rel_nanos: 5000
    op_end_rel_nanos: 5000
    thread_id: 12
  }
}
)pb";

}  // namespace

TEST(StepStatsText, DevicesOfAStepStats) {
  const auto t = ReadText(kStepStats);
  EXPECT_TRUE(t->kind == TraceKind::kStepStats);
  EXPECT_TRUE(t->format == Encoding::kText);
  EXPECT_EQ(t->unknown_fields, 0u);
  EXPECT_COLUMN(t->devices.device_index, {0, 1});
  EXPECT_COLUMN(Names(t->pool, t->devices.device), {kGpu, kStream});
  EXPECT_COLUMN(Strings(t->devices.kind), {"executor", "stream"});
  EXPECT_COLUMN(t->devices.n_events, {2, 1});
  EXPECT_COLUMN(t->thread_names.device_index, {0});
  EXPECT_COLUMN(t->thread_names.thread_id, {7u});
  EXPECT_COLUMN(Strings(t->thread_names.name), {"compute"});
}

TEST(StepStatsText, EventsOfAStepStats) {
  const auto t = ReadText(kStepStats);
  const tracecore::EventTable& e = t->events;
  EXPECT_COLUMN(e.event_id, {0, 1, 2});
  EXPECT_COLUMN(e.device_index, {0, 0, 1});
  EXPECT_COLUMN(Names(t->pool, e.device), {kGpu, kGpu, kStream});
  EXPECT_COLUMN(Names(t->pool, e.node_name), {"MatMul", "add", "MatMul:MatMul"});
  // The op: from the label, none for "add" (no label, no ':'), after the ':' of a stream's node.
  EXPECT_COLUMN(e.op_valid, {1, 0, 1});
  EXPECT_EQ(t->pool.Get(e.op[0]), "MatMul");
  EXPECT_EQ(t->pool.Get(e.op[2]), "MatMul");
  EXPECT_COLUMN(Names(t->pool, e.timeline_label), {"MatMul = MatMul(a, b)", "", ""});
  // micros x 1000; nanos as they are: 102500 + 5000.
  EXPECT_COLUMN(e.start_ns, {100000, 112000, 102500});
  EXPECT_COLUMN(e.end_ns, {110000, 115000, 107500});
  EXPECT_COLUMN(e.op_start_ns, {102000, 112000, 102500});
  EXPECT_COLUMN(e.op_end_ns, {108000, 112000, 107500});
  EXPECT_COLUMN(e.scheduled_ns_valid, {1, 0, 0});
  EXPECT_EQ(e.scheduled_ns[0], 99000);
  EXPECT_COLUMN(e.thread_id, {7u, 7u, 12u});
  EXPECT_COLUMN(e.temp_memory_size, {0, 0, 0});
}

TEST(StepStatsText, TensorsAndMemoryOfAStepStats) {
  const auto t = ReadText(kStepStats);
  const tracecore::TensorTable& x = t->tensors;
  EXPECT_COLUMN(x.event_id, {0});
  EXPECT_COLUMN(x.output_index, {0});
  EXPECT_COLUMN(x.slot, {1});
  EXPECT_COLUMN(Names(t->pool, x.dtype), {"DT_FLOAT"});
  EXPECT_COLUMN(Lists(x.shape), {{2, 3}});
  EXPECT_COLUMN(x.unknown_rank, {0});
  EXPECT_COLUMN(x.num_elements, {6});
  EXPECT_COLUMN(x.num_elements_valid, {1});
  EXPECT_COLUMN(x.requested_bytes, {24});
  EXPECT_COLUMN(x.allocated_bytes, {32});
  EXPECT_COLUMN(Names(t->pool, x.allocator), {"GPU_0_bfc"});
  EXPECT_COLUMN(x.allocation_id, {5});
  EXPECT_COLUMN(x.ptr, {4096u});
  EXPECT_COLUMN(x.has_single_reference, {1});

  const tracecore::AllocationTable& a = t->allocations;
  EXPECT_COLUMN(a.event_id, {0});
  EXPECT_COLUMN(Names(t->pool, a.allocator), {"GPU_0_bfc"});
  EXPECT_COLUMN(a.total_bytes, {32});
  EXPECT_COLUMN(a.peak_bytes, {64});
  EXPECT_COLUMN(a.live_bytes, {32});
  EXPECT_COLUMN(a.allocator_bytes_in_use, {1000});

  const tracecore::AllocRecordTable& r = t->alloc_records;
  EXPECT_COLUMN(r.event_id, {0, 0});
  EXPECT_COLUMN(Names(t->pool, r.allocator), {"GPU_0_bfc", "GPU_0_bfc"});
  EXPECT_COLUMN(r.time_ns, {101000, 109000});
  EXPECT_COLUMN(r.bytes, {32, -32});
  EXPECT_EQ(t->cost_graph.size(), 0u);
  EXPECT_EQ(t->graph_nodes.size(), 0u);
}

TEST(StepStatsText, ARunMetadataWithCostGraphAndGraphs) {
  const auto t = ReadText(R"pb(step_stats {
  dev_stats {
    device: "/job:localhost/replica:0/task:0/device:CPU:0"
    node_stats {
      node_name: "x"
      all_start_nanos: 1500
      op_start_rel_nanos: 10
      op_end_rel_nanos: 200
      all_end_rel_nanos: 250
      thread_id: 3
      memory_stats {
        temp_memory_size: 8
        persistent_memory_size: 16
        persistent_tensor_alloc_ids: 4
        persistent_tensor_alloc_ids: 9
      }
    }
  }
}
cost_graph {
  node {
    name: "x"
    device: "/cpu"
    id: 1
    compute_cost: 5
    compute_time: 6
    input_info { preceding_node: 0 }
    control_input: 2
    output_info { size: 24 }
    is_final: true
  }
}
partition_graphs {
  node { name: "x" op: "Const" device: "/cpu" input: "y" input: "^z" }
  node { name: "y" op: "NoOp" }
}
session_metadata { name: "s" version: 3 }
)pb");
  EXPECT_TRUE(t->kind == TraceKind::kRunMetadata);
  EXPECT_EQ(t->unknown_fields, 0u);
  EXPECT_COLUMN(Names(t->pool, t->devices.device), {"/job:localhost/replica:0/task:0/device:CPU:0"});
  EXPECT_COLUMN(Strings(t->devices.kind), {"executor"});
  const tracecore::EventTable& e = t->events;
  EXPECT_COLUMN(Names(t->pool, e.node_name), {"x"});
  EXPECT_COLUMN(e.op_valid, {0});
  EXPECT_COLUMN(e.start_ns, {1500});
  EXPECT_COLUMN(e.end_ns, {1750});
  EXPECT_COLUMN(e.op_start_ns, {1510});
  EXPECT_COLUMN(e.op_end_ns, {1700});
  EXPECT_COLUMN(e.thread_id, {3u});
  EXPECT_COLUMN(e.temp_memory_size, {8});
  EXPECT_COLUMN(e.persistent_memory_size, {16});
  EXPECT_COLUMN(t->persistent_tensors.event_id, {0, 0});
  EXPECT_COLUMN(t->persistent_tensors.allocation_id, {4, 9});

  const tracecore::CostGraphTable& c = t->cost_graph;
  EXPECT_COLUMN(Names(t->pool, c.name), {"x"});
  EXPECT_COLUMN(Names(t->pool, c.device), {"/cpu"});
  EXPECT_COLUMN(c.id, {1});
  EXPECT_COLUMN(c.compute_cost, {5});
  EXPECT_COLUMN(c.compute_time, {6});
  EXPECT_COLUMN(c.is_final, {1});
  EXPECT_COLUMN(Lists(c.input_nodes), {{0}});
  EXPECT_COLUMN(Lists(c.control_inputs), {{2}});
  EXPECT_COLUMN(Lists(c.output_sizes), {{24}});

  const tracecore::GraphNodeTable& g = t->graph_nodes;
  EXPECT_EQ(t->graph_count, 1);
  EXPECT_COLUMN(g.graph_index, {0, 0});
  EXPECT_COLUMN(Names(t->pool, g.name), {"x", "y"});
  EXPECT_COLUMN(Names(t->pool, g.op), {"Const", "NoOp"});
  EXPECT_COLUMN(Names(t->pool, g.device), {"/cpu", ""});
  ASSERT_EQ(g.inputs.size(), 2u);
  EXPECT_EQ(g.inputs.offsets[1], 2);
  EXPECT_EQ(g.inputs.offsets[2], 2);
  EXPECT_COLUMN(Strings(g.inputs.values), {"y", "^z"});
}

TEST(StepStatsText, UnknownFieldsAreCountedAndSkipped) {
  const auto t = ReadText(
      "dev_stats { future_field: 1 node_stats { node_name: \"a\" other { x: 2 } "
      "all_start_micros: 4 } }\nsomething_else: \"s\"\n");
  EXPECT_EQ(t->unknown_fields, 3u);
  EXPECT_COLUMN(Names(t->pool, t->events.node_name), {"a"});
  EXPECT_COLUMN(t->events.start_ns, {4000});
}

TEST(StepStatsText, ErrorsGiveTheirLineAndColumn) {
  // Line 3: four spaces, "all_start_micros" (columns 5-20), ':' and a space: 'a' at column 23.
  const std::string bad_number = "dev_stats {\n  node_stats {\n    all_start_micros: abc\n  }\n}\n";
  try {
    ReadText(bad_number);
    tracecore::unit::Fail(__FILE__, __LINE__, "no TraceFormatError for a bad number");
  } catch (const TraceFormatError& e) {
    EXPECT_TRUE(e.where == TraceFormatError::Where::kText);
    EXPECT_EQ(e.line, 3u);
    EXPECT_EQ(e.column, 23u);
    EXPECT_EQ(std::string(e.what()).rfind("line 3, column 23: ", 0), 0u);
  }
  // The input ends inside node_stats, opened by the '{' at line 2, column 14.
  EXPECT_THROW_WITH(ReadText("dev_stats {\n  node_stats {\n    node_name: \"a\"\n"),
                    TraceFormatError, "expected '}' to close 'node_stats' opened at line 2, column 14");
  EXPECT_THROW_WITH(ReadText("  \n\n"), TraceFormatError, "line 3, column 1: empty input");
  EXPECT_THROW_WITH(ReadText("unrelated: 1\n"), TraceFormatError,
                    "line 1, column 1: no StepStats ('dev_stats') or RunMetadata ('step_stats') field found");
  // A time whose nanoseconds overflow int64: at the node_stats' '{' (line 1, column 24).
  EXPECT_THROW_WITH(ReadText("dev_stats { node_stats { all_start_micros: 9223372036854775807 } }"),
                    TraceFormatError, "line 1, column 24: event time out of range");
}
