// Decodes a serialised tensorflow.profiler.XSpace (TensorFlow 2 / JAX / PyTorch-XLA profiler
// output, `<host>.xplane.pb`) straight from its bytes into calls of a visitor (see
// xspace_visitor.h), with protobuf's proto3 semantics: the last value of a scalar wins, the last
// member of a oneof wins, the last entry of a map key wins (metadata_index.h), unknown fields
// (and known numbers with another wire type) are skipped and counted, strings must be UTF-8.
// Bad input throws TraceFormatError with its byte offset (WireReader). Nothing is allocated per
// event; memory beyond the visitor's is the current plane's metadata index.
//
// Order of work per plane: one pass over the plane's fields indexes its metadata maps (written
// after the lines, so unresolvable while streaming) and hops over the lines; then the lines are
// decoded, each in one pass (see DecodeLine for a timestamp written after the events). Per
// event, one pass reads the scalars and decodes the stats into a small buffer, then OnEvent and
// the stats are called.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "importers/xspace/field_reader.h"
#include "importers/xspace/metadata_index.h"
#include "importers/xspace/xspace_types.h"
#include "importers/xspace/xspace_visitor.h"

namespace tracecore::xspace {

struct DecodeCounts {
  uint64_t planes = 0;
  uint64_t lines = 0;
  uint64_t events = 0;      // timed events
  uint64_t aggregates = 0;  // events with num_occurrences
  uint64_t stats = 0;       // event stats delivered (own and inherited) and plane stats
  uint64_t unknown_fields = 0;
};

template <class Visitor>
class XSpaceDecoder {
 public:
  // `data` must stay readable for the visitor's use of the views it gets.
  XSpaceDecoder(const uint8_t* data, size_t size, Visitor& visitor)
      : data_(data), size_(size), f_(data, data + size), v_(visitor) {}

  void Decode() {
    uint32_t plane_index = 0;
    f_.Message(Whole(), [&](uint64_t key, const uint8_t*& p, const uint8_t* end) TC_XFIELD {
      switch (key) {
        case Key(1, kLengthDelimited): DecodePlane(f_.Sub(p, end), plane_index++); return true;
        case Key(2, kLengthDelimited): v_.OnError(f_.String(p, end)); return true;
        case Key(3, kLengthDelimited): v_.OnWarning(f_.String(p, end)); return true;
        case Key(4, kLengthDelimited): v_.OnHostname(f_.String(p, end)); return true;
        default: return false;
      }
    });
    counts_.unknown_fields = f_.unknown_fields();
  }

  const DecodeCounts& counts() const { return counts_; }

 private:
  Bytes Whole() const { return Bytes(reinterpret_cast<const char*>(data_), size_); }
  static Bytes Rest(const uint8_t* p, const uint8_t* end) {
    return Bytes(reinterpret_cast<const char*>(p), static_cast<size_t>(end - p));
  }

  void DecodePlane(Bytes m, uint32_t index) {
    index_.Clear();
    Plane plane;
    plane.index = index;
    plane.byte_offset = f_.offset(m.data());
    f_.Message(m, [&](uint64_t key, const uint8_t*& p, const uint8_t* end) TC_XFIELD {
      switch (key) {
        case Key(1, kVarint): plane.id = f_.Int64(p, end); return true;
        case Key(2, kLengthDelimited): plane.name = f_.String(p, end); return true;
        case Key(3, kLengthDelimited): f_.Hop(p, end); return true;
        case Key(4, kLengthDelimited): index_.AddEventEntry(f_, f_.Sub(p, end)); return true;
        case Key(5, kLengthDelimited): index_.AddStatEntry(f_, f_.Sub(p, end)); return true;
        case Key(6, kLengthDelimited): f_.Hop(p, end); return true;
        default: return false;
      }
    });
    index_.Finish(f_);
    ++counts_.planes;
    v_.BeginPlane(plane, static_cast<const MetadataIndex&>(index_));
    uint32_t line_index = 0;
    // Second pass: lines and plane stats; the rest was read (and counted) by the first.
    f_.template Message<false>(m, [&](uint64_t key, const uint8_t*& p, const uint8_t* end) TC_XFIELD {
      switch (key) {
        case Key(3, kLengthDelimited): DecodeLine(plane, f_.Sub(p, end), line_index++); return true;
        case Key(6, kLengthDelimited): {
          Stat s;
          index_.ReadStat(f_, f_.Sub(p, end), &s);
          ++counts_.stats;
          v_.OnPlaneStat(plane, s);
          return true;
        }
        default: return false;
      }
    });
    v_.EndPlane(plane);
  }

