// One Chrome trace event as the decoder hands it to a visitor, and the visitor interface.
//
// Every view (strings, args, raw JSON text) points into the input or the reader's scratch
// room and is valid only during the OnEvent / OnTopLevel call that receives it: copy or intern
// what you keep. The decoder allocates nothing per event (the args array and the scratch room
// are reused).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "importers/chrome_json/json_value.h"

namespace tracecore::chrome_json {

// pid, tid, id and bind_id: traces write them as integers or as strings.
struct IdField {
  enum class Kind : uint8_t { kAbsent, kInt, kString };
  Kind kind = Kind::kAbsent;
  int64_t number = 0;     // kInt
  std::string_view text;  // kString (decoded)

  bool present() const { return kind != Kind::kAbsent; }
};

// One entry of an event's "args" object. Keys are unique: a key written twice keeps its first
// place and its last value, as Python's dict does.
struct Arg {
  std::string_view key;
  json::Value value;  // typed scalar, or a nested object / list as its raw JSON text
};

struct ChromeEvent {
  // Which optional fields the event carried (a field written as null counts as absent).
  enum Field : uint32_t {
    kPh = 1u << 0,
    kName = 1u << 1,
    kCat = 1u << 2,
    kTs = 1u << 3,
    kDur = 1u << 4,
    kTts = 1u << 5,
    kTdur = 1u << 6,
    kScope = 1u << 7,
    kBindingPoint = 1u << 8,
    kArgs = 1u << 9,
    kId2Local = 1u << 10,   // the id came from "id2": {"local": ...}
    kId2Global = 1u << 11,  // the id came from "id2": {"global": ...}
  };

  uint32_t fields = 0;
  char phase = 0;       // ph's first byte ('X', 'B', 'E', 'i', 'C', 'M', 's', ...), 0 if none
  std::string_view ph;  // the whole "ph" string
  std::string_view name;
  std::string_view cat;
  std::string_view scope;  // "s": instant scope ("t", "p", "g")
  std::string_view bp;     // "bp": flow binding point ("e")
  IdField pid;
  IdField tid;
  IdField id;       // "id", or the local / global id of "id2"
  IdField bind_id;  // "bind_id"
  // Microsecond decimals as exact nanoseconds (json::ParseDecimalScaled, scale 3: digits
  // past the nanosecond are rounded half to even). A number, or a string holding one.
  int64_t ts_ns = 0;
  int64_t dur_ns = 0;
  int64_t tts_ns = 0;   // "tts": thread clock
  int64_t tdur_ns = 0;  // "tdur"
  const Arg* args = nullptr;
  size_t num_args = 0;
  uint64_t offset = 0;  // byte offset of the event's '{' (json::LineColumn gives its line)

  bool has(Field f) const { return (fields & f) != 0; }

  // Every field back to absent (member by member: cheaper than assigning a new event).
  void Reset() {
    fields = 0;
    phase = 0;
    ph = name = cat = scope = bp = std::string_view();
    pid = tid = id = bind_id = IdField();
    ts_ns = dur_ns = tts_ns = tdur_ns = 0;
    args = nullptr;
    num_args = 0;
  }
};

class ChromeEventVisitor {
 public:
  virtual ~ChromeEventVisitor() = default;
  // Each top-level key other than traceEvents (the object form only), in file order:
  // displayTimeUnit, schemaVersion, deviceProperties, distributedInfo, baseTimeNanoseconds,
  // traceName, metadata, ... Containers come as raw JSON text.
  virtual void OnTopLevel(std::string_view key, const json::Value& value) {}
  // Each element of traceEvents (or of the bare array) that is a non-empty object.
  virtual void OnEvent(const ChromeEvent& event) = 0;
};

}  // namespace tracecore::chrome_json
