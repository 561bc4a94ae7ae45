// CRC-32 as gzip (RFC 1952), zip and PNG use it: the IEEE 802.3 polynomial 0x04C11DB7, bits
// reflected, register preset to ~0 and inverted at the end. Not CRC-32C (Castagnoli), which
// TFRecord framing uses.
//
// Crc32 picks at run time between carry-less multiplication folding (x86 with PCLMULQDQ, about
// ten times the table speed) and a portable slicing-by-8 table loop; both give the same values.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tracecore {

// The CRC of `data` appended to data whose CRC was `crc` (0 for the empty prefix):
// Crc32(Crc32(0, a), b) == Crc32(0, a + b).
uint32_t Crc32(uint32_t crc, const uint8_t* data, size_t size);

// The portable table implementation, exposed so tests can compare the two paths.
uint32_t Crc32Portable(uint32_t crc, const uint8_t* data, size_t size);

// True when Crc32 uses the carry-less multiplication path on this machine.
bool Crc32UsesClmul();

}  // namespace tracecore