  // One pass: BeginLine at the first event (or at the end of an empty line) with the fields
  // read so far, the events, EndLine with all fields. Writers put timestamp_ns (3) before the
  // events (4); should a later timestamp_ns change it, the events were timed against the
  // wrong base: RestartLine, then the line again (its scalars first, then its events).
  void DecodeLine(const Plane& plane, Bytes m, uint32_t index) {
    Line line;
    line.index = index;
    line.byte_offset = f_.offset(m.data());
    ++counts_.lines;
    const DecodeCounts before = counts_;
    bool begun = false;
    f_.Message(m, [&](uint64_t key, const uint8_t*& p, const uint8_t* end) TC_XFIELD {
      switch (key) {
        case Key(1, kVarint): line.id = f_.Int64(p, end); return true;
        case Key(2, kLengthDelimited): line.name = f_.String(p, end); return true;
        case Key(3, kVarint): line.timestamp_ns = f_.Int64(p, end); return true;
        case Key(4, kLengthDelimited):
          if (!begun) {
            begun = true;
            base_ns_ = line.timestamp_ns;
            v_.BeginLine(plane, line);
          }
          DecodeEvent(line, f_.Sub(p, end));
          // The run of events that follows, without going through the field loop.
          while (p < end && *p == Key(4, kLengthDelimited)) DecodeEvent(line, f_.Sub(++p, end));
          return true;
        case Key(9, kVarint): line.duration_ps = f_.Int64(p, end); return true;
        case Key(10, kVarint): line.display_id = f_.Int64(p, end); return true;
        case Key(11, kLengthDelimited): line.display_name = f_.String(p, end); return true;
        default: return false;
      }
    });
    if (!begun) {
      v_.BeginLine(plane, line);
    } else if (line.timestamp_ns != base_ns_) {
      v_.RestartLine(plane, line);
      const uint64_t unknown = f_.unknown_fields();  // all counted by the first pass
      counts_.events = before.events;
      counts_.aggregates = before.aggregates;
      counts_.stats = before.stats;
      v_.BeginLine(plane, line);
      f_.template Message<false>(m, [&](uint64_t key, const uint8_t*& q,
                                        const uint8_t* qend) TC_XFIELD {
        switch (key) {
          case Key(4, kLengthDelimited): DecodeEvent(line, f_.Sub(q, qend)); return true;
          case Key(1, kVarint): case Key(3, kVarint): case Key(9, kVarint): case Key(10, kVarint):
            f_.Uint64(q, qend);
            return true;
          case Key(2, kLengthDelimited): case Key(11, kLengthDelimited): f_.Hop(q, qend); return true;
          default: return false;
        }
      });
      f_.set_unknown_fields(unknown);
    }
    v_.EndLine(plane, line);
  }

