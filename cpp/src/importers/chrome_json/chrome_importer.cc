#include "importers/chrome_json/chrome_importer.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/error.h"
#include "importers/chrome_json/chrome_detect.h"
#include "importers/chrome_json/chrome_trace_decoder.h"
#include "sink/trace_sink.h"

namespace tracecore {
namespace {

using chrome_json::Arg;
using chrome_json::ChromeEvent;
using chrome_json::IdField;
using json::Value;
using json::ValueKind;

// A pid, tid or flow id: absent, an integer, or a string (its pool id).
struct IdKey {
  uint8_t kind = 0;  // IdField::Kind
  int64_t value = 0;
  bool operator==(const IdKey& o) const { return kind == o.kind && value == o.value; }
  bool operator<(const IdKey& o) const { return kind != o.kind ? kind < o.kind : value < o.value; }
};

struct TrackKey {
  IdKey pid, tid;
  bool operator==(const TrackKey& o) const { return pid == o.pid && tid == o.tid; }
};

inline uint64_t Mix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return h;
}
// A per-process random salt for the hashes of ids a file chooses (pids, tids, flow ids): with
// a fixed hash a file could give every track or flow the same hash and make each lookup walk
// them all. The address of a local and the clock: no call that can fail.
uint64_t HashSalt() {
  static const uint64_t salt = [] {
    const int local = 0;
    const auto now = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    return Mix(reinterpret_cast<uintptr_t>(&local) ^ Mix(now + 0x9E3779B97F4A7C15ull));
  }();
  return salt;
}

struct IdKeyHash {
  uint64_t salt = HashSalt();
  size_t operator()(const IdKey& k) const {
    return Mix((static_cast<uint64_t>(k.value) ^ salt) * 0x9E3779B97F4A7C15ull + k.kind);
  }
};
struct TrackKeyHash {
  IdKeyHash id;
  size_t operator()(const TrackKey& k) const {
    return Mix(id(k.pid) * 31 + id(k.tid));
  }
};

// One point of a flow, kept until the parse ends.
struct FlowPoint {
  int64_t ts_ns;
  IdKey id;
  uint32_t cat;
  uint32_t name;
  int32_t device;
  char phase;  // 's', 't' or 'f'
  bool bind_enclosing;  // bp "e"
};

// The open point of each flow (cat, id) while the flow points are paired: open addressing with
// linear probing, deletion by shifting the run back (no tombstones), grown at half full. Holds
// only the flows open at once, usually a handful. Ids hash through the salted IdKeyHash, so ids
// a file chooses cannot make every key land in one slot (quadratic probing on a crafted file).
class OpenFlows {
 public:
  static constexpr size_t kNone = SIZE_MAX;

  OpenFlows() : slots_(64) {}

  // The slot holding (cat, id), or kNone; valid until the next Insert or Erase.
  size_t Find(uint32_t cat, const IdKey& id) const {
    for (size_t i = Home(cat, id);; i = (i + 1) & Mask()) {
      const Slot& s = slots_[i];
      if (!s.used) return kNone;
      if (s.cat == cat && s.id == id) return i;
    }
  }
  uint32_t& Point(size_t slot) { return slots_[slot].point; }
  void Insert(uint32_t cat, const IdKey& id, uint32_t point) {
    if (2 * (size_ + 1) > slots_.size()) Grow();
    size_t i = Home(cat, id);
    while (slots_[i].used) i = (i + 1) & Mask();
    slots_[i] = Slot{id, cat, point, true};
    ++size_;
  }
  void Erase(size_t hole) {
    slots_[hole].used = false;
    --size_;
    // Entries after the hole whose home is not between the hole and them move into it.
    for (size_t i = (hole + 1) & Mask(); slots_[i].used; i = (i + 1) & Mask()) {
      const size_t home = Home(slots_[i].cat, slots_[i].id);
      if (((i - home) & Mask()) >= ((i - hole) & Mask())) {
        slots_[hole] = slots_[i];
        slots_[i].used = false;
        hole = i;
      }
    }
  }

 private:
  struct Slot {
    IdKey id;
    uint32_t cat = 0;
    uint32_t point = 0;
    bool used = false;
  };
  size_t Mask() const { return slots_.size() - 1; }
  size_t Home(uint32_t cat, const IdKey& id) const {
    return Mix(hash_(id) ^ (uint64_t{cat} << 8)) & Mask();
  }
  void Grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    size_ = 0;
    for (const Slot& s : old) {
      if (s.used) Insert(s.cat, s.id, s.point);
    }
  }

  std::vector<Slot> slots_;
  IdKeyHash hash_;  // salted
  size_t size_ = 0;
};

// What the importer builds: the open builds every table but the events' args, which a second
// pass builds on demand (they can take more memory than the events themselves).
enum class Pass { kTables, kEventStats };

