// The Chrome trace event decoder (importers/chrome_json): small documents in, the visits
// (events with their fields and args, top-level keys) out; every error with line and column;
// detection by content.
#include <cstdio>
#include <string>
#include <vector>

#include "core/error.h"
#include "importers/chrome_json/chrome_detect.h"
#include "importers/chrome_json/chrome_trace_decoder.h"
#include "unit_test.h"

using tracecore::TraceFormatError;
using namespace tracecore::chrome_json;
using tracecore::json::ValueKind;

namespace {

std::string ShowId(const IdField& id) {
  switch (id.kind) {
    case IdField::Kind::kAbsent:
      return "-";
    case IdField::Kind::kInt:
      return std::to_string(id.number);
    case IdField::Kind::kString:
      return "'" + std::string(id.text) + "'";
  }
  return "?";
}

std::string ShowValue(const tracecore::json::Value& v) {
  switch (v.kind) {
    case ValueKind::kString:
      return "'" + std::string(v.text) + "'";
    case ValueKind::kNumber:
      return v.is_int ? "i" + std::to_string(v.int_value) : "d" + std::string(v.text);
    case ValueKind::kObject:
      return "obj" + std::string(v.text);
    case ValueKind::kArray:
      return "list" + std::string(v.text);
    default:
      return std::string(v.text);
  }
}

// Writes each visit as one line.
class Recorder : public ChromeEventVisitor {
 public:
  std::vector<std::string> lines;
  void OnTopLevel(std::string_view key, const tracecore::json::Value& value) override {
    lines.push_back("top " + std::string(key) + "=" + ShowValue(value));
  }
  void OnEvent(const ChromeEvent& e) override {
    std::string s = "ev@" + std::to_string(e.offset) +
                    " ph=" + (e.has(ChromeEvent::kPh) ? std::string(e.ph) : "-");
    if (e.has(ChromeEvent::kName)) s += " name=" + std::string(e.name);
    if (e.has(ChromeEvent::kCat)) s += " cat=" + std::string(e.cat);
    if (e.pid.present()) s += " pid=" + ShowId(e.pid);
    if (e.tid.present()) s += " tid=" + ShowId(e.tid);
    if (e.has(ChromeEvent::kTs)) s += " ts=" + std::to_string(e.ts_ns);
    if (e.has(ChromeEvent::kDur)) s += " dur=" + std::to_string(e.dur_ns);
    if (e.has(ChromeEvent::kTts)) s += " tts=" + std::to_string(e.tts_ns);
    if (e.has(ChromeEvent::kTdur)) s += " tdur=" + std::to_string(e.tdur_ns);
    if (e.id.present()) {
      s += " id=" + ShowId(e.id);
      if (e.has(ChromeEvent::kId2Local)) s += "(local)";
      if (e.has(ChromeEvent::kId2Global)) s += "(global)";
    }
    if (e.bind_id.present()) s += " bind_id=" + ShowId(e.bind_id);
    if (e.has(ChromeEvent::kScope)) s += " s=" + std::string(e.scope);
    if (e.has(ChromeEvent::kBindingPoint)) s += " bp=" + std::string(e.bp);
    if (e.has(ChromeEvent::kArgs)) {
      s += " args{";
      for (size_t i = 0; i < e.num_args; ++i) {
        s += (i ? "," : "") + std::string(e.args[i].key) + ":" + ShowValue(e.args[i].value);
      }
      s += "}";
    }
    lines.push_back(s);
  }
};

struct Result {
  std::vector<std::string> lines;
  DecodeSummary summary;
};

Result Decode(const std::string& json, bool replace = false) {
  Recorder r;
  DecodeOptions options;
  options.reader.replace_invalid = replace;
  Result out;
  out.summary = DecodeChromeTrace(json.data(), json.data() + json.size(), r, options);
  out.lines = r.lines;
  return out;
}

std::string ErrorOf(const std::string& json) {
  try {
    Decode(json);
  } catch (const TraceFormatError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(ChromeEvents, KinetoEventsWithArgs) {
  const std::string json = R"({
  "schemaVersion": 1,
  "deviceProperties": [{"id": 0, "name": "GPU"}],
  "distributedInfo": {"rank": 3},
  "traceEvents": [
  {
    "ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 28777, "tid": 28777,
    "ts": 4762454534627.543, "dur": 116.960,
    "args": {
      "External id": 3,"Input Dims": [[8, 20], [32]], "Input type": ["float"], "ratio": 0.5, "ok": true, "none": null
    }
  },
  {
    "ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 28777, "tid": 28777,
    "ts": 4762454615850.483,
    "args": {"Total Reserved": 0, "Total Allocated": 3608, "Bytes": -8, "Device Id": -1, "Addr": 94385995339712}
  },
  {"ph": "f", "id": 8, "pid": 0, "tid": 7, "ts": 1.5, "cat": "ac2g", "name": "ac2g", "bp": "e"}
  ],
  "traceName": "x.pt.trace.json"
})";
  const Result r = Decode(json);
  ASSERT_EQ(r.lines.size(), 7u);
  EXPECT_EQ(r.lines[0], "top schemaVersion=i1");
  EXPECT_EQ(r.lines[1], "top deviceProperties=list[{\"id\": 0, \"name\": \"GPU\"}]");
  EXPECT_EQ(r.lines[2], "top distributedInfo=obj{\"rank\": 3}");
  EXPECT_EQ(
      r.lines[3],
      "ev@" + std::to_string(json.find("{\n    \"ph\": \"X\"")) +
          " ph=X name=aten::linear cat=cpu_op pid=28777 tid=28777 ts=4762454534627543 dur=116960"
          " args{External id:i3,Input Dims:list[[8, 20], [32]],Input "
          "type:list[\"float\"],ratio:d0.5,"
          "ok:true,none:null}");
  EXPECT_EQ(r.lines[4].substr(r.lines[4].find(' ')),
            " ph=i name=[memory] cat=cpu_instant_event pid=28777 tid=28777 ts=4762454615850483 s=t"
            " args{Total Reserved:i0,Total Allocated:i3608,Bytes:i-8,Device "
            "Id:i-1,Addr:i94385995339712}");
  EXPECT_EQ(r.lines[5].substr(r.lines[5].find(' ')),
            " ph=f name=ac2g cat=ac2g pid=0 tid=7 ts=1500 id=8 bp=e");
  EXPECT_EQ(r.lines[6], "top traceName='x.pt.trace.json'");
  EXPECT_EQ(r.summary.events, 3u);
  EXPECT_FALSE(r.summary.bare_array);
}

TEST(ChromeEvents, XProfTrailingEmptyObjectIsSkipped) {
  const Result r = Decode(R"({"displayTimeUnit":"ns","metadata":{"highres-ticks":true},
"traceEvents":[
{"args": {"name": "/host:CPU"}, "name": "process_name", "ph": "M", "pid": 701},
{"dur": 29.624, "name": "Region", "ph": "X", "pid": 701, "tid": 549701035, "ts": 46871.465},
{}]})");
  ASSERT_EQ(r.lines.size(), 4u);
  EXPECT_EQ(r.lines[0], "top displayTimeUnit='ns'");
  EXPECT_EQ(r.lines[1], "top metadata=obj{\"highres-ticks\":true}");
  EXPECT_EQ(r.lines[2].substr(r.lines[2].find(' ')),
            " ph=M name=process_name pid=701 args{name:'/host:CPU'}");
  EXPECT_EQ(r.lines[3].substr(r.lines[3].find(' ')),
            " ph=X name=Region pid=701 tid=549701035 ts=46871465 dur=29624");
  EXPECT_EQ(r.summary.events, 2u);
  EXPECT_EQ(r.summary.empty_objects, 1u);
}