  // One pass over the event: its scalars, and its stats decoded into a buffer (the oneof and
  // scalars written after them can still change the event), then the calls. Stats past the
  // first kBufferedStats (never seen from a profiler) are hopped over and decoded after the
  // buffered ones, so the buffer stays small whatever the input.
  __attribute__((always_inline)) void DecodeEvent(const Line& line, Bytes m) {
    Event e;
    e.byte_offset = f_.offset(m.data());
    const uint8_t* resume = nullptr;  // after the last buffered stat, when more follow
    size_t n_stats = 0;
    stats_.clear();
    const auto on_key = [&](uint64_t key, const uint8_t*& p, const uint8_t* end) TC_XFIELD {
      switch (key) {
        case Key(1, kVarint): e.metadata_id = f_.Int64(p, end); return true;
        case Key(2, kVarint):  // oneof data: the member set last wins, the other is cleared
          e.offset_ps = f_.Int64(p, end);
          e.num_occurrences = 0;
          e.aggregate = false;
          return true;
        case Key(3, kVarint): e.duration_ps = f_.Int64(p, end); return true;
        case Key(4, kLengthDelimited):
          if (n_stats++ < kBufferedStats) {
            stats_.emplace_back();
            index_.ReadStat(f_, f_.Sub(p, end), &stats_.back());
            if (n_stats == kBufferedStats) resume = p;
          } else {
            f_.Hop(p, end);
          }
          return true;
        case Key(5, kVarint):
          e.num_occurrences = f_.Int64(p, end);
          e.offset_ps = 0;
          e.aggregate = true;
          return true;
        default: return false;
      }
    };
    // The fields in the order writers put them (one-byte keys 1, 2, 3, then the stats) are
    // read without the field loop's dispatch; from the first other key on, the loop goes on.
    const uint8_t* p = FieldReader::Begin(m);
    const uint8_t* end = FieldReader::End(m);
    if (p < end && *p == Key(1, kVarint)) on_key(Key(1, kVarint), ++p, end);
    if (p < end && *p == Key(2, kVarint)) on_key(Key(2, kVarint), ++p, end);
    if (p < end && *p == Key(3, kVarint)) on_key(Key(3, kVarint), ++p, end);
    while (p < end && *p == Key(4, kLengthDelimited)) on_key(Key(4, kLengthDelimited), ++p, end);
    if (p < end) f_.Message(Rest(p, end), on_key);
    e.metadata = &index_.event(e.metadata_id);
    if (e.aggregate) {
      ++counts_.aggregates;
    } else {
      ++counts_.events;
    }
    v_.OnEvent(line, e);
    counts_.stats += n_stats;
    const bool inherits = e.metadata->stat_count != 0;
    for (const Stat& st : stats_) {
      v_.OnEventStat(e, st);
      if (inherits) own_ids_.push_back(st.metadata_id);
    }
    if (n_stats > kBufferedStats) {
      // The rest, quietly at the event's level (its unknown fields were counted above).
      const uint8_t* end = FieldReader::End(m);
      f_.template Message<false>(Rest(resume, end), [&](uint64_t key, const uint8_t*& q,
                                                        const uint8_t* qend) TC_XFIELD {
        if (key != Key(4, kLengthDelimited)) return false;
        Stat st;
        index_.ReadStat(f_, f_.Sub(q, qend), &st);
        v_.OnEventStat(e, st);
        if (inherits) own_ids_.push_back(st.metadata_id);
        return true;
      });
    }
    if (inherits) Inherit(e);
    v_.EndEvent(line, e);
  }

  // The metadata's stats whose id the event does not hold (own_ids_: the event's).
  void Inherit(const Event& e) {
    // Looked up per inherited stat: sorted first when there are many, so that a hostile event
    // and metadata with thousands of stats each stay n log n.
    const bool sorted = own_ids_.size() > kLinearOwnIds;
    if (sorted) std::sort(own_ids_.begin(), own_ids_.end());
    const Stat* stats = index_.stats_of(*e.metadata);
    for (uint32_t i = 0; i < e.metadata->stat_count; ++i) {
      if (Holds(stats[i].metadata_id, sorted)) continue;  // the event's own stat wins
      ++counts_.stats;
      v_.OnEventStat(e, stats[i]);
    }
    own_ids_.clear();
  }

  static constexpr size_t kBufferedStats = 256;
  static constexpr size_t kLinearOwnIds = 16;
  bool Holds(int64_t metadata_id, bool sorted) const {
    if (sorted) return std::binary_search(own_ids_.begin(), own_ids_.end(), metadata_id);
    for (const int64_t id : own_ids_) {
      if (id == metadata_id) return true;
    }
    return false;
  }

  const uint8_t* data_;
  size_t size_;
  FieldReader f_;
  Visitor& v_;
  MetadataIndex index_;
  int64_t base_ns_ = 0;           // the timestamp_ns the current line's events are timed from
  std::vector<Stat> stats_;       // the current event's stats (up to kBufferedStats)
  std::vector<int64_t> own_ids_;  // the current event's stat ids, when its metadata has stats
  DecodeCounts counts_;
};

}  // namespace tracecore::xspace
