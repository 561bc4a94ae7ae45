#include "importers/protobuf/wire_reader.h"

namespace tracecore {
namespace {
constexpr int kMaxGroupDepth = 100;

// The 7-bit groups of up to eight varint bytes (high bits already cleared), packed together:
// pairs to 14 bits (b0 | b1 << 8 - b1 << 7 = b0 | b1 << 7), then pairs of 14- and 28-bit
// groups, each upper half moving down over the gap.
inline uint64_t Gather8(uint64_t x) {
  x -= (x & 0x7F007F007F007F00ull) >> 1;
  uint64_t upper = x & 0x3FFF00003FFF0000ull;
  x = (x ^ upper) | (upper >> 2);
  upper = x & 0x0FFFFFFF00000000ull;
  return (x ^ upper) | (upper >> 4);
}
}  // namespace

WireReader::Read WireReader::VarintMulti(const uint8_t* p, const uint8_t* end) const {
  if (limit_ - p >= 8) {
    if (p[1] < 0x80) {
      if (end - p >= 2) return {(p[0] & 0x7Fu) | (uint64_t{p[1]} << 7), p + 2};
      return VarintSlow(p, end);  // truncated
    }
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    // Up to eight bytes at once: find the last byte (high bit clear), then gather the 7-bit
    // groups pairwise. Bytes past `end` (but before `limit_`) may be loaded, never used.
    uint64_t x;
    std::memcpy(&x, p, 8);
    const uint64_t last = ~x & 0x8080808080808080ull;
    if (last != 0) {
      const int bits = __builtin_ctzll(last) + 1;  // 8 * number of bytes
      if ((bits >> 3) > end - p) return VarintSlow(p, end);  // truncated
      x &= 0x7F7F7F7F7F7F7F7Full >> (64 - bits);  // the varint's bytes, without their high bits
      return {Gather8(x), p + (bits >> 3)};
    }
    // Nine or ten bytes (negative int64 values take ten): the first eight at once, then the
    // rest, bounds-checked against the field's end.
    if (end - p >= 10 && (p[8] < 0x80 || p[9] < 0x80)) {
      const uint64_t low = Gather8(x & 0x7F7F7F7F7F7F7F7Full);
      if (p[8] < 0x80) return {low | (uint64_t{p[8]} << 56), p + 9};
      return {low | (uint64_t{p[8] & 0x7Fu} << 56) | (uint64_t{p[9]} << 63), p + 10};
    }
#endif
  }
  if (end - p >= 10) {
    // Unrolled decode with all ten bytes known to be in bounds.
    uint64_t value = *p & 0x7F;
    for (int i = 1; i < 10; ++i) {
      const uint8_t byte = p[i];
      value |= static_cast<uint64_t>(byte & 0x7F) << (7 * i);
      if (byte < 0x80) return {value, p + i + 1};
    }
  }
  return VarintSlow(p, end);
}

WireReader::Read WireReader::VarintSlow(const uint8_t* p, const uint8_t* end) const {
  const uint8_t* at = p;
  uint64_t value = 0;
  for (int i = 0; i < 10; ++i) {
    if (p >= end) Fail(at, "truncated varint: input ends inside it");
    const uint8_t byte = *p++;
    value |= static_cast<uint64_t>(byte & 0x7F) << (7 * i);
    if (byte < 0x80) return {value, p};
  }
  Fail(at, "varint longer than 10 bytes");
}

const uint8_t* WireReader::Skip(uint32_t field, uint32_t wire_type, const uint8_t* p,
                                const uint8_t* end) const {
  const uint8_t* at = p;
  switch (wire_type) {
    case kVarint:
      Varint(p, end);
      return p;
    case kFixed64:
      if (end - p < 8) Fail(at, "truncated fixed64 value");
      return p + 8;
    case kFixed32:
      if (end - p < 4) Fail(at, "truncated fixed32 value");
      return p + 4;
    case kLengthDelimited:
      LengthDelimited(p, end);
      return p;
    case kStartGroup: {
      // Groups nest; skip iteratively with a bounded stack of open field numbers.
      uint32_t open[kMaxGroupDepth];
      int depth = 0;
      open[depth++] = field;
      while (depth > 0) {
        const uint8_t* key_at = p;
        if (p >= end) Fail(at, "group (field " + std::to_string(open[depth - 1]) + ") is not closed");
        const uint64_t key = Varint(p, end);
        const uint32_t wt = static_cast<uint32_t>(key & 7);
        const uint64_t number = key >> 3;
        if (number == 0 || number > 0x1FFFFFFF) Fail(key_at, "invalid field number " + std::to_string(number));
        if (wt == kStartGroup) {
          if (depth == kMaxGroupDepth) Fail(key_at, "groups nested deeper than 100 levels");
          open[depth++] = static_cast<uint32_t>(number);
        } else if (wt == kEndGroup) {
          if (open[depth - 1] != number) Fail(key_at, "end of group " + std::to_string(number) + " does not match the open group " + std::to_string(open[depth - 1]));
          --depth;
        } else {
          p = Skip(static_cast<uint32_t>(number), wt, p, end);
        }
      }
      return p;
    }
    case kEndGroup:
      Fail(at, "end-group marker without a matching start-group (field " + std::to_string(field) + ")");
    default:
      Fail(at, "invalid wire type " + std::to_string(wire_type) + " (field " + std::to_string(field) + ")");
  }
}

}  // namespace tracecore
