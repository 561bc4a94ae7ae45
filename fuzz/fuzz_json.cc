// libFuzzer target: the Chrome trace JSON reader and event decoder (cpp/src/importers/
// chrome_json) on one input.
//
//   * The whole input is read as one JSON document (json::WalkValue), strict and with
//     errors="replace", by every stage-1 implementation the CPU has: all must give the same
//     token stream or the same error message. Every string handed out must be valid UTF-8
//     (checked with StringPool::IsValidUtf8, an implementation of its own), every raw text a
//     piece of the input (or valid UTF-8 in replace mode), every integer flagged as such must
//     equal what ParseInt64 reads from its text, and ParseDouble must not disagree in sign.
//   * The input is decoded as a Chrome trace with a checking visitor: offsets point at '{',
//     views are valid UTF-8, args keys are unique, counts add up.
//   * The input is imported (ReadChromeTrace) and, when that succeeds, its event_stats pass
//     runs too: it must succeed, and every row reference must point inside its table.
//   * LooksLikeChromeJson runs on its prefixes.
// Only tracecore::TraceFormatError may escape; anything else, or a broken check, aborts.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "containers/string_pool.h"
#include "core/error.h"
#include "importers/chrome_json/chrome_detect.h"
#include "importers/chrome_json/chrome_importer.h"
#include "io/mapped_file.h"
#include "importers/chrome_json/chrome_trace_decoder.h"
#include "importers/chrome_json/json_numbers.h"
#include "importers/chrome_json/json_reader.h"
#include "importers/chrome_json/json_walk.h"
#include "importers/chrome_json/structural_index.h"

