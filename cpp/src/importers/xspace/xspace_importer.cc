#include "importers/xspace/xspace_importer.h"

#include <cstdint>
#include <string>
#include <vector>

#include "codec/inflate_all.h"
#include "core/error.h"
#include "importers/xspace/xspace_decoder.h"
#include "sink/trace_sink.h"

namespace tracecore {
namespace {

using xspace::Event;
using xspace::Line;
using xspace::MetadataIndex;
using xspace::Plane;
using xspace::Stat;
using xspace::StatKind;

// ---- detection -------------------------------------------------------------------------------

// A varint inside [p, end), or false when it does not end there (or is over 10 bytes).
bool ReadVarint(const uint8_t*& p, const uint8_t* end, uint64_t* value) {
  uint64_t v = 0;
  for (int shift = 0; shift < 70 && p < end; shift += 7) {
    const uint8_t b = *p++;
    v |= uint64_t{b & 0x7Fu} << shift;
    if (b < 0x80) {
      *value = v;
      return true;
    }
  }
  return false;
}

enum class Verdict { kXSpace, kNot, kUndecided };

// The fields of an XLine's start: an id (1) and a name (2) say nothing (a thread_names entry
// of a DeviceStepStats has them too); a timestamp (3), events (4) or the display fields are
// XLine's own.
Verdict LineVerdict(const uint8_t* p, const uint8_t* end) {
  while (p < end) {
    uint64_t key, v;
    if (!ReadVarint(p, end, &key)) return Verdict::kUndecided;
    switch (key) {
      case 0x08: case 0x18: case 0x48: case 0x50:  // id, timestamp_ns, duration_ps, display_id
        if (!ReadVarint(p, end, &v)) return Verdict::kUndecided;
        if (key != 0x08) return Verdict::kXSpace;
        break;
      case 0x12: case 0x22: case 0x5a:  // name, events, display_name
        if (key != 0x12) return Verdict::kXSpace;
        if (!ReadVarint(p, end, &v) || v > static_cast<uint64_t>(end - p)) return Verdict::kUndecided;
        p += v;
        break;
      default: return Verdict::kNot;
    }
  }
  return Verdict::kUndecided;
}

// The start of an XPlane. StepStats' first top-level message is a DeviceStepStats (device 1,
// node_stats 2, thread_names 3, all length-delimited) and RunMetadata's a StepStats (dev_stats
// 1): a varint id (1), metadata maps (4, 5) or stats (6) are XPlane's alone, and so is a line
// (3) with XLine fields.
Verdict PlaneVerdict(const uint8_t* p, const uint8_t* end) {
  while (p < end) {
    uint64_t key, v;
    if (!ReadVarint(p, end, &key)) return Verdict::kUndecided;
    if (key == 0x08) return ReadVarint(p, end, &v) ? Verdict::kXSpace : Verdict::kUndecided;
    if (key == 0x22 || key == 0x2a || key == 0x32) return Verdict::kXSpace;
    if (key != 0x12 && key != 0x1a) return Verdict::kNot;
    if (!ReadVarint(p, end, &v)) return Verdict::kUndecided;
    const uint8_t* field_end = v > static_cast<uint64_t>(end - p) ? end : p + v;
    if (key == 0x1a) {
      const Verdict line = LineVerdict(p, field_end);
      if (line != Verdict::kUndecided) return line;
    } else if (!StringPool::IsValidUtf8(std::string_view(reinterpret_cast<const char*>(p),
                                                          static_cast<size_t>(field_end - p)))) {
      return Verdict::kNot;  // a name is UTF-8 (a cut-off character at the probe's end aside)
    }
    if (field_end == end) return Verdict::kUndecided;
    p = field_end;
  }
  return Verdict::kUndecided;
}

// ---- reading ---------------------------------------------------------------------------------

// The stats the importer reads (by name, decided once per plane for each stat metadata record).
enum Role : uint8_t { kNoRole = 0, kHloCategory, kHloOp, kGroupId, kStepNum, kIterNum, kRoles };

Role RoleOf(std::string_view name) {
  if (name == "hlo_category") return kHloCategory;
  if (name == "hlo_op") return kHloOp;
  if (name == "group_id") return kGroupId;
  if (name == "step_num") return kStepNum;
  if (name == "iter_num") return kIterNum;
  return kNoRole;
}

bool IsIdentifier(std::string_view s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!letter && (i == 0 || c < '0' || c > '9')) return false;
  }
  return true;
}

// The OpType of a TensorFlow op name "scope/name:OpType": after the last ':', an identifier,
// the ':' neither first nor part of a "::" ("Iterator::Root::Prefetch" is no op).
bool TensorFlowOpType(std::string_view name, std::string_view* op) {
  const size_t colon = name.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || name[colon - 1] == ':') return false;
  const std::string_view type = name.substr(colon + 1);
  if (!IsIdentifier(type)) return false;
  *op = type;
  return true;
}

