// Eight-bytes-at-a-time scanning helpers for the text parser (SWAR: SIMD within a register).
// Each works on a little-endian uint64 whose lowest byte is the first character.
#pragma once

#include <cstdint>
#include <cstring>

namespace tracecore::swar {

constexpr uint64_t kOnes = 0x0101010101010101ull;
constexpr uint64_t kHighs = 0x8080808080808080ull;

inline uint64_t Load(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// High bit set in each byte of x equal to c.
inline uint64_t BytesEqual(uint64_t x, uint8_t c) {
  const uint64_t y = x ^ (kOnes * c);
  return ~(((y & ~kHighs) + ~kHighs) | y) & kHighs;
}

// High bit set in each byte b of x with lo <= b <= hi (lo, hi < 128; bytes >= 128 never match).
inline uint64_t BytesInRange(uint64_t x, uint8_t lo, uint8_t hi) {
  const uint64_t low7 = x & ~kHighs;
  const uint64_t ge_lo = (low7 + kOnes * (0x80 - lo)) & kHighs;   // low7 >= lo
  const uint64_t le_hi = ~(low7 + kOnes * (0x7F - hi)) & kHighs;  // low7 <= hi
  return ge_lo & le_hi & ~x;                                       // and no high bit
}

// Index (0..8) of the first byte whose high bit is clear in mask (8 if all set).
inline int FirstClear(uint64_t mask) {
  const uint64_t clear = ~mask & kHighs;
  return clear == 0 ? 8 : __builtin_ctzll(clear) >> 3;
}

// High bit set in bytes that may appear in a field name: [A-Za-z0-9_].
inline uint64_t IdentBytes(uint64_t x) {
  return BytesInRange(x, 'a', 'z') | BytesInRange(x, 'A', 'Z') | BytesInRange(x, '0', '9') |
         BytesEqual(x, '_');
}

// True if all eight bytes are ASCII digits.
inline bool AllDigits(uint64_t x) {
  return (x & 0xF0F0F0F0F0F0F0F0ull) == 0x3030303030303030ull &&
         ((x + 0x0606060606060606ull) & 0xF0F0F0F0F0F0F0F0ull) == 0x3030303030303030ull;
}

// The value of eight digit values 0..9, one per byte (first byte most significant).
inline uint64_t EightDigitValues(uint64_t x) {
  // Adjacent digits to two-digit values in the even bytes: 10 * d[k] + d[k+1].
  x = (x * 10 + (x >> 8)) & 0x00FF00FF00FF00FFull;
  // Adjacent pairs to four-digit values in the even 16-bit lanes: 100 * p[k] + p[k+1].
  x = (x * 100 + (x >> 16)) & 0x0000FFFF0000FFFFull;
  // The two four-digit halves.
  return (x & 0xFFFF) * 10000 + (x >> 32);
}

// The value of eight ASCII digits (first character most significant).
inline uint64_t EightDigits(uint64_t x) { return EightDigitValues(x - 0x3030303030303030ull); }

// Number of leading ASCII digits among the eight bytes (0..8).
inline int LeadingDigits(uint64_t x) {
  // A byte is a digit when its high nibble is 3 and adding 6 keeps it so. A carry out of a
  // byte (only from a non-digit) can disturb the following bytes, which no longer count.
  const uint64_t other = ((x & 0xF0F0F0F0F0F0F0F0ull) ^ 0x3030303030303030ull) |
                         (((x + 0x0606060606060606ull) & 0xF0F0F0F0F0F0F0F0ull) ^ 0x3030303030303030ull);
  return other == 0 ? 8 : __builtin_ctzll(other) >> 3;
}

// The value of the first n (1..8) ASCII digits of x.
inline uint64_t FirstDigits(uint64_t x, int n) {
  // Digit values, shifted so that the n digits are at the top and zeros (value 0) fill the
  // bottom. A borrow of the subtraction only moves toward later bytes, which are shifted out.
  return EightDigitValues((x - 0x3030303030303030ull) << (8 * (8 - n)));
}

}  // namespace tracecore::swar
