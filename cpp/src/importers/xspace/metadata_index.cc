#include "importers/xspace/metadata_index.h"

namespace tracecore::xspace {

void MetadataIndex::Clear() {
  events_.clear();
  event_unknown_.clear();
  stat_unknown_.clear();
  stats_meta_.clear();
  event_entries_.clear();
  stat_entries_.clear();
  pending_stats_.clear();
  stats_.clear();
  children_.clear();
}

namespace {

// Reads one map entry: its key (0 when absent) and each of its value fields, handed to `value`
// (several are merged, as protobuf does). Returns whether it is an entry: one holding any other
// field is, whole, one unknown field of the plane (counted so, its contents not). The unknown
// fields inside an entry's value go to `inner_unknown`, not to the count: they count only if
// the entry is the one its key keeps (protobuf drops a replaced entry with its contents).
template <class Value>
bool ReadEntry(FieldReader& f, Bytes entry, int64_t* key, uint64_t* inner_unknown, Value&& value) {
  const uint64_t unknown_before = f.unknown_fields();
  bool only_known = true;
  *key = 0;
  f.Message(entry, [&](uint64_t k, const uint8_t*& p, const uint8_t* end) TC_XFIELD {
    switch (k) {
      case Key(1, kVarint): *key = f.Int64(p, end); return true;
      case Key(2, kLengthDelimited): value(f.Sub(p, end)); return true;
      default: only_known = false; return false;
    }
  });
  *inner_unknown = only_known ? f.unknown_fields() - unknown_before : 0;
  f.set_unknown_fields(only_known ? unknown_before : unknown_before + 1);
  return only_known;
}

}  // namespace

void MetadataIndex::AddStatEntry(FieldReader& f, Bytes entry) {
  StatMetadata m;
  m.ordinal = static_cast<uint32_t>(stats_meta_.size());
  uint64_t inner_unknown;
  const bool kept = ReadEntry(f, entry, &m.id, &inner_unknown, [&](Bytes value) {
    f.Message(value, [&](uint64_t k, const uint8_t*& p, const uint8_t* end) TC_XFIELD {
      switch (k) {
        case Key(1, kVarint): f.Int64(p, end); return true;  // the map key is what counts
        case Key(2, kLengthDelimited): m.name = f.String(p, end); return true;
        case Key(3, kLengthDelimited): m.description = f.String(p, end); return true;
        default: return false;
      }
    });
  });
  stats_meta_.push_back(m);
  stat_unknown_.push_back(inner_unknown);
  if (kept) stat_entries_.emplace_back(m.id, m.ordinal);
}

void MetadataIndex::AddEventEntry(FieldReader& f, Bytes entry) {
  EventMetadata m;
  m.ordinal = static_cast<uint32_t>(events_.size());
  m.first_stat = static_cast<uint32_t>(pending_stats_.size());
  m.first_child = static_cast<uint32_t>(children_.size());
  const auto child = [&](uint64_t v) { children_.push_back(static_cast<int64_t>(v)); };
  uint64_t inner_unknown;
  const bool kept = ReadEntry(f, entry, &m.id, &inner_unknown, [&](Bytes value) {
    f.Message(value, [&](uint64_t k, const uint8_t*& p, const uint8_t* end) TC_XFIELD {
      switch (k) {
        case Key(1, kVarint): f.Int64(p, end); return true;
        case Key(2, kLengthDelimited): m.name = f.String(p, end); return true;
        case Key(3, kLengthDelimited): m.metadata = f.Sub(p, end); return true;
        case Key(4, kLengthDelimited): m.display_name = f.String(p, end); return true;
        case Key(5, kLengthDelimited): pending_stats_.push_back(f.Sub(p, end)); return true;
        case Key(6, kVarint): child(f.Uint64(p, end)); return true;
        case Key(6, kLengthDelimited): f.PackedVarints(p, end, child); return true;
        default: return false;
      }
    });
  });
  m.stat_count = static_cast<uint32_t>(pending_stats_.size()) - m.first_stat;
  m.child_count = static_cast<uint32_t>(children_.size()) - m.first_child;
  events_.push_back(m);
  event_unknown_.push_back(inner_unknown);
  if (kept) event_entries_.emplace_back(m.id, m.ordinal);
}

void MetadataIndex::Finish(FieldReader& f) {
  stat_ids_.Build(stat_entries_);
  uint64_t unknown = f.unknown_fields();
  for (size_t r = 0; r < stats_meta_.size(); ++r) {
    if (stat_ids_.Find(stats_meta_[r].id) == r) unknown += stat_unknown_[r];
  }
  // The metadata's own stats, resolved now that every stat name is known. Those of replaced
  // entries and of entries dropped as unknown are decoded too: protobuf parses them (and fails
  // on a bad one).
  stats_.resize(pending_stats_.size());
  for (size_t r = 0; r < events_.size(); ++r) {
    const EventMetadata& m = events_[r];
    f.set_unknown_fields(0);
    for (uint32_t i = m.first_stat; i < m.first_stat + m.stat_count; ++i) {
      ReadStat(f, pending_stats_[i], &stats_[i]);
      stats_[i].inherited = true;
    }
    event_unknown_[r] += f.unknown_fields();
  }
  event_ids_.Build(event_entries_);
  for (size_t r = 0; r < events_.size(); ++r) {
    if (event_ids_.Find(events_[r].id) == r) unknown += event_unknown_[r];
  }
  f.set_unknown_fields(unknown);
}

}  // namespace tracecore::xspace
