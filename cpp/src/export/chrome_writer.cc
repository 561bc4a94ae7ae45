#include "export/chrome_writer.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string_view>
#include <utility>

#include "core/error.h"
#include "query/timeline_label.h"

namespace tracecore::chrome {

namespace {

constexpr char kHex[] = "0123456789abcdef";

// Appends `s` (UTF-8) as Python's json.encoder.encode_basestring_ascii writes it: quoted,
// `"` and `\` escaped, \b \f \n \r \t short, other bytes outside ' '..'~' as \uXXXX
// (lowercase hex, a UTF-16 surrogate pair above U+FFFF).
void AppendQuoted(std::string& out, std::string_view s) {
  out.push_back('"');
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  auto unit = [&out](uint32_t u) {
    char b[6] = {'\\', 'u', kHex[(u >> 12) & 15], kHex[(u >> 8) & 15], kHex[(u >> 4) & 15],
                 kHex[u & 15]};
    out.append(b, 6);
  };
  while (p < end) {
    const unsigned char* run = p;
    while (p < end && *p >= ' ' && *p <= '~' && *p != '"' && *p != '\\') ++p;
    out.append(reinterpret_cast<const char*>(run), static_cast<size_t>(p - run));
    if (p == end) break;
    const unsigned char c = *p;
    if (c < 0x80) {
      ++p;
      switch (c) {
        case '"': out.append("\\\""); break;
        case '\\': out.append("\\\\"); break;
        case '\b': out.append("\\b"); break;
        case '\f': out.append("\\f"); break;
        case '\n': out.append("\\n"); break;
        case '\r': out.append("\\r"); break;
        case '\t': out.append("\\t"); break;
        default: unit(c);
      }
      continue;
    }
    // A UTF-8 sequence (the pool holds valid UTF-8 only).
    uint32_t cp;
    size_t len;
    if (c >= 0xF0) {
      cp = c & 0x07u;
      len = 4;
    } else if (c >= 0xE0) {
      cp = c & 0x0Fu;
      len = 3;
    } else {
      cp = c & 0x1Fu;
      len = 2;
    }
    if (static_cast<size_t>(end - p) < len) len = static_cast<size_t>(end - p);
    for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (p[k] & 0x3Fu);
    p += len;
    if (cp >= 0x10000) {
      const uint32_t v = cp - 0x10000;
      unit(0xD800 | (v >> 10));
      unit(0xDC00 | (v & 0x3FF));
    } else {
      unit(cp);
    }
  }
  out.push_back('"');
}

class Writer {
 public:
  Writer(const TraceTables& t, Sink& sink) : t_(t), sink_(sink), layout_(t.devices) {
    buf_.reset(new char[kBuffer]);
    quoted_at_.assign(t_.pool.size(), 0);
    label_at_.assign(t_.pool.size(), 0);
  }

  WriteStats Run(const Counters* counters, const Steps* steps) {
    Put(std::string_view(
        "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"tracecore\"},"
        "\"traceEvents\":[\n"));
    for (size_t pid = 0; pid < layout_.process_names.size(); ++pid) {
      ProcessMetadata(pid, Quoted(layout_.process_names[pid]));
    }
    Events();
    const uint64_t memory_pid = layout_.process_names.size();
    if (counters != nullptr && counters->size > 0) CounterEvents(*counters, memory_pid);
    if (steps != nullptr && steps->size > 0) StepEvents(*steps, memory_pid + 1);
    Put(std::string_view("\n]}\n"));
    Flush();
    stats_.bytes = written_;
    return stats_;
  }

 private:
  static constexpr size_t kBuffer = size_t{1} << 20;

