// A scanner over protobuf text format: whitespace and comments, field names, and every scalar
// literal the grammar allows. It never reads past `end` (the input is not NUL-terminated) and
// reports errors with the line and column of the offending byte.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "core/error.h"
#include "core/swar.h"

namespace tracecore {

// Character classes of the text format, one table lookup per byte.
enum : uint8_t {
  kCharSpace = 1,
  kCharIdentStart = 2,
  kCharDigit = 4,
  kCharScalar = 8,
  kCharSkip = 16,  // starts something SkipWhitespace skips: whitespace or a '#' comment
  kCharSeparator = 32,  // ';' or ',' (after a field)
};

constexpr std::array<uint8_t, 256> MakeTextCharClass() {
  std::array<uint8_t, 256> t{};
  for (const char c : {' ', '\n', '\t', '\r', '\f', '\v'}) t[static_cast<uint8_t>(c)] |= kCharSpace | kCharSkip;
  t['#'] |= kCharSkip;
  t[';'] |= kCharSeparator;
  t[','] |= kCharSeparator;
  for (int c = 'a'; c <= 'z'; ++c) t[c] |= kCharIdentStart | kCharScalar;
  for (int c = 'A'; c <= 'Z'; ++c) t[c] |= kCharIdentStart | kCharScalar;
  t['_'] |= kCharIdentStart | kCharScalar;
  for (int c = '0'; c <= '9'; ++c) t[c] |= kCharDigit | kCharScalar;
  for (const char c : {'.', '+', '-'}) t[static_cast<uint8_t>(c)] |= kCharScalar;
  return t;
}
inline constexpr std::array<uint8_t, 256> kTextCharClass = MakeTextCharClass();

class TextCursor {
 public:
  TextCursor(const char* begin, const char* end) : begin_(begin), p_(begin), end_(end) {}

  const char* pos() const { return p_; }
  void set_pos(const char* p) { p_ = p; }
  const char* begin() const { return begin_; }
  const char* end() const { return end_; }
  bool at_end() const { return p_ >= end_; }
  char peek() const { return p_ < end_ ? *p_ : '\0'; }

  __attribute__((always_inline)) void SkipWhitespace() {
    if (p_ < end_ && !(kTextCharClass[static_cast<uint8_t>(*p_)] & kCharSkip)) return;
    SkipWhitespaceSlow();
  }

  // After a field's value: whitespace, an optional ';' or ',', whitespace.
  __attribute__((always_inline)) void EndField() {
    // The common layout first: a newline and indentation, then the next field or the
    // closing brace.
    if (SkipNewlineIndent(kCharSkip | kCharSeparator)) return;
    SkipWhitespace();
    if (p_ < end_ && (*p_ == ';' || *p_ == ',')) {
      ++p_;
      SkipWhitespace();
    }
  }
  // Whitespace, with the common layout after a message's opening brace or a value (a newline
  // and indentation) inline.
  __attribute__((always_inline)) void SkipWhitespaceNewlineFirst() {
    if (!SkipNewlineIndent(kCharSkip)) SkipWhitespace();
  }
  // Before a string value: whitespace, the common layout (the one space after "name:") inline.
  __attribute__((always_inline)) void SkipWhitespaceBeforeValue() {
    if (end_ - p_ >= 2 && p_[0] == ' ' && !(kTextCharClass[static_cast<uint8_t>(p_[1])] & kCharSkip)) {
      ++p_;
      return;
    }
    SkipWhitespace();
  }

  // A newline and up to 15 spaces of indentation followed by a character of none of the
  // classes `stop`: consumes them and returns true; else consumes nothing.
  __attribute__((always_inline)) bool SkipNewlineIndent(uint8_t stop) {
    if (end_ - p_ < 18 || *p_ != '\n') return false;
    const uint64_t x = swar::Load(p_ + 1) ^ (swar::kOnes * ' ');  // zero bytes: spaces
    const uint64_t y = swar::Load(p_ + 9) ^ (swar::kOnes * ' ');
    const int n = x != 0 ? __builtin_ctzll(x) >> 3 : y != 0 ? 8 + (__builtin_ctzll(y) >> 3) : 16;
    const char* q = p_ + 1 + n;
    if (n == 16 || (kTextCharClass[static_cast<uint8_t>(*q)] & stop)) return false;
    p_ = q;
    return true;
  }

