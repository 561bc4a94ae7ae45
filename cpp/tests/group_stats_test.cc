// group_stats: per group counts, sums, busy time (union of intervals), first start / last end,
// weight and category sums; rows left out, checked arithmetic, bad ids.
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "query/group_stats.h"
#include "unit_test.h"

using tracecore::query::ComputeGroupStats;
using tracecore::query::GroupedIntervals;
using tracecore::query::GroupStats;

namespace {

struct Rows {
  std::vector<int64_t> start, end, weight;
  std::vector<uint8_t> category;

  GroupedIntervals View() const {
    GroupedIntervals rows;
    rows.start = start.data();
    rows.end = end.data();
    rows.size = start.size();
    if (!weight.empty()) rows.weight = weight.data();
    if (!category.empty()) {
      rows.category = category.data();
      rows.n_categories = 2;
    }
    return rows;
  }
};

void ExpectColumn(const std::vector<int64_t>& got, const std::vector<int64_t>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], want[i]);
}

}  // namespace

TEST(GroupStats, CountsSumsAndBusyTimePerGroup) {
  // group 0: [0,10) [5,15) [20,30) -> busy 25; group 1: [3,4) [3,4) -> busy 1; group 2: none.
  Rows r{{0, 3, 5, 20, 3}, {10, 4, 15, 30, 4}, {}, {}};
  const std::vector<int64_t> group{0, 1, 0, 0, 1};
  const GroupStats s = ComputeGroupStats(r.View(), group.data(), 3);
  ExpectColumn(s.n, {3, 2, 0});
  ExpectColumn(s.total_ns, {30, 2, 0});
  ExpectColumn(s.max_ns, {10, 1, 0});
  ExpectColumn(s.busy_ns, {25, 1, 0});
  ExpectColumn(s.first_start_ns, {0, 3, 0});
  ExpectColumn(s.last_end_ns, {30, 4, 0});
  EXPECT_TRUE(s.weight.empty());
}

TEST(GroupStats, TouchingIntervalsMergeAndZeroLengthOnesAddNothing) {
  Rows r{{0, 10, 10, 40}, {10, 20, 10, 40}, {}, {}};
  const std::vector<uint32_t> group{0, 0, 0, 0};
  const GroupStats s = ComputeGroupStats(r.View(), group.data(), 1);
  ExpectColumn(s.busy_ns, {20});
  ExpectColumn(s.n, {4});
  ExpectColumn(s.last_end_ns, {40});
}

TEST(GroupStats, AnEndBeforeItsStartCountsAsTheStart) {
  Rows r{{100, 0}, {50, 10}, {}, {}};
  const std::vector<int64_t> group{0, 0};
  const GroupStats s = ComputeGroupStats(r.View(), group.data(), 1);
  ExpectColumn(s.total_ns, {10});
  ExpectColumn(s.busy_ns, {10});
  ExpectColumn(s.last_end_ns, {100});  // the clamped end of the first row
}

TEST(GroupStats, NegativeIdsLeaveRowsOut) {
  Rows r{{0, 0, 5}, {10, 100, 6}, {7, 1000, 9}, {}};
  const std::vector<int64_t> group{0, -1, 0};
  const GroupStats s = ComputeGroupStats(r.View(), group.data(), 1);
  ExpectColumn(s.n, {2});
  ExpectColumn(s.busy_ns, {10});
  ExpectColumn(s.weight, {16});
}

TEST(GroupStats, WeightsAndCategoriesAreSummedPerGroup) {
  // category 0 and 1 are counted, 2 is none.
  Rows r{{0, 0, 0, 0}, {1, 2, 4, 8}, {10, 20, 30, 40}, {0, 1, 2, 0}};
  const std::vector<uint32_t> group{0, 1, 1, 1};
  const GroupStats s = ComputeGroupStats(r.View(), group.data(), 2);
  ExpectColumn(s.weight, {10, 90});
  ExpectColumn(s.category_ns, {1, 0, 8, 2});  // [group][category]
  ExpectColumn(s.busy_ns, {1, 8});
}

