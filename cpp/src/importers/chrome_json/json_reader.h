// A validating pull parser over a byte range (a mapped file): the caller walks the document
// with EnterObject / NextMember, EnterArray / NextElement and the Read* calls, and SkipValue
// steps over a value it does not need (checking it all the same). Nothing is allocated per
// value: plain strings are views into the input; strings with escapes or replaced bytes are
// written into scratch room that lives until ResetScratch.
//
// It walks a structural index (structural_index.h: one bit per token start) built 64 KB of
// input at a time: each step moves from one token to the next without looking at whitespace
// or at the bytes of a plain string; numbers and literals are parsed from their first byte.
//
// What it accepts is RFC 8259 JSON, with these defined outcomes:
//   * Strings: escapes decoded (\uXXXX, surrogate pairs joined). A lone surrogate escape,
//     invalid UTF-8 and raw control characters (< 0x20) are errors, or each becomes U+FFFD
//     when ReaderOptions::replace_invalid is set (errors="replace"); an ill-formed UTF-8
//     sequence is replaced per maximal subpart, as Python's bytes.decode(errors="replace").
//   * Numbers: the JSON grammar only; NaN, Infinity, -Infinity, leading zeros, '+', '.5' are
//     errors. Integers within int64 are exact; integers past int64 are numbers whose double is
//     the nearest one; doubles are correctly rounded (json_numbers.h), 1e400 is inf and
//     1e-400 is 0, as in Python.
//   * Trailing commas are errors. Duplicate keys are handed out as they come (the Chrome event
//     decoder keeps the last, as Python's dict does).
//   * Nesting deeper than ReaderOptions::max_depth (default 1000, at most kMaxDepthLimit) is
//     an error; no recursion is driven by the input.
//   * A UTF-8 byte order mark before the value is skipped (as json.loads does for bytes);
//     anything but whitespace after the value is an error.
// Errors are TraceFormatError::AtText with the 1-based line and column (in bytes) of the
// offending byte; they are computed only when an error is raised.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "core/error.h"
#include "importers/chrome_json/json_value.h"
#include "importers/chrome_json/scratch_arena.h"
#include "importers/chrome_json/structural_index.h"
#include "core/swar.h"

namespace tracecore::json {

struct ReaderOptions {
  bool replace_invalid = false;  // errors="replace": bad bytes become U+FFFD
  uint32_t max_depth = 1000;     // containers open at once
  Stage1Fn stage1 = nullptr;     // the structural indexer; nullptr: BestStage1() (tests pick)
};

// The line and column (1-based, bytes) of offset `at` in [begin, ...): counted when asked.
void LineColumn(const char* begin, const char* at, uint64_t* line, uint64_t* column);
TraceFormatError ErrorAt(const char* begin, const char* at, const std::string& what);

// Bytes that may follow a number or literal: whitespace, an operator, a quote (the parser
// then rejects the quote where it stands).
constexpr std::array<bool, 256> MakeEndsScalar() {
  std::array<bool, 256> t{};
  for (const char c : {' ', '\t', '\n', '\r', '{', '}', '[', ']', ':', ',', '"'})
    t[static_cast<unsigned char>(c)] = true;
  return t;
}
inline constexpr std::array<bool, 256> kEndsScalar = MakeEndsScalar();

class JsonReader {
 public:
  static constexpr uint32_t kMaxDepthLimit = 4096;
  // Input indexed per stage-1 call.
  static constexpr size_t kChunkBytes = 64 * 1024;

  JsonReader(const char* begin, const char* end, const ReaderOptions& options = {});

  // The kind of the next value; an error at the end of the input or on a byte that starts no
  // value.
  ValueKind Peek() const {
    switch (*tok_) {
      case '{':
        return ValueKind::kObject;
      case '[':
        return ValueKind::kArray;
      case '"':
        return ValueKind::kString;
      case 't':
        return ValueKind::kTrue;
      case 'f':
        return ValueKind::kFalse;
      case 'n':
        return ValueKind::kNull;
      default:
        if (*tok_ == '-' || IsDigit(*tok_)) return ValueKind::kNumber;
    }
    FailValue();
  }

  // Objects: EnterObject, then NextMember until it returns false (it consumed the '}').
  // NextMember leaves the reader at the member's value.
  void EnterObject() {
    if (*tok_ != '{') FailExpected("'{'");
    Open(true);
  }
  bool NextMember(std::string_view* key) {
    if (after_open_) {
      after_open_ = false;
      if (*tok_ == '}') return Close();
    } else if (*tok_ == ',') {
      Advance();
      if (*tok_ == '}') Fail(tok_, "trailing comma before '}'");
    } else if (*tok_ == '}') {
      return Close();
    } else {
      FailExpected("',' or '}' after an object member");
    }
    *key = ReadKeyAndColon();
    return true;
  }

