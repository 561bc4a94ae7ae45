// The op_stats query (query/op_stats.cc) on a small parsed trace, grouped by op, by node name
// and by device block: counts, sums, busy time, share of the span, executor / stream split.
#include <cstdint>
#include <string>
#include <vector>

#include "query/queries.h"
#include "trace_fixture.h"
#include "unit_test.h"

using namespace tracecore::query;  // NOLINT: the query under test
using namespace tracecore::unit;   // NOLINT: the fixture

namespace {

// One expected row of the result.
struct Row {
  std::string key;
  int64_t n_events, total_ns;
  double mean_ns;
  int64_t max_ns, busy_ns;
  double share;
  int64_t executor_ns, stream_ns;
};

// The result, column by column, against `rows`.
void ExpectRows(const OpStatsTable& s, const std::vector<Row>& rows) {
  std::vector<std::string> key;
  std::vector<int64_t> n, total, max, busy, executor, stream;
  std::vector<double> mean, share;
  for (const Row& r : rows) {
    key.push_back(r.key);
    n.push_back(r.n_events);
    total.push_back(r.total_ns);
    mean.push_back(r.mean_ns);
    max.push_back(r.max_ns);
    busy.push_back(r.busy_ns);
    share.push_back(r.share);
    executor.push_back(r.executor_ns);
    stream.push_back(r.stream_ns);
  }
  EXPECT_COLUMN(Strings(s.key), key);
  EXPECT_COLUMN(s.n_events, n);
  EXPECT_COLUMN(s.total_ns, total);
  EXPECT_COLUMN(s.mean_ns, mean);
  EXPECT_COLUMN(s.max_ns, max);
  EXPECT_COLUMN(s.busy_ns, busy);
  EXPECT_COLUMN(s.share, share);
  EXPECT_COLUMN(s.executor_ns, executor);
  EXPECT_COLUMN(s.stream_ns, stream);
}

// Events (op, [start, end) in ns); the trace spans [0, 23000):
//   executor block: 0 MatMul_1 (MatMul) [0, 10000)   1 MatMul_2 (MatMul) [5000, 9000)
//                   2 relu (no op) [20000, 23000)
//   stream block:   3 MatMul_1:MatMul (MatMul) [1000, 4000)   4 relu:Relu (Relu) [21000, 22000)
//   memcpy block:   no events
const char* const kTrace = R"pb(
dev_stats {
  device: "/job:worker/replica:0/task:1/device:GPU:0"
  node_stats {
    node_name: "MatMul_1" all_start_micros: 0 all_end_rel_micros: 10
    timeline_label: "MatMul_1 = MatMul(a, b)"
  }
  node_stats {
    node_name: "MatMul_2" all_start_micros: 5 all_end_rel_micros: 4
    timeline_label: "MatMul_2 = MatMul(c, d)"
  }
  node_stats { node_name: "relu" all_start_micros: 20 all_end_rel_micros: 3 }
}
dev_stats {
  device: "/device:GPU:0/stream:3"
  node_stats { node_name: "MatMul_1:MatMul" all_start_micros: 1 all_end_rel_micros: 3 }
  node_stats { node_name: "relu:Relu" all_start_micros: 21 all_end_rel_micros: 1 }
}
dev_stats { device: "/device:GPU:0/memcpy" }
)pb";

}  // namespace

TEST(OpStats, ByOp) {
  const auto t = ReadText(kTrace);
  // MatMul: events 0 1 3, total 10000 + 4000 + 3000, busy |[0, 10000)| (the others inside),
  // executor 14000, stream 3000. (none): event 2. Relu: event 4. By total, descending; share:
  // busy over the span, 23000.
  ExpectRows(OpStats(*t, GroupBy::kOp), {
      // key       n  total  mean          max    busy   share            exec   stream
      {"MatMul",   3, 17000, 17000.0 / 3,  10000, 10000, 10000.0 / 23000, 14000, 3000},
      {"(none)",   1, 3000,  3000.0,       3000,  3000,  3000.0 / 23000,  3000,  0},
      {"Relu",     1, 1000,  1000.0,       1000,  1000,  1000.0 / 23000,  0,     1000},
  });
}

TEST(OpStats, ByNodeNameJoinsAStreamRecordToItsNode) {
  const auto t = ReadText(kTrace);
  // MatMul_1: events 0 and 3 (busy [0, 10000)); MatMul_2: event 1; relu: events 2 and 4
  // (busy [20000, 23000)). MatMul_2 and relu tie at 4000: by key ("M" < "r").
  ExpectRows(OpStats(*t, GroupBy::kNodeName), {
      {"MatMul_1", 2, 13000, 6500.0, 10000, 10000, 10000.0 / 23000, 10000, 3000},
      {"MatMul_2", 1, 4000,  4000.0, 4000,  4000,  4000.0 / 23000,  4000,  0},
      {"relu",     2, 4000,  2000.0, 3000,  3000,  3000.0 / 23000,  3000,  1000},
  });
}

TEST(OpStats, ByDeviceKeepsEmptyBlocks) {
  const auto t = ReadText(kTrace);
  // Executor block: busy [0, 10000) + [20000, 23000) = 13000; stream block: 3000 + 1000;
  // the memcpy block has no events (and is neither executor nor stream time).
  ExpectRows(OpStats(*t, GroupBy::kDevice), {
      {"/job:worker/replica:0/task:1/device:GPU:0", 3, 17000, 17000.0 / 3, 10000, 13000, 13000.0 / 23000, 17000, 0},
      {"/device:GPU:0/stream:3", 2, 4000, 2000.0, 3000, 4000, 4000.0 / 23000, 0, 4000},
      {"/device:GPU:0/memcpy", 0, 0, 0.0, 0, 0, 0.0, 0, 0},
  });
}

TEST(OpStats, ATraceWithoutEvents) {
  const auto t = ReadText("dev_stats { device: \"/device:CPU:0\" }");
  EXPECT_EQ(OpStats(*t, GroupBy::kOp).key.size(), 0u);
  const OpStatsTable s = OpStats(*t, GroupBy::kDevice);
  EXPECT_COLUMN(Strings(s.key), {"/device:CPU:0"});
  EXPECT_COLUMN(s.n_events, {0});
  EXPECT_COLUMN(s.share, {0.0});
}
