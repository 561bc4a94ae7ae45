// One JSON value as the reader hands it out: scalars typed, containers as their raw text.
#pragma once

#include <cstdint>
#include <string_view>

#include "importers/chrome_json/json_numbers.h"

namespace tracecore::json {

enum class ValueKind : uint8_t { kObject, kArray, kString, kNumber, kTrue, kFalse, kNull };

struct Value {
  ValueKind kind = ValueKind::kNull;
  // kNumber: an integer literal (no fraction, no exponent) within int64, held in int_value.
  // Integer literals outside int64 are numbers with is_int false: AsDouble gives the nearest
  // double (what float() of Python's integer gives).
  bool is_int = false;
  int64_t int_value = 0;
  // kString: the decoded string (valid UTF-8); kNumber: the literal's text; kObject / kArray:
  // the value's raw JSON text as written; kTrue / kFalse / kNull: the literal. A view into the
  // input or the reader's scratch room, valid until the reader's next ResetScratch.
  std::string_view text;

  bool is_number() const { return kind == ValueKind::kNumber; }
  bool is_string() const { return kind == ValueKind::kString; }
  // kNumber only.
  double AsDouble() const { return ParseDouble(text); }
};

}  // namespace tracecore::json
