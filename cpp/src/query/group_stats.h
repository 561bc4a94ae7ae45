// One engine for statistics of intervals grouped by an id: per group, the number of intervals,
// the sum and maximum of their lengths, the busy time (length of the union of the group's
// intervals), the first start and last end, the sum of a weight column and the lengths summed
// per category. op_stats groups events by op, node or device block with it; bound to Python
// over columns, it gives the busy time of scopes and towers, of a TraceSet's collectives and the
// first start / last end of the CLI's device summary.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tracecore::query {

// Columns of `size` rows: interval [start, end) (an end before its start counts as the start:
// zero length), and the optional per-row weight and category.
struct GroupedIntervals {
  const int64_t* start = nullptr;
  const int64_t* end = nullptr;
  size_t size = 0;
  const int64_t* weight = nullptr;   // summed per group; `weight_name` names it in errors
  const char* weight_name = "weight";
  // Lengths summed per group and category; required when n_categories > 0 and size > 0.
  const uint8_t* category = nullptr;
  size_t n_categories = 0;
};

// One row per group id in [0, n_groups); a group without rows has zeros everywhere.
struct GroupStats {
  size_t n_groups = 0;
  size_t n_categories = 0;
  std::vector<int64_t> n, total_ns, max_ns, busy_ns, first_start_ns, last_end_ns, weight;
  std::vector<int64_t> category_ns;  // [group * n_categories + category]
};

// `group[i]`: the group of row i. With int64 ids a negative id leaves the row out; an id at or
// above n_groups throws std::invalid_argument. Sums that do not fit int64 throw
// std::overflow_error (as every query does) instead of wrapping. At most 2^32 - 1 rows and
// groups (std::length_error).
GroupStats ComputeGroupStats(const GroupedIntervals& rows, const int64_t* group, size_t n_groups);
GroupStats ComputeGroupStats(const GroupedIntervals& rows, const uint32_t* group, size_t n_groups);
// The group of row i is group_of_code[code[i]] (a dictionary column's indices and one group per
// dictionary entry, negative: no group); a code outside [0, n_codes) throws
// std::invalid_argument, as does a group id at or above n_groups.
GroupStats ComputeGroupStats(const GroupedIntervals& rows, const int32_t* code, size_t n_codes,
                             const int64_t* group_of_code, size_t n_groups);

}  // namespace tracecore::query
