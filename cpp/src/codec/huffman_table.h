// Decoding tables for deflate's canonical Huffman codes (RFC 1951 section 3.2.2), used by the
// Inflater. A table is indexed by the next `root_bits` bits of the stream (deflate packs codes
// starting with their first bit in the lowest bit, so the index is the code bit-reversed); codes
// longer than root_bits go through a second-level table that the root entry points to.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tracecore::huffman {

// A table entry (32 bits):
//   bits 0-7    bits to drop: the code's length plus its extra bits; in a subtable pointer,
//               root_bits
//   bits 8-11   the code's length (the extra bits start after it); in a subtable pointer, the
//               subtable's index bits
//   bit 12      end of block         bit 13  subtable pointer       bit 14  invalid symbol
//   bits 16-30  the symbol's value (literal byte, base length or distance, code length
//               symbol) or, in a subtable pointer, the subtable's offset in the table
//   bit 31      literal byte
// Lengths inside a subtable count from the end of the root bits.
constexpr uint32_t kLiteral = 0x80000000u;
constexpr uint32_t kEndOfBlock = 0x1000u;
constexpr uint32_t kSubtable = 0x2000u;
constexpr uint32_t kInvalid = 0x4000u;

inline unsigned DropBits(uint32_t entry) { return entry & 0xFF; }
inline unsigned CodeBits(uint32_t entry) { return (entry >> 8) & 0xF; }
inline unsigned Value(uint32_t entry) { return (entry >> 16) & 0x7FFF; }
// The extra bits' value, from bits whose lowest is the entry's code's first bit.
inline unsigned ExtraValue(uint32_t entry, uint64_t bits) {
  return static_cast<unsigned>((bits & ((uint64_t{1} << DropBits(entry)) - 1)) >> CodeBits(entry));
}

// What a symbol decodes to, before the builder adds the code's length: value << 16, flags and
// the number of extra bits in bits 0-7.
constexpr uint32_t Payload(unsigned value, unsigned extra_bits, uint32_t flags = 0) {
  return (static_cast<uint32_t>(value) << 16) | flags | extra_bits;
}

enum class Shape : uint8_t {
  kComplete,        // every bit string starts with exactly one code
  kEmpty,           // no symbol has a code (every entry is kInvalid)
  kSingleOneBit,    // one code of length 1: the other bit decodes to kInvalid
  kIncomplete,      // any other incomplete code: no table is built
  kOverSubscribed,  // more codes than bit strings of their lengths: no table is built
};

// Largest table the Inflater needs for `symbols` codes of at most 15 bits with `root_bits`
// root bits: a subtable with s index bits holds a complete subtree with a leaf at depth s, so
// at least s + 1 codes; 2^s / (s + 1) grows with s, so the subtables hold at most
// symbols * 2^smax / (smax + 1) entries, smax = 15 - root_bits.
constexpr size_t TableCapacity(unsigned symbols, unsigned root_bits) {
  const unsigned smax = root_bits >= 15 ? 0 : 15 - root_bits;
  return (size_t{1} << root_bits) + (symbols * (size_t{1} << smax) + smax) / (smax + 1);
}

// Builds the table for code lengths `lengths[0..count)` (0 = no code, at most 15) with
// `payloads[symbol]` as above into `table` (at least TableCapacity(count, root_bits) entries).
// Returns the code's shape; tables are built for kComplete, kEmpty and kSingleOneBit.
Shape BuildTable(const uint8_t* lengths, unsigned count, const uint32_t* payloads,
                 unsigned root_bits, uint32_t* table);

}  // namespace tracecore::huffman
