// Memory replays: the allocation records as the allocator saw them, and TensorFlow timeline.py's
// tensor-lifetime model reproduced exactly (see docs/queries.md).
#include <algorithm>
#include <numeric>
#include <string>

#include "query/queries.h"
#include "query/radix_sort.h"

namespace tracecore::query {
namespace {

struct Change {
  int64_t time;
  int64_t bytes;
  uint32_t name;  // tensors: tensor index (names compared through it); records: record row
  uint32_t pad;
};

// Allocators in the order of their names, restricted to `only` unless it is kNotFound.
std::vector<uint32_t> SortedAllocators(const StringPool& pool, std::vector<uint32_t> ids,
                                       uint32_t only) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  if (only != StringPool::kNotFound) {
    ids.erase(std::remove_if(ids.begin(), ids.end(), [&](uint32_t a) { return a != only; }),
              ids.end());
  }
  std::sort(ids.begin(), ids.end(),
            [&](uint32_t a, uint32_t b) { return pool.Get(a) < pool.Get(b); });
  return ids;
}

// Replays `changes` (already in replay order) of one allocator: appends the timeline rows and
// returns the index of the change after which the peak was first reached (or SIZE_MAX).
size_t ReplayAllocator(uint32_t allocator, const std::vector<Change>& changes, int64_t baseline,
                       ReplayTimeline* timeline, int64_t* peak_bytes, int64_t* peak_time) {
  int64_t level = baseline;
  *peak_bytes = 0;
  *peak_time = 0;
  size_t peak_at = SIZE_MAX;
  size_t i = 0;
  while (i < changes.size()) {
    const int64_t now = changes[i].time;
    int64_t delta = 0;
    size_t j = i;
    while (j < changes.size() && changes[j].time == now) {
      delta = CheckedAdd(delta, changes[j].bytes, "memory replay delta");
      ++j;
    }
    level = CheckedAdd(level, delta, "memory replay level");
    timeline->allocator.push_back(allocator);
    timeline->time_ns.push_back(now);
    timeline->delta_bytes.push_back(delta);
    timeline->bytes_in_use.push_back(level);
    if (level > *peak_bytes) {
      *peak_bytes = level;
      *peak_time = now;
      peak_at = j - 1;
    }
    i = j;
  }
  return peak_at;
}

}  // namespace

Replay ReplayRecords(const TraceTables& t, uint32_t only, bool snapshot_baseline) {
  const AllocRecordTable& r = t.alloc_records;
  Replay out;
  const std::vector<uint32_t> allocators = SortedAllocators(t.pool, r.allocator, only);
  std::vector<Change> changes, scratch;
  for (uint32_t allocator : allocators) {
    changes.clear();
    for (size_t i = 0; i < r.size(); ++i) {
      if (r.allocator[i] == allocator) {
        changes.push_back(Change{r.time_ns[i], r.bytes[i], static_cast<uint32_t>(i), 0});
      }
    }
    RadixSort(changes, scratch, [](const Change& c) { return OrderedKey(c.time); });
    int64_t baseline = 0;
    if (snapshot_baseline) {
      // Align the replay with the allocator's first allocator_bytes_in_use snapshot.
      const AllocationTable& a = t.allocations;
      size_t best = SIZE_MAX;
      for (size_t i = 0; i < a.size(); ++i) {
        if (a.allocator[i] != allocator) continue;
        if (best == SIZE_MAX) {
          best = i;
          continue;
        }
        const int64_t si = t.events.start_ns[static_cast<size_t>(a.event_id[i])];
        const int64_t sb = t.events.start_ns[static_cast<size_t>(a.event_id[best])];
        if (si < sb || (si == sb && a.event_id[i] < a.event_id[best])) best = i;
      }
      if (best != SIZE_MAX) {
        const int64_t at = t.events.start_ns[static_cast<size_t>(a.event_id[best])];
        int64_t level_then = 0;
        for (const Change& c : changes) {
          if (c.time > at) break;
          level_then = CheckedAdd(level_then, c.bytes, "memory replay level");
        }
        baseline = CheckedSub(a.allocator_bytes_in_use[best], level_then, "snapshot baseline");
      }
    }
    int64_t peak_bytes, peak_time;
    const size_t peak_at =
        ReplayAllocator(allocator, changes, baseline, &out.timeline, &peak_bytes, &peak_time);
    int64_t live = 0;
    if (peak_at != SIZE_MAX) {
      for (size_t i = 0; i <= peak_at; ++i) {
        const Change& c = changes[i];
        if (c.bytes > 0) {
          ++live;
          out.live.allocator.push_back(allocator);
          out.live.row.push_back(c.name);
          out.live.tensor_name.Append("");
        } else if (c.bytes < 0) {
          --live;
        }
      }
    }
    out.peaks.allocator.push_back(allocator);
    out.peaks.peak_bytes.push_back(peak_bytes);
    out.peaks.peak_time_ns.push_back(peak_time);
    out.peaks.live_tensors.push_back(live);
    out.peaks.n_changes.push_back(static_cast<int64_t>(changes.size()));
  }
  return out;
}

