#include "query/group_stats.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "core/huge_pages.h"
#include "core/parallel.h"
#include "core/uninit_vector.h"
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

// A row's interval while its group's busy time is computed.
struct Span {
  int64_t start;
  int64_t end;
};

// `group_of(i)`: the group of row i in [0, n_groups), or kSkip.
template <class GroupOf>
GroupStats Compute(const GroupedIntervals& rows, const GroupOf& group_of, size_t n_groups) {
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

  for (size_t i = 0; i < rows.size; ++i) {
    const uint64_t g = group_of(i);
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
  }
  // Busy time: the rows of each group (a counting sort by group: 4 bytes a row, the only
  // buffer as large as the input), then per group its intervals sorted by start and unioned.
  // The intervals are gathered one group at a time into a buffer the size of the largest group,
  // so the memory a call touches stays small (fresh memory is what costs most here).
  std::vector<size_t> begin(n_groups + 1, 0);
  for (size_t g = 0; g < n_groups; ++g) begin[g + 1] = begin[g] + static_cast<size_t>(s.n[g]);
  UninitVector<uint32_t> order;
  ResizeHuge(order, begin.back());
  {
    std::vector<size_t> fill(begin.begin(), begin.end() - 1);
    for (size_t i = 0; i < rows.size; ++i) {
      const uint64_t g = group_of(i);
      if (g != kSkip) order[fill[g]++] = static_cast<uint32_t>(i);
    }
  }
  const auto size = [&](size_t g) { return begin[g + 1] - begin[g]; };
  // A group of one interval is busy for its length, one of zero-length intervals not at all:
  // only the others are sorted and unioned (on trees of unique names most groups hold one row).
  std::vector<size_t> several;
  for (size_t g = 0; g < n_groups; ++g) {
    if (s.n[g] == 1) {
      s.busy_ns[g] = s.total_ns[g];
    } else if (s.n[g] > 1 && s.total_ns[g] != 0) {
      several.push_back(g);
    }
  }
  const std::vector<size_t> order_of = LargestFirst(several.size(), [&](size_t q) {
    return size(several[q]);
  });
  struct Buffers {
    UninitVector<Span> items, scratch;
  };
  const bool parallel = begin.back() >= (size_t{1} << 16);
  std::vector<Buffers> buffers(WorkerCount(several.size(), parallel));
  ForEachMaybeParallel(several.size(), parallel, [&](size_t q, size_t w) {
    const size_t g = several[order_of[q]];
    const size_t n = size(g);
    Buffers& buf = buffers[w];
    if (buf.items.size() < n) ResizeHuge(buf.items, n);
    Span* items = buf.items.data();
    const uint32_t* rows_of = order.data() + begin[g];
    for (size_t k = 0; k < n; ++k) {
      const size_t i = rows_of[k];
      items[k] = Span{rows.start[i], std::max(rows.end[i], rows.start[i])};
    }
    RadixSort(items, n, buf.scratch, [](const Span& it) { return OrderedKey(it.start); });
    s.busy_ns[g] = UnionPeriods(items, n, [](int64_t, int64_t) {});
  });
  return s;
}

template <class Id>
GroupStats ComputeById(const GroupedIntervals& rows, const Id* group, size_t n_groups) {
  return Compute(rows, [&](size_t i) { return GroupOf(group[i], n_groups); }, n_groups);
}

}  // namespace

GroupStats ComputeGroupStats(const GroupedIntervals& rows, const int64_t* group, size_t n_groups) {
  return ComputeById(rows, group, n_groups);
}

GroupStats ComputeGroupStats(const GroupedIntervals& rows, const uint32_t* group, size_t n_groups) {
  return ComputeById(rows, group, n_groups);
}

GroupStats ComputeGroupStats(const GroupedIntervals& rows, const int32_t* code, size_t n_codes,
                             const int64_t* group_of_code, size_t n_groups) {
  for (size_t c = 0; c < n_codes; ++c) GroupOf(group_of_code[c], n_groups);  // checks each
  return Compute(
      rows,
      [&](size_t i) {
        const int32_t c = code[i];
        if (c < 0 || static_cast<size_t>(c) >= n_codes) {
          throw std::invalid_argument("code " + std::to_string(c) + " of row " + std::to_string(i) +
                                      " is not below the " + std::to_string(n_codes) + " codes");
        }
        const int64_t g = group_of_code[c];
        return g < 0 ? kSkip : static_cast<uint64_t>(g);
      },
      n_groups);
}

}  // namespace tracecore::query
