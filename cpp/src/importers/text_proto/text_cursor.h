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
#include "importers/text_proto/swar.h"

namespace tracecore {

// Character classes of the text format, one table lookup per byte.
enum : uint8_t { kCharSpace = 1, kCharIdentStart = 2, kCharDigit = 4, kCharScalar = 8 };

constexpr std::array<uint8_t, 256> MakeTextCharClass() {
  std::array<uint8_t, 256> t{};
  for (const char c : {' ', '\n', '\t', '\r', '\f', '\v'}) t[static_cast<uint8_t>(c)] |= kCharSpace;
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

  void SkipWhitespace() {
    if (p_ < end_ && !(kTextCharClass[static_cast<uint8_t>(*p_)] & kCharSpace) && *p_ != '#') return;
    // The single space after "name:" is the most common run of all.
    if (end_ - p_ >= 2 && *p_ == ' ' && !(kTextCharClass[static_cast<uint8_t>(p_[1])] & kCharSpace) &&
        p_[1] != '#') {
      ++p_;
      return;
    }
    // Newlines and indentation, eight bytes at a time; anything else byte by byte.
    while (end_ - p_ >= 8) {
      const uint64_t x = swar::Load(p_);
      const int n = swar::FirstClear(swar::BytesEqual(x, ' ') | swar::BytesEqual(x, '\n'));
      p_ += n;
      if (n < 8) break;
    }
    while (p_ < end_) {
      const char c = *p_;
      if (kTextCharClass[static_cast<uint8_t>(c)] & kCharSpace) {
        ++p_;
      } else if (c == '#') {
        const void* nl = std::memchr(p_, '\n', static_cast<size_t>(end_ - p_));
        p_ = nl ? static_cast<const char*>(nl) + 1 : end_;
      } else {
        break;
      }
    }
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
  void ExpectColon(std::string_view field);
  // After a message field's name: an optional ':' then '{' or '<'. Returns the closing char.
  char OpenMessage(std::string_view field);
  // Consumes an optional ';' or ',' after a field.
  void SkipFieldSeparator() {
    SkipWhitespace();
    if (p_ < end_ && (*p_ == ';' || *p_ == ',')) ++p_;
  }

  // Scalars. Each skips leading whitespace and fails with a located message on bad input.
  int64_t Int64(std::string_view field);
  uint64_t UInt64(std::string_view field);
  int32_t Int32(std::string_view field);
  uint32_t UInt32(std::string_view field);
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

  // Skips one field's value (after its name): a scalar, a list or a nested message, using the
  // balanced structure only. Used for fields tracecore does not know.
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