namespace {

// timeline.py's view of a node label "name = Op(a, b)": re.match(r'(.*) = (.*)\((.*)\)', label)
// with greedy groups and '.' not matching newlines; inputs split on ", ". Returns false when
// the pattern does not match. `inputs` receives views into `label`.
bool ParseLabelInputs(std::string_view label, std::vector<std::string_view>* inputs) {
  inputs->clear();
  // re.match anchors at the start; '.' stops at the first newline, so only the first line counts.
  const size_t nl = label.find('\n');
  const std::string_view line = nl == std::string_view::npos ? label : label.substr(0, nl);
  // All groups are greedy: group 3 ends at the line's last ')', group 2 at the last '(' before
  // it, and group 1 at the last " = " that still ends before that '('.
  const size_t close = line.rfind(')');
  if (close == std::string_view::npos || close == 0) return false;
  const size_t open = line.rfind('(', close - 1);
  if (open == std::string_view::npos || open < 3) return false;
  if (line.rfind(" = ", open - 3) == std::string_view::npos) return false;
  const std::string_view args = line.substr(open + 1, close - open - 1);
  if (args.empty()) return true;
  size_t pos = 0;
  for (;;) {
    const size_t sep = args.find(", ", pos);
    if (sep == std::string_view::npos) {
      inputs->push_back(args.substr(pos));
      break;
    }
    inputs->push_back(args.substr(pos, sep - pos));
    pos = sep + 2;
  }
  return true;
}

// Truncating division, as TensorFlow's C++ computes micros from nanos.
inline int64_t Micros(int64_t ns) { return ns / 1000; }

}  // namespace

