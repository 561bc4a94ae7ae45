// One pass over a TensorBoard event file (events.out.tfevents.*): every record's framing and
// CRCs checked, every Event decoded, the RunMetadata found listed as views into the input.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "importers/tfevents/event_decoder.h"
#include "importers/tfevents/record_reader.h"

namespace tracecore::tfevents {

struct ScanOptions {
  // true: a corrupt record (CRC mismatch, absurd length, an Event that does not decode) raises
  // TraceFormatError. false: it is skipped, counted and named in the warnings.
  bool strict = true;
};

// Something the caller should tell the user about; the scan still succeeded.
struct ScanWarning {
  uint64_t offset;
  std::string what;
};

struct EventFileScan {
  uint64_t bytes = 0;
  uint64_t records = 0;                        // intact records (each one Event)
  std::vector<FoundRunMetadata> run_metadata;  // in file order
  EventContent content;
  // Non-strict: records (or damaged stretches) skipped, and their bytes.
  uint64_t skipped_records = 0;
  uint64_t skipped_bytes = 0;
  // The input ends inside a record (a file still being written): skipped, with a warning.
  bool truncated_tail = false;
  uint64_t truncated_tail_offset = 0;
  std::vector<ScanWarning> warnings;  // up to kMaxWarnings
  uint64_t warnings_dropped = 0;

  static constexpr size_t kMaxWarnings = 32;
};

// Scans a whole event file held in memory. Throws TraceFormatError::AtByte for a corrupt record
// (strict mode) and for an input without one intact record (empty, random bytes, or every
// record damaged): a non-trace is never an empty result. Views in the result point into `input`.
EventFileScan ScanEventFile(std::string_view input, const ScanOptions& options = {});

}  // namespace tracecore::tfevents
