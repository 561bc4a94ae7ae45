#include "importers/chrome_json/json_reader.h"

#include <algorithm>
#include <cstdio>

#include "importers/chrome_json/utf8.h"
#include "importers/chrome_json/wide_scan.h"

namespace tracecore::json {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  const char l = static_cast<char>(c | 0x20);
  if (l >= 'a' && l <= 'f') return l - 'a' + 10;
  return -1;
}

// Four hex digits at p (p + 4 <= end checked by the caller), or -1.
int32_t Hex4(const char* p) {
  int32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    const int h = HexValue(p[i]);
    if (h < 0) return -1;
    v = v * 16 + h;
  }
  return v;
}

std::string Describe(const char* at, const char* end) {
  if (at >= end) return "end of input";
  const auto c = static_cast<unsigned char>(*at);
  char buf[24];
  if (c >= 0x21 && c < 0x7F) {
    std::snprintf(buf, sizeof buf, "'%c'", c);
  } else {
    std::snprintf(buf, sizeof buf, "byte 0x%02X", c);
  }
  return buf;
}

std::string ControlMessage(unsigned char c) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "unescaped control character 0x%02X in a string", c);
  return buf;
}

bool StartsWith(const char* p, const char* end, std::string_view word) {
  return static_cast<size_t>(end - p) >= word.size() &&
         std::memcmp(p, word.data(), word.size()) == 0;
}

}  // namespace

void LineColumn(const char* begin, const char* at, uint64_t* line, uint64_t* column) {
  uint64_t newlines = 0;
  const char* last = nullptr;  // the last '\n' before at
  for (const char* p = begin; p < at;) {
    const void* nl = std::memchr(p, '\n', static_cast<size_t>(at - p));
    if (nl == nullptr) break;
    last = static_cast<const char*>(nl);
    ++newlines;
    p = last + 1;
  }
  *line = newlines + 1;
  *column = static_cast<uint64_t>(at - (last == nullptr ? begin : last + 1)) + 1;
}

TraceFormatError ErrorAt(const char* begin, const char* at, const std::string& what) {
  uint64_t line, column;
  LineColumn(begin, at, &line, &column);
  return TraceFormatError::AtText(line, column, what);
}

JsonReader::JsonReader(const char* begin, const char* end, const ReaderOptions& options)
    : begin_(begin),
      end_(end),
      last_end_(begin),
      block_(begin),
      next_chunk_(begin),
      stage1_(options.stage1 != nullptr ? options.stage1 : BestStage1()),
      replace_invalid_(options.replace_invalid),
      max_depth_(std::min(options.max_depth, kMaxDepthLimit)) {
  if (StartsWith(next_chunk_, end_, "\xEF\xBB\xBF")) next_chunk_ += 3;
  const size_t blocks = (std::min(kChunkBytes, static_cast<size_t>(end_ - next_chunk_)) + 63) / 64;
  masks_.reset(new uint64_t[blocks == 0 ? 1 : blocks]);
  Advance();
}

// Indexes the next chunk (64-byte blocks; the input's last partial block through a copy padded
// with spaces, so no load reads past the input). False at the end of the input.
bool JsonReader::Refill() {
  if (next_chunk_ >= end_) return false;
  const char* base = next_chunk_;
  const size_t n = std::min(kChunkBytes, static_cast<size_t>(end_ - base));
  const size_t full = n / 64;
  stage1_(base, full, &carry_, masks_.get());
  size_t blocks = full;
  if (n % 64 != 0) {
    char padded[64];
    std::memset(padded, ' ', sizeof padded);
    std::memcpy(padded, base + 64 * full, n % 64);
    stage1_(padded, 1, &carry_, masks_.get() + full);
    ++blocks;
  }
  next_chunk_ = base + n;
  block_ = base - 64;  // NextBlock steps to the first block
  mask_ = masks_.get();
  mask_end_ = mask_ + blocks;
  return true;
}

