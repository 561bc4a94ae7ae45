// The overlaps and window queries (query/overlaps.cc) on a small parsed trace: every pair, pairs
// within device blocks, ordered pairs between two sets, and the events active in a window.
#include <cstdint>
#include <vector>

#include "query/queries.h"
#include "trace_fixture.h"
#include "unit_test.h"

using namespace tracecore::query;  // NOLINT: the query under test
using namespace tracecore::unit;   // NOLINT: the fixture

namespace {

// Event ids and [start, end) in ns (micros x 1000):
//   block 0: 0 [1000, 11000)   1 [5000, 8000)   2 [10000, 20000)   3 [9000, 9000) (zero length)
//   block 1: 4 [7000, 12000)   5 [20000, 20000) (zero length, where 2 ends)
const char* const kTrace = R"(
dev_stats {
  device: "/device:CPU:0"
  node_stats { node_name: "e0" all_start_micros: 1 all_end_rel_micros: 10 }
  node_stats { node_name: "e1" all_start_micros: 5 all_end_rel_micros: 3 }
  node_stats { node_name: "e2" all_start_micros: 10 all_end_rel_micros: 10 }
  node_stats { node_name: "e3" all_start_micros: 9 }
}
dev_stats {
  device: "/device:GPU:0/stream:1"
  node_stats { node_name: "e4" all_start_micros: 7 all_end_rel_micros: 5 }
  node_stats { node_name: "e5" all_start_micros: 20 }
}
)";

}  // namespace

TEST(Overlaps, EveryUnorderedPairOnce) {
  const auto t = ReadText(kTrace);
  // Sorted by (start, end): 0, 1, 4, 3, 2, 5. Each event pairs with the later ones starting
  // before its end; overlap = min(ends) - max(starts):
  //   0-1: 8000-5000 = 3000   0-4: 11000-7000 = 4000   0-3: 9000-9000 = 0 (3 inside 0)
  //   0-2: 11000-10000 = 1000   1-4: 8000-7000 = 1000   4-3: 0 (3 inside 4)
  //   4-2: 12000-10000 = 2000   3 ends at 9000, before 2 starts; 5 starts where 2 ends.
  const PairTable p = Overlaps(*t, nullptr, nullptr, false);
  EXPECT_COLUMN(p.left, {0, 0, 0, 0, 1, 2, 3});
  EXPECT_COLUMN(p.right, {1, 2, 3, 4, 4, 4, 4});
  EXPECT_COLUMN(p.overlap_ns, {3000, 1000, 0, 4000, 1000, 2000, 0});
}

TEST(Overlaps, SameDeviceKeepsPairsWithinABlock) {
  const auto t = ReadText(kTrace);
  // Block 0's pairs of the list above; block 1 has none (4 ends before 5 starts).
  const PairTable p = Overlaps(*t, nullptr, nullptr, true);
  EXPECT_COLUMN(p.left, {0, 0, 0});
  EXPECT_COLUMN(p.right, {1, 2, 3});
  EXPECT_COLUMN(p.overlap_ns, {3000, 1000, 0});
}

TEST(Overlaps, OrderedPairsBetweenTwoSets) {
  const auto t = ReadText(kTrace);
  // left = {4}, right = all events: (4, r) for every r overlapping 4, never (4, 4).
  const std::vector<uint8_t> only4 = {0, 0, 0, 0, 1, 0};
  const PairTable from4 = Overlaps(*t, only4.data(), nullptr, false);
  EXPECT_COLUMN(from4.left, {4, 4, 4, 4});
  EXPECT_COLUMN(from4.right, {0, 1, 2, 3});
  EXPECT_COLUMN(from4.overlap_ns, {4000, 1000, 2000, 0});
  // left = {0, 4}, right = {0, 2, 3}: (0, 2) (0, 3) (4, 0) (4, 2) (4, 3); (0, 4) is absent as
  // 4 is not in right, (0, 0) as a pair needs two events.
  const std::vector<uint8_t> left = {1, 0, 0, 0, 1, 0};
  const std::vector<uint8_t> right = {1, 0, 1, 1, 0, 0};
  const PairTable p = Overlaps(*t, left.data(), right.data(), false);
  EXPECT_COLUMN(p.left, {0, 0, 4, 4, 4});
  EXPECT_COLUMN(p.right, {2, 3, 0, 2, 3});
  EXPECT_COLUMN(p.overlap_ns, {1000, 0, 4000, 2000, 0});
  // Within blocks only: block 1 has no event of right.
  const PairTable same = Overlaps(*t, left.data(), right.data(), true);
  EXPECT_COLUMN(same.left, {0, 0});
  EXPECT_COLUMN(same.right, {2, 3});
}

TEST(Window, EventsActiveInAWindow) {
  const auto t = ReadText(kTrace);
  const IntervalIndex index(t->events);
  // start < b and a < end.
  EXPECT_COLUMN(index.Window(9000, 10000), {0, 4});           // 3 ends at 9000; 2 starts at 10000
  EXPECT_COLUMN(index.Window(8999, 9001), {0, 3, 4});         // 3 strictly inside the window
  EXPECT_COLUMN(index.Window(19999, 20001), {2, 5});
  EXPECT_COLUMN(index.Window(20000, 30000), {});              // 2 has ended; 5 is not after 20000
  EXPECT_COLUMN(index.Window(0, 1000), {});                   // 0 starts where the window ends
  EXPECT_COLUMN(index.Window(0, 100000), {0, 1, 2, 3, 4, 5});
}