  // Arrays: EnterArray, then NextElement until it returns false (it consumed the ']').
  void EnterArray() {
    if (*tok_ != '[') FailExpected("'['");
    Open(false);
  }
  bool NextElement() {
    if (after_open_) {
      after_open_ = false;
      if (*tok_ == ']') return Close();
      return true;
    }
    if (*tok_ == ',') {
      Advance();
      if (*tok_ == ']') Fail(tok_, "trailing comma before ']'");
      return true;
    }
    if (*tok_ == ']') return Close();
    FailExpected("',' or ']' after an array element");
  }

  // The next value, which must be a string: decoded, valid UTF-8.
  std::string_view ReadString() {
    if (*tok_ != '"') FailExpected("a string");
    return ScanString();
  }

  // The next value, which must be a number: its text, and its int64 value when it is an
  // integer literal within int64 (Value::is_int).
  Value ReadNumber() {
    if (*tok_ != '-' && !IsDigit(*tok_)) FailExpected("a number");
    Value v;
    ScanNumber(&v);
    return v;
  }

  // The next value as an int64: an integer literal within int64, else an error naming `what`.
  int64_t ReadInt64(const char* what) {
    const char* at = tok_;
    if (*at != '-' && !IsDigit(*at)) FailExpected((std::string(what) + ": an integer").c_str());
    Value v;
    ScanNumber(&v);
    if (!v.is_int) Fail(at, std::string(what) + ": expected an integer within int64");
    return v.int_value;
  }

  // The next value, a number, as round(value * 10^scale) (json_numbers.h), exact. `what`
  // names it in errors. Short decimals with at most `scale` fraction digits take a SWAR path.
  int64_t ReadDecimalScaled(int scale, const char* what) {
    const char* const s = tok_;
    // Loads reach at most 26 bytes past s. LeadingDigits < 8 means a non-digit ends the run
    // inside the word, so the whole run was seen.
    if ((*s == '-' || IsDigit(*s)) && end_ - s >= 32 && scale <= 9) {
      const char* q = s;
      const bool negative = *q == '-';
      q += negative;
      int n;
      uint64_t whole;
      bool ok = SwarInteger(q, &n, &whole);
      if (ok && n + scale <= 18) {
        q += n;
        uint64_t frac = 0;
        int nf = 0;
        if (*q == '.') {
          const uint64_t f = swar::Load(q + 1);
          nf = swar::LeadingDigits(f);
          ok = nf > 0 && nf <= scale && nf < 8;
          if (ok) frac = swar::FirstDigits(f, nf);
          q += 1 + nf;
        }
        if (ok && kEndsScalar[static_cast<unsigned char>(*q)]) {
          const uint64_t v = whole * kPow10[scale] + frac * kPow10[scale - nf];
          last_end_ = q;
          Advance();
          return negative ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
        }
      }
    }
    return DecimalSlow(scale, what);
  }

  bool ReadBool() {
    const ValueKind k = Peek();
    if (k != ValueKind::kTrue && k != ValueKind::kFalse) FailExpected("true or false");
    ScanLiteral();
    return k == ValueKind::kTrue;
  }
  void ReadNull() {
    if (Peek() != ValueKind::kNull) FailExpected("null");
    ScanLiteral();
  }

  // Any value, typed: strings decoded, numbers as in ReadNumber, objects and arrays skipped
  // (checked) and given as raw text. Written in place (a Value returned through the stack
  // and copied costs a store-forwarding stall per value).
  void ReadValue(Value* out) {
    const char c = *tok_;
    if (c == '"') {
      out->kind = ValueKind::kString;
      out->is_int = false;
      out->int_value = 0;
      out->text = ScanString();
    } else if (c == '-' || IsDigit(c)) {
      ScanNumber(out);
    } else {
      ReadOtherValue(out);
    }
  }
  Value ReadValue() {
    Value v;
    ReadValue(&v);
    return v;
  }

  // Steps over the next value, checking it; returns its raw text. In errors="replace" mode
  // the text is a copy with bad bytes inside strings replaced, so it is valid UTF-8.
  std::string_view SkipValue();

  // Only whitespace may follow.
  void ExpectEnd() const {
    if (!at_end()) Fail(tok_, "unexpected data after the JSON value");
  }

