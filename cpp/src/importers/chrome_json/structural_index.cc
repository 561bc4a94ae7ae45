#include "importers/chrome_json/structural_index.h"

#include <array>
#include <cstdlib>
#include <string>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define TRACECORE_X86_64 1
#endif

namespace tracecore::json {
namespace {

// One bit per byte of a 64-byte block.
struct BlockMasks {
  uint64_t backslash = 0;
  uint64_t quote = 0;
  uint64_t space = 0;    // ' ', '\t', '\n', '\r'
  uint64_t op = 0;       // { } [ ] : ,
  uint64_t special = 0;  // < 0x20 or >= 0x80
};

// Bytes escaped by a backslash (rare: a loop over the backslashes of the block). A backslash
// escapes the next byte; an escaped backslash escapes nothing.
inline uint64_t Escaped(uint64_t backslash, bool* escape_next) {
  uint64_t escaped = 0;
  uint64_t starters = backslash;
  if (*escape_next) {
    escaped = 1;
    starters &= ~uint64_t{1};
  }
  *escape_next = false;
  while (starters != 0) {
    const int i = __builtin_ctzll(starters);
    starters &= starters - 1;
    if (i == 63) {
      *escape_next = true;
      break;
    }
    escaped |= uint64_t{2} << i;
    starters &= ~(uint64_t{2} << i);
  }
  return escaped;
}

// Bit i = XOR of bits 0..i: 1 from an opening quote up to (not including) its closing quote.
inline uint64_t PrefixXor(uint64_t x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}

// The token bits of one block.
inline __attribute__((always_inline)) uint64_t FinishBlock(const BlockMasks& m, Stage1Carry* c) {
  const uint64_t escaped =
      (m.backslash != 0 || c->escape_next) ? Escaped(m.backslash, &c->escape_next) : 0;
  const uint64_t quote = m.quote & ~escaped;
  const uint64_t in_string = PrefixXor(quote) ^ c->in_string;
  c->in_string = static_cast<uint64_t>(static_cast<int64_t>(in_string) >> 63);
  const uint64_t op = m.op & ~in_string;
  const uint64_t scalar = ~(m.space | m.op | quote | in_string);
  const uint64_t scalar_start = scalar & ~((scalar << 1) | c->scalar_prev);
  c->scalar_prev = scalar >> 63;
  const uint64_t dirty = (m.special | m.backslash) & in_string;
  const uint64_t dirty_start = dirty & ~((dirty << 1) | c->dirty_prev);
  c->dirty_prev = dirty >> 63;
  return op | quote | scalar_start | dirty_start;
}

// ---- portable -------------------------------------------------------------------------------
enum : uint8_t { kSpace = 1, kOp = 2, kQuote = 4, kBackslash = 8, kSpecial = 16 };

constexpr std::array<uint8_t, 256> MakeClasses() {
  std::array<uint8_t, 256> t{};
  for (int c = 0; c < 0x20; ++c) t[c] |= kSpecial;
  for (int c = 0x80; c < 0x100; ++c) t[c] |= kSpecial;
  for (const char c : {' ', '\t', '\n', '\r'}) t[static_cast<uint8_t>(c)] |= kSpace;
  for (const char c : {'{', '}', '[', ']', ':', ','}) t[static_cast<uint8_t>(c)] |= kOp;
  t['"'] |= kQuote;
  t['\\'] |= kBackslash;
  return t;
}
constexpr std::array<uint8_t, 256> kClasses = MakeClasses();

void PortableIndex(const char* p, size_t blocks, Stage1Carry* carry, uint64_t* masks) {
  Stage1Carry c = *carry;
  for (size_t b = 0; b < blocks; ++b, p += 64) {
    BlockMasks m;
    for (int i = 0; i < 64; ++i) {
      const uint8_t k = kClasses[static_cast<uint8_t>(p[i])];
      const uint64_t bit = uint64_t{1} << i;
      if (k & kSpace) m.space |= bit;
      if (k & kOp) m.op |= bit;
      if (k & kQuote) m.quote |= bit;
      if (k & kBackslash) m.backslash |= bit;
      if (k & kSpecial) m.special |= bit;
    }
    masks[b] = FinishBlock(m, &c);
  }
  *carry = c;
}

#if defined(TRACECORE_X86_64)
// Quotes, backslashes and special bytes of sixteen bytes (SSE2 only, shared by the 128-bit
// variants). Signed compare: bytes >= 0x80 are negative, so below 0x20 too.
inline __attribute__((always_inline)) void AddQuotesAndSpecials(__m128i v, int shift,
                                                                BlockMasks* m) {
  const auto bits = [](__m128i x) {
    return static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(x)));
  };
  m->quote |= bits(_mm_cmpeq_epi8(v, _mm_set1_epi8('"'))) << shift;
  m->backslash |= bits(_mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))) << shift;
  m->special |= bits(_mm_cmplt_epi8(v, _mm_set1_epi8(0x20))) << shift;
}

