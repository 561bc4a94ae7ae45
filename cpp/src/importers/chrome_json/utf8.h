// UTF-8 checks for the JSON reader: the length of one well-formed sequence (Unicode's table of
// well-formed byte sequences: no overlong forms, no surrogates, nothing past U+10FFFF), the
// length of the maximal ill-formed subpart that one U+FFFD replaces (the substitution Python's
// bytes.decode(errors="replace") makes), and encoding a code point.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tracecore::json::utf8 {

// The U+FFFD replacement character.
inline constexpr char kReplacement[] = "\xEF\xBF\xBD";

// The sequence starting at p (a byte >= 0x80, p < end): returns its length (2..4) when it is
// well formed; otherwise 0, and *bad is the length (1..3) of its maximal subpart: the longest
// prefix that could start a well-formed sequence, which is replaced as one unit.
inline int Sequence(const uint8_t* p, const uint8_t* end, int* bad) {
  const uint8_t b0 = p[0];
  int need;
  uint8_t lo = 0x80, hi = 0xBF;  // range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 2;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;  // U+D800..DFFF are surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 3;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    *bad = 1;
    return 0;
  }
  const ptrdiff_t room = end - p - 1;
  for (int i = 1; i <= need; ++i) {
    if (i > room) {
      *bad = i;
      return 0;
    }
    const uint8_t b = p[i];
    const bool ok = i == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
    if (!ok) {
      *bad = i;
      return 0;
    }
  }
  return need + 1;
}

// Writes code point cp (< 0x110000, not a surrogate) as UTF-8 at out; returns the bytes written.
inline int Encode(uint32_t cp, char* out) {
  if (cp < 0x80) {
    out[0] = static_cast<char>(cp);
    return 1;
  }
  if (cp < 0x800) {
    out[0] = static_cast<char>(0xC0 | (cp >> 6));
    out[1] = static_cast<char>(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = static_cast<char>(0xE0 | (cp >> 12));
    out[1] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out[2] = static_cast<char>(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = static_cast<char>(0xF0 | (cp >> 18));
  out[1] = static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
  out[2] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
  out[3] = static_cast<char>(0x80 | (cp & 0x3F));
  return 4;
}

}  // namespace tracecore::json::utf8
