// Decompresses a whole gzip / zlib / raw deflate input into one owned buffer (an anonymous
// mapping, see inflated_buffer.h), within a budget.
//
//   InflatedBuffer out = InflateAll(data, size);                 // gzip or zlib, defaults
//   InflatedBuffer out = InflateAll(data, size, limits, {CompressionFormat::kGzip});
//
// The buffer's first size is a guess: for gzip the last member's ISIZE trailer field (the
// whole output modulo 2^32 when there is one member), else four times the input; it is clamped
// to the budget and grown by remapping (no copy) when the guess was short, so a wrong or
// hostile ISIZE costs address space at most. Output is produced and checksummed in 256 KiB
// slices, so the CRC reads bytes still in cache.
//
// Errors: TraceFormatError for malformed input (see inflater.h) and for output beyond the
// budget ("... exceeds the limit of N bytes (InflateLimits::max_output_bytes) ..." followed
// by InflateLimits::raise_hint); std::bad_alloc when the system refuses the mapping.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "codec/inflated_buffer.h"
#include "codec/inflater.h"

namespace tracecore {

struct InflateLimits {
  // Deflate cannot expand data more than 1032 times (a 258-byte match in 2 bits; zlib's own
  // output of zeros reaches 1028.7), so this default never refuses valid data: it bounds the
  // output by the input's size (a 1 MB file cannot make more than 1 GB). Lower it to refuse
  // compression bombs earlier. Outputs up to 1 MiB are never refused for their ratio.
  static constexpr double kDefaultMaxRatio = 1032.0;
  // 16 GiB: the decompressed trace is held in memory, so this is a memory budget.
  static constexpr uint64_t kDefaultMaxOutputBytes = uint64_t{16} << 30;

  uint64_t max_output_bytes = kDefaultMaxOutputBytes;
  double max_ratio = kDefaultMaxRatio;  // decompressed bytes per compressed byte
  // Appended to the limit errors: how the user raises the limit where this is called from.
  std::string raise_hint = "raise InflateLimits::max_output_bytes or max_ratio to allow more";

  // min(max_output_bytes, max(max_ratio * compressed_size, 1 MiB)).
  uint64_t OutputBudget(uint64_t compressed_size) const;
};

// Decompresses data[0, size) completely: every gzip member (or the zlib / raw stream), with
// nothing after it but gzip's zero padding unless options.allow_trailing_data.
InflatedBuffer InflateAll(const uint8_t* data, size_t size, const InflateLimits& limits = {},
                          const InflateOptions& options = {});

}  // namespace tracecore
