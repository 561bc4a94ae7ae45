#include "importers/stepstats/text/text_cursor.h"

#include <array>
#include <limits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace tracecore {

namespace {

constexpr int kMaxSkipDepth = 100;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
bool IsScalarTokenChar(char c) { return kTextCharClass[static_cast<uint8_t>(c)] & kCharScalar; }

// The first of `quote`, '\\' and '\n' in [p, end), 16 bytes at a time; `end` when there is
// none. The common string literal has no escape and no newline: this finds its closing quote
// in one pass, where the general path takes three.
const char* FindQuoteOrSpecial(const char* p, const char* end, char quote) {
#if defined(__SSE2__)
  const __m128i q = _mm_set1_epi8(quote);
  const __m128i bs = _mm_set1_epi8('\\');
  const __m128i nl = _mm_set1_epi8('\n');
  for (; end - p >= 16; p += 16) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, q), _mm_cmpeq_epi8(x, bs)),
                                     _mm_cmpeq_epi8(x, nl));
    const int mask = _mm_movemask_epi8(hit);
    if (mask != 0) return p + __builtin_ctz(static_cast<unsigned>(mask));
  }
#endif
  for (; p < end; ++p) {
    if (*p == quote || *p == '\\' || *p == '\n') return p;
  }
  return end;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace

void TextCursor::Fail(const char* at, const std::string& what) const {
  if (at < begin_) at = begin_;
  if (at > end_) at = end_;
  uint64_t line = 1;
  const char* line_start = begin_;
  const char* scan = begin_;
  while (scan < at) {
    const void* nl = std::memchr(scan, '\n', static_cast<size_t>(at - scan));
    if (nl == nullptr) break;
    ++line;
    scan = static_cast<const char*>(nl) + 1;
    line_start = scan;
  }
  throw TraceFormatError::AtText(line, static_cast<uint64_t>(at - line_start) + 1, what);
}

std::string TextCursor::Describe(const char* at) const {
  if (at >= end_) return "end of input";
  const char* stop = at;
  while (stop < end_ && stop - at < 24 && *stop != '\n' && *stop != ' ') ++stop;
  if (stop == at) stop = at + 1;
  std::string token;
  for (const char* q = at; q < stop; ++q) {
    const unsigned char c = static_cast<unsigned char>(*q);
    if (c >= 0x20 && c < 0x7F) {
      token.push_back(static_cast<char>(c));
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      token += buf;
    }
  }
  return "'" + token + "'";
}