TEST(ChromeEvents, BareArrayAndTimelinePyStyle) {
  const Result r = Decode(R"([
{"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "/job:localhost/replica:0/task:0/device:GPU:0 Compute"}},
{"ph": "X", "cat": "Op", "name": "MatMul", "pid": 1, "tid": 0, "ts": 1500000000000, "dur": 12,
 "args": {"name": "dense/MatMul", "op": "MatMul", "input0": "x"}},
{"ph": "C", "name": "Memory", "pid": 2, "ts": 1.25, "args": {"cpu": 1024}}
])");
  ASSERT_EQ(r.lines.size(), 3u);
  EXPECT_TRUE(r.summary.bare_array);
  EXPECT_EQ(r.lines[1].substr(r.lines[1].find(' ')),
            " ph=X name=MatMul cat=Op pid=1 tid=0 ts=1500000000000000 dur=12000 "
            "args{name:'dense/MatMul',op:'MatMul',input0:'x'}");
  EXPECT_EQ(r.lines[2].substr(r.lines[2].find(' ')),
            " ph=C name=Memory pid=2 ts=1250 args{cpu:i1024}");
}

TEST(ChromeEvents, FieldForms) {
  const Result r = Decode(R"({"traceEvents": [
{"ph": "X", "pid": "Spans", "tid": "PyTorch Profiler", "ts": "12.5", "dur": 1e3, "name": null, "cat": "a\u00e9"},
{"ph": "b", "id2": {"local": "0x1f"}, "ts": -3.25, "tts": 7, "tdur": 0.001, "bind_id": 4, "s": "g"},
{"ph": "n", "id": 5, "id2": {"global": 6}, "args": null},
{"ph": "n", "id2": {"global": 6}, "id": 5, "unknown": {"deep": [1, {"x": null}]}, "sf": 3, "stack": ["a"]}
]})");
  ASSERT_EQ(r.lines.size(), 4u);
  EXPECT_EQ(r.lines[0].substr(r.lines[0].find(' ')),
            " ph=X cat=a\xC3\xA9 pid='Spans' tid='PyTorch Profiler' ts=12500 dur=1000000");
  EXPECT_EQ(r.lines[1].substr(r.lines[1].find(' ')),
            " ph=b ts=-3250 tts=7000 tdur=1 id='0x1f'(local) bind_id=4 s=g");
  EXPECT_EQ(r.lines[2].substr(r.lines[2].find(' ')), " ph=n id=6(global)");
  EXPECT_EQ(r.lines[3].substr(r.lines[3].find(' ')), " ph=n id=5");
}

