// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of TFRecord framing, and
// the TFRecord mask applied to it. The SSE4.2 `crc32` instruction is used when the CPU has it
// (checked once, at run time); elsewhere a portable slicing-by-8 table version.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tracecore {

// The CRC-32C of `size` bytes (initial value and final xor 0xFFFFFFFF, as everyone reports it:
// Crc32c("123456789") == 0xE3069283).
uint32_t Crc32c(const void* data, size_t size);

// The CRC-32C of the bytes that gave `crc` followed by these `size` bytes.
uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t size);

// TFRecord stores masked CRCs: a CRC over bytes that themselves embed CRCs is poor at catching
// errors, so the stored value is rotated right by 15 bits and offset by a constant.
constexpr uint32_t kCrc32cMaskDelta = 0xA282EAD8u;
inline uint32_t MaskCrc32c(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kCrc32cMaskDelta; }
inline uint32_t UnmaskCrc32c(uint32_t masked) {
  const uint32_t rotated = masked - kCrc32cMaskDelta;
  return (rotated >> 17) | (rotated << 15);
}

// Whether Crc32c uses the hardware instruction on this machine.
bool Crc32cUsesHardware();

// The two implementations, exposed for tests and benchmarks (Crc32cExtend picks one).
namespace crc32c_detail {
uint32_t ExtendPortable(uint32_t crc, const uint8_t* data, size_t size);
// Only callable when HardwareAvailable().
uint32_t ExtendHardware(uint32_t crc, const uint8_t* data, size_t size);
bool HardwareAvailable();
}  // namespace crc32c_detail

}  // namespace tracecore