  // -- output ------------------------------------------------------------------------------
  void Flush() {
    if (pos_ > 0) sink_.Write(buf_.get(), pos_);
    written_ += pos_;
    pos_ = 0;
  }
  void Put(std::string_view s) {
    if (pos_ + s.size() > kBuffer) {
      Flush();
      if (s.size() > kBuffer) {
        sink_.Write(s.data(), s.size());
        written_ += s.size();
        return;
      }
    }
    std::memcpy(buf_.get() + pos_, s.data(), s.size());
    pos_ += s.size();
  }
  char* Room(size_t n) {  // n <= 64
    if (pos_ + n > kBuffer) Flush();
    return buf_.get() + pos_;
  }
  void PutUInt(uint64_t v) {
    char* o = Room(24);
    char tmp[24];
    size_t n = 0;
    do {
      tmp[n++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0);
    for (size_t k = 0; k < n; ++k) o[k] = tmp[n - 1 - k];
    pos_ += n;
  }
  void PutInt(int64_t v) {
    if (v < 0) {
      Put("-");
      PutUInt(0 - static_cast<uint64_t>(v));
    } else {
      PutUInt(static_cast<uint64_t>(v));
    }
  }
  // Nanoseconds as microseconds with 3 decimals (chrome.py's _us).
  void PutMicrosUnsigned(uint64_t ns) {
    PutUInt(ns / 1000);
    char* o = Room(4);
    const uint64_t frac = ns % 1000;
    o[0] = '.';
    o[1] = static_cast<char>('0' + frac / 100);
    o[2] = static_cast<char>('0' + frac / 10 % 10);
    o[3] = static_cast<char>('0' + frac % 10);
    pos_ += 4;
  }
  void PutMicros(int64_t ns) {
    if (ns < 0) {
      Put("-");
      PutMicrosUnsigned(0 - static_cast<uint64_t>(ns));
    } else {
      PutMicrosUnsigned(static_cast<uint64_t>(ns));
    }
  }
  void BeginEvent() {
    if (!first_event_) Put(",\n");
    first_event_ = false;
    ++stats_.events;
  }

  // -- strings -----------------------------------------------------------------------------
  // The JSON text of pool string `id`, escaped once and kept.
  std::string_view Quoted(uint32_t id) {
    uint64_t& at = quoted_at_[id];
    if (at == 0) {
      const size_t begin = arena_.size();
      AppendQuoted(arena_, t_.pool.Get(id));
      at = (uint64_t{begin} << 24) | (arena_.size() - begin);
      if (arena_.size() - begin >= (size_t{1} << 24)) {  // too long to keep: not cached
        at = 0;
        scratch_.assign(arena_, begin, std::string::npos);
        arena_.resize(begin);
        return scratch_;
      }
    }
    return std::string_view(arena_.data() + (at >> 24), at & 0xFFFFFF);
  }
  static std::string QuotedString(std::string_view s) {
    std::string out;
    AppendQuoted(out, s);
    return out;
  }
  // The args after "op" for timeline label `id`: ,"input<i>":"..." per input, or ,"label":"..."
  // when the label does not parse, nothing for an empty label.
  std::string_view LabelArgs(uint32_t id) {
    uint64_t& at = label_at_[id];
    if (at == 0) {
      const std::string_view label = t_.pool.Get(id);
      const size_t begin = labels_.size();
      if (label.empty()) {
      } else if (ParseLabelInputs(label, &inputs_)) {
        for (size_t i = 0; i < inputs_.size(); ++i) {
          labels_.append(",\"input").append(std::to_string(i)).append("\":");
          AppendQuoted(labels_, inputs_[i]);
        }
      } else {
        labels_.append(",\"label\":");
        AppendQuoted(labels_, label);
      }
      at = (uint64_t{begin} << 24) | (labels_.size() - begin) | (uint64_t{1} << 63);
      if (labels_.size() - begin >= (size_t{1} << 24)) {
        at = 0;
        scratch_.assign(labels_, begin, std::string::npos);
        labels_.resize(begin);
        return scratch_;
      }
    }
    const uint64_t v = at & ~(uint64_t{1} << 63);
    return std::string_view(labels_.data() + (v >> 24), v & 0xFFFFFF);
  }

  void Metadata(uint64_t pid, uint64_t tid, std::string_view kind, std::string_view quoted,
                std::string_view sort_kind) {
    for (int k = 0; k < 2; ++k) {
      BeginEvent();
      Put("{\"ph\":\"M\",\"pid\":");
      PutUInt(pid);
      Put(",\"tid\":");
      PutUInt(tid);
      Put(",\"name\":\"");
      if (k == 0) {
        Put(kind);
        Put("_name\",\"args\":{\"name\":");
        Put(quoted);
      } else {
        Put(kind);
        Put("_sort_index\",\"args\":{\"sort_index\":");
        PutUInt(sort_kind == "pid" ? pid : tid);
      }
      Put("}}");
    }
  }
  void ProcessMetadata(uint64_t pid, std::string_view quoted) {
    Metadata(pid, 0, "process", quoted, "pid");
  }
  void ThreadMetadata(uint64_t pid, uint64_t tid, std::string_view quoted) {
    Metadata(pid, tid, "thread", quoted, "tid");
  }

  void Events() {
    const auto& e = t_.events;
    const size_t n = e.size();
    const std::string_view empty = "\"\"";
    for (size_t i = 0; i < n; ++i) {
      const int64_t start = e.start_ns[i];
      const int64_t end = std::max(e.end_ns[i], start);
      trace_export::LaneTrack& track = layout_.TrackOf(e.device_index[i]);
      const size_t lane = track.AssignLane(start, end);
      bool first;
      const int64_t tid = layout_.Tid(track, lane, &first);
      if (first) {
        if (track.has_line) {
          if (lane == 0) {
            ThreadMetadata(track.pid, static_cast<uint64_t>(tid), Quoted(track.line));
          } else {
            std::string name(t_.pool.Get(track.line));
            name.append(" (").append(std::to_string(lane)).append(")");
            ThreadMetadata(track.pid, static_cast<uint64_t>(tid), QuotedString(name));
          }
        }
      }
      const uint32_t node = e.node_name[i];
      const bool has_op = e.op_valid[i] != 0;
      BeginEvent();
      Put("{\"ph\":\"X\",\"cat\":\"Op\",\"name\":");
      Put(Quoted(has_op ? e.op[i] : node));
      Put(",\"pid\":");
      PutUInt(track.pid);
      Put(",\"tid\":");
      PutUInt(static_cast<uint64_t>(tid));
      Put(",\"ts\":");
      PutMicros(start);
      Put(",\"dur\":");
      PutMicrosUnsigned(static_cast<uint64_t>(end) - static_cast<uint64_t>(start));
      Put(",\"args\":{\"name\":");
      Put(Quoted(node));
      Put(",\"op\":");
      Put(has_op ? Quoted(e.op[i]) : empty);
      Put(LabelArgs(e.timeline_label[i]));
      Put("}}");
    }
  }

  void CounterEvents(const Counters& c, uint64_t pid) {
    ProcessMetadata(pid, QuotedString(c.group));
    std::vector<std::string> names;
    names.reserve(c.names.size());
    for (const auto& name : c.names) names.push_back(QuotedString(name));
    const std::string empty = "\"\"";
    for (size_t i = 0; i < c.size; ++i) {
      const int32_t s = c.series[i];
      const std::string& name =
          s >= 0 && static_cast<size_t>(s) < names.size() ? names[static_cast<size_t>(s)] : empty;
      BeginEvent();
      Put("{\"ph\":\"C\",\"cat\":\"Memory\",\"name\":");
      Put(name);
      Put(",\"pid\":");
      PutUInt(pid);
      Put(",\"tid\":0,\"ts\":");
      PutMicros(c.time_ns[i]);
      Put(",\"args\":{");
      Put(name);
      Put(":");
      PutInt(c.value[i]);
      Put("}}");
    }
  }

  void StepEvents(const Steps& s, uint64_t pid) {
    ProcessMetadata(pid, "\"Steps\"");
    ThreadMetadata(pid, 0, "\"steps\"");
    for (size_t i = 0; i < s.size; ++i) {
      BeginEvent();
      Put("{\"ph\":\"X\",\"cat\":\"Step\",\"name\":\"step ");
      PutInt(s.step[i]);
      Put("\",\"pid\":");
      PutUInt(pid);
      Put(",\"tid\":0,\"ts\":");
      PutMicros(s.start_ns[i]);
      Put(",\"dur\":");
      PutMicros(s.duration_ns[i]);
      Put(",\"args\":{\"step\":");
      PutInt(s.step[i]);
      Put("}}");
    }
  }

  const TraceTables& t_;
  Sink& sink_;
  std::unique_ptr<char[]> buf_;
  size_t pos_ = 0;
  uint64_t written_ = 0;
  bool first_event_ = true;
  WriteStats stats_;
  trace_export::DeviceLayout layout_;
  std::vector<std::string_view> inputs_;
  std::vector<uint64_t> quoted_at_;  // per pool id: offset << 24 | length in arena_, 0 = not yet
  std::vector<uint64_t> label_at_;   // per pool id: in labels_, bit 63 set once computed
  std::string arena_, labels_, scratch_;
};

}  // namespace

WriteStats WriteChromeTrace(const TraceTables& tables, Sink& sink, const Counters* counters,
                            const Steps* steps) {
  Writer writer(tables, sink);
  return writer.Run(counters, steps);
}

}  // namespace tracecore::chrome