void TextCursor::SkipWhitespaceSlow() {
  if (end_ - p_ >= 18) {
    if (*p_ == '\n') {
      // A newline and up to 15 spaces of indentation before the next token: the end of
      // almost every field.
      const uint64_t x = swar::Load(p_ + 1) ^ (swar::kOnes * ' ');  // zero bytes: spaces
      int n;
      if (x != 0) {
        n = __builtin_ctzll(x) >> 3;
      } else {
        const uint64_t y = swar::Load(p_ + 9) ^ (swar::kOnes * ' ');
        n = y != 0 ? 8 + (__builtin_ctzll(y) >> 3) : 16;
      }
      const char* q = p_ + 1 + n;
      if (n < 16 && !(kTextCharClass[static_cast<uint8_t>(*q)] & kCharSkip)) {
        p_ = q;
        return;
      }
    } else if (*p_ == ' ' && !(kTextCharClass[static_cast<uint8_t>(p_[1])] & kCharSkip)) {
      // The single space after "name:".
      ++p_;
      return;
    }
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

std::string_view TextCursor::Identifier() {
  const char* start = p_;
  // Field names are lower case with underscores: scan those eight bytes at a time.
  while (end_ - p_ >= 8) {
    const uint64_t x = swar::Load(p_);
    const int n = swar::FirstClear(swar::BytesInRange(x, 'a', 'z') | swar::BytesEqual(x, '_'));
    p_ += n;
    if (n < 8) break;
  }
  while (p_ < end_ && IsIdentChar(*p_)) ++p_;
  return std::string_view(start, static_cast<size_t>(p_ - start));
}

std::string_view TextCursor::FieldName() {
  SkipWhitespace();
  const char* start = p_;
  if (p_ < end_ && IsIdentStart(*p_)) return Identifier();
  if (p_ < end_ && *p_ == '[') {
    const void* close = std::memchr(p_, ']', static_cast<size_t>(end_ - p_));
    if (close == nullptr) Fail(start, "unterminated extension name: expected ']'");
    p_ = static_cast<const char*>(close) + 1;
    return std::string_view(start, static_cast<size_t>(p_ - start));
  }
  Fail(start, "expected a field name, got " + Describe(start));
}

void TextCursor::ExpectColonSlow(std::string_view field) {
  SkipWhitespace();
  if (p_ < end_ && *p_ == ':') {
    ++p_;
    return;
  }
  Fail(p_, "expected ':' after field '" + std::string(field) + "', got " + Describe(p_));
}

char TextCursor::OpenMessageSlow(std::string_view field) {
  SkipWhitespace();
  if (p_ < end_) {
    if (*p_ == '{') {
      ++p_;
      return '}';
    }
    if (*p_ == '<') {
      ++p_;
      return '>';
    }
  }
  Fail(p_, "expected '{' or '<' to open message field '" + std::string(field) + "', got " +
               Describe(p_));
}

void TextCursor::Integer(std::string_view field, bool* negative, uint64_t* magnitude) {
  SkipWhitespace();
  const char* at = p_;
  *negative = false;
  if (p_ < end_ && *p_ == '-') {
    *negative = true;
    ++p_;
  }
  if (p_ >= end_ || !IsDigit(*p_)) {
    Fail(at, "expected an integer for field '" + std::string(field) + "', got " + Describe(at));
  }
  uint64_t v = 0;
  bool overflow = false;
  if (*p_ != '0') {
    // Plain decimal: up to 19 digits cannot overflow uint64. Timestamps have 16.
    const char* digits = p_;
    if (end_ - p_ >= 8) {
      const uint64_t x = swar::Load(p_);
      const int n = swar::LeadingDigits(x);
      v = swar::FirstDigits(x, n);
      p_ += n;
      if (n == 8 && end_ - p_ >= 8) {
        const uint64_t y = swar::Load(p_);
        const int m = swar::LeadingDigits(y);
        if (m > 0) {
          static constexpr uint64_t kPow10[9] = {1, 10, 100, 1000, 10000, 100000, 1000000,
                                                 10000000, 100000000};
          v = v * kPow10[m] + swar::FirstDigits(y, m);
          p_ += m;
        }
      }
    }
    while (p_ < end_ && p_ - digits < 19 && IsDigit(*p_)) v = v * 10 + static_cast<uint64_t>(*p_++ - '0');
    while (p_ < end_ && IsDigit(*p_)) {
      const uint64_t d = static_cast<uint64_t>(*p_ - '0');
      if (v > (std::numeric_limits<uint64_t>::max() - d) / 10) overflow = true;
      v = v * 10 + d;
      ++p_;
    }
  } else if (*p_ == '0' && p_ + 1 < end_ && (p_[1] == 'x' || p_[1] == 'X')) {
    p_ += 2;
    const char* digits = p_;
    int h;
    while (p_ < end_ && (h = HexValue(*p_)) >= 0) {
      if (v > (std::numeric_limits<uint64_t>::max() >> 4)) overflow = true;
      v = (v << 4) | static_cast<uint64_t>(h);
      ++p_;
    }
    if (p_ == digits) Fail(at, "expected hex digits after '0x' in field '" + std::string(field) + "'");
  } else if (*p_ == '0' && p_ + 1 < end_ && IsDigit(p_[1])) {
    ++p_;
    while (p_ < end_ && IsDigit(*p_)) {
      if (*p_ > '7') Fail(at, "invalid octal integer for field '" + std::string(field) + "'");
      if (v > (std::numeric_limits<uint64_t>::max() >> 3)) overflow = true;
      v = (v << 3) | static_cast<uint64_t>(*p_ - '0');
      ++p_;
    }
  } else {
    while (p_ < end_ && IsDigit(*p_)) {
      const uint64_t d = static_cast<uint64_t>(*p_ - '0');
      if (v > (std::numeric_limits<uint64_t>::max() - d) / 10) overflow = true;
      v = v * 10 + d;
      ++p_;
    }
  }
  if (p_ < end_ && IsScalarTokenChar(*p_)) {
    Fail(at, "expected an integer for field '" + std::string(field) + "', got " + Describe(at));
  }
  if (overflow) Fail(at, "integer out of range for field '" + std::string(field) + "'");
  *magnitude = v;
}

int64_t TextCursor::Int64Slow(std::string_view field) {
  const char* at = p_;
  bool negative;
  uint64_t m;
  Integer(field, &negative, &m);
  if (negative) {
    if (m > (uint64_t{1} << 63)) Fail(at, "integer out of int64 range for field '" + std::string(field) + "'");
    return static_cast<int64_t>(0 - m);
  }
  if (m > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    Fail(at, "integer out of int64 range for field '" + std::string(field) + "'");
  }
  return static_cast<int64_t>(m);
}

uint64_t TextCursor::UInt64Slow(std::string_view field) {
  const char* at = p_;
  bool negative;
  uint64_t m;
  Integer(field, &negative, &m);
  if (negative && m != 0) Fail(at, "negative value for unsigned field '" + std::string(field) + "'");
  return m;
}

int32_t TextCursor::Int32Slow(std::string_view field) {
  const char* at = p_;
  const int64_t v = Int64(field);
  if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
    Fail(at, "integer out of int32 range for field '" + std::string(field) + "'");
  }
  return static_cast<int32_t>(v);
}

uint32_t TextCursor::UInt32Slow(std::string_view field) {
  const char* at = p_;
  const uint64_t v = UInt64(field);
  if (v > std::numeric_limits<uint32_t>::max()) {
    Fail(at, "integer out of uint32 range for field '" + std::string(field) + "'");
  }
  return static_cast<uint32_t>(v);
}

bool TextCursor::Bool(std::string_view field) {
  SkipWhitespace();
  const char* at = p_;
  const char* q = p_;
  while (q < end_ && IsScalarTokenChar(*q)) ++q;
  const std::string_view token(at, static_cast<size_t>(q - at));
  if (token == "true" || token == "True" || token == "t" || token == "1") {
    p_ = q;
    return true;
  }
  if (token == "false" || token == "False" || token == "f" || token == "0") {
    p_ = q;
    return false;
  }
  Fail(at, "expected a boolean for field '" + std::string(field) + "', got " + Describe(at));
}

std::string_view TextCursor::String(std::string_view field, std::string* scratch) {
  SkipWhitespace();
  const char* at = p_;
  std::string_view first;
  int literals = 0;
  bool in_scratch = false;
  while (p_ < end_ && (*p_ == '"' || *p_ == '\'')) {
    const char quote = *p_;
    const char* start = p_ + 1;
    const char* close = FindQuoteOrSpecial(start, end_, quote);
    bool escaped = false;
    const char* scan = start;
    // The common literal: its closing quote comes before any backslash or newline. Anything
    // else takes the general path (escapes, an error's exact message).
    const bool plain = close < end_ && *close == quote;
    while (!plain) {
      const void* q = std::memchr(scan, quote, static_cast<size_t>(end_ - scan));
      if (q == nullptr) Fail(p_, "unterminated string literal");
      close = static_cast<const char*>(q);
      // A quote preceded by an odd number of backslashes is escaped.
      const char* b = close;
      while (b > start && b[-1] == '\\') --b;
      if (((close - b) & 1) == 0) break;
      scan = close + 1;
    }
    const size_t len = static_cast<size_t>(close - start);
    if (!plain && std::memchr(start, '\\', len) != nullptr) escaped = true;
    if (!plain && std::memchr(start, '\n', len) != nullptr) {
      Fail(static_cast<const char*>(std::memchr(start, '\n', len)),
           "newline inside a string literal");
    }
    if (literals == 0 && !escaped) {
      first = std::string_view(start, len);
    } else {
      if (!in_scratch) {
        scratch->assign(first.data(), first.size());
        in_scratch = true;
      }
      if (escaped) {
        AppendUnescaped(start, close, scratch);
      } else {
        scratch->append(start, len);
      }
    }
    ++literals;
    p_ = close + 1;
    SkipWhitespaceNewlineFirst();  // for an adjacent literal ("a" "b" is "ab")
  }
  if (literals == 0) {
    Fail(at, "expected a string for field '" + std::string(field) + "', got " + Describe(at));
  }
  return in_scratch ? std::string_view(*scratch) : first;
}

void TextCursor::AppendUnescaped(const char* from, const char* to, std::string* out) {
  const char* s = from;
  while (s < to) {
    const char* bs = static_cast<const char*>(std::memchr(s, '\\', static_cast<size_t>(to - s)));
    if (bs == nullptr) {
      out->append(s, static_cast<size_t>(to - s));
      return;
    }
    out->append(s, static_cast<size_t>(bs - s));
    s = bs + 1;
    if (s >= to) Fail(bs, "incomplete escape sequence");
    const char c = *s++;
    switch (c) {
      case 'n': out->push_back('\n'); break;
      case 'r': out->push_back('\r'); break;
      case 't': out->push_back('\t'); break;
      case 'a': out->push_back('\a'); break;
      case 'b': out->push_back('\b'); break;
      case 'f': out->push_back('\f'); break;
      case 'v': out->push_back('\v'); break;
      case '\\': out->push_back('\\'); break;
      case '\'': out->push_back('\''); break;
      case '"': out->push_back('"'); break;
      case '?': out->push_back('?'); break;
      case 'x': case 'X': {
        int value = 0, n = 0, h;
        while (n < 2 && s < to && (h = HexValue(*s)) >= 0) {
          value = value * 16 + h;
          ++s;
          ++n;
        }
        if (n == 0) Fail(bs, "expected hex digits after '\\x'");
        out->push_back(static_cast<char>(value));
        break;
      }
      case 'u': case 'U': {
        const int digits = c == 'u' ? 4 : 8;
        uint32_t cp = 0;
        for (int i = 0; i < digits; ++i) {
          const int h = s < to ? HexValue(*s) : -1;
          if (h < 0) Fail(bs, std::string("expected ") + std::to_string(digits) + " hex digits after '\\" + c + "'");
          cp = cp * 16 + static_cast<uint32_t>(h);
          ++s;
        }
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) Fail(bs, "invalid unicode escape");
        AppendUtf8(cp, out);
        break;
      }
      default:
        if (c >= '0' && c <= '7') {
          int value = c - '0', n = 1;
          while (n < 3 && s < to && *s >= '0' && *s <= '7') {
            value = value * 8 + (*s - '0');
            ++s;
            ++n;
          }
          if (value > 255) Fail(bs, "octal escape out of range");
          out->push_back(static_cast<char>(value));
        } else {
          Fail(bs, std::string("invalid escape sequence '\\") + c + "'");
        }
    }
  }
}