TEST(ChromeEvents, DuplicateKeysKeepTheLastValue) {
  const Result r = Decode(R"({"traceEvents": [
{"ph": "X", "ts": 1, "ts": 2, "name": "a", "name": "b", "args": {"k": 1}, "args": {"x": 1, "y": 2, "x": 3}}
]})");
  ASSERT_EQ(r.lines.size(), 1u);
  EXPECT_EQ(r.lines[0].substr(r.lines[0].find(' ')), " ph=X name=b ts=2000 args{x:i3,y:i2}");
  // Many keys: the hash map takes over from the linear search, same outcome.
  std::string args;
  for (int i = 0; i < 100; ++i)
    args += "\"k" + std::to_string(i) + "\": " + std::to_string(i) + ", ";
  for (int i = 0; i < 100; i += 7)
    args += "\"k" + std::to_string(i) + "\": " + std::to_string(1000 + i) + ", ";
  args += "\"last\": 0";
  const Result many = Decode("[{\"ph\": \"C\", \"args\": {" + args + "}}]");
  ASSERT_EQ(many.lines.size(), 1u);
  std::string expect = " ph=C args{";
  for (int i = 0; i < 100; ++i)
    expect += "k" + std::to_string(i) + ":i" + std::to_string(i % 7 == 0 ? 1000 + i : i) + ",";
  expect += "last:i0}";
  EXPECT_EQ(many.lines[0].substr(many.lines[0].find(' ')), expect);
}