// The next block with a token; at the end of the input, bits_ stays 0 and tok_ is &kEof.
void JsonReader::NextBlock() {
  for (;;) {
    while (mask_ < mask_end_) {
      block_ += 64;
      bits_ = *mask_++;
      if (bits_ != 0) return;
    }
    if (!Refill()) {
      tok_ = &kEof;
      return;
    }
  }
}

std::string JsonReader::Describe(const char* at) const {
  return json::Describe(at == &kEof ? end_ : at, end_);
}

void JsonReader::Fail(const char* at, const std::string& what) const {
  throw ErrorAt(begin_, at == &kEof ? end_ : at, what);
}

void JsonReader::FailExpected(const char* what) const {
  Fail(tok_, std::string("expected ") + what + ", found " + Describe(tok_));
}

void JsonReader::FailValue() const {
  if (at_end()) Fail(tok_, "unexpected end of input, expected a value");
  if (StartsWith(tok_, end_, "NaN") || StartsWith(tok_, end_, "Infinity")) {
    Fail(tok_, "NaN and Infinity are not JSON numbers");
  }
  FailExpected("a value");
}

void JsonReader::FailNumber(const char* at) const {
  // -Infinity: reported at its '-'.
  if (StartsWith(at, end_, "Infinity")) Fail(at - 1, "NaN and Infinity are not JSON numbers");
  Fail(at, "malformed number: expected a digit, found " + Describe(at));
}

// At 't', 'f' or 'n'.
void JsonReader::ScanLiteral() {
  const char c = *tok_;
  const std::string_view word = c == 't' ? "true" : c == 'f' ? "false" : "null";
  if (!StartsWith(tok_, end_, word))
    Fail(tok_, "expected a value (true, false or null?), found " + Describe(tok_));
  EndScalar(tok_ + word.size(), "a literal");
}

// A string whose closing quote is not the next token: it holds escapes, control characters or
// non-ASCII bytes (or is unterminated). Checked and decoded byte by byte; then the index moves
// past its closing quote.
std::string_view JsonReader::DirtyString(const char* open) {
  const std::string_view s = StringSlow(open + 1, open + 1);
  while (!at_end() && tok_ < string_end_) Advance();
  last_end_ = string_end_;
  return s;
}

// From q on (the bytes [s, q) are plain ASCII): UTF-8 sequences are checked in place and the
// string stays a view; an escape or a byte to replace switches to DecodeString.
std::string_view JsonReader::StringSlow(const char* s, const char* q) {
  for (;;) {
    while (end_ - q >= wide::kWidth) {
      const wide::Mask m = wide::StringStops(q);
      if (m != 0) {
        q += wide::FirstStop(m);
        break;
      }
      q += wide::kWidth;
    }
    if (q >= end_) Fail(s - 1, "unterminated string");
    const auto c = static_cast<unsigned char>(*q);
    if (c == '"') {
      string_end_ = q + 1;
      return std::string_view(s, static_cast<size_t>(q - s));
    }
    if (c == '\\') return DecodeString(s, q);
    if (c >= 0x80) {
      int bad;
      const int n = utf8::Sequence(reinterpret_cast<const uint8_t*>(q),
                                   reinterpret_cast<const uint8_t*>(end_), &bad);
      if (n > 0) {
        q += n;
        continue;
      }
      if (replace_invalid_) return DecodeString(s, q);
      Fail(q, "invalid UTF-8 in a string (" + Describe(q) + ")");
    }
    if (c < 0x20) {
      if (replace_invalid_) return DecodeString(s, q);
      Fail(q, ControlMessage(c));
    }
    ++q;
  }
}

