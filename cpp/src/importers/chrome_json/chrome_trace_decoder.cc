#include "importers/chrome_json/chrome_trace_decoder.h"

#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

namespace tracecore::chrome_json {
namespace {

using json::JsonReader;
using json::Value;
using json::ValueKind;

// Microseconds to nanoseconds.
constexpr int kTimeScale = 3;

bool Is(std::string_view key, const char (&word)[3]) {
  return std::memcmp(key.data(), word, 2) == 0;
}
bool Is(std::string_view key, const char (&word)[4]) {
  return std::memcmp(key.data(), word, 3) == 0;
}
bool Is(std::string_view key, const char (&word)[5]) {
  return std::memcmp(key.data(), word, 4) == 0;
}

class Decoder {
 public:
  Decoder(const char* begin, const char* end, ChromeEventVisitor& visitor,
          const DecodeOptions& options)
      : begin_(begin),
        reader_(begin, end, options.reader),
        visitor_(visitor),
        release_(options.release) {}

  DecodeSummary Run() {
    const ValueKind kind = reader_.Peek();
    if (kind == ValueKind::kArray) {
      summary_.bare_array = true;
      Events();
    } else if (kind == ValueKind::kObject) {
      TopLevel();
    } else {
      reader_.Fail(reader_.pos(),
                   "expected a JSON object with \"traceEvents\" or an array of trace events");
    }
    reader_.ExpectEnd();
    return summary_;
  }

 private:
  void TopLevel() {
    const char* const start = reader_.pos();
    bool seen_events = false;
    reader_.EnterObject();
    std::string_view key;
    while (reader_.NextMember(&key)) {
      if (key == "traceEvents") {
        if (seen_events) reader_.Fail(reader_.pos(), "a second \"traceEvents\" key (duplicate)");
        if (reader_.Peek() != ValueKind::kArray) reader_.FailExpected("traceEvents: an array");
        seen_events = true;
        Events();
      } else {
        Value value;
        reader_.ReadValue(&value);
        visitor_.OnTopLevel(key, value);
      }
      reader_.ResetScratch();
    }
    if (!seen_events)
      reader_.Fail(start, "a JSON object without \"traceEvents\": not a Chrome trace");
  }

  void Events() {
    reader_.EnterArray();
    while (reader_.NextElement()) {
      if (reader_.Peek() != ValueKind::kObject) reader_.FailExpected("a trace event object");
      Event();
      if (release_ != nullptr) release_->Passed(reader_.pos());
    }
  }

  void Event() {
    reader_.ResetScratch();
    ev_.Reset();
    ClearArgs();
    ev_.offset = static_cast<uint64_t>(reader_.pos() - begin_);
    reader_.EnterObject();
    std::string_view key;
    bool any = false;
    while (reader_.NextMember(&key)) {
      any = true;
      switch (key.size()) {
        case 1:
          if (key[0] == 's') {
            StringField(&ev_.scope, ChromeEvent::kScope, "s");
            continue;
          }
          break;
        case 2:
          if (Is(key, "ph")) {
            Phase();
            continue;
          }
          if (Is(key, "ts")) {
            Time(&ev_.ts_ns, ChromeEvent::kTs, "ts");
            continue;
          }
          if (Is(key, "id")) {
            Id(&ev_.id, "id");
            ev_.fields &= ~(ChromeEvent::kId2Local | ChromeEvent::kId2Global);
            continue;
          }
          if (Is(key, "bp")) {
            StringField(&ev_.bp, ChromeEvent::kBindingPoint, "bp");
            continue;
          }
          break;
        case 3:
          if (Is(key, "pid")) {
            Id(&ev_.pid, "pid");
            continue;
          }
          if (Is(key, "tid")) {
            Id(&ev_.tid, "tid");
            continue;
          }
          if (Is(key, "cat")) {
            StringField(&ev_.cat, ChromeEvent::kCat, "cat");
            continue;
          }
          if (Is(key, "dur")) {
            Time(&ev_.dur_ns, ChromeEvent::kDur, "dur");
            continue;
          }
          if (Is(key, "tts")) {
            Time(&ev_.tts_ns, ChromeEvent::kTts, "tts");
            continue;
          }
          if (Is(key, "id2")) {
            Id2();
            continue;
          }
          break;
        case 4:
          if (Is(key, "name")) {
            StringField(&ev_.name, ChromeEvent::kName, "name");
            continue;
          }
          if (Is(key, "args")) {
            Args();
            continue;
          }
          if (Is(key, "tdur")) {
            Time(&ev_.tdur_ns, ChromeEvent::kTdur, "tdur");
            continue;
          }
          break;
        case 7:
          if (key == "bind_id") {
            Id(&ev_.bind_id, "bind_id");
            continue;
          }
          break;
        default:
          break;
      }
      reader_.SkipValue();
    }
    if (!any) {
      ++summary_.empty_objects;
      return;
    }
    ev_.args = args_.data();
    ev_.num_args = num_args_;
    ++summary_.events;
    visitor_.OnEvent(ev_);
  }

  // null: absent. Returns false then.
  bool TakeNull() {
    if (reader_.Peek() != ValueKind::kNull) return false;
    reader_.ReadNull();
    return true;
  }

  void Phase() {
    if (TakeNull()) {
      ev_.fields &= ~ChromeEvent::kPh;
      ev_.ph = std::string_view();
      ev_.phase = 0;
      return;
    }
    if (reader_.Peek() != ValueKind::kString) reader_.FailExpected("ph: a string");
    ev_.ph = reader_.ReadString();
    ev_.phase = ev_.ph.empty() ? 0 : ev_.ph[0];
    ev_.fields |= ChromeEvent::kPh;
  }