// An HLO instruction name without its ".<digits>" uniquifier ("dot.1" -> "dot").
std::string_view WithoutUniquifier(std::string_view hlo) {
  size_t i = hlo.size();
  while (i > 0 && hlo[i - 1] >= '0' && hlo[i - 1] <= '9') --i;
  if (i < hlo.size() && i > 0 && hlo[i - 1] == '.') return hlo.substr(0, i - 1);
  return hlo;
}

// floor(x / 1000) as int64, false when it does not fit.
bool FloorNanos(__int128 ps, int64_t* ns) {
  __int128 q = ps / 1000;
  if (ps % 1000 < 0) --q;
  if (q < INT64_MIN || q > INT64_MAX) return false;
  *ns = static_cast<int64_t>(q);
  return true;
}

// floor(a / 1000) in int64 (a multiply, where __int128's division is a call to __divmodti4:
// 3% of an import's time).
inline int64_t FloorDiv1000(int64_t a) { return a / 1000 - (a % 1000 < 0 ? 1 : 0); }

// An event's start and end, floor((timestamp_ns * 1000 + offset_ps (+ duration_ps)) / 1000):
// timestamp_ns + floor(offset_ps (+ duration_ps) / 1000) in int64 when no sum overflows (any
// real profile), else through __int128. False when a time does not fit int64.
bool EventNanos(int64_t timestamp_ns, int64_t offset_ps, int64_t duration_ps, int64_t* start,
                int64_t* end) {
  int64_t end_ps;
  if (!__builtin_add_overflow(offset_ps, duration_ps, &end_ps) &&
      !__builtin_add_overflow(timestamp_ns, FloorDiv1000(offset_ps), start) &&
      !__builtin_add_overflow(timestamp_ns, FloorDiv1000(end_ps), end)) {
    return true;
  }
  const __int128 start_ps = static_cast<__int128>(timestamp_ns) * 1000 + offset_ps;
  return FloorNanos(start_ps, start) && FloorNanos(start_ps + duration_ps, end);
}

class Importer : public xspace::NullVisitor {
 public:
  Importer(TraceSink& sink, const char* input) : sink_(sink), input_(input) {}

  void BeginPlane(const Plane& plane, const MetadataIndex& index) {
    plane_name_ = sink_.Intern(plane.name);
    // Names, labels and name-derived ops once per metadata record, not per event.
    const auto& events = index.event_records();
    event_names_.resize(events.size());
    event_labels_.resize(events.size());
    event_ops_.resize(events.size());
    for (size_t i = 0; i < events.size(); ++i) {
      event_names_[i] = sink_.Intern(events[i].name);
      event_labels_[i] = sink_.Intern(events[i].display_name);
      std::string_view op;
      event_ops_[i] = TensorFlowOpType(events[i].name, &op) ? sink_.Intern(op) : StringPool::kInvalidUtf8;
    }
    const auto& stats = index.stat_records();
    stat_roles_.resize(stats.size());
    for (size_t i = 0; i < stats.size(); ++i) stat_roles_[i] = RoleOf(stats[i].name);
  }

  void BeginLine(const Plane&, const Line& line) {
    if (!restarting_) device_index_ = sink_.BeginDevice();
    restarting_ = false;
    first_event_ = sink_.event_count();
    thread_id_ = line.id >= 0 && line.id <= int64_t{UINT32_MAX} ? static_cast<uint32_t>(line.id) : 0;
  }

  void OnEvent(const Line&, const Event& e) {
    for (bool& f : found_) f = false;
  }

  void OnEventStat(const Event& e, const Stat& s) {
    if (e.aggregate || s.metadata->ordinal == xspace::kUnknownOrdinal) return;
    const Role role = static_cast<Role>(stat_roles_[s.metadata->ordinal]);
    if (role == kNoRole || found_[role]) return;  // the first stat of a name counts
    found_[role] = true;
    role_stats_[role] = s;
  }

  void EndEvent(const Line& line, const Event& e) {
    if (e.aggregate) return;  // no point in time: not on the timeline
    int64_t start, end;
    if (!EventNanos(line.timestamp_ns, e.offset_ps, e.duration_ps, &start, &end)) {
      TraceFormatError error = TraceFormatError::AtByte(
          e.byte_offset, "event time out of range: line timestamp_ns + offset_ps (+ duration_ps) "
                         "overflows int64 nanoseconds");
      error.bad_value = error.out_of_range = true;
      throw error;
    }
    const uint32_t ordinal = e.metadata->ordinal;
    const bool known = ordinal != xspace::kUnknownOrdinal;
    int64_t step = 0;
    const bool has_step = Step(&step);
    sink_.AddTimedEvent(device_index_, known ? event_names_[ordinal] : StringPool::kEmptyId,
                        known ? event_labels_[ordinal] : StringPool::kEmptyId,
                        Op(known ? event_ops_[ordinal] : StringPool::kInvalidUtf8, e), start, end,
                        thread_id_, has_step ? &step : nullptr);
  }

