#include "codec/huffman_table.h"

namespace tracecore::huffman {
namespace {

constexpr unsigned kMaxCodeBits = 15;
constexpr unsigned kMaxSymbols = 288;

// The low `bits` bits of `code` in reverse order.
inline unsigned Reverse(unsigned code, unsigned bits) {
  unsigned r = 0;
  for (unsigned i = 0; i < bits; ++i) {
    r = (r << 1) | (code & 1);
    code >>= 1;
  }
  return r;
}

inline uint32_t MakeEntry(uint32_t payload, unsigned code_bits) {
  return payload + code_bits + (code_bits << 8);
}

}  // namespace

Shape BuildTable(const uint8_t* lengths, unsigned count, const uint32_t* payloads,
                 unsigned root_bits, uint32_t* table) {
  unsigned per_length[kMaxCodeBits + 1] = {};
  for (unsigned s = 0; s < count; ++s) ++per_length[lengths[s]];
  per_length[0] = 0;

  // Kraft: `left` counts the bit strings of each length no code has taken yet.
  int left = 1;
  unsigned max_bits = 0;
  for (unsigned len = 1; len <= kMaxCodeBits; ++len) {
    left = 2 * left - static_cast<int>(per_length[len]);
    if (left < 0) return Shape::kOverSubscribed;
    if (per_length[len]) max_bits = len;
  }
  const size_t root_size = size_t{1} << root_bits;
  Shape shape = Shape::kComplete;
  if (max_bits == 0) {
    shape = Shape::kEmpty;
  } else if (left > 0) {
    // zlib accepts exactly this incomplete code (a lone distance code, or a block that only
    // ends), and encoders emit it; any other is malformed.
    if (max_bits != 1) return Shape::kIncomplete;
    shape = Shape::kSingleOneBit;
  }
  if (shape != Shape::kComplete) {
    // Uncovered bit strings decode as invalid once one bit is there.
    const uint32_t invalid = MakeEntry(kInvalid, 1);
    for (size_t i = 0; i < root_size; ++i) table[i] = invalid;
    if (shape == Shape::kEmpty) return shape;
  }

  // Symbols sorted by (length, symbol): canonical order.
  unsigned offset[kMaxCodeBits + 2];
  offset[1] = 0;
  for (unsigned len = 1; len <= kMaxCodeBits; ++len) {
    offset[len + 1] = offset[len] + per_length[len];
  }
  const unsigned coded = offset[kMaxCodeBits + 1];
  uint16_t sorted[kMaxSymbols];
  for (unsigned s = 0; s < count; ++s) {
    if (lengths[s]) sorted[offset[lengths[s]]++] = static_cast<uint16_t>(s);
  }
  // Canonical codes: consecutive within a length, the next length continuing from the last
  // code plus one, shifted.
  uint16_t codes[kMaxSymbols];
  unsigned code = 0;
  for (unsigned i = 0; i < coded; ++i) {
    const unsigned len = lengths[sorted[i]];
    if (i > 0) code = (code + 1) << (len - lengths[sorted[i - 1]]);
    codes[i] = static_cast<uint16_t>(code);
  }

  size_t next_subtable = root_size;
  unsigned i = 0;
  for (; i < coded && lengths[sorted[i]] <= root_bits; ++i) {
    const unsigned len = lengths[sorted[i]];
    const uint32_t entry = MakeEntry(payloads[sorted[i]], len);
    for (size_t j = Reverse(codes[i], len); j < root_size; j += size_t{1} << len) table[j] = entry;
  }
  // Longer codes sharing their first root_bits bits are consecutive in canonical order, and
  // the group's last code is its longest: it sets the subtable's size.
  while (i < coded) {
    const unsigned first_len = lengths[sorted[i]];
    const unsigned prefix = static_cast<unsigned>(codes[i] >> (first_len - root_bits));
    unsigned end = i + 1;
    while (end < coded &&
           static_cast<unsigned>(codes[end] >> (lengths[sorted[end]] - root_bits)) == prefix) {
      ++end;
    }
    const unsigned sub_bits = lengths[sorted[end - 1]] - root_bits;
    uint32_t* sub = table + next_subtable;
    table[Reverse(prefix, root_bits)] = (static_cast<uint32_t>(next_subtable) << 16) | kSubtable |
                                        (sub_bits << 8) | root_bits;
    next_subtable += size_t{1} << sub_bits;
    for (; i < end; ++i) {
      const unsigned len = lengths[sorted[i]] - root_bits;
      const uint32_t entry = MakeEntry(payloads[sorted[i]], len);
      const unsigned rest = codes[i] & ((1u << len) - 1);
      for (size_t j = Reverse(rest, len); j < (size_t{1} << sub_bits); j += size_t{1} << len) {
        sub[j] = entry;
      }
    }
  }
  return shape;
}

}  // namespace tracecore::huffman
