// The questions people open a trace to answer, as pure functions over the tables. Semantics are
// documented in docs/queries.md; every query is O(n log n + output).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "query/intervals.h"
#include "query/query_tables.h"
#include "tables/trace_tables.h"

namespace tracecore::query {

// The memory budget of a query whose output is not bounded by its input (overlapping pairs,
// time bins): the output table's bytes (rows times the row's width). A query that would pass
// it throws std::invalid_argument saying so, before allocating (time bins) or soon after the
// count passes it (pairs: within 4096 per worker; computing and sorting them takes up to twice
// the budget).
constexpr uint64_t kDefaultMaxOutputBytes = uint64_t{1} << 30;  // 1 GiB

// Overlapping event pairs. `left` / `right`: one byte per event (non-zero = in the set), or null
// for "all events". With both null every unordered pair is reported once (left < right);
// otherwise every ordered pair (l, r), l != r. Sorted by (left, right). 24 bytes per row.
PairTable Overlaps(const TraceTables& t, const uint8_t* left, const uint8_t* right,
                   bool same_device, uint64_t max_output_bytes = kDefaultMaxOutputBytes);

// Events sorted by start with a running maximum of end: answers "what is active in [a, b)".
class IntervalIndex {
 public:
  explicit IntervalIndex(const EventTable& e);
  // Ids of events with start < end_ns and start_ns < end, ascending.
  std::vector<int64_t> Window(int64_t start_ns, int64_t end_ns) const;

 private:
  std::vector<int64_t> starts_;
  std::vector<int64_t> ends_;
  std::vector<int64_t> max_end_;  // max_end_[i] = max(ends_[0..i])
  std::vector<uint32_t> ids_;
};

OccupancyTable Occupancy(const TraceTables& t);
// 32 bytes per row (one per device block and bin): device_index, device, bin_start_ns,
// busy_ns, busy_fraction.
constexpr uint64_t kOccupancyBinRowBytes = 32;
OccupancyBinsTable OccupancyBins(const TraceTables& t, int64_t bin_ns,
                                 uint64_t max_output_bytes = kDefaultMaxOutputBytes);
// The rows OccupancyBins would make (capped at 2^64 - 1), without making them.
uint64_t OccupancyBinRows(const TraceTables& t, int64_t bin_ns);

// The error of a query whose output would pass its budget.
[[noreturn]] void ThrowOverBudget(const std::string& query, const std::string& rows,
                                  uint64_t row_bytes, uint64_t max_output_bytes,
                                  const std::string& advice);

struct Replay {
  ReplayTimeline timeline;
  ReplayPeaks peaks;
  ReplayLive live;
};

// `allocator`: a pool id to restrict to, or StringPool::kNotFound for all allocators.
// with_live=false leaves Replay::live empty (the peaks still count the live records).
// `record_mask`: one byte per alloc_records row (non-zero = replayed), null for all;
// `event_mask`: one byte per event, the events whose allocations the snapshot baseline may
// take (null for all). Used to replay one step alone.
Replay ReplayRecords(const TraceTables& t, uint32_t allocator, bool snapshot_baseline,
                     bool with_live = true, const uint8_t* record_mask = nullptr,
                     const uint8_t* event_mask = nullptr);
// `event_mask`: one byte per event (non-zero = kept), null for all: the model then runs on the
// kept events alone, as timeline.py would on a StepStats holding only them (one step).
Replay ReplayTensors(const TraceTables& t, uint32_t allocator,
                     const uint8_t* event_mask = nullptr);

enum class GroupBy { kOp, kNodeName, kDevice };
OpStatsTable OpStats(const TraceTables& t, GroupBy by);

}  // namespace tracecore::query
