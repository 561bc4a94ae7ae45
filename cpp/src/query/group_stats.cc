#include "query/group_stats.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "core/huge_pages.h"
#include "query/intervals.h"
#include "query/radix_sort.h"

namespace tracecore::query {
namespace {

// The group of a row, or kSkip; `Id` is int64_t (negative: no group) or uint32_t.
constexpr uint64_t kSkip = ~uint64_t{0};

template <class Id>
uint64_t GroupOf(Id id, size_t n_groups) {
  if constexpr (std::is_signed_v<Id>) {
    if (id < 0) return kSkip;
  }
  const uint64_t g = static_cast<uint64_t>(id);
  if (g >= n_groups) {
    throw std::invalid_argument("group id " + std::to_string(id) + " is not below the " +
                                std::to_string(n_groups) + " groups");
  }
  return g;
}

template <class Id>
GroupStats Compute(const GroupedIntervals& rows, const Id* group, size_t n_groups) {
  if (rows.size >= 0xFFFFFFFFull || n_groups >= 0xFFFFFFFFull) {
    throw std::length_error("group_stats supports at most 2^32-1 rows and groups");
  }
  GroupStats s;
  s.n_groups = n_groups;
  // The caller declares the categories; with no rows the column may be a null pointer (an
  // empty vector's data()), and the per-category sums are still there, all zero.
  if (rows.n_categories > 0 && rows.category == nullptr && rows.size > 0) {
    throw std::invalid_argument("group_stats: " + std::to_string(rows.n_categories) +
                                " categories declared but no category column");
  }
  s.n_categories = rows.n_categories;
  for (auto* v : {&s.n, &s.total_ns, &s.max_ns, &s.busy_ns, &s.first_start_ns, &s.last_end_ns}) {
    v->assign(n_groups, 0);
  }
  if (rows.weight != nullptr) s.weight.assign(n_groups, 0);
  s.category_ns.assign(n_groups * s.n_categories, 0);
  const std::string weight_sum = std::string(rows.weight_name) + " sum";

  std::vector<Interval> items, scratch;
  items.reserve(rows.size);
  AdviseHugePages(items.data(), items.capacity() * sizeof(Interval));
  for (size_t i = 0; i < rows.size; ++i) {
    const uint64_t g = GroupOf(group[i], n_groups);
    if (g == kSkip) continue;
    const int64_t start = rows.start[i];
    const int64_t end = std::max(rows.end[i], start);
    const int64_t length = CheckedSub(end, start, "interval length");
    if (s.n[g] == 0) {
      s.first_start_ns[g] = start;
      s.last_end_ns[g] = end;
    } else {
      s.first_start_ns[g] = std::min(s.first_start_ns[g], start);
      s.last_end_ns[g] = std::max(s.last_end_ns[g], end);
    }
    ++s.n[g];
    s.total_ns[g] = CheckedAdd(s.total_ns[g], length, "total_ns");
    s.max_ns[g] = std::max(s.max_ns[g], length);
    if (rows.weight != nullptr) s.weight[g] = CheckedAdd(s.weight[g], rows.weight[i], weight_sum.c_str());
    if (s.n_categories != 0 && rows.category[i] < s.n_categories) {
      int64_t& c = s.category_ns[g * s.n_categories + rows.category[i]];
      c = CheckedAdd(c, length, "category total");
    }
    items.push_back(Interval{start, end, static_cast<uint32_t>(i), static_cast<uint32_t>(g)});
  }
  // Busy time: intervals sorted by start, then (stably) by group; each group's run is unioned.
  RadixSort(items, scratch, [](const Interval& it) { return OrderedKey(it.start); });
  RadixSort(items, scratch, [](const Interval& it) { return static_cast<uint64_t>(it.group); });
  size_t i = 0;
  while (i < items.size()) {
    size_t j = i;
    while (j < items.size() && items[j].group == items[i].group) ++j;
    s.busy_ns[items[i].group] = UnionPeriods(items.data() + i, j - i, [](int64_t, int64_t) {});
    i = j;
  }
  return s;
}

}  // namespace

GroupStats ComputeGroupStats(const GroupedIntervals& rows, const int64_t* group, size_t n_groups) {
  return Compute(rows, group, n_groups);
}

GroupStats ComputeGroupStats(const GroupedIntervals& rows, const uint32_t* group, size_t n_groups) {
  return Compute(rows, group, n_groups);
}

}  // namespace tracecore::query
