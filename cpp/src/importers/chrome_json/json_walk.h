// Walks one whole JSON value with a JsonReader and reports it as a stream of tokens to a
// handler, iteratively (an explicit bit stack, bounded by the reader's depth limit): no
// recursion driven by the input. Used where a whole document is wanted generically (the
// Python binding's json_loads, tests, the fuzz target).
//
// Handler: BeginObject(), Key(std::string_view), EndObject(), BeginArray(), EndArray(),
// Scalar(const Value&) (strings, numbers, true, false, null). Views passed to Key and Scalar
// are valid during the call only (the walk resets the reader's scratch room after each).
#pragma once

#include <cstdint>
#include <string_view>

#include "importers/chrome_json/json_reader.h"

namespace tracecore::json {

template <class Handler>
void WalkValue(JsonReader& reader, Handler& handler) {
  uint64_t objects[JsonReader::kMaxDepthLimit / 64 + 1];  // bit set: that level is an object
  uint32_t depth = 0;
  for (;;) {
    // A value starts here.
    const ValueKind kind = reader.Peek();
    if (kind == ValueKind::kObject || kind == ValueKind::kArray) {
      const bool object = kind == ValueKind::kObject;
      if (object) {
        reader.EnterObject();  // enforces the depth limit before the stack grows
        handler.BeginObject();
      } else {
        reader.EnterArray();
        handler.BeginArray();
      }
      const uint64_t bit = uint64_t{1} << (depth & 63);
      objects[depth >> 6] = object ? (objects[depth >> 6] | bit) : (objects[depth >> 6] & ~bit);
      ++depth;
    } else {
      handler.Scalar(reader.ReadValue());
      reader.ResetScratch();
    }
    // The next value's slot, closing the containers that end first.
    for (;;) {
      if (depth == 0) return;
      const uint32_t top = depth - 1;
      if ((objects[top >> 6] >> (top & 63)) & 1) {
        std::string_view key;
        if (reader.NextMember(&key)) {
          handler.Key(key);
          reader.ResetScratch();
          break;
        }
        handler.EndObject();
      } else {
        if (reader.NextElement()) break;
        handler.EndArray();
      }
      --depth;
    }
  }
}

}  // namespace tracecore::json
