// The memory replays (query/memory_replay.cc) on small parsed traces: the allocation records as
// the allocator saw them (with and without the snapshot baseline, one allocator or all), and
// TensorFlow timeline.py's tensor-lifetime model.
#include <cstdint>

#include "containers/string_pool.h"
#include "query/queries.h"
#include "trace_fixture.h"
#include "unit_test.h"

using namespace tracecore::query;  // NOLINT: the queries under test
using namespace tracecore::unit;   // NOLINT: the fixture
using tracecore::StringPool;

// All allocators, not one.
constexpr uint32_t kAll = StringPool::kNotFound;

namespace {

// alloc_records rows (event, allocator, time ns, bytes):
//   0 (0, gpu, 10000, +100)   1 (0, gpu, 12000, +50)   2 (1, gpu, 12000, -30)
//   3 (1, gpu, 20000, -100)   4 (1, cpu, 16000, +8)
// Event 0 starts at 10000 with a gpu snapshot of 500 bytes in use; event 1 at 15000.
const char* const kRecords = R"pb(
dev_stats {
  device: "/job:ps/replica:0/task:0/device:GPU:0"
  node_stats {
    node_name: "a"
    all_start_micros: 10
    all_end_rel_micros: 10
    memory {
      allocator_name: "gpu"
      allocator_bytes_in_use: 500
      allocation_records { alloc_micros: 10 alloc_bytes: 100 }
      allocation_records { alloc_micros: 12 alloc_bytes: 50 }
    }
  }
  node_stats {
    node_name: "b"
    all_start_micros: 15
    all_end_rel_micros: 15
    memory {
      allocator_name: "gpu"
      allocation_records { alloc_micros: 12 alloc_bytes: -30 }
      allocation_records { alloc_micros: 20 alloc_bytes: -100 }
    }
    memory { allocator_name: "cpu" allocation_records { alloc_micros: 16 alloc_bytes: 8 } }
  }
}
)pb";

}  // namespace

TEST(ReplayRecords, EveryAllocatorFromZero) {
  const auto t = ReadText(kRecords);
  // Allocators by name: cpu, gpu. gpu per distinct time: 10000 +100 -> 100; 12000 +50 -30 ->
  // 120 (the peak; live: 2 allocations - 1 free); 20000 -100 -> 20.
  const Replay r = ReplayRecords(*t, kAll, false);
  EXPECT_COLUMN(Names(t->pool, r.timeline.allocator), {"cpu", "gpu", "gpu", "gpu"});
  EXPECT_COLUMN(r.timeline.time_ns, {16000, 10000, 12000, 20000});
  EXPECT_COLUMN(r.timeline.delta_bytes, {8, 100, 20, -100});
  EXPECT_COLUMN(r.timeline.bytes_in_use, {8, 100, 120, 20});
  EXPECT_COLUMN(Names(t->pool, r.peaks.allocator), {"cpu", "gpu"});
  EXPECT_COLUMN(r.peaks.peak_bytes, {8, 120});
  EXPECT_COLUMN(r.peaks.peak_time_ns, {16000, 12000});
  EXPECT_COLUMN(r.peaks.live_tensors, {1, 1});
  EXPECT_COLUMN(r.peaks.n_changes, {1, 4});
  // The positive records up to the peak, as alloc_records rows.
  EXPECT_COLUMN(Names(t->pool, r.live.allocator), {"cpu", "gpu", "gpu"});
  EXPECT_COLUMN(r.live.row, {4, 0, 1});
  EXPECT_COLUMN(Strings(r.live.tensor_name), {"", "", ""});
}

TEST(ReplayRecords, SnapshotBaselineAndOneAllocator) {
  const auto t = ReadText(kRecords);
  // gpu: its first snapshot is event 0's 500 bytes at 10000, where the replay stands at 100:
  // baseline 400, levels 500 520 420. cpu: its snapshot (event 1, 0 bytes in use, at 15000)
  // precedes its records: baseline 0.
  const Replay r = ReplayRecords(*t, kAll, true, false);
  EXPECT_COLUMN(r.timeline.bytes_in_use, {8, 500, 520, 420});
  EXPECT_COLUMN(r.timeline.delta_bytes, {8, 100, 20, -100});
  EXPECT_COLUMN(r.peaks.peak_bytes, {8, 520});
  EXPECT_COLUMN(r.peaks.peak_time_ns, {16000, 12000});
  EXPECT_EQ(r.live.row.size(), 0u);  // with_live = false
  const Replay gpu = ReplayRecords(*t, t->pool.Find("gpu"), false);
  EXPECT_COLUMN(Names(t->pool, gpu.peaks.allocator), {"gpu"});
  EXPECT_COLUMN(gpu.timeline.time_ns, {10000, 12000, 20000});
  EXPECT_COLUMN(gpu.live.row, {0, 1});
}

