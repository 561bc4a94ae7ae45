// The occupancy query (query/occupancy.cc), per device block and per block per bin, on a small
// parsed trace: busy time (union), span, utilization, max concurrency, idle gaps, binned busy.
#include <cstdint>
#include <stdexcept>

#include "query/queries.h"
#include "trace_fixture.h"
#include "unit_test.h"

using namespace tracecore::query;  // NOLINT: the query under test
using namespace tracecore::unit;   // NOLINT: the fixture

namespace {

// [start, end) in ns (micros x 1000):
//   block 0 (executor): [0, 10000) [5000, 15000) [20000, 30000) [22000, 24000)
//   block 1 (stream):   [1000, 3000) [3000, 5000) [4000, 4000) (zero length)
//   block 2 (memcpy):   no events
const char* const kTrace = R"pb(
dev_stats {
  device: "/job:a/replica:0/task:0/device:GPU:0"
  node_stats { node_name: "a" all_start_micros: 0 all_end_rel_micros: 10 }
  node_stats { node_name: "b" all_start_micros: 5 all_end_rel_micros: 10 }
  node_stats { node_name: "c" all_start_micros: 20 all_end_rel_micros: 10 }
  node_stats { node_name: "d" all_start_micros: 22 all_end_rel_micros: 2 }
}
dev_stats {
  device: "/device:GPU:0/stream:7"
  node_stats { node_name: "k:K" all_start_micros: 1 all_end_rel_micros: 2 }
  node_stats { node_name: "l:L" all_start_micros: 3 all_end_rel_micros: 2 }
  node_stats { node_name: "m:M" all_start_micros: 4 }
}
dev_stats { device: "/device:GPU:0/memcpy" }
)pb";

}  // namespace

TEST(Occupancy, OneRowPerDeviceBlock) {
  const auto t = ReadText(kTrace);
  const OccupancyTable o = Occupancy(*t);
  EXPECT_COLUMN(o.device_index, {0, 1, 2});
  EXPECT_COLUMN(Names(t->pool, o.device),
                {"/job:a/replica:0/task:0/device:GPU:0", "/device:GPU:0/stream:7", "/device:GPU:0/memcpy"});
  EXPECT_COLUMN(Strings(o.kind), {"executor", "stream", "memcpy"});
  EXPECT_COLUMN(o.n_events, {4, 3, 0});
  // Block 0: union [0, 15000) + [20000, 30000) = 25000 in two periods (one gap), span 30000;
  // two events at once at 5000 and at 22000.
  // Block 1: [1000, 3000) and [3000, 5000) touch: one period of 4000, span 4000; at 4000 the
  // zero-length event and [3000, 5000) are both active.
  EXPECT_COLUMN(o.busy_ns, {25000, 4000, 0});
  EXPECT_COLUMN(o.span_ns, {30000, 4000, 0});
  EXPECT_COLUMN(o.utilization, {25000.0 / 30000.0, 1.0, 0.0});
  EXPECT_COLUMN(o.max_concurrency, {2, 2, 0});
  EXPECT_COLUMN(o.idle_gaps, {1, 0, 0});
}

TEST(Occupancy, BinsSpreadEachBusyPeriod) {
  const auto t = ReadText(kTrace);
  // T0 = 0, bins of 10000 on the grid from T0, over each block's own span:
  //   block 0 (0 .. 30000, three bins): [0, 15000) -> 10000 + 5000; [20000, 30000) -> bin 2
  //   block 1 (1000 .. 5000, one bin): [1000, 5000) -> 4000 in bin 0
  //   block 2: no events, no span, no bins
  const OccupancyBinsTable b = OccupancyBins(*t, 10000);
  EXPECT_COLUMN(b.device_index, {0, 0, 0, 1});
  EXPECT_COLUMN(b.bin_start_ns, {0, 10000, 20000, 0});
  EXPECT_COLUMN(b.busy_ns, {10000, 5000, 10000, 4000});
  EXPECT_COLUMN(b.busy_fraction, {1.0, 0.5, 1.0, 0.4});
  EXPECT_EQ(t->pool.Get(b.device[3]), "/device:GPU:0/stream:7");
  EXPECT_EQ(OccupancyBinRows(*t, 10000), 4u);
}