void TextCursor::SkipStringLiteral() {
  const char quote = *p_;
  const char* start = p_;
  ++p_;
  while (p_ < end_ && *p_ != quote) {
    if (*p_ == '\\') ++p_;
    else if (*p_ == '\n') Fail(p_, "newline inside a string literal");
    ++p_;
  }
  if (p_ >= end_) Fail(start, "unterminated string literal");
  ++p_;
}

void TextCursor::SkipScalar(std::string_view field) {
  SkipWhitespace();
  const char* at = p_;
  if (p_ < end_ && (*p_ == '"' || *p_ == '\'')) {
    while (p_ < end_ && (*p_ == '"' || *p_ == '\'')) {
      SkipStringLiteral();
      SkipWhitespace();
    }
    return;
  }
  while (p_ < end_ && IsScalarTokenChar(*p_)) ++p_;
  if (p_ == at) {
    Fail(at, "expected a value for field '" + std::string(field) + "', got " + Describe(at));
  }
}

void TextCursor::SkipValue(std::string_view field) { SkipFieldValue(field, 0); }

// The grammar of protobuf's text format, checked but not kept: what follows a field name is
// ": scalar", ": [list]", or a message with an optional colon. Recursion is bounded by
// kMaxSkipDepth nested messages.
void TextCursor::SkipFieldValue(std::string_view field, int depth) {
  SkipWhitespace();
  const bool colon = p_ < end_ && *p_ == ':';
  if (colon) ++p_;
  SkipWhitespace();
  const char c = peek();
  if (c == '{' || c == '<') {
    SkipMessage(field, depth);
  } else if (c == '[') {
    SkipList(field, depth);
  } else if (!colon) {
    Fail(p_, "expected ':' or '{' after field '" + std::string(field) + "', got " + Describe(p_));
  } else {
    SkipScalar(field);
  }
}

