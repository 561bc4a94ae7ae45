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
// decoded. Per line (and per event), the scalar fields are read first, hopping over the events
// (stats), so that BeginLine (OnEvent) sees them all, then the events (stats) are decoded from
// the first one on.
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

  void DecodeLine(const Plane& plane, Bytes m, uint32_t index) {
    Line line;
    line.index = index;
    line.byte_offset = f_.offset(m.data());
    const uint8_t* first_event = nullptr;  // the first event's length prefix
    f_.Message(m, [&](uint64_t key, const uint8_t*& p, const uint8_t* end) TC_XFIELD {
      switch (key) {
        case Key(1, kVarint): line.id = f_.Int64(p, end); return true;
        case Key(2, kLengthDelimited): line.name = f_.String(p, end); return true;
        case Key(3, kVarint): line.timestamp_ns = f_.Int64(p, end); return true;
        case Key(4, kLengthDelimited):
          if (first_event == nullptr) first_event = p;
          f_.Hop(p, end);
          return true;
        case Key(9, kVarint): line.duration_ps = f_.Int64(p, end); return true;
        case Key(10, kVarint): line.display_id = f_.Int64(p, end); return true;
        case Key(11, kLengthDelimited): line.display_name = f_.String(p, end); return true;
        default: return false;
      }
    });
    ++counts_.lines;
    v_.BeginLine(plane, line);
    if (first_event != nullptr) {
      const uint8_t* p = first_event;
      const uint8_t* end = FieldReader::End(m);
      DecodeEvent(line, f_.Sub(p, end));
      f_.template Message<false>(Rest(p, end), [&](uint64_t key, const uint8_t*& q,
                                                   const uint8_t* qend) TC_XFIELD {
        switch (key) {
          case Key(4, kLengthDelimited): DecodeEvent(line, f_.Sub(q, qend)); return true;
          // Scalars after the events (XLine's 9..11) were read by the first pass.
          case Key(1, kVarint): case Key(3, kVarint): case Key(9, kVarint): case Key(10, kVarint):
            f_.Uint64(q, qend);
            return true;
          case Key(2, kLengthDelimited): case Key(11, kLengthDelimited): f_.Hop(q, qend); return true;
          default: return false;
        }
      });
    }
    v_.EndLine(plane, line);
  }

  __attribute__((always_inline)) void DecodeEvent(const Line& line, Bytes m) {
    Event e;
    e.byte_offset = f_.offset(m.data());
    const uint8_t* first_stat = nullptr;  // the first stat's length prefix
    f_.Message(m, [&](uint64_t key, const uint8_t*& p, const uint8_t* end) TC_XFIELD {
      switch (key) {
        case Key(1, kVarint): e.metadata_id = f_.Int64(p, end); return true;
        case Key(2, kVarint):  // oneof data: the member set last wins, the other is cleared
          e.offset_ps = f_.Int64(p, end);
          e.num_occurrences = 0;
          e.aggregate = false;
          return true;
        case Key(3, kVarint): e.duration_ps = f_.Int64(p, end); return true;
        case Key(4, kLengthDelimited):
          if (first_stat == nullptr) first_stat = p;
          f_.Hop(p, end);
          return true;
        case Key(5, kVarint):
          e.num_occurrences = f_.Int64(p, end);
          e.offset_ps = 0;
          e.aggregate = true;
          return true;
        default: return false;
      }
    });
    e.metadata = &index_.event(e.metadata_id);
    if (e.aggregate) {
      ++counts_.aggregates;
    } else {
      ++counts_.events;
    }
    v_.OnEvent(line, e);
    const bool inherits = e.metadata->stat_count != 0;
    if (inherits) own_ids_.clear();
    if (first_stat != nullptr) {
      const uint8_t* p = first_stat;
      const uint8_t* end = FieldReader::End(m);
      EventStat(e, f_.Sub(p, end), inherits);
      f_.template Message<false>(Rest(p, end), [&](uint64_t key, const uint8_t*& q,
                                                   const uint8_t* qend) TC_XFIELD {
        switch (key) {
          case Key(4, kLengthDelimited): EventStat(e, f_.Sub(q, qend), inherits); return true;
          case Key(1, kVarint): case Key(2, kVarint): case Key(3, kVarint): case Key(5, kVarint):
            f_.Uint64(q, qend);
            return true;
          default: return false;
        }
      });
    }
    if (inherits) {
      // Own ids looked up per inherited stat: sorted first when there are many, so that a
      // hostile event and metadata with thousands of stats each stay n log n.
      const bool sorted = own_ids_.size() > kLinearOwnIds;
      if (sorted) std::sort(own_ids_.begin(), own_ids_.end());
      const Stat* stats = index_.stats_of(*e.metadata);
      for (uint32_t i = 0; i < e.metadata->stat_count; ++i) {
        if (Holds(stats[i].metadata_id, sorted)) continue;  // the event's own stat wins
        ++counts_.stats;
        v_.OnEventStat(e, stats[i]);
      }
    }
    v_.EndEvent(line, e);
  }

  __attribute__((always_inline)) void EventStat(const Event& e, Bytes m, bool inherits) {
    Stat s;
    index_.ReadStat(f_, m, &s);
    if (inherits) own_ids_.push_back(s.metadata_id);
    ++counts_.stats;
    v_.OnEventStat(e, s);
  }

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
  std::vector<int64_t> own_ids_;  // the current event's stat ids, when its metadata has stats
  DecodeCounts counts_;
};

}  // namespace tracecore::xspace
