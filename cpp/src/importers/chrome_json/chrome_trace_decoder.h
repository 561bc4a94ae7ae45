// Walks a Chrome trace event JSON document (TensorFlow's timeline.py, XProf / TensorFlow 2
// *.trace.json.gz, JAX trace.json.gz and perfetto_trace.json.gz, PyTorch Kineto
// *.pt.trace.json) and hands each event to a ChromeEventVisitor. Independent of any table.
//
// Accepted documents:
//   * an object with a "traceEvents" array, beside other keys (handed to OnTopLevel); a
//     second "traceEvents" key is an error (its events could not be taken back), an object
//     without one is an error (not a trace);
//   * a bare array of events (the Trace Event Format's array form; its closing ']' is
//     required here).
// Events:
//   * an element that is an empty object `{}` is skipped (XProf ends its array with one);
//     any other element that is not an object is an error;
//   * known keys with a value of the wrong type are errors naming the key (ts: a number or a
//     string holding one; pid, tid, id, bind_id: an integer or a string; ph, name, cat, s, bp:
//     a string; args: an object; id2: an object). null counts as absent. Unknown keys are
//     checked and skipped. A key written twice keeps its last value.
// All errors are TraceFormatError with line and column (json_reader.h).
#pragma once

#include <cstdint>
#include <string_view>

#include "importers/chrome_json/chrome_event.h"
#include "importers/chrome_json/json_reader.h"
#include "io/release_behind.h"

namespace tracecore::chrome_json {

struct DecodeOptions {
  json::ReaderOptions reader;
  // When set, told the input position after each event, so a caller parsing a mapped file
  // can drop the pages behind it.
  ReleaseBehind* release = nullptr;
};

struct DecodeSummary {
  bool bare_array = false;
  uint64_t events = 0;         // handed to OnEvent
  uint64_t empty_objects = 0;  // `{}` elements skipped
};

DecodeSummary DecodeChromeTrace(const char* begin, const char* end, ChromeEventVisitor& visitor,
                                const DecodeOptions& options = {});

}  // namespace tracecore::chrome_json
