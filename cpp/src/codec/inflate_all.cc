#include "codec/inflate_all.h"

#include <algorithm>
#include <cmath>
#include <new>

#include "codec/codec_error.h"

namespace tracecore {
namespace {

constexpr size_t kSlice = size_t{256} << 10;  // output per call: the CRC finds it in cache
constexpr size_t kMinRoom = size_t{64} << 10;  // grow when less room than this is left
constexpr uint64_t kRatioFloor = uint64_t{1} << 20;

// First capacity: the gzip ISIZE of the last member when it is plausible, else 4x the input.
uint64_t FirstGuess(const uint8_t* data, size_t size, const InflateOptions& options) {
  uint64_t guess = uint64_t{size} * 4;
  const bool gzip = options.format == CompressionFormat::kGzip ||
                    (options.format == CompressionFormat::kAuto && size >= 2 &&
                     data[0] == 0x1F && data[1] == 0x8B);
  if (gzip && size >= 18 && !options.allow_trailing_data) {
    const uint8_t* t = data + size - 4;
    const uint64_t isize = t[0] | (t[1] << 8) | (t[2] << 16) | (uint64_t{t[3]} << 24);
    guess = std::max(guess, isize);
  }
  return guess;
}

}  // namespace

uint64_t InflateLimits::OutputBudget(uint64_t compressed_size) const {
  const double by_ratio = max_ratio * static_cast<double>(compressed_size);
  // Past 2^63 the double does not convert; such a budget is no budget.
  const uint64_t ratio_budget =
      !(by_ratio < 9.2e18) ? UINT64_MAX : std::max(static_cast<uint64_t>(by_ratio), kRatioFloor);
  return std::min(max_output_bytes, ratio_budget);
}

InflatedBuffer InflateAll(const uint8_t* data, size_t size, const InflateLimits& limits,
                          const InflateOptions& options) {
  const uint64_t budget = std::min<uint64_t>(limits.OutputBudget(size), SIZE_MAX - kMinRoom * 2);
  InflatedBuffer buffer;
  {
    const uint64_t guess = std::min(FirstGuess(data, size, options), budget) + kMinRoom;
    try {
      buffer.Reserve(static_cast<size_t>(guess));
    } catch (const std::bad_alloc&) {
      // Address space may be capped (RLIMIT_AS): start small and grow as the output does.
      buffer.Reserve(kMinRoom * 4);
    }
  }
  Inflater inflater(options);
  size_t pos = 0;
  size_t in_pos = 0;
  for (;;) {
    if (buffer.capacity() - pos < kMinRoom && buffer.capacity() < budget + kMinRoom) {
      const uint64_t want = std::max<uint64_t>(uint64_t{buffer.capacity()} * 2, pos + kSlice);
      buffer.Reserve(static_cast<size_t>(std::min<uint64_t>(want, budget + kMinRoom)));
    }
    const size_t end = static_cast<size_t>(
        std::min<uint64_t>({buffer.capacity(), uint64_t{pos} + kSlice, budget}));
    const Inflater::Result r = inflater.InflateInPlace(data + in_pos, size - in_pos,
                                                       buffer.mutable_data(), pos, end, true);
    in_pos += r.consumed;
    pos += r.produced;
    if (r.status == Inflater::Status::kStreamEnd) break;
    if (pos >= budget) {
      const char* format = CompressionFormatName(inflater.format());
      if (budget == limits.max_output_bytes) {
        throw CompressedDataError(format, in_pos,
                                  "the decompressed data exceeds the limit of " +
                                      std::to_string(budget) +
                                      " bytes (InflateLimits::max_output_bytes); " +
                                      limits.raise_hint);
      }
      throw CompressedDataError(
          format, in_pos,
          "the decompressed data exceeds " + std::to_string(budget) + " bytes, " +
              std::to_string(static_cast<uint64_t>(limits.max_ratio)) + " times the " +
              std::to_string(size) + " compressed bytes (InflateLimits::max_ratio); " +
              limits.raise_hint);
    }
  }
  if (in_pos < size && !options.allow_trailing_data) {
    // The Inflater reports trailing bytes itself; this guards the contract.
    throw CompressedDataError(CompressionFormatName(inflater.format()), in_pos,
                              "trailing data after the end of the stream");
  }
  buffer.set_size(pos);
  buffer.ShrinkToFit();
  return buffer;
}

}  // namespace tracecore
