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
  // `limit`: the end of the readable input. Fields end at or before it; fast paths may load
  // (not use) bytes past a field's end up to `limit`.
  WireReader(const uint8_t* base, const uint8_t* limit) : base_(base), limit_(limit) {}

  uint64_t offset(const uint8_t* p) const { return static_cast<uint64_t>(p - base_); }

  [[noreturn]] void Fail(const uint8_t* at, const std::string& what) const {
    throw TraceFormatError::AtByte(offset(at), what);
  }
  // A field whose value is invalid (see TraceFormatError::bad_value), or out of range
  // (TraceFormatError::out_of_range).
  [[noreturn]] void FailValue(const uint8_t* at, const std::string& what, bool out_of_range = false) const {
    TraceFormatError e = TraceFormatError::AtByte(offset(at), what);
    e.bad_value = true;
    e.out_of_range = out_of_range;
    throw e;
  }

  // A varint's value and the position after it.
  struct Read {
    uint64_t value;
    const uint8_t* next;
  };

  // The out-of-line parts take the cursor by value and return where they stopped (in
  // registers): a cursor passed by reference to a call that is not inlined lives in memory,
  // and every field then stored and reloaded it on the parse's dependency chain.
  __attribute__((always_inline)) uint64_t Varint(const uint8_t*& p, const uint8_t* end) const {
    if (p < end && *p < 0x80) return *p++;
    const Read r = VarintMulti(p, end);
    p = r.next;
    return r.value;
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

  // Skips the value of a field of wire type `wire_type` whose key ended at `p`; returns where
  // the value ends.
  const uint8_t* Skip(uint32_t field, uint32_t wire_type, const uint8_t* p, const uint8_t* end) const;

 private:
  // A varint of two or more bytes (or a truncated one).
  __attribute__((noinline)) Read VarintMulti(const uint8_t* p, const uint8_t* end) const;
  Read VarintSlow(const uint8_t* p, const uint8_t* end) const;

  const uint8_t* base_;
  const uint8_t* limit_;
};

}  // namespace tracecore
