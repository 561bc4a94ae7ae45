// Stage 1 of the JSON reader: finds, 64 bytes at a time and without a branch per byte, where
// every token starts, so the pull parser (JsonReader) never looks at whitespace or string
// bodies byte by byte. For each 64-byte block it builds bit masks (whitespace, the operators
// {}[]:, , quotes, backslashes, control and non-ASCII bytes) with SIMD compares, works out
// which quotes are escaped and which bytes lie inside strings (a prefix XOR of the quote
// bits), and writes the offsets of:
//   * the operators outside strings,
//   * every unescaped quote (so a string is its opening and closing quote),
//   * the first byte of each run of other bytes outside strings (numbers, literals, garbage),
//   * the first byte of each run of "dirty" bytes inside a string (backslash, control, non-
//     ASCII): the parser then decodes and checks that string the slow way.
// A byte that is none of the above (whitespace, plain string bytes) is never visited again.
// The reader walks the set bits in order (count trailing zeros, clear the lowest): no list of
// offsets is written and read back.
//
// Implementations: SSE2 (always there on x86-64; the default, see BestStage1), SSSE3 and AVX2
// (nibble-table classification; used when the CPU has them and TRACECORE_JSON_STAGE1 asks),
// and a portable one (a byte loop; other CPUs, and a reference for the tests).
#pragma once

#include <cstddef>
#include <cstdint>

namespace tracecore::json {

// What one block hands to the next.
struct Stage1Carry {
  bool escape_next = false;  // the next block's first byte is escaped by a backslash
  uint64_t in_string = 0;    // all ones when the next block starts inside a string
  uint64_t scalar_prev = 0;  // 1 when the last byte was part of a run outside strings
  uint64_t dirty_prev = 0;   // 1 when the last byte was a dirty byte inside a string
};

// Indexes `blocks` 64-byte blocks at p: masks[i] has bit j set when byte 64 * i + j starts a
// token (see above).
using Stage1Fn = void (*)(const char* p, size_t blocks, Stage1Carry* carry, uint64_t* masks);

// The implementation the reader uses: TRACECORE_JSON_STAGE1 (avx2, ssse3, sse2, portable)
// when set and available on this CPU, else SSE2 on x86-64, else the portable one.
Stage1Fn BestStage1();
// Each implementation, for tests and benchmarks; nullptr when this build or CPU lacks it.
Stage1Fn PortableStage1();
Stage1Fn Sse2Stage1();
Stage1Fn Ssse3Stage1();
Stage1Fn Avx2Stage1();
// The name of BestStage1's choice ("avx2", "ssse3", "sse2", "portable").
const char* BestStage1Name();

}  // namespace tracecore::json