  void EndLine(const Plane&, const Line& line) {
    sink_.EndXLine(device_index_, plane_name_, sink_.Intern(line.name), line.id, first_event_);
    sink_.Consumed(input_ + line.byte_offset);
  }

  void RestartLine(const Plane&, const Line&) {
    sink_.DropEventsFrom(first_event_);
    restarting_ = true;
  }

 private:
  // A stat's string value (str, ref, compressed), or false.
  bool StringValue(const Stat& s, std::string_view* value) {
    switch (s.kind) {
      case StatKind::kStr:
      case StatKind::kRef: *value = s.bytes; return true;
      case StatKind::kCompressed: {
        // Rare (profilers compress long values such as HLO protos): decompressed into scratch.
        const InflatedBuffer out =
            InflateAll(reinterpret_cast<const uint8_t*>(s.bytes.data()), s.bytes.size(), {},
                       {CompressionFormat::kGzip});
        scratch_.assign(reinterpret_cast<const char*>(out.data()), out.size());
        if (!StringPool::IsValidUtf8(scratch_)) {
          TraceFormatError error = TraceFormatError::AtByte(
              static_cast<uint64_t>(s.bytes.data() - input_), "compressed_str_value is not UTF-8");
          error.bad_value = true;
          throw error;
        }
        *value = scratch_;
        return true;
      }
      default: return false;
    }
  }

  // hlo_category > hlo_op (without its uniquifier) > the name's TensorFlow OpType.
  uint32_t Op(uint32_t name_op, const Event&) {
    std::string_view v;
    if (found_[kHloCategory] && StringValue(role_stats_[kHloCategory], &v) && !v.empty()) {
      return sink_.InternRepeated(v);
    }
    if (found_[kHloOp] && StringValue(role_stats_[kHloOp], &v) && !v.empty()) {
      return sink_.InternRepeated(WithoutUniquifier(v));
    }
    return name_op;
  }

  // The first of group_id, step_num, iter_num the event has: its integer value (int64, or a
  // uint64 up to INT64_MAX), else none.
  bool Step(int64_t* step) const {
    for (const Role r : {kGroupId, kStepNum, kIterNum}) {
      if (!found_[r]) continue;
      const Stat& s = role_stats_[r];
      if (s.kind == StatKind::kInt64 || (s.kind == StatKind::kUint64 && s.bits <= uint64_t{INT64_MAX})) {
        *step = s.int64_value();
        return true;
      }
      return false;
    }
    return false;
  }

  TraceSink& sink_;
  const char* input_;
  uint32_t plane_name_ = StringPool::kEmptyId;
  std::vector<uint32_t> event_names_, event_labels_, event_ops_;  // per event metadata ordinal
  std::vector<uint8_t> stat_roles_;                               // per stat metadata ordinal
  int32_t device_index_ = 0;
  size_t first_event_ = 0;
  uint32_t thread_id_ = 0;
  bool restarting_ = false;
  bool found_[kRoles] = {};
  Stat role_stats_[kRoles];
  std::string scratch_;
};

}  // namespace

bool LooksLikeXSpace(std::string_view input) {
  const auto* p = reinterpret_cast<const uint8_t*>(input.data());
  const uint8_t* end = p + (input.size() < 65536 ? input.size() : 65536);
  // Hostnames, errors and warnings (4, 2, 3: strings) may come before the first plane.
  while (p < end) {
    uint64_t key, len;
    if (!ReadVarint(p, end, &key) || (key != 0x0a && key != 0x12 && key != 0x1a && key != 0x22)) {
      return false;
    }
    if (!ReadVarint(p, end, &len)) return false;
    const uint8_t* field_end = len > static_cast<uint64_t>(end - p) ? end : p + len;
    if (key == 0x0a) return PlaneVerdict(p, field_end) == Verdict::kXSpace;
    if (!StringPool::IsValidUtf8(std::string_view(reinterpret_cast<const char*>(p),
                                                  static_cast<size_t>(field_end - p)))) {
      return false;
    }
    p = field_end;
  }
  return false;
}

std::shared_ptr<TraceTables> ReadXSpace(const MappedFile& file) {
  if (file.size() == 0) throw TraceFormatError::AtByte(0, "empty input (expected an XSpace)");
  auto tables = std::make_shared<TraceTables>();
  tables->format = Encoding::kXSpace;
  tables->input_bytes = file.size();
  TraceSink sink(*tables);
  sink.SetKind(TraceKind::kXSpace);
  sink.Reserve(file.data(), file.size(), false);
  sink.SetReleaser(file.data(), file.ConsumedRelease());
  Importer importer(sink, file.data());
  xspace::XSpaceDecoder<Importer> decoder(reinterpret_cast<const uint8_t*>(file.data()),
                                          file.size(), importer);
  decoder.Decode();
  sink.SetUnknownFieldCount(decoder.counts().unknown_fields);
  sink.Finish();
  return tables;
}

}  // namespace tracecore