namespace {

using namespace tracecore;

[[noreturn]] void Finding(const std::string& what) {
  std::fprintf(stderr, "\n==tracecore-fuzz== FINDING: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

void CheckUtf8(std::string_view s, const char* what) {
  if (!StringPool::IsValidUtf8(s)) Finding(std::string(what) + " is not valid UTF-8");
}

bool Inside(std::string_view s, const char* begin, const char* end) {
  return s.data() >= begin && s.data() + s.size() <= end;
}

// Dumps the token stream and checks each token.
class Checker {
 public:
  Checker(const char* begin, const char* end, bool replace)
      : begin_(begin), end_(end), replace_(replace) {}
  std::string out;

  void BeginObject() { out += '{'; }
  void EndObject() { out += '}'; }
  void BeginArray() { out += '['; }
  void EndArray() { out += ']'; }
  void Key(std::string_view k) {
    CheckUtf8(k, "a key");
    out += 'k';
    out.append(k);
    out += '\0';
  }
  void Scalar(const json::Value& v) {
    switch (v.kind) {
      case json::ValueKind::kString:
        CheckUtf8(v.text, "a string");
        out += 's';
        out.append(v.text);
        out += '\0';
        return;
      case json::ValueKind::kNumber: {
        if (!Inside(v.text, begin_, end_)) Finding("a number's text is not in the input");
        if (!json::IsJsonNumber(v.text)) Finding("a number's text is not a JSON number");
        int64_t i = 0;
        const bool fits = json::ParseInt64(v.text, &i);
        if (fits != v.is_int || (fits && i != v.int_value))
          Finding("is_int / int_value disagree with ParseInt64");
        const double d = json::ParseDouble(v.text);
        if (!std::isnan(d) && (v.text[0] == '-') != std::signbit(d))
          Finding("ParseDouble lost the sign");
        int64_t scaled = 0;
        json::ParseDecimalScaled(v.text, 3, &scaled);  // must not crash; checked in the tests
        out += 'n';
        out.append(v.text);
        out += '\0';
        return;
      }
      default:
        if (!Inside(v.text, begin_, end_)) Finding("a literal's text is not in the input");
        out.append(v.text);
        return;
    }
  }

 private:
  const char* begin_;
  const char* end_;
  bool replace_;
};

std::string Walk(const char* begin, const char* end, bool replace, json::Stage1Fn stage1) {
  json::ReaderOptions options;
  options.replace_invalid = replace;
  options.stage1 = stage1;
  try {
    json::JsonReader reader(begin, end, options);
    Checker checker(begin, end, replace);
    json::WalkValue(reader, checker);
    reader.ExpectEnd();
    return "ok:" + checker.out;
  } catch (const TraceFormatError& e) {
    if (e.where != TraceFormatError::Where::kText || e.line == 0 || e.column == 0) {
      Finding(std::string("an error without line and column: ") + e.what());
    }
    return std::string("error:") + e.what();
  }
}

class EventChecker : public chrome_json::ChromeEventVisitor {
 public:
  EventChecker(const char* begin, const char* end) : begin_(begin), end_(end) {}
  uint64_t events = 0;

  void OnTopLevel(std::string_view key, const json::Value& value) override {
    CheckUtf8(key, "a top-level key");
    if (value.kind == json::ValueKind::kString) CheckUtf8(value.text, "a top-level string");
  }
  void OnEvent(const chrome_json::ChromeEvent& e) override {
    ++events;
    if (e.offset >= static_cast<uint64_t>(end_ - begin_) || begin_[e.offset] != '{') {
      Finding("an event offset that is not at its '{'");
    }
    for (const std::string_view s :
         {e.ph, e.name, e.cat, e.scope, e.bp, e.pid.text, e.tid.text, e.id.text}) {
      CheckUtf8(s, "an event string");
    }
    if (e.phase != (e.ph.empty() ? 0 : e.ph[0])) Finding("phase is not ph's first byte");
    std::set<std::string_view> keys;
    for (size_t i = 0; i < e.num_args; ++i) {
      CheckUtf8(e.args[i].key, "an args key");
      if (!keys.insert(e.args[i].key).second) Finding("an args key twice");
      if (e.args[i].value.kind == json::ValueKind::kString)
        CheckUtf8(e.args[i].value.text, "an args string");
    }
  }

 private:
  const char* begin_;
  const char* end_;
};

void Decode(const char* begin, const char* end, bool replace) {
  chrome_json::DecodeOptions options;
  options.reader.replace_invalid = replace;
  EventChecker checker(begin, end);
  try {
    const chrome_json::DecodeSummary summary =
        chrome_json::DecodeChromeTrace(begin, end, checker, options);
    if (summary.events != checker.events) Finding("the summary's event count is not the visits'");
  } catch (const TraceFormatError& e) {
    if (e.line == 0 || e.column == 0)
      Finding(std::string("an error without line and column: ") + e.what());
  }
}

void Check(bool ok, const char* what) {
  if (!ok) Finding(what);
}

// The importer: tables whose references hold, and an event_stats pass that agrees.
void Import(const char* begin, const char* end, bool replace) {
  const auto file = MappedFile::FromMemory(begin, static_cast<size_t>(end - begin), nullptr);
  std::shared_ptr<TraceTables> t;
  try {
    t = ReadChromeTrace(*file, replace);
  } catch (const TraceFormatError& e) {
    if (e.line == 0 || e.column == 0) Finding(std::string("an import error without line and column: ") + e.what());
    return;
  }
  const auto events = static_cast<int64_t>(t->events.size());
  const auto devices = static_cast<int32_t>(t->devices.size());
  for (size_t i = 0; i < t->events.size(); ++i) {
    Check(t->events.device_index[i] >= 0 && t->events.device_index[i] < devices, "events.device_index");
  }
  int64_t n = 0;
  for (const int64_t c : t->devices.n_events) n += c;
  Check(n == events, "devices.n_events do not add up to the events");
  // Each device's events are one run of rows, in device order (the queries rely on it).
  for (size_t i = 1; i < t->events.size(); ++i) {
    Check(t->events.device_index[i] >= t->events.device_index[i - 1], "events not grouped by device");
  }
  for (const int64_t id : t->alloc_records.event_id) Check(id >= -1 && id < events, "alloc_records.event_id");
  for (size_t i = 0; i < t->links.size(); ++i) {
    Check(t->links.from_device_index[i] < devices && t->links.to_device_index[i] < devices, "links device");
    if (t->links.from_event_id_valid[i]) Check(t->links.from_event_id[i] < events, "links.from_event_id");
    if (t->links.to_event_id_valid[i]) Check(t->links.to_event_id[i] < events, "links.to_event_id");
  }
  for (const int32_t d : t->counters.device_index) Check(d >= 0 && d < devices, "counters.device_index");
  std::shared_ptr<TraceTables> stats;
  try {
    stats = ReadChromeEventStats(*file, t->events.size(), replace);
  } catch (const std::exception& e) {
    Finding(std::string("the event_stats pass failed on an input the open read: ") + e.what());
  }
  for (const int64_t id : stats->event_stats.event_id) Check(id >= 0 && id < events, "event_stats.event_id");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // An exact-size heap copy: ASan sees any read past the end.
  std::vector<char> copy(data, data + size);
  const char* begin = copy.data();
  const char* end = begin + size;
  try {
    for (const bool replace : {false, true}) {
      const std::string expected = Walk(begin, end, replace, json::PortableStage1());
      for (const json::Stage1Fn f : {json::Sse2Stage1(), json::Ssse3Stage1(), json::Avx2Stage1()}) {
        if (f != nullptr && Walk(begin, end, replace, f) != expected) {
          Finding("stage-1 implementations disagree");
        }
      }
      Decode(begin, end, replace);
    }
    Import(begin, end, false);
    Import(begin, end, true);
    for (const size_t n : {size, size / 2, size / 3})
      chrome_json::LooksLikeChromeJson(std::string_view(begin, n));
  } catch (const std::exception& e) {
    Finding(std::string("unexpected exception: ") + e.what());
  }
  return 0;
}
