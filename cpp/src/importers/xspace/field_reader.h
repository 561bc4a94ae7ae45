// Field-by-field reading of protobuf messages for the XSpace decoder, on top of WireReader
// (varints, length-delimited payloads, skipping, errors with byte offsets): a message's fields
// are handed to a handler that consumes the values it knows; the others are skipped as unknown
// fields and counted, as protobuf keeps them (a known field number with an unexpected wire
// type included).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "containers/string_pool.h"
#include "importers/protobuf/wire_reader.h"

namespace tracecore::xspace {

using Bytes = std::string_view;

// The key of field `field` with wire type `wt`: what the wire format writes before a value.
constexpr uint64_t Key(uint32_t field, WireType wt) { return (uint64_t{field} << 3) | wt; }

// Handlers are inlined into the field loop so that the cursor stays in a register (see
// binary_parser.cc, which reads StepStats the same way).
#define TC_XFIELD __attribute__((always_inline))

class FieldReader {
 public:
  // `limit`: the end of the readable input (see WireReader).
  FieldReader(const uint8_t* base, const uint8_t* limit) : r_(base, limit) {}

  const WireReader& wire() const { return r_; }
  static const uint8_t* Begin(Bytes m) { return reinterpret_cast<const uint8_t*>(m.data()); }
  static const uint8_t* End(Bytes m) { return Begin(m) + m.size(); }
  uint64_t offset(const char* p) const { return r_.offset(reinterpret_cast<const uint8_t*>(p)); }

  // Every field of `m` goes to `on_key(key, cursor, end)`, which consumes a value it knows and
  // returns true, or returns false without consuming anything: the field is then skipped, and
  // counted as unknown when kCount (a second pass over a message skips what the first counted).
  template <bool kCount = true, class OnKey>
  __attribute__((always_inline)) void Message(Bytes m, OnKey&& on_key) {
    const uint8_t* p = Begin(m);
    const uint8_t* end = End(m);
    while (p < end) {
      const uint8_t* key_at = p;
      const uint64_t key = r_.Varint(p, end);
      if (__builtin_expect(p - key_at > kMaxPrefix, 0)) Overlong(key_at, "key");
      if (!on_key(key, p, end)) p = Skip(key_at, key, p, end, kCount);
    }
  }

  // Typed values, after their key. (Inlining WireReader's multi-byte path here, where most
  // values take several bytes, measured 8% slower: the loops outgrow the caches.)
  __attribute__((always_inline)) int64_t Int64(const uint8_t*& p, const uint8_t* end) {
    return static_cast<int64_t>(r_.Varint(p, end));
  }
  __attribute__((always_inline)) uint64_t Uint64(const uint8_t*& p, const uint8_t* end) {
    return r_.Varint(p, end);
  }
  __attribute__((always_inline)) uint64_t Fixed64(const uint8_t*& p, const uint8_t* end) {
    if (end - p < 8) r_.Fail(p, "truncated fixed64 value");
    uint64_t v;
    std::memcpy(&v, p, 8);
    p += 8;
    return v;
  }
  // A length-delimited payload: a sub-message or bytes.
  __attribute__((always_inline)) Bytes Sub(const uint8_t*& p, const uint8_t* end) {
    const uint8_t* at = p;
    const Bytes s = r_.LengthDelimited(p, end);
    if (__builtin_expect(Begin(s) - at > kMaxPrefix, 0)) Overlong(at, "length");
    return s;
  }
  // A proto3 string: protobuf rejects one that is not UTF-8 (the whole message fails).
  __attribute__((always_inline)) Bytes String(const uint8_t*& p, const uint8_t* end) {
    const uint8_t* at = p;
    const Bytes s = Sub(p, end);
    if (!StringPool::IsValidUtf8(s)) r_.FailValue(at, "string is not valid UTF-8");
    return s;
  }
  // A repeated varint field: one value (wire type varint) or a packed run of them.
  template <class Each>
  __attribute__((always_inline)) void PackedVarints(const uint8_t*& p, const uint8_t* end,
                                                    Each&& each) {
    const Bytes packed = Sub(p, end);
    const uint8_t* q = Begin(packed);
    const uint8_t* q_end = End(packed);
    while (q < q_end) each(r_.Varint(q, q_end));
  }
  // Skips the value of a length-delimited field at `p` (its key already read).
  __attribute__((always_inline)) void Hop(const uint8_t*& p, const uint8_t* end) { Sub(p, end); }

  uint64_t unknown_fields() const { return unknown_; }
  void set_unknown_fields(uint64_t n) { unknown_ = n; }

 private:
  // protobuf (upb) rejects keys and length prefixes longer than 5 bytes (overlong encodings up to
  // that length are accepted); WireReader reads any varint of up to 10 bytes.
  static constexpr ptrdiff_t kMaxPrefix = 5;
  [[noreturn]] __attribute__((noinline, cold)) void Overlong(const uint8_t* at, const char* what) const {
    r_.Fail(at, std::string(what) + " varint longer than 5 bytes");
  }

  // Skips a field's value; returns where it ends. Cold, out of line with the cursor by value.
  __attribute__((noinline)) const uint8_t* Skip(const uint8_t* key_at, uint64_t key,
                                                const uint8_t* p, const uint8_t* end, bool count) {
    const uint64_t field = key >> 3;
    if (field == 0 || field > 0x1FFFFFFF) {
      r_.Fail(key_at, "invalid field number " + std::to_string(field));
    }
    if (count) ++unknown_;
    if ((key & 7) == kLengthDelimited) {
      Sub(p, end);
      return p;
    }
    return r_.Skip(static_cast<uint32_t>(field), static_cast<uint32_t>(key & 7), p, end);
  }

  WireReader r_;
  uint64_t unknown_ = 0;
};

}  // namespace tracecore::xspace
