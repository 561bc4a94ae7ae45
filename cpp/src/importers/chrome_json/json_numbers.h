// Conversions of JSON number text (RFC 8259: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?).
//
// ParseDecimalScaled reads a decimal as a fixed-point integer: the value times 10^scale, exact,
// never through double. Trace timestamps are microseconds with (Kineto) three fraction digits,
// so scale 3 gives exact nanoseconds. Digits past the scale are rounded to the nearest integer,
// ties to even (what Python's Decimal.quantize does by default): "1.0005" -> 1000 and
// "1.0015" -> 1002 at scale 3, "15.449999999999999" -> 15450 (a double printed with 17
// digits reads back as the nanoseconds it was meant to be). Exponents are applied exactly
// ("1.5e3" -> 1500000). Negative values round symmetrically ("-1.0005" -> -1000).
#pragma once

#include <cstdint>
#include <string_view>

namespace tracecore::json {

enum class DecimalStatus : uint8_t {
  kOk,
  kNotANumber,  // the text is not a JSON number
  kOutOfRange,  // the scaled value does not fit int64
};

// Largest scale ParseDecimalScaled takes (10^18 still fits int64).
constexpr int kMaxDecimalScale = 18;

// True when the whole of `text` is one JSON number.
bool IsJsonNumber(std::string_view text);

// round(text * 10^scale) as int64, scale in [0, kMaxDecimalScale].
DecimalStatus ParseDecimalScaled(std::string_view text, int scale, int64_t* out);

// The double nearest to a JSON number (correctly rounded; the text must be a valid number).
// Short decimals take an exact fast path (at most 19 significant digits, the digits below
// 2^53 and a power of ten up to 22: one correctly rounded multiply or divide); the others go
// through strtod in the C locale on a copy. Past the double range the result is +-inf, below
// it +-0 or a subnormal: what Python's float() and json.loads give.
double ParseDouble(std::string_view text);

// An integer literal (no fraction, no exponent) within int64; false for anything else.
bool ParseInt64(std::string_view text, int64_t* out);

}  // namespace tracecore::json
