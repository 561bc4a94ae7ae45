// One XPlane's event_metadata and stat_metadata maps, decoded before its lines.
//
// XPlane writes its lines (field 3) before the maps (4, 5), so an event's name cannot be looked
// up while streaming: the decoder first hands every map entry of the plane here (one pass over
// the plane's fields, lines skipped), then Finish() resolves the maps with proto3 semantics and
// decodes the metadata's own stats, and the lines are decoded against the result.
//
// proto3 map semantics, as protobuf (upb) reads them: a repeated key keeps its last entry
// (whole, not merged); an entry without key has key 0, without value an empty value; a value
// field seen twice in one entry is merged (scalars: last wins, repeated fields: appended); an
// entry holding any unknown field (or a known one with another wire type) is not an entry but
// one unknown field of the plane (its value still has to parse). Unknown fields inside a value
// count only when its entry is the one its key keeps.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "importers/xspace/field_reader.h"
#include "importers/xspace/id_map.h"
#include "importers/xspace/xspace_types.h"

namespace tracecore::xspace {

class MetadataIndex {
 public:
  // Forgets the previous plane's metadata (keeps the capacity).
  void Clear();
  // One entry of the plane's event_metadata (field 4) / stat_metadata (field 5) map.
  void AddEventEntry(FieldReader& f, Bytes entry);
  void AddStatEntry(FieldReader& f, Bytes entry);
  // After the plane's last entry: resolves the maps and decodes the event metadata's stats.
  void Finish(FieldReader& f);

  // The record for an id; an id absent from the map gives the unknown record: name "", id 0,
  // ordinal kUnknownOrdinal, no stats (XProf reads such an id as an empty metadata too).
  const EventMetadata& event(int64_t id) const {
    const uint32_t i = event_ids_.Find(id);
    return i == IdMap::kMissing ? unknown_event_ : events_[i];
  }
  const StatMetadata& stat(int64_t id) const {
    const uint32_t i = stat_ids_.Find(id);
    return i == IdMap::kMissing ? unknown_stat_ : stats_meta_[i];
  }

  // Every record in wire order (ordinal = position), entries replaced by a later one with the
  // same key and entries dropped as unknown fields included.
  const std::vector<EventMetadata>& event_records() const { return events_; }
  const std::vector<StatMetadata>& stat_records() const { return stats_meta_; }
  // The stats and child ids of an event metadata record.
  const Stat* stats_of(const EventMetadata& m) const { return stats_.data() + m.first_stat; }
  const int64_t* children_of(const EventMetadata& m) const { return children_.data() + m.first_child; }

  // Decodes one XStat message `m` into `out`, its name and ref value resolved through the stat
  // map (which must be complete: after Finish, or for the metadata's own stats inside it).
  __attribute__((always_inline)) void ReadStat(FieldReader& f, Bytes m, Stat* out) const {
    Stat& s = *out;
    s = Stat();
    if (!ReadCanonicalStat(f, m, &s)) {
      s = Stat();
      f.Message(m, [&](uint64_t key, const uint8_t*& p, const uint8_t* end) TC_XFIELD {
        return ReadStatField(f, key, p, end, &s);
      });
    }
    s.metadata = &stat(s.metadata_id);
    if (s.kind == StatKind::kRef) {
      // ref_value is a uint64; the map's keys are int64: the same bits.
      s.ref = &stat(static_cast<int64_t>(s.bits));
      s.bytes = s.ref->name;
    }
  }

 private:
  // One field of an XStat; false for a field it does not know (skipped as unknown).
  __attribute__((always_inline)) static bool ReadStatField(FieldReader& f, uint64_t key,
                                                           const uint8_t*& p, const uint8_t* end,
                                                           Stat* s) {
    switch (key) {
      case Key(1, kVarint): s->metadata_id = f.Int64(p, end); return true;
      case Key(2, kFixed64): s->kind = StatKind::kDouble; s->bits = f.Fixed64(p, end); return true;
      case Key(3, kVarint): s->kind = StatKind::kUint64; s->bits = f.Uint64(p, end); return true;
      case Key(4, kVarint): s->kind = StatKind::kInt64; s->bits = f.Uint64(p, end); return true;
      case Key(5, kLengthDelimited): s->kind = StatKind::kStr; s->bytes = f.String(p, end); return true;
      case Key(6, kLengthDelimited): s->kind = StatKind::kBytes; s->bytes = f.Sub(p, end); return true;
      case Key(7, kVarint): s->kind = StatKind::kRef; s->bits = f.Uint64(p, end); return true;
      case Key(8, kLengthDelimited): s->kind = StatKind::kCompressed; s->bytes = f.Sub(p, end); return true;
      default: return false;
    }
  }
  // The layout every writer produces, read without the field loop: metadata_id (one byte),
  // then one value field that ends the message. False (nothing consumed) for anything else.
  __attribute__((always_inline)) static bool ReadCanonicalStat(FieldReader& f, Bytes m, Stat* s) {
    const uint8_t* p = FieldReader::Begin(m);
    const uint8_t* end = FieldReader::End(m);
    if (end - p < 3 || p[0] != Key(1, kVarint) || p[1] >= 0x80 || p[2] >= 0x80) return false;
    s->metadata_id = p[1];
    const uint64_t key = p[2];
    if (key == Key(1, kVarint) || (key >> 3) == 0) return false;
    p += 3;
    return ReadStatField(f, key, p, end, s) && p == end;
  }

 public:

 private:

  std::vector<EventMetadata> events_;
  // Per record: the unknown fields inside it, counted only if its key keeps it.
  std::vector<uint64_t> event_unknown_;
  std::vector<uint64_t> stat_unknown_;
  std::vector<StatMetadata> stats_meta_;
  std::vector<std::pair<int64_t, uint32_t>> event_entries_;  // (key, record) kept as entries
  std::vector<std::pair<int64_t, uint32_t>> stat_entries_;
  IdMap event_ids_;
  IdMap stat_ids_;
  std::vector<Bytes> pending_stats_;  // event metadata stats as met, decoded by Finish
  std::vector<Stat> stats_;           // decoded: stats_[first_stat, first_stat + stat_count)
  std::vector<int64_t> children_;
  const EventMetadata unknown_event_{};
  const StatMetadata unknown_stat_{};
};

}  // namespace tracecore::xspace
