#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/huge_pages.h"
#include "core/uninit_vector.h"
#include "core/parallel.h"
#include "query/queries.h"
#include "query/radix_sort.h"

namespace tracecore::query {
namespace {

struct Pair {
  uint64_t key;  // left << 32 | right
  int64_t overlap;
};

constexpr uint64_t kPairRowBytes = 24;  // left, right, overlap_ns

// The pairs found so far by every worker, against the budget. A range's count is checked once
// per scanned interval against the budget left when it was last synced, and added to the shared
// total every 4096 pairs (and at the end of the range): one atomic operation per 4096 pairs,
// and the total passes the budget by at most 4096 pairs per worker plus one interval's pairs.
class RowCounter {
 public:
  explicit RowCounter(uint64_t max_output_bytes)
      : max_bytes_(max_output_bytes), max_rows_(max_output_bytes / kPairRowBytes) {}

  // One range's view: Add() after each interval, Flush() when the range is done.
  class Local {
   public:
    explicit Local(RowCounter* shared) : shared_(shared) {}
    void Add(size_t n) {
      pending_ += n;
      if (pending_ >= 4096) Flush();
      else if (seen_ + pending_ > shared_->max_rows_) shared_->Fail();
    }
    void Flush() {
      if (pending_ == 0) return;
      seen_ = shared_->rows_.fetch_add(pending_, std::memory_order_relaxed) + pending_;
      pending_ = 0;
      if (seen_ > shared_->max_rows_) shared_->Fail();
    }

   private:
    RowCounter* shared_;
    uint64_t pending_ = 0, seen_ = 0;
  };