// The string from s (its first byte) is rewritten into scratch room: [s, q) copied as is, then
// escapes decoded and bad bytes replaced (or reported).
std::string_view JsonReader::DecodeString(const char* s, const char* q) {
  // Where it ends: the first quote not escaped.
  const char* e = q;
  for (;;) {
    if (e >= end_) Fail(s - 1, "unterminated string");
    if (*e == '"') break;
    if (*e == '\\' && ++e >= end_) Fail(s - 1, "unterminated string");
    ++e;
  }
  // One input byte becomes at most three (a byte replaced by U+FFFD).
  char* const out = scratch_.Reserve(3 * static_cast<size_t>(e - s) + 4);
  char* o = out;
  std::memcpy(o, s, static_cast<size_t>(q - s));
  o += q - s;
  const char* r = q;
  auto replacement = [&]() {
    std::memcpy(o, utf8::kReplacement, 3);
    o += 3;
    replaced_ = true;
  };
  while (r < e) {
    const auto c = static_cast<unsigned char>(*r);
    if (c == '\\') {
      const char esc = r[1];  // before e: the scan above stepped over escaped pairs
      switch (esc) {
        case '"':
          *o++ = '"';
          r += 2;
          continue;
        case '\\':
          *o++ = '\\';
          r += 2;
          continue;
        case '/':
          *o++ = '/';
          r += 2;
          continue;
        case 'b':
          *o++ = '\b';
          r += 2;
          continue;
        case 'f':
          *o++ = '\f';
          r += 2;
          continue;
        case 'n':
          *o++ = '\n';
          r += 2;
          continue;
        case 'r':
          *o++ = '\r';
          r += 2;
          continue;
        case 't':
          *o++ = '\t';
          r += 2;
          continue;
        case 'u':
          break;
        default:
          Fail(r, "invalid escape '\\" + std::string(1, esc) + "' in a string");
      }
      const int32_t u = e - r >= 6 ? Hex4(r + 2) : -1;
      if (u < 0) Fail(r, "invalid \\u escape: expected four hex digits");
      const char* escape = r;
      r += 6;
      uint32_t cp = static_cast<uint32_t>(u);
      if (cp >= 0xD800 && cp <= 0xDFFF) {
        int32_t low = -1;
        if (cp <= 0xDBFF && e - r >= 6 && r[0] == '\\' && r[1] == 'u') low = Hex4(r + 2);
        if (low >= 0xDC00 && low <= 0xDFFF) {
          cp = 0x10000 + ((cp - 0xD800) << 10) + (static_cast<uint32_t>(low) - 0xDC00);
          r += 6;
        } else if (replace_invalid_) {
          replacement();
          continue;
        } else {
          Fail(escape,
               "lone surrogate \\u" + std::string(escape + 2, 4) + " in a string (not UTF-8)");
        }
      }
      o += utf8::Encode(cp, o);
      continue;
    }
    if (c >= 0x80) {
      int bad;
      const int n = utf8::Sequence(reinterpret_cast<const uint8_t*>(r),
                                   reinterpret_cast<const uint8_t*>(e), &bad);
      if (n > 0) {
        std::memcpy(o, r, static_cast<size_t>(n));
        o += n;
        r += n;
        continue;
      }
      if (!replace_invalid_) Fail(r, "invalid UTF-8 in a string (" + Describe(r) + ")");
      replacement();
      r += bad;
      continue;
    }
    if (c < 0x20) {
      if (!replace_invalid_) Fail(r, ControlMessage(c));
      replacement();
      ++r;
      continue;
    }
    *o++ = static_cast<char>(c);
    ++r;
  }
  scratch_.Commit(static_cast<size_t>(o - out));
  string_end_ = e + 1;
  return std::string_view(out, static_cast<size_t>(o - out));
}