TEST(ChromeEvents, ReplaceModeReachesEventStrings) {
  const Result r =
      Decode("[{\"ph\": \"X\", \"name\": \"a\xFF\", \"args\": {\"k\": [\"\x01\"]}}]", true);
  ASSERT_EQ(r.lines.size(), 1u);
  EXPECT_EQ(r.lines[0].substr(r.lines[0].find(' ')),
            " ph=X name=a\xEF\xBF\xBD args{k:list[\"\xEF\xBF\xBD\"]}");
  EXPECT_EQ(ErrorOf("[{\"ph\": \"X\",\n \"name\": \"a\xFF\"}]"),
            "line 2, column 12: invalid UTF-8 in a string (byte 0xFF)");
}

TEST(ChromeEvents, Errors) {
  EXPECT_EQ(ErrorOf("{\"traceEvents\": [{\"ph\": \"X\", \"ts\": \"abc\"}]}"),
            "line 1, column 36: ts: a string that is not a number");
  EXPECT_EQ(ErrorOf("{\"traceEvents\": [\n{\"ph\": \"X\", \"ts\": true}]}"),
            "line 2, column 19: expected ts: a number, found 't'");
  EXPECT_EQ(ErrorOf("[{\"ph\": \"X\", \"dur\": 1e300}]"),
            "line 1, column 21: dur: 1e300 times 10^3 does not fit a 64-bit integer");
  EXPECT_EQ(ErrorOf("[{\"ph\": \"X\", \"ts\": \"1e300\"}]"),
            "line 1, column 20: ts: does not fit 64-bit nanoseconds");
  EXPECT_EQ(ErrorOf("[{\"ph\": 5}]"), "line 1, column 9: expected ph: a string, found '5'");
  EXPECT_EQ(ErrorOf("[{\"name\": [1]}]"), "line 1, column 11: expected name: a string, found '['");
  EXPECT_EQ(ErrorOf("[{\"pid\": 1.5}]"),
            "line 1, column 10: pid: expected an integer within int64");
  EXPECT_EQ(ErrorOf("[{\"tid\": 99999999999999999999}]"),
            "line 1, column 10: tid: expected an integer within int64");
  EXPECT_EQ(ErrorOf("[{\"tid\": {}}]"),
            "line 1, column 10: expected tid: an integer or a string, found '{'");
  EXPECT_EQ(ErrorOf("[{\"args\": [1]}]"), "line 1, column 11: expected args: an object, found '['");
  EXPECT_EQ(ErrorOf("[{\"id2\": 3}]"), "line 1, column 10: expected id2: an object, found '3'");
  EXPECT_EQ(ErrorOf("[{\"ph\": \"X\"}, 3]"),
            "line 1, column 15: expected a trace event object, found '3'");
  EXPECT_EQ(ErrorOf("[{\"ph\": \"X\"},]"), "line 1, column 14: trailing comma before ']'");
  EXPECT_EQ(ErrorOf("{\"traceEvents\": {}}"),
            "line 1, column 17: expected traceEvents: an array, found '{'");
  EXPECT_EQ(ErrorOf("{\"traceEvents\": [], \"traceEvents\": []}"),
            "line 1, column 36: a second \"traceEvents\" key (duplicate)");
  EXPECT_EQ(ErrorOf("{\"displayTimeUnit\": \"ns\"}"),
            "line 1, column 1: a JSON object without \"traceEvents\": not a Chrome trace");
  EXPECT_EQ(
      ErrorOf("  42"),
      "line 1, column 3: expected a JSON object with \"traceEvents\" or an array of trace events");
  EXPECT_EQ(ErrorOf("[{\"ph\": \"X\"}"),
            "line 1, column 13: expected ',' or ']' after an array element, found end of input");
  EXPECT_EQ(ErrorOf("[{\"ph\": \"X\", \"ts\": NaN}]"),
            "line 1, column 20: NaN and Infinity are not JSON numbers");
  EXPECT_EQ(ErrorOf("{\"traceEvents\": []} x"),
            "line 1, column 21: unexpected data after the JSON value");
  EXPECT_EQ(ErrorOf(""), "line 1, column 1: unexpected end of input, expected a value");
}

