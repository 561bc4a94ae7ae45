#include "codec/crc32.h"

#include <array>

#include "codec/load_le.h"

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define TRACECORE_CRC32_CLMUL 1
#include <immintrin.h>
#endif

namespace tracecore {
namespace {

constexpr uint32_t kReflectedPoly = 0xEDB88320u;  // 0x04C11DB7 with its 32 bits reversed

// kTables[k][b]: the register after byte b followed by k zero bytes, from a zero register.
// Slicing-by-8 looks up each of eight bytes in the table of its distance to the end.
constexpr std::array<std::array<uint32_t, 256>, 8> MakeTables() {
  std::array<std::array<uint32_t, 256>, 8> t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t c = b;
    for (int i = 0; i < 8; ++i) c = (c >> 1) ^ ((c & 1) ? kReflectedPoly : 0);
    t[0][b] = c;
  }
  for (int k = 1; k < 8; ++k) {
    for (uint32_t b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xFF];
  }
  return t;
}
constexpr auto kTables = MakeTables();

// `reg` is the internal register (the CRC inverted).
uint32_t UpdateTables(uint32_t reg, const uint8_t* p, size_t n) {
  while (n >= 8) {
    const uint64_t v = LoadLe64(p) ^ reg;
    reg = kTables[7][v & 0xFF] ^ kTables[6][(v >> 8) & 0xFF] ^ kTables[5][(v >> 16) & 0xFF] ^
          kTables[4][(v >> 24) & 0xFF] ^ kTables[3][(v >> 32) & 0xFF] ^
          kTables[2][(v >> 40) & 0xFF] ^ kTables[1][(v >> 48) & 0xFF] ^ kTables[0][v >> 56];
    p += 8;
    n -= 8;
  }
  while (n--) reg = (reg >> 8) ^ kTables[0][(reg ^ *p++) & 0xFF];
  return reg;
}

#ifdef TRACECORE_CRC32_CLMUL
// Folding with carry-less multiplication. A 16-byte block loaded little-endian holds 128
// message bits with the first one (the highest power of x) in bit 0. Moving a block A forward
// by T bits means replacing A(x) * x^T by something congruent modulo P and shorter: with A_H
// the first 64 bits (the low half) and A_L the second, A * x^T = A_H * x^(T+64) + A_L * x^T, and
// each power is reduced modulo P to under 32 bits. The product of two bit-reversed 64-bit
// operands comes out as a bit-reversed 128-bit value times x, so the constants are
// x^(T+63) mod P and x^(T-1) mod P, bit-reversed into 64 bits. The sum has under 97 bits and
// is xored onto the block T bits further on.
constexpr uint64_t ReversedXPowMod(unsigned exponent) {
  uint64_t r = 1;  // x^0, normal bit order, degree < 32
  for (unsigned i = 0; i < exponent; ++i) {
    r <<= 1;
    if (r & (uint64_t{1} << 32)) r ^= 0x104C11DB7ull;
  }
  uint64_t reversed = 0;
  for (unsigned j = 0; j < 32; ++j) {
    if ((r >> j) & 1) reversed |= uint64_t{1} << (63 - j);
  }
  return reversed;
}
constexpr uint64_t kFold512Low = ReversedXPowMod(512 + 63);
constexpr uint64_t kFold512High = ReversedXPowMod(512 - 1);
constexpr uint64_t kFold128Low = ReversedXPowMod(128 + 63);
constexpr uint64_t kFold128High = ReversedXPowMod(128 - 1);

__attribute__((target("pclmul,sse2"))) inline __m128i Fold(__m128i x, __m128i k) {
  return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

__attribute__((target("pclmul,sse2"))) inline __m128i Load(const uint8_t* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

// Requires n >= 64. Folds four lanes of 16 bytes over 64-byte strides, then the lanes into one,
// then 16-byte blocks; the last 128 bits are reduced by the table loop (their CRC from a zero
// register is the remainder of the whole message) and the tail follows.
__attribute__((target("pclmul,sse2"))) uint32_t UpdateClmul(uint32_t reg, const uint8_t* p,
                                                             size_t n) {
  __m128i x0 = _mm_xor_si128(Load(p), _mm_cvtsi32_si128(static_cast<int>(reg)));
  __m128i x1 = Load(p + 16);
  __m128i x2 = Load(p + 32);
  __m128i x3 = Load(p + 48);
  p += 64;
  n -= 64;
  const __m128i k512 = _mm_set_epi64x(static_cast<long long>(kFold512High),
                                      static_cast<long long>(kFold512Low));
  while (n >= 64) {
    x0 = _mm_xor_si128(Fold(x0, k512), Load(p));
    x1 = _mm_xor_si128(Fold(x1, k512), Load(p + 16));
    x2 = _mm_xor_si128(Fold(x2, k512), Load(p + 32));
    x3 = _mm_xor_si128(Fold(x3, k512), Load(p + 48));
    p += 64;
    n -= 64;
  }
  const __m128i k128 = _mm_set_epi64x(static_cast<long long>(kFold128High),
                                      static_cast<long long>(kFold128Low));
  x1 = _mm_xor_si128(x1, Fold(x0, k128));
  x2 = _mm_xor_si128(x2, Fold(x1, k128));
  x3 = _mm_xor_si128(x3, Fold(x2, k128));
  while (n >= 16) {
    x3 = _mm_xor_si128(Fold(x3, k128), Load(p));
    p += 16;
    n -= 16;
  }
  alignas(16) uint8_t last[16];
  _mm_store_si128(reinterpret_cast<__m128i*>(last), x3);
  return UpdateTables(UpdateTables(0, last, 16), p, n);
}

bool DetectClmul() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse2");
}
#endif

}  // namespace

uint32_t Crc32Portable(uint32_t crc, const uint8_t* data, size_t size) {
  return ~UpdateTables(~crc, data, size);
}

bool Crc32UsesClmul() {
#ifdef TRACECORE_CRC32_CLMUL
  static const bool have = DetectClmul();
  return have;
#else
  return false;
#endif
}

uint32_t Crc32(uint32_t crc, const uint8_t* data, size_t size) {
#ifdef TRACECORE_CRC32_CLMUL
  // Below a few blocks the set-up and the final reduction cost more than the tables.
  if (size >= 128 && Crc32UsesClmul()) return ~UpdateClmul(~crc, data, size);
#endif
  return ~UpdateTables(~crc, data, size);
}

}  // namespace tracecore