// A copy of checked JSON text with the bytes a replacing read rewrote (inside strings: bad
// UTF-8, raw control characters) replaced, so the text is valid UTF-8 and still JSON.
std::string_view JsonReader::FixRaw(std::string_view raw) {
  char* const out = scratch_.Reserve(3 * raw.size() + 4);
  char* o = out;
  const auto* r = reinterpret_cast<const uint8_t*>(raw.data());
  const auto* e = r + raw.size();
  bool in_string = false;
  while (r < e) {
    const uint8_t c = *r;
    if (!in_string) {
      in_string = c == '"';
      *o++ = static_cast<char>(*r++);
    } else if (c == '\\') {
      *o++ = static_cast<char>(*r++);
      if (r < e) *o++ = static_cast<char>(*r++);  // escapes are ASCII in checked text
    } else if (c == '"') {
      in_string = false;
      *o++ = static_cast<char>(*r++);
    } else if (c < 0x20) {
      std::memcpy(o, utf8::kReplacement, 3);
      o += 3;
      ++r;
    } else if (c >= 0x80) {
      int bad;
      const int n = utf8::Sequence(r, e, &bad);
      if (n > 0) {
        std::memcpy(o, r, static_cast<size_t>(n));
        o += n;
        r += n;
      } else {
        std::memcpy(o, utf8::kReplacement, 3);
        o += 3;
        r += bad;
      }
    } else {
      *o++ = static_cast<char>(*r++);
    }
  }
  scratch_.Commit(static_cast<size_t>(o - out));
  return std::string_view(out, static_cast<size_t>(o - out));
}

int64_t JsonReader::DecimalSlow(int scale, const char* what) {
  const char* at = tok_;
  if (*at != '-' && !IsDigit(*at)) FailExpected((std::string(what) + ": a number").c_str());
  Value v;
  ScanNumber(&v);
  int64_t out = 0;
  switch (ParseDecimalScaled(v.text, scale, &out)) {
    case DecimalStatus::kOk:
      return out;
    case DecimalStatus::kNotANumber:
      Fail(at, std::string(what) + ": malformed number");
    case DecimalStatus::kOutOfRange:
      break;
  }
  Fail(at, std::string(what) + ": " + std::string(v.text) + " times 10^" + std::to_string(scale) +
               " does not fit a 64-bit integer");
}

// Literals, objects and arrays (and the error for anything else).
void JsonReader::ReadOtherValue(Value* out) {
  const char* s = tok_;
  out->kind = Peek();
  out->is_int = false;
  out->int_value = 0;
  if (out->kind == ValueKind::kObject || out->kind == ValueKind::kArray) {
    out->text = SkipValue();
    return;
  }
  ScanLiteral();
  out->text = std::string_view(s, static_cast<size_t>(last_end_ - s));
}

std::string_view JsonReader::SkipValue() {
  const char* const start = tok_;
  const bool replaced_before = replaced_;
  replaced_ = false;
  const uint32_t base = depth_;
  for (;;) {
    // At a value.
    const char c = *tok_;
    if (c == '{' || c == '[') {
      Open(c == '{');
      after_open_ = false;
      if (*tok_ == (c == '{' ? '}' : ']')) {
        Close();
      } else {
        if (c == '{') ReadKeyAndColon();
        continue;
      }
    } else if (c == '"') {
      ScanString();
    } else if (c == '-' || IsDigit(c)) {
      Value ignored;
      ScanNumber(&ignored);
    } else if (c == 't' || c == 'f' || c == 'n') {
      ScanLiteral();
    } else {
      FailValue();
    }
    // After a value: a separator and the next value, or the ends of containers.
    for (;;) {
      if (depth_ == base) {
        std::string_view raw(start, static_cast<size_t>(last_end_ - start));
        if (replaced_) raw = FixRaw(raw);
        replaced_ = replaced_ || replaced_before;
        return raw;
      }
      const bool object = TopIsObject();
      if (*tok_ == ',') {
        Advance();
        if (*tok_ == (object ? '}' : ']')) {
          Fail(tok_, object ? "trailing comma before '}'" : "trailing comma before ']'");
        }
        if (object) ReadKeyAndColon();
        break;
      }
      if (*tok_ == (object ? '}' : ']')) {
        Close();
        continue;
      }
      FailExpected(object ? "',' or '}' after an object member"
                          : "',' or ']' after an array element");
    }
  }
}

}  // namespace tracecore::json
