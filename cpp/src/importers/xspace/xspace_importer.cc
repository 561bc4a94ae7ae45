#include "importers/xspace/xspace_importer.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "codec/inflate_all.h"
#include "core/error.h"
#include "importers/xspace/xspace_decoder.h"
#include "sink/trace_sink.h"
#include "tables/dtypes.h"
#include "tables/truncate_rows.h"

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

// The stats the importer reads by name (decided once per plane for each stat metadata record):
// for the op and step of every event, and the columns of a memory record.
enum Role : uint8_t {
  kNoRole = 0,
  kHloCategory, kHloOp, kGroupId, kStepNum, kIterNum,
  kAllocatorName, kIndexOnHost, kDeviceOrdinal, kAllocationBytes, kBytesAllocated,
  kBytesReserved, kBytesAvailable, kFragmentation, kPeakBytesInUse, kRequestedBytes, kAddr,
  kTfOp, kShape, kDataType, kRegionType,
  kRoles
};
static_assert(kRoles <= 32, "roles are bits of a uint32_t");

Role RoleOf(std::string_view name) {
  static constexpr std::pair<std::string_view, Role> kNames[] = {
      {"hlo_category", kHloCategory}, {"hlo_op", kHloOp}, {"group_id", kGroupId},
      {"step_num", kStepNum}, {"iter_num", kIterNum}, {"allocator_name", kAllocatorName},
      {"index_on_host", kIndexOnHost}, {"device_ordinal", kDeviceOrdinal},
      {"allocation_bytes", kAllocationBytes}, {"bytes_allocated", kBytesAllocated},
      {"bytes_reserved", kBytesReserved}, {"bytes_available", kBytesAvailable},
      {"fragmentation", kFragmentation}, {"peak_bytes_in_use", kPeakBytesInUse},
      {"requested_bytes", kRequestedBytes}, {"addr", kAddr}, {"tf_op", kTfOp},
      {"shape", kShape}, {"data_type", kDataType}, {"region_type", kRegionType}};
  for (const auto& [n, role] : kNames) {
    if (n == name) return role;
  }
  return kNoRole;
}

// What an event metadata's name makes of its events' memory.
enum MemoryKind : uint8_t { kNotMemory = 0, kAllocation, kDeallocation };

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

// A shape stat's text "[d0,d1,...]" (blanks around the brackets, digits and commas allowed;
// "[]" is a scalar) as its dims, or false when it is not of that form or a dim overflows int64.
bool ParseShape(std::string_view text, std::vector<int64_t>* dims) {
  auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; };
  size_t i = 0, n = text.size();
  while (i < n && blank(text[i])) ++i;
  while (n > i && blank(text[n - 1])) --n;
  if (n - i < 2 || text[i] != '[' || text[n - 1] != ']') return false;
  ++i;
  --n;
  dims->clear();
  while (i < n && blank(text[i])) ++i;
  if (i == n) return true;  // "[ ]"
  for (;;) {
    while (i < n && blank(text[i])) ++i;
    const bool negative = i < n && text[i] == '-';
    if (negative) ++i;
    if (i == n || text[i] < '0' || text[i] > '9') return false;
    __int128 v = 0;
    while (i < n && text[i] >= '0' && text[i] <= '9') {
      v = v * 10 + (text[i++] - '0');
      if (v > (__int128{1} << 64)) return false;
    }
    if (negative) v = -v;
    if (v < INT64_MIN || v > INT64_MAX) return false;
    dims->push_back(static_cast<int64_t>(v));
    while (i < n && blank(text[i])) ++i;
    if (i == n) return true;
    if (text[i++] != ',') return false;
  }
}

// The int64 value of an integer stat: an int64, or a uint64 up to INT64_MAX.
bool IntValue(const Stat& s, int64_t* v) {
  if (s.kind == StatKind::kInt64 || (s.kind == StatKind::kUint64 && s.bits <= uint64_t{INT64_MAX})) {
    *v = s.int64_value();
    return true;
  }
  return false;
}

