// Memory replays: the allocation records as the allocator saw them, and TensorFlow timeline.py's
// tensor-lifetime model reproduced exactly (see docs/queries.md).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "core/huge_pages.h"
#include "core/uninit_vector.h"
#include "core/parallel.h"
#include "query/queries.h"
#include "query/radix_sort.h"
#include "query/timeline_label.h"

namespace tracecore::query {
namespace {

struct Change {
  int64_t time;
  int64_t bytes;
  uint32_t name;  // tensors: tensor index (names compared through it); records: record row
  uint32_t pad;
};

// Allocators in the order of their names, restricted to `only` unless it is kNotFound.
template <class A>
std::vector<uint32_t> SortedAllocators(const StringPool& pool, const std::vector<uint32_t, A>& column,
                                       uint32_t only) {
  // Distinct ids in O(n) (a column may hold tens of millions of rows, the pool few strings).
  std::vector<uint8_t> seen(pool.size(), 0);
  std::vector<uint32_t> ids;
  for (uint32_t id : column) {
    if (id < seen.size() && !seen[id]) {
      seen[id] = 1;
      ids.push_back(id);
    }
  }
  if (only != StringPool::kNotFound) {
    ids.erase(std::remove_if(ids.begin(), ids.end(), [&](uint32_t a) { return a != only; }),
              ids.end());
  }
  std::sort(ids.begin(), ids.end(),
            [&](uint32_t a, uint32_t b) { return pool.Get(a) < pool.Get(b); });
  return ids;
}

// Where one allocator's timeline rows go (its segment of the output columns).
struct TimelineRows {
  uint32_t* allocator;
  int64_t* time_ns;
  int64_t* delta_bytes;
  int64_t* bytes_in_use;
};

// Replays one allocator's changes, given in replay order by `at(k)` -> {time, bytes} for
// k in [0, n): writes one timeline row per distinct time to `rows` and returns the index of the
// change after which the peak was first reached (or SIZE_MAX); *live_at_peak: allocations
// minus frees up to there.
template <class At>
size_t ReplayAllocator(uint32_t allocator, size_t n, const At& at, int64_t baseline,
                       TimelineRows rows, int64_t* peak_bytes, int64_t* peak_time,
                       int64_t* live_at_peak) {
  int64_t level = baseline;
  int64_t live = 0;
  *peak_bytes = 0;
  *peak_time = 0;
  *live_at_peak = 0;
  size_t peak_at = SIZE_MAX;
  size_t i = 0;
  while (i < n) {
    const int64_t now = at(i).time;
    int64_t delta = 0;
    size_t j = i;
    for (; j < n; ++j) {
      const Change c = at(j);
      if (c.time != now) break;
      delta = CheckedAdd(delta, c.bytes, "memory replay delta");
      live += (c.bytes > 0) - (c.bytes < 0);
    }
    level = CheckedAdd(level, delta, "memory replay level");
    *rows.allocator++ = allocator;
    *rows.time_ns++ = now;
    *rows.delta_bytes++ = delta;
    *rows.bytes_in_use++ = level;
    if (level > *peak_bytes) {
      *peak_bytes = level;
      *peak_time = now;
      *live_at_peak = live;
      peak_at = j - 1;
    }
    i = j;
  }
  return peak_at;
}

// The records of `allocators` (ids into the pool, in output order), bucketed per allocator and
// sorted by time within each bucket (stably: ties keep file order). Every real trace takes the
// packed path: 8-byte keys (time - bucket's min time) << shift | record row, radix-sorted on
// the time bytes only; the record is then read back through the row. Otherwise (a time range
// near 2^64) 24-byte changes are sorted.
class RecordOrder {
 public:
  // `keep`: one byte per record (non-zero = replayed), or null for every record. `key_buffer`
  // and `scratch_buffer` (both or neither): room for one 8-byte key per record each, which the
  // packed keys and their sort then use instead of buffers of their own (keys_in_buffer()).
  RecordOrder(const AllocRecordTable& r, const std::vector<uint32_t>& allocators, size_t pool_size,
              const uint8_t* keep, uint64_t* key_buffer = nullptr,
              uint64_t* scratch_buffer = nullptr)
      : r_(r), begin_(allocators.size() + 1, 0), lo_(allocators.size(), INT64_MAX) {
    constexpr uint32_t kSkip = UINT32_MAX;
    std::vector<uint32_t> slot(pool_size, kSkip);
    for (size_t k = 0; k < allocators.size(); ++k) slot[allocators[k]] = static_cast<uint32_t>(k);
    const size_t n_alloc = allocators.size();
    // The records are split into contiguous parts (one per core for large inputs); each part
    // counts its records per bucket and their time range, then writes its keys after those of
    // the parts before it, so every bucket keeps file order.
    const size_t n_parts = WorkerCount(SIZE_MAX, r.size() >= (size_t{1} << 20));
    const auto part_begin = [&](size_t p) { return r.size() * p / n_parts; };
    std::vector<size_t> counts(n_parts * n_alloc, 0);
    std::vector<int64_t> part_lo(n_parts * n_alloc, INT64_MAX), part_hi(n_parts * n_alloc, INT64_MIN);
    std::vector<uint8_t> part_whole(n_parts, 1);
    ForEachMaybeParallel(n_parts, n_parts > 1, [&](size_t p, size_t) {
      // Counted in locals, copied out at the end: parts sharing cache lines of the result
      // arrays would slow each other down on every record.
      std::vector<size_t> count(n_alloc, 0);
      std::vector<int64_t> lo(n_alloc, INT64_MAX), hi(n_alloc, INT64_MIN);
      // Record times come from alloc_micros: multiples of 1000 ns. Then the keys hold
      // (time - min) / 1000, ten bits fewer to sort.
      bool whole_micros = true;
      for (size_t i = part_begin(p); i < part_begin(p + 1); ++i) {
        const uint32_t s = slot[r.allocator[i]];
        if (s == kSkip || (keep != nullptr && keep[i] == 0)) continue;
        ++count[s];
        lo[s] = std::min(lo[s], r.time_ns[i]);
        hi[s] = std::max(hi[s], r.time_ns[i]);
        whole_micros &= r.time_ns[i] % 1000 == 0;
      }
      std::copy(count.begin(), count.end(), counts.begin() + p * n_alloc);
      std::copy(lo.begin(), lo.end(), part_lo.begin() + p * n_alloc);
      std::copy(hi.begin(), hi.end(), part_hi.begin() + p * n_alloc);
      part_whole[p] = whole_micros;
    });
    std::vector<int64_t> hi(n_alloc, INT64_MIN);
    std::vector<size_t> part_fill(n_parts * n_alloc);  // where part p writes bucket k
    bool whole_micros = true;
    for (size_t k = 0; k < n_alloc; ++k) {
      size_t at = begin_[k];
      for (size_t p = 0; p < n_parts; ++p) {
        part_fill[p * n_alloc + k] = at;
        at += counts[p * n_alloc + k];
        lo_[k] = std::min(lo_[k], part_lo[p * n_alloc + k]);
        hi[k] = std::max(hi[k], part_hi[p * n_alloc + k]);
      }
      begin_[k + 1] = at;
    }
    for (size_t p = 0; p < n_parts; ++p) whole_micros &= part_whole[p] != 0;
    scale_ = whole_micros ? 1000 : 1;
    int max_range_bits = 0;
    for (size_t k = 0; k < allocators.size(); ++k) {
      if (begin_[k + 1] == begin_[k]) continue;
      const uint64_t range = (static_cast<uint64_t>(hi[k]) - static_cast<uint64_t>(lo_[k])) / scale_;
      max_range_bits = std::max(max_range_bits, range == 0 ? 0 : 64 - __builtin_clzll(range));
    }
    // Rows take the low `shift_` bits: rounded up to whole bytes when the time still fits (the
    // sort then reads only time bytes), else exactly (a byte mixing row and time bits is sorted
    // on too: rows are in file order, so ties stay in file order either way).
    int row_bits = 1;
    while (row_bits < 64 && (uint64_t{1} << row_bits) < r.size()) ++row_bits;
    const int aligned = (row_bits + 7) / 8 * 8;
    shift_ = max_range_bits + aligned <= 64 ? aligned : row_bits;
    packed_ = max_range_bits + shift_ <= 64;
    row_bytes_ = shift_ / 8;
    std::vector<size_t> fill(begin_.begin(), begin_.end() - 1);
    rows_.assign(allocators.size(), 0);
    if (packed_) {
      mask_ = shift_ == 64 ? ~uint64_t{0} : (uint64_t{1} << shift_) - 1;
      if (key_buffer != nullptr) {
        keys_ = key_buffer;
        in_buffer_ = true;
      } else {
        ResizeHuge(own_keys_, begin_.back());
        keys_ = own_keys_.data();
      }
      const auto fill_keys = [&](size_t p, auto divisor) {  // constant divisor: no div
        // A local copy of the fill offsets, for the same reason as above.
        std::vector<size_t> fill_at(part_fill.begin() + p * n_alloc,
                                    part_fill.begin() + (p + 1) * n_alloc);
        for (size_t i = part_begin(p); i < part_begin(p + 1); ++i) {
          const uint32_t s = slot[r.allocator[i]];
          if (s == kSkip || (keep != nullptr && keep[i] == 0)) continue;
          const uint64_t rel =
              (static_cast<uint64_t>(r.time_ns[i]) - static_cast<uint64_t>(lo_[s])) / decltype(divisor)::value;
          keys_[fill_at[s]++] = (shift_ == 64 ? 0 : rel << shift_) | i;
        }
      };
      ForEachMaybeParallel(n_parts, n_parts > 1, [&](size_t p, size_t) {
        if (scale_ == 1000) {
          fill_keys(p, std::integral_constant<uint64_t, 1000>());
        } else {
          fill_keys(p, std::integral_constant<uint64_t, 1>());
        }
      });
      // Buckets are sorted in parallel (largest first) when there is enough work; each then
      // counts its distinct times (its timeline rows).
      const std::vector<size_t> todo = LargestFirst(allocators.size(), [&](size_t k) { return size(k); });
      ForEachMaybeParallel(todo.size(), parallel(), [&](size_t q, size_t) {
        const size_t k = todo[q];
        uint64_t* keys = keys_ + begin_[k];
        const size_t n = size(k);
        if (in_buffer_) {
          RadixSortWith(keys, n, scratch_buffer + begin_[k], [](uint64_t key) { return key; }, row_bytes_);
        } else {
          UninitVector<uint64_t> scratch;
          if (n > (size_t{1} << 22)) {
            scratch.reserve(n);
            AdviseHugePages(scratch.data(), n * sizeof(uint64_t));
          }
          RadixSort(keys, n, scratch, [](uint64_t key) { return key; }, row_bytes_);
        }
        const int shift = shift_;
        const auto time_of = [shift](uint64_t key) { return shift == 64 ? 0 : key >> shift; };
        size_t distinct = 0;
        for (size_t j = 0; j < n; ++j) distinct += j == 0 || time_of(keys[j]) != time_of(keys[j - 1]);
        rows_[k] = distinct;
      });
    } else {
      changes_.resize(begin_.back());
      for (size_t i = 0; i < r.size(); ++i) {
        const uint32_t s = slot[r.allocator[i]];
        if (s != kSkip && (keep == nullptr || keep[i] != 0)) changes_[fill[s]++] = Change{r.time_ns[i], r.bytes[i], static_cast<uint32_t>(i), 0};
      }
      std::vector<Change> scratch;
      for (size_t k = 0; k < allocators.size(); ++k) {
        Change* changes = changes_.data() + begin_[k];
        RadixSort(changes, size(k), scratch, [](const Change& c) { return OrderedKey(c.time); });
        for (size_t j = 0; j < size(k); ++j) rows_[k] += j == 0 || changes[j].time != changes[j - 1].time;
      }
    }
  }

