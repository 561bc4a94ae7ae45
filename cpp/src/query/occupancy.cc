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

// Where each device block's events start, and the end of the last one (blocks are
// contiguous): devices.size() + 1 rows.
std::vector<size_t> BlockStarts(const TraceTables& t) {
  std::vector<size_t> first(t.devices.size() + 1, 0);
  ForEachBlock(t, [&](int32_t d, size_t, size_t end) { first[static_cast<size_t>(d) + 1] = end; });
  return first;
}

}  // namespace

OccupancyTable Occupancy(const TraceTables& t) {
  CheckQueryable(t.events);
  // Device blocks are independent: computed on all cores (largest first), output in order.
  const std::vector<size_t> first = BlockStarts(t);
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

std::string Decimal(__int128 v) {  // v >= 0; may pass 2^64 (bins summed over blocks)
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  } while (v > 0);
  return digits;
}

// The bins of OccupancyBins: a grid of bin_ns from t0 (the trace's first start); each device
// block has the bins [first[d], first[d] + count[d]) of it that cover its own span (none for an
// empty block), rows in all.
struct Bins {
  int64_t t0 = 0;
  std::vector<size_t> begin;   // per block: first event row (blocks are contiguous)
  std::vector<__int128> first;  // per block: index of its first bin on the grid
  std::vector<__int128> count;  // per block: its bins
  __int128 rows = 0;
};

Bins PlanBins(const TraceTables& t, int64_t bin_ns) {
  if (bin_ns <= 0) throw std::invalid_argument("bin_ns must be positive");
  CheckQueryable(t.events);
  const EventTable& e = t.events;
  Bins b;
  const size_t n_blocks = t.devices.size();
  b.begin = BlockStarts(t);
  b.first.assign(n_blocks, 0);
  b.count.assign(n_blocks, 0);
  std::vector<int64_t> lo(n_blocks, INT64_MAX), hi(n_blocks, INT64_MIN);
  for (size_t k = 0; k < n_blocks; ++k) {
    for (size_t i = b.begin[k]; i < b.begin[k + 1]; ++i) {
      lo[k] = std::min(lo[k], e.start_ns[i]);
      hi[k] = std::max(hi[k], std::max(e.end_ns[i], e.start_ns[i]));
    }
  }
  if (e.size() == 0) return b;
  b.t0 = *std::min_element(lo.begin(), lo.end());
  for (size_t d = 0; d < n_blocks; ++d) {
    if (b.begin[d + 1] == b.begin[d]) continue;  // no events, no span, no bins
    const __int128 from = static_cast<__int128>(lo[d]) - b.t0;
    const __int128 to = static_cast<__int128>(hi[d]) - b.t0;
    b.first[d] = from / bin_ns;
    const __int128 end_bin = (to + bin_ns - 1) / bin_ns;  // bins up to the block's last end
    b.count[d] = std::max<__int128>(end_bin - b.first[d], 1);
    b.rows += b.count[d];
  }
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
  const size_t n_blocks = t.devices.size();
  if (bins.rows > static_cast<__int128>(max_output_bytes / kOccupancyBinRowBytes)) {
    size_t with_events = 0;
    for (size_t d = 0; d < n_blocks; ++d) with_events += bins.count[d] > 0;
    ThrowOverBudget("occupancy(bin_ns=" + std::to_string(bin_ns) + ")", Decimal(bins.rows),
                    kOccupancyBinRowBytes, max_output_bytes,
                    "the bins over the spans of " + std::to_string(with_events) +
                        " device blocks; choose a larger bin_ns");
  }
  // Each block writes its own segment of the rows (blocks on all cores, largest first).
  std::vector<size_t> row(n_blocks + 1, 0);
  for (size_t d = 0; d < n_blocks; ++d) row[d + 1] = row[d] + static_cast<size_t>(bins.count[d]);
  const size_t rows = row.back();
  out.device_index.resize(rows);
  out.device.resize(rows);
  out.bin_start_ns.resize(rows);
  out.busy_ns.resize(rows);
  out.busy_fraction.resize(rows);
  const std::vector<size_t> order =
      LargestFirst(n_blocks, [&](size_t d) { return bins.begin[d + 1] - bins.begin[d]; });
  struct Buffers {
    std::vector<Interval> items, scratch;
  };
  const bool parallel = e.size() >= (size_t{1} << 16);
  std::vector<Buffers> buffers(WorkerCount(order.size(), parallel));
  ForEachMaybeParallel(order.size(), parallel, [&](size_t q, size_t w) {
    const size_t d = order[q];
    const size_t nb = static_cast<size_t>(bins.count[d]);
    if (nb == 0) return;
    Buffers& buf = buffers[w];
    SortedIntervals(e, bins.begin[d], bins.begin[d + 1], nullptr, &buf.items, &buf.scratch);
    int64_t* busy = out.busy_ns.data() + row[d];
    std::fill(busy, busy + nb, 0);
    // The block's bins start at grid index first: bin k of the block is grid bin first + k.
    const __int128 first = bins.first[d];
    const __int128 origin = t0 + first * bin_ns;  // the start of the block's first bin
    UnionPeriods(buf.items.data(), buf.items.size(), [&](int64_t begin, int64_t end) {
      // Spread [begin, end) over the bins it covers.
      size_t k = static_cast<size_t>((static_cast<__int128>(begin) - origin) / bin_ns);
      int64_t pos = begin;
      while (pos < end && k < nb) {
        const __int128 wide_end = origin + static_cast<__int128>(bin_ns) * (k + 1);
        const int64_t bin_end = wide_end > INT64_MAX ? INT64_MAX : static_cast<int64_t>(wide_end);
        const int64_t stop = std::min(end, bin_end);
        busy[k] += stop - pos;
        pos = stop;
        ++k;
      }
    });
    const uint32_t device = t.devices.device[d];
    for (size_t k = 0; k < nb; ++k) {
      const size_t r = row[d] + k;
      out.device_index[r] = static_cast<int32_t>(d);
      out.device[r] = device;
      out.bin_start_ns[r] = static_cast<int64_t>(origin + static_cast<__int128>(bin_ns) * k);
      out.busy_fraction[r] = static_cast<double>(busy[k]) / static_cast<double>(bin_ns);
    }
  });
  return out;
}

}  // namespace tracecore::query
