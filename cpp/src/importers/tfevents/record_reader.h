// Iterates the records of a TFRecord file (TensorBoard event files are TFRecord files of
// tensorflow.Event messages), checking both CRCs of every record:
//
//   uint64 length | uint32 masked_crc32c(length bytes) | data[length] | uint32 masked_crc32c(data)
//
// (little-endian). Records are views into the input: nothing is copied or allocated per record.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tracecore::tfevents {

enum class RecordProblem : uint8_t {
  kLengthCrc,     // the length field does not match its CRC: the framing is lost from here
  kAbsurdLength,  // a length (with a valid CRC) past the end of the input, beyond any Event
  kDataCrc,       // the payload does not match its CRC; the framing is intact
  kTruncated,     // the input ends inside the record: a file still being written
};

// "length CRC mismatch", ... for messages.
const char* ProblemName(RecordProblem problem);

struct Record {
  uint64_t offset = 0;    // of the record's first byte (its length field) in the input
  std::string_view data;  // the payload, inside the input
};

// A stretch of input skipped in non-strict mode.
struct SkippedRange {
  uint64_t offset;
  uint64_t bytes;
  RecordProblem problem;
};

struct RecordReaderOptions {
  // true: a corrupt record (CRC mismatch, absurd length) raises TraceFormatError. false: it is
  // skipped and counted, and reading goes on at the next intact record.
  bool strict = true;
};

class RecordReader {
 public:
  static constexpr size_t kHeaderBytes = 12;  // length + its masked CRC
  static constexpr size_t kFooterBytes = 4;   // masked CRC of the data
  // A length with a valid CRC that runs past the end of the input is a record still being
  // written, unless it exceeds this: protobuf cannot hold an Event of 2 GiB or more.
  static constexpr uint64_t kMaxTailRecordBytes = (uint64_t{1} << 31) - 1;
  // Skipped ranges kept for messages (all are counted).
  static constexpr size_t kMaxSkippedKept = 32;

  explicit RecordReader(std::string_view input, RecordReaderOptions options = {});

  // Sets *record to the next intact record and returns true, or returns false at the end of
  // the input; truncated_tail() then says whether the input ended inside a record. Strict mode
  // throws TraceFormatError::AtByte(record offset, ...) for a corrupt record.
  bool Next(Record* record);

  // Whether the input ends inside a record (reported by no exception: the caller warns).
  bool truncated_tail() const { return truncated_tail_; }
  uint64_t truncated_tail_offset() const { return tail_offset_; }
  // "the input ends N bytes into a record ..." for the truncated tail.
  std::string TruncatedTailMessage() const;

  uint64_t records() const { return records_; }
  uint64_t skipped_records() const { return skipped_records_; }
  uint64_t skipped_bytes() const { return skipped_bytes_; }
  const std::vector<SkippedRange>& skipped() const { return skipped_; }
  // Where the next record would start.
  uint64_t position() const { return pos_; }

 private:
  // kHeaderCut: fewer than kHeaderBytes left; kTruncated: a length with a valid CRC whose
  // record runs past the end.
  enum class Framing { kOk, kEnd, kHeaderCut, kTruncated, kLengthCrc, kAbsurdLength, kDataCrc };
  // Checks the record at `at`; sets *length on kOk, kTruncated, kAbsurdLength and kDataCrc.
  Framing Check(uint64_t at, uint64_t* length) const;
  [[noreturn]] void Throw(Framing framing, uint64_t at, uint64_t length) const;
  // Non-strict: the next offset after `from` where an intact record (or a truncated tail)
  // starts, or the input's size.
  uint64_t Resync(uint64_t from);
  void Skip(uint64_t at, uint64_t bytes, RecordProblem problem);

  const uint8_t* data_;
  uint64_t size_;
  RecordReaderOptions options_;
  uint64_t resync_budget_;  // payload bytes Resync may check
  uint64_t pos_ = 0;
  bool truncated_tail_ = false;
  uint64_t tail_offset_ = 0;
  bool tail_header_cut_ = false;
  uint64_t tail_length_ = 0;
  uint64_t records_ = 0;
  uint64_t skipped_records_ = 0;
  uint64_t skipped_bytes_ = 0;
  std::vector<SkippedRange> skipped_;
};

}  // namespace tracecore::tfevents