// ---- SSE2 -----------------------------------------------------------------------------------
void Sse2Index(const char* p, size_t blocks, Stage1Carry* carry, uint64_t* masks) {
  Stage1Carry c = *carry;
  for (size_t b = 0; b < blocks; ++b, p += 64) {
    BlockMasks m;
    for (int k = 0; k < 4; ++k) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
      const __m128i space = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(' ')),
                                                      _mm_cmpeq_epi8(v, _mm_set1_epi8('\n'))),
                                         _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\t')),
                                                      _mm_cmpeq_epi8(v, _mm_set1_epi8('\r'))));
      // '[' | 0x20 == '{' and ']' | 0x20 == '}'.
      const __m128i lower = _mm_or_si128(v, _mm_set1_epi8(0x20));
      const __m128i op = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(lower, _mm_set1_epi8('{')),
                                                   _mm_cmpeq_epi8(lower, _mm_set1_epi8('}'))),
                                      _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(':')),
                                                   _mm_cmpeq_epi8(v, _mm_set1_epi8(','))));
      const int shift = 16 * k;
      m.space |= static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(space))) << shift;
      m.op |= static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(op))) << shift;
      AddQuotesAndSpecials(v, shift, &m);
    }
    masks[b] = FinishBlock(m, &c);
  }
  *carry = c;
}

// ---- SSSE3 (+ POPCNT, BMI1) ------------------------------------------------------------------
// The nibble classification of the AVX2 variant below, sixteen bytes at a time: on some CPUs
// (the dev VM among them) 128-bit operations outrun 256-bit ones here.
__attribute__((target("ssse3,popcnt,bmi"))) void Ssse3Index(const char* p, size_t blocks,
                                                            Stage1Carry* carry, uint64_t* masks) {
  const __m128i low_table = _mm_setr_epi8(1, 0, 0, 0, 0, 0, 0, 0, 0, 2, 2 | 8, 16, 4, 2 | 16, 0, 0);
  const __m128i high_table = _mm_setr_epi8(2, 0, 1 | 4, 8, 0, 16, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0);
  const __m128i nibble = _mm_set1_epi8(0x0F);
  const __m128i zero = _mm_setzero_si128();
  Stage1Carry c = *carry;
  for (size_t b = 0; b < blocks; ++b, p += 64) {
    BlockMasks m;
    for (int k = 0; k < 4; ++k) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
      const __m128i cls =
          _mm_and_si128(_mm_shuffle_epi8(low_table, _mm_and_si128(v, nibble)),
                        _mm_shuffle_epi8(high_table, _mm_and_si128(_mm_srli_epi16(v, 4), nibble)));
      const uint32_t not_space = static_cast<uint32_t>(
          _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_and_si128(cls, _mm_set1_epi8(3)), zero)));
      const uint32_t not_op = static_cast<uint32_t>(
          _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_and_si128(cls, _mm_set1_epi8(28)), zero)));
      const int shift = 16 * k;
      m.space |= static_cast<uint64_t>(~not_space & 0xFFFFu) << shift;
      m.op |= static_cast<uint64_t>(~not_op & 0xFFFFu) << shift;
      AddQuotesAndSpecials(v, shift, &m);
    }
    masks[b] = FinishBlock(m, &c);
  }
  *carry = c;
}

