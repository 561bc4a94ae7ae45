// The merge of chunks parsed in parallel (sink/trace_merge): two parts of one text RunMetadata,
// each parsed on its own, merge into the rows of one sequential parse, with event, device and
// graph references shifted and string ids remapped into the first part's pool.
#include <memory>
#include <string>
#include <vector>

#include "importers/stepstats/text/text_parser.h"
#include "sink/trace_merge.h"
#include "sink/trace_sink.h"
#include "trace_fixture.h"
#include "unit_test.h"

using tracecore::TraceSink;
using tracecore::TraceTables;
using tracecore::unit::Names;
using tracecore::unit::ReadText;

namespace {

// Two halves of one RunMetadata, each a whole message too (step_stats given twice merges).
const std::string kFirst = R"(step_stats {
  dev_stats {
    device: "/device:CPU:0"
    node_stats {
      node_name: "a"
      all_start_micros: 1
      all_end_rel_micros: 2
      memory { allocator_name: "cpu" allocation_records { alloc_micros: 1 alloc_bytes: 8 } }
    }
    thread_names { key: 1 value: "t" }
  }
}
partition_graphs { node { name: "a" op: "A" } }
)";
const std::string kSecond = R"(step_stats {
  dev_stats {
    device: "/device:GPU:0"
    node_stats {
      node_name: "b"
      all_start_micros: 3
      all_end_rel_micros: 4
      output {
        tensor_description {
          dtype: DT_INT32
          allocation_description { allocator_name: "gpu" requested_bytes: 20 }
        }
      }
      memory { allocator_name: "gpu" allocation_records { alloc_micros: 3 alloc_bytes: 20 } }
    }
    node_stats { node_name: "a" all_start_micros: 5 extra: 1 }
  }
}
partition_graphs { node { name: "b" op: "A" } }
)";

std::vector<std::string> PoolStrings(const TraceTables& t) {
  std::vector<std::string> out;
  for (uint32_t id = 0; id < t.pool.size(); ++id) out.emplace_back(t.pool.Get(id));
  return out;
}

}  // namespace

TEST(TraceMerge, PartsMergeIntoTheRowsOfOneParse) {
  // One buffer, as one mapped file: graph keys are positions in it.
  const std::string whole = kFirst + kSecond;
  const char* split = whole.data() + kFirst.size();
  std::vector<std::unique_ptr<TraceTables>> parts;
  for (const auto& [begin, end] : {std::pair(whole.data(), split), std::pair(split, whole.data() + whole.size())}) {
    parts.push_back(std::make_unique<TraceTables>());
    TraceSink sink(*parts.back(), false);
    tracecore::ParseTextProto(begin, end, sink);
  }
  // Each part's pool, in the order its parse met the strings ("gpu" before the dtype: the
  // allocator is read inside the output, its dtype's name interned when the output closes).
  EXPECT_COLUMN(PoolStrings(*parts[0]), {"", "/device:CPU:0", "a", "cpu", "A"});
  EXPECT_COLUMN(PoolStrings(*parts[1]), {"", "/device:GPU:0", "b", "gpu", "DT_INT32", "a", "A"});
  EXPECT_COLUMN(parts[1]->events.node_name, {2u, 5u});

  TraceTables merged;
  merged.input_bytes = whole.size();
  tracecore::MergeTables(parts, &merged);
  TraceSink(merged).Finish();

  // Part 1's new strings are appended to part 0's pool; "", "a" and "A" keep part 0's ids.
  EXPECT_COLUMN(PoolStrings(merged), {"", "/device:CPU:0", "a", "cpu", "A", "/device:GPU:0", "b", "gpu", "DT_INT32"});
  EXPECT_EQ(merged.input_bytes, whole.size());
  EXPECT_TRUE(merged.kind == tracecore::TraceKind::kRunMetadata);
  EXPECT_EQ(merged.unknown_fields, 1u);  // part 1's "extra"

  EXPECT_COLUMN(merged.devices.device_index, {0, 1});
  EXPECT_COLUMN(merged.devices.device, {1u, 5u});
  EXPECT_COLUMN(merged.devices.n_events, {1, 2});
  EXPECT_COLUMN(merged.events.event_id, {0, 1, 2});
  EXPECT_COLUMN(merged.events.device_index, {0, 1, 1});  // part 1's block 0 is block 1
  EXPECT_COLUMN(merged.events.device, {1u, 5u, 5u});
  EXPECT_COLUMN(merged.events.node_name, {2u, 6u, 2u});  // part 1's "b" 2 -> 6, "a" 5 -> 2
  EXPECT_COLUMN(merged.events.start_ns, {1000, 3000, 5000});
  EXPECT_COLUMN(merged.events.end_ns, {3000, 7000, 5000});
  EXPECT_COLUMN(merged.tensors.event_id, {1});  // part 1's event 0 is event 1
  EXPECT_COLUMN(merged.tensors.dtype, {8u});
  EXPECT_COLUMN(merged.tensors.allocator, {7u});
  EXPECT_COLUMN(merged.tensors.requested_bytes, {20});
  EXPECT_COLUMN(merged.allocations.event_id, {0, 1});
  EXPECT_COLUMN(merged.allocations.allocator, {3u, 7u});
  EXPECT_COLUMN(merged.alloc_records.event_id, {0, 1});
  EXPECT_COLUMN(merged.alloc_records.allocator, {3u, 7u});
  EXPECT_COLUMN(merged.alloc_records.time_ns, {1000, 3000});
  EXPECT_COLUMN(merged.alloc_records.bytes, {8, 20});
  EXPECT_COLUMN(merged.thread_names.device_index, {0});
  EXPECT_EQ(merged.graph_count, 2);
  EXPECT_COLUMN(merged.graph_nodes.graph_index, {0, 1});  // part 1's graph 0 is graph 1
  EXPECT_COLUMN(merged.graph_nodes.name, {2u, 6u});
  EXPECT_COLUMN(merged.graph_nodes.op, {4u, 4u});

  // The sequential parse of the whole gives the same strings under the same ids.
  const auto sequential = ReadText(whole);
  EXPECT_COLUMN(PoolStrings(*sequential), PoolStrings(merged));
  EXPECT_COLUMN(sequential->events.node_name, {2u, 6u, 2u});
  EXPECT_COLUMN(sequential->graph_nodes.graph_index, {0, 1});
}

TEST(TraceMerge, OnePartIsTheOutputAsItIs) {
  std::vector<std::unique_ptr<TraceTables>> parts;
  parts.push_back(std::make_unique<TraceTables>());
  {
    TraceSink sink(*parts.back(), false);
    tracecore::ParseTextProto(kSecond.data(), kSecond.data() + kSecond.size(), sink);
  }
  TraceTables merged;
  merged.format = tracecore::Encoding::kBinary;  // kept: the output's format and input size
  merged.input_bytes = 7;
  tracecore::MergeTables(parts, &merged);
  EXPECT_TRUE(parts[0] == nullptr);  // consumed
  EXPECT_TRUE(merged.format == tracecore::Encoding::kBinary);
  EXPECT_EQ(merged.input_bytes, 7u);
  EXPECT_COLUMN(Names(merged.pool, merged.events.node_name), {"b", "a"});
  EXPECT_COLUMN(merged.tensors.event_id, {0});
}