void TextCursor::SkipMessage(std::string_view field, int depth) {
  if (depth == kMaxSkipDepth) Fail(p_, "nesting deeper than 100 levels");
  const char* open_at = p_;
  const char closer = *p_ == '{' ? '}' : '>';
  ++p_;
  for (;;) {
    SkipWhitespace();
    if (p_ >= end_) {
      Fail(open_at, "unbalanced '" + std::string(1, *open_at) + "': input ends inside field '" +
                        std::string(field) + "'");
    }
    if (*p_ == closer) {
      ++p_;
      return;
    }
    if (*p_ == '}' || *p_ == '>') Fail(p_, std::string("expected '") + closer + "', got '" + *p_ + "'");
    const std::string_view name = FieldName();
    SkipFieldValue(name, depth + 1);
    SkipFieldSeparator();
  }
}

void TextCursor::SkipList(std::string_view field, int depth) {
  const char* open_at = p_;
  ++p_;
  SkipWhitespace();
  if (peek() == ']') {
    ++p_;
    return;
  }
  for (;;) {
    SkipWhitespace();
    const char c = peek();
    if (c == '{' || c == '<') {
      SkipMessage(field, depth);
    } else {
      SkipScalar(field);
    }
    SkipWhitespace();
    if (p_ >= end_) {
      Fail(open_at, "unbalanced '[': input ends inside field '" + std::string(field) + "'");
    }
    if (*p_ == ']') {
      ++p_;
      return;
    }
    if (*p_ != ',') {
      Fail(p_, "expected ',' or ']' in the list of field '" + std::string(field) + "', got " +
                   Describe(p_));
    }
    ++p_;
  }
}

}  // namespace tracecore