TEST(GroupStats, ExtremeTimesAreValues) {
  const int64_t max = std::numeric_limits<int64_t>::max();
  const int64_t min = std::numeric_limits<int64_t>::min();
  Rows r{{min, max}, {min + 5, max}, {}, {}};
  const std::vector<int64_t> group{0, 0};
  const GroupStats s = ComputeGroupStats(r.View(), group.data(), 1);
  ExpectColumn(s.first_start_ns, {min});
  ExpectColumn(s.last_end_ns, {max});
  ExpectColumn(s.busy_ns, {5});
}

TEST(GroupStats, SumsThatDoNotFitInt64Raise) {
  const int64_t max = std::numeric_limits<int64_t>::max();
  Rows lengths{{0, 0}, {max, max}, {}, {}};
  const std::vector<int64_t> one_group{0, 0};
  EXPECT_THROW_WITH(ComputeGroupStats(lengths.View(), one_group.data(), 1), std::overflow_error,
                    "total_ns overflows int64");
  Rows huge{{-2, 0}, {max, 1}, {}, {}};  // a length of max + 2
  EXPECT_THROW_WITH(ComputeGroupStats(huge.View(), one_group.data(), 1), std::overflow_error,
                    "interval length overflows int64");
  Rows weights{{0, 0}, {1, 1}, {max, 1}, {}};
  EXPECT_THROW_WITH(ComputeGroupStats(weights.View(), one_group.data(), 1), std::overflow_error,
                    "weight sum overflows int64");
  Rows busy{{-(max / 2) - 10, 0}, {0, max / 2 + 10}, {}, {}};  // each fits, their union does not
  const std::vector<int64_t> two_groups{0, 1};
  const GroupStats apart = ComputeGroupStats(busy.View(), two_groups.data(), 2);
  ExpectColumn(apart.busy_ns, {max / 2 + 10, max / 2 + 10});
  EXPECT_THROW_WITH(ComputeGroupStats(busy.View(), one_group.data(), 1), std::overflow_error,
                    "overflows int64");
}

TEST(GroupStats, IdsAtOrAboveTheGroupCountAreRefused) {
  Rows r{{0}, {1}, {}, {}};
  const std::vector<int64_t> group{3};
  EXPECT_THROW_WITH(ComputeGroupStats(r.View(), group.data(), 3), std::invalid_argument,
                    "group id 3 is not below the 3 groups");
  const std::vector<uint32_t> unsigned_group{5};
  EXPECT_THROW_WITH(ComputeGroupStats(r.View(), unsigned_group.data(), 2), std::invalid_argument,
                    "group id 5");
}

TEST(GroupStats, NoRowsGiveZeroRows) {
  Rows r;
  const GroupStats s = ComputeGroupStats(r.View(), static_cast<const int64_t*>(nullptr), 2);
  ExpectColumn(s.n, {0, 0});
  ExpectColumn(s.busy_ns, {0, 0});
}

TEST(GroupStats, NoRowsStillHaveTheDeclaredCategories) {
  // op_stats passes an empty vector's data() (a null pointer) as the category column when a
  // trace has devices but no events; the per-category sums must still exist, all zero.
  GroupedIntervals rows;
  rows.n_categories = 2;
  const GroupStats s = ComputeGroupStats(rows, static_cast<const int64_t*>(nullptr), 3);
  EXPECT_EQ(s.n_categories, 2u);
  ExpectColumn(s.category_ns, {0, 0, 0, 0, 0, 0});
}

TEST(GroupStats, DeclaredCategoriesWithoutAColumnAreRefused) {
  Rows r;
  r.start = {0};
  r.end = {10};
  GroupedIntervals rows = r.View();
  rows.n_categories = 2;
  const std::vector<int64_t> group = {0};
  EXPECT_THROW_WITH(ComputeGroupStats(rows, group.data(), 1), std::invalid_argument,
                    "no category column");
}