TEST(Occupancy, BinsOfEachBlockOnTheCommonGrid) {
  // Blocks 1 and 2 start after block 0 ends: their bins start at the grid bin holding their
  // first start, not at T0, and stop at their own last end.
  const auto t = ReadText(R"pb(
dev_stats { node_stats { node_name: "a" all_start_micros: 1 all_end_rel_micros: 1 } }
dev_stats { node_stats { node_name: "b" all_start_micros: 4 all_end_rel_micros: 2 } }
dev_stats { node_stats { node_name: "c" all_start_micros: 9 all_end_rel_micros: 0 } }
)pb");
  const OccupancyBinsTable b = OccupancyBins(*t, 1500);
  // T0 = 1000; block 0 [1000, 2000): grid bin 0; block 1 [4000, 6000): grid bins 2
  // (4000 .. 5500) and 3 (5500 .. 7000); block 2, zero length at 9000: one bin, grid bin 5.
  EXPECT_COLUMN(b.device_index, {0, 1, 1, 2});
  EXPECT_COLUMN(b.bin_start_ns, {1000, 4000, 5500, 8500});
  EXPECT_COLUMN(b.busy_ns, {1000, 1500, 500, 0});
}

TEST(Occupancy, PeriodsAcrossBinEdges) {
  const auto t = ReadText(kTrace);
  // Bins of 7000: block 0 has ceil(30000 / 7000) = 5, edges 0 7000 14000 21000 28000; block 1
  // (up to 5000) one.
  //   block 0: [0, 15000) -> 7000, 7000, 1000; [20000, 30000) -> 1000 (bin 2), 7000, 2000
  //   block 1: [1000, 5000) -> 4000 in bin 0
  const OccupancyBinsTable b = OccupancyBins(*t, 7000);
  EXPECT_COLUMN(b.bin_start_ns, {0, 7000, 14000, 21000, 28000, 0});
  EXPECT_COLUMN(b.busy_ns, {7000, 7000, 2000, 7000, 2000, 4000});
  // One bin wider than the trace.
  const OccupancyBinsTable one = OccupancyBins(*t, 1000000);
  EXPECT_COLUMN(one.busy_ns, {25000, 4000});
  EXPECT_COLUMN(one.busy_fraction, {0.025, 0.004});
}

TEST(Occupancy, BadBinsAndEmptyTraces) {
  const auto t = ReadText(kTrace);
  EXPECT_THROW_WITH(OccupancyBins(*t, 0), std::invalid_argument, "bin_ns must be positive");
  // 200 ms of trace in bins of 1 ns: 199999000 rows of 32 bytes, past the 1 GiB default budget;
  // exactly at a budget of 32 bytes per row they would be made (refused here before any is).
  const auto long_trace = ReadText(
      "dev_stats { node_stats { all_start_micros: 1 } node_stats { all_start_micros: 200000 } }");
  EXPECT_THROW_WITH(OccupancyBins(*long_trace, 1), std::invalid_argument,
                    "occupancy(bin_ns=1) would make 199999000 rows of 32 bytes, over the output "
                    "budget of 1073741824 bytes (the bins over the spans of 1 device blocks");
  EXPECT_EQ(OccupancyBins(*long_trace, 1000, 32 * 199999).busy_ns.size(), 199999u);
  EXPECT_THROW_WITH(OccupancyBins(*long_trace, 1000, 32 * 199999 - 1), std::invalid_argument,
                    "would make 199999 rows of 32 bytes");
  const auto empty = ReadText("dev_stats { device: \"/device:CPU:0\" }");
  EXPECT_EQ(OccupancyBins(*empty, 10).busy_ns.size(), 0u);  // no events: no bins
  const OccupancyTable o = Occupancy(*empty);
  EXPECT_COLUMN(o.n_events, {0});
  EXPECT_COLUMN(o.utilization, {0.0});
}
