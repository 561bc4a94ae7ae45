// libFuzzer target: TensorBoard event files (tfevents::ScanEventFile), strict and skipping.
//
// Each input is scanned twice as it is, then twice more with its record CRCs made valid (a
// walk over the framing that rewrites both CRCs of each record and clamps lengths that run past
// the end): mutated payloads then reach the Event decoder instead of stopping at a CRC.
//   * TraceFormatError is the expected outcome for bad input; any other exception is a finding.
//   * A scan that succeeds must be consistent: every view inside the input, records counted
//     once, offsets increasing; when the strict scan succeeds the skipping one reads the same.
//     Each RunMetadata found is then parsed in place with the binary importer and checked like
//     fuzz_binary does (what event files will do).
#include <cstdint>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>

#include "codec/crc32c.h"
#include "fuzz_common.h"
#include "importers/tfevents/event_file_scan.h"

namespace {

using tracecore::tfevents::EventFileScan;
using tracecore::tfevents::FoundRunMetadata;

void StoreLe(uint8_t* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint64_t LoadLe64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

std::string WithValidCrcs(const uint8_t* data, size_t size) {
  std::string s(reinterpret_cast<const char*>(data), size);
  auto* p = reinterpret_cast<uint8_t*>(&s[0]);
  size_t pos = 0;
  while (size - pos >= 16) {
    uint64_t length = LoadLe64(p + pos);
    if (length > size - pos - 16) {
      length = size - pos - 16;
      StoreLe(p + pos, length, 8);
    }
    StoreLe(p + pos + 8, tracecore::MaskCrc32c(tracecore::Crc32c(p + pos, 8)), 4);
    StoreLe(p + pos + 12 + length, tracecore::MaskCrc32c(tracecore::Crc32c(p + pos + 12, length)),
            4);
    pos += 16 + length;
  }
  return s;
}

void Check(const EventFileScan& scan, std::string_view input) {
  const auto* begin = input.data();
  auto inside = [&](std::string_view v) {
    return v.empty() || (v.data() >= begin && v.data() + v.size() <= begin + input.size());
  };
  if (scan.bytes != input.size()) tracecore_fuzz::Finding("scan.bytes is not the input size");
  if (scan.records == 0) tracecore_fuzz::Finding("a scan without records succeeded");
  if (scan.records != scan.content.events) tracecore_fuzz::Finding("records != events");
  if (scan.skipped_bytes > input.size()) tracecore_fuzz::Finding("skipped more bytes than read");
  if (scan.truncated_tail && scan.truncated_tail_offset >= input.size()) {
    tracecore_fuzz::Finding("truncated tail offset past the end");
  }
  if (!inside(scan.content.file_version_string)) tracecore_fuzz::Finding("file_version outside");
  for (const auto& plugin : scan.content.plugins) {
    if (!inside(plugin.name) || plugin.name.empty()) tracecore_fuzz::Finding("plugin name outside");
  }
  uint64_t last = 0;
  for (const FoundRunMetadata& f : scan.run_metadata) {
    if (!inside(f.tag)) tracecore_fuzz::Finding("RunMetadata tag outside the input");
    if (f.offset > input.size() || f.length > input.size() - f.offset) {
      tracecore_fuzz::Finding("RunMetadata bytes outside the input");
    }
    if (f.record_offset >= input.size() || f.record_offset < last || f.offset < f.record_offset) {
      tracecore_fuzz::Finding("RunMetadata record offsets out of order");
    }
    last = f.record_offset;
  }
}

// Scans `input`; false when it is rejected (as it may be).
bool Scan(std::string_view input, bool strict, EventFileScan* scan) {
  tracecore::tfevents::ScanOptions options;
  options.strict = strict;
  try {
    *scan = tracecore::tfevents::ScanEventFile(input, options);
  } catch (const tracecore::TraceFormatError& e) {
    if (e.where != tracecore::TraceFormatError::Where::kBinary || e.offset > input.size()) {
      tracecore_fuzz::Finding(std::string("error without a byte offset in the input: ") + e.what());
    }
    return false;
  } catch (const std::exception& e) {
    tracecore_fuzz::Finding(std::string("unexpected exception from ScanEventFile: ") + e.what());
  }
  Check(*scan, input);
  return true;
}

bool Same(const FoundRunMetadata& a, const FoundRunMetadata& b) {
  return a.tag == b.tag && a.step == b.step && a.offset == b.offset && a.length == b.length &&
         a.record_offset == b.record_offset && a.source == b.source &&
         std::memcmp(&a.wall_time, &b.wall_time, sizeof(double)) == 0;
}

void ScanBothWays(std::string_view input) {
  EventFileScan strict, lenient;
  const bool strict_ok = Scan(input, true, &strict);
  const bool lenient_ok = Scan(input, false, &lenient);
  if (strict_ok) {
    // Nothing to skip: skipping mode reads the same.
    if (!lenient_ok || lenient.records != strict.records || lenient.skipped_records != 0 ||
        lenient.run_metadata.size() != strict.run_metadata.size()) {
      tracecore_fuzz::Finding("strict scan succeeded, the skipping scan differs");
    }
    for (size_t i = 0; i < strict.run_metadata.size(); ++i) {
      if (!Same(strict.run_metadata[i], lenient.run_metadata[i])) {
        tracecore_fuzz::Finding("strict and skipping scans found different RunMetadata");
      }
    }
  }
  // What event files will do: each RunMetadata parsed in place by the binary importer.
  for (const FoundRunMetadata& f : (strict_ok ? strict : lenient).run_metadata) {
    if (!strict_ok && !lenient_ok) break;
    tracecore_fuzz::RunInput(reinterpret_cast<const uint8_t*>(input.data()) + f.offset,
                             static_cast<size_t>(f.length), "binary", /*queries=*/false);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ScanBothWays(std::string_view(reinterpret_cast<const char*>(data), size));
  const std::string fixed = WithValidCrcs(data, size);
  ScanBothWays(fixed);
  return 0;
}
