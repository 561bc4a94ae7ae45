#include "importers/tfevents/event_file_scan.h"

#include <algorithm>
#include <utility>

#include "core/error.h"

namespace tracecore::tfevents {
namespace {

// The message of an AtByte error without its "byte offset N: " prefix.
std::string Detail(const TraceFormatError& e) {
  const std::string what = e.what();
  const std::string prefix = "byte offset " + std::to_string(e.offset) + ": ";
  return what.compare(0, prefix.size(), prefix) == 0 ? what.substr(prefix.size()) : what;
}

// The same error, saying which record it is in.
TraceFormatError InRecord(const TraceFormatError& e, uint64_t record_offset) {
  TraceFormatError out =
      TraceFormatError::AtByte(e.offset, "the record at byte " + std::to_string(record_offset) +
                                             " is not a tensorflow.Event: " + Detail(e));
  out.bad_value = e.bad_value;
  out.out_of_range = e.out_of_range;
  return out;
}

}  // namespace

EventFileScan ScanEventFile(std::string_view input, const ScanOptions& options) {
  EventFileScan scan;
  scan.bytes = input.size();
  if (input.empty()) {
    throw TraceFormatError::AtByte(0, "empty input: an event file holds at least one record");
  }
  auto warn = [&scan](uint64_t offset, std::string what) {
    if (scan.warnings.size() < EventFileScan::kMaxWarnings) {
      scan.warnings.push_back({offset, std::move(what)});
    } else {
      ++scan.warnings_dropped;
    }
  };

  RecordReaderOptions reader_options;
  reader_options.strict = options.strict;
  RecordReader reader(input, reader_options);
  EventDecoder decoder(input);
  uint64_t undecodable = 0, undecodable_bytes = 0;
  Record record;
  while (reader.Next(&record)) {
    try {
      decoder.Decode(record, &scan.run_metadata, &scan.content);
    } catch (const TraceFormatError& e) {
      if (options.strict) throw InRecord(e, record.offset);
      ++undecodable;
      undecodable_bytes +=
          RecordReader::kHeaderBytes + record.data.size() + RecordReader::kFooterBytes;
      warn(e.offset, std::string("skipped: ") + InRecord(e, record.offset).what());
    }
  }
  scan.records = scan.content.events;
  scan.skipped_records = reader.skipped_records() + undecodable;
  scan.skipped_bytes = reader.skipped_bytes() + undecodable_bytes;
  for (const SkippedRange& s : reader.skipped()) {
    warn(s.offset, std::string("skipped ") + std::to_string(s.bytes) +
                       " bytes: " + ProblemName(s.problem) + " in the record at byte " +
                       std::to_string(s.offset));
  }
  if (reader.skipped_records() > reader.skipped().size()) {
    warn(reader.skipped().back().offset,
         std::to_string(reader.skipped_records() - reader.skipped().size()) +
             " more damaged stretches skipped");
  }
  if (reader.truncated_tail()) {
    scan.truncated_tail = true;
    scan.truncated_tail_offset = reader.truncated_tail_offset();
    warn(scan.truncated_tail_offset, reader.TruncatedTailMessage() + ": skipped");
  }

  if (scan.records == 0) {
    if (scan.skipped_records == 0) {
      throw TraceFormatError::AtByte(
          scan.truncated_tail_offset,
          "not an event file: no complete record (" + reader.TruncatedTailMessage() + ")");
    }
    const uint64_t first = scan.warnings.empty() ? 0 : scan.warnings.front().offset;
    throw TraceFormatError::AtByte(first, "not an event file: no intact record (" +
                                              std::to_string(scan.skipped_records) +
                                              " damaged records or stretches skipped, " +
                                              std::to_string(scan.skipped_bytes) + " bytes)");
  }
  if (scan.content.run_metadata_without_payload > 0) {
    warn(scan.content.first_without_payload_record,
         std::to_string(scan.content.run_metadata_without_payload) +
             " graph_run_metadata summaries without a string_val (no RunMetadata to read)");
  }
  if (scan.content.file_version == 0) {
    warn(0, "no file_version Event (\"brain.Event:2\"): not written by a TensorFlow event writer?");
  }
  std::stable_sort(scan.warnings.begin(), scan.warnings.end(),
                   [](const ScanWarning& a, const ScanWarning& b) { return a.offset < b.offset; });
  return scan;
}

}  // namespace tracecore::tfevents
