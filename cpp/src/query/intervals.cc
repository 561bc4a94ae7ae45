#include "query/intervals.h"

#include <algorithm>
#include <stdexcept>

#include "core/huge_pages.h"
#include "query/radix_sort.h"

namespace tracecore::query {

void CheckQueryable(const EventTable& e) {
  if (e.size() >= 0xFFFFFFFFull) throw std::length_error("queries support at most 2^32-1 events");
}

void SortIntervals(std::vector<Interval>* items, std::vector<Interval>* scratch) {
  // Stable by start (ids ascending within equal starts, since items come in id order), then
  // each run of equal starts by (end, id).
  RadixSort(*items, *scratch, [](const Interval& it) { return OrderedKey(it.start); });
  auto& v = *items;
  size_t i = 0;
  while (i < v.size()) {
    size_t j = i + 1;
    bool ordered = true;
    while (j < v.size() && v[j].start == v[i].start) {
      if (v[j].end < v[j - 1].end) ordered = false;
      ++j;
    }
    if (!ordered) {
      std::sort(v.begin() + i, v.begin() + j, [](const Interval& a, const Interval& b) {
        return a.end != b.end ? a.end < b.end : a.id < b.id;
      });
    }
    i = j;
  }
}

void SortedIntervals(const EventTable& e, size_t first, size_t last, const uint8_t* include,
                     std::vector<Interval>* out, std::vector<Interval>* scratch) {
  out->clear();
  out->reserve(last - first);
  AdviseHugePages(out->data(), out->capacity() * sizeof(Interval));
  for (size_t i = first; i < last; ++i) {
    if (include != nullptr && include[i] == 0) continue;
    // Corrupt intervals (end before start) count as zero-length at their start.
    const int64_t start = e.start_ns[i];
    const int64_t end = e.end_ns[i] < start ? start : e.end_ns[i];
    out->push_back(Interval{start, end, static_cast<uint32_t>(i), 0});
  }
  SortIntervals(out, scratch);
}

}  // namespace tracecore::query
