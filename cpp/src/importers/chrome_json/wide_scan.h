// Wide-word scanning for the JSON reader's slow string path (strings with escapes, control or
// non-ASCII bytes): where a string's plain bytes end, sixteen bytes per step with SSE2 (always
// present on x86-64) or eight per step as SWAR elsewhere. A stop mask has one bit per byte
// (SSE2) or the high bit of each byte (SWAR); FirstStop turns it into the first flagged byte.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/swar.h"

namespace tracecore::json::wide {

#if defined(__SSE2__)

constexpr int kWidth = 16;
using Mask = uint32_t;

inline __m128i Load(const char* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }

// Flags the bytes that end a string's plain run: '"', '\\', control characters (< 0x20) and
// bytes of multi-byte UTF-8 (>= 0x80). The signed compare catches the last two at once.
inline Mask StringStops(const char* p) {
  const __m128i v = Load(p);
  const __m128i stops = _mm_or_si128(
      _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))),
      _mm_cmplt_epi8(v, _mm_set1_epi8(0x20)));
  return static_cast<Mask>(_mm_movemask_epi8(stops));
}

inline int FirstStop(Mask m) { return __builtin_ctz(m); }

#else

constexpr int kWidth = 8;
using Mask = uint64_t;

// Bytes below 0x20: the borrow trick may flag bytes after a true one, never before it, so the
// first flagged byte is exact.
inline Mask StringStops(const char* p) {
  const uint64_t x = swar::Load(p);
  const uint64_t control = (x - swar::kOnes * 0x20) & ~x & swar::kHighs;
  return swar::BytesEqual(x, '"') | swar::BytesEqual(x, '\\') | control | (x & swar::kHighs);
}

inline int FirstStop(Mask m) { return __builtin_ctzll(m) >> 3; }

#endif

}  // namespace tracecore::json::wide
