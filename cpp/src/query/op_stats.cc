#include <algorithm>
#include <numeric>

#include "query/group_stats.h"
#include "query/queries.h"

namespace tracecore::query {

OpStatsTable OpStats(const TraceTables& t, GroupBy by) {
  const EventTable& e = t.events;
  CheckQueryable(e);
  // Group keys are interned into a pool of their own: the trace's pool is shared and immutable.
  StringPool keys;
  std::vector<uint32_t> group(e.size());
  // by device: one group per device block (the same device string can head several blocks).
  std::vector<std::string_view> block_keys;
  const bool suffixed = t.kind == TraceKind::kStepStats || t.kind == TraceKind::kRunMetadata;
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
        // StepStats GPU records are named "node:Op"; other formats' names are as written
        // (a CUDA kernel's "void at::native::k(...)" keeps its colons).
        if (suffixed && (kind == DeviceKind::kStream || kind == DeviceKind::kStreamAll ||
                         kind == DeviceKind::kMemcpy)) {
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
  // Durations are also summed per category: 0 executor, 1 stream (others: none).
  std::vector<uint8_t> category(e.size());
  for (size_t i = 0; i < e.size(); ++i) {
    const auto kind = static_cast<DeviceKind>(t.devices.kind_code[static_cast<size_t>(e.device_index[i])]);
    category[i] = kind == DeviceKind::kExecutor ? 0 : kind == DeviceKind::kStream ? 1 : 2;
  }
  GroupedIntervals rows;
  rows.start = e.start_ns.data();
  rows.end = e.end_ns.data();
  rows.size = e.size();
  rows.category = category.data();
  rows.n_categories = 2;
  const GroupStats s = ComputeGroupStats(rows, group.data(), n_groups);
  int64_t t0 = INT64_MAX, t1 = INT64_MIN;
  for (size_t g = 0; g < n_groups; ++g) {
    if (s.n[g] == 0) continue;
    t0 = std::min(t0, s.first_start_ns[g]);
    t1 = std::max(t1, s.last_end_ns[g]);
  }
  // Exact difference (may exceed int64), rounded once to double.
  const double span = e.size() ? static_cast<double>(static_cast<__int128>(t1) - t0) : 0.0;
  std::vector<uint32_t> order;
  for (uint32_t g = 0; g < n_groups; ++g) {
    if (s.n[g] > 0 || by == GroupBy::kDevice) order.push_back(g);
  }
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    if (s.total_ns[a] != s.total_ns[b]) return s.total_ns[a] > s.total_ns[b];
    return key_of(a) < key_of(b);
  });
  OpStatsTable out;
  for (uint32_t g : order) {
    const int64_t n = s.n[g], total = s.total_ns[g];
    out.key.Append(key_of(g));
    out.n_events.push_back(n);
    out.total_ns.push_back(total);
    out.mean_ns.push_back(n ? static_cast<double>(total) / static_cast<double>(n) : 0.0);
    out.max_ns.push_back(s.max_ns[g]);
    out.busy_ns.push_back(s.busy_ns[g]);
    out.share.push_back(span > 0 ? static_cast<double>(s.busy_ns[g]) / span : 0.0);
    out.executor_ns.push_back(s.category_ns[g * 2]);
    out.stream_ns.push_back(s.category_ns[g * 2 + 1]);
  }
  return out;
}

}  // namespace tracecore::query