  // The first min(N - 1, 8) characters of `name`, little-endian: a constant for a literal.
  template <size_t N>
  __attribute__((always_inline)) static constexpr uint64_t LowBytes(const char (&name)[N]) {
    uint64_t v = 0;
    for (size_t i = 0; i < N - 1 && i < 8; ++i) v |= uint64_t{static_cast<uint8_t>(name[i])} << (8 * i);
    return v;
  }

  // Whether the identifier starting at `p` is exactly `name` (a literal of identifier
  // characters shorter than kNameSpan). The caller guarantees kNameSpan readable bytes at `p`.
  static constexpr ptrdiff_t kNameSpan = 64;
  template <size_t N>
  __attribute__((always_inline)) static bool NameAt(const char* p, const char (&name)[N]) {
    constexpr size_t n = N - 1;
    static_assert(n > 0 && n + 8 < static_cast<size_t>(kNameSpan), "name too long");
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if constexpr (n < 8) {
      // The name's bytes as one constant. (A memcpy of n < 8 bytes into a zeroed uint64_t
      // compiled to partial stores on the stack and one 8-byte reload, which cannot be
      // forwarded from them: a stall of a dozen cycles at each short name tried.)
      if ((swar::Load(p) & ((uint64_t{1} << (8 * n)) - 1)) != LowBytes(name)) return false;
    } else {
      for (size_t i = 0; i + 8 <= n; i += 8) {
        if (swar::Load(p + i) != swar::Load(name + i)) return false;
      }
      if constexpr (n % 8 != 0) {
        if (swar::Load(p + n - 8) != swar::Load(name + n - 8)) return false;
      }
    }
#else
    if (std::memcmp(p, name, n) != 0) return false;
#endif
    return !IsIdentChar(p[n]);
  }

  bool TryConsume(char c) {
    SkipWhitespace();
    if (p_ < end_ && *p_ == c) {
      ++p_;
      return true;
    }
    return false;
  }

  // A field name: an identifier, or a bracketed extension / Any type name ("[a.b/c]").
  std::string_view FieldName();

  // After a scalar field's name: the ':' that protobuf requires.
  __attribute__((always_inline)) void ExpectColon(std::string_view field) {
    if (p_ < end_ && *p_ == ':') {
      ++p_;
      return;
    }
    ExpectColonSlow(field);
  }
  // After a message field's name: '{' or '<' (after whitespace). Returns the closing char.
  __attribute__((always_inline)) char OpenMessage(std::string_view field) {
    if (p_ < end_ && *p_ == '{') {
      ++p_;
      return '}';
    }
    return OpenMessageSlow(field);
  }
  // After a message field's name: skips the space of " {" (the common layout: no ':', no
  // list) and returns true, or returns false consuming nothing.
  bool SkipSpaceBeforeBrace() {
    if (end_ - p_ >= 2 && p_[0] == ' ' && p_[1] == '{') {
      ++p_;
      return true;
    }
    return false;
  }
  // Consumes an optional ';' or ',' after a field.
  void SkipFieldSeparator() {
    SkipWhitespace();
    if (p_ < end_ && (*p_ == ';' || *p_ == ',')) ++p_;
  }

  // Scalars. Each skips leading whitespace and fails with a located message on bad input.
  __attribute__((always_inline)) int64_t Int64(std::string_view field) {
    uint64_t v;
    bool negative;
    if (FastDecimal(true, &negative, &v)) return negative ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
    return Int64Slow(field);
  }
  __attribute__((always_inline)) uint64_t UInt64(std::string_view field) {
    uint64_t v;
    bool negative;
    if (FastDecimal(false, &negative, &v)) return v;
    return UInt64Slow(field);
  }
  int32_t Int32(std::string_view field) {
    uint64_t v;
    bool negative;
    const char* at = p_;
    if (FastDecimal(true, &negative, &v)) {
      if (v <= 0x7FFFFFFF) {
        return negative ? static_cast<int32_t>(0 - static_cast<int32_t>(v)) : static_cast<int32_t>(v);
      }
      p_ = at;  // out of range (or INT32_MIN): the slow path decides
    }
    return Int32Slow(field);
  }
  uint32_t UInt32(std::string_view field) {
    uint64_t v;
    bool negative;
    const char* at = p_;
    if (FastDecimal(false, &negative, &v)) {
      if (v <= 0xFFFFFFFF) return static_cast<uint32_t>(v);
      p_ = at;  // out of range: the slow path reports it
    }
    return UInt32Slow(field);
  }
  bool Bool(std::string_view field);
  // An enum: a name resolved by `lookup`, or an integer.
  template <class Lookup>
  int32_t Enum(std::string_view field, Lookup&& lookup) {
    SkipWhitespace();
    const char* at = p_;
    if (p_ < end_ && (IsIdentStart(*p_))) {
      std::string_view name = Identifier();
      int32_t value;
      if (!lookup(name, &value)) {
        Fail(at, "unknown enum value '" + std::string(name) + "' for field '" +
                     std::string(field) + "'");
      }
      return value;
    }
    return Int32(field);
  }
  // A string value: one or more adjacent quoted literals. Returns a view of the input when the
  // literal needs no unescaping, else of `scratch`.
  std::string_view String(std::string_view field, std::string* scratch);