// ---- AVX2 -----------------------------------------------------------------------------------
// Classification by nibbles: class = kLow[byte & 15] & kHigh[byte >> 4], with one bit per
// group of bytes that share their nibbles, so that no other byte gets a bit:
//   1: ' ' (0x20)   2: '\t' '\n' '\r' (0x09 0x0A 0x0D)   4: ',' (0x2C)   8: ':' (0x3A)
//   16: '[' ']' '{' '}' (0x5B 0x5D 0x7B 0x7D)
__attribute__((target("avx2,popcnt,bmi"))) void Avx2Index(const char* p, size_t blocks,
                                                          Stage1Carry* carry, uint64_t* masks) {
  const __m256i low_table =
      _mm256_setr_epi8(1, 0, 0, 0, 0, 0, 0, 0, 0, 2, 2 | 8, 16, 4, 2 | 16, 0, 0,  //
                       1, 0, 0, 0, 0, 0, 0, 0, 0, 2, 2 | 8, 16, 4, 2 | 16, 0, 0);
  const __m256i high_table =
      _mm256_setr_epi8(2, 0, 1 | 4, 8, 0, 16, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0,  //
                       2, 0, 1 | 4, 8, 0, 16, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0);
  const __m256i nibble = _mm256_set1_epi8(0x0F);
  const __m256i zero = _mm256_setzero_si256();
  Stage1Carry c = *carry;
  for (size_t b = 0; b < blocks; ++b, p += 64) {
    BlockMasks m;
    for (int k = 0; k < 2; ++k) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32 * k));
      const __m256i lo = _mm256_and_si256(v, nibble);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble);
      const __m256i cls =
          _mm256_and_si256(_mm256_shuffle_epi8(low_table, lo), _mm256_shuffle_epi8(high_table, hi));
      const uint32_t not_space = static_cast<uint32_t>(_mm256_movemask_epi8(
          _mm256_cmpeq_epi8(_mm256_and_si256(cls, _mm256_set1_epi8(3)), zero)));
      const uint32_t not_op = static_cast<uint32_t>(_mm256_movemask_epi8(
          _mm256_cmpeq_epi8(_mm256_and_si256(cls, _mm256_set1_epi8(28)), zero)));
      const uint32_t quote =
          static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, _mm256_set1_epi8('"'))));
      const uint32_t backslash =
          static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, _mm256_set1_epi8('\\'))));
      // Signed: bytes >= 0x80 are negative, so below 0x20 too.
      const uint32_t special =
          static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpgt_epi8(_mm256_set1_epi8(0x20), v)));
      const int shift = 32 * k;
      m.space |= static_cast<uint64_t>(~not_space) << shift;
      m.op |= static_cast<uint64_t>(~not_op) << shift;
      m.quote |= static_cast<uint64_t>(quote) << shift;
      m.backslash |= static_cast<uint64_t>(backslash) << shift;
      m.special |= static_cast<uint64_t>(special) << shift;
    }
    masks[b] = FinishBlock(m, &c);
  }
  *carry = c;
}

bool CpuHasSsse3() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("ssse3") && __builtin_cpu_supports("popcnt") &&
         __builtin_cpu_supports("bmi");
}

bool CpuHasAvx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt") &&
         __builtin_cpu_supports("bmi");
}
#endif

}  // namespace

Stage1Fn PortableStage1() { return &PortableIndex; }

Stage1Fn Sse2Stage1() {
#if defined(TRACECORE_X86_64)
  return &Sse2Index;
#else
  return nullptr;
#endif
}

Stage1Fn Ssse3Stage1() {
#if defined(TRACECORE_X86_64)
  static const bool has = CpuHasSsse3();
  return has ? &Ssse3Index : nullptr;
#else
  return nullptr;
#endif
}

Stage1Fn Avx2Stage1() {
#if defined(TRACECORE_X86_64)
  static const bool has = CpuHasAvx2();
  return has ? &Avx2Index : nullptr;
#else
  return nullptr;
#endif
}

Stage1Fn BestStage1() {
  static const Stage1Fn best = [] {
    // TRACECORE_JSON_STAGE1=avx2|ssse3|sse2|portable picks one (tests, benchmarks).
    if (const char* forced = std::getenv("TRACECORE_JSON_STAGE1")) {
      const std::string name = forced;
      Stage1Fn f = name == "avx2"       ? Avx2Stage1()
                   : name == "ssse3"    ? Ssse3Stage1()
                   : name == "sse2"     ? Sse2Stage1()
                   : name == "portable" ? PortableStage1()
                                        : nullptr;
      if (f != nullptr) return f;
    }
    // SSE2 first: on the dev VM (a Sapphire Rapids guest) the whole decode ran 35-50% faster
    // with it than with the SSSE3 or AVX2 variants, which retire fewer instructions
    // (callgrind) but ran slower there, streaming a 50 MB trace (bench/NOTES.md).
    if (Stage1Fn f = Sse2Stage1()) return f;
    if (Stage1Fn f = Avx2Stage1()) return f;
    return PortableStage1();
  }();
  return best;
}

const char* BestStage1Name() {
  const Stage1Fn best = BestStage1();
  if (best == Avx2Stage1()) return "avx2";
  if (best == Ssse3Stage1()) return "ssse3";
  if (best == Sse2Stage1()) return "sse2";
  return "portable";
}

}  // namespace tracecore::json