TEST(ReplayRecords, AnAllocatorThatNeverRisesPeaksAtZero) {
  const auto t = ReadText(
      "dev_stats { node_stats { memory { allocator_name: \"x\" "
      "allocation_records { alloc_micros: 3 alloc_bytes: -5 } } } }");
  const Replay r = ReplayRecords(*t, kAll, false);
  EXPECT_COLUMN(r.timeline.bytes_in_use, {-5});
  EXPECT_COLUMN(r.peaks.peak_bytes, {0});
  EXPECT_COLUMN(r.peaks.peak_time_ns, {0});
  EXPECT_COLUMN(r.peaks.live_tensors, {0});
  EXPECT_EQ(r.live.row.size(), 0u);
}

TEST(ReplayTensors, TimelinePyLifetimes) {
  // Tensors: x (event 0, 64 bytes), y and y:1 (event 1's outputs 0 and 1, 32 and 16 bytes).
  // Created at their node's start (µs): x 10, y and y:1 20. Released at the latest of their
  // node's end and each executor consumer's end - 1: x by y (40 - 1 = 39), y and y:1 by z
  // (50 - 1 = 49). w reads x on a stream device: not a consumer (else x would go at 69).
  const auto t = ReadText(R"pb(
dev_stats {
  device: "/job:ps/replica:0/task:0/device:GPU:0"
  node_stats {
    node_name: "x" all_start_micros: 10 all_end_rel_micros: 10 timeline_label: "x = Const()"
    output { tensor_description { allocation_description { allocator_name: "gpu" requested_bytes: 64 } } }
  }
  node_stats {
    node_name: "y" all_start_micros: 20 all_end_rel_micros: 20 timeline_label: "y = Split(x)"
    output { tensor_description { allocation_description { allocator_name: "gpu" requested_bytes: 32 } } }
    output { tensor_description { allocation_description { allocator_name: "gpu" requested_bytes: 16 } } }
  }
  node_stats { node_name: "z" all_start_micros: 45 all_end_rel_micros: 5 timeline_label: "z = Add(y, y:1)" }
}
dev_stats {
  device: "/job:ps/replica:0/task:0/device:GPU:0/stream:1"
  node_stats { node_name: "w" all_start_micros: 60 all_end_rel_micros: 10 timeline_label: "w = Foo(x)" }
}
)pb");
  // Changes by (time, bytes, name): (10 +64 x) (20 +16 y:1) (20 +32 y) (39 -64 x) (49 -32 y)
  // (49 -16 y:1); levels 64 80 112 48 16 0: the peak, 112, after the third change (at 20),
  // with x, y and y:1 live. One timeline row per time, the level after its last change.
  const Replay r = ReplayTensors(*t, kAll);
  EXPECT_COLUMN(Names(t->pool, r.timeline.allocator), {"gpu", "gpu", "gpu", "gpu"});
  EXPECT_COLUMN(r.timeline.time_ns, {10000, 20000, 39000, 49000});
  EXPECT_COLUMN(r.timeline.delta_bytes, {64, 48, -64, -48});
  EXPECT_COLUMN(r.timeline.bytes_in_use, {64, 112, 48, 0});
  EXPECT_COLUMN(Names(t->pool, r.peaks.allocator), {"gpu"});
  EXPECT_COLUMN(r.peaks.peak_bytes, {112});
  EXPECT_COLUMN(r.peaks.peak_time_ns, {20000});
  EXPECT_COLUMN(r.peaks.live_tensors, {3});
  EXPECT_COLUMN(r.peaks.n_changes, {6});
  EXPECT_COLUMN(Strings(r.live.tensor_name), {"x", "y", "y:1"});
  EXPECT_COLUMN(r.live.row, {0, 1, 2});  // tensors rows
  // One allocator that holds no tensor: no rows.
  const Replay none = ReplayTensors(*t, t->pool.Find("/job:ps/replica:0/task:0/device:GPU:0"));
  EXPECT_EQ(none.peaks.allocator.size(), 0u);
}
