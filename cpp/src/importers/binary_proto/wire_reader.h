// Protobuf wire-format primitives over a byte range: varints, fixed-width values, length-
// delimited payloads and skipping by wire type. Every read is bounds-checked; errors carry the
// byte offset from the start of the input.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "core/error.h"

namespace tracecore {

enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

class WireReader {
 public:
  explicit WireReader(const uint8_t* base) : base_(base) {}

  uint64_t offset(const uint8_t* p) const { return static_cast<uint64_t>(p - base_); }

  [[noreturn]] void Fail(const uint8_t* at, const std::string& what) const {
    throw TraceFormatError::AtByte(offset(at), what);
  }
  [[noreturn]] void FailOutOfRange(const uint8_t* at, const std::string& what) const {
    TraceFormatError e = TraceFormatError::AtByte(offset(at), what);
    e.value_out_of_range = true;
    throw e;
  }

  __attribute__((always_inline)) uint64_t Varint(const uint8_t*& p, const uint8_t* end) const {
    if (p < end && *p < 0x80) return *p++;
    if (end - p >= 10) {
      // Unrolled decode with all ten bytes known to be in bounds.
      uint64_t value = *p & 0x7F;
      for (int i = 1; i < 10; ++i) {
        const uint8_t byte = p[i];
        value |= static_cast<uint64_t>(byte & 0x7F) << (7 * i);
        if (byte < 0x80) {
          p += i + 1;
          return value;
        }
      }
    }
    return VarintSlow(p, end);
  }

  // A length prefix and the payload it announces, which must fit in [p, end).
  __attribute__((always_inline)) std::string_view LengthDelimited(const uint8_t*& p,
                                                                   const uint8_t* end) const {
    const uint8_t* at = p;
    const uint64_t length = Varint(p, end);
    if (length > static_cast<uint64_t>(end - p)) {
      Fail(at, "length " + std::to_string(length) + " runs past the end of the enclosing message (" +
                   std::to_string(end - p) + " bytes left)");
    }
    std::string_view payload(reinterpret_cast<const char*>(p), static_cast<size_t>(length));
    p += length;
    return payload;
  }

  // Skips the value of a field of wire type `wire_type` whose key ended at `p`.
  void Skip(uint32_t field, uint32_t wire_type, const uint8_t*& p, const uint8_t* end) const;

 private:
  uint64_t VarintSlow(const uint8_t*& p, const uint8_t* end) const;

  const uint8_t* base_;
};

}  // namespace tracecore