bool ContainsGpu(const std::string& s) {
  // "gpu" at the start or after a non-letter, followed by the end, a non-letter (":0", " 0",
  // "/"...).
  for (size_t at = s.find("gpu"); at != std::string::npos; at = s.find("gpu", at + 1)) {
    const bool start = at == 0 || !((s[at - 1] >= 'a' && s[at - 1] <= 'z') || (s[at - 1] >= '0' && s[at - 1] <= '9'));
    if (!start) continue;
    const size_t next = at + 3;
    if (next == s.size()) {
      if (at == 0) return true;
      continue;
    }
    const char c = s[next];
    if (at == 0 && !((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return true;
    if ((c == ':' || c == ' ') && next + 1 < s.size() && s[next + 1] >= '0' && s[next + 1] <= '9') return true;
  }
  return s.find("/device:gpu") != std::string::npos;
}

bool ContainsTpu(const std::string& s) {
  for (size_t at = s.find("tpu"); at != std::string::npos; at = s.find("tpu", at + 1)) {
    const bool start = at == 0 || !((s[at - 1] >= 'a' && s[at - 1] <= 'z') || (s[at - 1] >= '0' && s[at - 1] <= '9') || s[at - 1] == '_');
    const size_t next = at + 3;
    const bool end = next == s.size() || !((s[next] >= 'a' && s[next] <= 'z') || (s[next] >= '0' && s[next] <= '9') || s[next] == '_');
    if (start && end) return true;
  }
  return s.find("/device:tpu") != std::string::npos;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// "stream 7", "Stream #7", "stream7" at the start of a thread name.
bool IsStreamThread(const std::string& lower) {
  if (lower.compare(0, 6, "stream") != 0) return false;
  size_t i = 6;
  while (i < lower.size() && (lower[i] == ' ' || lower[i] == '\t' || lower[i] == '\n' ||
                              lower[i] == '\r' || lower[i] == '\f' || lower[i] == '\v')) {
    ++i;
  }
  if (i < lower.size() && lower[i] == '#') ++i;
  return i < lower.size() && lower[i] >= '0' && lower[i] <= '9';
}

DeviceKind ClassifyTrack(bool string_pid, std::string_view process, bool has_process,
                         std::string_view thread, bool has_thread) {
  const std::string p = has_process ? Lower(process) : std::string();
  if ((has_process && ContainsGpu(p)) || (has_thread && IsStreamThread(Lower(thread)))) {
    return DeviceKind::kStream;
  }
  if (has_process && ContainsTpu(p)) return DeviceKind::kStream;
  if (string_pid) return DeviceKind::kAnnotation;
  return DeviceKind::kHostThread;
}

// Digits only, up to 2^64 - 1.
bool ParseUint64(std::string_view text, uint64_t* out) {
  if (text.empty() || text.size() > 20) return false;
  uint64_t v = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
    if (__builtin_mul_overflow(v, uint64_t{10}, &v) || __builtin_add_overflow(v, uint64_t(c - '0'), &v)) return false;
  }
  *out = v;
  return true;
}

// Keeps the rows of a column whose keep[row] is set.
template <class T, class A>
void KeepRows(std::vector<T, A>& column, const std::vector<uint8_t>& keep) {
  if (column.empty()) return;
  size_t out = 0;
  for (size_t i = 0; i < column.size(); ++i) {
    if (keep[i]) column[out++] = column[i];
  }
  column.resize(out);
}
inline void KeepRows(StringColumn& column, const std::vector<uint8_t>& keep) {
  StringColumn kept;
  for (size_t i = 0; i < column.size(); ++i) {
    if (keep[i]) {
      kept.Append(std::string_view(column.data.data() + column.offsets[i],
                                   static_cast<size_t>(column.offsets[i + 1] - column.offsets[i])));
    }
  }
  column = std::move(kept);
}
template <class Column>
void KeepRows(Column&, const std::vector<uint8_t>&) {
  throw std::logic_error("KeepRows: a list column in a table rows are dropped from");
}

// Reorders a column's rows: row k becomes the old row order[k] (rows not named are dropped).
template <class T, class A>
void PermuteRows(std::vector<T, A>& column, const std::vector<uint32_t>& order) {
  if (column.empty()) return;  // an optional column left empty
  std::vector<T, A> out(order.size());
  for (size_t k = 0; k < order.size(); ++k) out[k] = column[order[k]];
  column.swap(out);
}
template <class Column>
void PermuteRows(Column&, const std::vector<uint32_t>&) {
  throw std::logic_error("PermuteRows: a string or list column in events");
}

template <class Table>
void KeepTableRows(Table& table, const std::vector<uint8_t>& keep) {
  table.ForEachColumn([&keep](const ColumnDef&, auto& column, Column<uint8_t>* valid) {
    KeepRows(column, keep);
    if (valid != nullptr) KeepRows(*valid, keep);
  });
}

class Importer : public chrome_json::ChromeEventVisitor {
 public:
  Importer(TraceSink& sink, TraceTables& tables, const char* input, Pass pass)
      : sink_(sink), t_(tables), input_(input), pass_(pass) {
    for (int k = 0; k < kValueKinds; ++k) kind_ids_[k] = sink_.Intern(kKindNames[k]);
  }

  void OnTopLevel(std::string_view key, const Value& value) override {
    if (key == "schemaVersion" || key == "deviceProperties" || key == "distributedInfo") kineto_ = true;
    if (pass_ != Pass::kTables) return;
    ChromeMetadataEntry entry;
    entry.key.assign(key.data(), key.size());
    entry.kind = static_cast<uint8_t>(value.kind);
    entry.text.assign(value.text.data(), value.text.size());
    t_.chrome.metadata.push_back(std::move(entry));
  }

  void OnEvent(const ChromeEvent& e) override {
    sink_.Consumed(input_ + e.offset);
    // A phase is one letter: a longer ph is of no phase tracecore reads.
    switch (e.ph.size() == 1 ? e.phase : 0) {
      case 'X': Complete(e, e.dur_ns); break;
      case 'B': Begin(e); break;
      case 'E': End(e); break;
      case 'i':
      case 'I': Instant(e); break;
      case 'C': Counter(e); break;
      case 's':
      case 't':
      case 'f': Flow(e); break;
      case 'M': Metadata(e); break;
      default:
        ++t_.chrome.other_events;
        first_unread_ = std::min(first_unread_, e.offset);
        break;
    }
  }

  // Drops the rows of B events never closed and groups the events by track (in the order of
  // the tracks' first use, file order within each: the queries take a device's events as one
  // run of rows), renumbering them; then the devices, the links, and the kind.
  void Finish() {
    const size_t n = static_cast<size_t>(next_event_);
    auto device_of = [this](size_t i) {
      return static_cast<size_t>(pass_ == Pass::kTables ? t_.events.device_index[i] : event_devices_[i]);
    };
    std::vector<uint8_t> keep(n, 1);
    size_t unclosed = 0;
    uint64_t first_unclosed = UINT64_MAX;
    for (auto& stack : open_) {
      for (const OpenBegin& b : stack) {
        keep[static_cast<size_t>(b.id)] = 0;
        ++unclosed;
        first_unclosed = std::min(first_unclosed, b.offset);
      }
    }
    t_.chrome.unmatched_begin = unclosed;
    std::vector<int64_t> next(keys_.size() + 1, 0);
    for (size_t i = 0; i < n; ++i) {
      if (keep[i]) ++next[device_of(i) + 1];
    }
    for (size_t d = 1; d < next.size(); ++d) next[d] += next[d - 1];
    const int64_t kept = next.back();
    std::vector<int64_t> remap(n, -1);
    bool identity = kept == next_event_;
    for (size_t i = 0; i < n; ++i) {
      if (!keep[i]) continue;
      remap[i] = next[device_of(i)]++;
      identity = identity && remap[i] == static_cast<int64_t>(i);
    }
    if (pass_ == Pass::kTables) {
      if (!identity) {
        std::vector<uint32_t> order(static_cast<size_t>(kept));
        for (size_t i = 0; i < n; ++i) {
          if (remap[i] >= 0) order[static_cast<size_t>(remap[i])] = static_cast<uint32_t>(i);
        }
        t_.events.ForEachColumn([&order](const ColumnDef&, auto& column, Column<uint8_t>* valid) {
          PermuteRows(column, order);
          if (valid != nullptr) PermuteRows(*valid, order);
        });
        for (int64_t& id : t_.alloc_records.event_id) {
          if (id >= 0) id = remap[static_cast<size_t>(id)];
        }
      }
      next_event_ = kept;
      if (kept == 0 && t_.counters.size() == 0 && t_.alloc_records.size() == 0 &&
          (t_.chrome.other_events != 0 || unclosed != 0 || t_.chrome.unmatched_end != 0)) {
        // Never an empty trace: what the file holds is of no kind tracecore reads.
        uint64_t at = std::min(first_unclosed, first_unread_);
        if (at == UINT64_MAX) at = 0;
        uint64_t line, column;
        json::LineColumn(input_, input_ + at, &line, &column);
        throw TraceFormatError::AtText(
            line, column,
            "no event tracecore reads (complete X, B/E pairs, instants, counters): " +
                std::to_string(t_.chrome.other_events) + " events of other phases (async, "
                "samples, objects, ...), " + std::to_string(unclosed) + " B never closed, " +
                std::to_string(t_.chrome.unmatched_end) + " E without a B; the first is here");
      }
      t_.kind = kineto_ ? TraceKind::kKineto : TraceKind::kChromeTrace;
      FinishDevices();
      BuildLinks();
      AssignProfilerSteps();
      return;
    }
    std::vector<uint8_t> keep_stats(t_.event_stats.size());
    for (size_t i = 0; i < keep_stats.size(); ++i) {
      keep_stats[i] = keep[static_cast<size_t>(t_.event_stats.event_id[i])];
    }
    if (unclosed != 0) KeepTableRows(t_.event_stats, keep_stats);
    for (int64_t& id : t_.event_stats.event_id) id = remap[static_cast<size_t>(id)];
    next_event_ = kept;
  }

  int64_t events() const { return next_event_; }

 private:
  static constexpr int kValueKinds = 7;
  static constexpr const char* kKindNames[kValueKinds] = {"object", "list", "str", "double",
                                                          "bool", "null", "int64"};
  enum KindIndex { kObjectKind, kListKind, kStrKind, kDoubleKind, kBoolKind, kNullKind, kIntKind };

  IdKey KeyOf(const IdField& f) {
    IdKey k;
    k.kind = static_cast<uint8_t>(f.kind);
    if (f.kind == IdField::Kind::kInt) {
      k.value = f.number;
    } else if (f.kind == IdField::Kind::kString) {
      k.value = sink_.InternRepeated(f.text);
    }
    return k;
  }

  // The device row of an event's (pid, tid) track, made at its first use.
  int32_t TrackOf(const ChromeEvent& e) {
    TrackKey key{KeyOf(e.pid), KeyOf(e.tid)};
    if (last_track_ >= 0 && key == last_key_) return last_track_;
    auto it = tracks_.find(key);
    int32_t index;
    if (it != tracks_.end()) {
      index = it->second;
    } else {
      index = static_cast<int32_t>(keys_.size());
      tracks_.emplace(key, index);
      keys_.push_back(key);
      open_.emplace_back();
      if (pass_ == Pass::kTables) {
        sink_.BeginDevice();
      }
    }
    last_key_ = key;
    last_track_ = index;
    return index;
  }

  uint32_t ThreadIdOf(const IdField& tid) const {
    return tid.kind == IdField::Kind::kInt && tid.number >= 0 && tid.number <= int64_t{UINT32_MAX}
               ? static_cast<uint32_t>(tid.number)
               : 0;
  }

  // timeline.py: args {"name": node name, "op": op type}, both strings.
  bool TimelineNames(const ChromeEvent& e, std::string_view* node, std::string_view* op) const {
    bool has_node = false, has_op = false;
    for (size_t i = 0; i < e.num_args; ++i) {
      const Arg& a = e.args[i];
      if (a.value.kind != ValueKind::kString) continue;
      if (a.key == "name") {
        *node = a.value.text;
        has_node = true;
      } else if (a.key == "op") {
        *op = a.value.text;
        has_op = true;
      }
    }
    return has_node && has_op;
  }

  TraceFormatError ErrorAt(const ChromeEvent& e, const std::string& what) const {
    uint64_t line, column;
    json::LineColumn(input_, input_ + e.offset, &line, &column);
    TraceFormatError error = TraceFormatError::AtText(line, column, what);
    error.bad_value = true;
    return error;
  }

  // Adds an event row (pass 1) or its args (pass 2); returns its provisional id.
  int64_t AddEvent(const ChromeEvent& e, int32_t device, int64_t end_ns) {
    const int64_t id = next_event_++;
    if (pass_ == Pass::kEventStats) {
      event_devices_.push_back(device);
      AddArgs(e, id, 0);
      return id;
    }
    std::string_view node = e.name, op = e.name;
    const bool timeline = e.num_args >= 2 && TimelineNames(e, &node, &op);
    const uint32_t name_id = sink_.InternNodeName(e.name);
    const uint32_t node_id = timeline ? sink_.InternNodeName(node) : name_id;
    const uint32_t op_id = timeline ? sink_.InternRepeated(op) : name_id;
    const uint32_t cat = e.has(ChromeEvent::kCat) ? sink_.InternRepeated(e.cat) : StringPool::kInvalidUtf8;
    sink_.AddChromeEvent(device, node_id, name_id, op_id, cat, e.ts_ns, end_ns, ThreadIdOf(e.tid));
    return id;
  }

  void Complete(const ChromeEvent& e, int64_t dur_ns) {
    if (dur_ns < 0) throw ErrorAt(e, "a negative dur (expected a duration >= 0)");
    int64_t end;
    if (__builtin_add_overflow(e.ts_ns, dur_ns, &end)) {
      throw ErrorAt(e, "event time out of range: ts + dur overflows int64 nanoseconds");
    }
    AddEvent(e, TrackOf(e), end);
  }

  void Begin(const ChromeEvent& e) {
    const int32_t device = TrackOf(e);
    const int64_t id = AddEvent(e, device, e.ts_ns);
    open_[static_cast<size_t>(device)].push_back(
        OpenBegin{id, e.offset, static_cast<uint32_t>(e.num_args)});
  }

  void End(const ChromeEvent& e) {
    const int32_t device = TrackOf(e);
    std::vector<OpenBegin>& stack = open_[static_cast<size_t>(device)];
    if (stack.empty()) {
      ++t_.chrome.unmatched_end;
      first_unread_ = std::min(first_unread_, e.offset);
      return;
    }
    const OpenBegin begin = stack.back();
    stack.pop_back();
    if (pass_ == Pass::kEventStats) {
      AddArgs(e, begin.id, begin.args);  // after the B's, numbered on from them
      return;
    }
    const auto row = static_cast<size_t>(begin.id);
    if (e.ts_ns < t_.events.start_ns[row]) {
      throw ErrorAt(e, "an E event earlier than the B it closes (expected ts >= the B's)");
    }
    t_.events.end_ns[row] = e.ts_ns;
  }

  void Instant(const ChromeEvent& e) {
    const int32_t device = TrackOf(e);
    const int64_t id = AddEvent(e, device, e.ts_ns);
    if (pass_ == Pass::kTables && e.name == "[memory]") MemoryRecord(e, device, id);
  }

  // An integer arg of a [memory] instant, or an error naming it.
  bool IntArg(const ChromeEvent& e, std::string_view key, int64_t* v) const {
    for (size_t i = 0; i < e.num_args; ++i) {
      const Arg& a = e.args[i];
      if (a.key != key) continue;
      if (a.value.kind == ValueKind::kNull) return false;
      if (a.value.kind != ValueKind::kNumber || !a.value.is_int) {
        throw ErrorAt(e, "a [memory] event's \"" + std::string(key) +
                             "\" is not an integer within int64 (expected a byte count or id)");
      }
      *v = a.value.int_value;
      return true;
    }
    return false;
  }

  // A [memory] event's Addr: an integer within int64 (as its two's complement) or up to
  // 2^64 - 1.
  bool AddressArg(const ChromeEvent& e, uint64_t* address) const {
    for (size_t i = 0; i < e.num_args; ++i) {
      const Arg& a = e.args[i];
      if (a.key != "Addr") continue;
      if (a.value.kind == ValueKind::kNull) return false;
      if (a.value.kind == ValueKind::kNumber && a.value.is_int) {
        *address = static_cast<uint64_t>(a.value.int_value);
        return true;
      }
      if (a.value.kind == ValueKind::kNumber && ParseUint64(a.value.text, address)) return true;
      throw ErrorAt(e, "a [memory] event's \"Addr\" is not an integer from -2^63 to 2^64-1 "
                       "(expected an address)");
    }
    return false;
  }

  void MemoryRecord(const ChromeEvent& e, int32_t, int64_t event_id) {
    int64_t bytes = 0, type = 0, device_id = -1, total = 0, reserved = 0;
    IntArg(e, "Bytes", &bytes);
    IntArg(e, "Device Type", &type);
    IntArg(e, "Device Id", &device_id);
    uint64_t address = 0;
    const bool has_addr = AddressArg(e, &address);
    const bool has_total = IntArg(e, "Total Allocated", &total);
    const bool has_reserved = IntArg(e, "Total Reserved", &reserved);
    AddRecord(event_id, AllocatorId(type, device_id), e.ts_ns, bytes, has_total, total,
              has_addr, address, has_reserved, reserved);
  }

  // "cpu", "cuda", "type<T>", with ":<device id>" when the id is not negative; the last one
  // is remembered (a trace's memory events name a few allocators, over and over).
  uint32_t AllocatorId(int64_t type, int64_t device_id) {
    if (last_allocator_ != StringPool::kInvalidUtf8 && type == last_type_ && device_id == last_device_) {
      return last_allocator_;
    }
    char buf[64];
    int n = type == 0   ? std::snprintf(buf, sizeof buf, "cpu")
            : type == 1 ? std::snprintf(buf, sizeof buf, "cuda")
                        : std::snprintf(buf, sizeof buf, "type%lld", static_cast<long long>(type));
    if (device_id >= 0) {
      n += std::snprintf(buf + n, sizeof buf - static_cast<size_t>(n), ":%lld",
                         static_cast<long long>(device_id));
    }
    last_type_ = type;
    last_device_ = device_id;
    last_allocator_ = sink_.InternRepeated(std::string_view(buf, static_cast<size_t>(n)));
    return last_allocator_;
  }

  void AddRecord(int64_t event_id, uint32_t allocator, int64_t time_ns, int64_t bytes,
                 bool has_total, int64_t total, bool has_addr, uint64_t addr, bool has_reserved,
                 int64_t reserved) {
    AllocRecordTable& r = t_.alloc_records;
    r.event_id.push_back(event_id);
    r.allocator.push_back(allocator);
    r.time_ns.push_back(time_ns);
    r.bytes.push_back(bytes);
    PushNullable(r.is_allocation, r.is_allocation_valid, true, static_cast<uint8_t>(bytes > 0 ? 1 : 0));
    PushNullable(r.heap_allocated, r.heap_allocated_valid, has_total, total);
    PushNullable(r.address, r.address_valid, has_addr, addr);
    PushNullable(r.reserved, r.reserved_valid, has_reserved, reserved);
  }

  void Counter(const ChromeEvent& e) {
    const int32_t device = TrackOf(e);
    if (pass_ != Pass::kTables) return;
    const uint32_t name = sink_.InternRepeated(e.name);
    const bool memory = e.has(ChromeEvent::kCat) && e.cat == "Memory";
    CounterTable& c = t_.counters;
    for (size_t i = 0; i < e.num_args; ++i) {
      const Arg& a = e.args[i];
      const uint32_t series = sink_.InternRepeated(a.key);
      c.device_index.push_back(device);
      c.device.push_back(StringPool::kEmptyId);  // the process name, filled at the end
      c.name.push_back(name);
      c.series.push_back(series);
      c.time_ns.push_back(e.ts_ns);
      const bool number = a.value.kind == ValueKind::kNumber;
      PushNullable(c.value, c.value_valid, number, number ? a.value.AsDouble() : 0.0);
      const bool integer = number && a.value.is_int;
      PushNullable(c.int_value, c.int_value_valid, integer, integer ? a.value.int_value : 0);
      if (memory && integer) {
        // timeline.py: the allocator's bytes in use; the record is the change.
        if (series >= memory_totals_.size()) memory_totals_.resize(series + 1, 0);
        int64_t delta;
        if (__builtin_sub_overflow(a.value.int_value, memory_totals_[series], &delta)) {
          throw ErrorAt(e, "a Memory counter's change overflows int64");
        }
        memory_totals_[series] = a.value.int_value;
        AddRecord(-1, series, e.ts_ns, delta, true, a.value.int_value, false, 0, false, 0);
      }
    }
  }

  void Flow(const ChromeEvent& e) {
    const int32_t device = TrackOf(e);
    if (pass_ != Pass::kTables) return;
    FlowPoint p;
    p.ts_ns = e.ts_ns;
    p.id = KeyOf(e.id);
    if (e.has(ChromeEvent::kId2Local)) p.id.kind |= kLocalId;  // id2 local and global differ
    p.cat = e.has(ChromeEvent::kCat) ? sink_.InternRepeated(e.cat) : StringPool::kEmptyId;
    p.name = e.has(ChromeEvent::kName) ? sink_.InternRepeated(e.name) : StringPool::kEmptyId;
    p.device = device;
    p.phase = e.phase;
    p.bind_enclosing = e.bp == "e";
    flows_.push_back(p);
  }

  void Metadata(const ChromeEvent& e) {
    if (pass_ != Pass::kTables) return;
    const bool process = e.name == "process_name";
    if (!process && e.name != "thread_name") return;
    for (size_t i = 0; i < e.num_args; ++i) {
      const Arg& a = e.args[i];
      if (a.key != "name" || a.value.kind != ValueKind::kString) continue;
      const uint32_t name = sink_.Intern(a.value.text);
      if (process) {
        process_names_[KeyOf(e.pid)] = name;
      } else {
        thread_names_[TrackKey{KeyOf(e.pid), KeyOf(e.tid)}] = name;
      }
    }
  }

  // event_stats rows of an event's args.
  void AddArgs(const ChromeEvent& e, int64_t id, uint32_t first_position) {
    EventStatTable& st = t_.event_stats;
    for (size_t i = 0; i < e.num_args; ++i) {
      const Arg& a = e.args[i];
      const Value& v = a.value;
      st.event_id.push_back(id);
      st.name.push_back(sink_.InternRepeated(a.key));
      st.metadata_id.push_back(static_cast<int64_t>(first_position + i));
      int kind = kNullKind;
      bool has_int = false, has_double = false, has_str = false;
      int64_t int_value = 0;
      double double_value = 0;
      uint32_t str = 0;
      switch (v.kind) {
        case ValueKind::kObject:
        case ValueKind::kArray:
          kind = v.kind == ValueKind::kObject ? kObjectKind : kListKind;
          has_str = true;
          str = sink_.Intern(v.text);
          break;
        case ValueKind::kString:
          kind = kStrKind;
          has_str = true;
          str = sink_.InternRepeated(v.text);
          break;
        case ValueKind::kNumber:
          if (v.is_int) {
            kind = kIntKind;
            has_int = true;
            int_value = v.int_value;
          } else {
            kind = kDoubleKind;
            has_double = true;
            double_value = v.AsDouble();
          }
          break;
        case ValueKind::kTrue:
        case ValueKind::kFalse:
          kind = kBoolKind;
          has_int = true;
          int_value = v.kind == ValueKind::kTrue ? 1 : 0;
          break;
        case ValueKind::kNull: break;
      }
      st.value_kind.push_back(kind_ids_[kind]);
      PushNullable(st.int64_value, st.int64_value_valid, has_int, int_value);
      PushNullable(st.uint64_value, st.uint64_value_valid, false, uint64_t{0});
      PushNullable(st.double_value, st.double_value_valid, has_double, double_value);
      PushNullable(st.str_value, st.str_value_valid, has_str, str);
      st.bytes_value.Append(std::string_view());
      st.bytes_value_valid.push_back(0);
      st.inherited.push_back(0);
    }
  }

  // The id as text: an integer's decimal digits (into `buf`), a string's pool entry.
  static constexpr uint8_t kLocalId = 0x10;

  std::string_view IdText(IdKey k, char (&buf)[24]) const {
    k.kind &= static_cast<uint8_t>(~kLocalId);
    if (k.kind == static_cast<uint8_t>(IdField::Kind::kInt)) {
      const char* end = std::to_chars(buf, buf + sizeof buf, k.value).ptr;
      return std::string_view(buf, static_cast<size_t>(end - buf));
    }
    if (k.kind == static_cast<uint8_t>(IdField::Kind::kString)) {
      return t_.pool.Get(static_cast<uint32_t>(k.value));
    }
    return std::string_view();
  }

  void FinishDevices() {
    DeviceTable& d = t_.devices;
    std::vector<int64_t> counts(keys_.size(), 0);
    for (const int32_t dev : t_.events.device_index) ++counts[static_cast<size_t>(dev)];
    for (size_t i = 0; i < keys_.size(); ++i) {
      const TrackKey& k = keys_[i];
      const auto p = process_names_.find(k.pid);
      const auto th = thread_names_.find(k);
      const bool has_process = p != process_names_.end();
      const bool has_thread = th != thread_names_.end();
      char buf[24];
      const uint32_t device = has_process ? p->second : sink_.Intern(IdText(k.pid, buf));
      const uint32_t line = has_thread ? th->second : sink_.Intern(IdText(k.tid, buf));
      d.device[i] = device;
      d.line[i] = line;
      d.line_valid[i] = 1;
      const bool int_tid = k.tid.kind == static_cast<uint8_t>(IdField::Kind::kInt);
      d.line_id[i] = int_tid ? k.tid.value : 0;
      d.line_id_valid[i] = int_tid ? 1 : 0;
      d.n_events[i] = counts[i];
      d.kind_code[i] = static_cast<uint8_t>(ClassifyTrack(
          k.pid.kind == static_cast<uint8_t>(IdField::Kind::kString),
          has_process ? t_.pool.Get(device) : std::string_view(), has_process,
          has_thread ? t_.pool.Get(line) : std::string_view(), has_thread));
    }
    EventTable& e = t_.events;
    for (size_t i = 0; i < e.size(); ++i) e.device[i] = d.device[static_cast<size_t>(e.device_index[i])];
    CounterTable& c = t_.counters;
    for (size_t i = 0; i < c.size(); ++i) c.device[i] = d.device[static_cast<size_t>(c.device_index[i])];
  }

  // Events of each track by (start, end descending): the innermost event holding a time is
  // the last one before it that ends at or after it.
  struct EventOrder {
    std::vector<uint32_t> rows;        // event rows, by track, start, end descending
    std::vector<int64_t> starts;       // their start times, in that order (searched)
    std::vector<size_t> track_begin;   // per track: its first position in rows (+ the end)
    // Per track: where its last search ended, for the next one to start from (flow points
    // come in time order on a track, mostly: each search is then a step or two).
    std::vector<size_t> lower_hint, upper_hint;
  };

  EventOrder OrderEvents() const {
    const EventTable& e = t_.events;
    EventOrder o;
    // Rows by track (a counting sort keeps file order), then each track's rows by start and
    // end descending: most tracks are written in that order already, and are left as they are.
    o.track_begin.assign(keys_.size() + 1, 0);
    for (const int32_t d : e.device_index) ++o.track_begin[static_cast<size_t>(d) + 1];
    for (size_t i = 1; i < o.track_begin.size(); ++i) o.track_begin[i] += o.track_begin[i - 1];
    o.rows.resize(e.size());
    std::vector<size_t> next(o.track_begin.begin(), o.track_begin.end() - 1);
    for (uint32_t r = 0; r < e.size(); ++r) o.rows[next[static_cast<size_t>(e.device_index[r])]++] = r;
    const auto before = [&e](uint32_t a, uint32_t b) {
      if (e.start_ns[a] != e.start_ns[b]) return e.start_ns[a] < e.start_ns[b];
      if (e.end_ns[a] != e.end_ns[b]) return e.end_ns[a] > e.end_ns[b];
      return a < b;
    };
    for (size_t d = 0; d + 1 < o.track_begin.size(); ++d) {
      const auto first = o.rows.begin() + static_cast<ptrdiff_t>(o.track_begin[d]);
      const auto last = o.rows.begin() + static_cast<ptrdiff_t>(o.track_begin[d + 1]);
      if (!std::is_sorted(first, last, before)) std::sort(first, last, before);
    }
    o.starts.resize(o.rows.size());
    for (size_t k = 0; k < o.rows.size(); ++k) o.starts[k] = e.start_ns[o.rows[k]];
    o.lower_hint.assign(o.track_begin.begin(), o.track_begin.end() - 1);
    o.upper_hint = o.lower_hint;
    return o;
  }

  // The partition point of a[lo, hi) under `below` (true on a prefix): the first position
  // whose value is not below. Searched from `hint` outwards in doubling steps, then by halves:
  // O(log distance) from the hint, the same answer as std::partition_point.
  template <class Below>
  static size_t Gallop(const int64_t* a, size_t lo, size_t hi, size_t hint, Below below) {
    hint = std::min(std::max(hint, lo), hi);
    size_t l = lo, r = hi;  // the point is in [l, r]
    if (hint < hi && below(a[hint])) {
      l = hint + 1;
      for (size_t step = 1;; step *= 2) {
        const size_t probe = l + step - 1;
        if (probe >= hi) break;
        if (!below(a[probe])) {
          r = probe;
          break;
        }
        l = probe + 1;
      }
    } else {
      r = hint;
      for (size_t step = 1;; step *= 2) {
        if (r - lo < step) break;
        const size_t probe = r - step;
        if (below(a[probe])) {
          l = probe + 1;
          break;
        }
        r = probe;
      }
    }
    return static_cast<size_t>(std::partition_point(a + l, a + r, below) - a);
  }

  // The event a flow point binds to (-1 for none): with `enclosing`, the innermost event of
  // non-zero length of its track holding ts, looked for among the kBindWindow events that start
  // last at or before it (bounded work per point on any input); otherwise the first to start at
  // or after ts.
  static constexpr int kBindWindow = 4096;
  int64_t Bind(EventOrder& o, int32_t device, int64_t ts, bool enclosing) const {
    const EventTable& e = t_.events;
    const auto d = static_cast<size_t>(device);
    const size_t first = o.track_begin[d];
    const size_t last = o.track_begin[d + 1];
    const int64_t* starts = o.starts.data();
    if (!enclosing) {
      const size_t at = Gallop(starts, first, last, o.lower_hint[d], [ts](int64_t s) { return s < ts; });
      o.lower_hint[d] = at;
      return at == last ? -1 : static_cast<int64_t>(o.rows[at]);
    }
    size_t at = Gallop(starts, first, last, o.upper_hint[d], [ts](int64_t s) { return s <= ts; });
    o.upper_hint[d] = at;
    for (int steps = 0; at != first && steps < kBindWindow; ++steps) {
      --at;
      const uint32_t r = o.rows[at];
      if (e.end_ns[r] >= ts && e.end_ns[r] > e.start_ns[r]) return static_cast<int64_t>(r);
    }
    return -1;
  }

  // events.step_id from Kineto's step annotations: an event whose name is "ProfilerStep#N"
  // (N a decimal int64) is step N's span on its pid. Every event of that pid starting inside a
  // span ([start, end); the latest-starting span when spans overlap) gets N; then an event left
  // without a step that a flow step (links: Kineto's ac2g CPU-to-GPU) reaches from an event
  // with one takes that step (links in file order). With no such annotation the column stays
  // empty (all null).
  void AssignProfilerSteps() {
    EventTable& e = t_.events;
    struct Span {
      int64_t start, end, step;
    };
    std::unordered_map<IdKey, std::vector<Span>, IdKeyHash> spans;
    constexpr std::string_view kPrefix = "ProfilerStep#";
    for (size_t i = 0; i < e.size(); ++i) {
      const std::string_view name = t_.pool.Get(e.timeline_label[i]);
      if (name.size() <= kPrefix.size() || name.substr(0, kPrefix.size()) != kPrefix) continue;
      uint64_t n = 0;
      if (!ParseUint64(name.substr(kPrefix.size()), &n) || n > uint64_t{INT64_MAX}) continue;
      const IdKey pid = keys_[static_cast<size_t>(e.device_index[i])].pid;
      spans[pid].push_back(Span{e.start_ns[i], e.end_ns[i], static_cast<int64_t>(n)});
    }
    if (spans.empty()) return;
    for (auto& [pid, list] : spans) {
      std::stable_sort(list.begin(), list.end(),
                       [](const Span& a, const Span& b) { return a.start < b.start; });
    }
    e.step_id.assign(e.size(), 0);
    e.step_id_valid.assign(e.size(), 0);
    for (size_t i = 0; i < e.size(); ++i) {
      const auto it = spans.find(keys_[static_cast<size_t>(e.device_index[i])].pid);
      if (it == spans.end()) continue;
      const std::vector<Span>& list = it->second;
      const int64_t at = e.start_ns[i];
      // The last span starting at or before the event.
      const auto after = std::upper_bound(list.begin(), list.end(), at,
                                          [](int64_t v, const Span& s) { return v < s.start; });
      if (after == list.begin()) continue;
      const Span& s = *(after - 1);
      if (at < s.end || at == s.start) {
        e.step_id[i] = s.step;
        e.step_id_valid[i] = 1;
      }
    }
    const LinkTable& l = t_.links;
    for (size_t k = 0; k < l.size(); ++k) {
      if (!l.from_event_id_valid[k] || !l.to_event_id_valid[k]) continue;
      const auto from = static_cast<size_t>(l.from_event_id[k]);
      const auto to = static_cast<size_t>(l.to_event_id[k]);
      if (e.step_id_valid[from] && !e.step_id_valid[to]) {
        e.step_id[to] = e.step_id[from];
        e.step_id_valid[to] = 1;
      }
    }
  }

  // Flow points paired in file order per (cat, id): an 's' opens its id, a 't' or 'f' is a
  // step from the id's open point (a 't' then stays open as the new point, an 'f' closes).
  void BuildLinks() {
    if (flows_.empty()) return;
    // (second point, first point) of each step: in the file order of the second.
    std::vector<std::pair<uint32_t, uint32_t>> steps;
    OpenFlows open;
    for (uint32_t p = 0; p < flows_.size(); ++p) {
      const FlowPoint& fp = flows_[p];
      const size_t slot = open.Find(fp.cat, fp.id);
      if (fp.phase == 's') {
        if (slot != OpenFlows::kNone) {
          open.Point(slot) = p;
        } else {
          open.Insert(fp.cat, fp.id, p);
        }
      } else if (slot != OpenFlows::kNone) {
        steps.emplace_back(p, open.Point(slot));
        if (fp.phase == 'f') {
          open.Erase(slot);
        } else {
          open.Point(slot) = p;
        }
      }
    }
    EventOrder o = OrderEvents();
    const uint32_t t_phase = sink_.Intern("t"), f_phase = sink_.Intern("f");
    LinkTable& l = t_.links;
    for (const auto& [to, from] : steps) {
      const FlowPoint& a = flows_[from];
      const FlowPoint& b = flows_[to];
      l.from_device_index.push_back(a.device);
      l.to_device_index.push_back(b.device);
      l.cat.push_back(a.cat);
      char buf[24];
      l.flow_id.push_back(sink_.InternRepeated(IdText(a.id, buf)));
      l.name.push_back(a.name);
      l.from_ns.push_back(a.ts_ns);
      l.to_ns.push_back(b.ts_ns);
      l.to_phase.push_back(b.phase == 't' ? t_phase : f_phase);
      const int64_t from_event = Bind(o, a.device, a.ts_ns, true);
      const int64_t to_event = Bind(o, b.device, b.ts_ns, b.bind_enclosing);
      PushNullable(l.from_event_id, l.from_event_id_valid, from_event >= 0, from_event);
      PushNullable(l.to_event_id, l.to_event_id_valid, to_event >= 0, to_event);
    }
  }

  TraceSink& sink_;
  TraceTables& t_;
  const char* input_;
  Pass pass_;
  bool kineto_ = false;
  uint32_t kind_ids_[kValueKinds] = {};
  int64_t next_event_ = 0;
  std::unordered_map<TrackKey, int32_t, TrackKeyHash> tracks_;
  std::vector<TrackKey> keys_;
  struct OpenBegin {
    int64_t id;       // provisional event id
    uint64_t offset;  // of the B event in the input
    uint32_t args;    // the B's args
  };
  std::vector<std::vector<OpenBegin>> open_;  // per track: its open B events
  std::vector<int32_t> event_devices_;        // pass 2: each provisional event's track
  uint64_t first_unread_ = UINT64_MAX;  // offset of the first event of another phase or E unmatched
  TrackKey last_key_;
  int32_t last_track_ = -1;
  std::unordered_map<IdKey, uint32_t, IdKeyHash> process_names_;
  std::unordered_map<TrackKey, uint32_t, TrackKeyHash> thread_names_;
  std::vector<int64_t> memory_totals_;  // timeline.py Memory counters: last value per series id
  std::vector<FlowPoint> flows_;
  int64_t last_type_ = 0, last_device_ = 0;
  uint32_t last_allocator_ = StringPool::kInvalidUtf8;
};

std::shared_ptr<TraceTables> NewTables(const MappedFile& file) {
  auto tables = std::make_shared<TraceTables>();
  tables->format = Encoding::kJson;
  tables->kind = TraceKind::kChromeTrace;
  tables->input_bytes = file.size();
  return tables;
}

}  // namespace

bool LooksLikeChromeTrace(std::string_view input) { return chrome_json::LooksLikeChromeJson(input); }

std::shared_ptr<TraceTables> ReadChromeTrace(const MappedFile& file, bool replace_invalid) {
  auto tables = NewTables(file);
  TraceSink sink(*tables);
  sink.SetKind(TraceKind::kChromeTrace);
  sink.Reserve(file.data(), file.size(), true, /*event_details=*/false);
  sink.SetReleaser(file.data(), file.ConsumedRelease());
  Importer importer(sink, *tables, file.data(), Pass::kTables);
  chrome_json::DecodeOptions options;
  options.reader.replace_invalid = replace_invalid;
  const chrome_json::DecodeSummary summary =
      chrome_json::DecodeChromeTrace(file.data(), file.data() + file.size(), importer, options);
  importer.Finish();
  tables->chrome.bare_array = summary.bare_array;
  tables->chrome.empty_objects = summary.empty_objects;
  sink.Finish();
  return tables;
}

std::shared_ptr<TraceTables> ReadChromeEventStats(const MappedFile& file, size_t expected_events,
                                                  bool replace_invalid) {
  auto tables = NewTables(file);
  TraceSink sink(*tables, false);
  sink.SetReleaser(file.data(), file.ConsumedRelease());
  Importer importer(sink, *tables, file.data(), Pass::kEventStats);
  chrome_json::DecodeOptions options;
  options.reader.replace_invalid = replace_invalid;
  try {
    chrome_json::DecodeChromeTrace(file.data(), file.data() + file.size(), importer, options);
  } catch (const std::length_error&) {
    throw TraceFormatError::AtByte(
        0, "event_stats would hold more than 2 GiB in one column: too large for one Arrow column");
  }
  importer.Finish();
  if (static_cast<size_t>(importer.events()) != expected_events) {
    throw TraceFormatError::AtByte(
        0, "the Chrome trace holds " + std::to_string(importer.events()) + " events now, not the " +
               std::to_string(expected_events) + " it held when it was opened: it changed since");
  }
  return tables;
}

}  // namespace tracecore
