#include "importers/chrome_json/json_numbers.h"

#include <clocale>
#include <cstdlib>
#include <cstring>
#include <string>

#if defined(__GLIBC__) || defined(__APPLE__)
#include <locale.h>
#if defined(__APPLE__)
#include <xlocale.h>
#endif
#define TRACECORE_HAVE_STRTOD_L 1
#endif

namespace tracecore::json {
namespace {

bool IsDigit(char c) { return static_cast<unsigned char>(c - '0') < 10; }

// The parts of a number the grammar check found.
struct Parts {
  bool negative = false;
  std::string_view int_digits;
  std::string_view frac_digits;
  int64_t exponent = 0;  // saturated at +-kExponentCap
};

// Far beyond any exponent that leaves a representable value, small enough that adding the
// digit counts of any input cannot overflow int64.
constexpr int64_t kExponentCap = int64_t{1} << 50;

bool Split(std::string_view text, Parts* parts) {
  const char* p = text.data();
  const char* end = p + text.size();
  if (p < end && *p == '-') {
    parts->negative = true;
    ++p;
  }
  const char* s = p;
  if (p < end && *p == '0') {
    ++p;
  } else {
    while (p < end && IsDigit(*p)) ++p;
  }
  if (p == s) return false;
  parts->int_digits = std::string_view(s, static_cast<size_t>(p - s));
  if (p < end && *p == '.') {
    s = ++p;
    while (p < end && IsDigit(*p)) ++p;
    if (p == s) return false;
    parts->frac_digits = std::string_view(s, static_cast<size_t>(p - s));
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    ++p;
    bool negative = false;
    if (p < end && (*p == '+' || *p == '-')) negative = *p++ == '-';
    s = p;
    int64_t e = 0;
    while (p < end && IsDigit(*p)) {
      if (e < kExponentCap) e = e * 10 + (*p - '0');
      ++p;
    }
    if (p == s) return false;
    if (e > kExponentCap) e = kExponentCap;
    parts->exponent = negative ? -e : e;
  }
  return p == end;
}

// The digits of a number as one sequence: the integer digits, then the fraction digits.
class Digits {
 public:
  explicit Digits(const Parts& p) : a_(p.int_digits), b_(p.frac_digits) {}
  int64_t size() const { return static_cast<int64_t>(a_.size() + b_.size()); }
  int operator[](int64_t i) const {
    const auto n = static_cast<int64_t>(a_.size());
    return (i < n ? a_[i] : b_[i - n]) - '0';
  }

 private:
  std::string_view a_, b_;
};

constexpr double kExactPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                  1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                  1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

double StrtodC(std::string_view text) {
  char small[64];
  std::string big;
  const char* z;
  if (text.size() < sizeof small) {
    std::memcpy(small, text.data(), text.size());
    small[text.size()] = '\0';
    z = small;
  } else {
    big.assign(text);  // a number of 64 digits or more: rare, one copy of its text
    z = big.c_str();
  }
#if defined(TRACECORE_HAVE_STRTOD_L)
  // The C locale, whatever the process set: JSON's decimal point is always '.'.
  static const locale_t c_locale = newlocale(LC_ALL_MASK, "C", static_cast<locale_t>(nullptr));
  if (c_locale != static_cast<locale_t>(nullptr)) return strtod_l(z, nullptr, c_locale);
#endif
  return std::strtod(z, nullptr);
}

}  // namespace

bool IsJsonNumber(std::string_view text) {
  Parts parts;
  return Split(text, &parts);
}

DecimalStatus ParseDecimalScaled(std::string_view text, int scale, int64_t* out) {
  Parts parts;
  if (scale < 0 || scale > kMaxDecimalScale || !Split(text, &parts))
    return DecimalStatus::kNotANumber;
  const Digits digits(parts);
  const int64_t total = digits.size();
  int64_t first = 0;  // first significant digit
  while (first < total && digits[first] == 0) ++first;
  if (first == total) {
    *out = 0;
    return DecimalStatus::kOk;
  }
  const int64_t n = total - first;
  // value = D * 10^k, D the significant digits as an integer.
  const int64_t k = parts.exponent - static_cast<int64_t>(parts.frac_digits.size()) + scale;
  const int64_t keep = n + k;  // digits left of the scaled decimal point
  if (keep > 19) return DecimalStatus::kOutOfRange;
  uint64_t value = 0;
  if (k >= 0) {
    for (int64_t i = first; i < total; ++i) value = value * 10 + static_cast<uint64_t>(digits[i]);
    for (int64_t i = 0; i < k; ++i) {
      if (__builtin_mul_overflow(value, uint64_t{10}, &value)) return DecimalStatus::kOutOfRange;
    }
  } else {
    for (int64_t i = 0; i < keep; ++i)
      value = value * 10 + static_cast<uint64_t>(digits[first + i]);
    // The first dropped digit, and whether any later digit is non-zero.
    const int dropped = keep >= 0 ? digits[first + keep] : 0;
    bool sticky = keep < 0;  // every significant digit lies below the dropped position
    for (int64_t i = first + (keep >= 0 ? keep + 1 : 0); !sticky && i < total; ++i)
      sticky = digits[i] != 0;
    if (dropped > 5 || (dropped == 5 && (sticky || (value & 1) != 0))) ++value;
  }
  const uint64_t limit = parts.negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  if (value > limit) return DecimalStatus::kOutOfRange;
  *out = parts.negative ? static_cast<int64_t>(0 - value) : static_cast<int64_t>(value);
  return DecimalStatus::kOk;
}

double ParseDouble(std::string_view text) {
  Parts parts;
  if (!Split(text, &parts)) return 0.0;
  const Digits digits(parts);
  const int64_t total = digits.size();
  int64_t first = 0;
  while (first < total && digits[first] == 0) ++first;
  if (first == total) return parts.negative ? -0.0 : 0.0;
  if (total - first <= 19) {
    uint64_t mantissa = 0;
    for (int64_t i = first; i < total; ++i)
      mantissa = mantissa * 10 + static_cast<uint64_t>(digits[i]);
    const int64_t e10 = parts.exponent - static_cast<int64_t>(parts.frac_digits.size());
    if (mantissa <= (uint64_t{1} << 53) && e10 >= -22 && e10 <= 22) {
      // Both operands exact, so the one IEEE operation is correctly rounded.
      double d = static_cast<double>(mantissa);
      d = e10 < 0 ? d / kExactPow10[-e10] : d * kExactPow10[e10];
      return parts.negative ? -d : d;
    }
  }
  return StrtodC(text);
}

bool ParseInt64(std::string_view text, int64_t* out) {
  Parts parts;
  if (!Split(text, &parts) || !parts.frac_digits.empty() || text.find_first_of("eE") != text.npos)
    return false;
  const std::string_view d = parts.int_digits;
  if (d.size() > 19) return false;
  uint64_t value = 0;
  for (const char c : d) value = value * 10 + static_cast<uint64_t>(c - '0');
  const uint64_t limit = parts.negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  if (value > limit) return false;
  *out = parts.negative ? static_cast<int64_t>(0 - value) : static_cast<int64_t>(value);
  return true;
}

}  // namespace tracecore::json
