// Interval primitives shared by the queries: events as (start, end, id) sorted by (start, end, id),
// and the union of such a sorted run.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "tables/trace_tables.h"

namespace tracecore::query {

// Checked int64 arithmetic for query results: a sum or length that does not fit int64 (only
// possible with absurd clocks or sizes) raises std::overflow_error (Python: OverflowError)
// instead of wrapping around.
inline int64_t CheckedAdd(int64_t a, int64_t b, const char* what) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) throw std::overflow_error(std::string(what) + " overflows int64");
  return r;
}
inline int64_t CheckedSub(int64_t a, int64_t b, const char* what) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) throw std::overflow_error(std::string(what) + " overflows int64");
  return r;
}

// Calls fn(device_index, first, last) for each device block's event range (blocks are
// contiguous in file order; empty blocks get first == last).
template <class Fn>
void ForEachBlock(const TraceTables& t, Fn&& fn) {
  size_t pos = 0;
  for (size_t d = 0; d < t.devices.size(); ++d) {
    const size_t n = static_cast<size_t>(t.devices.n_events[d]);
    fn(static_cast<int32_t>(d), pos, pos + n);
    pos += n;
  }
  if (pos != t.events.size()) throw std::logic_error("device blocks do not cover the events");
}

struct Interval {
  int64_t start;
  int64_t end;
  uint32_t id;  // event id (queries support up to 2^32 events)
  uint32_t group;
};

// Events [first, last) of `e` whose `include` flag is set (all if include is null), sorted by
// (start, end, id); an end before its start is clamped to the start. `scratch` is reused.
void SortedIntervals(const EventTable& e, size_t first, size_t last, const uint8_t* include,
                     std::vector<Interval>* out, std::vector<Interval>* scratch);

// Sorts `items` in place by (start, end, id).
void SortIntervals(std::vector<Interval>* items, std::vector<Interval>* scratch);

// Union of intervals sorted by start: calls on_period(begin, end) for each maximal busy period
// of the positive-length intervals (touching intervals merge). Returns the total busy length.
// `Item`: an Interval, or anything else with int64 `start` and `end`.
template <class Item, class OnPeriod>
int64_t UnionPeriods(const Item* items, size_t n, OnPeriod&& on_period) {
  int64_t busy = 0;
  bool open = false;
  int64_t begin = 0, end = 0;
  for (size_t i = 0; i < n; ++i) {
    const Item& it = items[i];
    if (it.end <= it.start) continue;
    if (open && it.start <= end) {
      if (it.end > end) end = it.end;
      continue;
    }
    if (open) {
      busy = CheckedAdd(busy, CheckedSub(end, begin, "busy time"), "busy time");
      on_period(begin, end);
    }
    open = true;
    begin = it.start;
    end = it.end;
  }
  if (open) {
    busy = CheckedAdd(busy, CheckedSub(end, begin, "busy time"), "busy time");
    on_period(begin, end);
  }
  return busy;
}

// Checks the event count fits the 32-bit ids the queries use.
void CheckQueryable(const EventTable& e);

}  // namespace tracecore::query