  void StringField(std::string_view* out, ChromeEvent::Field field, const char* what) {
    const ValueKind kind = reader_.Peek();
    if (kind == ValueKind::kString) {
      *out = reader_.ReadString();
      ev_.fields |= field;
      return;
    }
    if (kind != ValueKind::kNull) reader_.FailExpected((std::string(what) + ": a string").c_str());
    reader_.ReadNull();
    *out = std::string_view();
    ev_.fields &= ~field;
  }

  void Time(int64_t* out, ChromeEvent::Field field, const char* what) {
    const ValueKind kind = reader_.Peek();
    if (kind == ValueKind::kNumber) {
      *out = reader_.ReadDecimalScaled(kTimeScale, what);
      ev_.fields |= field;
      return;
    }
    if (kind == ValueKind::kString) {
      const char* at = reader_.pos();
      const std::string_view text = reader_.ReadString();
      switch (json::ParseDecimalScaled(text, kTimeScale, out)) {
        case json::DecimalStatus::kOk:
          ev_.fields |= field;
          return;
        case json::DecimalStatus::kNotANumber:
          reader_.Fail(at, std::string(what) + ": a string that is not a number");
        case json::DecimalStatus::kOutOfRange:
          reader_.Fail(at, std::string(what) + ": does not fit 64-bit nanoseconds");
      }
    }
    if (kind != ValueKind::kNull) reader_.FailExpected((std::string(what) + ": a number").c_str());
    reader_.ReadNull();
    *out = 0;
    ev_.fields &= ~field;
  }

  void Id(IdField* out, const char* what) {
    const ValueKind kind = reader_.Peek();
    *out = IdField();
    if (kind == ValueKind::kNumber) {
      out->number = reader_.ReadInt64(what);
      out->kind = IdField::Kind::kInt;
    } else if (kind == ValueKind::kString) {
      out->text = reader_.ReadString();
      out->kind = IdField::Kind::kString;
    } else if (kind == ValueKind::kNull) {
      reader_.ReadNull();
    } else {
      reader_.FailExpected((std::string(what) + ": an integer or a string").c_str());
    }
  }

  // "id2": {"local": id} or {"global": id}.
  void Id2() {
    if (TakeNull()) return;
    if (reader_.Peek() != ValueKind::kObject) reader_.FailExpected("id2: an object");
    reader_.EnterObject();
    std::string_view key;
    while (reader_.NextMember(&key)) {
      if (key == "local" || key == "global") {
        Id(&ev_.id, "id2");
        ev_.fields &= ~(ChromeEvent::kId2Local | ChromeEvent::kId2Global);
        if (ev_.id.present())
          ev_.fields |= key == "local" ? ChromeEvent::kId2Local : ChromeEvent::kId2Global;
      } else {
        reader_.SkipValue();
      }
    }
  }

  void Args() {
    ClearArgs();
    ev_.fields &= ~ChromeEvent::kArgs;
    if (TakeNull()) return;
    if (reader_.Peek() != ValueKind::kObject) reader_.FailExpected("args: an object");
    ev_.fields |= ChromeEvent::kArgs;
    reader_.EnterObject();
    std::string_view key;
    while (reader_.NextMember(&key)) {
      Arg* arg = NewArg();
      arg->key = key;
      reader_.ReadValue(&arg->value);
      KeepUnique(arg);
    }
  }

  // Keeps keys unique (first place, last value). A 64-bit filter of (length, first and last
  // byte) rules most new keys out at once; past kLinearArgs entries a hash map takes over, so
  // a hostile event with many keys costs linear time.
  static constexpr size_t kLinearArgs = 32;
  static uint64_t FilterBit(std::string_view key) {
    const size_t h = key.empty() ? 0
                                 : key.size() * 31 + static_cast<unsigned char>(key[0]) * 7 +
                                       static_cast<unsigned char>(key.back());
    return uint64_t{1} << (h & 63);
  }
  // Room for one more arg at the end (the array only grows: no allocation per event).
  Arg* NewArg() {
    if (num_args_ == args_.size()) args_.resize(args_.empty() ? 16 : 2 * args_.size());
    return &args_[num_args_++];
  }
  // The arg just read: dropped, its value moved to the earlier entry, if its key came before.
  void KeepUnique(Arg* arg) {
    const std::string_view key = arg->key;
    const size_t n = num_args_ - 1;  // args before this one
    if (n < kLinearArgs) {
      const uint64_t bit = FilterBit(key);
      if ((filter_ & bit) != 0) {
        for (size_t i = 0; i < n; ++i) {
          if (args_[i].key == key) {
            args_[i].value = arg->value;
            --num_args_;
            return;
          }
        }
      }
      filter_ |= bit;
      return;
    }
    if (index_.empty()) {
      for (size_t i = 0; i < n; ++i) index_.emplace(args_[i].key, i);
    }
    const auto [it, inserted] = index_.emplace(key, n);
    if (!inserted) {
      args_[it->second].value = arg->value;
      --num_args_;
    }
  }
  void ClearArgs() {
    num_args_ = 0;
    filter_ = 0;
    if (!index_.empty()) index_.clear();
  }

  const char* begin_;
  JsonReader reader_;
  ChromeEventVisitor& visitor_;
  ReleaseBehind* release_;
  DecodeSummary summary_;
  ChromeEvent ev_;
  std::vector<Arg> args_;  // its size is the capacity; num_args_ are in use
  size_t num_args_ = 0;
  uint64_t filter_ = 0;
  std::unordered_map<std::string_view, size_t> index_;
};

}  // namespace

DecodeSummary DecodeChromeTrace(const char* begin, const char* end, ChromeEventVisitor& visitor,
                                const DecodeOptions& options) {
  return Decoder(begin, end, visitor, options).Run();
}

}  // namespace tracecore::chrome_json