// What the importer builds. The open builds every table but the events' stats, which a second
// pass over the same input builds on demand (ReadXSpaceEventStats): they can take more memory
// than the events themselves, and few queries need them.
enum class Pass { kTables, kEventStats };

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
  Importer(TraceSink& sink, TraceTables& tables, const char* input, Pass pass)
      : sink_(sink), t_(tables), input_(input), pass_(pass) {
    for (int k = 0; k < 8; ++k) kind_ids_[k] = sink_.Intern(xspace::StatKindName(static_cast<StatKind>(k)));
  }

  size_t timed_events() const { return timed_events_; }

  void BeginPlane(const Plane& plane, const MetadataIndex& index) {
    plane_name_ = sink_.Intern(plane.name);
    plane_index_ = plane.index;
    // Names, labels, name-derived ops and roles once per metadata record, not per event.
    const auto& events = index.event_records();
    const auto& stats = index.stat_records();
    stat_roles_.resize(stats.size());
    stat_names_.resize(stats.size());
    for (size_t i = 0; i < stats.size(); ++i) {
      stat_roles_[i] = RoleOf(stats[i].name);
      stat_names_[i] = sink_.Intern(stats[i].name);
    }
    if (pass_ != Pass::kTables) return;
    event_names_.resize(events.size());
    event_labels_.resize(events.size());
    event_ops_.resize(events.size());
    event_memory_.resize(events.size());
    for (size_t i = 0; i < events.size(); ++i) {
      event_names_[i] = sink_.Intern(events[i].name);
      event_labels_[i] = sink_.Intern(events[i].display_name);
      std::string_view op;
      event_ops_[i] = TensorFlowOpType(events[i].name, &op) ? sink_.Intern(op) : StringPool::kInvalidUtf8;
      event_memory_[i] = events[i].name == "MemoryAllocation"     ? kAllocation
                         : events[i].name == "MemoryDeallocation" ? kDeallocation
                                                                   : kNotMemory;
    }
  }

  void OnPlaneStat(const Plane&, const Stat& s) {
    if (pass_ != Pass::kTables) return;
    PlaneStatTable& p = t_.plane_stats;
    p.plane_index.push_back(static_cast<int32_t>(plane_index_));
    p.plane.push_back(plane_name_);
    PushStatValue(p, s);
  }

  void BeginLine(const Plane&, const Line& line) {
    if (!restarting_) device_index_ = pass_ == Pass::kTables ? sink_.BeginDevice() : device_index_ + 1;
    restarting_ = false;
    first_event_ = sink_.event_count();
    first_timed_ = timed_events_;
    first_record_ = t_.alloc_records.size();
    first_aggregate_ = t_.aggregate_events.size();
    first_stat_ = t_.event_stats.size();
    thread_id_ = line.id >= 0 && line.id <= int64_t{UINT32_MAX} ? static_cast<uint32_t>(line.id) : 0;
  }

  void OnEvent(const Line&, const Event&) { found_ = 0; }

  void OnEventStat(const Event& e, const Stat& s) {
    if (pass_ == Pass::kEventStats) {
      if (e.aggregate) return;
      EventStatTable& st = t_.event_stats;
      st.event_id.push_back(static_cast<int64_t>(timed_events_));
      PushStatValue(st, s);
      st.inherited.push_back(s.inherited ? 1 : 0);
      return;
    }
    // A compressed value is checked here (gzip'ed UTF-8), not first when the stats are built:
    // an XSpace holding a bad one is refused by the open.
    if (s.kind == StatKind::kCompressed) Decompressed(s);
    if (s.metadata->ordinal == xspace::kUnknownOrdinal) return;
    const Role role = static_cast<Role>(stat_roles_[s.metadata->ordinal]);
    const uint32_t bit = uint32_t{1} << role;
    if (role == kNoRole || (found_ & bit) != 0) return;  // the first stat of a name counts
    found_ |= bit;
    role_stats_[role] = s;
  }

  void EndEvent(const Line& line, const Event& e) {
    if (pass_ == Pass::kEventStats) {
      if (!e.aggregate) ++timed_events_;
      return;
    }
    const uint32_t ordinal = e.metadata->ordinal;
    const bool known = ordinal != xspace::kUnknownOrdinal;
    const uint32_t op = Op(known ? event_ops_[ordinal] : StringPool::kInvalidUtf8);
    const uint32_t name = known ? event_names_[ordinal] : StringPool::kEmptyId;
    const uint32_t label = known ? event_labels_[ordinal] : StringPool::kEmptyId;
    if (e.aggregate) {  // no point in time: not on the timeline
      AggregateEventTable& a = t_.aggregate_events;
      a.device_index.push_back(device_index_);
      a.device.push_back(plane_name_);
      a.node_name.push_back(name);
      a.timeline_label.push_back(label);
      PushNullable(a.op, a.op_valid, op != StringPool::kInvalidUtf8, op);
      a.num_occurrences.push_back(e.num_occurrences);
      a.duration_ps.push_back(e.duration_ps);
      return;
    }
    int64_t start, end;
    if (!EventNanos(line.timestamp_ns, e.offset_ps, e.duration_ps, &start, &end)) {
      TraceFormatError error = TraceFormatError::AtByte(
          e.byte_offset, "event time out of range: line timestamp_ns + offset_ps (+ duration_ps) "
                         "overflows int64 nanoseconds");
      error.bad_value = error.out_of_range = true;
      throw error;
    }
    int64_t step = 0;
    const bool has_step = Step(&step);
    sink_.AddTimedEvent(device_index_, name, label, op, start, end, thread_id_,
                        has_step ? &step : nullptr);
    ++timed_events_;
    if (known && event_memory_[ordinal] != kNotMemory) {
      AddMemoryRecord(e, event_memory_[ordinal] == kAllocation, start);
    }
  }

  void EndLine(const Plane&, const Line& line) {
    if (pass_ == Pass::kTables) {
      sink_.EndXLine(device_index_, plane_name_, sink_.Intern(line.name), line.id, first_event_);
    }
    sink_.Consumed(input_ + line.byte_offset);
  }

  void RestartLine(const Plane&, const Line&) {
    sink_.DropEventsFrom(first_event_);
    timed_events_ = first_timed_;
    TruncateRows(t_.alloc_records, first_record_);
    TruncateRows(t_.aggregate_events, first_aggregate_);
    TruncateRows(t_.event_stats, first_stat_);
    restarting_ = true;
  }

 private:
  // A stat's string value (str, ref, compressed), or false.
  bool StringValue(const Stat& s, std::string_view* value) {
    switch (s.kind) {
      case StatKind::kStr:
      case StatKind::kRef: *value = s.bytes; return true;
      case StatKind::kCompressed: *value = Decompressed(s); return true;
      default: return false;
    }
  }

  // A compressed_str_value, gunzipped (into scratch: valid until the next call). Such values
  // are rare, and an inherited one comes back with every event of its metadata: the last one
  // is kept.
  std::string_view Decompressed(const Stat& s) {
    if (s.bytes.data() == scratch_source_.data() && s.bytes.size() == scratch_source_.size()) {
      return scratch_;
    }
    const uint64_t at = static_cast<uint64_t>(s.bytes.data() - input_);
    InflatedBuffer out;
    try {
      out = InflateAll(reinterpret_cast<const uint8_t*>(s.bytes.data()), s.bytes.size(), {},
                       {CompressionFormat::kGzip});
    } catch (const TraceFormatError& e) {
      // Located in the input: the value's first byte, and the offset inside it.
      TraceFormatError error = TraceFormatError::AtByte(
          at, std::string("compressed_str_value of stat '") + std::string(s.name()) +
                  "' is not gzip data: " + e.what());
      error.bad_value = true;
      throw error;
    }
    scratch_.assign(reinterpret_cast<const char*>(out.data()), out.size());
    scratch_source_ = {};
    if (!StringPool::IsValidUtf8(scratch_)) {
      TraceFormatError error = TraceFormatError::AtByte(
          at, std::string("compressed_str_value of stat '") + std::string(s.name()) +
                  "' is not UTF-8 once decompressed");
      error.bad_value = true;
      throw error;
    }
    scratch_source_ = s.bytes;
    return scratch_;
  }

  // The columns a stat fills in event_stats and plane_stats.
  template <class Table>
  void PushStatValue(Table& t, const Stat& s) {
    const uint32_t ordinal = s.metadata->ordinal;
    t.name.push_back(ordinal == xspace::kUnknownOrdinal ? StringPool::kEmptyId : stat_names_[ordinal]);
    t.metadata_id.push_back(s.metadata_id);
    t.value_kind.push_back(kind_ids_[static_cast<int>(s.kind)]);
    PushNullable(t.int64_value, t.int64_value_valid, s.kind == StatKind::kInt64, s.int64_value());
    PushNullable(t.uint64_value, t.uint64_value_valid,
                 s.kind == StatKind::kUint64 || s.kind == StatKind::kRef, s.uint64_value());
    PushNullable(t.double_value, t.double_value_valid, s.kind == StatKind::kDouble, s.double_value());
    std::string_view str;
    const bool has_str = StringValue(s, &str);
    PushNullable(t.str_value, t.str_value_valid, has_str, has_str ? InternValue(s, str) : 0u);
    t.bytes_value.Append(s.kind == StatKind::kBytes ? s.bytes : std::string_view());
    t.bytes_value_valid.push_back(s.kind == StatKind::kBytes ? 1 : 0);
  }

  // Interns a stat's string value; an inherited stat's value comes back with every event of
  // its metadata, at the same address: the last few are remembered by address.
  uint32_t InternValue(const Stat& s, std::string_view value) {
    const uintptr_t key = reinterpret_cast<uintptr_t>(s.bytes.data());
    RecentValue& r = recent_values_[(key >> 3) & 63];
    if (r.key == key && r.size == s.bytes.size() && r.kind == s.kind) return r.id;
    const uint32_t id = sink_.Intern(value);
    if (id == StringPool::kInvalidUtf8) {
      throw TraceFormatError::AtByte(static_cast<uint64_t>(s.bytes.data() - input_),
                                     "a stat's string value is not UTF-8");
    }
    r = {key, s.bytes.size(), s.kind, id};
    return id;
  }

  bool Found(Role r) const { return (found_ & (uint32_t{1} << r)) != 0; }

  // hlo_category > hlo_op (without its uniquifier) > the name's TensorFlow OpType.
  uint32_t Op(uint32_t name_op) {
    std::string_view v;
    if (Found(kHloCategory) && StringValue(role_stats_[kHloCategory], &v) && !v.empty()) {
      return sink_.InternRepeated(v);
    }
    if (Found(kHloOp) && StringValue(role_stats_[kHloOp], &v) && !v.empty()) {
      return sink_.InternRepeated(WithoutUniquifier(v));
    }
    return name_op;
  }

  // The first of group_id, step_num, iter_num the event has: its integer value (int64, or a
  // uint64 up to INT64_MAX), else none.
  bool Step(int64_t* step) const {
    for (const Role r : {kGroupId, kStepNum, kIterNum}) {
      if (Found(r)) return IntValue(role_stats_[r], step);
    }
    return false;
  }

  // The integer value of the event's first stat in `role`, or false.
  bool RoleInt(Role role, int64_t* v) const { return Found(role) && IntValue(role_stats_[role], v); }

  // A string role's value interned into the pool, or false.
  bool RoleString(Role role, uint32_t* id) {
    std::string_view v;
    if (!Found(role) || !StringValue(role_stats_[role], &v)) return false;
    *id = sink_.InternRepeated(v);
    return true;
  }

  // The alloc_records row of a MemoryAllocation / MemoryDeallocation event (just added).
  void AddMemoryRecord(const Event& e, bool allocation, int64_t time_ns) {
    AllocRecordTable& r = t_.alloc_records;
    int64_t v = 0;
    uint32_t id = StringPool::kEmptyId;
    // allocator_name, else the decimal index_on_host, else device_ordinal, else "".
    if (!RoleString(kAllocatorName, &id)) {
      id = StringPool::kEmptyId;
      if (RoleInt(kIndexOnHost, &v) || RoleInt(kDeviceOrdinal, &v)) id = sink_.InternRepeated(std::to_string(v));
    }
    r.event_id.push_back(static_cast<int64_t>(sink_.event_count() - 1));
    r.allocator.push_back(id);
    r.time_ns.push_back(time_ns);
    int64_t allocation_bytes = 0;
    const bool has_bytes = RoleInt(kAllocationBytes, &allocation_bytes);
    if (!allocation && allocation_bytes == INT64_MIN) {
      TraceFormatError error = TraceFormatError::AtByte(
          e.byte_offset, "a MemoryDeallocation of allocation_bytes -2^63: its negation (bytes) "
                         "overflows int64");
      error.bad_value = error.out_of_range = true;
      throw error;
    }
    r.bytes.push_back(allocation ? allocation_bytes : -allocation_bytes);
    r.is_allocation.push_back(allocation ? 1 : 0);
    r.is_allocation_valid.push_back(1);
    auto push_int = [&](Role role, Column<int64_t>& column, Column<uint8_t>& valid) {
      int64_t x = 0;
      const bool present = RoleInt(role, &x);
      PushNullable(column, valid, present, x);
    };
    push_int(kBytesAllocated, r.heap_allocated, r.heap_allocated_valid);
    push_int(kBytesReserved, r.stack_reserved, r.stack_reserved_valid);
    push_int(kBytesAvailable, r.free, r.free_valid);
    {
      const Stat& s = role_stats_[kFragmentation];
      const bool present = Found(kFragmentation) &&
                           (s.kind == StatKind::kDouble || s.kind == StatKind::kInt64 || s.kind == StatKind::kUint64);
      const double f = !present                       ? 0.0
                       : s.kind == StatKind::kDouble ? s.double_value()
                       : s.kind == StatKind::kInt64  ? static_cast<double>(s.int64_value())
                                                     : static_cast<double>(s.uint64_value());
      PushNullable(r.fragmentation, r.fragmentation_valid, present, f);
    }
    push_int(kPeakBytesInUse, r.peak_bytes_in_use, r.peak_bytes_in_use_valid);
    push_int(kRequestedBytes, r.requested_bytes, r.requested_bytes_valid);
    PushNullable(r.allocation_bytes, r.allocation_bytes_valid, has_bytes, allocation_bytes);
    {
      const Stat& s = role_stats_[kAddr];
      const bool present = Found(kAddr) && (s.kind == StatKind::kInt64 || s.kind == StatKind::kUint64);
      PushNullable(r.address, r.address_valid, present, present ? s.bits : uint64_t{0});
    }
    auto push_string = [&](Role role, Column<uint32_t>& column, Column<uint8_t>& valid) {
      uint32_t sid = 0;
      const bool present = RoleString(role, &sid);
      PushNullable(column, valid, present, sid);
    };
    push_string(kTfOp, r.tf_op, r.tf_op_valid);
    {
      std::string_view text;
      const bool present = Found(kShape) && StringValue(role_stats_[kShape], &text) && ParseShape(text, &dims_);
      if (present) r.shape.values.insert(r.shape.values.end(), dims_.begin(), dims_.end());
      r.shape.CloseRow();
      r.shape_valid.push_back(present ? 1 : 0);
    }
    {
      const bool present = RoleInt(kDataType, &v);
      uint32_t dtype = 0;
      if (present) {
        dtype = sink_.InternRepeated(v >= INT32_MIN && v <= INT32_MAX ? DataTypeName(static_cast<int32_t>(v))
                                                                      : "DT_" + std::to_string(v));
      }
      PushNullable(r.dtype, r.dtype_valid, present, dtype);
    }
    push_string(kRegionType, r.region, r.region_valid);
    push_int(kGroupId, r.step_id, r.step_id_valid);
  }

  TraceSink& sink_;
  TraceTables& t_;
  const char* input_;
  Pass pass_;
  uint32_t kind_ids_[8] = {};
  uint32_t plane_name_ = StringPool::kEmptyId;
  uint32_t plane_index_ = 0;
  // Per event metadata ordinal:
  std::vector<uint32_t> event_names_, event_labels_, event_ops_;
  std::vector<uint8_t> event_memory_;  // MemoryKind
  // Per stat metadata ordinal:
  std::vector<uint8_t> stat_roles_;
  std::vector<uint32_t> stat_names_;
  int32_t device_index_ = -1;
  size_t first_event_ = 0, first_timed_ = 0, first_record_ = 0, first_aggregate_ = 0, first_stat_ = 0;
  size_t timed_events_ = 0;
  uint32_t thread_id_ = 0;
  bool restarting_ = false;
  uint32_t found_ = 0;  // bit r: role_stats_[r] holds the event's first stat of that role
  Stat role_stats_[kRoles];
  std::string scratch_;
  std::string_view scratch_source_;
  std::vector<int64_t> dims_;
  struct RecentValue {
    uintptr_t key = 0;
    size_t size = 0;
    StatKind kind = StatKind::kNone;
    uint32_t id = 0;
  };
  RecentValue recent_values_[64];
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
  sink.Reserve(file.data(), file.size(), false, /*event_details=*/false);
  sink.SetReleaser(file.data(), file.ConsumedRelease());
  Importer importer(sink, *tables, file.data(), Pass::kTables);
  xspace::XSpaceDecoder<Importer> decoder(reinterpret_cast<const uint8_t*>(file.data()),
                                          file.size(), importer);
  decoder.Decode();
  sink.SetUnknownFieldCount(decoder.counts().unknown_fields);
  sink.Finish();
  return tables;
}

