#include <algorithm>
#include <numeric>

#include "query/queries.h"
#include "query/radix_sort.h"

namespace tracecore::query {

OpStatsTable OpStats(const TraceTables& t, GroupBy by) {
  const EventTable& e = t.events;
  CheckQueryable(e);
  // Group keys are interned into a pool of their own: the trace's pool is shared and immutable.
  StringPool keys;
  std::vector<uint32_t> group(e.size());
  // by device: one group per device block (the same device string can head several blocks).
  std::vector<std::string_view> block_keys;
  if (by == GroupBy::kDevice) {
    for (size_t d = 0; d < t.devices.size(); ++d) block_keys.push_back(t.pool.Get(t.devices.device[d]));
  }
  for (size_t i = 0; i < e.size(); ++i) {
    if (by == GroupBy::kDevice) {
      group[i] = static_cast<uint32_t>(e.device_index[i]);
      continue;
    }
    const auto kind = static_cast<DeviceKind>(t.devices.kind_code[static_cast<size_t>(e.device_index[i])]);
    std::string_view key;
    switch (by) {
      case GroupBy::kOp:
        key = e.op_valid[i] ? t.pool.Get(e.op[i]) : std::string_view("(none)");
        break;
      case GroupBy::kNodeName: {
        key = t.pool.Get(e.node_name[i]);
        if (kind == DeviceKind::kStream || kind == DeviceKind::kStreamAll || kind == DeviceKind::kMemcpy) {
          const size_t colon = key.rfind(':');
          if (colon != std::string_view::npos) key = key.substr(0, colon);
        }
        break;
      }
      case GroupBy::kDevice:
        break;
    }
    group[i] = keys.Intern(key);
  }
  const size_t n_groups = by == GroupBy::kDevice ? block_keys.size() : keys.size();
  auto key_of = [&](uint32_t g) { return by == GroupBy::kDevice ? block_keys[g] : keys.Get(g); };
  OpStatsTable out;
  std::vector<int64_t> n_events(n_groups, 0), total(n_groups, 0), max_ns(n_groups, 0),
      busy(n_groups, 0), executor(n_groups, 0), stream(n_groups, 0);
  int64_t t0 = INT64_MAX, t1 = INT64_MIN;
  for (size_t i = 0; i < e.size(); ++i) {
    const int64_t start = e.start_ns[i];
    const int64_t end = std::max(e.end_ns[i], start);
    const int64_t duration = CheckedSub(end, start, "event duration");
    const uint32_t g = group[i];
    ++n_events[g];
    total[g] = CheckedAdd(total[g], duration, "total_ns");
    max_ns[g] = std::max(max_ns[g], duration);
    const auto kind = static_cast<DeviceKind>(t.devices.kind_code[static_cast<size_t>(e.device_index[i])]);
    if (kind == DeviceKind::kExecutor) executor[g] = CheckedAdd(executor[g], duration, "executor_ns");
    if (kind == DeviceKind::kStream) stream[g] = CheckedAdd(stream[g], duration, "stream_ns");
    t0 = std::min(t0, start);
    t1 = std::max(t1, end);
  }
  // Busy time per group: intervals sorted by start, then (stably) by group.
  std::vector<Interval> items, scratch;
  SortedIntervals(e, 0, e.size(), nullptr, &items, &scratch);
  for (Interval& it : items) it.group = group[it.id];
  RadixSort(items, scratch, [](const Interval& it) { return static_cast<uint64_t>(it.group); });
  size_t i = 0;
  while (i < items.size()) {
    size_t j = i;
    while (j < items.size() && items[j].group == items[i].group) ++j;
    busy[items[i].group] = UnionPeriods(items.data() + i, j - i, [](int64_t, int64_t) {});
    i = j;
  }
  // Exact difference (may exceed int64), rounded once to double.
  const double span = e.size() ? static_cast<double>(static_cast<__int128>(t1) - t0) : 0.0;
  std::vector<uint32_t> order;
  for (uint32_t g = 0; g < n_groups; ++g) {
    if (n_events[g] > 0 || by == GroupBy::kDevice) order.push_back(g);
  }
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    if (total[a] != total[b]) return total[a] > total[b];
    return key_of(a) < key_of(b);
  });
  for (uint32_t g : order) {
    out.key.Append(key_of(g));
    out.n_events.push_back(n_events[g]);
    out.total_ns.push_back(total[g]);
    out.mean_ns.push_back(n_events[g] ? static_cast<double>(total[g]) / static_cast<double>(n_events[g]) : 0.0);
    out.max_ns.push_back(max_ns[g]);
    out.busy_ns.push_back(busy[g]);
    out.share.push_back(span > 0 ? static_cast<double>(busy[g]) / span : 0.0);
    out.executor_ns.push_back(executor[g]);
    out.stream_ns.push_back(stream[g]);
  }
  return out;
}

}  // namespace tracecore::query