  // Skips one field's value (after its name): a scalar, a list or a nested message, checking
  // the text format's grammar as protobuf does (field names, colons, list commas), at most 100
  // messages deep. Used for fields tracecore does not know.
  void SkipValue(std::string_view field);

  // A repeated field: calls `element()` for a single value, or once per element of a
  // "[a, b, ...]" list. `element` parses the value itself.
  template <class Element>
  void Repeated(Element&& element) {
    SkipWhitespace();
    if (p_ < end_ && *p_ == '[') {
      ++p_;
      if (TryConsume(']')) return;
      for (;;) {
        element();
        SkipWhitespace();
        if (p_ < end_ && *p_ == ',') {
          ++p_;
          continue;
        }
        if (p_ < end_ && *p_ == ']') {
          ++p_;
          return;
        }
        Fail(p_, "expected ',' or ']' in a list");
      }
    }
    element();
  }

  [[noreturn]] void Fail(const char* at, const std::string& what) const;
  // Describes the token at `at` for error messages ("'abc'", "end of input").
  std::string Describe(const char* at) const;

  static bool IsIdentStart(char c) {
    return kTextCharClass[static_cast<uint8_t>(c)] & kCharIdentStart;
  }
  static bool IsIdentChar(char c) {
    return kTextCharClass[static_cast<uint8_t>(c)] & (kCharIdentStart | kCharDigit);
  }

 private:
  void SkipFieldValue(std::string_view field, int depth);
  void SkipMessage(std::string_view field, int depth);
  void SkipList(std::string_view field, int depth);
  void SkipWhitespaceSlow();
  void ExpectColonSlow(std::string_view field);
  char OpenMessageSlow(std::string_view field);
  int64_t Int64Slow(std::string_view field);
  uint64_t UInt64Slow(std::string_view field);
  int32_t Int32Slow(std::string_view field);
  uint32_t UInt32Slow(std::string_view field);

  // The common case of an integer value: an optional single space, an optional '-' (when
  // `allow_negative`), then 1 to 16 decimal digits without a leading zero (or a lone "0"),
  // not followed by another scalar character. Consumes it and returns true, or consumes
  // nothing and returns false (the slow path then parses or reports it).
  __attribute__((always_inline)) bool FastDecimal(bool allow_negative, bool* negative, uint64_t* out) {
    if (end_ - p_ < 32) return false;
    const char* q = p_;
    if (*q == ' ') ++q;
    *negative = false;
    if (allow_negative && *q == '-') {
      *negative = true;
      ++q;
    }
    const uint64_t x = swar::Load(q);
    const int n = swar::LeadingDigits(x);
    if (n == 0) return false;
    if (n < 8) {
      if ((*q == '0' && n > 1) || (kTextCharClass[static_cast<uint8_t>(q[n])] & kCharScalar)) return false;
      *out = n == 1 ? static_cast<uint64_t>(*q - '0') : swar::FirstDigits(x, n);
      p_ = q + n;
      return true;
    }
    if (*q == '0') return false;
    const uint64_t y = swar::Load(q + 8);
    const int m = swar::LeadingDigits(y);
    if (kTextCharClass[static_cast<uint8_t>(q[8 + m])] & kCharScalar) return false;
    static constexpr uint64_t kPow10[9] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000,
                                           100000000};
    const uint64_t hi = swar::EightDigits(x);
    *out = m == 0 ? hi : hi * kPow10[m] + swar::FirstDigits(y, m);
    p_ = q + 8 + m;
    return true;
  }

  std::string_view Identifier();
  // Parses an integer literal (decimal, 0x hex, 0-prefixed octal, optional '-').
  // Returns the magnitude and sign; fails when it does not fit 64 bits.
  void Integer(std::string_view field, bool* negative, uint64_t* magnitude);
  void SkipScalar(std::string_view field);
  void SkipStringLiteral();
  void AppendUnescaped(const char* from, const char* to, std::string* out);

  const char* begin_;
  const char* p_;
  const char* end_;
};

}  // namespace tracecore