std::shared_ptr<TraceTables> ReadXSpaceEventStats(const MappedFile& file, size_t expected_events) {
  auto tables = std::make_shared<TraceTables>();
  tables->format = Encoding::kXSpace;
  tables->input_bytes = file.size();
  TraceSink sink(*tables, false);
  sink.SetKind(TraceKind::kXSpace);
  sink.SetReleaser(file.data(), file.ConsumedRelease());
  Importer importer(sink, *tables, file.data(), Pass::kEventStats);
  xspace::XSpaceDecoder<Importer> decoder(reinterpret_cast<const uint8_t*>(file.data()),
                                          file.size(), importer);
  try {
    decoder.Decode();
  } catch (const std::length_error&) {
    // Inherited stats repeat their metadata's values in every event: bytes values can pass
    // what one Arrow column holds.
    throw TraceFormatError::AtByte(
        0, "event_stats would hold more than 2 GiB of bytes_value (the stats of the events and "
           "those they inherit from their metadata): too large for one Arrow column");
  }
  if (importer.timed_events() != expected_events) {
    throw TraceFormatError::AtByte(
        0, "the XSpace holds " + std::to_string(importer.timed_events()) +
               " timed events now, not the " + std::to_string(expected_events) +
               " it held when it was opened: it changed since");
  }
  return tables;
}

}  // namespace tracecore
