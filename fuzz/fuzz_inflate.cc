// libFuzzer target: the DEFLATE / zlib / gzip decompressor (cpp/src/codec).
//
// Input: one control byte, then the compressed data. The control byte picks the format (auto,
// gzip, zlib, raw), multi_member, allow_trailing_data and the piece sizes of a second,
// streaming decode. Each input is decompressed twice: by InflateAll (InflateInPlace into one
// growing mapping, mostly the fast loop) and by the streaming Inflater with small input and
// output pieces (window mode, mostly the resumable slow path). Both must agree: the same
// bytes, or a TraceFormatError at the same offset. Anything else escaping, a disagreement, a
// sanitizer report or a hang is a finding.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "codec/inflate_all.h"
#include "codec/inflater.h"
#include "core/error.h"

namespace {

constexpr uint64_t kMaxOutput = uint64_t{64} << 20;

struct Outcome {
  bool ok = false;
  bool limit = false;  // stopped at kMaxOutput
  std::string bytes;
  uint64_t error_offset = 0;
  std::string error;
};

[[noreturn]] void Finding(const char* what, const Outcome& a, const Outcome& b) {
  std::fprintf(stderr, "FINDING: %s\n  InflateAll: ok=%d limit=%d size=%zu error=%s\n"
               "  streaming:  ok=%d limit=%d size=%zu error=%s\n",
               what, a.ok, a.limit, a.bytes.size(), a.error.c_str(), b.ok, b.limit,
               b.bytes.size(), b.error.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t control = data[0];
  ++data;
  --size;
  tracecore::InflateOptions options;
  options.format = static_cast<tracecore::CompressionFormat>(control & 3);
  options.multi_member = (control & 4) == 0;
  options.allow_trailing_data = (control & 8) != 0;
  static const size_t kPieces[4] = {1, 7, 300, 70000};
  const size_t in_piece = kPieces[(control >> 4) & 3];
  const size_t out_piece = kPieces[(control >> 6) & 3];

  Outcome all;
  try {
    tracecore::InflateLimits limits;
    limits.max_output_bytes = kMaxOutput;
    limits.max_ratio = 1e12;  // only the byte limit, which the streaming decode applies too
    const tracecore::InflatedBuffer out = tracecore::InflateAll(data, size, limits, options);
    all.ok = true;
    all.bytes.assign(reinterpret_cast<const char*>(out.data()), out.size());
  } catch (const tracecore::TraceFormatError& e) {
    all.error = e.what();
    all.error_offset = e.offset;
    all.limit = all.error.find("InflateLimits::max_output_bytes") != std::string::npos;
  }

  Outcome streamed;
  try {
    tracecore::Inflater inflater(options);
    std::vector<uint8_t> piece(out_piece);
    size_t pos = 0;
    for (;;) {
      const size_t n = std::min(in_piece, size - pos);
      const auto r = inflater.Inflate(data + pos, n, piece.data(), piece.size(), pos + n == size);
      pos += r.consumed;
      streamed.bytes.append(reinterpret_cast<const char*>(piece.data()), r.produced);
      if (r.status == tracecore::Inflater::Status::kStreamEnd) {
        streamed.ok = true;
        break;
      }
      if (streamed.bytes.size() > kMaxOutput) {
        streamed.limit = true;
        break;
      }
      if (r.status == tracecore::Inflater::Status::kNeedInput && r.consumed != n) {
        Finding("kNeedInput with input left", all, streamed);
      }
      if (r.consumed == 0 && r.produced == 0) Finding("a call made no progress", all, streamed);
    }
  } catch (const tracecore::TraceFormatError& e) {
    streamed.error = e.what();
    streamed.error_offset = e.offset;
  }

  if (all.limit || streamed.limit) {
    // Both must have reached the limit, unless the stream was invalid before it.
    if (all.limit != streamed.limit && (all.ok || streamed.ok)) {
      Finding("one decode hit the output limit, the other finished", all, streamed);
    }
    return 0;
  }
  if (all.ok != streamed.ok) Finding("one decode succeeded, the other failed", all, streamed);
  if (all.ok && all.bytes != streamed.bytes) Finding("different bytes", all, streamed);
  if (!all.ok && (all.error_offset != streamed.error_offset || all.error != streamed.error)) {
    Finding("different errors", all, streamed);
  }
  return 0;
}
