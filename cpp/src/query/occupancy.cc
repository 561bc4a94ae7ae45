#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/parallel.h"
#include "query/queries.h"
#include "query/radix_sort.h"

namespace tracecore::query {
namespace {

// Max over instants t of #{start <= t < end} + #{start == end == t}, for items sorted by start.
int64_t MaxConcurrency(const std::vector<Interval>& s, std::vector<int64_t>* ends,
                       std::vector<int64_t>* scratch) {
  ends->clear();
  for (const Interval& it : s) {
    if (it.end > it.start) ends->push_back(it.end);
  }
  std::vector<int64_t>& e = *ends;
  RadixSort(e, *scratch, [](int64_t v) { return OrderedKey(v); });
  int64_t best = 0;
  size_t ended = 0;       // positive-length ends <= current instant
  size_t zero_before = 0;  // zero-length items strictly before the current instant
  size_t zero_seen = 0;    // zero-length items with start <= current instant
  size_t i = 0;
  while (i < s.size()) {
    const int64_t now = s[i].start;
    zero_before = zero_seen;
    size_t j = i;
    while (j < s.size() && s[j].start == now) {
      if (s[j].end == s[j].start) ++zero_seen;
      ++j;
    }
    while (ended < e.size() && e[ended] <= now) ++ended;
    const int64_t active = static_cast<int64_t>(j) - static_cast<int64_t>(ended) -
                           static_cast<int64_t>(zero_before);
    best = std::max(best, active);
    i = j;
  }
  return best;
}

}  // namespace

OccupancyTable Occupancy(const TraceTables& t) {
  CheckQueryable(t.events);
  // Device blocks are independent: computed on all cores (largest first), output in order.
  std::vector<size_t> first(t.devices.size() + 1, 0);
  ForEachBlock(t, [&](int32_t d, size_t begin, size_t end) { first[static_cast<size_t>(d) + 1] = end; });
  struct Block {
    int64_t busy = 0, span = 0, max_concurrency = 0, idle_gaps = 0;
  };
  std::vector<Block> blocks(t.devices.size());
  const auto size = [&](size_t d) { return first[d + 1] - first[d]; };
  const std::vector<size_t> order = LargestFirst(blocks.size(), size);
  struct Buffers {
    std::vector<Interval> items, scratch;
    std::vector<int64_t> ends, end_scratch;
  };
  const bool parallel = t.events.size() >= (size_t{1} << 16);
  std::vector<Buffers> buffers(WorkerCount(order.size(), parallel));
  ForEachMaybeParallel(order.size(), parallel, [&](size_t q, size_t w) {
    const size_t d = order[q];
    Buffers& buf = buffers[w];
    SortedIntervals(t.events, first[d], first[d + 1], nullptr, &buf.items, &buf.scratch);
    const std::vector<Interval>& items = buf.items;
    int64_t periods = 0;
    Block& b = blocks[d];
    b.busy = UnionPeriods(items.data(), items.size(), [&](int64_t, int64_t) { ++periods; });
    if (!items.empty()) {
      int64_t max_end = items.front().end;
      for (const Interval& it : items) max_end = std::max(max_end, it.end);
      b.span = CheckedSub(max_end, items.front().start, "span_ns");
    }
    b.max_concurrency = MaxConcurrency(items, &buf.ends, &buf.end_scratch);
    b.idle_gaps = periods > 1 ? periods - 1 : 0;
  });
  OccupancyTable out;
  for (size_t d = 0; d < blocks.size(); ++d) {
    const Block& b = blocks[d];
    out.device_index.push_back(static_cast<int32_t>(d));
    out.device.push_back(t.devices.device[d]);
    out.kind.Append(DeviceKindName(static_cast<DeviceKind>(t.devices.kind_code[d])));
    out.n_events.push_back(static_cast<int64_t>(size(d)));
    out.busy_ns.push_back(b.busy);
    out.span_ns.push_back(b.span);
    out.utilization.push_back(b.span > 0 ? static_cast<double>(b.busy) / static_cast<double>(b.span) : 0.0);
    out.max_concurrency.push_back(b.max_concurrency);
    out.idle_gaps.push_back(b.idle_gaps);
  }
  return out;
}

namespace {

std::string Decimal(__int128 v) {  // v >= 0; may pass 2^64 (bins x devices)
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  } while (v > 0);
  return digits;
}

// The bins of OccupancyBins: from t0, n_bins per device block, rows in all (none without
// events).
struct Bins {
  int64_t t0 = 0;
  __int128 n_bins = 0;
  __int128 rows = 0;
};

Bins PlanBins(const TraceTables& t, int64_t bin_ns) {
  if (bin_ns <= 0) throw std::invalid_argument("bin_ns must be positive");
  CheckQueryable(t.events);
  const EventTable& e = t.events;
  Bins b;
  if (e.size() == 0) return b;
  int64_t t0 = INT64_MAX, t1 = INT64_MIN;
  for (size_t i = 0; i < e.size(); ++i) {
    t0 = std::min(t0, e.start_ns[i]);
    t1 = std::max(t1, std::max(e.end_ns[i], e.start_ns[i]));
  }
  const __int128 range = static_cast<__int128>(t1) - t0;
  b.t0 = t0;
  b.n_bins = std::max<__int128>((range + bin_ns - 1) / bin_ns, 1);
  b.rows = b.n_bins * static_cast<__int128>(t.devices.size());
  return b;
}

}  // namespace

