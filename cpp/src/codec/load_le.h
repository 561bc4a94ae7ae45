// Unaligned little-endian loads for the codecs' word-at-a-time loops.
#pragma once

#include <cstdint>
#include <cstring>

namespace tracecore {

inline uint64_t LoadLe64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  return v;
}

}  // namespace tracecore