Replay ReplayTensors(const TraceTables& t, uint32_t only) {
  const EventTable& e = t.events;
  const TensorTable& x = t.tensors;
  // 1. Every output is a tensor named node or node:i; a later one with the same name replaces it.
  StringPool names;  // tensor name -> dense id
  std::vector<int64_t> tensor_of_name;  // name id -> tensor row (latest)
  std::string name;
  std::vector<uint32_t> name_of_row(x.size());
  for (size_t row = 0; row < x.size(); ++row) {
    const size_t ev = static_cast<size_t>(x.event_id[row]);
    name.assign(t.pool.Get(e.node_name[ev]));
    if (x.output_index[row] != 0) {
      name.push_back(':');
      name += std::to_string(x.output_index[row]);
    }
    const uint32_t id = names.Intern(name);
    if (id >= tensor_of_name.size()) tensor_of_name.resize(id + 1, -1);
    tensor_of_name[id] = static_cast<int64_t>(row);
    name_of_row[row] = id;
  }
  // Live tensors: create at the producer's start, last unref = max over unrefs.
  std::vector<int64_t> last_unref(x.size(), INT64_MIN);
  for (size_t id = 0; id < tensor_of_name.size(); ++id) {
    const int64_t row = tensor_of_name[id];
    if (row < 0) continue;
    const size_t ev = static_cast<size_t>(x.event_id[static_cast<size_t>(row)]);
    last_unref[static_cast<size_t>(row)] = Micros(e.end_ns[ev]);
  }
  // 2. Consumers on executor devices unref their inputs at their end - 1.
  std::vector<std::string_view> inputs;
  for (size_t ev = 0; ev < e.size(); ++ev) {
    const std::string_view device = t.pool.Get(e.device[ev]);
    if (device.find("/stream:") != std::string_view::npos ||
        device.find("/memcpy") != std::string_view::npos) {
      continue;
    }
    if (t.pool.Get(e.node_name[ev]) == "RecvTensor") continue;
    const std::string_view label = t.pool.Get(e.timeline_label[ev]);
    if (!ParseLabelInputs(label, &inputs)) continue;
    const int64_t unref = Micros(e.end_ns[ev]) - 1;
    for (std::string_view input : inputs) {
      uint32_t id = names.Find(input);
      if (id == StringPool::kNotFound || tensor_of_name[id] < 0) {
        const size_t cut = input.rfind("/_");
        if (cut != std::string_view::npos && cut > 0) id = names.Find(input.substr(0, cut));
      }
      if (id == StringPool::kNotFound || tensor_of_name[id] < 0) continue;
      int64_t& last = last_unref[static_cast<size_t>(tensor_of_name[id])];
      last = std::max(last, unref);
    }
  }
  // 3. Per allocator: (create, +bytes, name), (last unref, -bytes, name) sorted by
  // (time, bytes, name); running total; strictly greater updates the maximum.
  std::vector<uint32_t> allocator_ids;
  for (size_t id = 0; id < tensor_of_name.size(); ++id) {
    if (tensor_of_name[id] >= 0) allocator_ids.push_back(x.allocator[static_cast<size_t>(tensor_of_name[id])]);
  }
  Replay out;
  std::vector<Change> changes;
  std::vector<uint8_t> live_flags;
  for (uint32_t allocator : SortedAllocators(t.pool, allocator_ids, only)) {
    changes.clear();
    for (size_t id = 0; id < tensor_of_name.size(); ++id) {
      const int64_t row = tensor_of_name[id];
      if (row < 0 || x.allocator[static_cast<size_t>(row)] != allocator) continue;
      const size_t ev = static_cast<size_t>(x.event_id[static_cast<size_t>(row)]);
      const int64_t bytes = x.requested_bytes[static_cast<size_t>(row)];
      changes.push_back(Change{Micros(e.start_ns[ev]), bytes, static_cast<uint32_t>(id), 0});
      changes.push_back(Change{last_unref[static_cast<size_t>(row)], CheckedSub(0, bytes, "tensor bytes"),
                               static_cast<uint32_t>(id), 0});
    }
    std::sort(changes.begin(), changes.end(), [&](const Change& a, const Change& b) {
      if (a.time != b.time) return a.time < b.time;
      if (a.bytes != b.bytes) return a.bytes < b.bytes;
      return names.Get(a.name) < names.Get(b.name);
    });
    // The level is evaluated after each change, as timeline.py does.
    int64_t level = 0, peak_bytes = 0, peak_time = 0;
    size_t peak_at = SIZE_MAX;
    for (size_t i = 0; i < changes.size(); ++i) {
      level = CheckedAdd(level, changes[i].bytes, "memory replay level");
      if (level > peak_bytes) {
        peak_bytes = level;
        peak_time = changes[i].time;
        peak_at = i;
      }
      const bool last_at_time = i + 1 == changes.size() || changes[i + 1].time != changes[i].time;
      if (last_at_time) {
        const int64_t delta = out.timeline.time_ns.empty() || out.timeline.allocator.back() != allocator
                                  ? level
                                  : CheckedSub(level, out.timeline.bytes_in_use.back(), "memory replay delta");
        out.timeline.allocator.push_back(allocator);
        out.timeline.time_ns.push_back(changes[i].time * 1000);
        out.timeline.delta_bytes.push_back(delta);
        out.timeline.bytes_in_use.push_back(level);
      }
    }
    // The live set at the peak: negative changes discard the name, any other adds it.
    live_flags.assign(names.size(), 0);
    int64_t live = 0;
    if (peak_at != SIZE_MAX) {
      for (size_t i = 0; i <= peak_at; ++i) {
        uint8_t& flag = live_flags[changes[i].name];
        const uint8_t now = changes[i].bytes < 0 ? 0 : 1;
        live += static_cast<int64_t>(now) - flag;
        flag = now;
      }
      std::vector<uint32_t> held;
      for (uint32_t id = 0; id < names.size(); ++id) {
        if (live_flags[id]) held.push_back(id);
      }
      std::sort(held.begin(), held.end(),
                [&](uint32_t a, uint32_t b) { return names.Get(a) < names.Get(b); });
      for (uint32_t id : held) {
        out.live.allocator.push_back(allocator);
        out.live.row.push_back(tensor_of_name[id]);
        out.live.tensor_name.Append(names.Get(id));
      }
    }
    out.peaks.allocator.push_back(allocator);
    out.peaks.peak_bytes.push_back(peak_bytes);
    out.peaks.peak_time_ns.push_back(peak_time * 1000);
    out.peaks.live_tensors.push_back(live);
    out.peaks.n_changes.push_back(static_cast<int64_t>(changes.size()));
  }
  return out;
}

}  // namespace tracecore::query
