// Adler-32, the check value of the zlib wrapper (RFC 1950 section 8.2).
#pragma once

#include <cstddef>
#include <cstdint>

namespace tracecore {

// The Adler-32 of `data` appended to data whose Adler-32 was `adler` (1 for the empty prefix).
uint32_t Adler32(uint32_t adler, const uint8_t* data, size_t size);

}  // namespace tracecore
