#include "codec/adler32.h"

namespace tracecore {
namespace {
constexpr uint32_t kModulus = 65521;  // the largest prime under 2^16
// The longest run whose sums cannot overflow 32 bits before being reduced: with both sums
// just under the modulus at its start, b grows by at most 255 * n * (n + 1) / 2 + n * 65520.
constexpr size_t kMaxRun = 5552;
}  // namespace

uint32_t Adler32(uint32_t adler, const uint8_t* data, size_t size) {
  uint32_t a = adler & 0xFFFF;
  uint32_t b = adler >> 16;
  while (size > 0) {
    size_t run = size < kMaxRun ? size : kMaxRun;
    size -= run;
    while (run >= 8) {
      a += data[0]; b += a;
      a += data[1]; b += a;
      a += data[2]; b += a;
      a += data[3]; b += a;
      a += data[4]; b += a;
      a += data[5]; b += a;
      a += data[6]; b += a;
      a += data[7]; b += a;
      data += 8;
      run -= 8;
    }
    while (run--) {
      a += *data++;
      b += a;
    }
    a %= kModulus;
    b %= kModulus;
  }
  return (b << 16) | a;
}

}  // namespace tracecore
