// The interval primitives the queries share (query/intervals.h): events as sorted intervals,
// the union of a sorted run (busy periods), device block ranges and checked arithmetic.
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <utility>
#include <vector>

#include "query/intervals.h"
#include "trace_fixture.h"
#include "unit_test.h"

using tracecore::EventTable;
using tracecore::query::Interval;
using tracecore::query::SortedIntervals;
using tracecore::query::UnionPeriods;

namespace {

EventTable Events(const std::vector<std::pair<int64_t, int64_t>>& rows) {
  EventTable e;
  for (const auto& [start, end] : rows) {
    e.node_name.push_back(0);
    e.start_ns.push_back(start);
    e.end_ns.push_back(end);
  }
  return e;
}

std::vector<int64_t> Ids(const std::vector<Interval>& items) {
  std::vector<int64_t> ids;
  for (const Interval& it : items) ids.push_back(it.id);
  return ids;
}
std::vector<int64_t> Ends(const std::vector<Interval>& items) {
  std::vector<int64_t> ends;
  for (const Interval& it : items) ends.push_back(it.end);
  return ends;
}

// The busy periods of `items` as [begin, end, begin, end, ...], and their total length.
std::pair<std::vector<int64_t>, int64_t> Periods(const std::vector<Interval>& items) {
  std::vector<int64_t> bounds;
  const int64_t busy = UnionPeriods(items.data(), items.size(), [&](int64_t begin, int64_t end) {
    bounds.push_back(begin);
    bounds.push_back(end);
  });
  return {bounds, busy};
}

}  // namespace

TEST(Intervals, SortedByStartEndAndId) {
  // id: 0 [30, 40)  1 [10, 20)  2 [10, 15)  3 [10, 15)  4 [50, 45) (end before start)  5 [5, 5)
  const EventTable e = Events({{30, 40}, {10, 20}, {10, 15}, {10, 15}, {50, 45}, {5, 5}});
  std::vector<Interval> items, scratch;
  SortedIntervals(e, 0, e.size(), nullptr, &items, &scratch);
  EXPECT_COLUMN(Ids(items), {5, 2, 3, 1, 0, 4});
  EXPECT_COLUMN(Ends(items), {5, 15, 15, 20, 40, 50});  // 4's end clamped to its start
  // A range of rows, and a mask: rows 1..4 with 2 left out.
  const std::vector<uint8_t> include = {1, 1, 0, 1, 1, 1};
  SortedIntervals(e, 1, 5, include.data(), &items, &scratch);
  EXPECT_COLUMN(Ids(items), {3, 1, 4});
}

TEST(Intervals, UnionGivesTheMaximalBusyPeriods) {
  // [0, 10) and [5, 12) overlap, [12, 20) touches them: one period [0, 20). [25, 25) has no
  // length; [30, 31) and [30, 40) form [30, 40). Busy: 20 + 10.
  const EventTable e = Events({{0, 10}, {5, 12}, {12, 20}, {25, 25}, {30, 31}, {30, 40}});
  std::vector<Interval> items, scratch;
  SortedIntervals(e, 0, e.size(), nullptr, &items, &scratch);
  const auto [bounds, busy] = Periods(items);
  EXPECT_COLUMN(bounds, {0, 20, 30, 40});
  EXPECT_EQ(busy, 30);
  // Nothing, or only zero-length intervals: no period.
  EXPECT_EQ(Periods({}).second, 0);
  SortedIntervals(Events({{7, 7}, {9, 3}}), 0, 2, nullptr, &items, &scratch);
  EXPECT_EQ(Periods(items).first.size(), 0u);
}

TEST(Intervals, BusyTimeThatOverflowsRaises) {
  const int64_t max = std::numeric_limits<int64_t>::max();
  const int64_t min = std::numeric_limits<int64_t>::min();
  std::vector<Interval> items, scratch;
  SortedIntervals(Events({{min, 0}, {1, 2}}), 0, 2, nullptr, &items, &scratch);
  EXPECT_THROW_WITH(Periods(items), std::overflow_error, "busy time overflows int64");
  EXPECT_THROW_WITH(tracecore::query::CheckedAdd(max, 1, "x"), std::overflow_error, "x overflows int64");
  EXPECT_EQ(tracecore::query::CheckedSub(max, max, "x"), 0);
}

TEST(Intervals, DeviceBlocksCoverTheEvents) {
  tracecore::TraceTables t;
  t.events = Events({{0, 1}, {0, 1}, {0, 1}});
  t.devices.n_events = {2, 0, 1};
  t.devices.device_index = {0, 1, 2};
  std::vector<int64_t> ranges;
  tracecore::query::ForEachBlock(t, [&](int32_t d, size_t first, size_t last) {
    ranges.insert(ranges.end(), {d, static_cast<int64_t>(first), static_cast<int64_t>(last)});
  });
  EXPECT_COLUMN(ranges, {0, 0, 2, 1, 2, 2, 2, 2, 3});
  t.devices.n_events = {2, 0, 2};
  EXPECT_THROW_WITH(tracecore::query::ForEachBlock(t, [](int32_t, size_t, size_t) {}), std::logic_error,
                    "device blocks do not cover the events");
}
