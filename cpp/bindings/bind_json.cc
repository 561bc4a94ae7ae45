// Binds the Chrome trace JSON reader for tests: a whole document as Python objects
// (json_loads, compared with the json module), the fixed-point decimal reader, the event
// decoder's visits and the content detection. Private helpers of the test suite, not an API.
#include <pybind11/pybind11.h>

#include <string>
#include <string_view>
#include <vector>

#include "bindings.h"
#include "importers/chrome_json/chrome_detect.h"
#include "importers/chrome_json/chrome_trace_decoder.h"
#include "importers/chrome_json/json_numbers.h"
#include "importers/chrome_json/json_reader.h"
#include "importers/chrome_json/json_walk.h"
#include "importers/chrome_json/structural_index.h"

namespace py = pybind11;

namespace tracecore::bindings {
namespace {

py::str Str(std::string_view s) {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "strict");
  if (o == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(o);
}

// A scalar as json.loads gives it; numbers past int64 as the nearest float (the documented
// difference from json, which gives an exact int).
py::object Scalar(const json::Value& v) {
  switch (v.kind) {
    case json::ValueKind::kString:
      return Str(v.text);
    case json::ValueKind::kNumber:
      if (v.is_int) return py::int_(v.int_value);
      return py::float_(v.AsDouble());
    case json::ValueKind::kTrue:
      return py::bool_(true);
    case json::ValueKind::kFalse:
      return py::bool_(false);
    case json::ValueKind::kNull:
      return py::none();
    case json::ValueKind::kObject:
    case json::ValueKind::kArray:
      return Str(v.text);  // raw JSON text (args, top-level containers)
  }
  return py::none();
}

// Builds the Python value of a token stream (json::WalkValue's handler).
class Builder {
 public:
  py::object result;

  void BeginObject() { Open(py::dict()); }
  void BeginArray() { Open(py::list()); }
  void EndObject() { Close(); }
  void EndArray() { Close(); }
  void Key(std::string_view key) { keys_.back() = Str(key); }
  void Scalar(const json::Value& v) { Add(bindings::Scalar(v)); }

 private:
  void Add(py::object value) {
    if (stack_.empty()) {
      result = std::move(value);
    } else if (PyDict_Check(stack_.back().ptr())) {
      if (PyDict_SetItem(stack_.back().ptr(), keys_.back().ptr(), value.ptr()) != 0) {
        throw py::error_already_set();
      }
    } else if (PyList_Append(stack_.back().ptr(), value.ptr()) != 0) {
      throw py::error_already_set();
    }
  }
  void Open(py::object container) {
    Add(container);
    stack_.push_back(std::move(container));
    keys_.emplace_back();
  }
  void Close() {
    stack_.pop_back();
    keys_.pop_back();
  }

  std::vector<py::object> stack_;
  std::vector<py::object> keys_;  // the pending key of each open object
};

json::ReaderOptions Options(const std::string& errors, uint32_t max_depth, const std::string& stage1) {
  json::ReaderOptions options;
  if (errors == "replace") {
    options.replace_invalid = true;
  } else if (errors != "strict") {
    throw py::value_error("errors must be 'strict' or 'replace', not '" + errors + "'");
  }
  options.max_depth = max_depth;
  if (!stage1.empty()) {
    options.stage1 = stage1 == "avx2"       ? json::Avx2Stage1()
                     : stage1 == "ssse3"    ? json::Ssse3Stage1()
                     : stage1 == "sse2"     ? json::Sse2Stage1()
                     : stage1 == "portable" ? json::PortableStage1()
                                            : nullptr;
    if (options.stage1 == nullptr) throw py::value_error("stage-1 '" + stage1 + "' is not available");
  }
  return options;
}

py::object IdObject(const chrome_json::IdField& id) {
  switch (id.kind) {
    case chrome_json::IdField::Kind::kInt:
      return py::int_(id.number);
    case chrome_json::IdField::Kind::kString:
      return Str(id.text);
    case chrome_json::IdField::Kind::kAbsent:
      break;
  }
  return py::none();
}

// Each visit as Python objects: top-level keys as (key, value), events as dicts of the fields
// present.
class EventLister : public chrome_json::ChromeEventVisitor {
 public:
  py::list events;
  py::list top_level;

