// A tiny protobuf wire-format writer for tests that build messages by hand (XSpace tests).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

namespace tracecore::unit::proto {

// A varint.
inline std::string V(uint64_t v) {
  std::string out;
  do {
    uint8_t b = v & 0x7F;
    v >>= 7;
    if (v) b |= 0x80;
    out.push_back(static_cast<char>(b));
  } while (v);
  return out;
}
// A varint field.
inline std::string F(uint32_t field, uint64_t v) { return V(uint64_t{field} << 3) + V(v); }
// A length-delimited field.
inline std::string S(uint32_t field, const std::string& payload) {
  return V((uint64_t{field} << 3) | 2) + V(payload.size()) + payload;
}
// A fixed64 (double) field.
inline std::string D(uint32_t field, double d) {
  std::string out = V((uint64_t{field} << 3) | 1);
  char bytes[8];
  std::memcpy(bytes, &d, 8);
  return out + std::string(bytes, 8);
}
// An int64 as a varint (two's complement, 10 bytes when negative).
inline std::string I(int64_t v) { return V(static_cast<uint64_t>(v)); }

// XPlane's map entries: event_metadata (field 4) and stat_metadata (field 5), key = id.
inline std::string EventMeta(int64_t key, const std::string& name, const std::string& extra = "") {
  return S(4, F(1, static_cast<uint64_t>(key)) +
                  S(2, F(1, static_cast<uint64_t>(key)) + S(2, name) + extra));
}
inline std::string StatMeta(int64_t key, const std::string& name) {
  return S(5, F(1, static_cast<uint64_t>(key)) +
                  S(2, F(1, static_cast<uint64_t>(key)) + S(2, name)));
}

}  // namespace tracecore::unit::proto