  // Frees the scratch room: every string view the reader handed out before is invalid after.
  void ResetScratch() { scratch_.Reset(); }

  const char* begin() const { return begin_; }
  const char* end() const { return end_; }
  // Where the next token starts (the end of the input when there is none).
  const char* pos() const { return at_end() ? end_ : tok_; }
  uint32_t depth() const { return depth_; }
  bool at_end() const { return tok_ == &kEof; }

  [[noreturn]] void Fail(const char* at, const std::string& what) const;
  // "expected <what>, found <the next token's first byte>".
  [[noreturn]] void FailExpected(const char* what) const;

 private:
  // Where tok_ points once the input is exhausted: a NUL byte no token starts with.
  inline static const char kEof = '\0';

  static bool IsDigit(char c) { return static_cast<unsigned char>(c - '0') < 10; }
  static constexpr uint64_t kPow10[19] = {1ull,
                                          10ull,
                                          100ull,
                                          1000ull,
                                          10000ull,
                                          100000ull,
                                          1000000ull,
                                          10000000ull,
                                          100000000ull,
                                          1000000000ull,
                                          10000000000ull,
                                          100000000000ull,
                                          1000000000000ull,
                                          10000000000000ull,
                                          100000000000000ull,
                                          1000000000000000ull,
                                          10000000000000000ull,
                                          100000000000000000ull,
                                          1000000000000000000ull};

  // The next token: the lowest set bit of the current block, else the next block with one
  // (indexing the next chunk when this one is used up).
  __attribute__((always_inline)) void Advance() {
    if (bits_ == 0) {
      NextBlock();
      if (bits_ == 0) return;  // the end: tok_ is &kEof
    }
    tok_ = block_ + __builtin_ctzll(bits_);
    bits_ &= bits_ - 1;
  }
  void NextBlock();
  bool Refill();

  void Open(bool object) {
    if (depth_ >= max_depth_)
      Fail(tok_, "nesting deeper than " + std::to_string(max_depth_) + " levels");
    ++depth_;
    const uint64_t bit = uint64_t{1} << (depth_ & 63);
    if (object) {
      stack_[depth_ >> 6] |= bit;
    } else {
      stack_[depth_ >> 6] &= ~bit;
    }
    Advance();
    after_open_ = true;
  }
  bool Close() {
    last_end_ = tok_ + 1;
    Advance();
    --depth_;
    return false;
  }
  bool TopIsObject() const { return (stack_[depth_ >> 6] >> (depth_ & 63)) & 1; }

  // At a '"' (not checked): the string, the reader at the next token. A plain string's closing
  // quote is the next token.
  std::string_view ScanString() {
    const char* open = tok_;
    Advance();
    if (*tok_ == '"') {
      const std::string_view s(open + 1, static_cast<size_t>(tok_ - open - 1));
      last_end_ = tok_ + 1;
      Advance();
      return s;
    }
    return DirtyString(open);
  }

  std::string_view ReadKeyAndColon() {
    if (*tok_ != '"') FailExpected("a string key");
    const std::string_view key = ScanString();
    if (*tok_ != ':') FailExpected("':' after an object key");
    Advance();
    return key;
  }

  // The run of digits at q (16 readable bytes): its length in *n and its value in *value.
  // True when it is a valid integer part of at most 15 digits; false when it is empty, has a
  // leading zero, or has 16 digits or more (the caller then takes its slow path).
  static bool SwarInteger(const char* q, int* n, uint64_t* value) {
    const uint64_t w = swar::Load(q);
    int len = swar::LeadingDigits(w);
    // Branch-free: whether the run is empty or a leading zero depends on the data.
    bool ok = (len > 0) & ((len == 1) | (q[0] != '0'));
    uint64_t v = 0;
    if (len < 8) {
      if (ok) v = swar::FirstDigits(w, len);
    } else {
      const uint64_t w2 = swar::Load(q + 8);
      const int n2 = swar::LeadingDigits(w2);
      ok = ok && n2 < 8;
      if (ok) v = swar::EightDigits(w) * kPow10[n2] + (n2 > 0 ? swar::FirstDigits(w2, n2) : 0);
      len = 8 + n2;
    }
    *n = len;
    *value = v;
    return ok;
  }