  void OnTopLevel(std::string_view key, const json::Value& value) override {
    top_level.append(py::make_tuple(Str(key), Scalar(value)));
  }
  void OnEvent(const chrome_json::ChromeEvent& e) override {
    using E = chrome_json::ChromeEvent;
    py::dict d;
    d["offset"] = e.offset;
    if (e.has(E::kPh)) d["ph"] = Str(e.ph);
    if (e.has(E::kName)) d["name"] = Str(e.name);
    if (e.has(E::kCat)) d["cat"] = Str(e.cat);
    if (e.has(E::kScope)) d["s"] = Str(e.scope);
    if (e.has(E::kBindingPoint)) d["bp"] = Str(e.bp);
    if (e.pid.present()) d["pid"] = IdObject(e.pid);
    if (e.tid.present()) d["tid"] = IdObject(e.tid);
    if (e.id.present()) d["id"] = IdObject(e.id);
    if (e.bind_id.present()) d["bind_id"] = IdObject(e.bind_id);
    if (e.has(E::kTs)) d["ts_ns"] = e.ts_ns;
    if (e.has(E::kDur)) d["dur_ns"] = e.dur_ns;
    if (e.has(E::kTts)) d["tts_ns"] = e.tts_ns;
    if (e.has(E::kTdur)) d["tdur_ns"] = e.tdur_ns;
    if (e.has(E::kArgs)) {
      py::list args;  // (key, value) in first-seen order
      for (size_t i = 0; i < e.num_args; ++i) {
        args.append(py::make_tuple(Str(e.args[i].key), Scalar(e.args[i].value)));
      }
      d["args"] = args;
    }
    events.append(d);
  }
};

}  // namespace

void RegisterJson(py::module_& m) {
  m.def(
      "json_loads",
      [](py::bytes data, const std::string& errors, uint32_t max_depth, const std::string& stage1) {
        const std::string_view bytes = data;
        json::JsonReader reader(bytes.data(), bytes.data() + bytes.size(),
                                Options(errors, max_depth, stage1));
        Builder builder;
        json::WalkValue(reader, builder);
        reader.ExpectEnd();
        return builder.result;
      },
      py::arg("data"), py::arg("errors") = "strict", py::arg("max_depth") = 1000,
      py::arg("stage1") = "",
      "Reads one JSON document with the core's reader into Python objects (test helper).");
  m.def(
      "json_decimal_scaled",
      [](const std::string& text, int scale) -> py::object {
        int64_t out = 0;
        switch (json::ParseDecimalScaled(text, scale, &out)) {
          case json::DecimalStatus::kOk:
            return py::int_(out);
          case json::DecimalStatus::kOutOfRange:
            throw py::value_error("out of range");
          case json::DecimalStatus::kNotANumber:
            break;
        }
        throw py::value_error("not a JSON number");
      },
      py::arg("text"), py::arg("scale") = 3,
      "round(text * 10**scale) as an int, ties to even (test helper).");
  m.def(
      "json_parse_double", [](const std::string& text) { return json::ParseDouble(text); },
      py::arg("text"), "The correctly rounded double of a JSON number (test helper).");
  m.def(
      "chrome_json_events",
      [](py::bytes data, const std::string& errors, const std::string& stage1) {
        const std::string_view bytes = data;
        chrome_json::DecodeOptions options;
        options.reader = Options(errors, 1000, stage1);
        EventLister lister;
        const chrome_json::DecodeSummary summary = chrome_json::DecodeChromeTrace(
            bytes.data(), bytes.data() + bytes.size(), lister, options);
        py::dict s;
        s["bare_array"] = summary.bare_array;
        s["events"] = summary.events;
        s["empty_objects"] = summary.empty_objects;
        return py::make_tuple(lister.events, lister.top_level, s);
      },
      py::arg("data"), py::arg("errors") = "strict", py::arg("stage1") = "",
      "The Chrome trace event decoder's visits: (events, top-level keys, summary) (test helper).");
  m.def(
      "looks_like_chrome_json",
      [](py::bytes head) { return chrome_json::LooksLikeChromeJson(std::string_view(head)); },
      py::arg("head"), "Content detection of Chrome trace JSON from its first bytes.");
  m.attr("JSON_STAGE1") = std::string(json::BestStage1Name());
}

}  // namespace tracecore::bindings