TEST(ChromeEvents, EmptyTraces) {
  EXPECT_EQ(Decode("{\"traceEvents\": []}").summary.events, 0u);
  EXPECT_EQ(Decode("[]").summary.events, 0u);
  EXPECT_EQ(Decode("[{}, {}]").summary.empty_objects, 2u);
}

TEST(ChromeEvents, VisitorErrorsPropagate) {
  struct Thrower : ChromeEventVisitor {
    void OnEvent(const ChromeEvent& e) override { throw TraceFormatError("visitor says no"); }
  } thrower;
  const std::string json = "[{\"ph\": \"X\"}]";
  EXPECT_THROW_WITH(DecodeChromeTrace(json.data(), json.data() + json.size(), thrower),
                    TraceFormatError, "visitor says no");
}

TEST(ChromeEvents, ReleaseBehindIsToldTheProgress) {
  std::string json = "[";
  for (int i = 0; i < 1000; ++i)
    json += std::string(i ? "," : "") + "{\"ph\": \"X\", \"ts\": " + std::to_string(i) + "}";
  json += "]";
  size_t released = 0;
  tracecore::ReleaseBehind release(
      json.data(), [&](const char* from, const char* to) { released += to - from; }, 1000);
  DecodeOptions options;
  options.release = &release;
  Recorder r;
  DecodeChromeTrace(json.data(), json.data() + json.size(), r, options);
  EXPECT_GT(released, json.size() - 1100);
  EXPECT_LE(released, json.size());
}

TEST(ChromeDetect, ByContent) {
  EXPECT_TRUE(LooksLikeChromeJson("{\"traceEvents\": ["));
  EXPECT_TRUE(LooksLikeChromeJson("\xEF\xBB\xBF  {\"displayTimeUnit\":\"ns\",\"metadata\":{"));
  EXPECT_TRUE(LooksLikeChromeJson(
      " {\n    \"schemaVersion\": 1,\n    \"deviceProperties\": [\n {\"id\": 0, \"na"));
  EXPECT_TRUE(
      LooksLikeChromeJson("{\"schemaVersion\": 1, \"distributedInfo\": {\"rank\": 0}, \"x\""));
  EXPECT_TRUE(LooksLikeChromeJson("{\"otherData\": {\"a\": [1, 2]}, \"traceEvents\": []}"));
  EXPECT_TRUE(LooksLikeChromeJson("[\n{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1"));
  EXPECT_TRUE(LooksLikeChromeJson(
      "[{\"args\": {\"name\": \"/host:CPU\"}, \"name\": \"process_name\", \"ph\": \"M"));
  EXPECT_FALSE(LooksLikeChromeJson(
      "[{\"args\": {\"name\": \"/host:CPU\"}, \"name\": \"process_na"));  // cut short
  EXPECT_FALSE(LooksLikeChromeJson("{\"schemaVersion\": 1, \"other\": 2}"));
  EXPECT_FALSE(LooksLikeChromeJson("{\"memoryProfilePerAllocator\": {}, \"numHosts\": 1}"));
  EXPECT_FALSE(LooksLikeChromeJson("[1, 2, 3]"));
  EXPECT_FALSE(LooksLikeChromeJson("[]"));
  EXPECT_FALSE(LooksLikeChromeJson("[{\"name\": \"x\"}]"));
  EXPECT_FALSE(LooksLikeChromeJson("dev_stats {\n  device: \"/cpu:0\"\n}"));
  EXPECT_FALSE(LooksLikeChromeJson(std::string_view("\x0a\x05/cpu:0", 8)));
  EXPECT_FALSE(LooksLikeChromeJson(""));
  EXPECT_FALSE(LooksLikeChromeJson("{"));
}