 private:
  [[noreturn]] void Fail() const {
    ThrowOverBudget("overlaps", "more than " + std::to_string(max_rows_), kPairRowBytes,
                    max_bytes_, "narrow left/right, or use same_device=True");
  }
  std::atomic<uint64_t> rows_{0};
  uint64_t max_bytes_, max_rows_;
};

inline int64_t OverlapLength(const Interval& a, const Interval& b) {
  return CheckedSub(std::min(a.end, b.end), std::max(a.start, b.start), "overlap_ns");
}

// Every unordered overlapping pair of one set sorted by (start, end, id). With that order, every
// later item whose start is before an item's end overlaps it, so the scan is output-sensitive.
void SelfPairs(const std::vector<Interval>& s, std::vector<Pair>* out, RowCounter::Local* rows) {
  for (size_t i = 0; i < s.size(); ++i) {
    const Interval& a = s[i];
    const size_t before = out->size();
    for (size_t j = i + 1; j < s.size() && s[j].start < a.end; ++j) {
      const Interval& b = s[j];
      const uint32_t lo = std::min(a.id, b.id), hi = std::max(a.id, b.id);
      out->push_back(Pair{(uint64_t{lo} << 32) | hi, OverlapLength(a, b)});
    }
    rows->Add(out->size() - before);
  }
}

// Every ordered pair (l in L, r in R, l != r) that overlaps; both sorted by (start, end, id).
void JoinPairs(const std::vector<Interval>& L, const std::vector<Interval>& R,
               std::vector<Pair>* out, RowCounter::Local* rows) {
  auto emit = [&](const Interval& l, const Interval& r) {
    if (l.id != r.id) out->push_back(Pair{(uint64_t{l.id} << 32) | r.id, OverlapLength(l, r)});
  };
  // r starting at or after l (a zero-length r at l's start never overlaps: skipped by the bound).
  for (const Interval& l : L) {
    auto it = std::lower_bound(R.begin(), R.end(), l.start, [](const Interval& r, int64_t s) {
      return r.start < s;
    });
    while (it != R.end() && it->start == l.start && it->end == l.start) ++it;
    const size_t before = out->size();
    for (; it != R.end() && it->start < l.end; ++it) emit(l, *it);
    rows->Add(out->size() - before);
  }
  // l starting strictly after r.
  for (const Interval& r : R) {
    auto it = std::upper_bound(L.begin(), L.end(), r.start, [](int64_t s, const Interval& l) {
      return s < l.start;
    });
    const size_t before = out->size();
    for (; it != L.end() && it->start < r.end; ++it) emit(*it, r);
    rows->Add(out->size() - before);
  }
}

}  // namespace

PairTable Overlaps(const TraceTables& t, const uint8_t* left, const uint8_t* right,
                   bool same_device, uint64_t max_output_bytes) {
  const EventTable& e = t.events;
  CheckQueryable(e);
  // The ranges of events searched: each device block (its events are contiguous in file order,
  // so its ids are too), or everything at once.
  std::vector<std::pair<size_t, size_t>> ranges;
  if (same_device) {
    ForEachBlock(t, [&](int32_t, size_t first, size_t last) {
      if (last > first) ranges.emplace_back(first, last);
    });
  } else if (e.size() > 0) {
    ranges.emplace_back(0, e.size());
  }
  // Ranges are independent: searched on all cores (largest first), each one's pairs sorted by
  // (left, right). Ids of a later range are all larger, so the concatenation is sorted too.
  const auto size = [&](size_t k) { return ranges[k].second - ranges[k].first; };
  const std::vector<size_t> order = LargestFirst(ranges.size(), size);
  struct Buffers {
    std::vector<Interval> a, b, scratch;
    UninitVector<Pair> pair_scratch;
  };
  const bool parallel = e.size() >= (size_t{1} << 16);
  std::vector<Buffers> buffers(WorkerCount(order.size(), parallel));
  std::vector<std::vector<Pair>> pairs(ranges.size());
  const bool self = left == nullptr && right == nullptr;
  RowCounter rows(max_output_bytes);
  ForEachMaybeParallel(order.size(), parallel, [&](size_t q, size_t w) {
    const size_t k = order[q];
    Buffers& buf = buffers[w];
    RowCounter::Local local(&rows);
    SortedIntervals(e, ranges[k].first, ranges[k].second, left, &buf.a, &buf.scratch);
    if (self) {
      SelfPairs(buf.a, &pairs[k], &local);
    } else {
      SortedIntervals(e, ranges[k].first, ranges[k].second, right, &buf.b, &buf.scratch);
      JoinPairs(buf.a, buf.b, &pairs[k], &local);
    }
    local.Flush();
    RadixSort(pairs[k].data(), pairs[k].size(), buf.pair_scratch, [](const Pair& p) { return p.key; });
  });
  std::vector<size_t> row(ranges.size() + 1, 0);
  for (size_t k = 0; k < ranges.size(); ++k) row[k + 1] = row[k] + pairs[k].size();
  PairTable out;
  ResizeHuge(out.left, row.back());
  ResizeHuge(out.right, row.back());
  ResizeHuge(out.overlap_ns, row.back());
  ForEachMaybeParallel(ranges.size(), parallel, [&](size_t k, size_t) {
    std::vector<Pair>& p = pairs[k];
    for (size_t i = 0; i < p.size(); ++i) {
      out.left[row[k] + i] = static_cast<int64_t>(p[i].key >> 32);
      out.right[row[k] + i] = static_cast<int64_t>(p[i].key & 0xFFFFFFFFu);
      out.overlap_ns[row[k] + i] = p[i].overlap;
    }
    std::vector<Pair>().swap(p);  // freed as soon as copied
  });
  return out;
}

IntervalIndex::IntervalIndex(const EventTable& e) {
  CheckQueryable(e);
  std::vector<Interval> items, scratch;
  SortedIntervals(e, 0, e.size(), nullptr, &items, &scratch);
  ResizeHuge(starts_, items.size());
  ResizeHuge(ends_, items.size());
  ResizeHuge(max_end_, items.size());
  ResizeHuge(ids_, items.size());
  int64_t running = INT64_MIN;
  for (size_t i = 0; i < items.size(); ++i) {
    starts_[i] = items[i].start;
    ends_[i] = items[i].end;
    ids_[i] = items[i].id;
    running = std::max(running, ends_[i]);
    max_end_[i] = running;
  }
}

std::vector<int64_t> IntervalIndex::Window(int64_t start_ns, int64_t end_ns) const {
  // Candidates start before the window ends; the first that can still be running is found
  // through the running maximum of ends.
  const size_t stop = static_cast<size_t>(
      std::lower_bound(starts_.begin(), starts_.end(), end_ns) - starts_.begin());
  const size_t from = static_cast<size_t>(
      std::upper_bound(max_end_.begin(), max_end_.begin() + stop, start_ns) - max_end_.begin());
  std::vector<int64_t> ids;
  for (size_t i = from; i < stop; ++i) {
    if (start_ns < ends_[i]) ids.push_back(ids_[i]);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

void ThrowOverBudget(const std::string& query, const std::string& rows, uint64_t row_bytes,
                     uint64_t max_output_bytes, const std::string& advice) {
  throw std::invalid_argument(query + " would make " + rows + " rows of " +
                              std::to_string(row_bytes) + " bytes, over the output budget of " +
                              std::to_string(max_output_bytes) + " bytes (" + advice +
                              ", or raise max_output_bytes)");
}

}  // namespace tracecore::query