uint64_t OccupancyBinRows(const TraceTables& t, int64_t bin_ns) {
  const __int128 rows = PlanBins(t, bin_ns).rows;
  return rows > static_cast<__int128>(UINT64_MAX) ? UINT64_MAX : static_cast<uint64_t>(rows);
}

OccupancyBinsTable OccupancyBins(const TraceTables& t, int64_t bin_ns, uint64_t max_output_bytes) {
  const Bins bins = PlanBins(t, bin_ns);
  OccupancyBinsTable out;
  const EventTable& e = t.events;
  if (e.size() == 0) return out;
  const int64_t t0 = bins.t0;
  const __int128 n_bins = bins.n_bins;
  const __int128 rows = bins.rows;
  if (rows > static_cast<__int128>(max_output_bytes / kOccupancyBinRowBytes)) {
    ThrowOverBudget("occupancy(bin_ns=" + std::to_string(bin_ns) + ")",
                    Decimal(rows), kOccupancyBinRowBytes, max_output_bytes,
                    Decimal(n_bins) + " bins x " + std::to_string(t.devices.size()) +
                        " device blocks; choose a larger bin_ns");
  }
  const size_t nb = static_cast<size_t>(n_bins);
  std::vector<Interval> items, scratch;
  std::vector<int64_t> busy(nb);
  ForEachBlock(t, [&](int32_t d, size_t first, size_t last) {
    SortedIntervals(e, first, last, nullptr, &items, &scratch);
    std::fill(busy.begin(), busy.end(), 0);
    UnionPeriods(items.data(), items.size(), [&](int64_t begin, int64_t end) {
      // Spread [begin, end) over the bins it covers.
      size_t k = static_cast<size_t>((static_cast<__int128>(begin) - t0) / bin_ns);
      int64_t pos = begin;
      while (pos < end && k < nb) {
        const __int128 wide_end = t0 + static_cast<__int128>(bin_ns) * (k + 1);
        const int64_t bin_end = wide_end > INT64_MAX ? INT64_MAX : static_cast<int64_t>(wide_end);
        const int64_t stop = std::min(end, bin_end);
        busy[k] += stop - pos;
        pos = stop;
        ++k;
      }
    });
    for (size_t k = 0; k < nb; ++k) {
      out.device_index.push_back(d);
      out.device.push_back(t.devices.device[static_cast<size_t>(d)]);
      out.bin_start_ns.push_back(static_cast<int64_t>(t0 + static_cast<__int128>(bin_ns) * k));
      out.busy_ns.push_back(busy[k]);
      out.busy_fraction.push_back(static_cast<double>(busy[k]) / static_cast<double>(bin_ns));
    }
  });
  return out;
}

}  // namespace tracecore::query
