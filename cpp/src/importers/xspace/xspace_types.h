// What the XSpace decoder hands its visitor: planes, lines, events, stats and the metadata they
// name. Every string_view points into the decoded input (or at a static ""), valid while the
// input is; every pointer at a record of the plane's MetadataIndex, valid until EndPlane.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace tracecore::xspace {

// Dense per-plane number of a metadata record, for visitors that cache per metadata (interned
// names): records are numbered 0.. in wire order within their map; the record standing for an
// id absent from the map has kUnknownOrdinal.
constexpr uint32_t kUnknownOrdinal = 0xFFFFFFFFu;

// XStatMetadata: a stat's name, by the id that keys it in its plane's stat_metadata map.
struct StatMetadata {
  int64_t id = 0;  // the map key (the message's own id field is not used)
  std::string_view name;
  std::string_view description;
  uint32_t ordinal = kUnknownOrdinal;
};

// The member of XStat's `value` oneof that is set (the last on the wire).
enum class StatKind : uint8_t {
  kNone = 0,    // no member set
  kDouble,      // double_value (2)
  kUint64,      // uint64_value (3)
  kInt64,       // int64_value (4)
  kStr,         // str_value (5), valid UTF-8
  kBytes,       // bytes_value (6)
  kRef,         // ref_value (7): the id of a stat metadata whose name is the value
  kCompressed,  // compressed_str_value (8): gzip'ed bytes, passed as they are
};

// The kind's name: "none", "double", "uint64", "int64", "str", "bytes", "ref", "compressed".
inline const char* StatKindName(StatKind kind) {
  switch (kind) {
    case StatKind::kNone: return "none";
    case StatKind::kDouble: return "double";
    case StatKind::kUint64: return "uint64";
    case StatKind::kInt64: return "int64";
    case StatKind::kStr: return "str";
    case StatKind::kBytes: return "bytes";
    case StatKind::kRef: return "ref";
    case StatKind::kCompressed: return "compressed";
  }
  return "none";
}

struct Stat {
  int64_t metadata_id = 0;
  const StatMetadata* metadata = nullptr;  // never null (an absent id: the unknown record)
  StatKind kind = StatKind::kNone;
  bool inherited = false;  // from the event's metadata, not overridden by the event
  // kDouble: IEEE bits; kUint64, kRef: the value; kInt64: two's complement.
  uint64_t bits = 0;
  // kStr, kBytes, kCompressed: the value's bytes. kRef: the referenced metadata's name.
  std::string_view bytes;
  const StatMetadata* ref = nullptr;  // kRef: the referenced record (never null), else null

  double double_value() const {
    double d;
    std::memcpy(&d, &bits, sizeof d);
    return d;
  }
  int64_t int64_value() const { return static_cast<int64_t>(bits); }
  uint64_t uint64_value() const { return bits; }
  std::string_view name() const { return metadata->name; }
};

// XEventMetadata: an event's name, by the id that keys it in its plane's event_metadata map.
struct EventMetadata {
  int64_t id = 0;  // the map key
  std::string_view name;
  std::string_view display_name;
  std::string_view metadata;  // the opaque `metadata` bytes (3)
  uint32_t ordinal = kUnknownOrdinal;
  // Its stats (already decoded) and child ids: ranges of MetadataIndex's arrays.
  uint32_t first_stat = 0;
  uint32_t stat_count = 0;
  uint32_t first_child = 0;
  uint32_t child_count = 0;
};

struct Plane {
  uint32_t index = 0;   // position among the XSpace's planes
  int64_t id = 0;       // not unique: TF writes id 0 for several planes
  std::string_view name;
  uint64_t byte_offset = 0;  // of the plane message in the input
};

struct Line {
  uint32_t index = 0;  // position among its plane's lines
  int64_t id = 0;
  int64_t display_id = 0;
  std::string_view name;
  std::string_view display_name;
  int64_t timestamp_ns = 0;
  int64_t duration_ps = 0;
  uint64_t byte_offset = 0;
};

struct Event {
  int64_t metadata_id = 0;
  const EventMetadata* metadata = nullptr;  // never null (an absent id: the unknown record)
  // The `data` oneof: num_occurrences (5) when it is the member set last (an aggregate, no point
  // in time), else offset_ps (2; 0 when neither is set).
  bool aggregate = false;
  int64_t offset_ps = 0;
  int64_t num_occurrences = 0;
  int64_t duration_ps = 0;
  uint64_t byte_offset = 0;
};

}  // namespace tracecore::xspace