  // Whether per-bucket work is worth threads.
  bool parallel() const { return total() >= (size_t{1} << 20); }
  // Timeline rows (distinct times) of bucket k.
  size_t rows(size_t k) const { return rows_[k]; }

  size_t total() const { return begin_.back(); }
  size_t size(size_t k) const { return begin_[k + 1] - begin_[k]; }
  // Where bucket k's changes start (in the key buffer too).
  size_t begin(size_t k) const { return begin_[k]; }
  // Whether the keys are in the caller's key buffer (bucket k at begin(k)).
  bool keys_in_buffer() const { return in_buffer_; }
  // The j-th change of bucket k in replay order; `name` is the record row.
  Change at(size_t k, size_t j) const {
    if (!packed_) return changes_[begin_[k] + j];
    const uint64_t key = keys_[begin_[k] + j];
    const size_t row = static_cast<size_t>(key & mask_);
    const uint64_t rel = shift_ == 64 ? 0 : key >> shift_;
    const auto time = static_cast<int64_t>(static_cast<uint64_t>(lo_[k]) + rel * scale_);
    return Change{time, r_.bytes[row], static_cast<uint32_t>(row), 0};
  }

 private:
  const AllocRecordTable& r_;
  std::vector<size_t> begin_;
  std::vector<int64_t> lo_;
  int row_bytes_ = 1;
  uint64_t scale_ = 1;
  int shift_ = 0;
  uint64_t mask_ = 0;
  bool packed_ = true;
  bool in_buffer_ = false;
  uint64_t* keys_ = nullptr;  // own_keys_, or the caller's key buffer
  UninitVector<uint64_t> own_keys_;
  std::vector<Change> changes_;
  std::vector<size_t> rows_;
};

}  // namespace

Replay ReplayRecords(const TraceTables& t, uint32_t only, bool snapshot_baseline, bool with_live,
                     const uint8_t* record_mask, const uint8_t* event_mask) {
  const AllocRecordTable& r = t.alloc_records;
  Replay out;
  std::vector<uint32_t> allocators;
  if (record_mask == nullptr) {
    allocators = SortedAllocators(t.pool, r.allocator, only);
  } else {
    std::vector<uint32_t> kept;
    for (size_t i = 0; i < r.size(); ++i) {
      if (record_mask[i] != 0) kept.push_back(r.allocator[i]);
    }
    allocators = SortedAllocators(t.pool, kept, only);
  }
  // Without the live records (whose listing reads the sorted changes again after the replay),
  // the sort keys live in the time_ns column and the sort's scratch in delta_bytes: each
  // allocator's timeline rows are written over its own keys, which the replay has read by
  // then (one row per distinct time, at or before the change it follows). Fresh memory is
  // the replay's largest cost; this way the output columns are all it takes.
  ReplayTimeline& timeline = out.timeline;
  if (!with_live) {
    ResizeHuge(timeline.time_ns, r.size());
    ResizeHuge(timeline.delta_bytes, r.size());
  }
  // (Signed and unsigned views of the same int64 words: allowed aliasing.)
  const RecordOrder order(r, allocators, t.pool.size(), record_mask,
                          with_live ? nullptr : reinterpret_cast<uint64_t*>(timeline.time_ns.data()),
                          with_live ? nullptr : reinterpret_cast<uint64_t*>(timeline.delta_bytes.data()));
  const size_t n_alloc = allocators.size();
  // Each allocator writes its own segment of the timeline, in parallel: at its rows' final
  // place, or over its keys (moved into place afterwards).
  std::vector<size_t> first_row(n_alloc + 1, 0);
  for (size_t k = 0; k < n_alloc; ++k) first_row[k + 1] = first_row[k] + order.rows(k);
  const bool over_keys = order.keys_in_buffer();
  const size_t made = over_keys ? order.total() : first_row.back();
  const auto segment = [&](size_t k) { return over_keys ? order.begin(k) : first_row[k]; };
  ResizeHuge(timeline.allocator, made);
  ResizeHuge(timeline.time_ns, made);
  ResizeHuge(timeline.delta_bytes, made);
  ResizeHuge(timeline.bytes_in_use, made);
  std::vector<int64_t> peak_bytes(n_alloc), peak_time(n_alloc), live(n_alloc);
  std::vector<size_t> peak_at(n_alloc);
  ForEachMaybeParallel(n_alloc, order.parallel(), [&](size_t k, size_t) {
    const uint32_t allocator = allocators[k];
    const size_t n_changes = order.size(k);
    const auto at = [&](size_t j) { return order.at(k, j); };
    int64_t baseline = 0;
    if (snapshot_baseline) {
      // Align the replay with the allocator's first allocator_bytes_in_use snapshot.
      const AllocationTable& a = t.allocations;
      size_t best = SIZE_MAX;
      for (size_t i = 0; i < a.size(); ++i) {
        if (a.allocator[i] != allocator) continue;
        if (event_mask != nullptr && event_mask[static_cast<size_t>(a.event_id[i])] == 0) continue;
        if (best == SIZE_MAX) {
          best = i;
          continue;
        }
        const int64_t si = t.events.start_ns[static_cast<size_t>(a.event_id[i])];
        const int64_t sb = t.events.start_ns[static_cast<size_t>(a.event_id[best])];
        if (si < sb || (si == sb && a.event_id[i] < a.event_id[best])) best = i;
      }
      if (best != SIZE_MAX) {
        const int64_t when = t.events.start_ns[static_cast<size_t>(a.event_id[best])];
        int64_t level_then = 0;
        for (size_t j = 0; j < n_changes; ++j) {
          const Change c = at(j);
          if (c.time > when) break;
          level_then = CheckedAdd(level_then, c.bytes, "memory replay level");
        }
        baseline = CheckedSub(a.allocator_bytes_in_use[best], level_then, "snapshot baseline");
      }
    }
    const size_t row = segment(k);
    const TimelineRows rows{timeline.allocator.data() + row, timeline.time_ns.data() + row,
                            timeline.delta_bytes.data() + row, timeline.bytes_in_use.data() + row};
    peak_at[k] = ReplayAllocator(allocator, n_changes, at, baseline, rows, &peak_bytes[k],
                                 &peak_time[k], &live[k]);
  });
  if (over_keys) {
    // Segments move down in allocator order: each one's place ends at or before the next
    // segment's start, so no row is overwritten before it has moved.
    const auto for_each_column = [&](auto&& fn) {
      fn(timeline.allocator);
      fn(timeline.time_ns);
      fn(timeline.delta_bytes);
      fn(timeline.bytes_in_use);
    };
    for (size_t k = 0; k < n_alloc; ++k) {
      const size_t from = segment(k), to = first_row[k], n = order.rows(k);
      if (from == to || n == 0) continue;
      for_each_column([&](auto& column) {
        std::memmove(column.data() + to, column.data() + from, n * sizeof(column[0]));
      });
    }
    for_each_column([&](auto& column) { column.resize(first_row.back()); });
  }
  for (size_t k = 0; k < n_alloc; ++k) {
    const uint32_t allocator = allocators[k];
    if (with_live && peak_at[k] != SIZE_MAX) {
      for (size_t j = 0; j <= peak_at[k]; ++j) {
        const Change c = order.at(k, j);
        if (c.bytes > 0) {
          out.live.allocator.push_back(allocator);
          out.live.row.push_back(c.name);
          out.live.tensor_name.Append("");
        }
      }
    }
    out.peaks.allocator.push_back(allocator);
    out.peaks.peak_bytes.push_back(peak_bytes[k]);
    out.peaks.peak_time_ns.push_back(peak_time[k]);
    out.peaks.live_tensors.push_back(live[k]);
    out.peaks.n_changes.push_back(static_cast<int64_t>(order.size(k)));
  }
  return out;
}

namespace {

// Truncating division, as TensorFlow's C++ computes micros from nanos.
inline int64_t Micros(int64_t ns) { return ns / 1000; }

}  // namespace

Replay ReplayTensors(const TraceTables& t, uint32_t only, const uint8_t* event_mask) {
  const EventTable& e = t.events;
  const TensorTable& x = t.tensors;
  const auto kept = [event_mask](size_t ev) { return event_mask == nullptr || event_mask[ev] != 0; };
  // 1. Every output is a tensor named node or node:i; a later one with the same name replaces it.
  StringPool names;  // tensor name -> dense id
  std::vector<int64_t> tensor_of_name;  // name id -> tensor row (latest)
  std::string name;
  std::vector<uint32_t> name_of_row(x.size());
  for (size_t row = 0; row < x.size(); ++row) {
    const size_t ev = static_cast<size_t>(x.event_id[row]);
    if (!kept(ev)) continue;
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
    if (!kept(ev)) continue;
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