  // At the first byte of a number ('-' or a digit: checked by the caller). With room behind
  // the number, digit runs are read eight at a time (SWAR); an exponent, a run of 16 or more
  // digits, or a malformed number takes the byte loop.
  void ScanNumber(Value* v) {
    const char* const s = tok_;
    if (end_ - s >= 40) {
      const char* q = s;
      const bool negative = *q == '-';
      q += negative;
      int n;
      uint64_t magnitude;
      bool ok = SwarInteger(q, &n, &magnitude);
      q += n;
      bool integer = true;
      if (ok && *q == '.') {
        integer = false;
        const int nf = swar::LeadingDigits(swar::Load(q + 1));
        ok = nf > 0 && nf < 8;
        q += 1 + nf;
      }
      if (ok && kEndsScalar[static_cast<unsigned char>(*q)]) {
        last_end_ = q;
        Advance();
        v->kind = ValueKind::kNumber;
        v->text = std::string_view(s, static_cast<size_t>(q - s));
        // At most 15 digits here: always within int64.
        v->is_int = integer;
        v->int_value = integer ? (negative ? -static_cast<int64_t>(magnitude)
                                           : static_cast<int64_t>(magnitude))
                               : 0;
        return;
      }
    }
    ScanNumberSlow(v);
  }
  __attribute__((noinline)) void ScanNumberSlow(Value* v) {
    const char* s = tok_;
    const char* q = s;
    const bool negative = *q == '-';
    q += negative;
    if (q >= end_ || !IsDigit(*q)) FailNumber(q);
    uint64_t magnitude = 0;
    int digits = 0;
    if (*q == '0') {
      ++q;
      digits = 1;
    } else {
      do {
        magnitude = magnitude * 10 + static_cast<uint64_t>(*q - '0');
        ++q;
        ++digits;
      } while (q < end_ && IsDigit(*q));
    }
    bool integer = true;
    if (q < end_ && *q == '.') {
      integer = false;
      ++q;
      if (q >= end_ || !IsDigit(*q)) FailNumber(q);
      do ++q;
      while (q < end_ && IsDigit(*q));
    }
    if (q < end_ && (*q | 0x20) == 'e') {
      integer = false;
      ++q;
      if (q < end_ && (*q == '+' || *q == '-')) ++q;
      if (q >= end_ || !IsDigit(*q)) FailNumber(q);
      do ++q;
      while (q < end_ && IsDigit(*q));
    }
    EndScalar(q, "a number");
    v->kind = ValueKind::kNumber;
    v->text = std::string_view(s, static_cast<size_t>(q - s));
    // Nineteen digits never wrap a uint64; twenty or more may, and never fit.
    const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
    v->is_int = integer && digits <= 19 && magnitude <= limit;
    v->int_value = v->is_int ? (negative ? static_cast<int64_t>(0 - magnitude)
                                         : static_cast<int64_t>(magnitude))
                             : 0;
  }

  // A number or literal ended at q: the next byte must end it, and the next token follows.
  void EndScalar(const char* q, const char* what) {
    if (q < end_ && !kEndsScalar[static_cast<unsigned char>(*q)]) {
      Fail(q, std::string("unexpected ") + Describe(q) + " after " + what);
    }
    last_end_ = q;
    Advance();
  }

  std::string Describe(const char* at) const;
  void ReadOtherValue(Value* out);
  void ScanLiteral();
  std::string_view DirtyString(const char* open);
  std::string_view StringSlow(const char* s, const char* q);
  std::string_view DecodeString(const char* s, const char* q);
  std::string_view FixRaw(std::string_view raw);
  int64_t DecimalSlow(int scale, const char* what);
  [[noreturn]] void FailValue() const;
  [[noreturn]] void FailNumber(const char* at) const;

  const char* begin_;
  const char* end_;
  const char* tok_ = &kEof;           // the next token's first byte
  const char* last_end_;              // one past the last byte of the last token consumed
  const char* string_end_ = nullptr;  // after the closing quote of the last slow string
  // The structural index: token bits not yet visited of the block at block_, then the masks
  // of the chunk's next blocks [mask_, mask_end_).
  uint64_t bits_ = 0;
  const char* block_;
  const uint64_t* mask_ = nullptr;
  const uint64_t* mask_end_ = nullptr;
  const char* next_chunk_;  // where stage 1 goes on
  std::unique_ptr<uint64_t[]> masks_;
  Stage1Fn stage1_;
  Stage1Carry carry_;
  bool replace_invalid_;
  bool after_open_ = false;
  bool replaced_ = false;  // a string was rewritten with U+FFFD since SkipValue last asked
  uint32_t depth_ = 0;
  uint32_t max_depth_;
  uint64_t stack_[kMaxDepthLimit / 64 + 1] = {};  // bit set: that depth is an object
  ScratchArena scratch_;
};

}  // namespace tracecore::json
